/* Counting graph-captured GEMM calls by their replays (core/gt_graph_runs.h): a captured call
 * counts once per execution of its first kernel node, through every clone an instantiation (or a
 * graph clone) made of it, with the time of all its kernels; a call whose nodes are unknown
 * counts once as an API call; a key's calls and time replace exactly its identified captured
 * calls. Each case is a small workload: the nodes the shim saw each call add, the clones CUPTI
 * reported and the kernel records of the replays. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/gt_graph_runs.h"

#define MAX_CALLS 8
#define MAX_CLONES 8
#define MAX_RUNS 8

typedef struct clone_fact { uint64_t clone, orig; } clone_fact_t;
typedef struct run_fact { uint64_t node, times, ns_each; } run_fact_t;

typedef struct graph_case {
  const char *name;
  gt_graph_call_t calls[MAX_CALLS]; /* .key: 0 or 1 */
  int ncalls;
  clone_fact_t clones[MAX_CLONES];
  int nclones;
  run_fact_t runs[MAX_RUNS];
  int nruns;
  bool tracer; /* false: the tracer could not count (answers NULL) */
  /* expected sums of key 0 */
  uint64_t captured, unidentified, want_runs, want_ns;
} graph_case_t;

#define CALL(k, ...) {.key = (k), .identified = true, .nids = sizeof((uint64_t[]){__VA_ARGS__}) / 8, \
                      .ids = {__VA_ARGS__}}
#define CALL_NO_KERNEL(k) {.key = (k), .identified = true, .nids = 0}
#define CALL_UNKNOWN(k) {.key = (k), .identified = false}

static const graph_case_t k_cases[] = {
    {"one call replayed 11 times through its executable graph's clone",
     {CALL(0, 100)}, 1, {{9100, 100}}, 1, {{9100, 11, 1000}}, 1, true, 1, 0, 11, 11000},
    {"split-K: runs from the first kernel, time from both",
     {CALL(0, 100, 101)}, 1, {{9100, 100}, {9101, 101}}, 2, {{9100, 5, 1000}, {9101, 5, 200}}, 2,
     true, 1, 0, 5, 6000},
    {"one capture instantiated twice: both executable graphs count",
     {CALL(0, 100)}, 1, {{9100, 100}, {9200, 100}}, 2, {{9100, 3, 10}, {9200, 4, 10}}, 2, true, 1,
     0, 7, 70},
    {"a clone of a clone (graph cloned, then instantiated)",
     {CALL(0, 100)}, 1, {{500, 100}, {9500, 500}}, 2, {{9500, 6, 10}}, 1, true, 1, 0, 6, 60},
    {"records naming the captured node itself",
     {CALL(0, 100)}, 1, {{0, 0}}, 0, {{100, 2, 50}}, 1, true, 1, 0, 2, 100},
    {"captured but never replayed",
     {CALL(0, 100)}, 1, {{9100, 100}}, 1, {{0, 0, 0}}, 0, true, 1, 0, 0, 0},
    {"40 calls of one key in one step, the step replayed 11 times, other keys' nodes ignored",
     {CALL(0, 1), CALL(0, 2), CALL(0, 3), CALL(0, 4), CALL(1, 5)}, 5,
     {{11, 1}, {12, 2}, {13, 3}, {14, 4}, {15, 5}}, 5,
     {{11, 11, 10}, {12, 11, 10}, {13, 11, 10}, {14, 11, 10}, {15, 11, 999}}, 5, true, 4, 0, 44,
     440},
    {"a call whose nodes are unknown counts as an API call",
     {CALL(0, 100), CALL_UNKNOWN(0)}, 2, {{9100, 100}}, 1, {{9100, 2, 10}}, 1, true, 1, 1, 2, 20},
    {"a call that added no kernel is captured and never runs",
     {CALL_NO_KERNEL(0)}, 1, {{0, 0}}, 0, {{0, 0, 0}}, 0, true, 1, 0, 0, 0},
    {"no tracer: every captured call is unidentified",
     {CALL(0, 100), CALL(0, 101)}, 2, {{9100, 100}}, 1, {{9100, 9, 10}}, 1, false, 0, 2, 0, 0},
};

static void run_case(const graph_case_t *c) {
  gt_graph_runs_t t;
  gt_graph_runs_init(&t);
  for (int i = 0; i < c->nclones; i++)
    assert_int_equal(gt_graph_runs_add_clone(&t, c->clones[i].clone, c->clones[i].orig), GT_OK);
  for (int i = 0; i < c->nruns; i++)
    for (uint64_t r = 0; r < c->runs[i].times; r++)
      assert_int_equal(gt_graph_runs_add_run(&t, c->runs[i].node, c->runs[i].ns_each), GT_OK);
  uint64_t ids[MAX_CALLS * GT_GRAPH_CALL_MAX_NODES], runs[64], ns[64];
  size_t nid = 0;
  for (int i = 0; i < c->ncalls; i++)
    for (uint32_t j = 0; j < c->calls[i].nids; j++) ids[nid++] = c->calls[i].ids[j];
  assert_int_equal(gt_graph_runs_resolve(&t, ids, nid, runs, ns), GT_OK);
  gt_graph_key_sum_t sums[2];
  memset(sums, 0, sizeof sums);
  gt_graph_fold(c->calls, (size_t)c->ncalls, c->tracer ? runs : NULL, c->tracer ? ns : NULL,
                sums, 2);
  if (sums[0].captured != c->captured || sums[0].unidentified != c->unidentified ||
      sums[0].runs != c->want_runs || sums[0].ns != c->want_ns)
    fail_msg("%s: captured %llu unidentified %llu runs %llu ns %llu, want %llu %llu %llu %llu",
             c->name, (unsigned long long)sums[0].captured,
             (unsigned long long)sums[0].unidentified, (unsigned long long)sums[0].runs,
             (unsigned long long)sums[0].ns, (unsigned long long)c->captured,
             (unsigned long long)c->unidentified, (unsigned long long)c->want_runs,
             (unsigned long long)c->want_ns);
  gt_graph_runs_free(&t);
}

static void test_cases(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) run_case(&k_cases[i]);
}

/* The shapes file's numbers: 4 calls outside capture at 10 us each, 40 captured calls whose
 * kernels ran 440 times for 4400 us: 444 calls, 4440 us. Nothing captured or no sums: as before
 * (calls and mean x calls). Unidentified captured calls stay API calls at the mean. */
static void test_adjust_replaces_captured_calls(void **st) {
  (void)st;
  uint64_t calls;
  double t;
  gt_graph_key_sum_t s = {.captured = 40, .runs = 440, .ns = 4400000};
  gt_graph_adjust(44, 10.0, &s, &calls, &t);
  assert_int_equal(calls, 444);
  assert_true(fabs(t - 4440.0) < 1e-9);
  gt_graph_adjust(44, 10.0, NULL, &calls, &t);
  assert_int_equal(calls, 44);
  assert_true(fabs(t - 440.0) < 1e-9);
  gt_graph_key_sum_t none = {0};
  gt_graph_adjust(44, 10.0, &none, &calls, &t);
  assert_int_equal(calls, 44);
  /* every call captured, none measured: the replays alone */
  gt_graph_key_sum_t all = {.captured = 40, .runs = 440, .ns = 4400000};
  gt_graph_adjust(40, 0.0, &all, &calls, &t);
  assert_int_equal(calls, 440);
  assert_true(fabs(t - 4400.0) < 1e-9);
  /* inconsistent sums (more captured than calls) change nothing */
  gt_graph_key_sum_t bad = {.captured = 50, .runs = 5, .ns = 1};
  gt_graph_adjust(40, 1.0, &bad, &calls, &t);
  assert_int_equal(calls, 40);
  assert_true(fabs(t - 40.0) < 1e-9);
}

/* Many nodes and repeated asks: the tables grow, repeated ids each get the full count. */
static void test_tables_grow_and_repeat(void **st) {
  (void)st;
  gt_graph_runs_t t = {0};
  enum { N = 5000 };
  for (uint64_t i = 1; i <= N; i++) {
    assert_int_equal(gt_graph_runs_add_clone(&t, 100000 + i, i), GT_OK);
    assert_int_equal(gt_graph_runs_add_clone(&t, 100000 + i, 7), GT_OK); /* first one kept */
    for (int r = 0; r < 3; r++) assert_int_equal(gt_graph_runs_add_run(&t, 100000 + i, 2), GT_OK);
  }
  uint64_t ids[4] = {1, N, 1, N + 1}, runs[4], ns[4];
  assert_int_equal(gt_graph_runs_resolve(&t, ids, 4, runs, ns), GT_OK);
  assert_int_equal(runs[0], 3);
  assert_int_equal(runs[1], 3);
  assert_int_equal(runs[2], 3);
  assert_int_equal(runs[3], 0);
  assert_int_equal(ns[0], 6);
  gt_graph_runs_free(&t);
  assert_int_equal(t.n, 0);
}

/* A clone cycle (never made by CUDA, but a table must not loop on it) ends at the depth bound. */
static void test_clone_cycle_terminates(void **st) {
  (void)st;
  gt_graph_runs_t t = {0};
  assert_int_equal(gt_graph_runs_add_clone(&t, 1, 2), GT_OK);
  assert_int_equal(gt_graph_runs_add_clone(&t, 2, 1), GT_OK);
  assert_int_equal(gt_graph_runs_add_run(&t, 1, 5), GT_OK);
  uint64_t id = 3, runs, ns;
  assert_int_equal(gt_graph_runs_resolve(&t, &id, 1, &runs, &ns), GT_OK);
  assert_int_equal(runs, 0);
  gt_graph_runs_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cases),
      cmocka_unit_test(test_adjust_replaces_captured_calls),
      cmocka_unit_test(test_tables_grow_and_repeat),
      cmocka_unit_test(test_clone_cycle_terminates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
