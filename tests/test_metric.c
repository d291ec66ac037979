/* The gate's metric: an exact answer passes, a GEMM that drops one of k products fails, one NaN or
 * one unwritten (still poisoned) element fails, integer outputs are exact, and the bounds order
 * the types by precision (bf16 > f16 > f32). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_dtype.h"
#include "core/gt_metric.h"
#include "core/gt_problem.h"

/* ---- fixtures -------------------------------------------------------------------------------- */

static uint64_t g_rng = 12345;
static double urand(void) { /* [-1, 1), never 0 */
  for (;;) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    double v = (double)(g_rng >> 11) * 0x1.0p-53 * 2.0 - 1.0;
    if (v != 0.0) return v;
  }
}

static gt_problem_t make_problem(gt_dtype_t in, gt_dtype_t out, gt_compute_t comp, int64_t m,
                                 int64_t n, int64_t k) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = in;
  p.c_type = p.d_type = out;
  p.compute = comp;
  p.scale_type = comp == GT_COMPUTE_I32 ? GT_DT_I32 : GT_DT_F32;
  p.m = m, p.n = n, p.k = k;
  gt_problem_fill_lds(&p);
  return p;
}

/* ref (m x n) = A B over all k products; dropped (m x n) = the same without the last product. The
 * inputs are rounded to `in` first, as a real operand would be. */
static void make_gemm(const gt_problem_t *p, double *ref, double *dropped) {
  const int64_t m = p->m, n = p->n, k = p->k;
  double *A = malloc(sizeof(double) * (size_t)(m * k)), *B = malloc(sizeof(double) * (size_t)(k * n));
  unsigned char tmp[8];
  for (int64_t i = 0; i < m * k; i++) {
    gt_store_elem(tmp, p->a_type, 0, p->a_type == GT_DT_I8 ? (double)((int)(urand() * 4)) + 1 : urand());
    A[i] = gt_load_elem(tmp, p->a_type, 0);
  }
  for (int64_t i = 0; i < k * n; i++) {
    gt_store_elem(tmp, p->b_type, 0, p->b_type == GT_DT_I8 ? (double)((int)(urand() * 4)) - 1 : urand());
    B[i] = gt_load_elem(tmp, p->b_type, 0);
  }
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double s = 0, last = 0;
      for (int64_t q = 0; q < k; q++) s += (last = A[i + q * m] * B[q + j * k]);
      ref[i + j * m] = s;
      if (dropped) dropped[i + j * m] = s - last;
    }
  free(A), free(B);
}

/* D (type d_type, ld m) = values rounded to the output type. */
static void *store_all(const gt_problem_t *p, const double *v) {
  size_t cnt = (size_t)(p->m * p->n);
  void *D = malloc(cnt * gt_dtype_size(p->d_type));
  for (size_t i = 0; i < cnt; i++) gt_store_elem(D, p->d_type, i, v[i]);
  return D;
}

/* ---- verdict cases --------------------------------------------------------------------------- */

typedef enum tamper { T_NONE, T_DROP_ONE_PRODUCT, T_ONE_NAN, T_ONE_UNWRITTEN, T_OFF_BY_ONE } tamper_t;

typedef struct verdict_case {
  const char *name;
  gt_dtype_t in, out;
  gt_compute_t comp;
  int64_t m, n, k;
  tamper_t tamper;
  bool pass;
  const char *why; /* substring of gate.why when failing */
} verdict_case_t;

static const verdict_case_t k_verdicts[] = {
    {"exact_f32_passes", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, 33, 17, 64, T_NONE, true, ""},
    {"exact_bf16_passes", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, 64, 48, 4096, T_NONE, true, ""},
    {"exact_f16_passes", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F32, 40, 24, 512, T_NONE, true, ""},
    {"exact_bf16_in_f32_out_passes", GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32, 16, 16, 256, T_NONE, true, ""},
    {"exact_e4m3_in_bf16_out_passes", GT_DT_F8E4M3FN, GT_DT_BF16, GT_COMPUTE_F32, 16, 16, 128, T_NONE, true, ""},
    {"exact_i8_in_i32_out_passes", GT_DT_I8, GT_DT_I32, GT_COMPUTE_I32, 16, 8, 64, T_NONE, true, ""},
    {"k_minus_1_sum_f32_k64_fails", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, 32, 32, 64, T_DROP_ONE_PRODUCT, false, "normwise error"},
    {"k_minus_1_sum_bf16_k64_fails", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, 32, 32, 64, T_DROP_ONE_PRODUCT, false, "normwise error"},
    {"k_minus_1_sum_f16_k256_fails", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F32, 32, 32, 256, T_DROP_ONE_PRODUCT, false, "normwise error"},
    {"k_minus_1_sum_bf16_k4096_fails", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, 16, 16, 4096, T_DROP_ONE_PRODUCT, false, "normwise error"},
    {"k_minus_1_sum_tf32_k1024_fails", GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32, 16, 16, 1024, T_DROP_ONE_PRODUCT, false, "normwise error"},
    {"one_nan_f32_fails", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, 33, 17, 64, T_ONE_NAN, false, "NaN/Inf"},
    {"one_nan_bf16_fails", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, 64, 64, 64, T_ONE_NAN, false, "NaN/Inf"},
    {"one_unwritten_f32_fails", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, 33, 17, 64, T_ONE_UNWRITTEN, false, "never written"},
    {"one_unwritten_f16_fails", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F32, 64, 64, 64, T_ONE_UNWRITTEN, false, "never written"},
    {"one_unwritten_i32_fails", GT_DT_I8, GT_DT_I32, GT_COMPUTE_I32, 16, 8, 64, T_ONE_UNWRITTEN, false, "never written"},
    {"int_off_by_one_fails", GT_DT_I8, GT_DT_I32, GT_COMPUTE_I32, 16, 8, 64, T_OFF_BY_ONE, false, ""},
};

static void test_verdict(void **state) {
  const verdict_case_t *c = *state;
  gt_problem_t p = make_problem(c->in, c->out, c->comp, c->m, c->n, c->k);
  size_t cnt = (size_t)(c->m * c->n);
  double *ref = malloc(cnt * sizeof *ref), *dropped = malloc(cnt * sizeof *dropped);
  make_gemm(&p, ref, dropped);
  void *D = store_all(&p, c->tamper == T_DROP_ONE_PRODUCT ? dropped : ref);
  size_t victim = cnt / 3;
  switch (c->tamper) {
    case T_ONE_NAN: gt_store_elem(D, p.d_type, victim, NAN); break;
    case T_ONE_UNWRITTEN: gt_metric_poison((char *)D + victim * gt_dtype_size(p.d_type), p.d_type, 1); break;
    case T_OFF_BY_ONE: gt_store_elem(D, p.d_type, victim, ref[victim] + 1); break;
    default: break;
  }
  gt_gate_t g;
  gt_metric_compare(&p, D, ref, &g);
  if (g.passed != c->pass)
    print_error("%s: passed=%d error=%.3g bound=%.3g mismatch=%.3g why='%s'\n", c->name, g.passed,
                g.error, g.bound, g.mismatch_frac, g.why);
  assert_int_equal(g.passed, c->pass);
  assert_int_equal(g.checked, (int64_t)cnt);
  if (!c->pass) assert_non_null(strstr(g.why, c->why));
  if (c->tamper == T_ONE_NAN) assert_int_equal(g.nonfinite, 1);
  if (c->tamper == T_ONE_UNWRITTEN) assert_int_equal(g.unwritten, 1);
  if (c->pass) assert_true(g.error <= g.bound);
  free(ref), free(dropped), free(D);
}

/* ---- bounds ---------------------------------------------------------------------------------- */

typedef struct order_case {
  const char *name;
  int64_t k;
} order_case_t;

static const order_case_t k_orders[] = {
    {"bound_order_bf16_f16_f32_k64", 64},
    {"bound_order_bf16_f16_f32_k4096", 4096},
    {"bound_order_bf16_f16_f32_k65536", 65536},
};

static void test_bound_order(void **state) {
  const order_case_t *c = *state;
  gt_problem_t bf = make_problem(GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, 64, 64, c->k);
  gt_problem_t hf = make_problem(GT_DT_F16, GT_DT_F16, GT_COMPUTE_F32, 64, 64, c->k);
  gt_problem_t f = make_problem(GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, 64, 64, c->k);
  gt_problem_t tf = make_problem(GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32, 64, 64, c->k);
  double b_bf = gt_metric_bound(&bf), b_hf = gt_metric_bound(&hf), b_f = gt_metric_bound(&f);
  assert_true(b_bf > b_hf);
  assert_true(b_hf > b_f);
  assert_true(gt_metric_bound(&tf) > b_f); /* tf32 rounds the inputs */
  /* bf16 outputs carry ~2e-3 of rounding error: the bound must leave room above it */
  assert_true(b_bf > 4e-3);
}

static void test_bound_grows_with_k(void **state) {
  (void)state;
  gt_problem_t a = make_problem(GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, 8, 8, 64);
  gt_problem_t b = make_problem(GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, 8, 8, 65536);
  assert_true(gt_metric_bound(&b) > gt_metric_bound(&a));
}

static void test_int_bound_is_exact(void **state) {
  (void)state;
  gt_problem_t p = make_problem(GT_DT_I8, GT_DT_I32, GT_COMPUTE_I32, 8, 8, 64);
  assert_true(gt_metric_bound(&p) == 0.0);
  double atol, rtol;
  gt_metric_elem_tol(&p, &atol, &rtol);
  assert_true(atol == 0.0 && rtol == 0.0);
}

/* A real bf16 GEMM (fp32 sums, one rounding to bf16) lands well inside its bound. */
static void test_bf16_rounding_well_inside_bound(void **state) {
  (void)state;
  gt_problem_t p = make_problem(GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, 64, 64, 4096);
  size_t cnt = 64 * 64;
  double *ref = malloc(cnt * sizeof *ref);
  make_gemm(&p, ref, NULL);
  void *D = store_all(&p, ref);
  gt_gate_t g;
  gt_metric_compare(&p, D, ref, &g);
  assert_true(g.passed);
  assert_true(g.error > 5e-4 && g.error < 3e-3); /* the rounding is there, and it is ~2e-3 */
  assert_true(g.error < g.bound / 2);
  free(ref), free(D);
}

/* ---- poison ---------------------------------------------------------------------------------- */

static const gt_dtype_t k_types[] = {GT_DT_F32, GT_DT_F16, GT_DT_BF16, GT_DT_F8E4M3FN,
                                     GT_DT_F8E5M2, GT_DT_I8, GT_DT_I32, GT_DT_F64};

static void test_poison_round_trips(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
    gt_dtype_t t = k_types[i];
    uint64_t buf[4] = {0};
    gt_metric_poison(buf, t, 3);
    for (size_t e = 0; e < 3; e++) assert_true(gt_metric_is_poison(buf, t, e));
    /* floats: the poison is a NaN, never a value a GEMM of finite inputs writes */
    if (t != GT_DT_I8 && t != GT_DT_I32) assert_true(isnan(gt_load_elem(buf, t, 0)));
    gt_store_elem(buf, t, 1, 1.0);
    assert_false(gt_metric_is_poison(buf, t, 1));
  }
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  struct CMUnitTest t[64];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_verdicts); i++)
    t[n++] = (struct CMUnitTest){k_verdicts[i].name, test_verdict, NULL, NULL, (void *)&k_verdicts[i]};
  for (size_t i = 0; i < NELEM(k_orders); i++)
    t[n++] = (struct CMUnitTest){k_orders[i].name, test_bound_order, NULL, NULL, (void *)&k_orders[i]};
  t[n++] = (struct CMUnitTest){"bound_grows_with_k", test_bound_grows_with_k, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"int_bound_is_exact", test_int_bound_is_exact, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"bf16_rounding_well_inside_bound", test_bf16_rounding_well_inside_bound, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"poison_round_trips", test_poison_round_trips, NULL, NULL, NULL};
  return _cmocka_run_group_tests("metric", t, n, NULL, NULL);
}
