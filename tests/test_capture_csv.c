/* The shapes file the preload shim writes for `gemmtune capture`: exact header, rows by time
 * share, shares that add up, and a file the shapes reader (gt_shapes_read) takes back with the
 * same keys, calls and times. And the GEMMTUNE_STATS file: exact header, one row per key with
 * its decision, keyless pass rows, rows of another process added in. */
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

static void test_header_is_exact(void **st) {
  (void)st;
  char want[512];
  int len = snprintf(want, sizeof want, "calls,time_us,share,entry,workspace,not_tunable");
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
    recs[i] = (gt_rt_capture_rec_t){.key = gt_test_h200_linear(k_order[i].tokens, 4096, 4096),
                                    .calls = k_order[i].calls, .time_us = k_order[i].time_us};
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
  gt_rt_capture_rec_t recs[2] = {
      {.key = gt_test_h200_linear(1, 4096, 4096), .calls = 7, .entry = GT_ENTRY_GEMMEX},
      {.key = gt_test_h200_linear(2, 4096, 4096), .calls = 9, .entry = GT_ENTRY_LTMATMUL,
       .workspace = 1048576}};
  char *text;
  size_t len;
  assert_int_equal(gt_rt_capture_format(recs, 2, &text, &len), GT_OK);
  /* entry and workspace follow the share: how the key was called, for the baseline; then
   * not_tunable ("-": tunable) */
  assert_non_null(strstr(text, "\n9,0.000,0.000000,ltmatmul,1048576,-,gemm,"));
  assert_non_null(strstr(text, "\n7,0.000,0.000000,gemmex,0,-,gemm,"));
  assert_true(strstr(text, "\n9,") < strstr(text, "\n7,")); /* more calls first */
  free(text);
}

/* What the shim writes, the shapes reader reads back unchanged. */
typedef struct rt_case {
  const char *name;
  gt_problem_t key;
  uint64_t calls;
  double time_us;
  const char *not_tunable; /* NULL: tunable */
} rt_case_t;

static void check_round_trip(const rt_case_t *cases, int n) {
  gt_rt_capture_rec_t recs[8];
  for (int i = 0; i < n; i++)
    recs[i] = (gt_rt_capture_rec_t){.key = cases[i].key, .calls = cases[i].calls,
                                    .time_us = cases[i].time_us,
                                    .entry = i % 2 ? GT_ENTRY_LTMATMUL : GT_ENTRY_GEMMEX,
                                    .workspace = i % 2 ? (uint64_t)(i + 1) << 20 : 0};
  for (int i = 0; i < n; i++)
    snprintf(recs[i].not_tunable, sizeof recs[i].not_tunable, "%s",
             cases[i].not_tunable ? cases[i].not_tunable : "");
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
      if (gt_problem_equal(&sh.v[j].p, &cases[i].key) &&
          strcmp(sh.v[j].not_tunable, recs[i].not_tunable) == 0)
        found = &sh.v[j];
    if (!found) {
      char key[1024];
      gt_problem_format_key(&cases[i].key, key, sizeof key);
      fail_msg("%s: key not read back: %s", cases[i].name, key);
    }
    if ((uint64_t)found->calls != cases[i].calls || fabs(found->time_us - cases[i].time_us) > 1e-3)
      fail_msg("%s: calls %ld time %g, want %llu %g", cases[i].name, found->calls,
               found->time_us, (unsigned long long)cases[i].calls, cases[i].time_us);
    if (found->entry != recs[i].entry || found->workspace != recs[i].workspace)
      fail_msg("%s: entry %s workspace %llu, want %s %llu", cases[i].name,
               gt_entry_name(found->entry), (unsigned long long)found->workspace,
               gt_entry_name(recs[i].entry), (unsigned long long)recs[i].workspace);
  }
  gt_shapes_free(&sh);
}

static void test_reader_takes_it_back(void **st) {
  (void)st;
  rt_case_t cases[8];
  int n = 0;
  cases[n++] = (rt_case_t){"bf16 linear, beta 0", gt_test_h200_linear(16, 4096, 4096), 120, 1834.25, NULL};
  rt_case_t c = {"f32 NN beta 1", gt_test_h200_linear(1, 256, 512), 3, 12.5, NULL};
  c.key.a_type = c.key.b_type = c.key.c_type = c.key.d_type = GT_DT_F32;
  c.key.compute = GT_COMPUTE_TF32;
  c.key.transa = GT_TRANS_N;
  c.key.lda = 256;
  c.key.beta_zero = false;
  cases[n++] = c;
  c = (rt_case_t){"strided batch", gt_test_h200_linear(64, 128, 256), 8, 40.0, NULL};
  c.key.batch = 4;
  c.key.stride_a = 128 * 256;
  c.key.stride_b = 256 * 64;
  c.key.stride_c = 128 * 64;
  cases[n++] = c;
  c = (rt_case_t){"padded leading dims", gt_test_h200_linear(8, 1000, 1000), 2, 3.0, NULL};
  c.key.lda = 1024;
  c.key.ldb = 1024;
  c.key.ldc = 1008;
  cases[n++] = c;
  c = (rt_case_t){"f16 compute, bias epilogue", gt_test_h200_linear(32, 512, 512), 5, 7.0, NULL};
  c.key.a_type = c.key.b_type = c.key.c_type = c.key.d_type = GT_DT_F16;
  c.key.compute = GT_COMPUTE_F16;
  c.key.scale_type = GT_DT_F16;
  c.key.epilogue = GT_EPI_BIAS;
  cases[n++] = c;
  /* A GEMM the workload ran that cannot be tuned: its own row, even next to the tunable row of
   * the same key. */
  c = cases[2];
  c.name = "pointer-array batch, same key as the strided one";
  c.calls = 6;
  c.time_us = 21.0;
  c.not_tunable = "pointer-array batch (cublasGemmBatchedEx): operands at arbitrary addresses";
  cases[n++] = c;
  check_round_trip(cases, n);
}

/* A capture file written before the not_tunable column is still a capture file: the shim adds
 * to it, the reader reads it (every row tunable). A reason with a comma cannot break the row. */
static void test_old_header_and_reason_cells(void **st) {
  (void)st;
  char old[1024];
  int len = snprintf(old, sizeof old, "calls,time_us,share,entry,workspace");
  for (int i = 0; i < GT_KEY_NFIELDS_V2; i++)
    len += snprintf(old + len, sizeof old - (size_t)len, ",%s", gt_key_field_names[i]);
  char text[2048];
  snprintf(text, sizeof text,
           "#gemmtune-capture cublas=130100 path=/x/libcublas.so.13\n%s\n"
           "3,9.000,1.000000,gemmex,0,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,16,4096,4096,"
           "4096,4096,1,0,0,0,none,1,sm_90,132\n",
           old);
  assert_true(gt_rt_capture_is_capture_text(text));
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  gt_shapes_t sh;
  assert_int_equal(gt_shapes_parse("old.csv", text, &defaults, &sh, NULL), GT_OK);
  assert_int_equal(sh.n, 1);
  assert_string_equal(sh.v[0].not_tunable, "");
  gt_shapes_free(&sh);
  gt_rt_capture_rec_t rec = {.key = gt_test_h200_linear(16, 4096, 4096), .calls = 2,
                             .time_us = 4.0, .entry = GT_ENTRY_GEMMEX};
  snprintf(rec.not_tunable, sizeof rec.not_tunable, "a reason, with a comma \"and quotes\"");
  char *out;
  size_t n;
  assert_int_equal(gt_rt_capture_format(&rec, 1, &out, &n), GT_OK);
  assert_int_equal(gt_shapes_parse("new.csv", out, &defaults, &sh, NULL), GT_OK);
  assert_int_equal(sh.n, 1);
  assert_string_equal(sh.v[0].not_tunable, "a reason; with a comma ;and quotes;");
  gt_shapes_free(&sh);
  free(out);
}

/* The preamble naming the loaded libraries comes before the header; the shapes reader skips it
 * and reads the rows as without it. */
static void test_preamble_before_header(void **st) {
  (void)st;
  gt_rt_capture_rec_t rec = {.key = gt_test_h200_linear(16, 4096, 4096), .calls = 3,
                             .time_us = 9.5, .entry = GT_ENTRY_LTMATMUL, .workspace = 1 << 20};
  const char *pre = "#gemmtune-capture cublaslt=130100 path=/x/libcublasLt.so.13\n"
                    "#gemmtune-capture cublas=130100 path=/x/libcublas.so.13\n";
  const char *path = gt_test_path(gt_test_tmpdir(), "pre.csv");
  assert_int_equal(gt_rt_capture_write_with(path, pre, &rec, 1), GT_OK);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[1024];
  assert_non_null(fgets(line, sizeof line, f));
  assert_string_equal(line, "#gemmtune-capture cublaslt=130100 path=/x/libcublasLt.so.13\n");
  assert_non_null(fgets(line, sizeof line, f));
  assert_non_null(fgets(line, sizeof line, f));
  line[strcspn(line, "\n")] = '\0';
  assert_string_equal(line, gt_rt_capture_header());
  fclose(f);
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  gt_shapes_t sh;
  assert_int_equal(gt_shapes_read(path, &defaults, &sh, NULL), GT_OK);
  assert_int_equal(sh.n, 1);
  assert_true(gt_problem_equal(&sh.v[0].p, &rec.key));
  assert_int_equal(sh.v[0].calls, 3);
  gt_shapes_free(&sh);
  /* no preamble: exactly what gt_rt_capture_write writes */
  assert_int_equal(gt_rt_capture_write_with(path, NULL, &rec, 1), GT_OK);
  f = fopen(path, "r");
  assert_non_null(fgets(line, sizeof line, f));
  fclose(f);
  line[strcspn(line, "\n")] = '\0';
  assert_string_equal(line, gt_rt_capture_header());
}

/* A batch stride of 0 (one A for every batch item) is a different key from the tight stride. */
static void test_reader_keeps_broadcast_stride(void **st) {
  (void)st;
  rt_case_t c = {"broadcast A (batch stride 0)", gt_test_h200_linear(64, 128, 256), 6, 30.0, NULL};
  c.key.batch = 3;
  c.key.stride_a = 0;
  c.key.stride_b = 256 * 64;
  c.key.stride_c = 128 * 64;
  check_round_trip(&c, 1);
}


/* ---- GEMMTUNE_STATS ---- */

static char *stats_text(const gt_rt_stats_rec_t *recs, size_t n, const char *prev) {
  char *text;
  size_t len;
  assert_int_equal(gt_rt_stats_format(recs, n, prev, &text, &len), GT_OK);
  assert_int_equal(len, strlen(text));
  return text;
}

/* The data rows of a stats text, without the header. */
static int stats_rows(char *text, char rows[][1024], int max) {
  int n = 0;
  char *save = NULL;
  strtok_r(text, "\n", &save);
  for (char *l = strtok_r(NULL, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save))
    snprintf(rows[n++], 1024, "%s", l);
  return n;
}

static void test_stats_header_is_exact(void **st) {
  (void)st;
  char want[600];
  int len = snprintf(want, sizeof want, "calls,hits,decision,provider,instance,entry");
  for (int i = 0; i < GT_KEY_NFIELDS; i++)
    len += snprintf(want + len, sizeof want - (size_t)len, ",%s", gt_key_field_names[i]);
  assert_string_equal(gt_rt_stats_header(), want);
  char *text = stats_text(NULL, 0, NULL);
  assert_int_equal(strncmp(text, want, strlen(want)), 0);
  assert_string_equal(text + strlen(want), "\n");
  free(text);
}

/* Each decision's row, as verify reads it: the counters, the row's names or "-", the entry point,
 * then the key exactly as the capture file and the DB spell it. */
static void test_stats_rows_carry_decision_names_and_key(void **st) {
  (void)st;
  gt_rt_stats_rec_t recs[3] = {
      {.keyed = true, .key = gt_test_h200_linear(16, 4096, 4096), .calls = 40, .hits = 40,
       .decision = "hit", .provider = "kernels", .instance = "gt_sm90_decode_x", .entry = "cublasGemmEx"},
      {.keyed = true, .key = gt_test_h200_linear(1, 4096, 4096), .calls = 7, .hits = 0,
       .decision = "miss", .entry = "cublasLtMatmul"},
      {.keyed = false, .calls = 3, .decision = "pass", .entry = "cublasGemmEx"},
  };
  char *text = stats_text(recs, 3, NULL);
  char rows[8][1024];
  assert_int_equal(stats_rows(text, rows, 8), 3);
  char key[1024] = "";
  int o = 0;
  for (int f = 0; f < GT_KEY_NFIELDS; f++) {
    char v[64];
    gt_problem_field_str(&recs[0].key, f, v, sizeof v);
    o += snprintf(key + o, sizeof key - (size_t)o, ",%s", v);
  }
  char want[1200];
  snprintf(want, sizeof want, "40,40,hit,kernels,gt_sm90_decode_x,cublasGemmEx%s", key);
  assert_string_equal(rows[0], want);
  assert_int_equal(strncmp(rows[1], "7,0,miss,-,-,cublasLtMatmul,gemm,bf16,", 38), 0);
  char unkeyed[256] = "3,0,pass,-,-,cublasGemmEx";
  for (int f = 0; f < GT_KEY_NFIELDS; f++) strcat(unkeyed, ",-");
  assert_string_equal(rows[2], unkeyed);
  free(text);
}

/* Rows that are the same but for the counters are summed: one entry point's pass reasons, one key
 * on two identical GPUs, or another process's file at the same path. */
static void test_stats_merges_equal_rows_and_prev_file(void **st) {
  (void)st;
  gt_rt_stats_rec_t recs[3] = {
      {.keyed = false, .calls = 2, .decision = "pass", .entry = "cublasGemmEx"},
      {.keyed = false, .calls = 5, .decision = "pass", .entry = "cublasGemmEx"},
      {.keyed = true, .key = gt_test_h200_linear(16, 4096, 4096), .calls = 4, .hits = 4, .decision = "hit",
       .provider = "cublaslt", .instance = "cublaslt_a1", .entry = "cublasGemmEx"},
  };
  char *first = stats_text(recs, 3, NULL);
  char *again = stats_text(recs, 3, first); /* a second process with the same counts */
  char rows[8][1024];
  assert_int_equal(stats_rows(again, rows, 8), 2);
  assert_int_equal(strncmp(rows[0], "14,0,pass,-,-,cublasGemmEx,-,", 29), 0);
  assert_int_equal(strncmp(rows[1], "8,8,hit,cublaslt,cublaslt_a1,cublasGemmEx,gemm,", 47), 0);
  free(first);
  free(again);
  /* a file that is not a stats file contributes nothing */
  char *foreign = stats_text(recs, 3, "calls,time_us,share,op\n99,1,1,gemm\n");
  assert_int_equal(stats_rows(foreign, rows, 8), 2);
  assert_int_equal(strncmp(rows[0], "7,0,pass,", 9), 0);
  free(foreign);
}

/* Names that would break the row are made safe; missing names are "-". */
static void test_stats_sanitises_names(void **st) {
  (void)st;
  gt_rt_stats_rec_t r = {.keyed = false, .calls = 1, .decision = "notused", .provider = "a,b",
                         .instance = "", .entry = "x\ny"};
  char *text = stats_text(&r, 1, NULL);
  char rows[2][1024];
  assert_int_equal(stats_rows(text, rows, 2), 1);
  assert_int_equal(strncmp(rows[0], "1,0,notused,a_b,-,x_y,-,", 24), 0);
  free(text);
}

/* What gt_rt_stats_write leaves on disk, twice to the same path: the counts add up. */
static void test_stats_write_adds_to_the_file(void **st) {
  (void)st;
  gt_rt_stats_rec_t r = {.keyed = true, .key = gt_test_h200_linear(1, 1024, 4096), .calls = 6, .hits = 6,
                         .decision = "hit", .provider = "kernels", .instance = "k1",
                         .entry = "cublasGemmEx"};
  const char *path = gt_test_path(gt_test_tmpdir(), "stats.csv");
  remove(path);
  assert_int_equal(gt_rt_stats_write(path, &r, 1), GT_OK);
  assert_int_equal(gt_rt_stats_write(path, &r, 1), GT_OK);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char line[2048];
  assert_non_null(fgets(line, sizeof line, f));
  assert_int_equal(strncmp(line, gt_rt_stats_header(), strlen(gt_rt_stats_header())), 0);
  assert_non_null(fgets(line, sizeof line, f));
  assert_int_equal(strncmp(line, "12,12,hit,kernels,k1,cublasGemmEx,gemm,", 39), 0);
  assert_null(fgets(line, sizeof line, f));
  fclose(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_is_exact),
      cmocka_unit_test(test_rows_sorted_by_share),
      cmocka_unit_test(test_untimed_capture_has_zero_shares),
      cmocka_unit_test(test_reader_takes_it_back),
      cmocka_unit_test(test_reader_keeps_broadcast_stride),
      cmocka_unit_test(test_preamble_before_header),
      cmocka_unit_test(test_old_header_and_reason_cells),
      cmocka_unit_test(test_stats_header_is_exact),
      cmocka_unit_test(test_stats_rows_carry_decision_names_and_key),
      cmocka_unit_test(test_stats_merges_equal_rows_and_prev_file),
      cmocka_unit_test(test_stats_sanitises_names),
      cmocka_unit_test(test_stats_write_adds_to_the_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
