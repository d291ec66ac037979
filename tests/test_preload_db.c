/* gt_rt_db_load_list: the DB loading of the preload shim and the dispatch API. Inside someone
 * else's process a bad GEMMTUNE_DB entry must cost exactly one warning line naming it, never a
 * crash, and must not stop the good entries from loading. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/gt_db.h"
#include "gt_testutil.h"
#include "runtime/preload_db.h"
#include "runtime/rt_devices.h"

typedef struct warnings {
  int n;
  char line[8][1100];
} warnings_t;

static void collect(void *ctx, const char *line) {
  warnings_t *w = ctx;
  if (w->n < 8) snprintf(w->line[w->n], sizeof w->line[0], "%s", line);
  w->n++;
}

static gt_db_row_t make_row(int64_t tokens, const char *instance) {
  gt_db_row_t r;
  memset(&r, 0, sizeof r);
  gt_problem_init(&r.key);
  gt_problem_set_linear(&r.key, tokens, 4096, 4096);
  snprintf(r.key.arch, sizeof r.key.arch, "sm_90");
  r.key.sm_count = 132;
  snprintf(r.provider, sizeof r.provider, "cublaslt");
  snprintf(r.lib, sizeof r.lib, "-");
  snprintf(r.instance, sizeof r.instance, "%s", instance);
  r.time_us = 10.0;
  r.baseline_us = 12.0;
  r.speedup = 1.2;
  r.error = 1e-3;
  r.error_bound = 1e-2;
  snprintf(r.timing, sizeof r.timing, "cold-graph");
  r.rounds = 5;
  snprintf(r.baseline, sizeof r.baseline, "cublas_default");
  return r;
}

/* A valid DB file with rows for the given token counts. */
static void write_db(const char *path, const int64_t *tokens, int n, const char *instance) {
  gt_db_t db;
  gt_db_init(&db);
  for (int i = 0; i < n; i++) {
    gt_db_row_t r = make_row(tokens[i], instance);
    if (gt_db_put(&db, &r) != GT_OK) fail_msg("fixture row rejected: %s", gt_err_msg());
  }
  if (gt_db_write(&db, path) != GT_OK) fail_msg("fixture DB not written: %s", gt_err_msg());
  gt_db_free(&db);
}

static const char *k_dir;
static char k_good[1024], k_good2[1024];

static int setup(void **st) {
  (void)st;
  k_dir = gt_test_tmpdir();
  snprintf(k_good, sizeof k_good, "%s", gt_test_path(k_dir, "good.csv"));
  snprintf(k_good2, sizeof k_good2, "%s", gt_test_path(k_dir, "good2.csv"));
  const int64_t t1[] = {1, 16, 128};
  write_db(k_good, t1, 3, "first_file");
  const int64_t t2[] = {16, 512};
  write_db(k_good2, t2, 2, "second_file");

  gt_test_write_file(gt_test_path(k_dir, "garbage.csv"), "hello\nworld\n");
  gt_test_write_file(gt_test_path(k_dir, "empty.csv"), "");
  /* a good file cut in the middle of its last row */
  char *text = gt_test_read_file(k_good);
  assert_non_null(text);
  text[strlen(text) - 20] = '\0';
  gt_test_write_file(gt_test_path(k_dir, "truncated.csv"), text);
  free(text);
  /* garbage too, so it is rejected whether or not the test runs as root (root reads mode 000) */
  const char *locked = gt_test_path(k_dir, "unreadable.csv");
  gt_test_write_file(locked, "#gemmtune-db 1\nnot,a,db\n");
  chmod(locked, 0);
  return 0;
}

static int teardown(void **st) {
  (void)st;
  chmod(gt_test_path(k_dir, "unreadable.csv"), 0600);
  return 0;
}

/* One bad entry alone: exactly one warning, naming it; nothing loaded; no crash. */
typedef struct bad_case {
  const char *name;
  const char *file; /* relative to the temp dir; "" = the directory itself */
} bad_case_t;

static const bad_case_t k_bad[] = {
    {"missing file", "does-not-exist.csv"},
    {"a directory", ""},
    {"not a DB at all", "garbage.csv"},
    {"empty file", "empty.csv"},
    {"truncated last row", "truncated.csv"},
    {"unreadable (mode 000)", "unreadable.csv"},
    {"path under a regular file", "garbage.csv/x.csv"},
};

static void test_each_bad_path_warns_once(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; i++) {
    char path[1200];
    snprintf(path, sizeof path, "%s", *k_bad[i].file ? gt_test_path(k_dir, k_bad[i].file) : k_dir);
    gt_db_t db;
    gt_db_init(&db);
    warnings_t w = {0};
    gt_rt_db_load_report_t rep;
    gt_status_t s = gt_rt_db_load_list(path, &db, collect, &w, &rep);
    if (s == GT_OK) fail_msg("%s: loaded without error", k_bad[i].name);
    if (w.n != 1) fail_msg("%s: %d warnings, want exactly 1", k_bad[i].name, w.n);
    if (!strstr(w.line[0], path))
      fail_msg("%s: warning does not name the path: %s", k_bad[i].name, w.line[0]);
    if (strchr(w.line[0], '\n'))
      fail_msg("%s: warning spans several lines: %s", k_bad[i].name, w.line[0]);
    if (db.n != 0 || rep.files_bad != 1 || rep.files_ok != 0)
      fail_msg("%s: rows=%zu bad=%zu ok=%zu", k_bad[i].name, db.n, rep.files_bad, rep.files_ok);
    gt_db_free(&db);
  }
}

static void test_good_file_loads_silently(void **st) {
  (void)st;
  gt_db_t db;
  gt_db_init(&db);
  warnings_t w = {0};
  assert_int_equal(gt_rt_db_load_list(k_good, &db, collect, &w, NULL), GT_OK);
  assert_int_equal(w.n, 0);
  assert_int_equal(db.n, 3);
  gt_db_free(&db);
}

/* Bad entries around a good one: one warning each, the good rows still load, and the status
 * names the first bad file. */
static void test_bad_entries_do_not_block_good_ones(void **st) {
  (void)st;
  char list[4096];
  snprintf(list, sizeof list, "%s:%s:%s", gt_test_path(k_dir, "does-not-exist.csv"), k_good,
           gt_test_path(k_dir, "garbage.csv"));
  gt_db_t db;
  gt_db_init(&db);
  warnings_t w = {0};
  gt_rt_db_load_report_t rep;
  gt_status_t s = gt_rt_db_load_list(list, &db, collect, &w, &rep);
  assert_int_not_equal(s, GT_OK);
  assert_non_null(strstr(gt_err_msg(), "does-not-exist.csv"));
  assert_int_equal(w.n, 2);
  assert_non_null(strstr(w.line[0], "does-not-exist.csv"));
  assert_non_null(strstr(w.line[1], "garbage.csv"));
  assert_int_equal(db.n, 3);
  assert_int_equal(rep.files_ok, 1);
  assert_int_equal(rep.files_bad, 2);
  gt_db_free(&db);
}

/* Empty list items are not files: no warning, nothing loaded, success. */
static void test_empty_items_are_ignored(void **st) {
  (void)st;
  static const char *const lists[] = {"", ":", "::", ":::"};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    gt_db_t db;
    gt_db_init(&db);
    warnings_t w = {0};
    if (gt_rt_db_load_list(lists[i], &db, collect, &w, NULL) != GT_OK)
      fail_msg("list '%s': %s", lists[i], gt_err_msg());
    if (w.n != 0 || db.n != 0) fail_msg("list '%s': %d warnings, %zu rows", lists[i], w.n, db.n);
    gt_db_free(&db);
  }
  /* ...and around a real file they change nothing */
  char list[2100];
  snprintf(list, sizeof list, "::%s:", k_good);
  gt_db_t db;
  gt_db_init(&db);
  warnings_t w = {0};
  assert_int_equal(gt_rt_db_load_list(list, &db, collect, &w, NULL), GT_OK);
  assert_int_equal(w.n, 0);
  assert_int_equal(db.n, 3);
  gt_db_free(&db);
}

/* Like PATH: the first file listing a key wins; the later row is counted as shadowed. */
static void test_first_file_wins(void **st) {
  (void)st;
  char list[2100];
  snprintf(list, sizeof list, "%s:%s", k_good, k_good2);
  gt_db_t db;
  gt_db_init(&db);
  warnings_t w = {0};
  gt_rt_db_load_report_t rep;
  assert_int_equal(gt_rt_db_load_list(list, &db, collect, &w, &rep), GT_OK);
  assert_int_equal(w.n, 0);
  assert_int_equal(db.n, 4); /* tokens 1, 16, 128 from the first; 512 from the second */
  assert_int_equal(rep.rows_shadowed, 1);
  gt_db_row_t probe = make_row(16, "x");
  const gt_db_row_t *r = gt_db_lookup(&db, &probe.key);
  assert_non_null(r);
  assert_string_equal(r->instance, "first_file");
  gt_db_free(&db);
}

/* No warning callback: still no crash, still the right status. */
static void test_null_callback(void **st) {
  (void)st;
  gt_db_t db;
  gt_db_init(&db);
  assert_int_not_equal(gt_rt_db_load_list(gt_test_path(k_dir, "garbage.csv"), &db, NULL, NULL,
                                          NULL),
                       GT_OK);
  assert_int_equal(db.n, 0);
  assert_int_equal(gt_rt_db_load_list(NULL, &db, NULL, NULL, NULL), GT_OK);
  gt_db_free(&db);
}

/* ---- rows against the device a runtime opens (rt_devices.c) ------------------------------- */

static const gt_db_device_t k_h200 = {"sm_90", 132, "NVIDIA H200", 139};

/* A DB of rows at the given token counts, tuned on `device` (mem GiB; "" = not recorded). */
static void make_dev_db(gt_db_t *db, const char *device, int mem, int n, int64_t first) {
  gt_db_init(db);
  snprintf(db->path, sizeof db->path, "dev.db");
  for (int i = 0; i < n; i++) {
    gt_db_row_t r = make_row(first + i, "inst");
    snprintf(r.device, sizeof r.device, "%s", device);
    r.device_mem_gib = mem;
    assert_int_equal(gt_db_put(db, &r), GT_OK);
  }
}

static bool has_line(const warnings_t *w, const char *a, const char *b) {
  for (int i = 0; i < w->n && i < 8; i++)
    if (strstr(w->line[i], a) && (!b || strstr(w->line[i], b))) return true;
  return false;
}

typedef struct dev_case {
  const char *name;
  const char *device; /* of the DB's rows */
  int mem;
  int nwarn;          /* lines said */
  const char *want_1, *want_2;
  size_t here, unrecorded, refused;
} dev_case_t;

static const dev_case_t k_dev[] = {
    {"rows of this device: silent", "NVIDIA H200", 139, 0, NULL, NULL, 3, 0, 0},
    {"H100 rows on an H200: refused, and nothing is served", "NVIDIA H100 80GB HBM3", 79, 2,
     "DESC: rows tuned on NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA H200 (139 GiB): "
     "not applied (3 of 3 rows)",
     "DESC: no row is for device 0, NVIDIA H200 (139 GiB; sm_90, 132 SMs): its 3 rows are for "
     "NVIDIA H100 80GB HBM3 (79 GiB; sm_90, 132 SMs); nothing is served",
     0, 0, 3},
    {"rows without an identity: applied, said once", "", 0, 1,
     "DESC: 3 rows do not record the device they were tuned on", "applied here by arch and SM count",
     0, 3, 0},
};

static void test_rows_against_the_device(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_dev / sizeof k_dev[0]; i++) {
    const dev_case_t *c = &k_dev[i];
    gt_rt_devices_reset();
    gt_db_t db;
    make_dev_db(&db, c->device, c->mem, 3, 1);
    warnings_t w = {0};
    gt_rt_devices_count_t n;
    gt_rt_devices_report(&db, &k_h200, 0, "DESC", collect, &w, &n);
    printf("%s: %d lines\n", c->name, w.n);
    for (int j = 0; j < w.n && j < 8; j++) printf("  %s\n", w.line[j]);
    assert_int_equal(w.n, c->nwarn);
    if (c->want_1) assert_true(has_line(&w, c->want_1, NULL));
    if (c->want_2) assert_true(has_line(&w, c->want_2, NULL));
    assert_int_equal(n.here, c->here);
    assert_int_equal(n.unrecorded, c->unrecorded);
    assert_int_equal(n.refused, c->refused);
    /* A second engine (another device, a rebind) with the same DB says nothing new. */
    gt_rt_devices_report(&db, &k_h200, 0, "DESC", collect, &w, NULL);
    assert_int_equal(w.n, c->nwarn);
    /* The decision on one row says why it is refused. */
    char why[256];
    bool applies = gt_rt_row_applies(&db.rows[0], &k_h200, why, sizeof why);
    assert_int_equal(applies, c->refused == 0);
    if (!applies) assert_non_null(strstr(why, "rows tuned on NVIDIA H100 80GB HBM3 (79 GiB)"));
    gt_db_free(&db);
  }
}

/* Some rows for this device, some for another product: only the refusal is said. */
static void test_mixed_rows_refuse_the_others(void **st) {
  (void)st;
  gt_rt_devices_reset();
  gt_db_t db, other;
  make_dev_db(&db, "NVIDIA H200", 139, 2, 1);
  make_dev_db(&other, "NVIDIA H100 80GB HBM3", 79, 1, 100);
  assert_int_equal(gt_db_put(&db, &other.rows[0]), GT_OK);
  warnings_t w = {0};
  gt_rt_devices_count_t n;
  gt_rt_devices_report(&db, &k_h200, 0, "DESC", collect, &w, &n);
  assert_int_equal(w.n, 1);
  assert_non_null(strstr(w.line[0], "not applied (1 of 3 rows)"));
  assert_int_equal(n.here, 2);
  assert_int_equal(n.refused, 1);
  /* Rows of another arch: the DB has nothing for this device. */
  gt_db_t a100;
  gt_db_init(&a100);
  gt_db_row_t r = make_row(1, "inst");
  snprintf(r.key.arch, sizeof r.key.arch, "sm_80");
  r.key.sm_count = 108;
  snprintf(r.device, sizeof r.device, "NVIDIA A100-SXM4-80GB");
  r.device_mem_gib = 79;
  assert_int_equal(gt_db_put(&a100, &r), GT_OK);
  gt_rt_devices_report(&a100, &k_h200, 3, "DESC", collect, &w, NULL);
  assert_int_equal(w.n, 2);
  assert_non_null(strstr(w.line[1], "no row is for device 3, NVIDIA H200 (139 GiB; sm_90, 132 "
                                    "SMs): its 1 row is for NVIDIA A100-SXM4-80GB (79 GiB; sm_80, "
                                    "108 SMs)"));
  gt_db_free(&db);
  gt_db_free(&other);
  gt_db_free(&a100);
}

/* The shim's stand-in for a GPU in CPU tests. */
static void test_test_device_hook(void **st) {
  (void)st;
  gt_rt_devices_reset();
  gt_db_t db;
  make_dev_db(&db, "NVIDIA H100 80GB HBM3", 79, 1, 1);
  warnings_t w = {0};
  unsetenv("GEMMTUNE_TEST_DEVICE");
  gt_rt_devices_test_hook(&db, "DESC", collect, &w);
  assert_int_equal(w.n, 0);
  setenv("GEMMTUNE_TEST_DEVICE", "NVIDIA H200;139;sm_90;132", 1);
  gt_rt_devices_test_hook(&db, "DESC", collect, &w);
  assert_int_equal(w.n, 2);
  assert_non_null(strstr(w.line[0], "this device is NVIDIA H200 (139 GiB): not applied"));
  setenv("GEMMTUNE_TEST_DEVICE", "NVIDIA H200;lots", 1);
  gt_rt_devices_test_hook(&db, "DESC", collect, &w);
  assert_int_equal(w.n, 3);
  assert_non_null(strstr(w.line[2], "GEMMTUNE_TEST_DEVICE wants"));
  unsetenv("GEMMTUNE_TEST_DEVICE");
  gt_db_free(&db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_bad_path_warns_once),
      cmocka_unit_test(test_good_file_loads_silently),
      cmocka_unit_test(test_bad_entries_do_not_block_good_ones),
      cmocka_unit_test(test_empty_items_are_ignored),
      cmocka_unit_test(test_first_file_wins),
      cmocka_unit_test(test_null_callback),
      cmocka_unit_test(test_rows_against_the_device),
      cmocka_unit_test(test_mixed_rows_refuse_the_others),
      cmocka_unit_test(test_test_device_hook),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
