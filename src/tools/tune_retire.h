/* Retiring a tuned row (tune_retire.c): when `tune` re-tunes a key its DB already has a row for
 * and no candidate wins, the old row is not left deployed on the strength of an old race. */
#ifndef GT_TUNE_RETIRE_H
#define GT_TUNE_RETIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/gt_db.h"
#include "search/gt_search.h"

/* The DB's row for the key being tuned, and how its choice did in this run's race. Plain data:
 * it travels from the shape's worker to the supervisor as bytes. */
typedef struct gt_tune_prev {
  char provider[32], instance[192]; /* the row's choice; "" when the DB has no row for the key
                                       on this device */
  double speedup;                   /* what the row recorded */
  double row_us, row_base_us;       /* the row's recorded times: with the choice, what tells the
                                       row this race disproved from one another run wrote since */
  int disp;                         /* the choice's gt_disp_t in this race; -1 not in it (its
                                       provider not used this run, or not enumerated) */
  double us;                        /* its re-timed median, 0 when it was not re-timed */
  char why[256];                    /* its disposition's reason */
} gt_tune_prev_t;

/* prev for key k from db: the row when it applies on the device here (its recorded identity
 * matches or is not recorded); empty otherwise. A row of another product is another device's
 * fact: this run's race says nothing about it. */
void gt_tune_prev_find(const gt_db_t *db, const gt_problem_t *k, const gt_db_device_t *here,
                       gt_tune_prev_t *prev);
/* Fill prev's disp/us/why from a finished race (the worker side). */
void gt_tune_prev_observe(const gt_search_result_t *r, gt_tune_prev_t *prev);
/* Whether a race that wrote no row retires prev: its choice was in the race and lost it
 * (timed and not ahead of the baseline by the threshold, ranked out, failed the gate or to run,
 * or excluded by its provider now). A choice the race did not reach (--budget, another
 * provider set, the full space not searched) retires nothing. why gets the reason, for
 * "retired: KEY: WHY": "the baseline is now within 1.2% of kernels/INST (a row needs 3.0%)".
 * base_us and best_us are the race's baseline and best times (best_us 0: none), threshold the
 * fraction a row needed. */
bool gt_tune_prev_retires(const gt_tune_prev_t *prev, double base_us, double best_us,
                          double threshold, char *why, size_t cap);
/* The same for a race whose winner (winner_provider/winner_instance) beat the baseline in the
 * harness but was not confirmed live (core/gt_live.h; live_why says what the replay found), so no
 * row was written. prev is retired when it is that winner (the live path disproved its claim: why
 * quotes live_why), or when it raced and lost outright (re-timed within the threshold of the
 * baseline, or it failed the gate, failed to run, or is excluded now). A choice that beat the
 * baseline by the threshold in the harness but was not the winner, or that only lost the quick
 * pass, was neither confirmed nor disproved live: it keeps its row. */
bool gt_tune_prev_retires_unconfirmed(const gt_tune_prev_t *prev, const char *winner_provider,
                                      const char *winner_instance, const char *live_why,
                                      double base_us, double threshold, char *why, size_t cap);

#endif
