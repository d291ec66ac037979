/* The search driver: for one problem, baseline -> enumerate -> prune -> gate -> interleaved
 * re-time -> improvement decision -> (maybe) a DB row. It knows candidates only through the
 * provider interface and measures only through the harness interface.
 *
 * The quick prune pass only ranks: its times are never reported as results. Finalists (and
 * always the baseline) are gated on fresh inputs, then re-timed in interleaved rounds
 * (A B C, B C A, ...); the winner must beat the baseline's median by max(min_improvement, the
 * baseline's own robust spread). A row slower than its baseline is never produced.
 *
 * How much of the candidate space a shape gets follows its distance to the roofline floor
 * (GT_SEARCH_FLOOR, the default): the quick pass races the providers' default space; a shape
 * whose baseline is within floor_threshold of the floor stops there (the floor rule); any other
 * widens into the providers' full space (their exhaustive enumeration, spread
 * over providers) in steps of widen_step, 2 x widen_step, 4 x widen_step ... candidates, and
 * stops when widen_patience widenings in a row each improved the best quick time by less than
 * widen_gain (the no-gain rule), when the space is exhausted or when --budget is spent. The
 * result names the rule that stopped it. */
#ifndef GT_SEARCH_H
#define GT_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/gt_harness.h"
#include "providers/gt_provider.h"
#include "core/gt_db.h"
#include "core/gt_metric.h"
#include "core/gt_problem.h"
#include "core/gt_roofline.h"
#include "core/gt_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How much of the candidate space a shape gets. */
typedef enum gt_search_mode {
  GT_SEARCH_FLOOR = 0, /* the quick space; then, unless the floor rule stops it, widen into the
                          full space until a stopping rule ends it (the default) */
  GT_SEARCH_QUICK,     /* the providers' default space, one pass */
  GT_SEARCH_FULL       /* the providers' full space (exhaustive), one pass, no stopping rule */
} gt_search_mode_t;

/* "floor", "quick", "full"; gt_search_mode_parse reads the same names. */
const char *gt_search_mode_name(gt_search_mode_t m);
bool gt_search_mode_parse(const char *s, gt_search_mode_t *out);

typedef struct gt_search_opts {
  gt_measure_opts_t measure;
  gt_backend_t backend;
  gt_entry_t entry;       /* the entry point the problem's calls come through: its baseline
                             provider (gt_provider_baseline) supplies the baseline candidate
                             (default GT_ENTRY_DEFAULT, the backend's usual path) */
  uint64_t workspace;     /* bytes of workspace the application gives those calls (0 unknown;
                             the baseline provider then assumes what frameworks give) */
  double min_improvement; /* fraction, default 0.03 */
  int finalists;          /* candidates re-timed after the prune pass (default 6) */
  int rounds;             /* interleaved rounds (default 15) */
  double budget_s;        /* wall-clock budget for the prune pass per shape (0 = none) */
  double settle_s;        /* run the baseline at least this long before the race, then until the
                             SM clock is stable (at most 10x), so every process races at the
                             clocks a sustained workload sees (default 0.3 s on CUDA) */
  int max_candidates;     /* per-provider cap passed to enumerate (0 = provider default) */
  bool exhaustive;        /* providers enumerate their whole space: mode GT_SEARCH_FULL */
  gt_search_mode_t mode;  /* default GT_SEARCH_FLOOR */
  gt_roof_t roof;         /* the device's roofline (gt_device_info_t.roof); all zero: no floor is
                             known and the floor rule never stops a shape */
  double floor_threshold; /* the floor rule: a baseline at >= (1 - this) of the floor ends the
                             search after the quick pass (default 0.05; < 0: rule off) */
  double widen_gain;      /* a widening improving the best quick time by less than this fraction
                             gains nothing (default 0.02) */
  int widen_patience;     /* that many no-gain widenings in a row end the search (default 3) */
  int widen_step;         /* candidates of the first widening; each next one doubles (default 32) */
  const char *providers;  /* comma-separated provider names to use (NULL = all ready) */
  const char *exclude;    /* comma-separated instance names never to run (faulted before) */
  double prune_fraction;  /* a quick-pass sample is this fraction of a careful one (default
                             0.25: enough to rank, not to report; >= 1: a careful sample) */
  bool gate_all;          /* gate every ranked candidate, not only until `finalists` have passed:
                             the rest keep GT_DISP_PRUNED with their verdict in gate (a benchmark
                             that reports how many fail) */
  bool profile_all;       /* profile: gate and time every candidate, no pruning */
  bool estimate_only;     /* stop after the baseline and print the cost estimate */
  bool baseline_only;     /* measure the baseline alone (gemmtune baseline) */
  const char *only;       /* race just this instance name against the baseline (replay) */
} gt_search_opts_t;

void gt_search_opts_init(gt_search_opts_t *o, gt_backend_t backend);

typedef enum gt_disp {
  GT_DISP_PASSED = 0,   /* gated and timed */
  GT_DISP_FAILED_GATE,  /* wrong answer: never timed into the result */
  GT_DISP_FAILED_RUN,   /* prepare/run/timing error or fault */
  GT_DISP_EXCLUDED,     /* provider excluded it (reason) */
  GT_DISP_PRUNED,       /* ranked out by the quick pass */
  GT_DISP_BUDGET,       /* not reached within --budget */
  GT_DISP_UNSEARCHED,   /* in the full space, but a stopping rule ended the search before it */
  GT_DISP__COUNT
} gt_disp_t;

const char *gt_disp_name(gt_disp_t d); /* "passed", "failed-gate", ... */

/* What ended a shape's search. */
typedef enum gt_stop {
  GT_STOP_NONE = 0,  /* not searched (baseline only, estimate, a failure) */
  GT_STOP_QUICK,     /* one pass over the default space (GT_SEARCH_QUICK, profile, --instance) */
  GT_STOP_FULL,      /* one pass over the full space (GT_SEARCH_FULL, --exhaustive) */
  GT_STOP_FLOOR,     /* the baseline is within floor_threshold of the floor */
  GT_STOP_NO_GAIN,   /* widen_patience widenings in a row gained less than widen_gain */
  GT_STOP_EXHAUSTED, /* every candidate of the full space was raced */
  GT_STOP_BUDGET,    /* --budget was spent */
  GT_STOP__COUNT
} gt_stop_t;

/* "quick space", "full space", "floor", "no-gain", "space exhausted", "budget" ("-" for none). */
const char *gt_stop_name(gt_stop_t s);

/* Whether name is one of the comma-separated names in list (exact match; NULL/"" = none). The
 * one reading of --providers and of the exclusion list. */
bool gt_search_name_in_list(const char *list, const char *name);

typedef struct gt_cand_result {
  gt_candidate_t cand;
  gt_disp_t disp;
  char why[256];
  double prune_us;   /* quick-pass time (ranking only), 0 if none */
  gt_summary_t time; /* interleaved re-time samples (n == 0 when not re-timed) */
  gt_gate_t gate;
  bool gated;
  const char *timing; /* "graph", "stream", "host" */
} gt_cand_result_t;

typedef struct gt_search_result {
  gt_problem_t problem;
  gt_cand_result_t *c;
  size_t n;
  int baseline;      /* index into c, -1 none */
  int best;          /* fastest passed candidate (may be the baseline), -1 none */
  bool improved;     /* best beats baseline by the threshold: row is valid */
  double threshold;  /* fraction required */
  double noise;      /* baseline robust spread (fraction) */
  gt_db_row_t row;
  int rounds, launches;
  int sm_clock_mhz;  /* median over rounds (0 unknown) */
  bool throttled;
  gt_status_t status; /* GT_OK unless the shape itself failed */
  char failure[256];
  double elapsed_s;
  double estimate_s; /* estimated cost of the prune pass (set once the baseline is timed) */
  size_t n_excluded, n_active;
  char unavailable[512]; /* providers that are not ready here (or failed to enumerate), with why */
  /* The budget the distance to the floor gave the shape. */
  gt_floor_t floor;      /* the problem's floor on o->roof (floor.us 0: not known) */
  gt_stop_t stop;        /* the rule that ended the search */
  char stop_why[256];    /* its numbers: "baseline at 97% of the bandwidth floor (12.3 us; the
                            rule: within 5%)", "3 widenings in a row gained under 2% (1.0%, ...)" */
  int widenings;         /* widening steps raced */
  size_t n_widened;      /* candidates they raced */
  size_t n_unsearched;   /* candidates of the full space no step reached */
  double best_quick_us;  /* the best quick-pass time (the baseline's included), ranking only */
} gt_search_result_t;

/* Progress hooks (all optional). on_candidate is called before a candidate is loaded/run, so a
 * supervisor can attribute a crash or hang to it. */
typedef struct gt_search_events {
  void *ctx;
  void (*on_phase)(void *ctx, const char *phase, size_t done, size_t total);
  void (*on_candidate)(void *ctx, const gt_candidate_t *c);
} gt_search_events_t;

/* Run the search for p. Returns GT_OK when the shape was searched (whether or not it improved);
 * an error when it could not be (no harness, no baseline, baseline failed the gate...), with
 * out->failure saying why. The baseline is the candidate marked is_baseline by the provider that
 * stands for o->entry on o->backend; without one, out->failure names that provider and why (its
 * exclusion reason for p, its unavailability, or that --providers left it out). out must be
 * freed with gt_search_result_free either way. */
gt_status_t gt_search_run(const gt_problem_t *p, const gt_search_opts_t *o,
                          const gt_search_events_t *ev, gt_search_result_t *out);
void gt_search_result_free(gt_search_result_t *r);

#ifdef __cplusplus
}
#endif
#endif
