/* Tuned DB: round trip, strict rejection of malformed files (file:line and field named), atomic
 * writes that leave the target untouched on failure, lookup, miss explanation and merge. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/gt_db.h"
#include "gt_testutil.h"

/* ---- fixtures ----------------------------------------------------------------------------- */

/* An nn.Linear-style key on an H200. */
static gt_problem_t make_key(int64_t m, int64_t n, int64_t k) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.transa = GT_TRANS_T;
  p.transb = GT_TRANS_N;
  p.m = m;
  p.n = n;
  p.k = k;
  gt_problem_fill_lds(&p);
  snprintf(p.arch, sizeof p.arch, "sm_90");
  p.sm_count = 132;
  return p;
}

static gt_db_row_t make_row(int64_t m, int64_t n, int64_t k, const char *instance, double t,
                            double base, const char *timing) {
  gt_db_row_t r;
  memset(&r, 0, sizeof r);
  r.key = make_key(m, n, k);
  snprintf(r.provider, sizeof r.provider, "kernels");
  snprintf(r.lib, sizeof r.lib, "-");
  snprintf(r.instance, sizeof r.instance, "%s", instance);
  r.time_us = t;
  r.baseline_us = base;
  r.speedup = base / t;
  r.error = 0.00125;
  r.error_bound = 0.0078125;
  snprintf(r.timing, sizeof r.timing, "%s", timing);
  r.rounds = 20;
  r.spread_pct = 1.5;
  r.sm_clock_mhz = 1980;
  r.splitk_searched = true;
  r.throttled = false;
  snprintf(r.baseline, sizeof r.baseline, "cublasGemmEx_default");
  snprintf(r.device, sizeof r.device, "NVIDIA H200");
  r.device_mem_gib = 139;
  /* The winner at 80% of a bandwidth floor. */
  r.floor_us = 0.8 * t;
  r.floor_bound = GT_BOUND_BANDWIDTH;
  r.floor_pct = 80;
  return r;
}

/* Three rows, two validators: line 1 format, 2-3 validators, 4 header, 5-7 rows (sorted by key
 * text, so the row order in the file is fixed by the keys below). */
static void make_db(gt_db_t *db) {
  gt_db_init(db);
  assert_int_equal(gt_db_set_validator(db, "gemmtune", "0.1.0"), GT_OK);
  assert_int_equal(gt_db_set_validator(db, "created", "2026-11-29T10:00:00Z"), GT_OK);
  /* Each row records another outcome of its live confirmation: line 5 confirmed (with its live
   * times), line 6 skipped, line 7 off. */
  gt_db_row_t r = make_row(4096, 16, 4096, "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2", 10.5, 12.25,
                           "cold-graph");
  gt_db_row_set_live(&r, GT_LIVE_CONFIRMED, 10.75, 12.125);
  assert_int_equal(gt_db_put(db, &r), GT_OK);
  r = make_row(4096, 2624, 4096, "gt_sm90_wgmma_bf16_tn_t128x128x64_s4", 150.125, 171.5,
               "cold-graph");
  gt_db_row_set_live(&r, GT_LIVE_SKIPPED, 0, 0);
  assert_int_equal(gt_db_put(db, &r), GT_OK);
  r = make_row(8192, 128, 1024, "gt_sm90_mma_bf16_tn_t64x64x32_s3", 20.25, 21.5, "warm-graph");
  gt_db_row_set_live(&r, GT_LIVE_OFF, 0, 0);
  assert_int_equal(gt_db_put(db, &r), GT_OK);
}

static char *good_text(void) {
  gt_db_t db;
  make_db(&db);
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "good.csv");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  gt_db_free(&db);
  char *t = gt_test_read_file(p);
  assert_non_null(t);
  unlink(p);
  rmdir(dir);
  return t;
}

/* Names in dir other than "." and "..", joined by spaces (for temp-file leak checks). */
static void list_dir(const char *dir, char *out, size_t cap) {
  out[0] = '\0';
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      snprintf(out + strlen(out), cap - strlen(out), "%s ", e->d_name);
  closedir(d);
}

static void rm_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(gt_test_path(dir, e->d_name));
  closedir(d);
  rmdir(dir);
}

static void assert_rows_equal(const gt_db_row_t *a, const gt_db_row_t *b) {
  assert_true(gt_problem_equal(&a->key, &b->key));
  assert_string_equal(a->provider, b->provider);
  assert_string_equal(a->lib, b->lib);
  assert_string_equal(a->instance, b->instance);
  assert_true(a->time_us == b->time_us);
  assert_true(a->baseline_us == b->baseline_us);
  assert_true(fabs(a->speedup - b->speedup) <= 1e-5 * a->speedup);
  assert_true(a->error == b->error);
  assert_true(a->error_bound == b->error_bound);
  assert_string_equal(a->timing, b->timing);
  assert_int_equal(a->rounds, b->rounds);
  assert_true(a->spread_pct == b->spread_pct);
  assert_int_equal(a->sm_clock_mhz, b->sm_clock_mhz);
  assert_int_equal(a->splitk_searched, b->splitk_searched);
  assert_int_equal(a->throttled, b->throttled);
  assert_string_equal(a->baseline, b->baseline);
  assert_string_equal(a->device[0] ? a->device : "-", b->device[0] ? b->device : "-");
  assert_int_equal(a->device_mem_gib, b->device_mem_gib);
  assert_true(fabs(a->floor_us - b->floor_us) <= 1e-8 * a->floor_us);
  assert_int_equal(a->floor_bound, b->floor_bound);
  assert_true(fabs(a->floor_pct - b->floor_pct) <= 1e-5 * a->floor_pct);
  assert_int_equal(a->live, b->live);
  assert_true(fabs(a->live_us - b->live_us) <= 1e-8 * a->live_us);
  assert_true(fabs(a->live_baseline_us - b->live_baseline_us) <= 1e-8 * a->live_baseline_us);
  assert_true(fabs(a->live_speedup - b->live_speedup) <= 1e-5 * a->live_speedup);
}

/* ---- round trip --------------------------------------------------------------------------- */

static void test_round_trip_equal(void **state) {
  gt_db_t db, back;
  make_db(&db);
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "db.csv");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_string_equal(back.path, p);
  assert_int_equal(back.n, db.n);
  assert_int_equal(back.nval, 2);
  assert_string_equal(gt_db_get_validator(&back, "gemmtune"), "0.1.0");
  assert_string_equal(gt_db_get_validator(&back, "created"), "2026-11-29T10:00:00Z");
  for (size_t i = 0; i < db.n; i++) {
    const gt_db_row_t *r = gt_db_lookup(&back, &db.rows[i].key);
    assert_non_null(r);
    assert_rows_equal(&db.rows[i], r);
  }
  /* Second generation is byte-identical: formats are stable and rows sorted. */
  char *first = gt_test_read_file(p);
  const char *p2 = gt_test_path(dir, "db2.csv");
  assert_int_equal(gt_db_write(&back, p2), GT_OK);
  char *second = gt_test_read_file(p2);
  assert_string_equal(first, second);
  /* The layout the header comment documents. */
  assert_memory_equal(first, GT_DB_FORMAT_LINE "\n#gemmtune=0.1.0\n#created=",
                      strlen(GT_DB_FORMAT_LINE "\n#gemmtune=0.1.0\n#created="));
  assert_non_null(strstr(first, gt_db_header()));
  free(first);
  free(second);
  gt_db_free(&db);
  gt_db_free(&back);
  rm_dir(dir);
}

static void test_header_has_52_columns_in_order(void **state) {
  const char *h = gt_db_header();
  int commas = 0;
  for (const char *q = h; *q; q++) commas += *q == ',';
  assert_int_equal(commas + 1, GT_DB_NCOLS);
  assert_int_equal(GT_DB_NCOLS, 52);
  assert_memory_equal(h, "op,a_type,b_type,", 17);
  const char *tail = "sm_count,provider,lib,instance,time_us,baseline_us,speedup,error,error_bound,"
                     "timing,rounds,spread_pct,sm_clock_mhz,splitk_searched,throttled,baseline,"
                     "device,device_mem_gib,floor_us,floor_bound,floor_pct,"
                     "scale_a,scale_b,fast_accum,scale_d,amax_d,"
                     "live,live_us,live_baseline_us,live_speedup";
  assert_string_equal(h + strlen(h) - strlen(tail), tail);
}

/* A file written before rows carried their floor (the header ends at 'baseline', 38 columns, as
 * every DB deployed until then): it reads, its rows' floors unknown, and is written back with the
 * new columns ('-' and zeros), which read again. */
static const char k_v1_db[] =
    "#gemmtune-db 1\n"
    "#gemmtune=0.1.0\n"
    "#device=NVIDIA H200\n"
    "op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,"
    "stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,instance,time_us,"
    "baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,sm_clock_mhz,"
    "splitk_searched,throttled,baseline\n"
    "gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,1,4096,4096,4096,4096,1,0,0,0,none,1,sm_90,132,"
    "kernels,gemmtune-kernels=1,gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4,10.256889,12.5982223,"
    "1.22827,0.0016691,0.00784302,cold-graph,15,0.475405,1980,1,0,cublas_gemmex_default\n";

static void test_older_db_reads(void **state) {
  gt_db_t db, back;
  assert_int_equal(gt_db_parse("v1.db", k_v1_db, &db), GT_OK);
  assert_int_equal(db.n, 1);
  assert_string_equal(db.rows[0].instance, "gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4");
  assert_true(db.rows[0].floor_us == 0 && db.rows[0].floor_pct == 0);
  assert_int_equal(db.rows[0].floor_bound, GT_BOUND_NONE);
  assert_string_equal(gt_db_get_validator(&db, "device"), "NVIDIA H200");
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "v2.db");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  char *text = gt_test_read_file(p);
  assert_non_null(strstr(text, gt_db_header()));
  /* Written back as format 4: the device from the #device line, memory and floor unknown, no
   * fp8 scaling, no live confirmation. */
  assert_non_null(
      strstr(text, ",cublas_gemmex_default,NVIDIA H200,0,0,-,0,none,none,0,0,0,-,0,0,0\n"));
  assert_string_equal(db.rows[0].device, "NVIDIA H200");
  assert_int_equal(db.rows[0].device_mem_gib, 0);
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_rows_equal(&db.rows[0], &back.rows[0]);
  free(text);
  gt_db_free(&db);
  gt_db_free(&back);
  rm_dir(dir);
}

/* A format-2 file (before the fp8 key columns; what every DB was until fp8 keys): it reads, its
 * rows keyed without fp8 scaling, and is written back as format 3 with those columns at their
 * defaults, which read again to the same rows. */
static void test_format2_db_reads(void **state) {
  (void)state;
  char v2[4096];
  snprintf(v2, sizeof v2,
           "#gemmtune-db 2\n#gemmtune=0.1.0\n"
           "op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,"
           "batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,"
           "instance,time_us,baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,"
           "sm_clock_mhz,splitk_searched,throttled,baseline,device,device_mem_gib,floor_us,"
           "floor_bound,floor_pct\n"
           "gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,1,4096,4096,4096,4096,1,0,0,0,none,1,sm_90,"
           "132,kernels,gemmtune-kernels=1,gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4,10.256889,"
           "12.5982223,1.22827,0.0016691,0.00784302,cold-graph,15,0.475405,1980,1,0,"
           "cublas_gemmex_default,NVIDIA H200,139,0,-,0\n");
  gt_db_t db, back;
  assert_int_equal(gt_db_parse("v2.db", v2, &db), GT_OK);
  assert_int_equal(db.n, 1);
  assert_int_equal(db.rows[0].key.scale_a, GT_SCALE_NONE);
  assert_false(db.rows[0].key.fast_accum);
  assert_string_equal(db.rows[0].device, "NVIDIA H200");
  assert_int_equal(db.rows[0].device_mem_gib, 139);
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "v3.db");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  char *text = gt_test_read_file(p);
  assert_memory_equal(text, "#gemmtune-db 4\n", 15);
  assert_non_null(strstr(text, ",NVIDIA H200,139,0,-,0,none,none,0,0,0,-,0,0,0\n"));
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_rows_equal(&db.rows[0], &back.rows[0]);
  /* The key of a format-2 row is the key that row was tuned for: a bf16 lookup hits it. */
  gt_problem_t k = db.rows[0].key;
  assert_non_null(gt_db_lookup(&back, &k));
  free(text);
  gt_db_free(&db);
  gt_db_free(&back);
  rm_dir(dir);
}

/* A format-3 file (before the live confirmation; what every DB was until it): it reads, its rows
 * recording no confirmation, and is written back as format 4 with the live columns '-' and
 * zeros, which read again to the same rows. */
static void test_format3_db_reads(void **state) {
  (void)state;
  char v3[4096];
  snprintf(v3, sizeof v3,
           "#gemmtune-db 3\n#gemmtune=0.1.0\n"
           "op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,"
           "batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,"
           "instance,time_us,baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,"
           "sm_clock_mhz,splitk_searched,throttled,baseline,device,device_mem_gib,floor_us,"
           "floor_bound,floor_pct,scale_a,scale_b,fast_accum,scale_d,amax_d\n"
           "gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,1,4096,4096,4096,4096,1,0,0,0,none,1,sm_90,"
           "132,kernels,gemmtune-kernels=1,gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4,10.256889,"
           "12.5982223,1.22827,0.0016691,0.00784302,cold-graph,15,0.475405,1980,1,0,"
           "cublas_gemmex_default,NVIDIA H200,139,6.99392,bandwidth,68.1875,none,none,0,0,0\n");
  gt_db_t db, back;
  assert_int_equal(gt_db_parse("v3.db", v3, &db), GT_OK);
  assert_int_equal(db.n, 1);
  assert_int_equal(db.rows[0].live, GT_LIVE_NONE);
  assert_true(db.rows[0].live_us == 0 && db.rows[0].live_baseline_us == 0 &&
              db.rows[0].live_speedup == 0);
  assert_int_equal(db.rows[0].floor_bound, GT_BOUND_BANDWIDTH);
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "v4.db");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  char *text = gt_test_read_file(p);
  assert_memory_equal(text, "#gemmtune-db 4\n", 15);
  assert_non_null(strstr(text, ",68.1875,none,none,0,0,0,-,0,0,0\n"));
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_rows_equal(&db.rows[0], &back.rows[0]);
  free(text);
  gt_db_free(&db);
  gt_db_free(&back);
  rm_dir(dir);
}

/* fp8 keys round-trip through the file with every scaling field, and keys that differ only in
 * one of them are different rows. */
static void test_fp8_keys_round_trip(void **state) {
  (void)state;
  gt_db_t db, back;
  gt_db_init(&db);
  static const struct {
    gt_dtype_t a, b, d;
    gt_scale_mode_t sa, sb;
    bool fast, sd, amax;
  } k_cases[] = {
      {GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0},
      {GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 1, 0, 0},
      {GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, GT_SCALE_OUTER, GT_SCALE_OUTER, 0, 0, 0},
      {GT_DT_F8E4M3FN, GT_DT_F8E5M2, GT_DT_F16, GT_SCALE_BLK128X128, GT_SCALE_BLK1X128, 0, 0, 0},
      {GT_DT_F8E5M2, GT_DT_F8E4M3FN, GT_DT_F32, GT_SCALE_NONE, GT_SCALE_TENSOR, 0, 0, 1},
      {GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 1, 1},
  };
  const int n = (int)(sizeof k_cases / sizeof k_cases[0]);
  for (int i = 0; i < n; i++) {
    gt_db_row_t r = make_row(4096, 16, 4096, "gt_cpu_tile_f32_nn_t32x32x32", 10.0, 12.0,
                             "cold-graph");
    r.key.a_type = k_cases[i].a;
    r.key.b_type = k_cases[i].b;
    r.key.c_type = r.key.d_type = k_cases[i].d;
    r.key.scale_a = k_cases[i].sa;
    r.key.scale_b = k_cases[i].sb;
    r.key.fast_accum = k_cases[i].fast;
    r.key.scale_d = k_cases[i].sd;
    r.key.amax_d = k_cases[i].amax;
    r.error_bound = 0.1;
    r.speedup = 0;
    assert_int_equal(gt_db_put(&db, &r), GT_OK);
  }
  assert_int_equal(db.n, n);
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "fp8.db");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_int_equal(back.n, n);
  for (int i = 0; i < n; i++) {
    const gt_db_row_t *r = gt_db_lookup(&back, &db.rows[i].key);
    assert_non_null(r);
    assert_true(gt_problem_equal(&r->key, &db.rows[i].key));
  }
  /* The same shape without scaling finds none of them. */
  gt_problem_t plain = db.rows[0].key;
  plain.scale_a = plain.scale_b = GT_SCALE_NONE;
  assert_null(gt_db_lookup(&back, &plain));
  gt_db_free(&db);
  gt_db_free(&back);
  rm_dir(dir);
}

/* Times keep 9 significant digits even when the measured value has more. */
static void test_round_trip_time_precision(void **state) {
  gt_db_t db, back;
  gt_db_init(&db);
  gt_db_row_t r = make_row(512, 7, 256, "gt_cpu_tile_f32_nn_t32x32x32", 12.3456789123,
                           13.9876543219, "cold-host");
  r.speedup = 0; /* filled in by put */
  assert_int_equal(gt_db_put(&db, &r), GT_OK);
  assert_true(fabs(db.rows[0].speedup - 13.9876543219 / 12.3456789123) < 1e-12);
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "db.csv");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_int_equal(back.n, 1);
  assert_true(fabs(back.rows[0].time_us - r.time_us) <= 1e-8 * r.time_us);
  assert_true(fabs(back.rows[0].baseline_us - r.baseline_us) <= 1e-8 * r.baseline_us);
  gt_db_free(&db);
  gt_db_free(&back);
  rm_dir(dir);
}

/* ---- malformed files ---------------------------------------------------------------------- */

/* Each case edits the good file (format line 1, validators 2-3, header 4, rows 5-7) and names the
 * line and the text the message must contain. */
typedef enum edit_kind {
  E_SET_CELL,     /* line, column name -> value */
  E_DROP_COLUMNS, /* line: keep only the first 3 columns */
  E_EXTRA_COLUMN, /* line: append ",x" */
  E_REPLACE_LINE, /* line -> value (whole line) */
  E_COPY_LINE,    /* line := copy of line `src` */
  E_DELETE_LINE,  /* remove line */
  E_INSERT_LINE,  /* insert value before line */
  E_TRUNCATE,     /* drop the final newline */
  E_EMPTY,        /* empty file */
} edit_kind_t;

typedef struct bad_case {
  const char *name;
  edit_kind_t kind;
  int line;
  const char *column;
  const char *value;
  int src;
  int want_line;      /* line the message must name */
  const char *want_1; /* substrings the message must contain */
  const char *want_2;
} bad_case_t;

static const bad_case_t k_bad[] = {
    {"missing columns", E_DROP_COLUMNS, 6, NULL, NULL, 0, 6, "3 columns, expected 52",
     "missing 'c_type'"},
    {"extra column", E_EXTRA_COLUMN, 5, NULL, NULL, 0, 5, "53 columns, expected 52",
     "live_speedup"},
    {"live state not a word of ours", E_SET_CELL, 5, "live", "yes", 0, 5, "field 'live'",
     "expected confirmed, off, skipped or -"},
    {"confirmed without live times", E_SET_CELL, 5, "live_us", "0", 0, 5, "field 'live_us'",
     "must be > 0 when confirmed"},
    {"confirmed slower live than the entry point", E_SET_CELL, 5, "live_us", "13", 0, 5,
     "field 'live_us'", "not below live_baseline_us"},
    {"live speedup inconsistent", E_SET_CELL, 5, "live_speedup", "2", 0, 5,
     "field 'live_speedup'", "does not match live_baseline_us/live_us"},
    {"live times on a skipped row", E_SET_CELL, 6, "live_us", "140", 0, 6, "field 'live_us'",
     "without a confirmation (live 'skipped'"},
    {"live speedup on a row never confirmed", E_SET_CELL, 7, "live_speedup", "1.1", 0, 7,
     "field 'live_us'", "without a confirmation (live 'off'"},
    {"floor share inconsistent", E_SET_CELL, 5, "floor_pct", "50", 0, 5, "field 'floor_pct'",
     "does not match 100 * floor_us / time_us"},
    {"floor without a bound", E_SET_CELL, 6, "floor_bound", "-", 0, 6, "field 'floor_bound'",
     "'-' with floor_us"},
    {"bound not a word of ours", E_SET_CELL, 6, "floor_bound", "memory", 0, 6,
     "field 'floor_bound'", "expected bandwidth, compute or -"},
    {"bound without a floor", E_SET_CELL, 7, "floor_us", "0", 0, 7, "field 'floor_bound'",
     "without a floor"},
    {"bad integer m", E_SET_CELL, 5, "m", "x", 0, 5, "field 'm'", "not an integer: 'x'"},
    {"negative n", E_SET_CELL, 6, "n", "-5", 0, 6, "field 'n'", NULL},
    {"zero k", E_SET_CELL, 7, "k", "0", 0, 7, "field 'k'", NULL},
    {"ld below rows", E_SET_CELL, 5, "ldc", "8", 0, 5, "field 'ldc'", NULL},
    {"bad number time_us", E_SET_CELL, 5, "time_us", "12.5us", 0, 5, "field 'time_us'",
     "not a number: '12.5us'"},
    {"nan error", E_SET_CELL, 6, "error", "nan", 0, 6, "field 'error'", "not a number"},
    {"bad integer rounds", E_SET_CELL, 7, "rounds", "2.5", 0, 7, "field 'rounds'",
     "not an integer"},
    {"bad boolean", E_SET_CELL, 5, "throttled", "yes", 0, 5, "field 'throttled'",
     "expected 0 or 1"},
    {"bad type", E_SET_CELL, 6, "a_type", "bf17", 0, 6, "field 'a_type'", "bf17"},
    {"alias type not canonical", E_SET_CELL, 6, "d_type", "bfloat16", 0, 6, "field 'd_type'",
     "canonical"},
    {"empty field", E_SET_CELL, 5, "instance", "", 0, 5, "field 'instance'", "empty"},
    {"whitespace in field", E_SET_CELL, 5, "provider", " kernels", 0, 5, "field 'provider'",
     "whitespace"},
    {"quote in field", E_SET_CELL, 5, "lib", "\"-\"", 0, 5, "field 'lib'", "double quote"},
    {"regression row", E_SET_CELL, 6, "time_us", "200", 0, 6, "field 'time_us'",
     "not below baseline_us"},
    {"tie with baseline", E_SET_CELL, 7, "baseline_us", "20.25", 0, 7, "field 'time_us'",
     "not below baseline_us"},
    {"speedup inconsistent", E_SET_CELL, 5, "speedup", "3", 0, 5, "field 'speedup'", NULL},
    {"error above bound", E_SET_CELL, 5, "error", "0.5", 0, 5, "field 'error'",
     "exceeds error_bound"},
    {"duplicate key", E_COPY_LINE, 7, NULL, NULL, 5, 7, "duplicate key (same as line 5)", NULL},
    {"wrong format line", E_REPLACE_LINE, 1, NULL, "op,a_type", 0, 1, "not a gemmtune DB",
     "expected '#gemmtune-db 4', got 'op,a_type'"},
    {"future format version", E_REPLACE_LINE, 1, NULL, "#gemmtune-db 5", 0, 1,
     "unsupported DB format version '5'", NULL},
    {"format 3 line over a format-4 header", E_REPLACE_LINE, 1, NULL, "#gemmtune-db 3", 0, 4,
     "unexpected extra column 'live' after 'amax_d'", "format-3 file has no live columns"},
    {"format 2 line over a format-4 header", E_REPLACE_LINE, 1, NULL, "#gemmtune-db 2", 0, 4,
     "unexpected extra column 'scale_a' after 'floor_pct'", "format-2 file has no fp8 key"},
    {"unknown scale mode", E_SET_CELL, 5, "scale_a", "rowwise", 0, 5, "field 'scale_a'",
     "unknown scale mode 'rowwise'"},
    {"scale on a bf16 operand", E_SET_CELL, 5, "scale_b", "tensor_f32", 0, 5, "field 'scale_b'",
     "fp8 only"},
    {"fast accumulation not a boolean", E_SET_CELL, 6, "fast_accum", "yes", 0, 6,
     "field 'fast_accum'", "expected 0 or 1"},
    {"format 1 line over a format-2 header", E_REPLACE_LINE, 1, NULL, "#gemmtune-db 1", 0, 4,
     "unexpected extra column 'device' after 'baseline'", "format-1 file has no device columns"},
    {"negative device memory", E_SET_CELL, 6, "device_mem_gib", "-1", 0, 6,
     "field 'device_mem_gib'", "must be >= 0"},
    {"quote in the device name", E_SET_CELL, 5, "device", "H\"200", 0, 5,
     "field 'device'", "double quote"},
    {"truncated last line", E_TRUNCATE, 0, NULL, NULL, 0, 7, "truncated last line",
     "no newline at end of file"},
    {"empty file", E_EMPTY, 0, NULL, NULL, 0, 1, "empty file", NULL},
    {"missing header", E_DELETE_LINE, 4, NULL, NULL, 0, 4, "missing header row", NULL},
    {"header column renamed", E_SET_CELL, 4, "spread_pct", "spread", 0, 4,
     "header column 34 is 'spread', expected 'spread_pct'", NULL},
    {"control: unchanged line is accepted", E_REPLACE_LINE, 2, NULL, "#gemmtune=0.1.0", 0, 0,
     NULL, NULL},
    {"validator without value", E_REPLACE_LINE, 3, NULL, "#created", 0, 3, "validator line",
     "#name=value"},
    {"validator given twice", E_REPLACE_LINE, 3, NULL, "#gemmtune=0.2.0", 0, 3,
     "validator 'gemmtune' given twice", NULL},
    {"validator after header", E_INSERT_LINE, 6, NULL, "#late=1", 0, 6, "after the header", NULL},
    {"blank line between rows", E_INSERT_LINE, 6, NULL, "", 0, 6, "empty line", NULL},
};

/* The index of column `name` in the file. */
static int column_of(const char *name) {
  const char *h = gt_db_header();
  int c = 0;
  for (const char *q = h;; c++) {
    size_t len = strcspn(q, ",");
    if (len == strlen(name) && strncmp(q, name, len) == 0) return c;
    if (!q[len]) break;
    q += len + 1;
  }
  fail_msg("no column %s", name);
  return -1;
}

/* Apply a case's edit to text (lines split on '\n'); returns a malloc'ed file. */
static char *apply_edit(const char *text, const bad_case_t *c) {
  if (c->kind == E_EMPTY) return strdup("");
  char *lines[64];
  int n = 0;
  char *copy = strdup(text);
  for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
    lines[n++] = l;
  size_t cap = strlen(text) + 4096;
  char *out = calloc(1, cap);
  char cellbuf[2048];
  for (int i = 1; i <= n; i++) {
    const char *l = lines[i - 1];
    if (c->line == i && c->kind == E_DELETE_LINE) continue;
    if (c->line == i && c->kind == E_INSERT_LINE)
      snprintf(out + strlen(out), cap - strlen(out), "%s\n", c->value);
    if (c->line == i && c->kind == E_REPLACE_LINE) l = c->value;
    if (c->line == i && c->kind == E_COPY_LINE) l = lines[c->src - 1];
    if (c->line == i && c->kind == E_EXTRA_COLUMN) {
      snprintf(cellbuf, sizeof cellbuf, "%s,x", l);
      l = cellbuf;
    }
    if (c->line == i && c->kind == E_DROP_COLUMNS) {
      snprintf(cellbuf, sizeof cellbuf, "%s", l);
      char *q = cellbuf;
      for (int k = 0; k < 3; k++) q = strchr(q, ',') + (k < 2);
      *q = '\0';
      l = cellbuf;
    }
    if (c->line == i && c->kind == E_SET_CELL) {
      int col = column_of(c->column);
      const char *q = l;
      for (int k = 0; k < col; k++) q = strchr(q, ',') + 1;
      size_t len = strcspn(q, ",");
      snprintf(cellbuf, sizeof cellbuf, "%.*s%s%s", (int)(q - l), l, c->value, q + len);
      l = cellbuf;
    }
    snprintf(out + strlen(out), cap - strlen(out), "%s\n", l);
  }
  if (c->kind == E_TRUNCATE) out[strlen(out) - 1] = '\0';
  free(copy);
  return out;
}

static void test_malformed_rejected(void **state) {
  char *good = good_text();
  const char *dir = gt_test_tmpdir();
  int failed = 0;
  for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; i++) {
    const bad_case_t *c = &k_bad[i];
    char *text = apply_edit(good, c);
    const char *p = gt_test_path(dir, "bad.csv");
    gt_test_write_file(p, text);
    gt_db_t db;
    gt_status_t s = gt_db_read(p, &db);
    const char *msg = gt_err_msg();
    char where[1100];
    snprintf(where, sizeof where, "%s:%d:", p, c->want_line);
    if (!c->want_1) {
      /* Control case: proves the editing itself does not break a file. */
      if (s != GT_OK) printf("FAIL %s: expected GT_OK, got %s: %s\n", c->name, gt_status_name(s), msg), failed++;
      gt_db_free(&db);
      free(text);
      continue;
    }
    bool ok = s == GT_ERR_DATA && strncmp(msg, where, strlen(where)) == 0 &&
              strstr(msg, c->want_1) && (!c->want_2 || strstr(msg, c->want_2)) && db.n == 0 &&
              db.nval == 0 && db.rows == NULL;
    printf("%s %s: %s\n", ok ? "ok  " : "FAIL", c->name, msg);
    if (!ok) {
      printf("     expected GT_ERR_DATA '%s ...%s...%s', got %s\n", where, c->want_1,
             c->want_2 ? c->want_2 : "", gt_status_name(s));
      failed++;
    }
    gt_db_free(&db);
    free(text);
  }
  printf("malformed: %zu cases, %d failed\n", sizeof k_bad / sizeof k_bad[0], failed);
  assert_int_equal(failed, 0);
  free(good);
  rm_dir(dir);
}

static void test_missing_file_is_not_found(void **state) {
  gt_db_t db;
  /* A missing input is GT_ERR_NOT_FOUND: exit 66, as the README's table says. */
  assert_int_equal(gt_db_read("/nonexistent/dir/db.csv", &db), GT_ERR_NOT_FOUND);
  assert_non_null(strstr(gt_err_msg(), "/nonexistent/dir/db.csv"));
  assert_int_equal(db.n, 0);
}

static void test_crlf_accepted(void **state) {
  char *good = good_text();
  size_t n = strlen(good);
  char *crlf = calloc(1, 2 * n + 1);
  for (size_t i = 0, j = 0; i < n; i++) {
    if (good[i] == '\n') crlf[j++] = '\r';
    crlf[j++] = good[i];
  }
  gt_db_t db;
  assert_int_equal(gt_db_parse("crlf.csv", crlf, &db), GT_OK);
  assert_int_equal(db.n, 3);
  gt_db_free(&db);
  free(crlf);
  free(good);
}

/* ---- writes never damage the target ------------------------------------------------------- */

static void test_failed_write_leaves_target_identical(void **state) {
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "db.csv");
  gt_db_t db;
  make_db(&db);
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  char *before = gt_test_read_file(p);

  /* A regression row cannot get in through put ... */
  gt_db_row_t slow = make_row(64, 64, 64, "gt_cpu_tile_f32_nn_t32x32x32", 9.0, 8.0, "cold-host");
  assert_int_equal(gt_db_put(&db, &slow), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "field 'time_us'"));
  assert_int_equal(db.n, 3);
  /* ... and one appended by hand is refused by the writer. */
  db.rows[1].time_us = db.rows[1].baseline_us + 1;
  assert_int_equal(gt_db_write(&db, p), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "not written"));
  assert_non_null(strstr(gt_err_msg(), "field 'time_us'"));
  char *after = gt_test_read_file(p);
  assert_string_equal(before, after);
  char names[1024];
  list_dir(dir, names, sizeof names);
  assert_string_equal(names, "db.csv ");

  /* A value the reader would reject (a comma would shift every column) is refused too. */
  db.rows[1].time_us = 100;
  db.rows[1].speedup = db.rows[1].baseline_us / 100;
  snprintf(db.rows[1].instance, sizeof db.rows[1].instance, "a,b");
  assert_int_equal(gt_db_write(&db, p), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "field 'instance'"));
  free(after);
  after = gt_test_read_file(p);
  assert_string_equal(before, after);

  free(before);
  free(after);
  gt_db_free(&db);
  rm_dir(dir);
}

static void test_atomic_write_leaves_no_temp_files(void **state) {
  const char *dir = gt_test_tmpdir();
  gt_db_t db;
  make_db(&db);
  const char *p = gt_test_path(dir, "db.csv");
  for (int i = 0; i < 3; i++) assert_int_equal(gt_db_write(&db, p), GT_OK);
  char names[1024];
  list_dir(dir, names, sizeof names);
  assert_string_equal(names, "db.csv ");

  /* Failure after the temp file exists: a file-size limit makes the write fail part way. The
   * temp file is removed and the target keeps its old bytes. */
  char *before = gt_test_read_file(p);
  struct rlimit old, lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = 64;
  signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  gt_status_t s = gt_db_write(&db, p);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  assert_int_equal(s, GT_ERR_IO);
  assert_non_null(strstr(gt_err_msg(), "write"));
  list_dir(dir, names, sizeof names);
  assert_string_equal(names, "db.csv ");
  char *after = gt_test_read_file(p);
  assert_string_equal(before, after);
  free(before);
  free(after);

  /* A directory in the way is refused before anything is created. */
  const char *sub = gt_test_path(dir, "sub");
  assert_int_equal(mkdir(sub, 0755), 0);
  assert_int_equal(gt_file_write_atomic(sub, "x\n", 2), GT_ERR_IO);
  assert_non_null(strstr(gt_err_msg(), "not a regular file"));
  rmdir(sub);

  /* Missing directory: GT_ERR_IO naming the path. */
  const char *nowhere = gt_test_path(dir, "missing/db.csv");
  assert_int_equal(gt_db_write(&db, nowhere), GT_ERR_IO);
  assert_non_null(strstr(gt_err_msg(), nowhere));

  /* The replaced file keeps the mode of the one it replaces. */
  assert_int_equal(chmod(p, 0640), 0);
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);

  /* A symlink at the target is refused: the link stays a link and its target keeps its bytes
   * (a planted link must not aim the write at a file the caller did not name). */
  const char *link = gt_test_path(dir, "current.csv");
  assert_int_equal(symlink("db.csv", link), 0);
  char *target_before = gt_test_read_file(p);
  assert_int_equal(gt_file_write_atomic(link, GT_DB_FORMAT_LINE "\n", strlen(GT_DB_FORMAT_LINE) + 1),
                   GT_ERR_IO);
  assert_non_null(strstr(gt_err_msg(), "symbolic link"));
  struct stat lst;
  assert_int_equal(lstat(link, &lst), 0);
  assert_true(S_ISLNK(lst.st_mode));
  char *t = gt_test_read_file(p);
  assert_string_equal(t, target_before);
  free(t);
  free(target_before);
  unlink(link);

  /* A temp file of a writer killed before its rename (a pid that no longer runs, no lock held)
   * is removed by the next write; one whose writer still runs is left alone. */
  char stale[600], live[600];
  snprintf(stale, sizeof stale, "%s.tmp.%d.AbCdEf", p, INT32_MAX - 7);
  snprintf(live, sizeof live, "%s.tmp.%ld.AbCdEf", p, (long)getppid());
  FILE *sf = fopen(stale, "w");
  FILE *lf = fopen(live, "w");
  assert_non_null(sf);
  assert_non_null(lf);
  fclose(sf);
  fclose(lf);
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  assert_int_equal(access(stale, F_OK), -1);
  assert_int_equal(access(live, F_OK), 0);
  unlink(live);
  gt_db_free(&db);
  rm_dir(dir);
}

/* ---- lookup and explain ------------------------------------------------------------------- */

typedef struct lookup_case {
  const char *name;
  int64_t m, n, k;
  const char *arch;
  int sm_count;
  const char *want_instance; /* NULL = miss */
} lookup_case_t;

static const lookup_case_t k_lookup[] = {
    {"hit decode", 4096, 16, 4096, "sm_90", 132, "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2"},
    {"hit prefill", 4096, 2624, 4096, "sm_90", 132, "gt_sm90_wgmma_bf16_tn_t128x128x64_s4"},
    {"miss on n", 4096, 2688, 4096, "sm_90", 132, NULL},
    {"miss on sm_count", 4096, 16, 4096, "sm_90", 114, NULL},
    {"miss on arch", 4096, 16, 4096, "sm_80", 132, NULL},
};

static void test_lookup_hit_miss(void **state) {
  gt_db_t db;
  make_db(&db);
  for (size_t i = 0; i < sizeof k_lookup / sizeof k_lookup[0]; i++) {
    const lookup_case_t *c = &k_lookup[i];
    gt_problem_t q = make_key(c->m, c->n, c->k);
    snprintf(q.arch, sizeof q.arch, "%s", c->arch);
    q.sm_count = c->sm_count;
    const gt_db_row_t *r = gt_db_lookup(&db, &q);
    printf("%s: %s\n", c->name, r ? r->instance : "(miss)");
    if (c->want_instance) {
      assert_non_null(r);
      assert_string_equal(r->instance, c->want_instance);
    } else {
      assert_null(r);
    }
  }
  /* Many rows: the index grows and every key is still found, absent keys are not. */
  for (int i = 1; i <= 500; i++) {
    gt_db_row_t r = make_row(64 * i, 8, 128, "gt_cpu_tile_f32_nn_t32x32x32", 1.0, 2.0, "cold-host");
    assert_int_equal(gt_db_put(&db, &r), GT_OK);
  }
  assert_int_equal(db.n, 503);
  for (int i = 1; i <= 500; i++) {
    gt_problem_t q = make_key(64 * i, 8, 128);
    assert_non_null(gt_db_lookup(&db, &q));
    q.n = 9;
    q.ldb = 128;
    assert_null(gt_db_lookup(&db, &q));
  }
  /* put replaces a row with the same key rather than adding one. */
  gt_db_row_t r = make_row(4096, 16, 4096, "gt_replacement", 9.0, 12.25, "cold-graph");
  assert_int_equal(gt_db_put(&db, &r), GT_OK);
  assert_int_equal(db.n, 503);
  assert_string_equal(gt_db_lookup(&db, &r.key)->instance, "gt_replacement");
  gt_db_free(&db);
}

typedef struct explain_case {
  const char *name;
  int64_t m, n, k;
  int sm_count;
  const char *want_first;   /* instance of the nearest row */
  int want_nfields;
  const char *want_diff;    /* exact diff text of the nearest row */
} explain_case_t;

static const explain_case_t k_explain[] = {
    /* ldb follows n for TN (ldb = k), so only n differs. */
    {"one field differs (n)", 4096, 2688, 4096, 132, "gt_sm90_wgmma_bf16_tn_t128x128x64_s4", 1,
     "n: 2688 vs 2624"},
    {"one field differs (sm_count)", 4096, 16, 4096, 114, "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2",
     1, "sm_count: 114 vs 132"},
    {"exact hit ranks first", 8192, 128, 1024, 132, "gt_sm90_mma_bf16_tn_t64x64x32_s3", 0, ""},
    /* n differs from both 4096-rows; 32 is nearer 16 than 2624 in log distance. */
    {"tie on fields broken by distance", 4096, 32, 4096, 132,
     "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2", 1, "n: 32 vs 16"},
};

static void test_explain_miss(void **state) {
  gt_db_t db;
  make_db(&db);
  for (size_t i = 0; i < sizeof k_explain / sizeof k_explain[0]; i++) {
    const explain_case_t *c = &k_explain[i];
    gt_problem_t q = make_key(c->m, c->n, c->k);
    q.sm_count = c->sm_count;
    gt_db_near_t near[3];
    size_t got = gt_db_explain(&db, &q, near, 3);
    printf("%s: %s (%d fields) '%s'\n", c->name, near[0].row->instance, near[0].nfields,
           near[0].diff);
    assert_int_equal(got, 3);
    assert_string_equal(near[0].row->instance, c->want_first);
    assert_int_equal(near[0].nfields, c->want_nfields);
    assert_string_equal(near[0].diff, c->want_diff);
    for (size_t j = 1; j < got; j++)
      assert_true(near[j - 1].nfields < near[j].nfields ||
                  (near[j - 1].nfields == near[j].nfields &&
                   near[j - 1].distance <= near[j].distance));
  }
  gt_db_near_t one;
  gt_problem_t q = make_key(1, 1, 1);
  assert_int_equal(gt_db_explain(&db, &q, &one, 1), 1);
  gt_db_t empty;
  gt_db_init(&empty);
  assert_int_equal(gt_db_explain(&empty, &q, &one, 1), 0);
  gt_db_free(&db);
}

/* ---- merge -------------------------------------------------------------------------------- */

typedef struct lines {
  char text[16][1024];
  int n;
} lines_t;

static void collect(void *ctx, const char *line) {
  lines_t *l = ctx;
  if (l->n < 16) snprintf(l->text[l->n++], sizeof l->text[0], "%s", line);
}

static bool any_line(const lines_t *l, const char *a, const char *b) {
  for (int i = 0; i < l->n; i++)
    if (strstr(l->text[i], a) && (!b || strstr(l->text[i], b))) return true;
  return false;
}

typedef struct merge_case {
  const char *name;
  double src_time;        /* src's time for the shared key (dst has 10.5) */
  const char *src_timing; /* dst's is "cold-graph" */
  bool strict, prefer_src;
  gt_status_t want_status;
  const char *want_instance; /* shared key's instance after merge */
  const char *want_line_1, *want_line_2;
} merge_case_t;

static const merge_case_t k_merge[] = {
    {"faster src wins", 9.0, "cold-graph", false, false, GT_OK, "src_inst",
     "kept b.csv/src_inst 9 us over a.csv/gt_sm90_decode_bf16_tn_r4_ks512_v8_s2 10.5 us", "m=4096"},
    {"slower src loses", 11.0, "cold-graph", false, false, GT_OK,
     "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2",
     "kept a.csv/gt_sm90_decode_bf16_tn_r4_ks512_v8_s2 10.5 us over b.csv/src_inst 11 us", NULL},
    {"different timing is a conflict, dst kept", 9.0, "warm-graph", false, false, GT_OK,
     "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2", "conflict for", "timing warm-graph"},
    {"different timing, prefer src", 9.0, "warm-graph", false, true, GT_OK, "src_inst",
     "conflict for", "kept b.csv's row"},
    {"strict conflict fails, dst untouched", 9.0, "warm-graph", true, false, GT_ERR_CONFLICT,
     "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2", "conflict for", "timing cold-graph"},
    {"strict without conflict succeeds", 9.0, "cold-graph", true, false, GT_OK, "src_inst",
     "merged b.csv into a.csv: 1 added, 1 replaced", NULL},
};

static void test_merge(void **state) {
  for (size_t i = 0; i < sizeof k_merge / sizeof k_merge[0]; i++) {
    const merge_case_t *c = &k_merge[i];
    gt_db_t dst, src;
    make_db(&dst);
    snprintf(dst.path, sizeof dst.path, "a.csv");
    gt_db_init(&src);
    snprintf(src.path, sizeof src.path, "b.csv");
    gt_db_row_t shared = make_row(4096, 16, 4096, "src_inst", c->src_time, 12.25, c->src_timing);
    gt_db_row_t fresh = make_row(1024, 1, 1024, "src_only", 3.0, 4.0, "cold-graph");
    assert_int_equal(gt_db_put(&src, &shared), GT_OK);
    assert_int_equal(gt_db_put(&src, &fresh), GT_OK);
    lines_t rep = {0};
    gt_status_t s = gt_db_merge(&dst, &src, c->strict, c->prefer_src, collect, &rep);
    printf("%s: %s\n", c->name, gt_status_name(s));
    for (int j = 0; j < rep.n; j++) printf("  %s\n", rep.text[j]);
    assert_int_equal(s, c->want_status);
    assert_true(any_line(&rep, c->want_line_1, c->want_line_2));
    const gt_db_row_t *r = gt_db_lookup(&dst, &shared.key);
    assert_non_null(r);
    assert_string_equal(r->instance, c->want_instance);
    if (s == GT_ERR_CONFLICT) {
      /* Nothing merged, and the message lists the conflicting key. */
      assert_int_equal(dst.n, 3);
      assert_null(gt_db_lookup(&dst, &fresh.key));
      assert_non_null(strstr(gt_err_msg(), "1 conflict"));
      assert_non_null(strstr(gt_err_msg(), "m=4096,n=16,k=4096"));
    } else {
      assert_int_equal(dst.n, 4);
      assert_non_null(gt_db_lookup(&dst, &fresh.key));
      assert_string_equal(dst.path, "a.csv");
    }
    gt_db_free(&dst);
    gt_db_free(&src);
  }
}

/* ---- device identity ---------------------------------------------------------------------- */

/* A format-1 file (before device identities) still reads: its rows take the device name from
 * the #device line and record no memory; written back, it is a format-2 file. */
static void test_format1_still_read(void **state) {
  char *good = good_text();
  /* Cut the device, floor, fp8 key and live columns off every line after the format line. */
  gt_textbuf_t b = {0};
  gt_textbuf_printf(&b, "%s\n#device=NVIDIA H200\n", GT_DB_FORMAT_LINE_V1);
  const char *p = strchr(good, '\n') + 1;
  while (*p) {
    const char *nl = strchr(p, '\n');
    int len = (int)(nl - p);
    if (*p != '#') {
      const char *cut = p + len;
      for (int k = 0; k < 14; k++)
        while (cut > p && *--cut != ',') {}
      len = (int)(cut - p);
    }
    gt_textbuf_printf(&b, "%.*s\n", len, p);
    p = nl + 1;
  }
  gt_db_t db;
  assert_int_equal(gt_db_parse("v1.csv", b.p, &db), GT_OK);
  assert_int_equal(db.n, 3);
  for (size_t i = 0; i < db.n; i++) {
    assert_string_equal(db.rows[i].device, "NVIDIA H200");
    assert_int_equal(db.rows[i].device_mem_gib, 0);
  }
  gt_db_device_t here = {"sm_90", 132, "NVIDIA H200", 139};
  assert_int_equal(gt_db_row_fit(&db.rows[0], &here), GT_DB_FIT_UNRECORDED);
  here.mem_gib = 79;
  snprintf(here.name, sizeof here.name, "NVIDIA H100 80GB HBM3");
  assert_int_equal(gt_db_row_fit(&db.rows[0], &here), GT_DB_FIT_OTHER);
  const char *dir = gt_test_tmpdir();
  const char *out = gt_test_path(dir, "v2.csv");
  assert_int_equal(gt_db_write(&db, out), GT_OK);
  char *text = gt_test_read_file(out);
  assert_memory_equal(text, GT_DB_FORMAT_LINE "\n", strlen(GT_DB_FORMAT_LINE) + 1);
  assert_non_null(
      strstr(text, ",cublasGemmEx_default,NVIDIA H200,0,0,-,0,none,none,0,0,0,-,0,0,0\n"));
  free(text);
  gt_db_free(&db);
  /* Without a #device line the rows record no device at all. */
  char *nodev = strdup(b.p);
  char *line = strstr(nodev, "#device=NVIDIA H200\n");
  memmove(line, line + 20, strlen(line + 20) + 1);
  assert_int_equal(gt_db_parse("v1.csv", nodev, &db), GT_OK);
  assert_string_equal(db.rows[0].device, "-");
  assert_int_equal(gt_db_row_fit(&db.rows[0], &here), GT_DB_FIT_UNRECORDED);
  gt_db_free(&db);
  free(nodev);
  gt_textbuf_free(&b);
  free(good);
  rm_dir(dir);
}

typedef struct fit_case {
  const char *name;
  const char *arch;
  int sms;
  const char *device;
  int mem;
  gt_db_fit_t want;
} fit_case_t;

/* The device here is an H200 (sm_90, 132 SMs, 139 GiB). */
static const fit_case_t k_fit[] = {
    {"same product and memory", "sm_90", 132, "NVIDIA H200", 139, GT_DB_FIT_HERE},
    {"same product, a board 1 GiB smaller", "sm_90", 132, "NVIDIA H200", 138, GT_DB_FIT_HERE},
    {"H100 SXM: same arch and SMs, other product", "sm_90", 132, "NVIDIA H100 80GB HBM3", 79,
     GT_DB_FIT_OTHER},
    {"same name, other memory size", "sm_90", 132, "NVIDIA H200", 79, GT_DB_FIT_OTHER},
    {"name recorded, memory not (format 1)", "sm_90", 132, "NVIDIA H200", 0,
     GT_DB_FIT_UNRECORDED},
    {"nothing recorded", "sm_90", 132, "", 0, GT_DB_FIT_UNRECORDED},
    {"nothing recorded, written as -", "sm_90", 132, "-", 0, GT_DB_FIT_UNRECORDED},
    {"other SM count", "sm_90", 114, "NVIDIA H200", 139, GT_DB_FIT_OTHER_KEY},
    {"other arch", "sm_80", 132, "NVIDIA H200", 139, GT_DB_FIT_OTHER_KEY},
};

static void test_row_fit(void **state) {
  const gt_db_device_t here = {"sm_90", 132, "NVIDIA H200", 139};
  for (size_t i = 0; i < sizeof k_fit / sizeof k_fit[0]; i++) {
    const fit_case_t *c = &k_fit[i];
    gt_db_row_t r = make_row(4096, 16, 4096, "x", 1, 2, "cold-graph");
    snprintf(r.key.arch, sizeof r.key.arch, "%s", c->arch);
    r.key.sm_count = c->sms;
    snprintf(r.device, sizeof r.device, "%s", c->device);
    r.device_mem_gib = c->mem;
    printf("%s: %d\n", c->name, gt_db_row_fit(&r, &here));
    assert_int_equal(gt_db_row_fit(&r, &here), c->want);
  }
  /* A device whose name could not be read holds nothing against a row. */
  gt_db_device_t unknown = {"sm_90", 132, "", 0};
  gt_db_row_t r = make_row(4096, 16, 4096, "x", 1, 2, "cold-graph");
  assert_int_equal(gt_db_row_fit(&r, &unknown), GT_DB_FIT_HERE);
}

static void test_identity_text(void **state) {
  assert_int_equal(gt_db_mem_gib(85031714816ull), 79);   /* H100 80GB HBM3 */
  assert_int_equal(gt_db_mem_gib(150110011392ull), 139); /* H200 */
  assert_int_equal(gt_db_mem_gib(0), 0);
  char name[GT_DB_DEVICE_MAX];
  gt_db_device_name("  Intel(R) Xeon, \"8480\"\t ", name, sizeof name);
  assert_string_equal(name, "Intel(R) Xeon   8480");
  gt_db_device_name("", name, sizeof name);
  assert_string_equal(name, "-");
  gt_db_row_t r = make_row(4096, 16, 4096, "x", 1, 2, "cold-graph");
  snprintf(r.device, sizeof r.device, "NVIDIA H100 80GB HBM3");
  r.device_mem_gib = 79;
  const gt_db_device_t here = {"sm_90", 132, "NVIDIA H200", 139};
  char msg[256];
  gt_db_refusal_str(&r, &here, msg, sizeof msg);
  assert_string_equal(msg, "rows tuned on NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA "
                           "H200 (139 GiB): not applied");
  gt_db_device_t dev = {"sm_90", 132, "NVIDIA H200", 139};
  gt_db_row_t s2 = make_row(4096, 32, 4096, "y", 1, 2, "cold-graph");
  gt_db_row_set_device(&s2, &dev);
  gt_db_t db;
  gt_db_init(&db);
  assert_int_equal(gt_db_put(&db, &r), GT_OK);
  assert_int_equal(gt_db_put(&db, &s2), GT_OK);
  gt_db_row_t s3 = make_row(4096, 64, 4096, "z", 1, 2, "cold-graph");
  assert_int_equal(gt_db_put(&db, &s3), GT_OK); /* the H200 again */
  assert_int_equal(gt_db_devices_str(&db, msg, sizeof msg), 2);
  assert_string_equal(msg, "NVIDIA H100 80GB HBM3 (79 GiB; sm_90, 132 SMs), NVIDIA H200 (139 GiB; "
                           "sm_90, 132 SMs)");
  assert_int_equal(gt_db_remove(&db, &r.key), GT_OK);
  assert_null(gt_db_lookup(&db, &r.key));
  assert_non_null(gt_db_lookup(&db, &s2.key));
  assert_int_equal(gt_db_remove(&db, &r.key), GT_ERR_NOT_FOUND);
  assert_int_equal(gt_db_devices_str(&db, msg, sizeof msg), 1);
  gt_db_free(&db);
}

/* Two rows for one key, measured the same way: the faster wins only beyond their combined
 * spread; within it, the lower spread, then the lower time, whichever DB each came from. */
typedef struct tie_case {
  const char *name;
  double a_us, a_spread, b_us, b_spread;
  const char *want; /* instance kept: "a" or "b" */
  const char *want_line;
} tie_case_t;

static const tie_case_t k_ties[] = {
    /* hole 5's numbers: 0.09% apart, spreads 2% and 9% */
    {"0.09% faster inside 2%+9%: the lower spread", 10.0, 9.0, 10.009, 2.0, "b",
     "tie within spread"},
    {"20% faster beyond 2%+9%: the faster", 10.0, 9.0, 12.0, 2.0, "a", "beyond the combined spread"},
    {"just inside: 4% apart, 2%+2.5%", 10.0, 2.0, 10.4, 2.5, "a", "tie within spread"},
    {"equal spreads: the lower time", 10.2, 3.0, 10.0, 3.0, "b", "the same spread, the lower time"},
    {"equal spreads and times: the first by name", 10.0, 3.0, 10.0, 3.0, "a",
     "the first by name"},
};

static void test_merge_within_spread(void **state) {
  for (size_t i = 0; i < sizeof k_ties / sizeof k_ties[0]; i++) {
    const tie_case_t *c = &k_ties[i];
    gt_db_row_t a = make_row(4096, 16, 4096, "a", c->a_us, 20, "cold-graph");
    gt_db_row_t b = make_row(4096, 16, 4096, "b", c->b_us, 20, "cold-graph");
    a.spread_pct = c->a_spread;
    b.spread_pct = c->b_spread;
    for (int order = 0; order < 2; order++) {
      gt_db_t dst, src;
      gt_db_init(&dst);
      gt_db_init(&src);
      assert_int_equal(gt_db_put(&dst, order ? &b : &a), GT_OK);
      assert_int_equal(gt_db_put(&src, order ? &a : &b), GT_OK);
      lines_t rep = {0};
      assert_int_equal(gt_db_merge(&dst, &src, true, false, collect, &rep), GT_OK);
      printf("%s (order %d): %s\n", c->name, order, rep.text[0]);
      assert_string_equal(dst.rows[0].instance, c->want);
      assert_true(any_line(&rep, c->want_line, NULL));
      gt_db_free(&dst);
      gt_db_free(&src);
    }
  }
}

/* Two rows of one choice, time and spread that differ elsewhere (the gate's error, rounds, a
 * memory size one left unrecorded): merging either into the other keeps the same row. */
static void test_merge_tie_same_choice_order_free(void **state) {
  gt_db_row_t a = make_row(4096, 16, 4096, "a", 10, 20, "cold-graph");
  gt_db_row_t b = a;
  b.error = 0.001;
  b.rounds = 30;
  b.device_mem_gib = 0;
  int kept_rounds[2];
  for (int order = 0; order < 2; order++) {
    gt_db_t dst, src;
    gt_db_init(&dst);
    gt_db_init(&src);
    assert_int_equal(gt_db_put(&dst, order ? &b : &a), GT_OK);
    assert_int_equal(gt_db_put(&src, order ? &a : &b), GT_OK);
    assert_int_equal(gt_db_merge(&dst, &src, true, false, NULL, NULL), GT_OK);
    assert_int_equal(dst.n, 1);
    kept_rounds[order] = dst.rows[0].rounds;
    gt_db_free(&dst);
    gt_db_free(&src);
  }
  assert_int_equal(kept_rounds[0], kept_rounds[1]);
}

/* The same key tuned on two products of one arch and SM count: not comparable. */
static void test_merge_other_device_conflicts(void **state) {
  gt_db_t dst, src;
  gt_db_init(&dst);
  gt_db_init(&src);
  gt_db_row_t a = make_row(4096, 16, 4096, "a", 10, 20, "cold-graph");
  gt_db_row_t b = make_row(4096, 16, 4096, "b", 5, 20, "cold-graph");
  snprintf(b.device, sizeof b.device, "NVIDIA H100 80GB HBM3");
  b.device_mem_gib = 79;
  assert_int_equal(gt_db_put(&dst, &a), GT_OK);
  assert_int_equal(gt_db_put(&src, &b), GT_OK);
  lines_t rep = {0};
  assert_int_equal(gt_db_merge(&dst, &src, true, false, collect, &rep), GT_ERR_CONFLICT);
  assert_true(any_line(&rep, "measured on different devices", "on NVIDIA H100 80GB HBM3 (79 GiB)"));
  assert_string_equal(dst.rows[0].instance, "a");
  gt_db_free(&dst);
  gt_db_free(&src);
}

typedef struct validator_case {
  const char *name;
  const char *src_version;
  bool strict;
  gt_status_t want;
  const char *want_line;
} validator_case_t;

static const validator_case_t k_validators[] = {
    {"same major version merges", "0.3.1", true, GT_OK, "validator gemmtune: a.csv has 0.1.0"},
    {"major version differs is a conflict", "1.0.0", true, GT_ERR_CONFLICT,
     "conflict: validator gemmtune"},
    {"major version differs, lenient", "1.0.0", false, GT_OK, "major versions differ"},
};

static void test_merge_validators(void **state) {
  for (size_t i = 0; i < sizeof k_validators / sizeof k_validators[0]; i++) {
    const validator_case_t *c = &k_validators[i];
    gt_db_t dst, src;
    make_db(&dst);
    snprintf(dst.path, sizeof dst.path, "a.csv");
    gt_db_init(&src);
    assert_int_equal(gt_db_set_validator(&src, "gemmtune", c->src_version), GT_OK);
    assert_int_equal(gt_db_set_validator(&src, "cublaslt", "130100"), GT_OK);
    lines_t rep = {0};
    gt_status_t s = gt_db_merge(&dst, &src, c->strict, false, collect, &rep);
    for (int j = 0; j < rep.n; j++) printf("  %s\n", rep.text[j]);
    assert_int_equal(s, c->want);
    assert_true(any_line(&rep, c->want_line, NULL));
    assert_string_equal(gt_db_get_validator(&dst, "gemmtune"), "0.1.0");
    if (s == GT_OK) assert_string_equal(gt_db_get_validator(&dst, "cublaslt"), "130100");
    else assert_null(gt_db_get_validator(&dst, "cublaslt"));
    gt_db_free(&dst);
    gt_db_free(&src);
  }
}

/* Kept lines: written and read back, the text kept; a key with a row is not kept (drop); merge
 * unions them without a conflict and drops the ones the other input has a row for. */
static void test_kept_lines(void **state) {
  (void)state;
  gt_db_t db, back, other;
  make_db(&db);
  gt_problem_t kept = make_key(4096, 1, 4096), tuned = make_key(4096, 16, 4096);
  char name[48];
  gt_db_kept_name(&kept, name, sizeof name);
  assert_true(gt_db_is_kept_name(name));
  assert_int_equal(strlen(name), strlen(GT_DB_KEPT_PREFIX) + 16);
  assert_int_equal(gt_db_set_kept(&db, &kept, "NVIDIA H200: the baseline was fastest"), GT_OK);
  assert_int_equal(gt_db_set_kept(&db, &tuned, "stale: raced before a winner was found"), GT_OK);
  assert_int_equal(gt_db_drop_kept_with_rows(&db), 1); /* tuned has a row in make_db */
  assert_null(gt_db_get_kept(&db, &tuned));
  const char *p = gt_test_path(gt_test_tmpdir(), "kept.csv");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_string_equal(gt_db_get_kept(&back, &kept), "NVIDIA H200: the baseline was fastest");
  /* merge: the other input kept another key and has a row for kept */
  gt_db_init(&other);
  gt_problem_t k2 = make_key(1024, 1, 4096);
  assert_int_equal(gt_db_set_kept(&other, &k2, "NVIDIA H200: best 1.01x"), GT_OK);
  gt_db_row_t r = make_row(4096, 1, 4096, "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2", 5.0, 6.0,
                           "cold-graph");
  assert_int_equal(gt_db_put(&other, &r), GT_OK);
  lines_t rep = {0};
  assert_int_equal(gt_db_merge(&back, &other, true, false, collect, &rep), GT_OK);
  assert_true(any_line(&rep, "1 kept key (raced, today's path stayed) added", NULL));
  assert_non_null(gt_db_get_kept(&back, &k2));
  assert_null(gt_db_get_kept(&back, &kept)); /* the other input's row wins */
  gt_db_free(&db);
  gt_db_free(&back);
  gt_db_free(&other);
}

/* Every live state survives write -> read, with its numbers where it has them, and merge carries
 * them with the row it keeps (the winning row's confirmation, not the other's). */
static void test_live_round_trip_and_merge(void **state) {
  (void)state;
  gt_db_t db, back;
  make_db(&db);
  gt_db_row_t none = make_row(1024, 1, 1024, "gt_sm90_decode_bf16_tn_r4_ks512_v8_s2", 3.0, 4.0,
                              "cold-graph");
  assert_int_equal(gt_db_put(&db, &none), GT_OK);
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "live.db");
  assert_int_equal(gt_db_write(&db, p), GT_OK);
  assert_int_equal(gt_db_read(p, &back), GT_OK);
  assert_int_equal(back.n, 4);
  static const gt_live_state_t want[] = {GT_LIVE_CONFIRMED, GT_LIVE_SKIPPED, GT_LIVE_OFF,
                                         GT_LIVE_NONE};
  const gt_problem_t keys[] = {make_key(4096, 16, 4096), make_key(4096, 2624, 4096),
                               make_key(8192, 128, 1024), make_key(1024, 1, 1024)};
  for (int i = 0; i < 4; i++) {
    const gt_db_row_t *r = gt_db_lookup(&back, &keys[i]);
    assert_non_null(r);
    assert_int_equal(r->live, want[i]);
    assert_rows_equal(gt_db_lookup(&db, &keys[i]), r);
  }
  const gt_db_row_t *c = gt_db_lookup(&back, &keys[0]);
  assert_true(c->live_us == 10.75 && c->live_baseline_us == 12.125);
  assert_true(fabs(c->live_speedup - 12.125 / 10.75) <= 1e-5);
  char *text = gt_test_read_file(p);
  assert_non_null(strstr(text, ",confirmed,10.75,12.125,1.12791\n"));
  assert_non_null(strstr(text, ",skipped,0,0,0\n"));
  assert_non_null(strstr(text, ",off,0,0,0\n"));
  assert_non_null(strstr(text, ",-,0,0,0\n"));
  free(text);
  /* A state other than confirmed never carries numbers. */
  gt_db_row_t r = make_row(64, 64, 64, "x", 1, 2, "cold-graph");
  gt_db_row_set_live(&r, GT_LIVE_SKIPPED, 1.0, 2.0);
  assert_true(r.live_us == 0 && r.live_baseline_us == 0 && r.live_speedup == 0);
  assert_int_equal(gt_db_row_check(&r), GT_OK);
  /* merge: src's faster row for the confirmed key wins, and brings its own confirmation. */
  gt_db_t src;
  gt_db_init(&src);
  gt_db_row_t faster = make_row(4096, 16, 4096, "src_inst", 9.0, 12.25, "cold-graph");
  gt_db_row_set_live(&faster, GT_LIVE_CONFIRMED, 9.5, 12.5);
  assert_int_equal(gt_db_put(&src, &faster), GT_OK);
  lines_t rep = {0};
  assert_int_equal(gt_db_merge(&back, &src, false, false, collect, &rep), GT_OK);
  const gt_db_row_t *m = gt_db_lookup(&back, &keys[0]);
  assert_string_equal(m->instance, "src_inst");
  assert_int_equal(m->live, GT_LIVE_CONFIRMED);
  assert_true(m->live_us == 9.5 && m->live_baseline_us == 12.5);
  assert_int_equal(gt_db_lookup(&back, &keys[1])->live, GT_LIVE_SKIPPED);
  gt_db_free(&src);
  gt_db_free(&db);
  gt_db_free(&back);
  rm_dir(dir);
}

static void test_validator_names_checked(void **state) {
  gt_db_t db;
  gt_db_init(&db);
  assert_int_equal(gt_db_set_validator(&db, "bad name", "x"), GT_ERR_USAGE);
  assert_int_equal(gt_db_set_validator(&db, "", "x"), GT_ERR_USAGE);
  assert_int_equal(gt_db_set_validator(&db, "ok", "two\nlines"), GT_ERR_USAGE);
  assert_int_equal(gt_db_set_validator(&db, "ok", "1"), GT_OK);
  assert_int_equal(gt_db_set_validator(&db, "ok", "2"), GT_OK);
  assert_int_equal(db.nval, 1);
  assert_string_equal(gt_db_get_validator(&db, "ok"), "2");
  gt_db_free(&db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_header_has_52_columns_in_order),
      cmocka_unit_test(test_format3_db_reads),
      cmocka_unit_test(test_live_round_trip_and_merge),
      cmocka_unit_test(test_format2_db_reads),
      cmocka_unit_test(test_fp8_keys_round_trip),
      cmocka_unit_test(test_older_db_reads),
      cmocka_unit_test(test_round_trip_equal),
      cmocka_unit_test(test_round_trip_time_precision),
      cmocka_unit_test(test_malformed_rejected),
      cmocka_unit_test(test_missing_file_is_not_found),
      cmocka_unit_test(test_crlf_accepted),
      cmocka_unit_test(test_failed_write_leaves_target_identical),
      cmocka_unit_test(test_atomic_write_leaves_no_temp_files),
      cmocka_unit_test(test_lookup_hit_miss),
      cmocka_unit_test(test_explain_miss),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_merge_validators),
      cmocka_unit_test(test_kept_lines),
      cmocka_unit_test(test_format1_still_read),
      cmocka_unit_test(test_row_fit),
      cmocka_unit_test(test_identity_text),
      cmocka_unit_test(test_merge_within_spread),
      cmocka_unit_test(test_merge_tie_same_choice_order_free),
      cmocka_unit_test(test_merge_other_device_conflicts),
      cmocka_unit_test(test_validator_names_checked),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
