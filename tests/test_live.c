/* The live confirmation's rule (core/gt_live.h): which winners tune writes given what the replay
 * through the application's path found, what the row records, and what the note says (for the
 * shape's line and the key's kept line). A table of cases; no GPU. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/gt_db.h"
#include "core/gt_live.h"

typedef struct decide_case {
  const char *name;
  int outcome;               /* gt_live_outcome_t */
  double plain_us, served_us;
  const char *why;
  double threshold;          /* the race's */
  bool want_write;
  gt_live_state_t want_state;
  const char *want_1, *want_2; /* substrings of the note */
  double plain_spread;          /* the replay's own, of the entry point's rounds */
} decide_case_t;

/* The harness measured 1.078x for every case (the row that ran at 0.978x). */
#define HARNESS_SPEEDUP 1.078

static const decide_case_t k_cases[] = {
    {"confirmed well beyond the threshold", GT_LIVE_OUT_DONE, 12.0, 10.0, "", 0.03, true,
     GT_LIVE_CONFIRMED, "live 10.000 us vs 12.000 us cublas_gemmex_default: 1.200x",
     "(harness 1.078x)", 0},
    {"confirmed just beyond the threshold", GT_LIVE_OUT_DONE, 10.31, 10.0, "", 0.03, true,
     GT_LIVE_CONFIRMED, "1.031x", NULL, 0},
    {"a live gain exactly at the threshold is not enough (the race's rule)", GT_LIVE_OUT_DONE,
     12.5, 10.0, "", 0.25, false, GT_LIVE_NONE, "not written: live 10.000 us vs 12.500 us",
     "under the 25.0% a row needs (harness 1.078x)", 0},
    {"slower live than the entry point", GT_LIVE_OUT_DONE, 9.78, 10.0, "", 0.03, false,
     GT_LIVE_NONE, "is 0.978x, under the 3.0% a row needs", NULL, 0},
    {"the race's noise raises the bar", GT_LIVE_OUT_DONE, 10.4, 10.0, "", 0.05, false,
     GT_LIVE_NONE, "under the 5.0% a row needs", NULL, 0},
    {"the replay's own spread raises the bar too", GT_LIVE_OUT_DONE, 10.4, 10.0, "", 0.03, false,
     GT_LIVE_NONE, "under the 6.0% a row needs (the replay's spread)", NULL, 0.06},
    {"a spread under the threshold leaves it", GT_LIVE_OUT_DONE, 10.4, 10.0, "", 0.03, true,
     GT_LIVE_CONFIRMED, "1.040x", NULL, 0.01},
    {"a replay that timed nothing is no confirmation", GT_LIVE_OUT_DONE, 0, 10.0, "", 0.03,
     false, GT_LIVE_NONE, "not written: the live confirmation timed no call", NULL, 0},
    {"switched off: written on the harness's numbers", GT_LIVE_OUT_OFF, 0, 0, "", 0.03, true,
     GT_LIVE_OFF, "live confirmation off (--no-live-confirm)", "harness's 1.078x", 0},
    {"cannot run here: written, the reason said", GT_LIVE_OUT_SKIPPED, 0, 0,
     "cpu runs on the host: no runtime dispatch serves it", 0.03, true, GT_LIVE_SKIPPED,
     "live confirmation skipped: cpu runs on the host", NULL, 0},
    {"skipped without a reason still says so", GT_LIVE_OUT_SKIPPED, 0, 0, "", 0.03, true,
     GT_LIVE_SKIPPED, "live confirmation skipped: no reason given", NULL, 0},
    {"the runtime's dispatch failed to run it: kept", GT_LIVE_OUT_FAILED, 0, 0,
     "a first call failed: launch failed", 0.03, false, GT_LIVE_NONE,
     "not written: the runtime's dispatch failed to run it live: a first call failed", NULL, 0},
    {"an outcome this build does not know: kept", 17, 12.0, 10.0, "", 0.03, false, GT_LIVE_NONE,
     "not written: the live confirmation reported nothing usable (outcome 17)", NULL, 0},
};

static void test_decide_table(void **state) {
  (void)state;
  int failed = 0;
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    const decide_case_t *c = &k_cases[i];
    gt_live_result_t lv;
    memset(&lv, 0, sizeof lv);
    lv.outcome = c->outcome;
    lv.plain_us = c->plain_us;
    lv.served_us = c->served_us;
    lv.plain_spread = c->plain_spread;
    snprintf(lv.plain_name, sizeof lv.plain_name, "cublas_gemmex_default");
    snprintf(lv.why, sizeof lv.why, "%s", c->why);
    char note[400];
    gt_live_state_t st = (gt_live_state_t)99;
    bool w = gt_live_decide(&lv, HARNESS_SPEEDUP, c->threshold, &st, note, sizeof note);
    bool ok = w == c->want_write && st == c->want_state && strstr(note, c->want_1) &&
              (!c->want_2 || strstr(note, c->want_2));
    printf("%s %s: %s -> %s, %s\n", ok ? "ok  " : "FAIL", c->name, w ? "write" : "keep",
           gt_live_state_name(st), note);
    failed += !ok;
  }
  printf("decide: %zu cases, %d failed\n", sizeof k_cases / sizeof k_cases[0], failed);
  assert_int_equal(failed, 0);
}

/* A written decision stamps a row the DB accepts, and a kept one's note fits a kept line after
 * a device name. */
static void test_decision_makes_a_valid_row(void **state) {
  (void)state;
  gt_db_row_t r;
  memset(&r, 0, sizeof r);
  gt_problem_init(&r.key);
  r.key.m = r.key.n = r.key.k = 64;
  gt_problem_fill_lds(&r.key);
  snprintf(r.key.arch, sizeof r.key.arch, "sm_90");
  r.key.sm_count = 132;
  snprintf(r.provider, sizeof r.provider, "kernels");
  snprintf(r.lib, sizeof r.lib, "-");
  snprintf(r.instance, sizeof r.instance, "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8");
  snprintf(r.timing, sizeof r.timing, "cold-graph");
  snprintf(r.baseline, sizeof r.baseline, "cublas_gemmex_default");
  r.time_us = 10, r.baseline_us = 10.78, r.speedup = 1.078, r.rounds = 15, r.error_bound = 1;
  gt_live_result_t lv;
  memset(&lv, 0, sizeof lv);
  lv.outcome = GT_LIVE_OUT_DONE;
  lv.plain_us = 11.0;
  lv.served_us = 10.2;
  gt_live_state_t st;
  char note[400];
  assert_true(gt_live_decide(&lv, r.speedup, 0.03, &st, note, sizeof note));
  gt_db_row_set_live(&r, st, lv.served_us, lv.plain_us);
  assert_int_equal(r.live, GT_LIVE_CONFIRMED);
  assert_int_equal(gt_db_row_check(&r), GT_OK);
  gt_db_t db;
  gt_db_init(&db);
  assert_int_equal(gt_db_put(&db, &r), GT_OK);
  /* Kept: the longest note names a long instance; the kept line holds it after the device. */
  lv.served_us = 10.9;
  snprintf(lv.plain_name, sizeof lv.plain_name, "cublaslt_heuristic_ws1048576");
  assert_false(gt_live_decide(&lv, r.speedup, 0.03, &st, note, sizeof note));
  char kept[300];
  snprintf(kept, sizeof kept, "NVIDIA H200: %s", note);
  assert_true(strlen(kept) < 160);
  assert_int_equal(gt_db_set_kept(&db, &r.key, kept), GT_OK);
  gt_db_free(&db);
  /* No note buffer is fine. */
  assert_false(gt_live_decide(&lv, r.speedup, 0.03, &st, NULL, 0));
}

/* What a row claims: its live speedup once confirmed, the harness's otherwise. */
static void test_claim(void **state) {
  (void)state;
  gt_db_row_t r;
  memset(&r, 0, sizeof r);
  r.speedup = 1.078;
  gt_db_row_set_live(&r, GT_LIVE_CONFIRMED, 10.0, 10.5);
  assert_true(fabs(gt_db_row_claim(&r) - 1.05) < 1e-12);
  gt_db_row_set_live(&r, GT_LIVE_SKIPPED, 10.0, 10.5);
  assert_true(gt_db_row_claim(&r) == 1.078);
  gt_db_row_set_live(&r, GT_LIVE_OFF, 0, 0);
  assert_true(gt_db_row_claim(&r) == 1.078);
}

/* The timing plan: every rounds from 1 to 64 gives each path exactly rounds samples in shares
 * that differ by at most one, in the order plain, served, served, plain, plain, served; rounds
 * below 1 is refused and leaves the plan as it was. */
static void test_block_plan(void **state) {
  (void)state;
  static const bool want_served[2 * GT_LIVE_BLOCKS] = {false, true, true, false, false, true};
  for (int rounds = 1; rounds <= 64; rounds++) {
    gt_live_block_t plan[2 * GT_LIVE_BLOCKS];
    assert_true(gt_live_block_plan(rounds, plan));
    int total[2] = {0, 0}, lo[2] = {rounds, rounds}, hi[2] = {0, 0};
    for (int b = 0; b < 2 * GT_LIVE_BLOCKS; b++) {
      assert_int_equal(plan[b].served, want_served[b]);
      const int p = plan[b].served;
      total[p] += plan[b].samples;
      if (plan[b].samples < lo[p]) lo[p] = plan[b].samples;
      if (plan[b].samples > hi[p]) hi[p] = plan[b].samples;
    }
    assert_int_equal(total[0], rounds);
    assert_int_equal(total[1], rounds);
    assert_true(hi[0] - lo[0] <= 1 && hi[1] - lo[1] <= 1);
  }
  gt_live_block_t keep[2 * GT_LIVE_BLOCKS];
  memset(keep, 0x5a, sizeof keep);
  gt_live_block_t plan[2 * GT_LIVE_BLOCKS];
  memcpy(plan, keep, sizeof plan);
  assert_false(gt_live_block_plan(0, plan));
  assert_false(gt_live_block_plan(-3, plan));
  assert_memory_equal(plan, keep, sizeof plan);
}

static void test_names_round_trip(void **state) {
  (void)state;
  for (int i = 0; i < GT_LIVE__COUNT; i++) {
    gt_live_state_t s;
    assert_true(gt_live_state_parse(gt_live_state_name((gt_live_state_t)i), &s));
    assert_int_equal(s, i);
  }
  gt_live_state_t s;
  assert_false(gt_live_state_parse("confirmed ", &s));
  assert_false(gt_live_state_parse("", &s));
  assert_string_equal(gt_live_state_name(GT_LIVE_NONE), "-");
  assert_string_equal(gt_live_outcome_name(GT_LIVE_OUT_FAILED), "failed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decide_table),
      cmocka_unit_test(test_decision_makes_a_valid_row),
      cmocka_unit_test(test_names_round_trip),
      cmocka_unit_test(test_block_plan),
      cmocka_unit_test(test_claim),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
