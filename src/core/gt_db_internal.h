/* What the pieces of the tuned DB share, private to src/core/gt_db*.c: the result-column table,
 * the lookup index, the validator checks and the error-prefix helpers.
 *
 *   gt_db.c        the DB in memory: columns, init/free/copy, index, lookup, validators
 *   gt_db_read.c   what a file may contain, and parsing it (cell and row checks, header)
 *   gt_db_write.c  formatting rows, gt_db_write, gt_db_put
 *   gt_db_merge.c  gt_db_explain, gt_db_merge
 *   gt_db_device.c the device a row was measured on: identity text, matching, refusals
 *
 * Each piece includes this header and gt_db.h only, never another piece. */
#ifndef GT_DB_INTERNAL_H
#define GT_DB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_db.h"

/* ---- columns ------------------------------------------------------------------------------ */

/* The result columns after the key, as data: the reader, the writer and the header all walk
 * this one table, so a column cannot be added to one and forgotten in another. */
typedef enum gt_db_col_kind {
  GT_DB_COL_STR,  /* char[size], non-empty, no ',' '"' CR LF, no surrounding whitespace */
  GT_DB_COL_OPTSTR, /* the same, but "" is allowed in memory (not recorded) and written "-" */
  GT_DB_COL_TIME, /* double, printed %.9g: microseconds need more digits than ratios */
  GT_DB_COL_DBL,  /* double, printed %.6g */
  GT_DB_COL_INT,  /* int */
  GT_DB_COL_BOOL, /* bool, 0 or 1 */
  GT_DB_COL_BOUND, /* gt_bound_t, by gt_bound_name ("-" for none) */
  GT_DB_COL_LIVE   /* gt_live_state_t, by gt_live_state_name ("-" for none) */
} gt_db_col_kind_t;

typedef struct gt_db_col {
  const char *name;
  gt_db_col_kind_t kind;
  size_t off, size; /* the member of gt_db_row_t */
} gt_db_col_t;

extern const gt_db_col_t gt_db_result_cols[GT_DB_NRESULT];

/* Name of column c of a row (0-based: the pre-fp8 key fields, the first results, the fp8 key
 * fields, the live results). */
const char *gt_db_col_name(int c);
/* The key field column c holds (an index into gt_key_field_names), or -1 for a result column. */
int gt_db_col_key_field(int c);
/* Index into gt_db_result_cols of column c, or -1 for a key column. */
int gt_db_col_result(int c);
/* The header line of a format-3 file (GT_DB_NCOLS_V3 columns: gt_db_header() cut before the live
 * columns; no newline): read, never written. */
const char *gt_db_header_v3(void);
/* The header line of a format-2 file (GT_DB_NCOLS_V2 columns: gt_db_header() cut before the fp8
 * key fields; no newline): read, never written. */
const char *gt_db_header_v2(void);
/* The header line of a format-1 file (GT_DB_NCOLS_V1 columns: gt_db_header() cut before
 * 'device'; no newline): read, never written. */
const char *gt_db_header_v1(void);

/* A speedup printed with %.6g and times with %.9g agree with baseline/time to about 5e-6. */
#define GT_DB_SPEEDUP_RTOL 1e-4
/* Key text: 28 fields, each name=value with values well under 64 chars. */
#define GT_DB_KEY_TEXT_MAX 1024

/* ---- the lookup index (gt_db.c) ----------------------------------------------------------- */

/* Make the index cover every row and leave room for one more. */
gt_status_t gt_db_index_ready(gt_db_t *db);
/* Row index of key k (hash h = gt_problem_hash(k)), or -1. Requires gt_db_index_ready. */
long gt_db_index_find(const gt_db_t *db, const gt_problem_t *k, uint64_t h);
/* Append a row whose key is known to be absent. Requires gt_db_index_ready. */
void gt_db_index_append(gt_db_t *db, const gt_db_row_t *r, uint64_t h);

/* ---- validators --------------------------------------------------------------------------- */

/* Whether name=value may be a validator line (gt_db_read.c); writes the reason into why when
 * not. */
bool gt_db_validator_ok(const char *name, const char *value, char *why, size_t cap);
/* Index of the validator called name, or -1 (gt_db.c). */
long gt_db_validator_find(const gt_db_t *db, const char *name);
/* Set or replace a validator already checked by gt_db_validator_ok (gt_db.c). */
gt_status_t gt_db_validator_store(gt_db_t *db, const char *name, const char *value);

/* ---- error messages (gt_db.c) ------------------------------------------------------------- */

/* Keep the current message, change the status (a key parser may say GT_ERR_USAGE where, inside
 * a file, the problem is malformed data). */
gt_status_t gt_db_err_restatus(gt_status_t s);
/* Re-issue the current message with a prefix ("db.csv:7: "). */
gt_status_t gt_db_err_prefix(gt_status_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
