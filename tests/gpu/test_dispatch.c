/* libgemmtune's dispatch API on a GPU: a miss runs cuBLAS's default and says why (nearest row,
 * differing fields), a hit runs the row's candidate, both compute the right answer, bad DB paths
 * are reported without losing the good ones, and graph capture works, for keys seen before (also
 * on a stream first used under capture) and for keys whose first call is made during the capture
 * (the default path, and a row's candidate, which the graph then runs).
 * Exits 77 without a GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_db.h"
#include "gemmtune/gemmtune.h"
#include "gt_testutil.h"
#include "providers/gt_provider.h"

enum { TOKENS = 16, OUT = 256, IN = 512 };

typedef struct fixture {
  gt_ctx_t *ctx;
  void *A, *B, *D;     /* W[OUT,IN], x[TOKENS,IN], y[TOKENS,OUT] (row-major = BLAS TN) */
  float ref[TOKENS * OUT];
  const char *dir;
} fixture_t;

static fixture_t F;

static int setup(void **st) {
  (void)st;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    printf("no CUDA device: skipped\n");
    exit(GT_TEST_SKIP);
  }
  if (gt_ctx_create(0, &F.ctx) != GT_OK) fail_msg("gt_ctx_create: %s", gt_err_msg());
  uint16_t *w = malloc(sizeof *w * OUT * IN), *x = malloc(sizeof *x * TOKENS * IN);
  assert_non_null(w);
  assert_non_null(x);
  /* small integers: every product and sum is exact in fp32 */
  for (int i = 0; i < OUT * IN; i++) w[i] = gt_f32_to_bf16((float)((i * 7 + 3) % 7 - 3));
  for (int i = 0; i < TOKENS * IN; i++) x[i] = gt_f32_to_bf16((float)((i * 5 + 1) % 5 - 2));
  for (int t = 0; t < TOKENS; t++)
    for (int o = 0; o < OUT; o++) {
      double s = 0;
      for (int k = 0; k < IN; k++)
        s += (double)gt_bf16_to_f32(w[o * IN + k]) * gt_bf16_to_f32(x[t * IN + k]);
      F.ref[t * OUT + o] = (float)s;
    }
  assert_int_equal(cudaMalloc(&F.A, sizeof *w * OUT * IN), cudaSuccess);
  assert_int_equal(cudaMalloc(&F.B, sizeof *x * TOKENS * IN), cudaSuccess);
  assert_int_equal(cudaMalloc(&F.D, sizeof(uint16_t) * TOKENS * OUT), cudaSuccess);
  assert_int_equal(cudaMemcpy(F.A, w, sizeof *w * OUT * IN, cudaMemcpyHostToDevice), cudaSuccess);
  assert_int_equal(cudaMemcpy(F.B, x, sizeof *x * TOKENS * IN, cudaMemcpyHostToDevice),
                   cudaSuccess);
  /* A cudaMemcpy from pageable memory may return before its DMA lands, and a
   * cudaMemset is asynchronous; both go to the legacy stream, which a non-blocking stream does not
   * wait for. Every fill is followed by a device synchronize before a test stream reads it. */
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  free(w);
  free(x);
  F.dir = gt_test_tmpdir();
  return 0;
}

/* D filled with 0xff (NaN in bf16), so an element the run never writes cannot pass; the memset
 * goes to the legacy stream, hence the synchronize (see setup). */
static void poison_d(void) {
  assert_int_equal(cudaMemset(F.D, 0xff, sizeof(uint16_t) * TOKENS * OUT), cudaSuccess);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
}

static int teardown(void **st) {
  (void)st;
  cudaFree(F.A);
  cudaFree(F.B);
  cudaFree(F.D);
  gt_ctx_destroy(F.ctx);
  return 0;
}

static gt_problem_t linear_problem(int64_t tokens) {
  gt_problem_t p;
  gt_ctx_problem_init(F.ctx, &p);
  gt_problem_set_linear(&p, tokens, OUT, IN);
  return p;
}

/* Run y = x W^T through gt_gemm on stream and compare with the fp64 reference. */
static void run_and_check(const char *what, cudaStream_t stream) {
  float one = 1.0f, zero = 0.0f;
  gt_problem_t p = linear_problem(TOKENS);
  gt_gemm_args_t a = {.A = F.A, .B = F.B, .D = F.D, .alpha = &one, .beta = &zero};
  poison_d();
  gt_err_clear();
  if (gt_gemm(F.ctx, &p, &a, stream) != GT_OK) fail_msg("%s: gt_gemm: %s", what, gt_err_msg());
  assert_int_equal(cudaStreamSynchronize(stream), cudaSuccess);
  uint16_t y[TOKENS * OUT];
  assert_int_equal(cudaMemcpy(y, F.D, sizeof y, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < TOKENS * OUT; i++) {
    float got = gt_bf16_to_f32(y[i]);
    if (!(fabsf(got - F.ref[i]) <= fabsf(F.ref[i]) / 128.0f + 1e-3f))
      fail_msg("%s: y[%d] = %g, reference %g", what, i, got, F.ref[i]);
  }
}

/* A DB with one row for key, naming the first active candidate of the cublaslt provider. */
static void write_db(const char *path, const gt_problem_t *key, char *instance, size_t cap) {
  const gt_provider_t *prov = gt_provider_find("cublaslt");
  assert_non_null(prov);
  if (gt_provider_ready(prov) != GT_OK) fail_msg("cublaslt provider: %s", gt_err_msg());
  gt_cand_list_t list = {0};
  gt_enum_opts_t o = {.max_candidates = 4, .device = 0};
  assert_int_equal(prov->enumerate(key, &o, &list), GT_OK);
  const gt_candidate_t *c = NULL;
  for (size_t i = 0; i < list.n && !c; i++)
    if (!list.v[i].excluded && !list.v[i].is_baseline) c = &list.v[i];
  if (!c) fail_msg("cublaslt has no candidate for the test key");
  gt_db_row_t r;
  memset(&r, 0, sizeof r);
  r.key = *key;
  snprintf(r.provider, sizeof r.provider, "cublaslt");
  const char *lib = prov->lib_version ? prov->lib_version() : NULL;
  snprintf(r.lib, sizeof r.lib, "%s", lib && *lib ? lib : "-");
  snprintf(r.instance, sizeof r.instance, "%s", c->name);
  snprintf(instance, cap, "%s", c->name);
  r.time_us = 1.0;
  r.baseline_us = 2.0;
  r.speedup = 2.0;
  r.error_bound = 1.0;
  snprintf(r.timing, sizeof r.timing, "fixture");
  r.rounds = 1;
  snprintf(r.baseline, sizeof r.baseline, "fixture");
  gt_cand_list_free(&list);
  gt_db_t db;
  gt_db_init(&db);
  assert_int_equal(gt_db_put(&db, &r), GT_OK);
  if (gt_db_write(&db, path) != GT_OK) fail_msg("write %s: %s", path, gt_err_msg());
  gt_db_free(&db);
}

static void test_bad_device_is_an_error(void **st) {
  (void)st;
  gt_ctx_t *ctx = NULL;
  assert_int_equal(gt_ctx_create(4096, &ctx), GT_ERR_DEVICE);
  assert_null(ctx);
}

static void test_no_decision_before_first_call(void **st) {
  (void)st;
  gt_decision_t d;
  assert_int_equal(gt_last_decision(F.ctx, &d), GT_ERR_NOT_FOUND);
}

static void test_miss_without_db_runs_cublas(void **st) {
  (void)st;
  run_and_check("miss, no DB", NULL);
  gt_decision_t d;
  assert_int_equal(gt_last_decision(F.ctx, &d), GT_OK);
  assert_false(d.hit);
  assert_string_equal(d.provider, "cublas");
  if (!strstr(d.reason, "no tuned rows")) fail_msg("miss reason: %s", d.reason);
}

/* A row for a different token count: the miss names the differing field. */
static void test_miss_names_the_differing_field(void **st) {
  (void)st;
  gt_problem_t other = linear_problem(32);
  char inst[GT_NAME_MAX];
  const char *path = gt_test_path(F.dir, "other.csv");
  write_db(path, &other, inst, sizeof inst);
  assert_int_equal(gt_ctx_load_db(F.ctx, path), GT_OK);
  run_and_check("miss, nearest row differs", NULL);
  gt_decision_t d;
  assert_int_equal(gt_last_decision(F.ctx, &d), GT_OK);
  assert_false(d.hit);
  if (!strstr(d.reason, "n: 16 vs 32")) fail_msg("miss reason: %s", d.reason);
}

/* A row for this key (listed after a missing file): the load reports the missing file, keeps the
 * row, and the call runs the row's candidate. */
static void test_hit_runs_the_rows_candidate(void **st) {
  (void)st;
  gt_problem_t key = linear_problem(TOKENS);
  key.beta_zero = true;
  char inst[GT_NAME_MAX];
  const char *path = gt_test_path(F.dir, "hit.csv");
  write_db(path, &key, inst, sizeof inst);
  char list[2200];
  snprintf(list, sizeof list, "%s:%s", gt_test_path(F.dir, "missing.csv"), path);
  assert_int_equal(gt_ctx_load_db(F.ctx, list), GT_ERR_NOT_FOUND);
  assert_non_null(strstr(gt_err_msg(), "missing.csv"));
  run_and_check("hit", NULL);
  gt_decision_t d;
  assert_int_equal(gt_last_decision(F.ctx, &d), GT_OK);
  if (!d.hit) fail_msg("expected a hit, got: %s %s: %s", d.provider, d.instance, d.reason);
  assert_string_equal(d.provider, "cublaslt");
  assert_string_equal(d.instance, inst);
}

/* gt_gemm may be captured into a graph, a key seen before as well as a new one: the new key's
 * default path is prepared during the capture (this thread has its cuBLAS handle: no allocation,
 * nothing enqueued but the GEMM) and the replay computes both. */
static void test_graph_capture(void **st) {
  (void)st;
  cudaStream_t s;
  assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
  run_and_check("eager, before capture", s);

  float one = 1.0f, zero = 0.0f;
  gt_problem_t p = linear_problem(TOKENS);
  gt_gemm_args_t a = {.A = F.A, .B = F.B, .D = F.D, .alpha = &one, .beta = &zero};
  poison_d();
  cudaGraph_t g;
  cudaGraphExec_t ge;
  assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  gt_status_t seen = gt_gemm(F.ctx, &p, &a, s);
  gt_problem_t fresh = linear_problem(8);
  gt_status_t unseen = gt_gemm(F.ctx, &fresh, &a, s);
  assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
  assert_int_equal(seen, GT_OK);
  if (unseen != GT_OK) fail_msg("a new key under capture: %s", gt_err_msg());
  assert_int_equal(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
  assert_int_equal(cudaGraphLaunch(ge, s), cudaSuccess);
  assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
  uint16_t y[TOKENS * OUT];
  assert_int_equal(cudaMemcpy(y, F.D, sizeof y, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < TOKENS * OUT; i++)
    if (!(fabsf(gt_bf16_to_f32(y[i]) - F.ref[i]) <= fabsf(F.ref[i]) / 128.0f + 1e-3f))
      fail_msg("graph replay: y[%d] = %g, reference %g", i, gt_bf16_to_f32(y[i]), F.ref[i]);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

/* The pattern of torch.cuda.graph: a key decided eagerly on one stream, then captured on a
 * stream that has never been used. Whatever the key needs on that stream (a workspace) is set up
 * during the capture without invalidating it, and the replay computes the right answer. */
static void test_graph_capture_on_a_new_stream(void **st) {
  (void)st;
  run_and_check("eager, on the legacy stream", NULL);
  cudaStream_t s;
  assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  float one = 1.0f, zero = 0.0f;
  gt_problem_t p = linear_problem(TOKENS);
  gt_gemm_args_t a = {.A = F.A, .B = F.B, .D = F.D, .alpha = &one, .beta = &zero};
  poison_d();
  cudaGraph_t g;
  cudaGraphExec_t ge;
  assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  gt_err_clear();
  gt_status_t r = gt_gemm(F.ctx, &p, &a, s);
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  assert_int_equal(cudaStreamIsCapturing(s, &cs), cudaSuccess);
  assert_int_equal(cs, cudaStreamCaptureStatusActive);
  assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
  if (r != GT_OK) fail_msg("gt_gemm under capture on a new stream: %s", gt_err_msg());
  assert_int_equal(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
  assert_int_equal(cudaGraphLaunch(ge, s), cudaSuccess);
  assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
  uint16_t y[TOKENS * OUT];
  assert_int_equal(cudaMemcpy(y, F.D, sizeof y, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < TOKENS * OUT; i++)
    if (!(fabsf(gt_bf16_to_f32(y[i]) - F.ref[i]) <= fabsf(F.ref[i]) / 128.0f + 1e-3f))
      fail_msg("graph replay: y[%d] = %g, reference %g", i, gt_bf16_to_f32(y[i]), F.ref[i]);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

/* A key whose first call is made during a capture, with a DB row: the row's candidate is
 * prepared during the capture (cuBLASLt: host work, this thread has its handle), the capture stays
 * valid, the decision is a hit, and the replay computes the right answer. */
static void test_first_call_under_capture_hits(void **st) {
  (void)st;
  enum { T = 4 };
  gt_problem_t key = linear_problem(T);
  key.beta_zero = true;
  char inst[GT_NAME_MAX];
  const char *path = gt_test_path(F.dir, "capture_first.csv");
  write_db(path, &key, inst, sizeof inst);
  assert_int_equal(gt_ctx_load_db(F.ctx, path), GT_OK);
  cudaStream_t s;
  assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  float one = 1.0f, zero = 0.0f;
  gt_problem_t p = linear_problem(T);
  gt_gemm_args_t a = {.A = F.A, .B = F.B, .D = F.D, .alpha = &one, .beta = &zero};
  poison_d();
  cudaGraph_t g;
  cudaGraphExec_t ge;
  assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  gt_err_clear();
  gt_status_t r = gt_gemm(F.ctx, &p, &a, s);
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  assert_int_equal(cudaStreamIsCapturing(s, &cs), cudaSuccess);
  assert_int_equal(cs, cudaStreamCaptureStatusActive);
  assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
  if (r != GT_OK) fail_msg("first gt_gemm of a key under capture: %s", gt_err_msg());
  gt_decision_t d;
  assert_int_equal(gt_last_decision(F.ctx, &d), GT_OK);
  if (!d.hit) fail_msg("expected a hit in the graph, got: %s %s: %s", d.provider, d.instance,
                       d.reason);
  assert_string_equal(d.instance, inst);
  assert_int_equal(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
  assert_int_equal(cudaGraphLaunch(ge, s), cudaSuccess);
  assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
  uint16_t y[TOKENS * OUT];
  assert_int_equal(cudaMemcpy(y, F.D, sizeof y, cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < T * OUT; i++)
    if (!(fabsf(gt_bf16_to_f32(y[i]) - F.ref[i]) <= fabsf(F.ref[i]) / 128.0f + 1e-3f))
      fail_msg("graph replay: y[%d] = %g, reference %g", i, gt_bf16_to_f32(y[i]), F.ref[i]);
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_device_is_an_error),
      cmocka_unit_test(test_no_decision_before_first_call),
      cmocka_unit_test(test_miss_without_db_runs_cublas),
      cmocka_unit_test(test_miss_names_the_differing_field),
      cmocka_unit_test(test_hit_runs_the_rows_candidate),
      cmocka_unit_test(test_graph_capture),
      cmocka_unit_test(test_graph_capture_on_a_new_stream),
      cmocka_unit_test(test_first_call_under_capture_hits),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
