/* Status codes shared by every layer, their names, and the process exit code each maps to.
 *
 * Functions return a gt_status_t; when they fail they also leave a human-readable message in a
 * thread-local buffer (gt_err_set / gt_err_msg), so a caller deep in the CLI can print
 * "shapes.csv:12: field 'tokens': not an integer: 'x'" without every layer threading strings. */
#ifndef GT_STATUS_H
#define GT_STATUS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_status {
  GT_OK = 0,
  GT_ERR_USAGE,       /* bad command line or API argument */
  GT_ERR_DATA,        /* malformed input file (shapes, DB, key): names file:line */
  GT_ERR_IO,          /* cannot open/read/write/rename a file */
  GT_ERR_NOMEM,       /* host or device allocation failed */
  GT_ERR_UNSUPPORTED, /* valid request this build/provider/device cannot serve */
  GT_ERR_NOT_FOUND,   /* no such provider, candidate, row or symbol */
  GT_ERR_DEVICE,      /* CUDA runtime/driver error, no device, kernel fault */
  GT_ERR_LIBRARY,     /* cuBLAS/cuBLASLt/CUPTI/NVML returned an error */
  GT_ERR_GATE,        /* a candidate failed the correctness gate */
  GT_ERR_TIMEOUT,     /* a candidate exceeded its time limit */
  GT_ERR_CONFLICT,    /* merge found facts it will not arbitrate silently */
  GT_ERR_INTERNAL     /* a bug in gemmtune */
} gt_status_t;

/* "GT_ERR_DATA" style name of a status. Never NULL. */
const char *gt_status_name(gt_status_t s);
/* Short lower-case description ("malformed input"). Never NULL. */
const char *gt_status_str(gt_status_t s);
/* sysexits(3)-style exit code: GT_ERR_DATA -> 65 (EX_DATAERR), GT_ERR_USAGE -> 64, ... */
int gt_status_exit_code(gt_status_t s);

/* Record the message describing the most recent failure of this thread. Returns s, so a
 * failing function can write `return gt_err_set(GT_ERR_DATA, "%s:%d: ...", ...)`. */
gt_status_t gt_err_set(gt_status_t s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
gt_status_t gt_err_vset(gt_status_t s, const char *fmt, va_list ap);
/* The last message set on this thread ("" when none). Valid until the next gt_err_set. */
const char *gt_err_msg(void);
void gt_err_clear(void);

#ifdef __cplusplus
}
#endif
#endif
