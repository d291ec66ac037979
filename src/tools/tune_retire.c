/* Retiring a tuned row (tune_retire.h). A row is a claim that its choice beats the baseline on
 * this device by the threshold. A re-tune that races the same choice and finds it no longer does
 * has disproved the claim; keeping the row deployed would serve the old choice on the strength
 * of a race that the newer one contradicts. A re-tune that never raced the choice (its provider
 * left out, the candidate not enumerated, the budget spent first) has proved nothing about it,
 * so the row stays. */
#include "tune_retire.h"

#include <stdio.h>
#include <string.h>

void gt_tune_prev_find(const gt_db_t *db, const gt_problem_t *k, const gt_db_device_t *here,
                       gt_tune_prev_t *prev) {
  memset(prev, 0, sizeof *prev);
  prev->disp = -1;
  const gt_db_row_t *row = gt_db_lookup(db, k);
  if (!row) return;
  gt_db_fit_t fit = gt_db_row_fit(row, here);
  if (fit != GT_DB_FIT_HERE && fit != GT_DB_FIT_UNRECORDED) return;
  snprintf(prev->provider, sizeof prev->provider, "%s", row->provider);
  snprintf(prev->instance, sizeof prev->instance, "%s", row->instance);
  prev->speedup = row->speedup;
  prev->row_us = row->time_us;
  prev->row_base_us = row->baseline_us;
}

void gt_tune_prev_observe(const gt_search_result_t *r, gt_tune_prev_t *prev) {
  if (!prev->instance[0]) return;
  for (size_t i = 0; i < r->n; i++) {
    const gt_cand_result_t *c = &r->c[i];
    if (c->cand.is_baseline || strcmp(c->cand.name, prev->instance) != 0 ||
        strcmp(c->cand.provider->name, prev->provider) != 0)
      continue;
    prev->disp = (int)c->disp;
    prev->us = c->time.n ? c->time.median : 0;
    snprintf(prev->why, sizeof prev->why, "%s", c->why);
    return;
  }
}

bool gt_tune_prev_retires(const gt_tune_prev_t *prev, double base_us, double best_us,
                          double threshold, char *why, size_t cap) {
  why[0] = '\0';
  if (!prev->instance[0] || prev->disp < 0 || !(base_us > 0)) return false;
  const char *who = prev->provider, *inst = prev->instance;
  switch ((gt_disp_t)prev->disp) {
    case GT_DISP_PASSED:
    case GT_DISP_PRUNED:
      if (prev->us > 0 && prev->us < base_us)
        snprintf(why, cap, "the baseline is now within %.1f%% of %s/%s (a row needs %.1f%%; "
                 "recorded %.3fx)", 100 * (base_us / prev->us - 1), who, inst, 100 * threshold,
                 prev->speedup);
      else if (prev->us > 0)
        snprintf(why, cap, "the baseline is now %.1f%% faster than %s/%s (recorded %.3fx)",
                 100 * (prev->us / base_us - 1), who, inst, prev->speedup);
      else if (best_us > 0 && best_us < base_us)
        snprintf(why, cap, "%s/%s lost the quick pass and the best candidate re-timed is within "
                 "%.1f%% of the baseline (a row needs %.1f%%; recorded %.3fx)", who, inst,
                 100 * (base_us / best_us - 1), 100 * threshold, prev->speedup);
      else
        snprintf(why, cap, "%s/%s lost the quick pass and the baseline was fastest (recorded "
                 "%.3fx)", who, inst, prev->speedup);
      return true;
    case GT_DISP_FAILED_GATE:
      snprintf(why, cap, "%s/%s now fails the correctness gate: %s", who, inst, prev->why);
      return true;
    case GT_DISP_FAILED_RUN:
      snprintf(why, cap, "%s/%s failed to run: %s", who, inst, prev->why);
      return true;
    case GT_DISP_EXCLUDED:
      snprintf(why, cap, "%s/%s is excluded for this key now: %s", who, inst, prev->why);
      return true;
    case GT_DISP_BUDGET:
    default:
      return false;
  }
}

bool gt_tune_prev_retires_unconfirmed(const gt_tune_prev_t *prev, const char *winner_provider,
                                      const char *winner_instance, const char *live_why,
                                      double base_us, double threshold, char *why, size_t cap) {
  why[0] = '\0';
  if (!prev->instance[0] || prev->disp < 0 || !(base_us > 0)) return false;
  if (strcmp(prev->provider, winner_provider) == 0 &&
      strcmp(prev->instance, winner_instance) == 0) {
    snprintf(why, cap, "%s/%s won the race again but not through the application's path: %s "
             "(recorded %.3fx)", prev->provider, prev->instance, live_why, prev->speedup);
    return true;
  }
  switch ((gt_disp_t)prev->disp) {
    case GT_DISP_PASSED:
    case GT_DISP_PRUNED:
      /* Re-timed and not ahead by the threshold: lost in the harness already. Ahead, or only
       * ranked out by the quick pass: nothing this race measured disproves it. */
      if (!(prev->us > 0) || base_us / prev->us > 1.0 + threshold) return false;
      return gt_tune_prev_retires(prev, base_us, 0, threshold, why, cap);
    case GT_DISP_FAILED_GATE:
    case GT_DISP_FAILED_RUN:
    case GT_DISP_EXCLUDED:
      return gt_tune_prev_retires(prev, base_us, 0, threshold, why, cap);
    default:
      return false;
  }
}
