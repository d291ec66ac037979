/* The shapes file `gemmtune capture` produces: what the preload shim recorded about a workload's
 * GEMMs, in the form gt_shapes_read takes back.
 *
 *   calls,time_us,share,op,a_type,...,sm_count      <- header, first line, no comment lines
 *   120,1834.250,0.412345,gemm,bf16,...,132        <- one row per distinct key
 *
 * calls: every call with that key. time_us: GPU microseconds spent in those calls (measured with
 * events around calls made outside graph capture; calls without a measurement are credited the
 * key's mean measured time; 0 when none was measured). share: time_us over the sum of time_us of
 * all rows, as a fraction in [0,1] (0 when nothing was timed). Key columns are the 23 fields in
 * gt_key_field_names order, values exactly as gt_problem_field_str prints them. Rows are sorted by
 * share descending, then calls descending, then key text, so the file is stable. Pure C. */
#ifndef GT_CAPTURE_CSV_H
#define GT_CAPTURE_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "core/gt_problem.h"
#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_rt_capture_rec {
  gt_problem_t key;
  uint64_t calls;
  double time_us; /* total, extrapolation already applied */
} gt_rt_capture_rec_t;

/* The header line (no newline): "calls,time_us,share," + the key field names. */
const char *gt_rt_capture_header(void);

/* Format recs as the file's text (malloc'ed, NUL-terminated, *len without the NUL). recs is
 * not modified. GT_ERR_NOMEM on allocation failure. */
gt_status_t gt_rt_capture_format(const gt_rt_capture_rec_t *recs, size_t n, char **text,
                                 size_t *len);

/* Format and write atomically to path (gt_file_write_atomic). */
gt_status_t gt_rt_capture_write(const char *path, const gt_rt_capture_rec_t *recs, size_t n);

#ifdef __cplusplus
}
#endif
#endif
