/* Loading the tuned DBs a runtime reads: a colon-separated list of files (GEMMTUNE_DB, or the
 * dispatch API's argument), merged into one in-memory DB.
 *
 * This runs inside applications that were not written for gemmtune, so a bad entry never stops
 * the others: each missing, unreadable or malformed file produces exactly one warning line (naming
 * the file, and file:line for a parse error) and contributes no rows. Only regular files of at
 * most GT_FILE_MAX_HOST bytes are read, through non-blocking opens: a FIFO, a device, a directory
 * or a huge file is one such warning, never a hang. Pure C, no GPU. */
#ifndef GT_PRELOAD_DB_H
#define GT_PRELOAD_DB_H

#include <stddef.h>

#include "core/gt_db.h"
#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Receives one complete warning line (no trailing newline, no "gemmtune:" prefix). */
typedef void (*gt_rt_warn_fn)(void *ctx, const char *line);

typedef struct gt_rt_db_load_report {
  size_t files_ok;       /* files whose rows were taken */
  size_t files_bad;      /* files skipped with a warning */
  size_t rows;           /* rows in the merged DB */
  size_t rows_shadowed;  /* rows ignored because an earlier file had the same key */
} gt_rt_db_load_report_t;

/* Load every file in the colon-separated list `paths` into db (which must be initialised; rows
 * already in db are kept). When two files have a row for the same key, the file listed first wins
 * (like PATH). Empty list items ("a::b", a trailing ':') are ignored. Each bad file calls warn
 * once (warn may be NULL) and is skipped whole, even when only one of its rows is bad.
 * Returns GT_OK when every file loaded; otherwise the status of the first bad file, with
 * gt_err_msg naming it; the good files' rows are in db either way. rep may be NULL. */
gt_status_t gt_rt_db_load_list(const char *paths, gt_db_t *db, gt_rt_warn_fn warn, void *ctx,
                               gt_rt_db_load_report_t *rep);

#ifdef __cplusplus
}
#endif
#endif
