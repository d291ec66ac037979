/* Calibration (core/gt_calib.h): the reference shapes are chosen from the shapes file alone
 * (one memory-bound and one compute-bound on a GPU's roofline, the cheapest on the host, the same
 * whatever order the file lists them in); the #calibration lines round-trip, old DBs without
 * them read as uncalibrated and a malformed one is named; the GPU a process used is the
 * machine's number under CUDA_VISIBLE_DEVICES; a table of merges names exactly the inputs whose
 * reference ran off the others by more than the combined spread and the 2% floor (consistent
 * inputs pass with one summary line); and a named input's row never wins a key an unflagged
 * input holds, while calibration lines never reach the merged DB. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_calib.h"
#include "core/gt_db.h"
#include "core/gt_fileio.h"
#include "core/gt_shapes.h"
#include "gt_testutil.h"

/* ---- choosing the references -------------------------------------------------------------- */

static gt_shapes_t parse_shapes(const char *text) {
  gt_problem_t defaults = gt_test_h200_linear(1, 64, 64);
  gt_shapes_t sh;
  if (gt_shapes_parse("shapes.csv", text, &defaults, &sh, NULL) != GT_OK) fail_msg("%s", gt_err_msg());
  return sh;
}

static const char k_shapes[] =
    "model,proj,tokens,out_features,in_features\n"
    "m,big,4096,4096,4096\n"     /* compute-bound, dear */
    "m,decode16,16,4096,4096\n"  /* memory-bound */
    "m,prefill,512,4096,4096\n"  /* compute-bound, the cheapest of them */
    "m,decode1,1,4096,4096\n"    /* memory-bound, the cheapest of all */
    "m,wide,1,14336,4096\n";     /* memory-bound */
static const char k_shapes_reversed[] =
    "model,proj,tokens,out_features,in_features\n"
    "m,wide,1,14336,4096\n"
    "m,decode1,1,4096,4096\n"
    "m,prefill,512,4096,4096\n"
    "m,decode16,16,4096,4096\n"
    "m,big,4096,4096,4096\n";

static void test_pick(void **st) {
  (void)st;
  gt_shapes_t a = parse_shapes(k_shapes), b = parse_shapes(k_shapes_reversed);
  size_t ia[2], ib[2];
  assert_int_equal(gt_calib_pick(&a, 989.0, 4800.0, 2, ia), 2);
  assert_string_equal(a.v[ia[0]].label, "m/decode1");
  assert_string_equal(a.v[ia[1]].label, "m/prefill");
  assert_int_equal(gt_calib_pick(&b, 989.0, 4800.0, 2, ib), 2);
  assert_true(gt_problem_equal(&a.v[ia[0]].p, &b.v[ib[0]].p)); /* whatever the order */
  assert_true(gt_problem_equal(&a.v[ia[1]].p, &b.v[ib[1]].p));
  /* The host: the cheapest shape only. */
  assert_int_equal(gt_calib_pick(&a, 989.0, 4800.0, 1, ia), 1);
  assert_string_equal(a.v[ia[0]].label, "m/decode1");
  /* Every shape in one regime: one reference. */
  gt_shapes_t c = parse_shapes("model,proj,tokens,out_features,in_features\nm,x,1,4096,4096\nm,y,2,4096,4096\n");
  assert_int_equal(gt_calib_pick(&c, 989.0, 4800.0, 2, ia), 1);
  assert_string_equal(c.v[ia[0]].label, "m/x");
  gt_shapes_free(&a);
  gt_shapes_free(&b);
  gt_shapes_free(&c);
}

/* ---- the lines ---------------------------------------------------------------------------- */

static gt_calib_t make_calib(int shard, int of, double before, double bspread, double after,
                             double aspread) {
  gt_calib_t c;
  memset(&c, 0, sizeof c);
  gt_calib_set_source(&c, shard, of, shard, NULL, "node1");
  gt_problem_t p = gt_test_h200_linear(1, 4096, 4096);
  gt_calib_ref_init(&c.ref[0], &p, "cold-graph");
  c.ref[0].us[GT_CALIB_BEFORE] = before, c.ref[0].spread_pct[GT_CALIB_BEFORE] = bspread;
  c.ref[0].us[GT_CALIB_AFTER] = after, c.ref[0].spread_pct[GT_CALIB_AFTER] = aspread;
  c.nrefs = 1;
  return c;
}

static void test_lines_round_trip(void **st) {
  (void)st;
  gt_calib_t c = make_calib(3, 8, 9.87612, 0.8, 9.90123, 0.9), back;
  gt_problem_t p2 = gt_test_h200_linear(512, 4096, 4096);
  gt_calib_ref_init(&c.ref[1], &p2, "cold-graph");
  c.ref[1].us[GT_CALIB_BEFORE] = 30.5, c.ref[1].spread_pct[GT_CALIB_BEFORE] = 0.4;
  c.nrefs = 2; /* the second has no "after": a run killed before its end */
  gt_db_t db;
  gt_db_init(&db);
  assert_int_equal(gt_db_set_validator(&db, "device", "NVIDIA H200"), GT_OK);
  assert_int_equal(gt_calib_store(&db, &c), GT_OK);
  assert_string_equal(gt_db_get_validator(&db, "calibration"), "shard 3 of 8, device 3, host node1");
  assert_non_null(strstr(gt_db_get_validator(&db, "calibration-ref1"),
                         "(bf16 TN 4096x1x4096, cold-graph), before 9.87612 us spread 0.80%, "
                         "after 9.90123 us spread 0.90%"));
  /* Through a file, as merge reads it. */
  const char *path = gt_test_path(gt_test_tmpdir(), "cal.db");
  assert_int_equal(gt_db_write(&db, path), GT_OK);
  gt_db_t rd;
  gt_db_init(&rd);
  assert_int_equal(gt_db_read(path, &rd), GT_OK);
  assert_int_equal(gt_calib_load(&rd, &back), GT_OK);
  assert_int_equal(back.shard_i, 3);
  assert_int_equal(back.shard_n, 8);
  assert_string_equal(back.device, "3");
  assert_string_equal(back.host, "node1");
  assert_int_equal(back.nrefs, 2);
  assert_true(back.ref[0].hash == c.ref[0].hash);
  assert_true(back.ref[0].us[GT_CALIB_AFTER] == 9.90123);
  assert_true(back.ref[1].us[GT_CALIB_AFTER] == 0);
  assert_string_equal(back.ref[1].timing, "cold-graph");
  /* Stripped: only the calibration lines go. */
  gt_calib_strip(&rd);
  assert_int_equal(gt_calib_load(&rd, &back), GT_ERR_NOT_FOUND);
  assert_string_equal(gt_db_get_validator(&rd, "device"), "NVIDIA H200");
  /* A line edited into nonsense is named, not guessed at. */
  assert_int_equal(gt_db_set_validator(&db, "calibration-ref1", "ref 12 fast"), GT_OK);
  assert_int_equal(gt_calib_load(&db, &back), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "calibration-ref1"));
  gt_db_free(&db);
  gt_db_free(&rd);
}

static void test_source_device(void **st) {
  (void)st;
  static const struct {
    int ordinal;
    const char *visible, *want;
  } k[] = {{1, NULL, "1"}, {1, "4,5", "5"}, {0, "GPU-6f1c,GPU-88aa", "GPU-6f1c"}, {3, "0,1", "3"},
           {-1, "0", "host"}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    gt_calib_t c;
    memset(&c, 0, sizeof c);
    gt_calib_set_source(&c, 0, 0, k[i].ordinal, k[i].visible, "h");
    assert_string_equal(c.device, k[i].want);
  }
}

/* ---- judging a merge ---------------------------------------------------------------------- */

#define MAXIN 8
typedef struct judge_case {
  const char *name;
  int n;
  double before[MAXIN], bspread[MAXIN], after[MAXIN]; /* after 0: not measured */
  const char *device[MAXIN];                          /* NULL: "NVIDIA H200" */
  bool bare[MAXIN];                                   /* no calibration lines */
  unsigned want_flagged;                              /* bit i: input i is named */
  const char *want_line;                              /* a substring of the report (NULL: any) */
} judge_case_t;

#define SAME8 {10, 10.02, 9.98, 10.01, 9.99, 10.03, 9.97, 10}
#define SPR8 {1, 0.8, 1.2, 1, 0.9, 1.1, 1, 1}
static const judge_case_t k_judge[] = {
    {"8 consistent shards pass quietly", 8, SAME8, SPR8, {0}, {0}, {0}, 0,
     "calibration: 8 inputs on NVIDIA H200 agree"},
    {"a planted slow shard is named", 8, {10, 10.02, 9.98, 10.74, 9.99, 10.03, 9.97, 10}, SPR8, {0},
     {0}, {0}, 1u << 3,
     "shard 3 of 8, device 3, host node1): its reference GEMM (bf16 TN 4096x1x4096) ran 7.4% "
     "slower than the median of 8 inputs before their shapes (spreads 0.8-1.2%, threshold 2.0%): "
     "a slow or throttled GPU"},
    {"1.5% off is under the 2% floor", 3, {10, 10, 10.15}, {0.2, 0.2, 0.2}, {0}, {0}, {0}, 0, "agree"},
    {"3% off within spreads of 2% each", 3, {10, 10, 10.3}, {2, 2, 2}, {0}, {0}, {0}, 0, "agree"},
    {"two inputs: the slower is named", 2, {10, 11}, {0.5, 0.5}, {0}, {0}, {0}, 1u << 1,
     "ran 10.0% slower than the other input's before its shapes"},
    {"a fast outlier is named too", 5, {10, 10, 9, 10, 10}, {0.5, 0.5, 0.5, 0.5, 0.5}, {0}, {0},
     {0}, 1u << 2, "ran 10.0% faster than the median of 5 inputs"},
    {"throttled during its run: named by the times after the shapes", 3, {10, 10, 10},
     {0.5, 0.5, 0.5}, {10.1, 10, 10.9}, {0}, {0}, 1u << 2,
     "ran 7.9% slower than the median of 3 inputs after their shapes"},
    {"all slowed alike during the run: said, not named", 3, {10, 10, 10}, {0.5, 0.5, 0.5},
     {10.6, 10.6, 10.6}, {0}, {0}, 0, "ran 6.0% slower after its shapes than before them"},
    {"another device product is not compared", 3, {10, 10, 13}, {0.5, 0.5, 0.5}, {0},
     {NULL, NULL, "NVIDIA H100 80GB HBM3"}, {0}, 0, "2 inputs on NVIDIA H200 agree"},
    {"an input without calibration lines is left out", 3, {10, 10, 0}, {0.5, 0.5, 0}, {0}, {0},
     {false, false, true}, 0, "1 input without calibration lines"},
    {"every input off: none is preferred", 4, {10, 12, 14, 16}, {0.5, 0.5, 0.5, 0.5}, {0}, {0}, {0},
     15, "all 4 inputs on NVIDIA H200 named above"},
};

static gt_db_t make_input(const judge_case_t *c, int i) {
  gt_db_t db;
  gt_db_init(&db);
  snprintf(db.path, sizeof db.path, "parts/tuned.shard-%d-of-%d.db", i, c->n);
  gt_db_set_validator(&db, "device", c->device[i] ? c->device[i] : "NVIDIA H200");
  if (!c->bare[i]) {
    gt_calib_t cal = make_calib(i, c->n, c->before[i], c->bspread[i], c->after[i],
                                c->after[i] > 0 ? c->bspread[i] : 0);
    gt_calib_store(&db, &cal);
  }
  return db;
}

static void collect(void *ctx, bool warning, const char *line) {
  gt_textbuf_printf(ctx, "%s%s\n", warning ? "W " : "  ", line);
}

static void test_judge_table(void **st) {
  (void)st;
  int failed = 0, n = (int)(sizeof k_judge / sizeof k_judge[0]);
  for (int t = 0; t < n; t++) {
    const judge_case_t *c = &k_judge[t];
    gt_db_t dbs[MAXIN];
    gt_calib_verdict_t v[MAXIN];
    for (int i = 0; i < c->n; i++) dbs[i] = make_input(c, i);
    gt_textbuf_t out = {0};
    gt_calib_judge(dbs, (size_t)c->n, v, collect, &out);
    unsigned got = 0, warned = 0;
    for (int i = 0; i < c->n; i++) got |= v[i].flagged ? 1u << i : 0;
    for (const char *l = out.p; l && (l = strstr(l, "W calibration: parts/")); l++) warned++;
    bool ok = got == c->want_flagged && warned == (unsigned)__builtin_popcount(c->want_flagged) &&
              (!c->want_line || (out.p && strstr(out.p, c->want_line)));
    if (!ok) printf("FAIL - %s: flagged %#x (want %#x)\n%s", c->name, got, c->want_flagged, out.p ? out.p : "");
    failed += !ok;
    gt_textbuf_free(&out);
    for (int i = 0; i < c->n; i++) gt_db_free(&dbs[i]);
  }
  printf("%d passed, %d failed\n", n - failed, failed);
  assert_int_equal(failed, 0);
}

/* ---- arbitration ---------------------------------------------------------------------------- */

static gt_db_row_t row_for(int64_t tokens, double time_us) {
  gt_db_row_t r;
  memset(&r, 0, sizeof r);
  r.key = gt_test_h200_linear(tokens, 4096, 4096);
  snprintf(r.provider, sizeof r.provider, "kernels");
  snprintf(r.lib, sizeof r.lib, "-");
  snprintf(r.instance, sizeof r.instance, "inst_%g", time_us);
  r.time_us = time_us;
  r.baseline_us = 20;
  r.speedup = 20 / time_us;
  r.error_bound = 1e-2;
  snprintf(r.timing, sizeof r.timing, "cold-graph");
  r.rounds = 15;
  snprintf(r.baseline, sizeof r.baseline, "cublas_gemmex_default");
  return r;
}

static void test_named_input_never_wins(void **st) {
  (void)st;
  /* Input 2 ran its reference 20% slower; it and input 0 both hold the key of 16 tokens, input
   * 2's row faster. Without calibration the faster row wins; with it, input 0's. */
  const judge_case_t c = {"", 3, {10, 10, 12}, {0.5, 0.5, 0.5}, {0}, {0}, {0}, 0, NULL};
  for (int on = 0; on <= 1; on++) {
    gt_db_t dbs[3];
    gt_calib_verdict_t v[3];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 3; i++) dbs[i] = make_input(&c, i);
    gt_db_row_t r0 = row_for(16, 12.0), r2 = row_for(16, 9.0), only2 = row_for(32, 15.0);
    assert_int_equal(gt_db_put(&dbs[0], &r0), GT_OK);
    assert_int_equal(gt_db_put(&dbs[2], &r2), GT_OK);
    assert_int_equal(gt_db_put(&dbs[2], &only2), GT_OK); /* its own key: kept */
    gt_textbuf_t out = {0};
    if (on) gt_calib_judge(dbs, 3, v, collect, &out);
    assert_int_equal(v[2].flagged, on);
    assert_int_equal(gt_calib_yield(dbs, 3, v, collect, &out), GT_OK);
    for (int i = 1; i < 3; i++)
      assert_int_equal(gt_db_merge(&dbs[0], &dbs[i], true, false, NULL, NULL), GT_OK);
    const gt_db_row_t *got = gt_db_lookup(&dbs[0], &r0.key);
    assert_non_null(got);
    assert_true(got->time_us == (on ? 12.0 : 9.0));
    assert_non_null(gt_db_lookup(&dbs[0], &only2.key));
    assert_null(gt_db_get_validator(&dbs[0], "calibration")); /* never into the merged DB */
    assert_null(gt_db_get_validator(&dbs[0], "calibration-ref1"));
    if (on) assert_non_null(strstr(out.p, "calibration: kept parts/tuned.shard-0-of-3.db/inst_12 12 us over parts/tuned.shard-2-of-3.db/inst_9 9 us"));
    gt_textbuf_free(&out);
    for (int i = 0; i < 3; i++) gt_db_free(&dbs[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pick),
      cmocka_unit_test(test_lines_round_trip),
      cmocka_unit_test(test_source_device),
      cmocka_unit_test(test_judge_table),
      cmocka_unit_test(test_named_input_never_wins),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
