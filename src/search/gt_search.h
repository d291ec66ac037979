/* The search driver: for one problem, baseline -> enumerate -> prune -> gate -> interleaved
 * re-time -> improvement decision -> (maybe) a DB row. It knows candidates only through the
 * provider interface and measures only through the harness interface.
 *
 * The quick prune pass only ranks: its times are never reported as results. Finalists (and
 * always the baseline) are gated on fresh inputs, then re-timed in interleaved rounds
 * (A B C, B C A, ...); the winner must beat the baseline's median by max(min_improvement, the
 * baseline's own robust spread). A row slower than its baseline is never produced. */
#ifndef GT_SEARCH_H
#define GT_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "harness/gt_harness.h"
#include "providers/gt_provider.h"
#include "core/gt_db.h"
#include "core/gt_metric.h"
#include "core/gt_problem.h"
#include "core/gt_stats.h"

#ifdef __cplusplus
extern "C" {
#endif

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
  bool exhaustive;        /* providers enumerate their whole space */
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
  GT_DISP__COUNT
} gt_disp_t;

const char *gt_disp_name(gt_disp_t d); /* "passed", "failed-gate", ... */

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
