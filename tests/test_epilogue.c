/* Epilogues on the host: D = act(alpha*op(A)op(B) + beta*C + bias), bias a length-m vector of D's
 * type broadcast along columns, act none / relu / gelu (tanh approximation).
 *
 *   every cpu instance, for every epilogue, for f32, bf16 and f16, on shapes whose m, n and k are
 *   multiples of no tile or block (so the blocked instances' edge tiles and partial K blocks go
 *   through the store step too), with beta 0 and beta != 0, batched and padded, matches the fp64
 *   reference under the gate's metric and writes nothing outside D; where the epilogue visibly
 *   changes the answer, the same output fails against the reference computed without it (the
 *   epilogue was applied, not skipped); on small-integer f32 inputs without gelu it is exact (the
 *   bias is added exactly once);
 *   a bias epilogue run without a bias vector is refused, not read through NULL;
 *   every epilogue is enumerated with all cpu instances active;
 *   through the host harness, the planted testonly_nobias and testonly_twobias fail the gate on
 *   bias keys while cpu instances pass it; the planted pair is listed only for bias epilogues. */
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
#include "harness/gt_harness.h"
#include "providers/gt_provider.h"
#include "providers/gt_reference.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const gt_epilogue_t k_epis[] = {GT_EPI_NONE, GT_EPI_BIAS,  GT_EPI_RELU,
                                       GT_EPI_BIAS_RELU, GT_EPI_GELU, GT_EPI_BIAS_GELU};
static const gt_dtype_t k_types[] = {GT_DT_F32, GT_DT_BF16, GT_DT_F16};

static bool has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}
static bool has_gelu(gt_epilogue_t e) { return e == GT_EPI_GELU || e == GT_EPI_BIAS_GELU; }

/* ---- every cpu instance against the reference ----------------------------------------------- */

typedef struct shape {
  int64_t m, n, k, batch;
  int pad;   /* added to every leading dimension (and to batch strides) */
  bool beta; /* beta != 0: C is read */
  gt_trans_t ta, tb;
} shape_t;

/* None of m, n, k is a multiple of a register tile (8x4, 4x8, 4x4), of a cache block (MC 32..128,
 * NC 32..64, KC 128..512) or of the pack instance's 2x2; the last spans several blocks each way.
 * The m = 1 shapes have 23 columns, not fewer: the gate's normwise error is relative to ||D_ref||,
 * and on a handful of elements relu can clamp all but one whose value is a cancellation (GEMM +
 * beta*C + bias ~ 0), so that a correct fp32 rounding exceeds the bound (1x5x300 beta=-0.5
 * bias_relu: 4 of 5 clamped, the fifth 0.118 - 0.112; cpu_naive_f32 error 2.2e-5, bound 8.4e-6). */
static const shape_t k_shapes[] = {
    {37, 29, 61, 1, 0, false, GT_TRANS_T, GT_TRANS_N},
    {37, 29, 61, 1, 0, true, GT_TRANS_N, GT_TRANS_N},
    {1, 23, 300, 1, 0, false, GT_TRANS_T, GT_TRANS_N},
    {1, 23, 300, 1, 0, true, GT_TRANS_T, GT_TRANS_T},
    {130, 70, 300, 2, 3, true, GT_TRANS_N, GT_TRANS_T},
};

typedef struct epi_case {
  char name[112];
  gt_epilogue_t epi;
  gt_dtype_t dt;
  shape_t s;
  gt_init_mode_t init;
} epi_case_t;

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double draw(gt_init_mode_t init) {
  for (;;) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    double v = init == GT_INIT_INT ? (double)((int)(g_rng % 7) - 3)
                                   : (double)(g_rng >> 11) * 0x1.0p-53 * 2 - 1;
    if (v != 0) return v;
  }
}

static void *alloc_fill(gt_dtype_t t, size_t n, gt_init_mode_t init) {
  void *b = malloc(n * gt_dtype_size(t) + 1);
  for (size_t i = 0; i < n; i++) gt_store_elem(b, t, i, draw(init));
  return b;
}

static gt_problem_t case_problem(const epi_case_t *c) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = c->dt;
  p.compute = GT_COMPUTE_F32;
  p.scale_type = GT_DT_F32;
  p.transa = c->s.ta, p.transb = c->s.tb;
  p.m = c->s.m, p.n = c->s.n, p.k = c->s.k;
  p.lda = (p.transa == GT_TRANS_N ? p.m : p.k) + c->s.pad;
  p.ldb = (p.transb == GT_TRANS_N ? p.k : p.n) + c->s.pad;
  p.ldc = p.m + c->s.pad;
  p.batch = c->s.batch;
  if (p.batch > 1) {
    p.stride_a = p.lda * (p.transa == GT_TRANS_N ? p.k : p.m) + c->s.pad * 7;
    p.stride_b = p.ldb * (p.transb == GT_TRANS_N ? p.n : p.k) + c->s.pad * 7;
    p.stride_c = p.ldc * p.n + c->s.pad * 7;
  }
  p.beta_zero = !c->s.beta;
  p.epilogue = c->epi;
  return p;
}

/* Is element e of D's footprint inside one of the batch's m x n matrices? */
static bool inside_d(const gt_problem_t *p, size_t e) {
  for (int64_t b = 0; b < p->batch; b++) {
    int64_t off = (int64_t)e - b * p->stride_c;
    if (off < 0 || off >= p->ldc * p->n) continue;
    if (off % p->ldc < p->m) return true;
  }
  return false;
}

/* ||x - y|| / ||y|| over count doubles. */
static double rel_diff(const double *x, const double *y, size_t count) {
  double d2 = 0, y2 = 0;
  for (size_t i = 0; i < count; i++) d2 += (x[i] - y[i]) * (x[i] - y[i]), y2 += y[i] * y[i];
  return y2 > 0 ? sqrt(d2 / y2) : sqrt(d2);
}

static void test_every_instance_matches_reference(void **state) {
  const epi_case_t *c = *state;
  gt_problem_t p = case_problem(c);
  assert_int_equal(gt_problem_validate(&p), GT_OK);
  const gt_provider_t *cpu = gt_provider_find("cpu");
  assert_non_null(cpu);

  const size_t na = gt_problem_operand_elems(&p, 'A'), nb = gt_problem_operand_elems(&p, 'B');
  const size_t nc = gt_problem_operand_elems(&p, 'C');
  void *A = alloc_fill(p.a_type, na, c->init), *B = alloc_fill(p.b_type, nb, c->init);
  void *C = alloc_fill(p.c_type, nc, c->init);
  void *bias = has_bias(p.epilogue) ? alloc_fill(gt_reference_bias_type(&p), (size_t)p.m, c->init)
                                    : NULL;
  void *D = malloc(nc * gt_dtype_size(p.d_type));
  double alpha_d, beta_d;
  gt_harness_scalars(&p, c->init, &alpha_d, &beta_d);
  float alpha = (float)alpha_d, beta = p.beta_zero ? 0.0f : (float)beta_d;
  gt_operands_t ops = {.A = A, .B = B, .C = p.beta_zero ? D : C, .D = D, .bias = bias,
                       .alpha = &alpha, .beta = &beta};
  const size_t nref = (size_t)(p.m * p.n * p.batch);
  double *ref = malloc(sizeof(double) * nref), *ref_plain = malloc(sizeof(double) * nref);
  assert_int_equal(gt_reference_gemm(&p, &ops, ref), GT_OK);
  /* The same GEMM without its epilogue: an instance that skipped the epilogue would match it. */
  gt_problem_t plain = p;
  plain.epilogue = GT_EPI_NONE;
  assert_int_equal(gt_reference_gemm(&plain, &ops, ref_plain), GT_OK);
  const bool visible = rel_diff(ref, ref_plain, nref) > 4 * gt_metric_bound(&p);
  /* Random inputs are scaled so that outputs are O(1), like the bias: every epilogue shows on a
   * few dozen elements. (Small-integer outputs reach hundreds, so a bias of at most 3 may not.) */
  if (p.epilogue != GT_EPI_NONE && c->init == GT_INIT_RANDOM) assert_true(visible);

  gt_cand_list_t l = {0};
  assert_int_equal(cpu->enumerate(&p, NULL, &l), GT_OK);
  assert_true(gt_cand_list_count_active(&l) >= 6);
  for (size_t i = 0; i < l.n; i++) {
    const gt_candidate_t *cand = &l.v[i];
    if (cand->excluded) continue;
    void *st = NULL;
    size_t ws = 0;
    assert_int_equal(cpu->prepare(cand, &p, &st, &ws), GT_OK);
    /* Twice: a second run on the same state must not depend on what the first left behind. */
    for (int rep = 0; rep < 2; rep++) {
      gt_metric_poison(D, p.d_type, nc);
      assert_int_equal(cpu->run(st, &ops, NULL), GT_OK);
      gt_gate_t g;
      gt_metric_compare(&p, D, ref, &g);
      if (!g.passed)
        print_error("%s / %s: error %.3g bound %.3g: %s\n", c->name, cand->name, g.error, g.bound,
                    g.why);
      assert_true(g.passed);
      /* Small integers in f32: every sum, the bias and relu are exact, so D is too; a bias
       * added twice or not at all is off by at least 1 somewhere. */
      if (c->init == GT_INIT_INT && p.d_type == GT_DT_F32 && !has_gelu(p.epilogue)) {
        if (g.error != 0) print_error("%s / %s: error %.3g, want 0\n", c->name, cand->name, g.error);
        assert_true(g.error == 0);
      }
      if (visible) {
        gt_gate_t skipped;
        gt_metric_compare(&plain, D, ref_plain, &skipped);
        if (skipped.passed)
          print_error("%s / %s: output also matches the GEMM without its epilogue\n", c->name,
                      cand->name);
        assert_false(skipped.passed);
      }
      for (size_t e = 0; e < nc; e++)
        if (!inside_d(&p, e) && !gt_metric_is_poison(D, p.d_type, e)) {
          print_error("%s / %s: wrote element %zu outside D\n", c->name, cand->name, e);
          fail();
        }
    }
    cpu->release(st);
  }
  gt_cand_list_free(&l);
  free(A), free(B), free(C), free(D), free(bias), free(ref), free(ref_plain);
}

/* ---- enumeration and refusals ----------------------------------------------------------------- */

static gt_problem_t small_problem(gt_dtype_t dt, gt_epilogue_t epi) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = dt;
  p.transa = GT_TRANS_T, p.transb = GT_TRANS_N;
  p.m = 48, p.n = 40, p.k = 96;
  p.epilogue = epi;
  gt_problem_fill_lds(&p);
  return p;
}

/* Every epilogue is enumerated with every cpu instance active, and each name comes back. */
static void test_every_epilogue_enumerated(void **state) {
  (void)state;
  const gt_provider_t *cpu = gt_provider_find("cpu");
  for (size_t e = 0; e < NELEM(k_epis); e++) {
    gt_problem_t p = small_problem(GT_DT_BF16, k_epis[e]);
    gt_cand_list_t l = {0};
    assert_int_equal(cpu->enumerate(&p, NULL, &l), GT_OK);
    assert_true(gt_cand_list_count_active(&l) >= 6);
    for (size_t i = 0; i < l.n; i++) {
      if (l.v[i].excluded) {
        /* only cpu_par on a one-core machine */
        assert_non_null(strstr(l.v[i].reason, "one online core"));
        continue;
      }
      gt_candidate_t back;
      assert_int_equal(cpu->from_name(l.v[i].name, &p, &back), GT_OK);
      assert_string_equal(back.name, l.v[i].name);
    }
    gt_cand_list_free(&l);
  }
}

/* A bias epilogue run without a bias vector is a usage error, for every cpu kind and the planted
 * pair; nothing is read through NULL. */
static void test_missing_bias_refused(void **state) {
  (void)state;
  gt_problem_t p = small_problem(GT_DT_F32, GT_EPI_BIAS_RELU);
  const char *names[][2] = {{"cpu", "cpu_naive_f32"},
                            {"cpu", "cpu_ikj_f32"},
                            {"cpu", "cpu_pack_f32"},
                            {"cpu", "cpu_blk_f32_t64x64x256_r8x4"},
                            {"cpu", "cpu_par_f32_th2_t64x64x256_r8x4"},
                            {"testonly", "testonly_nobias"},
                            {"testonly", "testonly_twobias"}};
  float *A = calloc((size_t)(p.m * p.k), sizeof(float)), *B = calloc((size_t)(p.k * p.n), sizeof(float));
  float *D = calloc((size_t)(p.m * p.n), sizeof(float));
  float alpha = 1, beta = 0;
  gt_operands_t ops = {.A = A, .B = B, .C = D, .D = D, .bias = NULL, .alpha = &alpha, .beta = &beta};
  for (size_t i = 0; i < NELEM(names); i++) {
    gt_candidate_t c;
    assert_int_equal(gt_provider_candidate_from_name(names[i][0], names[i][1], &p, &c), GT_OK);
    void *st = NULL;
    size_t ws = 0;
    assert_int_equal(c.provider->prepare(&c, &p, &st, &ws), GT_OK);
    gt_err_clear();
    assert_int_equal(c.provider->run(st, &ops, NULL), GT_ERR_USAGE);
    if (!strstr(gt_err_msg(), "needs a bias vector")) print_error("%s: '%s'\n", names[i][1], gt_err_msg());
    assert_non_null(strstr(gt_err_msg(), "needs a bias vector"));
    c.provider->release(st);
  }
  free(A), free(B), free(D);
}

/* The planted pair is listed (active) exactly for the bias epilogues; by name on another key it
 * is refused with the reason. */
static void test_planted_pair_listed_only_for_bias(void **state) {
  (void)state;
  const gt_provider_t *to = gt_provider_find("testonly");
  assert_non_null(to);
  assert_int_equal(gt_provider_ready(to), GT_OK);
  for (size_t e = 0; e < NELEM(k_epis); e++) {
    gt_problem_t p = small_problem(GT_DT_F16, k_epis[e]);
    gt_cand_list_t l = {0};
    assert_int_equal(to->enumerate(&p, NULL, &l), GT_OK);
    int listed = 0;
    for (size_t i = 0; i < l.n; i++)
      if (strcmp(l.v[i].name, "testonly_nobias") == 0 || strcmp(l.v[i].name, "testonly_twobias") == 0) {
        listed++;
        assert_false(l.v[i].excluded);
      }
    assert_int_equal(listed, has_bias(k_epis[e]) ? 2 : 0);
    gt_cand_list_free(&l);
    gt_candidate_t c;
    gt_status_t s = to->from_name("testonly_twobias", &p, &c);
    assert_int_equal(s, has_bias(k_epis[e]) ? GT_OK : GT_ERR_UNSUPPORTED);
    if (s != GT_OK) assert_non_null(strstr(gt_err_msg(), "bias epilogue"));
  }
}

/* ---- the gate, through the host harness ------------------------------------------------------- */

typedef struct gate_case {
  char name[96];
  gt_epilogue_t epi;
  gt_dtype_t dt;
  char instance[64];
  const char *provider;
  gt_status_t expect;
} gate_case_t;

static void test_gate_on_bias_key(void **state) {
  const gate_case_t *c = *state;
  const gt_harness_ops_t *H = gt_harness_for(GT_BACKEND_HOST);
  gt_problem_t p = small_problem(c->dt, c->epi);
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  o.warm = true; /* one input set: this is about the gate, not cache effects */
  o.seed = 7;
  struct gt_bench *b;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_candidate_t cand;
  gt_status_t s = gt_provider_candidate_from_name(c->provider, c->instance, &p, &cand);
  if (s != GT_OK) print_error("%s: %s\n", c->instance, gt_err_msg());
  assert_int_equal(s, GT_OK);
  struct gt_loaded *l;
  assert_int_equal(H->load(b, &cand, &l), GT_OK);
  /* Timed launches first, on the bench's own bias; the gate then draws a fresh one. */
  double us;
  assert_int_equal(H->time(b, l, 2, &us), GT_OK);
  for (int rep = 0; rep < 2; rep++) {
    gt_gate_t g;
    s = H->gate(b, l, &g);
    if (s != c->expect)
      print_error("%s: %s (error %.3g bound %.3g: %s)\n", c->name, gt_status_name(s), g.error,
                  g.bound, g.why);
    assert_int_equal(s, c->expect);
    assert_int_equal(g.passed, c->expect == GT_OK);
    assert_int_equal(g.unwritten, 0);
    assert_int_equal(g.checked, p.m * p.n);
    if (c->expect == GT_OK) {
      assert_true(g.error <= g.bound);
    } else {
      /* not marginal: the bias is O(1) against outputs of O(1) */
      assert_true(g.error > 10 * g.bound);
      assert_true(g.why[0] != '\0');
    }
  }
  H->unload(l);
  H->close(b);
}

int main(void) {
  /* Before any provider is initialised: init results are cached per process. */
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
  static epi_case_t cases[NELEM(k_epis) * NELEM(k_types) * NELEM(k_shapes) * 2];
  static gate_case_t gates[3 * 2 * 5];
  static struct CMUnitTest t[NELEM(cases) + NELEM(gates) + 8];
  size_t n = 0, nc = 0, ng = 0;
  const char *tr = "NT";
  for (size_t e = 0; e < NELEM(k_epis); e++)
    for (size_t ti = 0; ti < NELEM(k_types); ti++)
      for (size_t si = 0; si < NELEM(k_shapes); si++)
        for (int ints = 0; ints < 2; ints++) {
          epi_case_t *c = &cases[nc++];
          c->epi = k_epis[e], c->dt = k_types[ti], c->s = k_shapes[si];
          c->init = ints ? GT_INIT_INT : GT_INIT_RANDOM;
          snprintf(c->name, sizeof c->name, "%s_%s_%c%c_%lldx%lldx%lld_batch%lld_pad%d_%s_%s",
                   gt_epilogue_name(c->epi), gt_dtype_name(c->dt), tr[c->s.ta], tr[c->s.tb],
                   (long long)c->s.m, (long long)c->s.n, (long long)c->s.k, (long long)c->s.batch,
                   c->s.pad, c->s.beta ? "beta" : "beta0", ints ? "int" : "random");
          t[n++] = (struct CMUnitTest){c->name, test_every_instance_matches_reference, NULL, NULL, c};
        }
  t[n++] = (struct CMUnitTest){"every_epilogue_enumerated", test_every_epilogue_enumerated, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"missing_bias_refused", test_missing_bias_refused, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"planted_pair_listed_only_for_bias", test_planted_pair_listed_only_for_bias, NULL, NULL, NULL};
  const gt_epilogue_t bias_epis[] = {GT_EPI_BIAS, GT_EPI_BIAS_RELU, GT_EPI_BIAS_GELU};
  const gt_dtype_t gate_types[] = {GT_DT_F32, GT_DT_BF16};
  for (size_t e = 0; e < NELEM(bias_epis); e++)
    for (size_t ti = 0; ti < NELEM(gate_types); ti++) {
      const char *dt = gt_dtype_name(gate_types[ti]);
      struct {
        const char *provider, *fmt;
        gt_status_t expect;
      } inst[] = {{"cpu", "cpu_naive_%s", GT_OK},
                  {"cpu", "cpu_blk_%s_t64x64x256_r8x4", GT_OK},
                  {"cpu", "cpu_par_%s_th2_t64x64x256_r8x4", GT_OK},
                  {"testonly", "testonly_nobias", GT_ERR_GATE},
                  {"testonly", "testonly_twobias", GT_ERR_GATE}};
      for (size_t i = 0; i < NELEM(inst); i++) {
        gate_case_t *g = &gates[ng++];
        g->epi = bias_epis[e], g->dt = gate_types[ti];
        g->provider = inst[i].provider, g->expect = inst[i].expect;
        snprintf(g->instance, sizeof g->instance, inst[i].fmt, dt);
        snprintf(g->name, sizeof g->name, "gate_%s_%s_%s_%s",
                 g->expect == GT_OK ? "passes" : "rejects", g->instance,
                 gt_epilogue_name(g->epi), dt);
        t[n++] = (struct CMUnitTest){g->name, test_gate_on_bias_key, NULL, NULL, g};
      }
    }
  return _cmocka_run_group_tests("epilogue", t, n, NULL, NULL);
}
