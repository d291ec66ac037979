/* The tuned DB: plain CSV, diffable and mergeable.
 *
 *   #gemmtune-db 4                       <- format line, exactly, first
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
#include "gt_live.h"
#include "gt_problem.h"
#include "gt_roofline.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_DB_FORMAT_LINE "#gemmtune-db 4"
/* Format 3 (before the live confirmation): the same file without the last four columns (live,
 * live_us, live_baseline_us, live_speedup; the header ends at 'amax_d'). Still read: its rows
 * record no confirmation (GT_LIVE_NONE), which is what every row of such a file had. */
#define GT_DB_FORMAT_LINE_V3 "#gemmtune-db 3"
/* Format 2 (before fp8 scaling was part of the key): the same file without the last five
 * columns (the fp8 key fields scale_a, scale_b, fast_accum, scale_d, amax_d; the header ends at
 * 'floor_pct'). Still read: its rows are keys without fp8 scaling (those fields at their
 * defaults), which is what every row of such a file was. */
#define GT_DB_FORMAT_LINE_V2 "#gemmtune-db 2"
/* Format 1 (gemmtune 0.1 before device identities and roofline floors): the same file without
 * the last five columns (device, device_mem_gib, floor_us, floor_bound, floor_pct; the header
 * ends at 'baseline'). Still read: its rows take the device name from the file's #device line
 * (when it has one) and no memory size, so they apply by what they record (gt_db_row_fit), and
 * their floors are unknown. */
#define GT_DB_FORMAT_LINE_V1 "#gemmtune-db 1"
/* Columns per row: the first GT_KEY_NFIELDS_V2 key fields, the first 20 result columns, the fp8
 * key fields (appended in format 3), then the live confirmation's 4 result columns (appended in
 * format 4). Each older format is the newer one cut short: a format-3 row ends at the fp8 key
 * fields, a format-2 row at the 20th result column, a format-1 row at the 15th. */
#define GT_DB_NRESULT 24
#define GT_DB_NRESULT_V3 20 /* the result columns before the fp8 key fields */
#define GT_DB_NCOLS (GT_KEY_NFIELDS + GT_DB_NRESULT)
#define GT_DB_NCOLS_V3 (GT_KEY_NFIELDS + GT_DB_NRESULT_V3)
#define GT_DB_NCOLS_V2 (GT_KEY_NFIELDS_V2 + GT_DB_NRESULT_V3)
#define GT_DB_NCOLS_V1 (GT_KEY_NFIELDS_V2 + 15)
/* Longest product name a row records (cudaDeviceProp.name is cut here). */
#define GT_DB_DEVICE_MAX 64

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
  /* The device beyond the key's arch and sm_count: an H100 SXM and an H200 are both sm_90 with
   * 132 SMs. "" or "-" (written "-") and 0: not recorded (a format-1 file). */
  char device[GT_DB_DEVICE_MAX]; /* product name, "NVIDIA H200" (cudaDeviceProp.name) */
  int device_mem_gib;            /* total device memory in GiB, rounded down (gt_db_mem_gib) */
  double floor_us;     /* the key's roofline floor on the device it was tuned on (0 unknown:
                          a row of an older file, or no roof known) */
  gt_bound_t floor_bound; /* what sets it: "bandwidth" / "compute" ("-" when unknown) */
  double floor_pct;    /* the winner's share of it, 100 * floor_us / time_us (0 unknown) */
  /* The live confirmation (gt_live.h): the winner re-timed through the path an application takes
   * before the row was written. CONFIRMED: the three numbers are that replay's (live_us below
   * live_baseline_us, live_speedup their ratio); any other state: all three 0. */
  gt_live_state_t live;
  double live_us;          /* the runtime engine serving the row, median per call */
  double live_baseline_us; /* the unmodified entry point the key was issued through */
  double live_speedup;     /* live_baseline_us / live_us */
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
 * baseline is malformed. CRLF line endings are accepted. A format-1 file (GT_DB_FORMAT_LINE_V1,
 * its header without the device and floor columns) reads too: its rows' device is the file's
 * #device line, their memory size and floors unknown; formats 2 and 3 read as their comments
 * above say (a format-3 row records no live confirmation). */
gt_status_t gt_db_read(const char *path, gt_db_t *db);
/* Parse NUL-terminated text (name used in messages and stored as db->path). Same rules. */
gt_status_t gt_db_parse(const char *name, const char *text, gt_db_t *db);
/* Parse len bytes (may contain NUL bytes, which are rejected as malformed). */
gt_status_t gt_db_parse_buf(const char *name, const char *text, size_t len, gt_db_t *db);

/* Check one row as the reader and writer do: key valid (gt_problem_validate), string fields
 * non-empty, fitting and free of ',', '"', CR and LF, times finite and > 0, time_us below
 * baseline_us, speedup matching baseline_us / time_us (1e-4 relative), 0 <= error <= error_bound,
 * rounds >= 1, spread_pct >= 0, sm_clock_mhz >= 0, the floor either unknown (floor_us 0,
 * bound NONE, floor_pct 0) or known (floor_us > 0, a bound, floor_pct matching 100 * floor_us /
 * time_us), and the live confirmation either confirmed (live_us > 0 and below live_baseline_us,
 * live_speedup matching their ratio) or not (the three 0). GT_ERR_DATA naming the field
 * otherwise. */
gt_status_t gt_db_row_check(const gt_db_row_t *row);

/* Write atomically (gt_file_write_atomic). Rows are sorted by key text for stable diffs.
 * Refuses, with GT_ERR_DATA and path left untouched: a row failing gt_db_row_check (a row whose
 * time is not below its baseline, a value containing ','), two rows with the same key, a bad
 * validator. The text is parsed back before it is written (GT_ERR_INTERNAL if it would not read). */
gt_status_t gt_db_write(const gt_db_t *db, const char *path);

/* Set or replace a validator line. */
gt_status_t gt_db_set_validator(gt_db_t *db, const char *name, const char *value);
const char *gt_db_get_validator(const gt_db_t *db, const char *name);

/* Kept keys: a key `tune` raced whose winner did not beat today's path gets no row, so the shim
 * leaves its calls alone. The DB still says it decided: a validator line
 *   #kept.<16 hex digits: gt_problem_hash of the key>=<device>: <what the race found>
 * lets `verify` tell a key tuned and kept (its calls rightly run the original) from a key no one
 * tuned whose sibling row misses it in one field (a near miss). Merge unions these lines; a key
 * with a row is not kept (the row wins, and tune drops the line when it writes one). */
#define GT_DB_KEPT_PREFIX "kept."
/* The validator name for key's kept line ("kept.0123456789abcdef"). */
void gt_db_kept_name(const gt_problem_t *key, char *name, size_t cap);
/* Record key as kept, note saying why (cut to fit a validator value; line breaks refused). */
gt_status_t gt_db_set_kept(gt_db_t *db, const gt_problem_t *key, const char *note);
/* The kept line's text for key, or NULL when the DB does not say it was kept. */
const char *gt_db_get_kept(const gt_db_t *db, const gt_problem_t *key);
/* Remove the kept lines of keys that have a row (a later run found a winner). Returns how many. */
size_t gt_db_drop_kept_with_rows(gt_db_t *db);
/* Whether a validator name is a kept line's. */
bool gt_db_is_kept_name(const char *name);

/* Record in row what its live confirmation found: state (gt_live_decide's), and for
 * GT_LIVE_CONFIRMED the replay's times (served_us with the runtime serving the row, plain_us the
 * unmodified entry point) and their ratio; any other state zeroes the three numbers. */
void gt_db_row_set_live(gt_db_row_t *row, gt_live_state_t state, double served_us,
                        double plain_us);
/* The speedup a row claims: its confirmed live speedup when the live confirmation timed it
 * (what an application meets), else the harness's. */
double gt_db_row_claim(const gt_db_row_t *row);

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

/* Remove the row whose key equals k. GT_ERR_NOT_FOUND when there is none. Pointers from
 * gt_db_lookup/explain are invalidated. */
gt_status_t gt_db_remove(gt_db_t *db, const gt_problem_t *k);

/* Merge src into dst. Files are named in reports by db->path ("dst"/"src" when empty).
 *  - Key only in src: added.
 *  - Same key, same timing method, same device: the faster row is kept only when it is faster
 *    by more than the two rows' recorded spreads together (slower/faster - 1 > (spread_pct of
 *    one + spread_pct of the other) / 100), reported as "kept FILE/INSTANCE X us over
 *    FILE/INSTANCE Y us for KEY (N% faster, beyond the combined spread S%)". Otherwise the
 *    times do not tell the rows apart: "tie within spread for KEY: ..." and the row with the
 *    lower spread is kept (then the lower time, then the row whose text sorts first), a choice
 *    that depends on the two rows only, never on which DB is dst.
 *  - Same key, different timing method or device (gt_db_row_fit): the times are not
 *    comparable, so nothing is arbitrated: keep dst's row (src's when prefer_src) and report a
 *    conflict naming both rows.
 *  - Validators: a '#gemmtune' version whose major number differs is a conflict; validators
 *    only in src are added; other differing values keep dst's (src's when prefer_src), reported.
 * Non-strict: conflicts are reported, dst receives the merge, GT_OK. Strict: any conflict returns
 * GT_ERR_CONFLICT (message lists the conflicting keys) and dst is left unchanged. A summary line
 * ends the report. Report lines go to fn (may be NULL). */
typedef void (*gt_db_report_fn)(void *ctx, const char *line);
gt_status_t gt_db_merge(gt_db_t *dst, const gt_db_t *src, bool strict, bool prefer_src,
                        gt_db_report_fn fn, void *ctx);

/* ---- the device a row was measured on --------------------------------------------------------
 * A row applies to a device only when the key's arch and sm_count match AND the product name and
 * memory size the row records match: an H100 SXM (80 GB) and an H200 (141 GB) share sm_90 and
 * 132 SMs, and a row tuned on one must not silently apply on the other. Memory is whole GiB
 * rounded down and two sizes match within 1 GiB, so boards of one product always match (drivers
 * reserve a few MiB more or less) while products of different sizes never do (79 vs 139 GiB). */
typedef struct gt_db_device {
  char arch[GT_ARCH_MAX];     /* "sm_90", "cpu" */
  int sm_count;               /* SMs or host cores */
  char name[GT_DB_DEVICE_MAX];/* product name; "" or "-": unknown */
  int mem_gib;                /* gt_db_mem_gib of the total memory; 0: unknown */
} gt_db_device_t;

/* Whole GiB of a byte count, rounded down (85,031,714,816 B -> 79). */
int gt_db_mem_gib(uint64_t bytes);
/* A product name as a row cell: ',' '"' and control characters become spaces, surrounding
 * blanks are cut, "" becomes "-". out has cap bytes (GT_DB_DEVICE_MAX for a row). */
void gt_db_device_name(const char *raw, char *out, size_t cap);
/* Record dev's name (through gt_db_device_name) and memory in row. */
void gt_db_row_set_device(gt_db_row_t *row, const gt_db_device_t *dev);

typedef enum gt_db_fit {
  GT_DB_FIT_HERE = 0,   /* key device and recorded identity match */
  GT_DB_FIT_UNRECORDED, /* key device matches; the row records no product name, or no memory
                           size (format 1): applied by what it records, with a warning */
  GT_DB_FIT_OTHER_KEY,  /* arch or sm_count differ: the key itself can never match here */
  GT_DB_FIT_OTHER       /* same arch and SM count, another product or memory size: refused */
} gt_db_fit_t;
/* How row relates to the device here. */
gt_db_fit_t gt_db_row_fit(const gt_db_row_t *row, const gt_db_device_t *here);
/* Whether rows a and b were measured on the same device as far as both record it (a field
 * either leaves unrecorded is not held against them). */
bool gt_db_rows_same_device(const gt_db_row_t *a, const gt_db_row_t *b);

/* "NVIDIA H200 (139 GiB)"; "NVIDIA H200 (memory not recorded)"; "an unrecorded device". */
int gt_db_row_device_str(const gt_db_row_t *row, char *buf, size_t cap);
int gt_db_device_str(const gt_db_device_t *dev, char *buf, size_t cap);
/* The refusal every tool and the runtime print for a GT_DB_FIT_OTHER row:
 * "rows tuned on NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA H200 (139 GiB): not
 * applied". */
int gt_db_refusal_str(const gt_db_row_t *row, const gt_db_device_t *here, char *buf, size_t cap);
/* The distinct devices db's rows were tuned on, "NVIDIA H100 80GB HBM3 (79 GiB; sm_90, 132
 * SMs), ..." (at most 4 named, then "and N more"). Returns how many distinct devices. */
size_t gt_db_devices_str(const gt_db_t *db, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
