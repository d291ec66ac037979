/* The tuned DB: plain CSV, diffable and mergeable.
 *
 *   #gemmtune-db 1                       <- format line, exactly, first
 *   #gemmtune=0.1.0                      <- validator lines: name=value facts the rows depend on
 *   #created=2026-11-29T10:00:00Z
 *   op,a_type,...,sm_count,provider,lib,instance,...   <- header row, exactly gt_db_header()
 *   gemm,bf16,...                         <- one row per key
 *
 * The reader is strict: every error names file:line and the field, and a failed read leaves the
 * caller with an empty DB rather than a partial one. Writes go to a temp file in the same
 * directory, are fsync'ed and renamed over the target, so a reader sees the old file or the new
 * one, never a torn one; a write that fails (a row slower than its baseline, a value the reader
 * would reject, an I/O error) leaves the target byte-identical.
 *
 * Number formats: times (time_us, baseline_us) are printed with %.9g, the other doubles with
 * %.6g, booleans as 0/1. Key cells must be in the canonical spelling gt_problem_field_str prints
 * ("f16", not "fp16"), so read -> write reproduces a file byte for byte. */
#ifndef GT_DB_H
#define GT_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_fileio.h" /* gt_file_write_atomic, which gt_db_write uses */
#include "gt_problem.h"
#include "gt_roofline.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_DB_FORMAT_LINE "#gemmtune-db 1"
/* Columns per row: the key fields, then the 18 result columns. */
#define GT_DB_NCOLS (GT_KEY_NFIELDS + 18)
/* Files written before rows recorded their roofline floor have the first 15 result columns (the
 * header ends at 'baseline'): they read, with the floor unknown, and are written back whole. */
#define GT_DB_NCOLS_V1 (GT_KEY_NFIELDS + 15)

typedef struct gt_db_row {
  gt_problem_t key;
  char provider[32];   /* provider name */
  char lib[64];        /* dependency the choice needs ("cublaslt=130100"), "-" for none */
  char instance[192];  /* instance name, parses back to the candidate */
  double time_us;      /* winner, median */
  double baseline_us;  /* baseline on the same harness, same run */
  double speedup;      /* baseline_us / time_us */
  double error;        /* gate: normwise relative error */
  double error_bound;  /* gate: bound it passed */
  char timing[32];     /* how it was timed: "cold-graph", "warm-graph", "cold-host", ... */
  int rounds;          /* interleaved rounds */
  double spread_pct;   /* robust spread of the winner's samples, percent */
  int sm_clock_mhz;    /* median SM clock seen (0 unknown) */
  bool splitk_searched;
  bool throttled;      /* a round saw thermal/power clock events */
  char baseline[192];  /* baseline's instance name */
  double floor_us;     /* the key's roofline floor on the device it was tuned on (0 unknown:
                          a row of an older file, or no roof known) */
  gt_bound_t floor_bound; /* what sets it: "bandwidth" / "compute" ("-" when unknown) */
  double floor_pct;    /* the winner's share of it, 100 * floor_us / time_us (0 unknown) */
} gt_db_row_t;

typedef struct gt_db_validator {
  char name[48];
  char value[160];
} gt_db_validator_t;

/* Rows are added through gt_db_put (or read/merge), which keep a hash index on the key for
 * gt_db_lookup. Editing rows[i].key in place, or appending to rows by hand, bypasses the index;
 * lookup then falls back to a linear scan when it sees rows it did not index, but an edited key
 * may be missed. A gt_db_t owns its arrays: do not copy the struct and free both copies. */
typedef struct gt_db {
  gt_db_row_t *rows;
  size_t n, cap;
  gt_db_validator_t *validators;
  size_t nval, capval;
  char path[512]; /* where it was read from ("" for new) */
  /* Lookup index (private): open addressing over key hashes, slot = row index + 1, 0 = empty. */
  size_t *slots;
  uint64_t *hashes; /* per row, parallel to rows */
  size_t hashes_cap;
  size_t nslots;
  size_t nindexed; /* rows covered by the index */
} gt_db_t;

/* An empty DB (all zero; `gt_db_t db = {0};` is equivalent). */
void gt_db_init(gt_db_t *db);
/* Release everything and leave db empty (initialized). Safe on an empty DB. */
void gt_db_free(gt_db_t *db);
/* Deep copy of src into dst (dst's previous contents are not freed). */
gt_status_t gt_db_copy(gt_db_t *dst, const gt_db_t *src);

/* The exact header line (no newline). */
const char *gt_db_header(void);

/* Read path strictly. db is output only (its previous contents are not freed: pass a fresh or
 * freed DB). On error db is left empty and the message names path:line and the field
 * (GT_ERR_DATA); a file that cannot be opened or read is GT_ERR_IO naming the path. A file whose
 * last line lacks its newline is rejected as truncated. A row whose time is not below its
 * baseline is malformed. CRLF line endings are accepted. A file with the older header (without
 * the floor columns, GT_DB_NCOLS_V1) reads too, its rows' floors unknown. */
gt_status_t gt_db_read(const char *path, gt_db_t *db);
/* Parse NUL-terminated text (name used in messages and stored as db->path). Same rules. */
gt_status_t gt_db_parse(const char *name, const char *text, gt_db_t *db);
/* Parse len bytes (may contain NUL bytes, which are rejected as malformed). */
gt_status_t gt_db_parse_buf(const char *name, const char *text, size_t len, gt_db_t *db);

/* Check one row as the reader and writer do: key valid (gt_problem_validate), string fields
 * non-empty, fitting and free of ',', '"', CR and LF, times finite and > 0, time_us below
 * baseline_us, speedup matching baseline_us / time_us (1e-4 relative), 0 <= error <= error_bound,
 * rounds >= 1, spread_pct >= 0, sm_clock_mhz >= 0, and the floor either unknown (floor_us 0,
 * bound NONE, floor_pct 0) or known (floor_us > 0, a bound, floor_pct matching 100 * floor_us /
 * time_us). GT_ERR_DATA naming the field otherwise. */
gt_status_t gt_db_row_check(const gt_db_row_t *row);

/* Write atomically (gt_file_write_atomic). Rows are sorted by key text for stable diffs.
 * Refuses, with GT_ERR_DATA and path left untouched: a row failing gt_db_row_check (a row whose
 * time is not below its baseline, a value containing ','), two rows with the same key, a bad
 * validator. The text is parsed back before it is written (GT_ERR_INTERNAL if it would not read). */
gt_status_t gt_db_write(const gt_db_t *db, const char *path);

/* Set or replace a validator line. */
gt_status_t gt_db_set_validator(gt_db_t *db, const char *name, const char *value);
const char *gt_db_get_validator(const gt_db_t *db, const char *name);

/* Insert a row, replacing an existing row with the same key. Rejects rows that fail
 * gt_db_row_check, in particular rows not faster than their baseline (GT_ERR_DATA). A speedup of 0
 * is filled in as baseline_us / time_us. Pointers from gt_db_lookup/explain are invalidated. */
gt_status_t gt_db_put(gt_db_t *db, const gt_db_row_t *row);

/* Exact lookup: the row whose key equals k, or NULL. O(1) through the index. */
const gt_db_row_t *gt_db_lookup(const gt_db_t *db, const gt_problem_t *k);

/* Explain a miss: up to max nearest rows (fewest differing fields first; ties by distance in
 * m/n/k) with the differing-fields text. Returns how many were written. */
typedef struct gt_db_near {
  const gt_db_row_t *row;
  int nfields;       /* number of differing key fields */
  double distance;   /* |log(m/m')| + |log(n/n')| + |log(k/k')| */
  char diff[512];    /* "n: 2688 vs 2624" (query value first) */
} gt_db_near_t;
size_t gt_db_explain(const gt_db_t *db, const gt_problem_t *k, gt_db_near_t *out, size_t max);

/* Merge src into dst. Files are named in reports by db->path ("dst"/"src" when empty).
 *  - Key only in src: added.
 *  - Same key, same timing method: keep the faster (dst on a tie) and report
 *    "kept FILE/INSTANCE X us over FILE/INSTANCE Y us for KEY".
 *  - Same key, different timing method: the times are not comparable, so nothing is arbitrated:
 *    keep dst's row (src's when prefer_src) and report a conflict naming both rows.
 *  - Validators: a '#gemmtune' version whose major number differs is a conflict; validators
 *    only in src are added; other differing values keep dst's (src's when prefer_src), reported.
 * Non-strict: conflicts are reported, dst receives the merge, GT_OK. Strict: any conflict returns
 * GT_ERR_CONFLICT (message lists the conflicting keys) and dst is left unchanged. A summary line
 * ends the report. Report lines go to fn (may be NULL). */
typedef void (*gt_db_report_fn)(void *ctx, const char *line);
gt_status_t gt_db_merge(gt_db_t *dst, const gt_db_t *src, bool strict, bool prefer_src,
                        gt_db_report_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
