/* Timing a calibration reference (see gt_calibrate.h): the search driver with the baseline
 * alone. */
#include "gt_calibrate.h"

#include <stdio.h>
#include <string.h>

gt_status_t gt_search_calibrate(const gt_problem_t *p, const gt_search_opts_t *o, int phase,
                                gt_calib_ref_t *r, char *failure, size_t cap) {
  gt_search_opts_t so = *o;
  so.baseline_only = true; /* today's path alone: the same code on every GPU of the sweep */
  so.estimate_only = false;
  so.profile_all = so.gate_all = false;
  so.only = NULL;
  so.budget_s = 0;
  if (so.rounds < GT_CALIBRATE_MIN_ROUNDS) so.rounds = GT_CALIBRATE_MIN_ROUNDS;
  /* The host has no clock to settle, but a fresh process's first milliseconds (page faults,
   * cold caches, the frequency governor) are not its pace: run the baseline a moment first. */
  if (so.backend == GT_BACKEND_HOST && so.settle_s <= 0) so.settle_s = GT_CALIBRATE_HOST_SETTLE_S;
  gt_search_result_t res;
  gt_status_t s = gt_search_run(p, &so, NULL, &res);
  if (s == GT_OK && (res.baseline < 0 || !(res.c[res.baseline].time.median > 0)))
    s = gt_err_set(GT_ERR_INTERNAL, "the baseline was not timed");
  if (s != GT_OK) {
    snprintf(failure, cap, "%s", res.failure[0] ? res.failure : gt_err_msg());
    gt_search_result_free(&res);
    return s;
  }
  const gt_cand_result_t *b = &res.c[res.baseline];
  char timing[32];
  snprintf(timing, sizeof timing, "%s-%s", so.measure.warm ? "warm" : "cold",
           b->timing ? b->timing : "host");
  bool empty = !(r->us[GT_CALIB_BEFORE] > 0) && !(r->us[GT_CALIB_AFTER] > 0);
  if (empty || r->hash != gt_problem_hash(p)) {
    gt_calib_ref_init(r, p, timing);
  } else if (strcmp(r->timing, timing) != 0) {
    /* A graph that could not be captured this time: the two phases would not compare. */
    snprintf(failure, cap, "timed %s now, %s before: not comparable", timing, r->timing);
    gt_search_result_free(&res);
    return gt_err_set(GT_ERR_DATA, "%s", failure);
  }
  r->us[phase] = b->time.median;
  r->spread_pct[phase] = 100.0 * b->time.rel_spread;
  gt_search_result_free(&res);
  return GT_OK;
}
