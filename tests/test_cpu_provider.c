/* Every cpu instance computes the right answer: for f32/bf16/f16, all four transposes, odd shapes,
 * padded leading dimensions, strided batches and beta != 0, on random and integer inputs, each
 * active candidate passes the gate against the fp64 reference and writes nothing outside D.
 * (Speed differences between instances are measured by the tuner, not asserted here.) Unsupported
 * problems list every instance as excluded with the reason. Epilogues are tested in
 * test_epilogue.c. */
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
#include "providers/gt_provider.h"
#include "providers/gt_reference.h"

/* ---- the case table (built in main: types x transposes x shapes x init modes) ---------------- */

typedef struct shape {
  int64_t m, n, k, batch;
  int pad;   /* added to every leading dimension (and to batch strides) */
  bool beta; /* beta != 0: C is read */
} shape_t;

static const shape_t k_shapes[] = {
    {1, 7, 13, 1, 0, false},   {33, 65, 129, 1, 0, false}, {33, 65, 129, 1, 0, true},
    {7, 1, 300, 1, 0, false},  {130, 70, 40, 1, 3, true},  {17, 19, 23, 3, 5, false},
    {17, 19, 23, 3, 0, true},  {9, 150, 520, 2, 1, true},
};
static const gt_dtype_t k_types[] = {GT_DT_F32, GT_DT_BF16, GT_DT_F16};

typedef struct gemm_case {
  char name[96];
  gt_dtype_t dt;
  gt_trans_t ta, tb;
  shape_t s;
  bool ints;
} gemm_case_t;

/* ---- fixtures -------------------------------------------------------------------------------- */

static uint64_t g_rng = 0x1234567;
static double draw(bool ints) {
  for (;;) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    double v = ints ? (double)((int)(g_rng % 7) - 3) : (double)(g_rng >> 11) * 0x1.0p-53 * 2 - 1;
    if (v != 0) return v;
  }
}

static void *alloc_fill(gt_dtype_t t, size_t n, bool ints) {
  void *b = malloc(n * gt_dtype_size(t) + 1);
  for (size_t i = 0; i < n; i++) gt_store_elem(b, t, i, draw(ints));
  return b;
}

static gt_problem_t case_problem(const gemm_case_t *c) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = c->dt;
  p.compute = GT_COMPUTE_F32;
  p.scale_type = GT_DT_F32;
  p.transa = c->ta, p.transb = c->tb;
  p.m = c->s.m, p.n = c->s.n, p.k = c->s.k;
  p.lda = (c->ta == GT_TRANS_N ? p.m : p.k) + c->s.pad;
  p.ldb = (c->tb == GT_TRANS_N ? p.k : p.n) + c->s.pad;
  p.ldc = p.m + c->s.pad;
  p.batch = c->s.batch;
  if (p.batch > 1) {
    p.stride_a = p.lda * (c->ta == GT_TRANS_N ? p.k : p.m) + c->s.pad * 7;
    p.stride_b = p.ldb * (c->tb == GT_TRANS_N ? p.n : p.k) + c->s.pad * 7;
    p.stride_c = p.ldc * p.n + c->s.pad * 7;
  }
  p.beta_zero = !c->s.beta;
  return p;
}

static size_t footprint(int64_t ld, int64_t cols, int64_t batch, int64_t stride) {
  return (size_t)(ld * cols + (batch - 1) * stride);
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

/* ---- correctness ------------------------------------------------------------------------------ */

static void test_all_candidates_pass_gate(void **state) {
  const gemm_case_t *c = *state;
  gt_problem_t p = case_problem(c);
  assert_int_equal(gt_problem_validate(&p), GT_OK);
  const gt_provider_t *cpu = gt_provider_find("cpu");
  assert_non_null(cpu);

  size_t na = footprint(p.lda, p.transa == GT_TRANS_N ? p.k : p.m, p.batch, p.stride_a);
  size_t nb = footprint(p.ldb, p.transb == GT_TRANS_N ? p.n : p.k, p.batch, p.stride_b);
  size_t nc = footprint(p.ldc, p.n, p.batch, p.stride_c);
  void *A = alloc_fill(p.a_type, na, c->ints), *B = alloc_fill(p.b_type, nb, c->ints);
  void *C = alloc_fill(p.c_type, nc, c->ints);
  void *D = malloc(nc * gt_dtype_size(p.d_type));
  float alpha = c->ints ? 2.0f : 0.75f, beta = p.beta_zero ? 0.0f : -0.5f;
  gt_operands_t ops = {.A = A, .B = B, .C = p.beta_zero ? D : C, .D = D, .alpha = &alpha, .beta = &beta};
  double *ref = malloc(sizeof(double) * (size_t)(p.m * p.n * p.batch));
  assert_int_equal(gt_reference_gemm(&p, &ops, ref), GT_OK);

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
      /* small integers in f32: every sum is exact, so the result is too */
      if (c->ints && p.d_type == GT_DT_F32) assert_true(g.error < 1e-7);
      for (size_t e = 0; e < nc; e++)
        if (!inside_d(&p, e) && !gt_metric_is_poison(D, p.d_type, e)) {
          print_error("%s / %s: wrote element %zu outside D\n", c->name, cand->name, e);
          fail();
        }
    }
    cpu->release(st);
  }
  gt_cand_list_free(&l);
  free(A), free(B), free(C), free(D), free(ref);
}

/* ---- enumeration ---------------------------------------------------------------------------- */

static void test_instances_and_baseline(void **state) {
  (void)state;
  const gt_provider_t *cpu = gt_provider_find("cpu");
  gt_problem_t p;
  gt_problem_init(&p); /* bf16 */
  p.m = 64, p.n = 64, p.k = 64;
  gt_problem_fill_lds(&p);
  gt_cand_list_t l = {0};
  assert_int_equal(cpu->enumerate(&p, NULL, &l), GT_OK);
  int baselines = 0;
  for (size_t i = 0; i < l.n; i++)
    if (l.v[i].is_baseline) {
      baselines++;
      assert_string_equal(l.v[i].name, "cpu_naive_bf16");
    }
  assert_int_equal(baselines, 1);
  assert_true(gt_cand_list_count_active(&l) >= 6);
  gt_cand_list_free(&l);
}

typedef struct excl_case {
  const char *name;
  gt_dtype_t in, out;
  gt_compute_t comp;
  gt_epilogue_t epi;
  const char *reason;
} excl_case_t;

static const excl_case_t k_excl[] = {
    {"excludes_int8", GT_DT_I8, GT_DT_I32, GT_COMPUTE_I32, GT_EPI_NONE, "not implemented by cpu instances"},
    {"excludes_fp8", GT_DT_F8E4M3FN, GT_DT_BF16, GT_COMPUTE_F32, GT_EPI_NONE, "types a=f8e4m3fn"},
    {"excludes_tf32_compute", GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32, GT_EPI_NONE, "compute tf32"},
    {"excludes_mixed_types", GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32, GT_EPI_NONE, "types a=bf16 b=bf16 c=f32 d=f32"},
    {"excludes_f16_compute_with_epilogue", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F16, GT_EPI_BIAS_GELU, "compute f16"},
};

static void test_excluded_with_reason(void **state) {
  const excl_case_t *c = *state;
  const gt_provider_t *cpu = gt_provider_find("cpu");
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = c->in;
  p.c_type = p.d_type = c->out;
  p.compute = c->comp;
  p.epilogue = c->epi;
  if (c->comp == GT_COMPUTE_I32) p.scale_type = GT_DT_I32;
  p.m = p.n = p.k = 32;
  gt_problem_fill_lds(&p);
  gt_cand_list_t l = {0};
  assert_int_equal(cpu->enumerate(&p, NULL, &l), GT_OK);
  assert_true(l.n >= 6);
  assert_int_equal(gt_cand_list_count_active(&l), 0);
  for (size_t i = 0; i < l.n; i++) {
    assert_non_null(strstr(l.v[i].reason, c->reason));
    /* by name, too: the name parses, the problem is refused */
    gt_candidate_t back;
    assert_int_equal(cpu->from_name(l.v[i].name, &p, &back), GT_ERR_UNSUPPORTED);
  }
  gt_cand_list_free(&l);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  static gemm_case_t cases[NELEM(k_types) * 4 * NELEM(k_shapes) * 2];
  static struct CMUnitTest t[NELEM(cases) + 16];
  size_t n = 0, nc = 0;
  const char *tr = "NT";
  for (size_t ti = 0; ti < NELEM(k_types); ti++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (size_t si = 0; si < NELEM(k_shapes); si++)
          for (int ints = 0; ints < 2; ints++) {
            gemm_case_t *c = &cases[nc++];
            c->dt = k_types[ti], c->ta = (gt_trans_t)ta, c->tb = (gt_trans_t)tb;
            c->s = k_shapes[si], c->ints = ints;
            snprintf(c->name, sizeof c->name, "%s_%c%c_%lldx%lldx%lld_batch%lld_pad%d_%s_%s",
                     gt_dtype_name(c->dt), tr[ta], tr[tb], (long long)c->s.m, (long long)c->s.n,
                     (long long)c->s.k, (long long)c->s.batch, c->s.pad,
                     c->s.beta ? "beta" : "beta0", ints ? "int" : "random");
            t[n++] = (struct CMUnitTest){c->name, test_all_candidates_pass_gate, NULL, NULL, c};
          }
  t[n++] = (struct CMUnitTest){"instances_and_one_baseline", test_instances_and_baseline, NULL, NULL, NULL};
  for (size_t i = 0; i < NELEM(k_excl); i++)
    t[n++] = (struct CMUnitTest){k_excl[i].name, test_excluded_with_reason, NULL, NULL, (void *)&k_excl[i]};
  return _cmocka_run_group_tests("cpu_provider", t, n, NULL, NULL);
}
