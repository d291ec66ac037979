/* The live confirmation of a tuned row: before `tune` writes a winner, it is re-timed through the
 * path an application takes (the runtime engine serving it on the caller's stream, against the
 * unmodified entry point the key was issued through, each as a CUDA graph of many calls over
 * rotated operands, timed in warmed stretches of its own; src/tools/live_replay.c), and
 * `check --live` replays rows the same way. This file holds what needs no GPU: what a row records of its confirmation,
 * what a replay reports, and the rule that decides from it whether a winner is written.
 *
 * Why a second measurement: the harness times candidates its own way (one provider call per
 * graph node, its buffers, its workspace), and on 90 rows re-timed through PyTorch tune's
 * speedup was within 3% of the application's on only 23 of 36 stable rows, one row written at
 * 1.078x running at 0.978x. A row is a claim about the application, so the claim is checked on
 * the application's path before it is deployed. */
#ifndef GT_LIVE_H
#define GT_LIVE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a DB row records of its live confirmation (the 'live' column). */
typedef enum gt_live_state {
  GT_LIVE_NONE = 0,  /* "-": not recorded (a row written before live confirmation existed) */
  GT_LIVE_CONFIRMED, /* "confirmed": live_us / live_baseline_us / live_speedup are the replay's */
  GT_LIVE_OFF,       /* "off": tune ran with --no-live-confirm */
  GT_LIVE_SKIPPED,   /* "skipped": the confirmation could not run where the row was tuned (a
                        host provider, a build without CUDA, a row the runtime does not serve);
                        tune's note for the shape says which */
  GT_LIVE__COUNT
} gt_live_state_t;

/* "-", "confirmed", "off", "skipped" (as DB rows spell them). */
const char *gt_live_state_name(gt_live_state_t s);
/* Parse that spelling; false for anything else. */
bool gt_live_state_parse(const char *s, gt_live_state_t *out);

/* How a replay through the live path ended. */
typedef enum gt_live_outcome {
  GT_LIVE_OUT_OFF = 0, /* not attempted: switched off (--no-live-confirm) */
  GT_LIVE_OUT_SKIPPED, /* it cannot run here: why says what is missing */
  GT_LIVE_OUT_FAILED,  /* the runtime's dispatch failed to run the row's candidate (a launch, a
                          capture or a replay with it failed): why says what */
  GT_LIVE_OUT_DONE,    /* both paths were timed */
  GT_LIVE_OUT__COUNT
} gt_live_outcome_t;

#define GT_LIVE_NAME_MAX 192
#define GT_LIVE_WHY_MAX 400

/* What a replay reports. Plain data: it travels from a worker process to its supervisor as
 * bytes. */
typedef struct gt_live_result {
  int outcome;             /* gt_live_outcome_t */
  double plain_us;         /* DONE: median per call of the unmodified entry point */
  double served_us;        /* DONE: median per call with the runtime engine serving the row */
  double speedup;          /* DONE: plain_us / served_us */
  double plain_spread, served_spread; /* DONE: robust relative spreads of the rounds */
  int rounds;              /* DONE: timed replays of each path */
  int calls, sets;         /* DONE: calls per graph, rotated operand sets */
  char plain_name[GT_LIVE_NAME_MAX]; /* the plain path: the row's baseline instance
                                        ("cublas_gemmex_default", "cublaslt_heuristic_ws1048576") */
  char why[GT_LIVE_WHY_MAX];         /* SKIPPED / FAILED: why */
} gt_live_result_t;

/* "off", "skipped", "failed", "done". */
const char *gt_live_outcome_name(gt_live_outcome_t o);

/* The replay's timing plan. Each path is timed in GT_LIVE_BLOCKS stretches of its own, each
 * started with a warm-up (live_replay.c): alternating single replays, the GPU's power state is an
 * average of the two paths, which no application running one of them sees (a compute-bound
 * claim moved 5-8% on the H200, bench/results/honest/session_20261202c). The stretches run in
 * the order plain, served, served, plain, plain, served: each path runs first in one pair and
 * both are spread over the whole replay (mean positions 2.33 and 2.67 of 0..5), so a drift over
 * the replay moves both alike. */
#define GT_LIVE_BLOCKS 3
typedef struct gt_live_block {
  bool served;  /* false: the plain path */
  int samples;  /* timed replays in this stretch */
} gt_live_block_t;
/* plan[2 * GT_LIVE_BLOCKS] for `rounds` timed replays of each path: each path's stretches take
 * shares of rounds that differ by at most one and add up to it. False (plan untouched) when
 * rounds < 1. Pure. */
bool gt_live_block_plan(int rounds, gt_live_block_t plan[2 * GT_LIVE_BLOCKS]);

/* Whether `tune` writes a winner given its live confirmation lv. harness_speedup is what the race
 * measured (the row's speedup); threshold the fraction a row needs over the baseline (the race's:
 * max(--min-improvement, the baseline's noise)).
 *   - OFF: written, recorded "off";
 *   - SKIPPED: written on the harness's numbers, recorded "skipped", the note says why;
 *   - FAILED: not written: the application's calls would not get the winner;
 *   - DONE: written ("confirmed") only when plain_us / served_us beats 1 + max(threshold, the
 *     replay's own plain_spread), the rule the race applied to its baseline's noise
 *     (gt_stats_improves); otherwise not written, and the note gives the live numbers against
 *     the harness's, for the key's kept line.
 * *state receives what the row records (GT_LIVE_NONE when it is not written); note (cap bytes,
 * may be NULL) the sentence for the shape's note. Pure: no I/O. */
bool gt_live_decide(const gt_live_result_t *lv, double harness_speedup, double threshold,
                    gt_live_state_t *state, char *note, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
