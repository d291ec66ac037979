/* gt_grouped_key: the key of a torch grouped GEMM call (the MoE experts' product). The routed rows
 * are bucketed to a power of two; the weight's layout, strides and types map onto the BLAS key as
 * gt_grouped_key.h states; anything the own kernels cannot serve is keyed and marked with its
 * reason; and a grouped key survives the text form, the tuned DB and the capture file unchanged. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_db.h"
#include "core/gt_grouped_key.h"
#include "core/gt_shapes.h"
#include "gt_testutil.h"
#include "runtime/capture_csv.h"

static void test_rows_bucket(void **st) {
  (void)st;
  static const struct {
    int64_t rows, bucket;
  } cases[] = {
      {0, 1},      {1, 1},       {2, 2},       {3, 4},     {8, 8},        {9, 16},
      {128, 128},  {129, 256},   {5000, 8192}, {((int64_t)1 << 62), ((int64_t)1 << 62)},
      {((int64_t)1 << 62) + 1, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (gt_grouped_rows_bucket(cases[i].rows) != cases[i].bucket)
      fail_msg("rows %lld: bucket %lld, want %lld", (long long)cases[i].rows,
               (long long)gt_grouped_rows_bucket(cases[i].rows), (long long)cases[i].bucket);
}

/* A Mixtral-style expert projection as transformers calls torch._grouped_mm: activations
 * [rows][K], the nn.Linear weights [E][N][K] passed transposed (K contiguous). */
static gt_grouped_call_t linear_call(int64_t rows, int64_t groups, int64_t n, int64_t k) {
  return (gt_grouped_call_t){.entry = "bf16bf16_grouped_mm", .a_type = GT_DT_BF16,
                             .b_type = GT_DT_BF16, .out_type = GT_DT_BF16, .a_2d = true,
                             .b_3d = true, .has_offs = true, .rows = rows, .k = k, .n = n,
                             .groups = groups, .a_row_stride = k, .a_col_stride = 1,
                             .b_group_stride = n * k, .b_k_stride = 1, .b_n_stride = k,
                             .out_row_stride = n, .out_col_stride = 1};
}

static void test_key_mapping(void **st) {
  (void)st;
  gt_grouped_call_t c = linear_call(24, 8, 14336, 4096);
  gt_problem_t p;
  gt_cublas_mark_t mk;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &p, &mk), GT_OK);
  assert_string_equal(mk.why, "");
  char key[1024];
  gt_problem_format_key(&p, key, sizeof key);
  assert_string_equal(key,
                      "op=grouped_mm,a_type=bf16,b_type=bf16,c_type=bf16,d_type=bf16,compute=f32,"
                      "scale_type=f32,transa=T,transb=N,m=14336,n=32,k=4096,lda=4096,ldb=4096,"
                      "ldc=14336,batch=8,stride_a=58720256,stride_b=0,stride_c=0,epilogue=none,"
                      "beta_zero=1,arch=sm_90,sm_count=132");
  /* A [E][K][N] weight (N contiguous) is BLAS A not transposed, ld = its K stride. */
  c.b_k_stride = 14336;
  c.b_n_stride = 1;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &p, &mk), GT_OK);
  assert_int_equal(p.transa, GT_TRANS_N);
  assert_int_equal(p.lda, 14336);
  assert_string_equal(mk.why, "");
  /* FLOPs count each routed row once, not once per group. */
  assert_true(gt_problem_flops(&p) == 2.0 * 14336 * 32 * 4096);
}

/* torch._scaled_grouped_mm with rowwise scales (f8f8bf16_grouped_mm): e4m3 operands, the
 * weights' scale per group and column (BLAS A's rows: outer) and the rows' (BLAS B's columns:
 * outer) in the key, fast accumulation as asked; scales of another layout, another fp8 type and
 * N-contiguous fp8 weights are keyed and marked with the reason. */
static gt_grouped_call_t fp8_call(int64_t rows, int64_t groups, int64_t n, int64_t k) {
  gt_grouped_call_t c = linear_call(rows, groups, n, k);
  c.entry = "f8f8bf16_grouped_mm";
  c.a_type = c.b_type = GT_DT_F8E4M3FN;
  c.fp8_scaled = c.scales_rowwise = true;
  return c;
}

static void test_fp8_key(void **st) {
  (void)st;
  gt_grouped_call_t c = fp8_call(16, 256, 4096, 7168);
  gt_problem_t p;
  gt_cublas_mark_t mk;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &p, &mk), GT_OK);
  assert_string_equal(mk.why, "");
  char key[1024];
  gt_problem_format_key(&p, key, sizeof key);
  assert_non_null(strstr(key, "op=grouped_mm,a_type=f8e4m3fn,b_type=f8e4m3fn,c_type=bf16,"
                              "d_type=bf16,"));
  assert_non_null(strstr(key, ",scale_a=outer_f32,scale_b=outer_f32"));
  assert_int_equal(p.fast_accum, false);
  c.fast_accum = true;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &p, &mk), GT_OK);
  assert_int_equal(p.fast_accum, true);
  /* The text form reads back to the same key (the DB and the shapes file carry it). */
  gt_problem_format_key(&p, key, sizeof key);
  gt_problem_t back;
  assert_int_equal(gt_problem_parse_key(key, &back), GT_OK);
  assert_true(gt_problem_equal(&p, &back));
  static const struct {
    const char *name, *why;
  } marks[] = {
      {"scales of another layout", "scales other than fp32 rowwise"},
      {"a type other than e4m3", "only e4m3 x e4m3 -> bf16"},
      {"fp8 weights N-contiguous", "K-contiguous"},
  };
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
    gt_grouped_call_t m = fp8_call(16, 8, 1024, 512);
    switch (i) {
      case 0: m.scales_rowwise = false; break;
      case 1: m.a_type = GT_DT_F64; break; /* what the bridge reads an e5m2 tensor as */
      case 2: m.b_k_stride = 1024; m.b_n_stride = 1; break;
    }
    if (gt_grouped_key(&m, "sm_90", 132, &p, &mk) != GT_OK)
      fail_msg("%s: not keyed: %s", marks[i].name, gt_err_msg());
    if (!strstr(mk.why, marks[i].why) || strchr(mk.why, ','))
      fail_msg("%s: mark '%s', want '%s' without commas", marks[i].name, mk.why, marks[i].why);
  }
}

static void test_marks(void **st) {
  (void)st;
  static const struct {
    const char *name, *why; /* a substring of the mark */
  } cases[] = {
      {"fp32 out", "only bf16 is tuned"},
      {"bias", "a bias"},
      {"no offs", "no offs"},
      {"3-D x 3-D", "2-D x 3-D"},
      {"weight contiguous in neither", "contiguous in neither"},
      {"mat_a not row-major", "mat_a strides"},
      {"no rows", "no routed rows"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gt_grouped_call_t c = linear_call(16, 4, 256, 128);
    switch (i) {
      case 0: c.out_type = GT_DT_F32; break;
      case 1: c.has_bias = true; break;
      case 2: c.has_offs = false; break;
      case 3: c.a_2d = false; break;
      case 4: c.b_k_stride = 2; c.b_n_stride = 256; c.b_group_stride = 256 * 256; break;
      case 5: c.a_col_stride = 16; break;
      case 6: c.rows = 0; break;
    }
    gt_problem_t p;
    gt_cublas_mark_t mk;
    if (gt_grouped_key(&c, "sm_90", 132, &p, &mk) != GT_OK)
      fail_msg("%s: not keyed: %s", cases[i].name, gt_err_msg());
    if (!strstr(mk.why, cases[i].why) || strchr(mk.why, ','))
      fail_msg("%s: mark '%s', want '%s' without commas", cases[i].name, mk.why, cases[i].why);
    /* Without a mark to carry the reason the call is refused with it. */
    if (gt_grouped_key(&c, "sm_90", 132, &p, NULL) != GT_ERR_UNSUPPORTED ||
        !strstr(gt_err_msg(), cases[i].why))
      fail_msg("%s: refusal '%s'", cases[i].name, gt_err_msg());
  }
  gt_grouped_call_t bad = linear_call(16, 0, 256, 128);
  gt_problem_t p;
  gt_cublas_mark_t mk;
  assert_int_equal(gt_grouped_key(&bad, "sm_90", 132, &p, &mk), GT_ERR_UNSUPPORTED);
}

static void test_key_text_round_trip(void **st) {
  (void)st;
  gt_grouped_call_t c = linear_call(100, 64, 1536, 2048);
  gt_problem_t p, q;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &p, NULL), GT_OK);
  char key[1024];
  gt_problem_format_key(&p, key, sizeof key);
  gt_problem_init(&q);
  assert_int_equal(gt_problem_parse_key(key, &q), GT_OK);
  assert_true(gt_problem_equal(&p, &q));
  assert_int_equal(gt_problem_validate(&q), GT_OK);
  /* A plain GEMM with the same numbers is another key, and says so by its op. */
  q.op = GT_OP_GEMM;
  char diff[256];
  gt_problem_diff_str(&p, &q, diff, sizeof diff);
  assert_string_equal(diff, "op: grouped_mm vs gemm");
  /* Grouped rows are split, never repeated: a batch stride on them is not a grouped key. */
  q = p;
  q.stride_c = 1536 * 128;
  assert_int_equal(gt_problem_validate(&q), GT_ERR_DATA);
  assert_int_equal(gt_problem_parse_key("op=grouped", &q), GT_ERR_DATA);
}

static void test_even_offs(void **st) {
  (void)st;
  gt_grouped_call_t c = linear_call(10, 4, 64, 64);
  gt_problem_t p;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &p, NULL), GT_OK);
  int32_t offs[4];
  assert_true(gt_grouped_even_offs(&p, offs, 4)); /* bucket 16 over 4 groups */
  assert_int_equal(offs[0], 4);
  assert_int_equal(offs[3], 16);
  assert_false(gt_grouped_even_offs(&p, offs, 3));
}

static void test_db_round_trip(void **st) {
  (void)st;
  gt_grouped_call_t c = linear_call(32, 8, 4096, 14336);
  gt_db_row_t row;
  memset(&row, 0, sizeof row);
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &row.key, NULL), GT_OK);
  snprintf(row.provider, sizeof row.provider, "grouped");
  snprintf(row.lib, sizeof row.lib, "-");
  snprintf(row.instance, sizeof row.instance, "gt_sm90_grouped_bf16_tn_t128x128x64");
  row.time_us = 50;
  row.baseline_us = 80;
  row.error = 1e-3;
  row.error_bound = 1e-2;
  snprintf(row.timing, sizeof row.timing, "cold-graph");
  row.rounds = 15;
  snprintf(row.baseline, sizeof row.baseline, "torch/bf16bf16_grouped_mm");
  gt_db_t db;
  gt_db_init(&db);
  assert_int_equal(gt_db_put(&db, &row), GT_OK);
  const char *path = gt_test_path(gt_test_tmpdir(), "grouped.db");
  if (gt_db_write(&db, path) != GT_OK) fail_msg("write: %s", gt_err_msg());
  gt_db_t back;
  gt_db_init(&back);
  if (gt_db_read(path, &back) != GT_OK) fail_msg("read: %s", gt_err_msg());
  const gt_db_row_t *hit = gt_db_lookup(&back, &row.key);
  assert_non_null(hit);
  assert_string_equal(hit->instance, row.instance);
  /* A live call with fewer rows in the same bucket finds the same row. */
  gt_grouped_call_t live = linear_call(17, 8, 4096, 14336);
  gt_problem_t k;
  assert_int_equal(gt_grouped_key(&live, "sm_90", 132, &k, NULL), GT_OK);
  assert_ptr_equal(gt_db_lookup(&back, &k), hit);
  gt_db_free(&db);
  gt_db_free(&back);
}

static void test_capture_round_trip(void **st) {
  (void)st;
  gt_rt_capture_rec_t recs[2];
  memset(recs, 0, sizeof recs);
  gt_grouped_call_t c = linear_call(16, 8, 14336, 4096);
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &recs[0].key, NULL), GT_OK);
  recs[0].calls = 64;
  recs[0].time_us = 640;
  recs[0].entry = GT_ENTRY_GROUPED_MM;
  c.has_bias = true;
  gt_cublas_mark_t mk;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &recs[1].key, &mk), GT_OK);
  snprintf(recs[1].not_tunable, sizeof recs[1].not_tunable, "%s", mk.why);
  recs[1].calls = 2;
  recs[1].time_us = 30;
  recs[1].entry = GT_ENTRY_GROUPED_MM;
  char *text;
  size_t len;
  assert_int_equal(gt_rt_capture_format(recs, 2, &text, &len), GT_OK);
  assert_non_null(strstr(text, ",grouped_mm,0,-,grouped_mm,bf16,"));
  gt_shapes_t sh;
  gt_problem_t def;
  gt_problem_init(&def);
  if (gt_shapes_parse("cap.csv", text, &def, &sh, NULL) != GT_OK)
    fail_msg("shapes: %s", gt_err_msg());
  assert_int_equal(sh.n, 2);
  assert_true(gt_problem_equal(&sh.v[0].p, &recs[0].key));
  assert_int_equal(sh.v[0].entry, GT_ENTRY_GROUPED_MM);
  assert_int_equal(sh.v[0].calls, 64);
  assert_string_equal(sh.v[0].not_tunable, "");
  assert_non_null(strstr(sh.v[1].not_tunable, "a bias"));
  gt_shapes_free(&sh);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_bucket),       cmocka_unit_test(test_key_mapping),
      cmocka_unit_test(test_marks),             cmocka_unit_test(test_key_text_round_trip),
      cmocka_unit_test(test_even_offs),         cmocka_unit_test(test_db_round_trip),
      cmocka_unit_test(test_capture_round_trip), cmocka_unit_test(test_fp8_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
