/* The live confirmation's names and its write-or-keep rule (gt_live.h). */
#include "gt_live.h"

#include <stdio.h>
#include <string.h>

#include "gt_stats.h"

static const char *const k_state_names[GT_LIVE__COUNT] = {"-", "confirmed", "off", "skipped"};
static const char *const k_outcome_names[GT_LIVE_OUT__COUNT] = {"off", "skipped", "failed",
                                                                 "done"};

const char *gt_live_state_name(gt_live_state_t s) {
  return (unsigned)s < GT_LIVE__COUNT ? k_state_names[s] : "?";
}

bool gt_live_state_parse(const char *s, gt_live_state_t *out) {
  for (int i = 0; i < GT_LIVE__COUNT; i++)
    if (strcmp(s, k_state_names[i]) == 0) return *out = (gt_live_state_t)i, true;
  return false;
}

const char *gt_live_outcome_name(gt_live_outcome_t o) {
  return (unsigned)o < GT_LIVE_OUT__COUNT ? k_outcome_names[o] : "?";
}

bool gt_live_block_plan(int rounds, gt_live_block_t plan[2 * GT_LIVE_BLOCKS]) {
  static const bool served_at[2 * GT_LIVE_BLOCKS] = {false, true, true, false, false, true};
  _Static_assert(GT_LIVE_BLOCKS == 3, "the order above is written for three stretches a path");
  if (rounds < 1) return false;
  for (int b = 0; b < 2 * GT_LIVE_BLOCKS; b++) {
    const int k = b / 2; /* the path's k-th stretch: its share of rounds, as even as they go */
    plan[b].served = served_at[b];
    plan[b].samples = rounds * (k + 1) / GT_LIVE_BLOCKS - rounds * k / GT_LIVE_BLOCKS;
  }
  return true;
}

/* snprintf into note when there is one. */
#define NOTE(...) ((void)(note && cap ? snprintf(note, cap, __VA_ARGS__) : 0))

bool gt_live_decide(const gt_live_result_t *lv, double harness_speedup, double threshold,
                    gt_live_state_t *state, char *note, size_t cap) {
  if (note && cap) note[0] = '\0';
  *state = GT_LIVE_NONE;
  switch ((gt_live_outcome_t)lv->outcome) {
    case GT_LIVE_OUT_OFF:
      *state = GT_LIVE_OFF;
      NOTE("live confirmation off (--no-live-confirm): written on the harness's %.3fx",
           harness_speedup);
      return true;
    case GT_LIVE_OUT_SKIPPED:
      *state = GT_LIVE_SKIPPED;
      NOTE("live confirmation skipped: %s", lv->why[0] ? lv->why : "no reason given");
      return true;
    case GT_LIVE_OUT_FAILED:
      NOTE("not written: the runtime's dispatch failed to run it live: %s",
           lv->why[0] ? lv->why : "no reason given");
      return false;
    case GT_LIVE_OUT_DONE:
      break;
    default:
      NOTE("not written: the live confirmation reported nothing usable (outcome %d)", lv->outcome);
      return false;
  }
  if (!(lv->served_us > 0) || !(lv->plain_us > 0)) {
    NOTE("not written: the live confirmation timed no call (served %.3g us, plain %.3g us)",
         lv->served_us, lv->plain_us);
    return false;
  }
  /* The race's rule, on the live times: the same threshold, raised by the replay's own noise
   * as the race's is by its baseline's, so a row means the same thing whichever measurement
   * wrote it and a gain inside the replay's spread is not written in one run to be kept in the
   * next. */
  double t = 0;
  const double noise = lv->plain_spread > 0 ? lv->plain_spread : 0;
  const bool wins = gt_stats_improves(lv->served_us, lv->plain_us, threshold, noise, &t);
  const double sp = lv->plain_us / lv->served_us;
  if (wins) {
    *state = GT_LIVE_CONFIRMED;
    NOTE("live %.3f us vs %.3f us %s: %.3fx (harness %.3fx)", lv->served_us, lv->plain_us,
         lv->plain_name[0] ? lv->plain_name : "plain", sp, harness_speedup);
    return true;
  }
  NOTE("not written: live %.3f us vs %.3f us %s is %.3fx, under the %.1f%% a row needs%s "
       "(harness %.3fx)",
       lv->served_us, lv->plain_us, lv->plain_name[0] ? lv->plain_name : "plain", sp, 100 * t,
       noise > threshold ? " (the replay's spread)" : "", harness_speedup);
  return false;
}
