/* The search driver on the host backend: the baseline is the candidate the baseline provider marks
 * (cpu_naive for host calls), the fastest finalist that passed the gate wins and fills the row,
 * a planted wrong candidate never does, gate_all gives every ranked candidate a verdict while
 * only `finalists` are raced, and a shape without a baseline says why in the baseline provider's
 * own words (its exclusion reason, --providers, an earlier fault, or no provider for the entry).
 * The budget: a planted space gaining 1% per widening ends after three widenings by the no-gain
 * rule, a baseline past its (planted) floor gets the quick race only, one-pass modes say so, the
 * row records the floor, one pass over the full space interleaves the providers, and every
 * pruned candidate says by how much it was cut. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/gt_search.h"

static gt_problem_t small_problem(gt_dtype_t dt) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = dt;
  if (dt == GT_DT_I8) p.c_type = p.d_type = GT_DT_I32, p.compute = GT_COMPUTE_I32;
  gt_problem_set_linear(&p, 32, 96, 128);
  return p;
}

static gt_search_opts_t quick_opts(void) {
  gt_search_opts_t o;
  gt_search_opts_init(&o, GT_BACKEND_HOST);
  o.measure.warm = true; /* one input set: these tests are about decisions, not cache effects */
  o.measure.seed = 7;
  o.measure.sample_target_us = 200;
  o.rounds = 3;
  o.providers = "cpu,testonly";
  return o;
}

static const gt_cand_result_t *find(const gt_search_result_t *r, const char *name) {
  for (size_t i = 0; i < r->n; i++)
    if (strcmp(r->c[i].cand.name, name) == 0) return &r->c[i];
  return NULL;
}

static void test_the_fastest_gated_finalist_wins(void **state) {
  gt_problem_t p = small_problem(GT_DT_F32);
  gt_search_opts_t o = quick_opts();
  /* Every ranked candidate is gated, so testonly_wrong meets the gate wherever the quick pass
   * ranks it (on a loaded machine its quick time can put it behind the finalists). */
  o.gate_all = true;
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  assert_true(r.baseline >= 0);
  assert_string_equal(r.c[r.baseline].cand.name, "cpu_naive_f32");
  assert_int_equal(r.c[r.baseline].disp, GT_DISP_PASSED);
  assert_true(r.c[r.baseline].time.n == 3);
  const gt_cand_result_t *wrong = find(&r, "testonly_wrong");
  assert_non_null(wrong);
  assert_int_equal(wrong->disp, GT_DISP_FAILED_GATE);
  assert_true(r.best >= 0 && r.best != r.baseline);
  const gt_cand_result_t *w = &r.c[r.best];
  assert_int_equal(w->disp, GT_DISP_PASSED);
  assert_string_equal(w->cand.provider->name, "cpu");
  /* The best is the fastest of everything re-timed. */
  for (size_t i = 0; i < r.n; i++)
    if (r.c[i].time.n) assert_true(w->time.median <= r.c[i].time.median);
  /* Blocked loops beat the naive one by far more than the 3% threshold on any machine. */
  assert_true(r.improved);
  assert_string_equal(r.row.instance, w->cand.name);
  assert_string_equal(r.row.baseline, "cpu_naive_f32");
  assert_true(r.row.speedup > 1);
  assert_int_equal(r.row.rounds, 3);
  gt_search_result_free(&r);
}

static void test_gate_all_gives_every_ranked_candidate_a_verdict(void **state) {
  gt_problem_t p = small_problem(GT_DT_F32);
  gt_search_opts_t o = quick_opts();
  o.finalists = 2;
  o.gate_all = true;
  o.prune_fraction = 1;
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  size_t raced = 0, gated = 0, ranked = 0;
  for (size_t i = 0; i < r.n; i++) {
    const gt_cand_result_t *c = &r.c[i];
    if ((int)i == r.baseline) continue;
    if (c->prune_us > 0) ranked++;
    if (c->prune_us > 0) assert_true(c->gated || c->disp == GT_DISP_FAILED_RUN);
    gated += c->gated;
    raced += c->time.n > 0;
    if (c->time.n) assert_int_equal(c->disp, GT_DISP_PASSED);
  }
  assert_int_equal(raced, 2);
  assert_true(ranked > 2);
  assert_true(gated >= ranked - 1); /* the planted fault fails to load, never gated */
  const gt_cand_result_t *wrong = find(&r, "testonly_wrong");
  assert_non_null(wrong);
  assert_true(wrong->gated);
  assert_int_equal(wrong->disp, GT_DISP_FAILED_GATE);
  gt_search_result_free(&r);
}

typedef struct no_base_case {
  const char *name;
  gt_dtype_t dt;
  const char *providers, *exclude;
  gt_entry_t entry;
  const char *why; /* substring of the failure */
} no_base_case_t;

static const no_base_case_t k_no_base[] = {
    {"no_baseline_quotes_the_exclusion", GT_DT_I8, "cpu,testonly", NULL, GT_ENTRY_DEFAULT,
     "no baseline candidate for this problem: cpu (today's path for default calls) excludes "
     "cpu_naive_i8: types a=i8"},
    {"no_baseline_names_providers", GT_DT_F32, "testonly", NULL, GT_ENTRY_DEFAULT,
     "cpu (today's path for default calls) is not among --providers testonly"},
    {"no_baseline_after_a_fault", GT_DT_F32, "cpu", "cpu_naive_f32", GT_ENTRY_DEFAULT,
     "cpu_naive_f32, from cpu (today's path for default calls), faulted or hung"},
    {"no_baseline_for_the_entry", GT_DT_F32, NULL, NULL, GT_ENTRY_LTMATMUL,
     "no provider stands for ltmatmul calls on host in this build"},
    {"host_entry_is_cpu", GT_DT_I8, NULL, NULL, GT_ENTRY_HOST,
     "cpu (today's path for host calls) excludes cpu_naive_i8"},
};

static void test_no_baseline(void **state) {
  const no_base_case_t *c = *state;
  gt_problem_t p = small_problem(c->dt);
  gt_search_opts_t o = quick_opts();
  o.providers = c->providers;
  o.exclude = c->exclude;
  o.entry = c->entry;
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_ERR_NOT_FOUND);
  if (!strstr(r.failure, c->why)) print_error("failure: %s\nwanted: %s\n", r.failure, c->why);
  assert_non_null(strstr(r.failure, c->why));
  assert_null(strstr(r.failure, "testonly:")); /* another provider's state is not the reason */
  gt_search_result_free(&r);
}

static void test_estimate_only_times_the_baseline_alone(void **state) {
  gt_problem_t p = small_problem(GT_DT_F32);
  gt_search_opts_t o = quick_opts();
  o.estimate_only = true;
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  assert_true(r.estimate_s > 0);
  assert_true(r.c[r.baseline].prune_us > 0);
  for (size_t i = 0; i < r.n; i++) assert_int_equal(r.c[i].time.n, 0);
  assert_false(r.improved);
  gt_search_result_free(&r);
}

/* ---- the budget: floor rule, widenings, the no-gain rule, prune reasons --------------------- */

/* The planted widening space (testonly, GEMMTUNE_TEST_PROVIDERS=widen): 8 candidates in the
 * default space at 300 us, then groups of 8, 16, 32, 64, 128 at 1% less each; with --widen-step 8
 * each widening races one group. They compute nothing (the gate rejects them): only their quick
 * times count here. The baseline (cpu_naive, the only cpu candidate under the cap) takes several
 * ms on this problem. */
static gt_problem_t widen_problem(void) {
  gt_problem_t p = small_problem(GT_DT_BF16);
  gt_problem_set_linear(&p, 64, 128, 256);
  return p;
}

static gt_search_opts_t widen_opts(void) {
  setenv("GEMMTUNE_TEST_PROVIDERS", "widen", 1);
  gt_search_opts_t o = quick_opts();
  o.max_candidates = 1; /* cpu: the baseline alone */
  o.widen_step = 8;
  return o;
}

static void test_no_gain_rule_ends_after_three_widenings(void **state) {
  gt_problem_t p = widen_problem();
  gt_search_opts_t o = widen_opts();
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  if (r.stop != GT_STOP_NO_GAIN) print_error("stop %s: %s\n", gt_stop_name(r.stop), r.stop_why);
  assert_int_equal(r.stop, GT_STOP_NO_GAIN);
  assert_int_equal(r.widenings, 3);
  assert_int_equal(r.n_widened, 8 + 16 + 32);
  assert_int_equal(r.n_unsearched, 64 + 128);
  assert_non_null(strstr(r.stop_why, "3 widenings in a row gained under 2%"));
  assert_string_equal(gt_stop_name(r.stop), "no-gain");
  /* The candidates no widening reached say why; the best quick time is the last group's. */
  const gt_cand_result_t *never = find(&r, "testonly_widen_s4_0");
  assert_non_null(never);
  assert_int_equal(never->disp, GT_DISP_UNSEARCHED);
  assert_non_null(strstr(never->why, "the search stopped (no-gain) after widening 3"));
  const gt_cand_result_t *fastest = NULL;
  for (size_t i = 0; i < r.n; i++)
    if (r.c[i].prune_us > 0 && (!fastest || r.c[i].prune_us < fastest->prune_us)) fastest = &r.c[i];
  assert_non_null(fastest);
  assert_non_null(strstr(fastest->cand.name, "testonly_widen_s3_"));
  assert_true(fabs(r.best_quick_us - 300 * 0.99 * 0.99 * 0.99) < 0.01 * 300);
  gt_search_result_free(&r);
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
}

/* The same space with the roof planted so low that the baseline is past its floor: the quick race
 * only, and the full space is never even listed. With the rule off it widens as before. */
static void test_floor_rule_gives_the_quick_race_only(void **state) {
  gt_problem_t p = widen_problem();
  gt_search_opts_t o = widen_opts();
  gt_roof_uniform(&o.roof, 1e-9, 1e-9, "planted");
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  assert_int_equal(r.stop, GT_STOP_FLOOR);
  assert_int_equal(r.widenings, 0);
  assert_int_equal(r.n_widened, 0);
  assert_null(find(&r, "testonly_widen_s1_0"));
  assert_non_null(strstr(r.stop_why, "baseline at "));
  assert_true(r.floor.us > 0 && r.floor.bound != GT_BOUND_NONE);
  gt_search_result_free(&r);
  o.floor_threshold = -1;
  o.widen_patience = 1; /* one widening is enough to show it widens */
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  assert_int_equal(r.stop, GT_STOP_NO_GAIN);
  assert_int_equal(r.widenings, 1);
  gt_search_result_free(&r);
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
}

/* One pass over the full space is pruned in list order and --budget can end it anywhere: the
 * providers' candidates come interleaved, so no provider waits behind another's whole space. */
static void test_full_pass_interleaves_providers(void **state) {
  gt_problem_t p = widen_problem();
  gt_search_opts_t o = widen_opts();
  o.max_candidates = 0;
  o.mode = GT_SEARCH_FULL;
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  size_t ncpu = 0, last_cpu = 0, first_test = r.n;
  for (size_t i = 0; i < r.n; i++) {
    if (strncmp(r.c[i].cand.name, "cpu_", 4) == 0) ncpu++, last_cpu = i;
    else if (strncmp(r.c[i].cand.name, "testonly_", 9) == 0 && first_test == r.n) first_test = i;
  }
  if (ncpu == 0 || first_test == r.n) print_error("%zu cpu candidates, first testonly %zu of %zu\n",
                                                  ncpu, first_test, r.n);
  assert_true(ncpu > 0 && first_test < r.n);
  assert_true(r.n > 4 * ncpu);      /* the testonly space is the larger one */
  assert_true(first_test < ncpu);   /* in provider order it would come after every cpu one */
  assert_true(last_cpu > r.n / 4);  /* and the cpu ones are spread, not bunched at the front */
  gt_search_result_free(&r);
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
}

/* One pass when asked; the cpu space has nothing beyond its default list; the winner's row records
 * its share of the floor. */
static void test_modes_and_the_floor_in_the_row(void **state) {
  gt_problem_t p = small_problem(GT_DT_F32);
  gt_search_opts_t o = quick_opts();
  o.providers = "cpu";
  gt_roof_uniform(&o.roof, 1.0, 100.0, "planted");
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  assert_int_equal(r.stop, GT_STOP_EXHAUSTED);
  assert_int_equal(r.widenings, 0);
  assert_true(r.improved);
  assert_true(r.row.floor_us > 0);
  assert_int_equal(r.row.floor_bound, r.floor.bound);
  assert_true(fabs(r.row.floor_pct - 100 * r.floor.us / r.row.time_us) < 1e-9 * r.row.floor_pct);
  assert_int_equal(gt_db_row_check(&r.row), GT_OK);
  gt_search_result_free(&r);
  o.mode = GT_SEARCH_QUICK;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  assert_int_equal(r.stop, GT_STOP_QUICK);
  gt_search_result_free(&r);
  o.mode = GT_SEARCH_FLOOR;
  o.exhaustive = true;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  assert_int_equal(r.stop, GT_STOP_FULL);
  gt_search_result_free(&r);
}

/* Every candidate the quick pass ranked out says by how much. */
static void test_prune_reasons(void **state) {
  gt_problem_t p = small_problem(GT_DT_F32);
  gt_search_opts_t o = quick_opts();
  o.finalists = 2;
  gt_search_result_t r;
  assert_int_equal(gt_search_run(&p, &o, NULL, &r), GT_OK);
  size_t pruned = 0;
  for (size_t i = 0; i < r.n; i++) {
    const gt_cand_result_t *c = &r.c[i];
    if (c->disp != GT_DISP_PRUNED) continue;
    pruned++;
    double x = 0;
    if (sscanf(c->why, "%lfx the best quick time", &x) != 1 || x < 1)
      print_error("%s: '%s'\n", c->cand.name, c->why);
    assert_true(x >= 1);
  }
  assert_true(pruned > 0);
  gt_search_result_free(&r);
}

int main(void) {
  /* Before any provider is initialised: init results are cached per process. */
  setenv("GEMMTUNE_TEST_PROVIDERS", "1", 1);
  struct CMUnitTest t[16];
  size_t n = 0;
  t[n++] = (struct CMUnitTest){"fastest_gated_finalist_wins", test_the_fastest_gated_finalist_wins, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"gate_all_gives_every_ranked_candidate_a_verdict", test_gate_all_gives_every_ranked_candidate_a_verdict, NULL, NULL, NULL};
  for (size_t i = 0; i < sizeof k_no_base / sizeof k_no_base[0]; i++)
    t[n++] = (struct CMUnitTest){k_no_base[i].name, test_no_baseline, NULL, NULL, (void *)&k_no_base[i]};
  t[n++] = (struct CMUnitTest){"estimate_only_times_the_baseline_alone", test_estimate_only_times_the_baseline_alone, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"no_gain_rule_ends_after_three_widenings", test_no_gain_rule_ends_after_three_widenings, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"floor_rule_gives_the_quick_race_only", test_floor_rule_gives_the_quick_race_only, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"modes_and_the_floor_in_the_row", test_modes_and_the_floor_in_the_row, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"full_pass_interleaves_providers", test_full_pass_interleaves_providers, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"prune_reasons", test_prune_reasons, NULL, NULL, NULL};
  return _cmocka_run_group_tests("search", t, n, NULL, NULL);
}
