/* The host harness gates before it believes a time: with the planted test candidates enabled, the
 * gate rejects testonly_wrong (a fast, wrong GEMM) and testonly_stale (loaded, warmed, then gated
 * on fresh inputs) and passes cpu_naive; testonly_wrong also times faster than cpu_naive on
 * 64x512x512, so it was the gate, not speed, that rejected it. A faulting candidate fails to load
 * with its message. Also: defaults, device description, auto launch sizing, cold rotation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/gt_harness.h"
#include "providers/gt_provider.h"

static const gt_harness_ops_t *H;

static gt_problem_t problem_64x512x512(gt_dtype_t dt) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = dt;
  p.m = 64, p.n = 512, p.k = 512;
  gt_problem_fill_lds(&p);
  return p;
}

static gt_measure_opts_t warm_opts(void) {
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  o.warm = true; /* one input set: these tests are about the gate, not cache effects */
  o.seed = 42;
  return o;
}

static gt_candidate_t candidate(const char *provider, const char *name, const gt_problem_t *p) {
  gt_candidate_t c;
  gt_status_t s = gt_provider_candidate_from_name(provider, name, p, &c);
  if (s != GT_OK) print_error("%s: %s\n", name, gt_err_msg());
  assert_int_equal(s, GT_OK);
  return c;
}

/* ---- gate verdicts --------------------------------------------------------------------------- */

typedef struct gate_case {
  const char *name;
  const char *provider, *instance;
  gt_dtype_t dt;
  gt_init_mode_t init;
  int warm_launches; /* timed launches between load and gate */
  gt_status_t expect;
  const char *why; /* substring of the verdict when rejected */
} gate_case_t;

static const gate_case_t k_gates[] = {
    {"gate_passes_cpu_naive_f32", "cpu", "cpu_naive_f32", GT_DT_F32, GT_INIT_RANDOM, 0, GT_OK, ""},
    {"gate_passes_cpu_naive_bf16_int_inputs", "cpu", "cpu_naive_bf16", GT_DT_BF16, GT_INIT_INT, 0, GT_OK, ""},
    {"gate_passes_cpu_blk_after_warmup", "cpu", "cpu_blk_f16_t64x64x256_r8x4", GT_DT_F16, GT_INIT_RANDOM, 3, GT_OK, ""},
    {"gate_rejects_testonly_wrong", "testonly", "testonly_wrong", GT_DT_F32, GT_INIT_RANDOM, 0, GT_ERR_GATE, "normwise error"},
    {"gate_rejects_testonly_wrong_bf16", "testonly", "testonly_wrong", GT_DT_BF16, GT_INIT_RANDOM, 0, GT_ERR_GATE, "normwise error"},
    {"gate_rejects_testonly_stale_after_warmup", "testonly", "testonly_stale", GT_DT_F32, GT_INIT_RANDOM, 3, GT_ERR_GATE, "normwise error"},
    {"gate_rejects_testonly_stale_int_inputs", "testonly", "testonly_stale", GT_DT_BF16, GT_INIT_INT, 1, GT_ERR_GATE, ""},
};

static void test_gate(void **state) {
  const gate_case_t *c = *state;
  gt_problem_t p = problem_64x512x512(c->dt);
  gt_measure_opts_t o = warm_opts();
  o.init = c->init;
  struct gt_bench *b;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_candidate_t cand = candidate(c->provider, c->instance, &p);
  struct gt_loaded *l;
  assert_int_equal(H->load(b, &cand, &l), GT_OK);
  if (c->warm_launches) {
    double us;
    assert_int_equal(H->time(b, l, c->warm_launches, &us), GT_OK);
    assert_true(us > 0);
  }
  gt_gate_t g;
  gt_status_t s = H->gate(b, l, &g);
  if (s != c->expect) print_error("%s: %s (%s)\n", c->instance, gt_status_name(s), g.why);
  assert_int_equal(s, c->expect);
  assert_int_equal(g.passed, c->expect == GT_OK);
  assert_int_equal(g.checked, p.m * p.n);
  assert_int_equal(g.unwritten, 0);
  if (c->expect == GT_OK) {
    assert_true(g.error <= g.bound);
    /* a second gate draws new inputs and still passes */
    assert_int_equal(H->gate(b, l, &g), GT_OK);
  } else {
    assert_non_null(strstr(g.why, c->why));
  }
  H->unload(l);
  H->close(b);
}

/* The gate, not speed, rejects testonly_wrong: it is faster than the baseline it fails against. */
static void test_wrong_times_faster_than_naive(void **state) {
  (void)state;
  gt_problem_t p = problem_64x512x512(GT_DT_F32);
  gt_measure_opts_t o = warm_opts();
  struct gt_bench *b;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  const char *names[2][2] = {{"cpu", "cpu_naive_f32"}, {"testonly", "testonly_wrong"}};
  double best[2] = {1e30, 1e30};
  for (int i = 0; i < 2; i++) {
    gt_candidate_t c = candidate(names[i][0], names[i][1], &p);
    struct gt_loaded *l;
    assert_int_equal(H->load(b, &c, &l), GT_OK);
    for (int r = 0; r < 3; r++) {
      double us;
      assert_int_equal(H->time(b, l, 2, &us), GT_OK);
      if (us < best[i]) best[i] = us;
    }
    H->unload(l);
  }
  if (!(best[1] < best[0])) print_error("wrong %.1f us, naive %.1f us\n", best[1], best[0]);
  assert_true(best[1] < best[0]);
  H->close(b);
}

static void test_fault_fails_load_with_message(void **state) {
  (void)state;
  gt_problem_t p = problem_64x512x512(GT_DT_F32);
  gt_measure_opts_t o = warm_opts();
  struct gt_bench *b;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_candidate_t c = candidate("testonly", "testonly_fault", &p);
  struct gt_loaded *l = (void *)1;
  assert_int_equal(H->load(b, &c, &l), GT_ERR_DEVICE);
  assert_null(l);
  assert_non_null(strstr(gt_err_msg(), "planted fault"));
  H->close(b);
}

static void test_excluded_candidate_refused(void **state) {
  (void)state;
  gt_problem_t p = problem_64x512x512(GT_DT_F32);
  gt_measure_opts_t o = warm_opts();
  struct gt_bench *b;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_candidate_t c = candidate("reference", "reference_f64", &p);
  struct gt_loaded *l;
  assert_int_equal(H->load(b, &c, &l), GT_ERR_USAGE);
  assert_non_null(strstr(gt_err_msg(), "never raced"));
  H->close(b);
}

/* ---- timing ---------------------------------------------------------------------------------- */

static void test_auto_launches_fill_a_sample(void **state) {
  (void)state;
  gt_problem_t p = problem_64x512x512(GT_DT_F32);
  p.m = p.n = p.k = 8;
  gt_problem_fill_lds(&p);
  gt_measure_opts_t o = warm_opts();
  o.sample_target_us = 20000;
  struct gt_bench *b;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  assert_int_equal(H->launches(b), 0);
  gt_candidate_t c = candidate("cpu", "cpu_ikj_f32", &p);
  struct gt_loaded *l;
  assert_int_equal(H->load(b, &c, &l), GT_OK);
  double us;
  assert_int_equal(H->time(b, l, 0, &us), GT_OK);
  int n = H->launches(b);
  assert_true(n > 1); /* an 8x8x8 GEMM needs many launches to fill 20 ms */
  /* sized from a calibration mean: the sample is the right order, not exact */
  assert_true(us > 0 && us * n > 5000);
  H->set_launches(b, 7);
  assert_int_equal(H->launches(b), 7);
  H->unload(l);
  H->close(b);
}

/* Cold mode rotates several sets; every launch still computes the right answer. */
static void test_cold_rotation_gates_and_times(void **state) {
  (void)state;
  gt_problem_t p = problem_64x512x512(GT_DT_BF16);
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  o.rotate_factor = 0.05; /* a few sets on any LLC: keeps the test small */
  struct gt_bench *b;
  assert_int_equal(H->open(&p, &o, &b), GT_OK);
  gt_candidate_t c = candidate("cpu", "cpu_par_bf16_th2_t64x64x256_r8x4", &p);
  struct gt_loaded *l;
  assert_int_equal(H->load(b, &c, &l), GT_OK);
  double us;
  assert_int_equal(H->time(b, l, 9, &us), GT_OK);
  gt_gate_t g;
  assert_int_equal(H->gate(b, l, &g), GT_OK);
  H->unload(l);
  H->close(b);
}

/* ---- defaults and description ---------------------------------------------------------------- */

static void test_opts_defaults_and_seed(void **state) {
  (void)state;
  setenv("GEMMTUNE_SEED", "1234", 1);
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  assert_int_equal(o.seed, 1234);
  assert_false(o.warm);
  assert_float_equal(o.rotate_factor, 3.0, 0);
  assert_int_equal(o.launches, 0);
  assert_float_equal(o.sample_target_us, 2000.0, 0);
  assert_float_equal(o.timeout_s, 10.0, 0);
  assert_int_equal(o.init, GT_INIT_RANDOM);
  unsetenv("GEMMTUNE_SEED");
  assert_ptr_equal(gt_harness_for(GT_BACKEND_HOST), &gt_harness_host);
#ifndef GT_HAVE_CUDA
  assert_null(gt_harness_for(GT_BACKEND_CUDA));
#endif
}

static void test_describe_host(void **state) {
  (void)state;
  gt_device_info_t d;
  setenv("GEMMTUNE_CPU_PEAK_GFLOPS", "1500", 1);
  setenv("GEMMTUNE_CPU_PEAK_GBPS", "77", 1);
  assert_int_equal(H->available(0), GT_OK);
  assert_int_equal(H->describe(0, &d), GT_OK);
  assert_string_equal(d.arch, "cpu");
  assert_true(d.name[0] != '\0');
  assert_true(d.sm_count >= 1);
  assert_true(d.cache_bytes > 0);
  assert_float_equal(d.peak_tflops, 1.5, 1e-12);
  assert_float_equal(d.peak_gbps, 77, 1e-12);
  assert_int_equal(d.busy_processes, -1);
  unsetenv("GEMMTUNE_CPU_PEAK_GFLOPS");
  unsetenv("GEMMTUNE_CPU_PEAK_GBPS");
  assert_int_equal(H->describe(0, &d), GT_OK);
  assert_float_equal(d.peak_gbps, 20, 1e-12);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  /* Before any provider is initialised: init results are cached per process. */
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
  H = gt_harness_for(GT_BACKEND_HOST);
  struct CMUnitTest t[32];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_gates); i++)
    t[n++] = (struct CMUnitTest){k_gates[i].name, test_gate, NULL, NULL, (void *)&k_gates[i]};
  t[n++] = (struct CMUnitTest){"wrong_times_faster_than_naive", test_wrong_times_faster_than_naive, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"fault_fails_load_with_message", test_fault_fails_load_with_message, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"excluded_candidate_refused", test_excluded_candidate_refused, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"auto_launches_fill_a_sample", test_auto_launches_fill_a_sample, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"cold_rotation_gates_and_times", test_cold_rotation_gates_and_times, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"opts_defaults_and_seed", test_opts_defaults_and_seed, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"describe_host", test_describe_host, NULL, NULL, NULL};
  return _cmocka_run_group_tests("host_harness", t, n, NULL, NULL);
}
