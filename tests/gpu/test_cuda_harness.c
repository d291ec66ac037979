/* The CUDA harness, end to end on a GPU: the cuBLAS baseline passes the gate on nn.Linear and odd
 * shapes (every type path, transposes, padding, strided batch, beta != 0, exact integer inputs);
 * the planted wrong candidate is rejected; timing returns positive numbers no faster than the
 * memory roofline, from CUDA-graph replays, fenced or not; a planted fault is reported as a device fault and
 * marks the context unusable (in a child process forked before any CUDA call, so this process's
 * context stays clean). Skipped (77) without a GPU. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "gt_testutil.h"
#include "harness/cuda/gt_cuda_harness.h"
#include "harness/gt_harness.h"
#include "platform/gt_cudalib.h"
#include "providers/gt_provider.h"

extern const gt_provider_t gt_provider_cublas;
extern const gt_provider_t gt_provider_testonly_cuda;

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const gt_harness_ops_t *H = &gt_harness_cuda;
static gt_device_info_t g_dev;
static int g_fault_child_status = -1;

static bool gpu_present(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/* ---- problems ------------------------------------------------------------------------------------ */

typedef struct shape_case {
  const char *what;
  gt_dtype_t ab, cd;     /* A/B type, C/D type */
  gt_compute_t compute;
  gt_dtype_t scale;
  gt_trans_t ta, tb;
  int64_t m, n, k;
  int64_t pad;           /* added to every leading dimension */
  int64_t batch;
  bool beta_zero;
  gt_init_mode_t init;
} shape_case_t;

#define LIN(tokens, out, in) GT_TRANS_T, GT_TRANS_N, (out), (tokens), (in)

static const shape_case_t k_cublas_cases[] = {
    {"bf16 nn.Linear 16x4096x4096", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_DT_F32, LIN(16, 4096, 4096), 0, 1, true, GT_INIT_RANDOM},
    {"bf16 nn.Linear 1x4096x4096 (decode)", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_DT_F32, LIN(1, 4096, 4096), 0, 1, true, GT_INIT_RANDOM},
    {"bf16 nn.Linear odd 7x1000x333", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_DT_F32, LIN(7, 1000, 333), 0, 1, true, GT_INIT_RANDOM},
    {"f16 nn.Linear odd 33x257x129", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F32, GT_DT_F32, LIN(33, 257, 129), 0, 1, true, GT_INIT_RANDOM},
    {"f32 NN 100x200x300", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, GT_DT_F32, GT_TRANS_N, GT_TRANS_N, 100, 200, 300, 0, 1, true, GT_INIT_RANDOM},
    {"tf32 TT 128x96x512", GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32, GT_DT_F32, GT_TRANS_T, GT_TRANS_T, 128, 96, 512, 0, 1, true, GT_INIT_RANDOM},
    {"bf16 NT padded lds 65x47x81", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_DT_F32, GT_TRANS_N, GT_TRANS_T, 65, 47, 81, 3, 1, true, GT_INIT_RANDOM},
    {"bf16 TN strided batch 3 of 64x48x80", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_DT_F32, GT_TRANS_T, GT_TRANS_N, 64, 48, 80, 0, 3, true, GT_INIT_RANDOM},
    {"bf16 beta != 0 (in place) 64x64x64", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_DT_F32, GT_TRANS_N, GT_TRANS_N, 64, 64, 64, 0, 1, false, GT_INIT_RANDOM},
    {"bf16 in, f32 out, beta != 0, 96x80x200", GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32, GT_DT_F32, GT_TRANS_T, GT_TRANS_N, 96, 80, 200, 0, 1, false, GT_INIT_RANDOM},
    {"f16 compute f16 40x40x40", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F16, GT_DT_F16, GT_TRANS_N, GT_TRANS_N, 40, 40, 40, 0, 1, true, GT_INIT_RANDOM},
    {"bf16 exact integer inputs 16x32x16", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_DT_F32, LIN(16, 32, 16), 0, 1, true, GT_INIT_INT},
};

static void make_problem(const shape_case_t *c, gt_problem_t *p) {
  gt_problem_init(p);
  p->a_type = p->b_type = c->ab;
  p->c_type = p->d_type = c->cd;
  p->compute = c->compute;
  p->scale_type = c->scale;
  p->transa = c->ta, p->transb = c->tb;
  p->m = c->m, p->n = c->n, p->k = c->k;
  p->lda = (c->ta == GT_TRANS_N ? c->m : c->k) + c->pad;
  p->ldb = (c->tb == GT_TRANS_N ? c->k : c->n) + c->pad;
  p->ldc = c->m + c->pad;
  p->batch = c->batch;
  if (c->batch > 1) {
    p->stride_a = p->lda * (c->ta == GT_TRANS_N ? c->k : c->m);
    p->stride_b = p->ldb * (c->tb == GT_TRANS_N ? c->n : c->k);
    p->stride_c = p->ldc * c->n;
  }
  p->beta_zero = c->beta_zero;
  snprintf(p->arch, sizeof p->arch, "%s", g_dev.arch);
  p->sm_count = g_dev.sm_count;
}

static gt_measure_opts_t opts_for(gt_init_mode_t init) {
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  o.init = init;
  return o;
}

static void candidate(const gt_provider_t *pr, const char *name, const gt_problem_t *p,
                      gt_candidate_t *c) {
  gt_status_t s = gt_provider_ready(pr);
  if (s != GT_OK) fail_msg("provider %s not ready: %s", pr->name, gt_err_msg());
  s = pr->from_name(name, p, c);
  if (s != GT_OK) fail_msg("%s: from_name: %s", name, gt_err_msg());
}

/* ---- tests ----------------------------------------------------------------------------------------- */

static void test_describe_reports_the_device(void **state) {
  (void)state;
  assert_int_equal(H->describe(0, &g_dev), GT_OK);
  assert_true(g_dev.name[0] != '\0');
  assert_memory_equal(g_dev.arch, "sm_", 3);
  assert_true(g_dev.sm_count > 0);
  assert_true(g_dev.cache_bytes > 0);
  assert_true(g_dev.peak_tflops > 0);
  assert_true(g_dev.peak_gbps > 0);
  printf("# %s %s, %d SMs, L2 %zu MB, %.0f TFLOP/s, %.0f GB/s, %d other processes\n", g_dev.name,
         g_dev.arch, g_dev.sm_count, g_dev.cache_bytes >> 20, g_dev.peak_tflops, g_dev.peak_gbps,
         g_dev.busy_processes);
}

static void test_cublas_baseline_passes_gate(void **state) {
  (void)state;
  int failed = 0;
  for (size_t i = 0; i < NELEM(k_cublas_cases); i++) {
    const shape_case_t *sc = &k_cublas_cases[i];
    gt_problem_t p;
    make_problem(sc, &p);
    gt_measure_opts_t o = opts_for(sc->init);
    struct gt_bench *b = NULL;
    if (H->open(&p, &o, &b) != GT_OK) fail_msg("%s: open: %s", sc->what, gt_err_msg());
    gt_candidate_t c;
    candidate(&gt_provider_cublas, "cublas_gemmex_default", &p, &c);
    assert_true(c.is_baseline);
    struct gt_loaded *l = NULL;
    gt_status_t s = H->load(b, &c, &l);
    if (s != GT_OK) fail_msg("%s: load: %s", sc->what, gt_err_msg());
    gt_gate_t g;
    s = H->gate(b, l, &g);
    printf("# %-42s error %.3g (bound %.3g) mismatch %.3g unwritten %lld %s\n", sc->what, g.error,
           g.bound, g.mismatch_frac, (long long)g.unwritten, g.passed ? "pass" : g.why);
    if (s != GT_OK || !g.passed || g.checked != p.m * p.n * p.batch) {
      printf("#   FAILED (seed %llu): %s\n", (unsigned long long)o.seed, gt_err_msg());
      failed++;
    }
    if (sc->init == GT_INIT_INT && g.error != 0.0) {
      printf("#   FAILED: integer inputs with small K must be exact\n");
      failed++;
    }
    H->unload(l);
    H->close(b);
  }
  assert_int_equal(failed, 0);
}

static void test_planted_wrong_candidate_rejected(void **state) {
  (void)state;
  const shape_case_t *sc = &k_cublas_cases[0];
  gt_problem_t p;
  make_problem(sc, &p);
  gt_measure_opts_t o = opts_for(GT_INIT_RANDOM);
  struct gt_bench *b = NULL;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_candidate_t c;
  candidate(&gt_provider_testonly_cuda, "testonly_cuda_wrong", &p, &c);
  struct gt_loaded *l = NULL;
  assert_int_equal(H->load(b, &c, &l), GT_OK);
  gt_gate_t g;
  gt_status_t s = H->gate(b, l, &g);
  printf("# testonly_cuda_wrong: error %.3g (bound %.3g): %s\n", g.error, g.bound, g.why);
  assert_int_equal(s, GT_ERR_GATE);
  assert_false(g.passed);
  assert_true(g.error > g.bound);
  /* It is fast, which is the point: a harness that timed before gating would crown it. */
  double us = 0;
  assert_int_equal(H->time(b, l, 0, &us), GT_OK);
  printf("# testonly_cuda_wrong: %.2f us per launch\n", us);
  H->unload(l);
  H->close(b);
}

/* A set larger than the L2 factor still rotates with a second one: with a single set every launch
 * would re-read the weight the launch before it streamed (1x28672x4096, 235 MB of weights). */
static void test_large_set_rotates_two(void **state) {
  (void)state;
  const shape_case_t big = {"bf16 nn.Linear 1x28672x4096", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32,
                            GT_DT_F32, LIN(1, 28672, 4096), 0, 1, true, GT_INIT_RANDOM};
  gt_problem_t p;
  make_problem(&big, &p);
  gt_measure_opts_t o = opts_for(GT_INIT_RANDOM);
  struct gt_bench *b = NULL;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  int nsets = 0;
  size_t total = 0;
  gt_harness_cuda_rotation(b, &nsets, &total);
  printf("# 1x28672x4096: %d sets, %zu MB (L2 %zu MB)\n", nsets, total >> 20,
         g_dev.cache_bytes >> 20);
  assert_true(nsets >= 2);
  H->close(b);
  /* --warm keeps one set: the caller asked for operands in cache. */
  o.warm = true;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_harness_cuda_rotation(b, &nsets, &total);
  assert_int_equal(nsets, 1);
  H->close(b);
}

static void test_timing_plausible(void **state) {
  (void)state;
  const shape_case_t *sc = &k_cublas_cases[0];
  gt_problem_t p;
  make_problem(sc, &p);
  gt_measure_opts_t o = opts_for(GT_INIT_RANDOM);
  struct gt_bench *b = NULL;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  int nsets = 0;
  size_t total = 0;
  gt_harness_cuda_rotation(b, &nsets, &total);
  /* Cold: the rotation covers at least 3x L2 (or it is capped at the set limit), and never
   * fewer than two sets (no launch re-reads what the launch before it streamed). */
  assert_true(total >= 3 * g_dev.cache_bytes || nsets == 128);
  assert_true(nsets >= 2);
  gt_candidate_t c;
  candidate(&gt_provider_cublas, "cublas_gemmex_default", &p, &c);
  struct gt_loaded *l = NULL;
  assert_int_equal(H->load(b, &c, &l), GT_OK);
  double us[5];
  for (int i = 0; i < 5; i++) {
    gt_status_t s = H->time(b, l, 0, &us[i]);
    if (s != GT_OK) fail_msg("time: %s", gt_err_msg());
  }
  int launches = H->launches(b);
  const char *method = gt_harness_cuda_timing_method(l);
  /* Nothing moves the 32 MB of weights faster than the memory system. */
  double floor_us = gt_problem_min_bytes(&p) / (g_dev.peak_gbps * 1e3);
  printf("# cublas 16x4096x4096: %.2f %.2f %.2f %.2f %.2f us (%d launches, %s, %d sets, %zu MB, "
         "floor %.2f us)\n", us[0], us[1], us[2], us[3], us[4], launches, method, nsets,
         total >> 20, floor_us);
  assert_true(launches >= 1 && launches <= 1000 + nsets);
  assert_string_equal(method, "graph");
  assert_string_equal(H->timing(b, l), "graph");
  for (int i = 0; i < 5; i++) {
    assert_true(isfinite(us[i]));
    assert_true(us[i] >= 0.9 * floor_us);
    assert_true(us[i] < 5000.0);
  }
  /* An explicit launch count rebuilds the graph and still gives a sane number. */
  double one = 0;
  assert_int_equal(H->time(b, l, 1, &one), GT_OK);
  assert_true(one >= 0.9 * floor_us && one < 5000.0);
  gt_telemetry_t t;
  assert_int_equal(H->telemetry(b, &t), GT_OK);
  if (t.valid) {
    printf("# telemetry: SM %d MHz, %d C, %.0f W, reasons 0x%llx%s\n", t.sm_clock_mhz, t.temp_c,
           t.power_w, t.event_reasons, t.throttled ? " (throttled)" : "");
    assert_true(t.sm_clock_mhz > 0);
  } else {
    printf("# telemetry: NVML unavailable\n");
  }
  H->unload(l);
  H->close(b);
}

/* Fenced timing: the method says so, and the time left after subtracting the separator is still
 * no faster than the memory floor (a subtraction that overshoots would show here). */
static void test_fenced_timing(void **state) {
  (void)state;
  const shape_case_t *sc = &k_cublas_cases[1]; /* 1x4096x4096: the launch gap matters most */
  gt_problem_t p;
  make_problem(sc, &p);
  gt_measure_opts_t o = opts_for(GT_INIT_RANDOM);
  o.fenced = true;
  struct gt_bench *b = NULL;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_candidate_t c;
  candidate(&gt_provider_cublas, "cublas_gemmex_default", &p, &c);
  struct gt_loaded *l = NULL;
  assert_int_equal(H->load(b, &c, &l), GT_OK);
  double us[3];
  for (int i = 0; i < 3; i++) {
    gt_status_t s = H->time(b, l, 0, &us[i]);
    if (s != GT_OK) fail_msg("time: %s", gt_err_msg());
  }
  assert_string_equal(H->timing(b, l), "graph-fenced");
  double floor_us = gt_problem_min_bytes(&p) / (g_dev.peak_gbps * 1e3);
  printf("# fenced cublas 1x4096x4096: %.2f %.2f %.2f us (floor %.2f us)\n", us[0], us[1], us[2],
         floor_us);
  for (int i = 0; i < 3; i++) {
    assert_true(isfinite(us[i]));
    assert_true(us[i] >= 0.9 * floor_us);
    assert_true(us[i] < 5000.0);
  }
  H->unload(l);
  H->close(b);
}

static void test_planted_fault_reported(void **state) {
  (void)state;
  if (g_fault_child_status != 0)
    fail_msg("fault child exited with %d (see its lines above)", g_fault_child_status);
}

/* Runs in a child forked before any CUDA call: the fault kills the child's CUDA context. */
static int fault_child(void) {
  if (!gpu_present()) return GT_TEST_SKIP;
  gt_device_info_t dev;
  if (H->describe(0, &dev) != GT_OK) return 2;
  g_dev = dev;
  gt_problem_t p;
  make_problem(&k_cublas_cases[2], &p);
  gt_measure_opts_t o = opts_for(GT_INIT_RANDOM);
  o.timeout_s = 20;
  struct gt_bench *b = NULL;
  if (H->open(&p, &o, &b) != GT_OK) {
    printf("# fault child: open: %s\n", gt_err_msg());
    return 3;
  }
  gt_candidate_t c;
  if (gt_provider_ready(&gt_provider_testonly_cuda) != GT_OK ||
      gt_provider_testonly_cuda.from_name("testonly_cuda_fault", &p, &c) != GT_OK) {
    printf("# fault child: %s\n", gt_err_msg());
    return 4;
  }
  struct gt_loaded *l = NULL;
  gt_status_t s = H->load(b, &c, &l);
  printf("# fault child: load -> %s: %s\n", gt_status_name(s), gt_err_msg());
  int bad = 0;
  if (s != GT_ERR_DEVICE) bad |= 8;
  if (strncmp(gt_err_msg(), "device fault:", 13) != 0) bad |= 16;
  if (!gt_cuda_context_broken()) bad |= 32;
  if (H->available(0) == GT_OK) bad |= 64; /* a broken context must not look usable */
  struct gt_bench *b2 = NULL;
  if (H->open(&p, &o, &b2) == GT_OK) bad |= 128;
  H->close(b);
  return bad;
}

int main(void) {
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int rc = fault_child();
    fflush(stdout);
    _exit(rc);
  }
  if (pid > 0) {
    int st = 0;
    if (waitpid(pid, &st, 0) == pid)
      g_fault_child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  if (!gpu_present()) {
    printf("no CUDA device: skipped\n");
    return GT_TEST_SKIP;
  }
  if (H->describe(0, &g_dev) != GT_OK) {
    printf("describe failed: %s\n", gt_err_msg());
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_describe_reports_the_device),
      cmocka_unit_test(test_cublas_baseline_passes_gate),
      cmocka_unit_test(test_planted_wrong_candidate_rejected),
      cmocka_unit_test(test_timing_plausible),
      cmocka_unit_test(test_large_set_rotates_two),
      cmocka_unit_test(test_fenced_timing),
      cmocka_unit_test(test_planted_fault_reported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
