/* The grouped_mm keys of a `gemmtune tune` run (torch._grouped_mm, MoE experts), raced in a torch
 * process (tune_grouped.c). Their baseline is torch's own function, which only a process with
 * torch can run, so tune hands them to `python3 -m gemmtune.grouped` (python/gemmtune/grouped):
 * torch's path against every own grouped kernel instance, the rows it wins written to a DB that
 * tune reads back and puts into its own, one outcome per key. */
#ifndef GT_TUNE_GROUPED_H
#define GT_TUNE_GROUPED_H

#include <stdbool.h>
#include <stddef.h>

#include "core/gt_db.h"
#include "core/gt_status.h"

typedef struct gt_tune_grouped_opts {
  const char *shapes_path; /* the shapes file tune reads (the race reads the same lines) */
  const int *lines;        /* the file lines of the keys to race */
  size_t nlines;
  int device;              /* CUDA device */
  int rounds;              /* graph replays timed per candidate (0: the race's default) */
  double threshold_pct;    /* the margin an own instance must win by */
  double timeout_s;        /* the whole race; it is stopped (and its finished keys kept) after */
} gt_tune_grouped_opts_t;

/* One key's outcome as the race reported it. */
typedef struct gt_tune_grouped_key {
  int line;
  char outcome[16]; /* improved, unchanged, failed, skipped; "" when the race never reached it */
  double base_us, best_us;
  char winner[256]; /* provider/instance, or "-" */
  char note[512];
} gt_tune_grouped_key_t;

/* Runs the race over o's lines. keys[i] is lines[i]'s outcome ("" when the race did not report
 * it); rows holds the rows it wrote (gt_db_init'ed here; the caller frees it). Returns GT_OK when
 * the race ran (some keys may still have failed); otherwise an error with why: no interpreter,
 * torch not importable, no CUDA device for torch, no libgemmtune_grouped.so, the package not found
 * (why then explains it for every key). The interpreter is $GEMMTUNE_PYTHON, else python3, the
 * library $GEMMTUNE_GROUPED_LIB, else the one beside this binary (gt_runtime_find_lib); the
 * package is found beside an installed gemmtune (the wheel's layout) or in the source tree this
 * binary was built from, and put in front of PYTHONPATH. */
gt_status_t gt_tune_grouped_race(const gt_tune_grouped_opts_t *o, gt_tune_grouped_key_t *keys,
                                 gt_db_t *rows, char *why, size_t cap);

/* Parses one line of the race's --results file ("LINE\tOUTCOME\tBASE_US\tBEST_US\tWINNER\tNOTE")
 * into k. Returns false for a line that is not one (it is then ignored). */
bool gt_tune_grouped_parse_result(const char *line, gt_tune_grouped_key_t *k);

#endif
