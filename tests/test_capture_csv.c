/* The shapes file the preload shim writes for `gemmtune capture`: exact header, rows by time
 * share, shares that add up, and a file the shapes reader (gt_shapes_read) takes back with the
 * same keys, calls and times. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_shapes.h"
#include "gt_testutil.h"
#include "runtime/capture_csv.h"

static gt_problem_t key_linear(int64_t tokens, int64_t out, int64_t in) {
  gt_problem_t p;
  gt_problem_init(&p);
  gt_problem_set_linear(&p, tokens, out, in);
  snprintf(p.arch, sizeof p.arch, "sm_90");
  p.sm_count = 132;
  return p;
}

static void test_header_is_exact(void **st) {
  (void)st;
  char want[512];
  int len = snprintf(want, sizeof want, "calls,time_us,share");
  for (int i = 0; i < GT_KEY_NFIELDS; i++)
    len += snprintf(want + len, sizeof want - (size_t)len, ",%s", gt_key_field_names[i]);
  assert_string_equal(gt_rt_capture_header(), want);
  char *text;
  size_t n;
  assert_int_equal(gt_rt_capture_format(NULL, 0, &text, &n), GT_OK);
  /* the header is the first line: no comment lines before it */
  assert_int_equal(strncmp(text, want, strlen(want)), 0);
  assert_int_equal(text[strlen(want)], '\n');
  assert_int_equal(n, strlen(want) + 1);
  free(text);
}

/* Rows in the order the file must list them, given in a different order. */
typedef struct order_case {
  const char *name;
  int64_t tokens;
  uint64_t calls;
  double time_us;
} order_case_t;

/* Expected file order: largest time; the 500 us tie with more calls; the tie with fewer calls;
 * small time with many calls; never timed. */
static const order_case_t k_order[] = {
    {"small time, many calls", 1, 1000, 100.0},
    {"largest time", 16, 10, 900.0},
    {"tie on time, more calls", 128, 50, 500.0},
    {"tie on time, fewer calls", 256, 20, 500.0},
    {"never timed", 512, 5, 0.0},
};

static void test_rows_sorted_by_share(void **st) {
  (void)st;
  size_t n = sizeof k_order / sizeof k_order[0];
  gt_rt_capture_rec_t recs[8];
  for (size_t i = 0; i < n; i++)
    recs[i] = (gt_rt_capture_rec_t){key_linear(k_order[i].tokens, 4096, 4096), k_order[i].calls,
                                    k_order[i].time_us};
  char *text;
  size_t len;
  assert_int_equal(gt_rt_capture_format(recs, n, &text, &len), GT_OK);
  /* read the calls column of each data row */
  uint64_t calls[8];
  double share[8], sum = 0;
  int rows = 0;
  char *save = NULL;
  strtok_r(text, "\n", &save); /* header */
  for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    unsigned long long c;
    double t, s;
    assert_int_equal(sscanf(l, "%llu,%lf,%lf,", &c, &t, &s), 3);
    calls[rows] = c;
    share[rows] = s;
    sum += s;
    rows++;
  }
  assert_int_equal(rows, (int)n);
  assert_int_equal(calls[0], 10);   /* largest time */
  assert_int_equal(calls[1], 50);   /* tie on time: more calls first */
  assert_int_equal(calls[2], 20);
  assert_int_equal(calls[3], 1000);
  assert_int_equal(calls[4], 5);    /* never timed: last, share 0 */
  assert_true(fabs(share[0] - 0.45) < 1e-6); /* 900 / 2000 */
  assert_true(share[4] == 0.0);
  assert_true(fabs(sum - 1.0) < 1e-5);
  free(text);
}

static void test_untimed_capture_has_zero_shares(void **st) {
  (void)st;
  gt_rt_capture_rec_t recs[2] = {{key_linear(1, 4096, 4096), 7, 0.0},
                                 {key_linear(2, 4096, 4096), 9, 0.0}};
  char *text;
  size_t len;
  assert_int_equal(gt_rt_capture_format(recs, 2, &text, &len), GT_OK);
  assert_non_null(strstr(text, "\n9,0.000,0.000000,gemm,"));
  assert_non_null(strstr(text, "\n7,0.000,0.000000,gemm,"));
  assert_true(strstr(text, "\n9,") < strstr(text, "\n7,")); /* more calls first */
  free(text);
}

/* What the shim writes, the shapes reader reads back unchanged. */
typedef struct rt_case {
  const char *name;
  gt_problem_t key;
  uint64_t calls;
  double time_us;
} rt_case_t;

static void check_round_trip(const rt_case_t *cases, int n) {
  gt_rt_capture_rec_t recs[8];
  for (int i = 0; i < n; i++) recs[i] = (gt_rt_capture_rec_t){cases[i].key, cases[i].calls,
                                                              cases[i].time_us};
  const char *path = gt_test_path(gt_test_tmpdir(), "shapes.csv");
  assert_int_equal(gt_rt_capture_write(path, recs, (size_t)n), GT_OK);

  gt_problem_t defaults;
  gt_problem_init(&defaults);
  gt_shapes_t sh;
  if (gt_shapes_read(path, &defaults, &sh, NULL) != GT_OK)
    fail_msg("the shapes reader rejects the capture file: %s", gt_err_msg());
  assert_int_equal(sh.n, (size_t)n);
  for (int i = 0; i < n; i++) {
    const gt_shape_t *found = NULL;
    for (size_t j = 0; j < sh.n; j++)
      if (gt_problem_equal(&sh.v[j].p, &cases[i].key)) found = &sh.v[j];
    if (!found) {
      char key[1024];
      gt_problem_format_key(&cases[i].key, key, sizeof key);
      fail_msg("%s: key not read back: %s", cases[i].name, key);
    }
    if ((uint64_t)found->calls != cases[i].calls || fabs(found->time_us - cases[i].time_us) > 1e-3)
      fail_msg("%s: calls %ld time %g, want %llu %g", cases[i].name, found->calls,
               found->time_us, (unsigned long long)cases[i].calls, cases[i].time_us);
  }
  gt_shapes_free(&sh);
}

static void test_reader_takes_it_back(void **st) {
  (void)st;
  rt_case_t cases[8];
  int n = 0;
  cases[n++] = (rt_case_t){"bf16 linear, beta 0", key_linear(16, 4096, 4096), 120, 1834.25};
  rt_case_t c = {"f32 NN beta 1", key_linear(1, 256, 512), 3, 12.5};
  c.key.a_type = c.key.b_type = c.key.c_type = c.key.d_type = GT_DT_F32;
  c.key.compute = GT_COMPUTE_TF32;
  c.key.transa = GT_TRANS_N;
  c.key.lda = 256;
  c.key.beta_zero = false;
  cases[n++] = c;
  c = (rt_case_t){"strided batch", key_linear(64, 128, 256), 8, 40.0};
  c.key.batch = 4;
  c.key.stride_a = 128 * 256;
  c.key.stride_b = 256 * 64;
  c.key.stride_c = 128 * 64;
  cases[n++] = c;
  c = (rt_case_t){"padded leading dims", key_linear(8, 1000, 1000), 2, 3.0};
  c.key.lda = 1024;
  c.key.ldb = 1024;
  c.key.ldc = 1008;
  cases[n++] = c;
  c = (rt_case_t){"f16 compute, bias epilogue", key_linear(32, 512, 512), 5, 7.0};
  c.key.a_type = c.key.b_type = c.key.c_type = c.key.d_type = GT_DT_F16;
  c.key.compute = GT_COMPUTE_F16;
  c.key.scale_type = GT_DT_F16;
  c.key.epilogue = GT_EPI_BIAS;
  cases[n++] = c;
  check_round_trip(cases, n);
}

/* A batch stride of 0 (one A for every batch item) is a different key from the tight stride. */
static void test_reader_keeps_broadcast_stride(void **st) {
  (void)st;
  rt_case_t c = {"broadcast A (batch stride 0)", key_linear(64, 128, 256), 6, 30.0};
  c.key.batch = 3;
  c.key.stride_a = 0;
  c.key.stride_b = 256 * 64;
  c.key.stride_c = 128 * 64;
  check_round_trip(&c, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_is_exact),
      cmocka_unit_test(test_rows_sorted_by_share),
      cmocka_unit_test(test_untimed_capture_has_zero_shares),
      cmocka_unit_test(test_reader_takes_it_back),
      cmocka_unit_test(test_reader_keeps_broadcast_stride),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
