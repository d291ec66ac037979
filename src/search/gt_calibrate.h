/* Timing a calibration reference: the baseline of one shape alone, measured the way the race
 * measures it (gated, the clock settled, interleaved-round samples), so a reference time is
 * what any row's baseline time of the same run would be. core/gt_calib.h says what the times
 * are for. */
#ifndef GT_CALIBRATE_H
#define GT_CALIBRATE_H

#include "core/gt_calib.h"
#include "search/gt_search.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The fewest samples a reference is timed in: a spread needs several. */
#define GT_CALIBRATE_MIN_ROUNDS 5
/* Seconds the host backend runs a reference before timing it (a GPU settles by o->settle_s). */
#define GT_CALIBRATE_HOST_SETTLE_S 0.1

/* Time p's baseline (the provider standing for o->entry on o->backend) in o->rounds samples
 * (at least GT_CALIBRATE_MIN_ROUNDS) after o's settle (on the host at least
 * GT_CALIBRATE_HOST_SETTLE_S), with o's measurement options and no
 * other candidate, and record the median and robust spread as phase `phase` of *r (r->hash,
 * shape and timing are set from p; an entry already holding p keeps its other phase). On an
 * error *r's phase stays unmeasured and failure (cap bytes) says why (a phase timed another
 * way than the other one, graph vs stream, is such an error: they would not compare). */
gt_status_t gt_search_calibrate(const gt_problem_t *p, const gt_search_opts_t *o, int phase,
                                gt_calib_ref_t *r, char *failure, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
