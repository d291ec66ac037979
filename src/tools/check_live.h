/* gemmtune check --live (check_live.c): a DB row replayed through the path an application takes,
 * the runtime engine's dispatch serving the row against the plain entry point, each as a CUDA
 * graph of calls over rotated operands, replayed alternately. */
#ifndef GT_CHECK_LIVE_H
#define GT_CHECK_LIVE_H

#include <stdbool.h>

#include "core/gt_db.h"
#include "core/gt_status.h"

typedef struct gt_check_live {
  bool done;            /* both paths were timed */
  double plain_us;      /* median per call of the plain path (the baseline's cuBLAS call) */
  double served_us;     /* median per call with the engine serving the row */
  double speedup;       /* plain_us / served_us */
  int rounds;
  char plain_name[32];  /* the provider of the plain path ("cublas") */
  char why[400];        /* why it was not done ("" when done) */
} gt_check_live_t;

/* Replays row on CUDA device `device` (rounds alternations; 0 = 15). Run it in a worker process,
 * as check does: a candidate that faults poisons the CUDA context. Always GT_OK; out->done false
 * with out->why when the row cannot be replayed live (an epilogue row, the engine does not serve
 * it here, a CUDA failure, a build without CUDA). */
gt_status_t gt_check_live_row(const gt_db_row_t *row, int device, int rounds,
                              gt_check_live_t *out);

#endif
