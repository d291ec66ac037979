/* Whether a re-tune retires the DB's row for a key (src/tools/tune_retire.h), and in particular
 * when the race's winner was not confirmed live: the row goes when its own choice was that winner
 * (the application's path disproved it) or lost outright, and stays when nothing this race
 * measured disproves it. A table of cases; no GPU. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tools/tune_retire.h"

/* The DB's row: kernels/K1, recorded at 1.10x. */
static gt_tune_prev_t prev_with(int disp, double us, const char *why) {
  gt_tune_prev_t p;
  memset(&p, 0, sizeof p);
  snprintf(p.provider, sizeof p.provider, "kernels");
  snprintf(p.instance, sizeof p.instance, "K1");
  p.speedup = 1.10;
  p.row_us = 10.0;
  p.row_base_us = 11.0;
  p.disp = disp;
  p.us = us;
  snprintf(p.why, sizeof p.why, "%s", why);
  return p;
}

typedef struct unconfirmed_case {
  const char *name;
  int disp;             /* the DB row's choice in this race */
  double us;            /* its re-timed median (0: not re-timed) */
  const char *winner;   /* the unconfirmed winner's instance (provider kernels) */
  bool want;
  const char *want_why; /* substring of why when retired */
} unconfirmed_case_t;

/* The race: baseline 10.0 us, threshold 3%; the winner beat it in the harness, not live. */
static const unconfirmed_case_t k_unconfirmed[] = {
    {"the row's own choice won again but not live: retired", GT_DISP_PASSED, 9.0, "K1", true,
     "kernels/K1 won the race again but not through the application's path: live 9.9 us vs "
     "10.1 us is 1.020x (recorded 1.100x)"},
    {"another choice won; the row's re-timed within the threshold: retired", GT_DISP_PASSED, 9.8,
     "K2", true, "the baseline is now within 2.0% of kernels/K1 (a row needs 3.0%"},
    {"another choice won; the row's slower than the baseline: retired", GT_DISP_PASSED, 10.5,
     "K2", true, "the baseline is now 5.0% faster than kernels/K1"},
    {"another choice won; the row's still ahead by the threshold: stays", GT_DISP_PASSED, 9.0,
     "K2", false, NULL},
    {"the row's choice only lost the quick pass: stays", GT_DISP_PRUNED, 0, "K2", false, NULL},
    {"the row's choice fails the gate now: retired", GT_DISP_FAILED_GATE, 0, "K2", true,
     "kernels/K1 now fails the correctness gate: error 0.5"},
    {"the row's choice is excluded now: retired", GT_DISP_EXCLUDED, 0, "K2", true,
     "kernels/K1 is excluded for this key now"},
    {"the row's choice was not reached (--budget): stays", GT_DISP_BUDGET, 0, "K2", false, NULL},
    {"the row's choice was not in the race: stays", -1, 0, "K2", false, NULL},
};

static void test_retire_unconfirmed(void **state) {
  (void)state;
  int failed = 0;
  for (size_t i = 0; i < sizeof k_unconfirmed / sizeof k_unconfirmed[0]; i++) {
    const unconfirmed_case_t *c = &k_unconfirmed[i];
    gt_tune_prev_t p = prev_with(c->disp, c->us, "error 0.5 over bound 0.01");
    char why[600];
    bool got = gt_tune_prev_retires_unconfirmed(&p, "kernels", c->winner,
                                                "live 9.9 us vs 10.1 us is 1.020x", 10.0, 0.03,
                                                why, sizeof why);
    bool ok = got == c->want && (!c->want_why || strstr(why, c->want_why)) && (got || !why[0]);
    printf("%s %s: %s%s%s\n", ok ? "ok  " : "FAIL", c->name, got ? "retired" : "stays",
           why[0] ? ": " : "", why);
    failed += !ok;
  }
  printf("unconfirmed: %zu cases, %d failed\n", sizeof k_unconfirmed / sizeof k_unconfirmed[0],
         failed);
  assert_int_equal(failed, 0);
}

/* A DB without a row for the key retires nothing, whatever the race found. */
static void test_no_row_retires_nothing(void **state) {
  (void)state;
  gt_tune_prev_t p;
  memset(&p, 0, sizeof p);
  p.disp = -1;
  char why[600];
  assert_false(gt_tune_prev_retires_unconfirmed(&p, "kernels", "K1", "x", 10.0, 0.03, why,
                                                sizeof why));
  assert_false(gt_tune_prev_retires(&p, 10.0, 9.0, 0.03, why, sizeof why));
  assert_string_equal(why, "");
}

/* The rule without a winner (unchanged): a choice re-timed within the threshold retires, one cut
 * by the quick pass too, one not reached stays. */
static void test_retire_unchanged(void **state) {
  (void)state;
  char why[600];
  gt_tune_prev_t p = prev_with(GT_DISP_PASSED, 9.8, "");
  assert_true(gt_tune_prev_retires(&p, 10.0, 9.8, 0.03, why, sizeof why));
  assert_non_null(strstr(why, "the baseline is now within 2.0% of kernels/K1"));
  p = prev_with(GT_DISP_PRUNED, 0, "");
  assert_true(gt_tune_prev_retires(&p, 10.0, 9.9, 0.03, why, sizeof why));
  assert_non_null(strstr(why, "lost the quick pass"));
  p = prev_with(GT_DISP_BUDGET, 0, "");
  assert_false(gt_tune_prev_retires(&p, 10.0, 9.9, 0.03, why, sizeof why));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_retire_unconfirmed),
      cmocka_unit_test(test_no_row_retires_nothing),
      cmocka_unit_test(test_retire_unchanged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
