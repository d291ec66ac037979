/* The cuBLASLt provider on a GPU: heuristic candidates pass the gate on every type path,
 * transposes, strided batch, beta != 0 and the bias/relu/gelu epilogues; the exhaustive
 * enumeration of a decode shape lists thousands of configurations, each excluded one with a
 * reason; every active one is named by its configuration, and its name rebuilds the same
 * candidate through from_name; a spread of the exhaustive candidates passes the gate too.
 * fp8 keys (e4m3 x e4m3 to bf16 tensorwise with and without fast accumulation and a bias, rowwise
 * outer-vector scales, the e4m3 x e5m2 mixes, an fp8 D with its scale and amax, and the blockwise
 * pairs cuBLASLt offers on sm_90, required there: 128x128 x 1x128, 1x128 x 128x128 and 1x128 x
 * 1x128, with K-block counts that do and do not need the 128x128 stride padded to 4, rows
 * not a multiple of 128): the application's own Lt call and the heuristic configurations pass
 * the gate against the fp64 reference of the dequantized operands, which reads the block arrays
 * in the layout gt_scale.h takes from the cuBLAS documentation, reading the scale arrays the
 * harness gives at run time; a planted zero in the B scales (the
 * same candidate, prepared once, run on other factors) changes the result, so the factors are
 * read when the kernel runs, not when it was prepared.
 * Skipped (77) without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/gt_dtype.h"

#include "gt_testutil.h"
#include "harness/gt_harness.h"
#include "providers/cuda/gt_cublaslt_name.h"
#include "providers/gt_provider.h"

extern const gt_provider_t gt_provider_cublaslt;

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const gt_harness_ops_t *H = &gt_harness_cuda;
static const gt_provider_t *P = &gt_provider_cublaslt;
static gt_device_info_t g_dev;

typedef struct lt_case {
  const char *what;
  gt_dtype_t ab, cd;
  gt_compute_t compute;
  gt_trans_t ta, tb;
  int64_t m, n, k, batch;
  bool beta_zero;
  gt_epilogue_t epi;
} lt_case_t;

#define LIN(tokens, out, in) GT_TRANS_T, GT_TRANS_N, (out), (tokens), (in)

static const lt_case_t k_cases[] = {
    {"bf16 nn.Linear 16x4096x4096", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, LIN(16, 4096, 4096), 1, true, GT_EPI_NONE},
    {"bf16 nn.Linear odd 7x1000x333", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, LIN(7, 1000, 333), 1, true, GT_EPI_NONE},
    {"f16 NT 96x200x64", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_T, 96, 200, 64, 1, true, GT_EPI_NONE},
    {"f32 NN 100x200x300", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_N, 100, 200, 300, 1, true, GT_EPI_NONE},
    {"tf32 TT 128x96x512", GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32, GT_TRANS_T, GT_TRANS_T, 128, 96, 512, 1, true, GT_EPI_NONE},
    {"bf16 strided batch 4 of 64x48x80", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_N, 64, 48, 80, 4, true, GT_EPI_NONE},
    {"bf16 beta != 0 (in place) 128x64x256", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_N, 128, 64, 256, 1, false, GT_EPI_NONE},
    {"bf16 bias epilogue 1024x16x512", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, LIN(16, 1024, 512), 1, true, GT_EPI_BIAS},
    {"bf16 bias+relu epilogue 1024x16x512", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, LIN(16, 1024, 512), 1, true, GT_EPI_BIAS_RELU},
    {"bf16 gelu epilogue 1024x16x512", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, LIN(16, 1024, 512), 1, true, GT_EPI_GELU},
};

static void make_problem(const lt_case_t *c, gt_problem_t *p) {
  gt_problem_init(p);
  p->a_type = p->b_type = c->ab;
  p->c_type = p->d_type = c->cd;
  p->compute = c->compute;
  p->scale_type = GT_DT_F32;
  p->transa = c->ta, p->transb = c->tb;
  p->m = c->m, p->n = c->n, p->k = c->k;
  p->lda = c->ta == GT_TRANS_N ? c->m : c->k;
  p->ldb = c->tb == GT_TRANS_N ? c->k : c->n;
  p->ldc = c->m;
  p->batch = c->batch;
  if (c->batch > 1) {
    p->stride_a = p->lda * (c->ta == GT_TRANS_N ? c->k : c->m);
    p->stride_b = p->ldb * (c->tb == GT_TRANS_N ? c->n : c->k);
    p->stride_c = p->ldc * c->n;
  }
  p->beta_zero = c->beta_zero;
  p->epilogue = c->epi;
  snprintf(p->arch, sizeof p->arch, "%s", g_dev.arch);
  p->sm_count = g_dev.sm_count;
}

/* Gate candidate c on bench b; returns true when it passed (prints why not). */
static bool gates(struct gt_bench *b, const gt_candidate_t *c, const char *what) {
  struct gt_loaded *l = NULL;
  gt_status_t s = H->load(b, c, &l);
  if (s != GT_OK) {
    printf("#   %s %s: load: %s\n", what, c->name, gt_err_msg());
    return false;
  }
  gt_gate_t g;
  s = H->gate(b, l, &g);
  H->unload(l);
  if (s != GT_OK || !g.passed) {
    printf("#   %s %s: %s (%s)\n", what, c->name, g.why, gt_err_msg());
    return false;
  }
  return true;
}

static void test_lib_version(void **state) {
  (void)state;
  const char *v = P->lib_version();
  printf("# %s\n", v);
  assert_memory_equal(v, "cublaslt=", 9);
  assert_true(strcmp(v, "cublaslt=?") != 0);
}

static void test_heuristic_candidates_pass_gate(void **state) {
  (void)state;
  int failed = 0;
  for (size_t i = 0; i < NELEM(k_cases); i++) {
    gt_problem_t p;
    make_problem(&k_cases[i], &p);
    gt_enum_opts_t eo = {.max_candidates = 8};
    gt_cand_list_t list = {0};
    if (P->enumerate(&p, &eo, &list) != GT_OK) fail_msg("%s: enumerate: %s", k_cases[i].what, gt_err_msg());
    size_t active = gt_cand_list_count_active(&list);
    gt_measure_opts_t o;
    gt_measure_opts_init(&o);
    struct gt_bench *b = NULL;
    if (H->open(&p, &o, &b) != GT_OK) fail_msg("%s: open: %s", k_cases[i].what, gt_err_msg());
    int passed = 0;
    for (size_t j = 0; j < list.n; j++) {
      if (list.v[j].excluded) continue;
      if (gates(b, &list.v[j], k_cases[i].what)) passed++;
      else failed++;
    }
    printf("# %-40s %zu listed, %zu active, %d passed the gate\n", k_cases[i].what, list.n, active,
           passed);
    if (active == 0) {
      printf("#   no heuristic candidate at all\n");
      failed++;
    }
    H->close(b);
    gt_cand_list_free(&list);
  }
  assert_int_equal(failed, 0);
}

/* ---- fp8 ---------------------------------------------------------------------------------- */

typedef struct fp8_case {
  const char *what;
  gt_dtype_t a, b, d;
  gt_scale_mode_t sa, sb;
  bool fast, scale_d, amax;
  gt_epilogue_t epi;
  int64_t tokens, out, in;
  /* blockwise: cuBLASLt documents these modes for compute capability 9.0 only: a case without
   * a candidate fails on sm_90 and is listed as skipped elsewhere */
  bool sm90_only;
} fp8_case_t;

static const fp8_case_t k_fp8[] = {
    {"e4m3 tensorwise decode 16x4096x4096", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0, GT_EPI_NONE, 16, 4096, 4096, 0},
    {"e4m3 tensorwise prefill 512x1024x2048", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0, GT_EPI_NONE, 512, 1024, 2048, 0},
    {"e4m3 tensorwise fast accum", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 1, 0, 0, GT_EPI_NONE, 16, 4096, 4096, 0},
    {"e4m3 tensorwise bias", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0, GT_EPI_BIAS, 16, 4096, 4096, 0},
    {"e4m3 rowwise (outer vectors) decode", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_OUTER, GT_SCALE_OUTER, 0, 0, 0, GT_EPI_NONE, 16, 4096, 4096, 0},
    {"e4m3 rowwise bias prefill", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_OUTER, GT_SCALE_OUTER, 0, 0, 0, GT_EPI_BIAS, 256, 4096, 4096, 0},
    {"e4m3 x e5m2 tensorwise", GT_DT_F8E4M3FN, GT_DT_F8E5M2, GT_DT_BF16, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0, GT_EPI_NONE, 32, 2048, 2048, 0},
    {"e5m2 x e4m3 tensorwise f32 out", GT_DT_F8E5M2, GT_DT_F8E4M3FN, GT_DT_F32, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0, GT_EPI_NONE, 32, 2048, 2048, 0},
    {"e4m3 fp8 D with scale and amax", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 1, 1, GT_EPI_NONE, 16, 4096, 4096, 0},
    /* DeepSeek V3 as torch._scaled_mm issues it: the weight (cuBLASLt's A) in 128x128 blocks,
     * the activations (B) in 1x128 runs; 32 K blocks */
    {"e4m3 blockwise 128x128 W, 1x128 x", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_BLK128X128, GT_SCALE_BLK1X128, 0, 0, 0, GT_EPI_NONE, 128, 4096, 4096, 1},
    /* 7 K blocks (the 128x128 stride padded to 8), 2 blocks and a part of rows, 20 tokens */
    {"e4m3 blockwise 128x128 W padded, 1x128 x", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_BLK128X128, GT_SCALE_BLK1X128, 0, 0, 0, GT_EPI_NONE, 20, 320, 896, 1},
    {"e4m3 blockwise 1x128 W, 128x128 x", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_BLK1X128, GT_SCALE_BLK128X128, 0, 0, 0, GT_EPI_NONE, 256, 1024, 1408, 1},
    {"e4m3 blockwise 1x128 both", GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_BLK1X128, GT_SCALE_BLK1X128, 0, 0, 0, GT_EPI_NONE, 64, 2048, 1024, 1},
};

static void make_fp8(const fp8_case_t *c, gt_problem_t *p) {
  gt_problem_init(p);
  p->a_type = c->a, p->b_type = c->b;
  /* cuBLASLt's fp8 table: an fp8 D takes a 16-bit C (bf16 here); otherwise C is D's type */
  p->d_type = c->d;
  p->c_type = gt_dtype_is_fp8(c->d) ? GT_DT_BF16 : c->d;
  p->scale_a = c->sa, p->scale_b = c->sb;
  p->fast_accum = c->fast, p->scale_d = c->scale_d, p->amax_d = c->amax;
  p->epilogue = c->epi;
  gt_problem_set_linear(p, c->tokens, c->out, c->in);
  snprintf(p->arch, sizeof p->arch, "%s", g_dev.arch);
  p->sm_count = g_dev.sm_count;
}

static void test_fp8_candidates_pass_gate(void **state) {
  (void)state;
  int failed = 0;
  for (size_t i = 0; i < NELEM(k_fp8); i++) {
    const fp8_case_t *c = &k_fp8[i];
    gt_problem_t p;
    make_fp8(c, &p);
    assert_int_equal(gt_problem_validate(&p), GT_OK);
    assert_ptr_equal(gt_provider_baseline(GT_BACKEND_CUDA, GT_ENTRY_DEFAULT, &p, NULL, 0), P);
    gt_enum_opts_t eo = {.max_candidates = 8, .entry = GT_ENTRY_LTMATMUL};
    gt_cand_list_t list = {0};
    if (P->enumerate(&p, &eo, &list) != GT_OK) fail_msg("%s: enumerate: %s", c->what, gt_err_msg());
    size_t active = gt_cand_list_count_active(&list);
    if (active == 0) {
      const bool skip = c->sm90_only && strcmp(g_dev.arch, "sm_90") != 0;
      printf("# %-40s no candidate%s: %s\n", c->what, skip ? " (skipped: not sm_90)" : "",
             list.n ? list.v[0].reason : "");
      if (!skip) failed++;
      gt_cand_list_free(&list);
      continue;
    }
    gt_measure_opts_t o;
    gt_measure_opts_init(&o);
    struct gt_bench *b = NULL;
    if (H->open(&p, &o, &b) != GT_OK) fail_msg("%s: open: %s", c->what, gt_err_msg());
    int passed = 0;
    bool base = false;
    for (size_t j = 0; j < list.n; j++) {
      if (list.v[j].excluded) continue;
      base = base || list.v[j].is_baseline;
      if (gates(b, &list.v[j], c->what)) passed++;
      else failed++;
    }
    printf("# %-40s %zu listed, %zu active, %d passed the gate\n", c->what, list.n, active, passed);
    if (!base) {
      printf("#   no baseline (the application's own call)\n");
      failed++;
    }
    H->close(b);
    gt_cand_list_free(&list);
  }
  assert_int_equal(failed, 0);
}

/* The scales are read when the kernel runs: one prepared candidate run with two different B
 * factor arrays gives two different answers, the second the first times the ratio. */
static void test_fp8_scales_read_at_run_time(void **state) {
  (void)state;
  gt_problem_t p;
  make_fp8(&k_fp8[0], &p);
  gt_enum_opts_t eo = {.max_candidates = 1, .entry = GT_ENTRY_LTMATMUL};
  gt_cand_list_t list = {0};
  assert_int_equal(P->enumerate(&p, &eo, &list), GT_OK);
  const gt_candidate_t *c = NULL;
  for (size_t j = 0; j < list.n && !c; j++)
    if (!list.v[j].excluded) c = &list.v[j];
  assert_non_null(c);
  void *st = NULL;
  size_t ws = 0;
  assert_int_equal(P->prepare(c, &p, &st, &ws), GT_OK);
  const size_t na = gt_problem_operand_elems(&p, 'A'), nb = gt_problem_operand_elems(&p, 'B'),
               nd = (size_t)(p.m * p.n);
  unsigned char *hA = malloc(na), *hB = malloc(nb);
  for (size_t i = 0; i < na; i++) hA[i] = (unsigned char)(0x30 + i % 7); /* small positive e4m3 */
  for (size_t i = 0; i < nb; i++) hB[i] = (unsigned char)(0x30 + i % 5);
  void *A, *B, *D, *W = NULL;
  float *S;
  assert_int_equal(cudaMalloc(&A, na), cudaSuccess);
  assert_int_equal(cudaMalloc(&B, nb), cudaSuccess);
  assert_int_equal(cudaMalloc(&D, nd * 2), cudaSuccess);
  /* scale_a at S[0], scale_b at S[4]: cuBLASLt refuses scale pointers that are not 16-byte
   * aligned (a pointer 4 bytes into the allocation is CUBLAS_STATUS_NOT_SUPPORTED) */
  assert_int_equal(cudaMalloc((void **)&S, 8 * sizeof(float)), cudaSuccess);
  if (ws) assert_int_equal(cudaMalloc(&W, ws), cudaSuccess);
  const float sc[8] = {0.5f, 0, 0, 0, 1.0f, 0, 0, 0}; /* scale_a, scale_b (first run) */
  const float sb2 = 3.0f;                                /* scale_b, second run */
  cudaMemcpy(A, hA, na, cudaMemcpyHostToDevice);
  cudaMemcpy(B, hB, nb, cudaMemcpyHostToDevice);
  cudaMemcpy(S, sc, sizeof sc, cudaMemcpyHostToDevice);
  float alpha = 1.0f, beta = 0.0f;
  /* C distinct from D, as torch's scaled_mm passes them when it has no bias; an in-place call
   * (C == D) is tried first and reported, since cuBLASLt 13.1 refuses some fp8 ones. */
  void *C = NULL;
  assert_int_equal(cudaMalloc(&C, nd * 2), cudaSuccess);
  gt_operands_t ops = {.A = A, .B = B, .C = D, .D = D, .alpha = &alpha, .beta = &beta,
                       .workspace = W, .ws_size = ws, .scale_a = S, .scale_b = S + 4};
  gt_status_t inplace = P->run(st, &ops, NULL);
  printf("# in-place (C == D) fp8 run: %s\n", inplace == GT_OK ? "ok" : gt_err_msg());
  ops.C = C;
  uint16_t d0 = 0, d1 = 0;
  gt_status_t r0 = P->run(st, &ops, NULL);
  if (r0 != GT_OK) fail_msg("fp8 run with C distinct from D: %s", gt_err_msg());
  cudaMemcpy(&d0, D, 2, cudaMemcpyDeviceToHost);
  /* same arrays, new value: what a graph replay after the application rewrote its scale sees */
  cudaMemcpy(S + 4, &sb2, sizeof(float), cudaMemcpyHostToDevice);
  assert_int_equal(P->run(st, &ops, NULL), GT_OK);
  cudaMemcpy(&d1, D, 2, cudaMemcpyDeviceToHost);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  const double v0 = gt_bf16_to_f32(d0), v1 = gt_bf16_to_f32(d1);
  printf("# D[0] with scale_b 1: %g, with scale_b 3: %g\n", v0, v1);
  assert_true(v0 > 0 && fabs(v1 / v0 - 3.0) < 0.02);
  P->release(st);
  cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(D), cudaFree(S), cudaFree(W);
  free(hA), free(hB);
  gt_cand_list_free(&list);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void test_exhaustive_decode_space(void **state) {
  (void)state;
  const lt_case_t decode = {"bf16 decode 1x4096x4096", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32,
                            LIN(1, 4096, 4096), 1, true, GT_EPI_NONE};
  gt_problem_t p;
  make_problem(&decode, &p);

  gt_enum_opts_t heur = {.max_candidates = 8};
  gt_cand_list_t top = {0};
  assert_int_equal(P->enumerate(&p, &heur, &top), GT_OK);
  assert_true(gt_cand_list_count_active(&top) > 0);

  gt_enum_opts_t eo = {.exhaustive = true};
  gt_cand_list_t all = {0};
  if (P->enumerate(&p, &eo, &all) != GT_OK) fail_msg("enumerate: %s", gt_err_msg());
  size_t active = gt_cand_list_count_active(&all);
  printf("# exhaustive %s: %zu listed, %zu active, %zu excluded\n", decode.what, all.n, active,
         all.n - active);
  assert_true(all.n >= 1000);
  assert_true(active >= 100);

  /* Excluded: a reason each. Active: unique names that parse as configurations. */
  const char **names = calloc(all.n, sizeof *names);
  assert_non_null(names);
  size_t nn = 0, splitk = 0;
  for (size_t i = 0; i < all.n; i++) {
    const gt_candidate_t *c = &all.v[i];
    assert_ptr_equal(c->provider, P);
    if (c->excluded) {
      if (!c->reason[0]) fail_msg("%s excluded without a reason", c->name);
      continue;
    }
    gt_cublaslt_config_t cfg;
    if (gt_cublaslt_name_parse(c->name, &cfg) != GT_OK) fail_msg("%s: %s", c->name, gt_err_msg());
    assert_int_equal(c->splitk, cfg.splitk > 1);
    splitk += c->splitk;
    names[nn++] = c->name;
  }
  qsort(names, nn, sizeof *names, cmp_str);
  for (size_t i = 1; i < nn; i++)
    if (strcmp(names[i - 1], names[i]) == 0) fail_msg("duplicate candidate %s", names[i]);
  printf("# %zu active split-K configurations\n", splitk);

  /* The heuristic's choices are part of the full space, under the same names. */
  for (size_t i = 0; i < top.n; i++) {
    if (top.v[i].excluded) continue;
    const char *key = top.v[i].name;
    if (!bsearch(&key, names, nn, sizeof *names, cmp_str))
      fail_msg("heuristic candidate %s missing from the exhaustive list", key);
  }
  free(names);

  /* Every active name rebuilds the same candidate. */
  size_t mismatched = 0;
  for (size_t i = 0; i < all.n; i++) {
    const gt_candidate_t *c = &all.v[i];
    if (c->excluded) continue;
    gt_candidate_t back;
    if (P->from_name(c->name, &p, &back) != GT_OK) fail_msg("%s: from_name: %s", c->name, gt_err_msg());
    assert_string_equal(back.name, c->name);
    assert_false(back.excluded);
    if (memcmp(back.blob, c->blob, sizeof back.blob) != 0) {
      if (mismatched++ < 5) {
        size_t at = 0;
        while (at < sizeof back.blob && back.blob[at] == c->blob[at]) at++;
        printf("#   %s: rebuilt blob differs from byte %zu (%02x vs %02x)\n", c->name, at,
               back.blob[at], c->blob[at]);
      }
    }
  }
  assert_int_equal(mismatched, 0);

  /* A spread of the space runs and computes the right answer. */
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  struct gt_bench *b = NULL;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  size_t step = active / 24 ? active / 24 : 1, seen = 0;
  /* Split-K configurations that reduce the partial sums in the output type (in-place r1, or
   * output-type r4) add bf16 rounding per split: such a config may legitimately fail the gate
   * (that is the gate doing its job). Every other config must pass. */
  int failed = 0, tried = 0, lossy_failed = 0;
  for (size_t i = 0; i < all.n; i++) {
    if (all.v[i].excluded) continue;
    if (seen++ % step) continue;
    tried++;
    const char *nm = all.v[i].name;
    bool lossy = !strstr(nm, "_sk1_") && (strstr(nm, "_r1_") || strstr(nm, "_r4_"));
    if (!gates(b, &all.v[i], "exhaustive")) {
      if (lossy) {
        lossy_failed++;
        printf("#   (split-K reducing in the output type: allowed to fail the gate)\n");
      } else {
        failed++;
      }
    }
  }
  printf("# gated %d exhaustive candidates, %d failed, %d more reduce split-K in bf16 and failed\n",
         tried, failed, lossy_failed);
  H->close(b);
  assert_int_equal(failed, 0);
  gt_cand_list_free(&top);
  gt_cand_list_free(&all);
}

static void test_from_name_rejects_foreign_and_inapplicable(void **state) {
  (void)state;
  gt_problem_t p;
  make_problem(&k_cases[0], &p);
  gt_candidate_t c;
  assert_int_equal(P->from_name("cublas_gemmex_default", &p, &c), GT_ERR_NOT_FOUND);
  assert_int_equal(P->from_name("cublaslt_a66_t3x3_s64x3_sk2_r1_sw0_co0_cl2x1", &p, &c), GT_ERR_DATA);
  /* An algorithm id no cuBLASLt has. */
  assert_int_equal(P->from_name("cublaslt_a99999_t64x8_s64x3_sk1_r0_sw0_co0_clauto", &p, &c),
                   GT_ERR_UNSUPPORTED);
}

/* The baseline of a cublasLtMatmul key is the application's own call: with entry ltmatmul (and
 * for a biased key that does not say) the provider lists cublaslt_heuristic_ws<limit>, marked as
 * the baseline, whose name rebuilds it through from_name; it passes the gate with the bias
 * epilogue; without an Lt entry no such candidate is listed; and the table names cuBLASLt as the
 * baseline of Lt calls and of biased default calls, cuBLAS of plain default ones. */
static void test_application_call_is_the_lt_baseline(void **state) {
  (void)state;
  gt_problem_t p;
  make_problem(&k_cases[7], &p); /* bias epilogue */
  const gt_entry_t entries[] = {GT_ENTRY_LTMATMUL, GT_ENTRY_DEFAULT};
  for (size_t e = 0; e < NELEM(entries); e++) {
    gt_enum_opts_t eo = {.max_candidates = 8, .entry = entries[e], .workspace = e ? 0 : 4 << 20};
    gt_cand_list_t list = {0};
    assert_int_equal(P->enumerate(&p, &eo, &list), GT_OK);
    const gt_candidate_t *base = NULL;
    for (size_t i = 0; i < list.n; i++)
      if (list.v[i].is_baseline && !list.v[i].excluded) base = &list.v[i];
    assert_non_null(base);
    assert_string_equal(base->name, e ? "cublaslt_heuristic_ws1048576" : "cublaslt_heuristic_ws4194304");
    gt_candidate_t again;
    assert_int_equal(P->from_name(base->name, &p, &again), GT_OK);
    assert_true(again.is_baseline);
    gt_measure_opts_t mo;
    gt_measure_opts_init(&mo);
    struct gt_bench *b = NULL;
    assert_int_equal(H->open(&p, &mo, &b), GT_OK);
    assert_true(gates(b, base, "baseline"));
    assert_true(gates(b, &again, "baseline by name"));
    H->close(b);
    gt_cand_list_free(&list);
  }
  gt_enum_opts_t plain = {.max_candidates = 8, .entry = GT_ENTRY_GEMMEX};
  gt_problem_t q;
  make_problem(&k_cases[0], &q);
  gt_cand_list_t list = {0};
  assert_int_equal(P->enumerate(&q, &plain, &list), GT_OK);
  for (size_t i = 0; i < list.n; i++) assert_false(list.v[i].is_baseline);
  gt_cand_list_free(&list);
  assert_ptr_equal(gt_provider_baseline(GT_BACKEND_CUDA, GT_ENTRY_LTMATMUL, &q, NULL, 0), P);
  assert_ptr_equal(gt_provider_baseline(GT_BACKEND_CUDA, GT_ENTRY_DEFAULT, &p, NULL, 0), P);
  const gt_provider_t *def = gt_provider_baseline(GT_BACKEND_CUDA, GT_ENTRY_DEFAULT, &q, NULL, 0);
  assert_non_null(def);
  assert_ptr_not_equal(def, P);
  gt_candidate_t c;
  assert_int_equal(P->from_name("cublaslt_heuristic_ws01", &p, &c), GT_ERR_DATA);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("no CUDA device: skipped\n");
    return GT_TEST_SKIP;
  }
  if (H->describe(0, &g_dev) != GT_OK || gt_provider_ready(P) != GT_OK) {
    printf("setup failed: %s\n", gt_err_msg());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lib_version),
      cmocka_unit_test(test_heuristic_candidates_pass_gate),
      cmocka_unit_test(test_exhaustive_decode_space),
      cmocka_unit_test(test_from_name_rejects_foreign_and_inapplicable),
      cmocka_unit_test(test_application_call_is_the_lt_baseline),
      cmocka_unit_test(test_fp8_candidates_pass_gate),
      cmocka_unit_test(test_fp8_scales_read_at_run_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
