/* The two files `gemmtune verify` reads after a traced run: the kernel trace libgemmtune_trace.so
 * writes (aggregation, exact format, strict parser, merge of several processes) and the shim's
 * GEMMTUNE_STATS counters (read back from what the shim's own writer produces, keyless pass rows,
 * rows of one key combined, malformed files rejected with file:line). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_testutil.h"
#include "runtime/capture_csv.h"
#include "verify/gt_shim_stats.h"
#include "verify/gt_trace_file.h"

#define HDR GT_TRACE_HEADER "\n"

/* ---- trace: aggregation and round trip ----------------------------------------------------- */

static void test_trace_aggregates_per_name(void **st) {
  (void)st;
  gt_trace_t t;
  gt_trace_init(&t);
  /* three launches of one kernel on two streams, one of them from a graph replay */
  assert_int_equal(gt_trace_add(&t, "nvjet_a", 100, 150, 7, false), GT_OK);
  assert_int_equal(gt_trace_add(&t, "nvjet_a", 200, 220, 7, true), GT_OK);
  assert_int_equal(gt_trace_add(&t, "nvjet_a", 300, 330, 9, false), GT_OK);
  assert_int_equal(gt_trace_add(&t, "elementwise", 0, 1000, 7, true), GT_OK);
  /* an end before the start counts the launch with no time */
  assert_int_equal(gt_trace_add(&t, "odd", 50, 40, 7, false), GT_OK);
  const gt_trace_kernel_t *k = gt_trace_find(&t, "nvjet_a");
  assert_non_null(k);
  assert_int_equal(k->calls, 3);
  assert_int_equal(k->total_ns, 100);
  assert_int_equal(k->min_ns, 20);
  assert_int_equal(k->max_ns, 50);
  assert_int_equal(k->stream_count, 2);
  assert_int_equal(k->graph_launches, 1);
  assert_int_equal(gt_trace_find(&t, "odd")->total_ns, 0);
  assert_null(gt_trace_find(&t, "nvjet"));
  assert_int_equal(t.records, 5);
  assert_int_equal(t.total_ns, 1100);
  gt_trace_free(&t);
}

static void test_trace_streams_counted_up_to_the_cap(void **st) {
  (void)st;
  gt_trace_t t;
  gt_trace_init(&t);
  for (uint32_t s = 0; s < GT_TRACE_MAX_STREAMS + 8; s++)
    for (int r = 0; r < 2; r++) gt_trace_add(&t, "k", 0, 1, s, false);
  assert_int_equal(gt_trace_find(&t, "k")->stream_count, GT_TRACE_MAX_STREAMS);
  assert_int_equal(gt_trace_find(&t, "k")->calls, 2 * (GT_TRACE_MAX_STREAMS + 8));
  gt_trace_free(&t);
}

/* Many names: the index must keep finding every one of them after it grows. */
static void test_trace_index_survives_growth(void **st) {
  (void)st;
  gt_trace_t t;
  gt_trace_init(&t);
  char name[32];
  for (int i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "kernel_%d", i);
    assert_int_equal(gt_trace_add(&t, name, 0, (uint64_t)i, 0, false), GT_OK);
  }
  for (int i = 0; i < 3000; i += 7) {
    snprintf(name, sizeof name, "kernel_%d", i);
    const gt_trace_kernel_t *k = gt_trace_find(&t, name);
    assert_non_null(k);
    assert_int_equal(k->total_ns, (uint64_t)i);
  }
  assert_int_equal(t.n, 3000);
  gt_trace_free(&t);
}

static void test_trace_round_trip_and_order(void **st) {
  (void)st;
  gt_trace_t t;
  gt_trace_init(&t);
  gt_trace_add(&t, "small", 0, 10, 1, false);
  gt_trace_add(&t, "big", 0, 500, 1, true);
  gt_trace_add(&t, "name,with \"quotes\"", 0, 100, 2, false);
  t.pid = 4242;
  t.dropped = 3;
  char *text = gt_trace_format(&t, NULL);
  assert_non_null(text);
  /* status line first, header second, rows by time descending */
  assert_ptr_equal(strstr(text, "\n") + 1, strstr(text, GT_TRACE_HEADER));
  assert_non_null(strstr(text, "#gemmtune-trace 1 status=ok pid=4242 records=3 dropped=3 "
                               "total_ns=610 reason=-\n"));
  char *big = strstr(text, "\nbig,"), *quoted = strstr(text, "\n\"name,with \"\"quotes\"\"\",");
  char *small = strstr(text, "\nsmall,");
  assert_non_null(big);
  assert_non_null(quoted);
  assert_non_null(small);
  assert_true(big < quoted && quoted < small);
  gt_trace_t back;
  assert_int_equal(gt_trace_parse("rt", text, &back), GT_OK);
  assert_int_equal(back.state, GT_TRACE_OK);
  assert_int_equal(back.n, 3);
  assert_int_equal(back.total_ns, 610);
  assert_int_equal(back.records, 3);
  assert_int_equal(back.dropped, 3);
  assert_int_equal(back.pid, 4242);
  const gt_trace_kernel_t *q = gt_trace_find(&back, "name,with \"quotes\"");
  assert_non_null(q);
  assert_int_equal(q->total_ns, 100);
  assert_int_equal(gt_trace_find(&back, "big")->graph_launches, 1);
  /* format -> parse -> format is byte-identical */
  char *again = gt_trace_format(&back, NULL);
  assert_string_equal(again, text);
  free(again);
  free(text);
  gt_trace_free(&back);
  gt_trace_free(&t);
}

static void test_trace_unverified_keeps_reason(void **st) {
  (void)st;
  gt_trace_t t;
  gt_trace_init(&t);
  gt_trace_set_state(&t, GT_TRACE_UNVERIFIED, "CUPTI is in use by %s\nsecond line", "Nsight Systems");
  char *text = gt_trace_format(&t, NULL);
  gt_trace_t back;
  assert_int_equal(gt_trace_parse("u", text, &back), GT_OK);
  assert_int_equal(back.state, GT_TRACE_UNVERIFIED);
  assert_string_equal(back.reason, "CUPTI is in use by Nsight Systems second line");
  free(text);
  gt_trace_free(&back);
  gt_trace_free(&t);
}

/* ---- trace: malformed files ------------------------------------------------------------------ */

typedef struct bad_case {
  const char *name;
  const char *text;
  const char *message; /* substring the error must contain */
} bad_case_t;

static const bad_case_t k_bad_traces[] = {
    {"not a trace", "name,calls\n", "not a gemmtune trace"},
    {"another format version", "#gemmtune-trace 2 status=ok total_ns=0\n" HDR, "not a gemmtune trace"},
    {"truncated last line", "#gemmtune-trace 1 status=ok total_ns=5\n" HDR "k,1,5,5,5,1,0", "truncated"},
    {"empty file", "", "empty"},
    {"no status", "#gemmtune-trace 1 total_ns=0\n" HDR, "no status="},
    {"unknown status", "#gemmtune-trace 1 status=fine total_ns=0\n" HDR, "unknown status 'fine'"},
    {"no header", "#gemmtune-trace 1 status=ok total_ns=0\n", "no header"},
    {"wrong header", "#gemmtune-trace 1 status=ok total_ns=0\nname,calls\n", ":2: expected the header"},
    {"bad number", "#gemmtune-trace 1 status=ok total_ns=5\n" HDR "k,x,5,5,5,1,0\n", ":3: column 'calls'"},
    {"negative number", "#gemmtune-trace 1 status=ok total_ns=5\n" HDR "k,1,-5,5,5,1,0\n", "column 'total_ns'"},
    {"too few columns", "#gemmtune-trace 1 status=ok total_ns=5\n" HDR "k,1,5,5,5\n", ":3: expected 7 columns"},
    {"zero calls", "#gemmtune-trace 1 status=ok total_ns=0\n" HDR "k,0,0,0,0,1,0\n", "'calls' is 0"},
    {"min above max", "#gemmtune-trace 1 status=ok total_ns=9\n" HDR "k,2,9,6,3,1,0\n", "min_ns 6 is above max_ns 3"},
    {"graph launches above calls", "#gemmtune-trace 1 status=ok total_ns=5\n" HDR "k,1,5,5,5,1,2\n", "graph_launches 2 exceeds calls 1"},
    {"kernel listed twice", "#gemmtune-trace 1 status=ok total_ns=10\n" HDR "k,1,5,5,5,1,0\nk,1,5,5,5,1,0\n", "listed twice"},
    {"total not the sum", "#gemmtune-trace 1 status=ok total_ns=11\n" HDR "k,1,5,5,5,1,0\n", "not the sum"},
    {"unverified with kernels", "#gemmtune-trace 1 status=unverified reason=x\n" HDR "k,1,5,5,5,1,0\n", "status=unverified but kernels"},
    {"empty line", "#gemmtune-trace 1 status=ok total_ns=5\n" HDR "\nk,1,5,5,5,1,0\n", ":3: empty line"},
    {"unterminated quote", "#gemmtune-trace 1 status=ok total_ns=5\n" HDR "\"k,1,5,5,5,1,0\n", ":3: expected 7 columns"},
    /* 2^64 - 1 parses as a u64 but is no process id (it printed back as pid=-1). */
    {"pid beyond a long", "#gemmtune-trace 1 status=unverified pid=18446744073709551615 reason=x\n" HDR, "'pid': 18446744073709551615 is not a process id"},
};

static void test_trace_rejects_malformed(void **st) {
  (void)st;
  int failed = 0;
  for (size_t i = 0; i < sizeof k_bad_traces / sizeof k_bad_traces[0]; i++) {
    const bad_case_t *c = &k_bad_traces[i];
    gt_trace_t t;
    gt_status_t s = gt_trace_parse("bad.csv", c->text, &t);
    bool ok = s == GT_ERR_DATA && strstr(gt_err_msg(), c->message) && t.n == 0;
    if (!ok) {
      printf("FAIL - %s: status %d, message '%s'\n", c->name, s, gt_err_msg());
      failed++;
    }
    gt_trace_free(&t);
  }
  assert_int_equal(failed, 0);
}

/* Later versions may add facts to the status line; the parser keeps reading. */
static void test_trace_ignores_unknown_facts(void **st) {
  (void)st;
  gt_trace_t t;
  assert_int_equal(gt_trace_parse("x", "#gemmtune-trace 1 status=ok span_ns=99 total_ns=5 "
                                       "reason=-\n" HDR "k,1,5,5,5,1,0\n", &t),
                   GT_OK);
  assert_int_equal(t.n, 1);
  gt_trace_free(&t);
}

static void test_trace_read_file(void **st) {
  (void)st;
  const char *dir = gt_test_tmpdir();
  const char *p = gt_test_path(dir, "trace-1.csv");
  gt_test_write_file(p, "#gemmtune-trace 1 status=incomplete pid=1 reason=killed early\n" HDR);
  gt_trace_t t;
  assert_int_equal(gt_trace_read(p, &t), GT_OK);
  assert_int_equal(t.state, GT_TRACE_INCOMPLETE);
  assert_string_equal(t.reason, "killed early");
  gt_trace_free(&t);
  assert_int_equal(gt_trace_read(gt_test_path(dir, "missing.csv"), &t), GT_ERR_IO);
}

/* ---- trace: merge of several processes ------------------------------------------------------- */

static void test_trace_merge(void **st) {
  (void)st;
  gt_trace_t a, b, u, m;
  gt_trace_init(&a);
  gt_trace_init(&b);
  gt_trace_init(&u);
  gt_trace_init(&m);
  gt_trace_add(&a, "k", 0, 10, 1, true);
  gt_trace_add(&b, "k", 0, 4, 1, false);
  gt_trace_add(&b, "j", 0, 7, 1, false);
  assert_int_equal(gt_trace_merge(&m, &a), GT_OK);
  assert_int_equal(gt_trace_merge(&m, &b), GT_OK);
  const gt_trace_kernel_t *k = gt_trace_find(&m, "k");
  assert_int_equal(k->calls, 2);
  assert_int_equal(k->total_ns, 14);
  assert_int_equal(k->min_ns, 4);
  assert_int_equal(k->max_ns, 10);
  assert_int_equal(k->graph_launches, 1);
  assert_int_equal(k->stream_count, 2);
  assert_int_equal(m.total_ns, 21);
  assert_int_equal(m.files, 2);
  assert_int_equal(m.state, GT_TRACE_OK);
  /* one process that could not be traced makes the whole trace unverified, with its reason */
  gt_trace_set_state(&u, GT_TRACE_UNVERIFIED, "CUPTI taken");
  assert_int_equal(gt_trace_merge(&m, &u), GT_OK);
  assert_int_equal(m.state, GT_TRACE_UNVERIFIED);
  assert_string_equal(m.reason, "CUPTI taken");
  gt_trace_free(&a);
  gt_trace_free(&b);
  gt_trace_free(&u);
  gt_trace_free(&m);
}

/* ---- the shim's counters ----------------------------------------------------------------------- */

/* The reader takes back exactly what the shim's writer (capture_csv.h) produces. */
static void test_stats_read_back_from_the_writer(void **st) {
  (void)st;
  assert_string_equal(gt_shim_stats_header(), gt_rt_stats_header());
  gt_rt_stats_rec_t recs[] = {
      {.keyed = true, .key = gt_test_h200_linear(16, 4096, 4096), .calls = 40, .hits = 40,
       .decision = "hit", .provider = "kernels", .instance = "gt_sm90_decode_x",
       .entry = "cublasGemmEx"},
      {.keyed = true, .key = gt_test_h200_linear(1, 4096, 4096), .calls = 7, .decision = "miss",
       .entry = "cublasLtMatmul"},
      {.keyed = true, .key = gt_test_h200_linear(1, 14336, 4096), .calls = 3, .decision = "deferred",
       .entry = "cublasGemmEx"},
      {.keyed = true, .key = gt_test_h200_linear(1, 4096, 14336), .calls = 2, .decision = "notused",
       .provider = "cublaslt", .instance = "cublaslt_a1", .entry = "cublasGemmEx"},
      {.keyed = false, .calls = 3, .decision = "pass", .entry = "cublasGemmEx"},
      {.keyed = false, .calls = 1, .decision = "pass", .entry = "-"},
  };
  char *text;
  size_t len;
  assert_int_equal(gt_rt_stats_format(recs, sizeof recs / sizeof recs[0], NULL, &text, &len), GT_OK);
  gt_shim_stats_t s;
  assert_int_equal(gt_shim_stats_parse("stats.csv", text, &s), GT_OK);
  free(text);
  assert_int_equal(s.n, 4);
  assert_int_equal(s.nu, 2);
  int seen = 0;
  for (size_t i = 0; i < s.n; i++) {
    for (size_t r = 0; r < 4; r++) {
      if (!gt_problem_equal(&s.v[i].key, &recs[r].key)) continue;
      seen++;
      assert_int_equal(s.v[i].calls, recs[r].calls);
      assert_int_equal(s.v[i].hits, recs[r].hits);
      assert_string_equal(gt_shim_decision_name(s.v[i].decision), recs[r].decision);
      assert_string_equal(s.v[i].instance, recs[r].instance ? recs[r].instance : "");
      assert_string_equal(s.v[i].entry, recs[r].entry);
    }
  }
  assert_int_equal(seen, 4);
  uint64_t unkeyed = 0;
  for (size_t i = 0; i < s.nu; i++) unkeyed += s.u[i].calls;
  assert_int_equal(unkeyed, 4);
  gt_shim_stats_free(&s);
}

/* One key issued through two entry points (or on two GPUs) is one key to judge. */
static void test_stats_combines_rows_of_one_key(void **st) {
  (void)st;
  gt_rt_stats_rec_t recs[] = {
      {.keyed = true, .key = gt_test_h200_linear(16, 4096, 4096), .calls = 10, .hits = 10,
       .decision = "hit", .provider = "kernels", .instance = "k1", .entry = "cublasGemmEx"},
      {.keyed = true, .key = gt_test_h200_linear(16, 4096, 4096), .calls = 5, .hits = 0,
       .decision = "deferred", .entry = "cublasLtMatmul"},
  };
  char *text;
  size_t len;
  assert_int_equal(gt_rt_stats_format(recs, 2, NULL, &text, &len), GT_OK);
  gt_shim_stats_t s;
  assert_int_equal(gt_shim_stats_parse("stats.csv", text, &s), GT_OK);
  free(text);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.v[0].calls, 15);
  assert_int_equal(s.v[0].hits, 10);
  assert_int_equal(s.v[0].decision, GT_SHIM_DEFERRED); /* explains the 5 calls not served */
  assert_string_equal(s.v[0].instance, "k1");
  assert_non_null(strstr(s.v[0].entry, "cublasGemmEx"));
  assert_non_null(strstr(s.v[0].entry, "cublasLtMatmul"));
  /* and a second process's file adds up the same way */
  gt_shim_stats_t d = {0};
  assert_int_equal(gt_shim_stats_merge(&d, &s), GT_OK);
  assert_int_equal(gt_shim_stats_merge(&d, &s), GT_OK);
  assert_int_equal(d.n, 1);
  assert_int_equal(d.v[0].calls, 30);
  assert_int_equal(d.files, 2);
  gt_shim_stats_free(&d);
  gt_shim_stats_free(&s);
}

static void test_stats_rejects_malformed(void **st) {
  (void)st;
  char key[600] = "";
  gt_problem_t k = gt_test_h200_linear(1, 64, 64);
  for (int f = 0; f < GT_KEY_NFIELDS; f++) {
    char v[64];
    gt_problem_field_str(&k, f, v, sizeof v);
    size_t l = strlen(key);
    snprintf(key + l, sizeof key - l, ",%s", v);
  }
  char dashes[100] = "";
  for (int f = 0; f < GT_KEY_NFIELDS; f++) strcat(dashes, ",-");
  const char *h = gt_shim_stats_header();
  struct {
    const char *name, *row, *message;
  } cases[] = {
      {"unknown decision", "1,1,maybe,-,-,cublasGemmEx%s\n", "column 'decision'"},
      {"hits above calls", "1,2,hit,-,-,cublasGemmEx%s\n", "hits 2 exceed calls 1"},
      {"calls not a number", "x,0,miss,-,-,cublasGemmEx%s\n", "column 'calls'"},
      {"too few columns", "1,0,miss%s\n", "expected 34 columns"},
      {"keyless hit row", "1,1,hit,-,-,cublasGemmEx%s\n", "without a key"},
  };
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[2400], row[1200];
    snprintf(row, sizeof row, cases[i].row, i == 4 ? dashes : key);
    snprintf(text, sizeof text, "%s\n%s", h, row);
    gt_shim_stats_t s;
    gt_status_t st2 = gt_shim_stats_parse("s.csv", text, &s);
    if (st2 != GT_ERR_DATA || !strstr(gt_err_msg(), cases[i].message) ||
        !strstr(gt_err_msg(), "s.csv:2")) {
      printf("FAIL - %s: status %d, message '%s'\n", cases[i].name, st2, gt_err_msg());
      failed++;
    }
    gt_shim_stats_free(&s);
  }
  /* a bad key value names its column */
  char text[2400], bad[600];
  snprintf(bad, sizeof bad, "%s", key);
  char *trans = strstr(bad, ",T,N,");
  assert_non_null(trans);
  trans[1] = 'Q';
  snprintf(text, sizeof text, "%s\n1,0,miss,-,-,e%s\n", h, bad);
  gt_shim_stats_t s;
  if (gt_shim_stats_parse("s.csv", text, &s) != GT_ERR_DATA || !strstr(gt_err_msg(), "column 'transa'")) {
    printf("FAIL - bad key value: '%s'\n", gt_err_msg());
    failed++;
  }
  /* the wrong header (a shapes file handed over by mistake) */
  if (gt_shim_stats_parse("s.csv", "calls,time_us,share,op\n", &s) != GT_ERR_DATA ||
      !strstr(gt_err_msg(), "s.csv:1: expected the header")) {
    printf("FAIL - wrong header: '%s'\n", gt_err_msg());
    failed++;
  }
  if (gt_shim_stats_parse("s.csv", "", &s) != GT_ERR_DATA || !strstr(gt_err_msg(), "no header")) {
    printf("FAIL - empty: '%s'\n", gt_err_msg());
    failed++;
  }
  assert_int_equal(failed, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_aggregates_per_name),
      cmocka_unit_test(test_trace_streams_counted_up_to_the_cap),
      cmocka_unit_test(test_trace_index_survives_growth),
      cmocka_unit_test(test_trace_round_trip_and_order),
      cmocka_unit_test(test_trace_unverified_keeps_reason),
      cmocka_unit_test(test_trace_rejects_malformed),
      cmocka_unit_test(test_trace_ignores_unknown_facts),
      cmocka_unit_test(test_trace_read_file),
      cmocka_unit_test(test_trace_merge),
      cmocka_unit_test(test_stats_read_back_from_the_writer),
      cmocka_unit_test(test_stats_combines_rows_of_one_key),
      cmocka_unit_test(test_stats_rejects_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
