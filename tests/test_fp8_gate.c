/* The gate on fp8 keys, on the host: the fp64 reference dequantizes the operands with their
 * scales, and the bound follows fp8 accumulation and K.
 *
 *   for e4m3 x e4m3, e4m3 x e5m2 and e5m2 x e4m3 keys with every scale mode (tensorwise,
 *   outer vector, 1x128 and 128x128 blocks), bf16 / f16 / f32 / fp8 D (with its scale and amax),
 *   fast accumulation and a bias, the correct planted instance testonly_f8_exact passes the gate,
 *   and each planted mistake fails it: testonly_f8_noscaleb (ignores scale_b), testonly_f8_rowcol
 *   (A's row factors applied by column), testonly_f8_ksplit (K split inside a 128 block),
 *   testonly_f8_blkorder (block arrays read transposed against cuBLASLt's layout),
 *   testonly_f8_blkunpadded (a 128x128 array read without its K-block stride padded to 4),
 *   testonly_f8_amaxscaled (amax taken after D's scale);
 *   each mistake is listed exactly where the key has what it gets wrong;
 *   the reference refuses an fp8 key whose scale arrays are missing;
 *   the fp8 bound grows with K, is looser with fast accumulation, and stays far below the
 *   error of a dropped or misplaced scale factor. */
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

typedef struct key_case {
  const char *name;
  gt_dtype_t a, b, d;
  gt_scale_mode_t sa, sb;
  bool fast, scale_d, amax, bias;
  int64_t m, n, k;
} key_case_t;

static const key_case_t k_keys[] = {
    {"tensorwise_e4m3_bf16_decode", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR,
     GT_SCALE_TENSOR, 0, 0, 0, 0, 96, 8, 320},
    {"tensorwise_fast_accum_bias", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR,
     GT_SCALE_TENSOR, 1, 0, 0, 1, 64, 16, 256},
    {"rowwise_e4m3_bf16", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_OUTER,
     GT_SCALE_OUTER, 0, 0, 0, 0, 80, 24, 192},
    {"rowwise_bias_prefill", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_OUTER,
     GT_SCALE_OUTER, 0, 0, 0, 1, 72, 40, 160},
    {"blockwise_1x128_128x128", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_BLK1X128,
     GT_SCALE_BLK128X128, 0, 0, 0, 0, 144, 136, 384},
    /* rows 128..199 are where a misplaced 128x128 factor of A shows: most of m, not a sliver */
    {"blockwise_128x128_both_f16", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_F16,
     GT_SCALE_BLK128X128, GT_SCALE_BLK128X128, 0, 0, 0, 0, 200, 16, 320},
    /* cuBLASLt's DeepSeek pair (the weight is A): 5 K blocks, a 128x128 stride padded to 8 */
    {"blockwise_128x128_w_1x128_x_padded", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16,
     GT_SCALE_BLK128X128, GT_SCALE_BLK1X128, 0, 0, 0, 0, 384, 32, 640},
    {"e4m3_x_e5m2_outer_f32", GT_DT_F8E4M3FN, GT_DT_F8E5M2, GT_DT_F32, GT_SCALE_OUTER,
     GT_SCALE_TENSOR, 0, 0, 0, 0, 48, 32, 128},
    {"e5m2_x_e4m3_blk1x128", GT_DT_F8E5M2, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR,
     GT_SCALE_BLK1X128, 0, 0, 0, 0, 40, 24, 272},
    {"fp8_d_scale_amax", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_SCALE_TENSOR,
     GT_SCALE_TENSOR, 0, 1, 1, 0, 64, 16, 256},
    {"bf16_d_amax_rowwise", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_OUTER,
     GT_SCALE_OUTER, 0, 0, 1, 0, 64, 8, 256},
};

static gt_problem_t key_of(const key_case_t *c) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = c->a, p.b_type = c->b;
  p.c_type = p.d_type = c->d;
  p.scale_a = c->sa, p.scale_b = c->sb;
  p.fast_accum = c->fast, p.scale_d = c->scale_d, p.amax_d = c->amax;
  p.epilogue = c->bias ? GT_EPI_BIAS : GT_EPI_NONE;
  gt_problem_set_linear(&p, c->n, c->m, c->k);
  return p;
}

/* Whether planted instance `inst` is listed for p (the testonly provider's own rule). */
static bool listed(const gt_problem_t *p, const char *inst) {
  const gt_provider_t *to = gt_provider_find("testonly");
  gt_cand_list_t l = {0};
  assert_int_equal(to->enumerate(p, NULL, &l), GT_OK);
  bool found = false;
  for (size_t i = 0; i < l.n; i++)
    if (strcmp(l.v[i].name, inst) == 0) {
      found = true;
      assert_false(l.v[i].excluded);
    }
  gt_cand_list_free(&l);
  return found;
}

/* The gate's verdict on one planted instance for p: GT_OK or GT_ERR_GATE, with the gate. */
static gt_status_t gate_one(const gt_problem_t *p, const char *inst, gt_gate_t *g) {
  const gt_harness_ops_t *H = gt_harness_for(GT_BACKEND_HOST);
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  o.warm = true;
  o.seed = 11;
  struct gt_bench *b;
  assert_int_equal(H->open(p, &o, &b), GT_OK);
  gt_candidate_t cand;
  gt_status_t s = gt_provider_candidate_from_name("testonly", inst, p, &cand);
  if (s != GT_OK) print_error("%s: %s\n", inst, gt_err_msg());
  assert_int_equal(s, GT_OK);
  struct gt_loaded *l;
  assert_int_equal(H->load(b, &cand, &l), GT_OK);
  s = H->gate(b, l, g);
  H->unload(l);
  H->close(b);
  return s;
}

static const char *const k_faults[] = {"testonly_f8_noscaleb",   "testonly_f8_rowcol",
                                       "testonly_f8_ksplit",     "testonly_f8_blkorder",
                                       "testonly_f8_blkunpadded", "testonly_f8_amaxscaled"};

static void test_gate_fp8_key(void **state) {
  const key_case_t *c = *state;
  gt_problem_t p = key_of(c);
  assert_int_equal(gt_problem_validate(&p), GT_OK);
  gt_gate_t g;
  gt_status_t s = gate_one(&p, "testonly_f8_exact", &g);
  if (s != GT_OK)
    print_error("%s: the correct instance fails: error %.3g bound %.3g: %s\n", c->name, g.error,
                g.bound, g.why);
  assert_int_equal(s, GT_OK);
  const double exact_err = g.error, bound = g.bound;
  for (size_t f = 0; f < NELEM(k_faults); f++) {
    if (!listed(&p, k_faults[f])) continue;
    s = gate_one(&p, k_faults[f], &g);
    if (s != GT_ERR_GATE)
      print_error("%s / %s: passed the gate (error %.3g bound %.3g)\n", c->name, k_faults[f],
                  g.error, g.bound);
    assert_int_equal(s, GT_ERR_GATE);
    /* Not a marginal miss: a wrong scale is O(1) off, the bound is fp8 accumulation (the amax
     * fault leaves D right: the amax check names it). */
    if (strcmp(k_faults[f], "testonly_f8_amaxscaled") == 0) assert_non_null(strstr(g.why, "amax_d"));
    else if (!(g.error > 4 * bound))
      fail_msg("%s / %s: error %.3g only marginally above the bound %.3g", c->name, k_faults[f],
               g.error, bound);
  }
  assert_true(exact_err <= bound);
}

/* Each mistake is listed where the key has what it gets wrong, and only there. */
static void test_faults_listed_where_they_apply(void **state) {
  (void)state;
  /* k_keys[0] is m 96 (one 128-block of rows), n 8 */
  static const struct {
    gt_scale_mode_t sa, sb;
    int64_t m, k;
    bool noscaleb, rowcol, ksplit, blkorder, blkpad;
  } cases[] = {
      {GT_SCALE_TENSOR, GT_SCALE_TENSOR, 96, 256, 1, 0, 0, 0, 0},
      {GT_SCALE_TENSOR, GT_SCALE_NONE, 96, 256, 0, 0, 0, 0, 0},
      {GT_SCALE_OUTER, GT_SCALE_OUTER, 96, 256, 1, 1, 0, 0, 0},
      {GT_SCALE_BLK1X128, GT_SCALE_BLK128X128, 96, 256, 1, 1, 1, 1, 0},
      /* one K block: nothing to cut, nothing to transpose */
      {GT_SCALE_BLK1X128, GT_SCALE_BLK128X128, 96, 128, 1, 1, 0, 0, 0},
      {GT_SCALE_NONE, GT_SCALE_BLK1X128, 96, 384, 1, 0, 1, 1, 0},
      /* one 128-block of rows: a 128x128 array reads the same either way */
      {GT_SCALE_BLK128X128, GT_SCALE_TENSOR, 96, 384, 1, 1, 1, 0, 0},
      /* two of them, 3 K blocks: transposed and unpadded both read other factors */
      {GT_SCALE_BLK128X128, GT_SCALE_TENSOR, 200, 384, 1, 1, 1, 1, 1},
      /* 4 K blocks: the stride needs no padding */
      {GT_SCALE_BLK128X128, GT_SCALE_TENSOR, 200, 512, 1, 1, 1, 1, 0},
  };
  for (size_t i = 0; i < NELEM(cases); i++) {
    key_case_t kc = k_keys[0];
    kc.sa = cases[i].sa, kc.sb = cases[i].sb, kc.m = cases[i].m, kc.k = cases[i].k;
    gt_problem_t p = key_of(&kc);
    assert_true(listed(&p, "testonly_f8_exact"));
    assert_int_equal(listed(&p, "testonly_f8_noscaleb"), cases[i].noscaleb);
    assert_int_equal(listed(&p, "testonly_f8_rowcol"), cases[i].rowcol);
    assert_int_equal(listed(&p, "testonly_f8_ksplit"), cases[i].ksplit);
    assert_int_equal(listed(&p, "testonly_f8_blkorder"), cases[i].blkorder);
    assert_int_equal(listed(&p, "testonly_f8_blkunpadded"), cases[i].blkpad);
  }
  /* and none of the fp8 family for a bf16 key */
  gt_problem_t p;
  gt_problem_init(&p);
  gt_problem_set_linear(&p, 8, 64, 256);
  assert_false(listed(&p, "testonly_f8_exact"));
}

/* The reference will not guess a scale: an fp8 key without its arrays is refused. */
static void test_reference_needs_scales(void **state) {
  (void)state;
  gt_problem_t p = key_of(&k_keys[2]);
  size_t na = gt_problem_operand_elems(&p, 'A'), nb = gt_problem_operand_elems(&p, 'B');
  uint8_t *A = calloc(na, 1), *B = calloc(nb, 1);
  double *ref = calloc((size_t)(p.m * p.n), sizeof(double));
  float alpha = 1.0f, beta = 0.0f;
  gt_operands_t o = {.A = A, .B = B, .alpha = &alpha, .beta = &beta};
  assert_int_equal(gt_reference_gemm(&p, &o, ref), GT_ERR_USAGE);
  float *sa = calloc((size_t)p.m, sizeof(float)), *sb = calloc((size_t)p.n, sizeof(float));
  o.scale_a = sa, o.scale_b = sb;
  assert_int_equal(gt_reference_gemm(&p, &o, ref), GT_OK);
  free(A), free(B), free(ref), free(sa), free(sb);
}

/* The bound: grows with K, looser with fast accumulation, above bf16 rounding, and far below the
 * O(1) error of a wrong scale factor at the K of real layers. */
static void test_fp8_bound(void **state) {
  (void)state;
  key_case_t kc = k_keys[0];
  kc.k = 256;
  gt_problem_t p = key_of(&kc);
  const double b256 = gt_metric_bound(&p);
  kc.k = 4096;
  gt_problem_t q = key_of(&kc);
  const double b4096 = gt_metric_bound(&q);
  q.fast_accum = true;
  const double fast = gt_metric_bound(&q);
  assert_true(b4096 > b256);
  assert_true(fast > b4096);
  assert_true(b256 > ldexp(1.0, -8)); /* at least the bf16 output's rounding */
  assert_true(fast < 0.1);            /* a dropped factor of 2^+-1.5 is 0.3 .. 1.8 off */
  /* fp8 accumulation is coarser than the bf16 GEMM of the same shape */
  gt_problem_t bf;
  gt_problem_init(&bf);
  gt_problem_set_linear(&bf, 8, 96, 4096);
  assert_true(b4096 > gt_metric_bound(&bf));
}

int main(void) {
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
  static struct CMUnitTest t[NELEM(k_keys) + 8];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_keys); i++)
    t[n++] = (struct CMUnitTest){k_keys[i].name, test_gate_fp8_key, NULL, NULL, (void *)&k_keys[i]};
  t[n++] = (struct CMUnitTest){"faults_listed_where_they_apply", test_faults_listed_where_they_apply, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"reference_needs_scales", test_reference_needs_scales, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"fp8_bound", test_fp8_bound, NULL, NULL, NULL};
  return _cmocka_run_group_tests("fp8_gate", t, n, NULL, NULL);
}
