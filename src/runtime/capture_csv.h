/* The shapes file `gemmtune capture` produces: what the preload shim recorded about a workload's
 * GEMMs, in the form gt_shapes_read takes back.
 *
 *   calls,time_us,share,entry,workspace,not_tunable,op,a_type,...,sm_count  <- header, after '#'
 *   120,1834.250,0.412345,ltmatmul,1048576,-,gemm,bf16,...,132              <- one row per key
 *   4,96.000,0.021567,gemmex,0,pointer-array batch (cublasGemmBatchedEx): ...,gemm,bf16,...,132
 *
 * calls: every call with that key, a call made under CUDA graph capture counted once per
 * execution in graph replays when the kernel tracer could count them (the shim's preamble line
 * '#gemmtune-replays ...' says whether it did), else once. time_us: GPU microseconds spent in
 * those calls (measured with events around calls made outside graph capture, replays' kernel
 * times from the tracer; calls without a measurement are credited the key's mean measured time;
 * 0 when none was measured). share: time_us over the sum of time_us of
 * all rows, as a fraction in [0,1] (0 when nothing was timed): marked rows count, since their
 * time is GEMM time of the workload too. entry: the entry point the key's calls came through
 * (gt_entry_name: gemmex, ltmatmul), which decides the baseline `tune` races against;
 * workspace: the largest workspace in bytes a call offered (cublasLtMatmul; 0 none).
 * not_tunable: "-" for a key `tune` can tune, else why it cannot (a GEMM the workload ran that
 * no key states fully, or that gemmtune must not serve: pointer-array or grouped batches, FP8
 * scaling, device pointer mode...); the key columns then describe it as well as they can.
 * Key columns are the 23 fields in gt_key_field_names order, values exactly as
 * gt_problem_field_str prints them. Rows are sorted by share descending, then calls descending,
 * then key text, so the file is stable. Files written before the not_tunable column existed
 * (header without it) are still capture files: gt_shapes_read reads them, the shim adds to them.
 * Pure C. */
#ifndef GT_CAPTURE_CSV_H
#define GT_CAPTURE_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gt_entry.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_RT_REASON_MAX 160

typedef struct gt_rt_capture_rec {
  gt_problem_t key;
  uint64_t calls;
  double time_us; /* total, extrapolation already applied */
  gt_entry_t entry;
  uint64_t workspace;
  char not_tunable[GT_RT_REASON_MAX]; /* "" = tunable */
} gt_rt_capture_rec_t;

/* The header line (no newline): "calls,time_us,share,entry,workspace,not_tunable," + the key
 * field names. */
const char *gt_rt_capture_header(void);

/* Format recs as the file's text (malloc'ed, NUL-terminated, *len without the NUL). recs is
 * not modified. GT_ERR_NOMEM on allocation failure. */
gt_status_t gt_rt_capture_format(const gt_rt_capture_rec_t *recs, size_t n, char **text,
                                 size_t *len);

/* Format and write atomically to path (gt_file_write_atomic). */
gt_status_t gt_rt_capture_write(const char *path, const gt_rt_capture_rec_t *recs, size_t n);
/* The same, with `preamble` ('#' lines, each ending in a newline; may be NULL) written before the
 * header: facts about the whole capture, such as the libraries the process loaded, that the
 * shapes reader skips and `tune` reads. */
gt_status_t gt_rt_capture_write_with(const char *path, const char *preamble,
                                     const gt_rt_capture_rec_t *recs, size_t n);

/* ---- GEMMTUNE_STATS: what the runtime did with each key, for `gemmtune verify` ----------------
 *
 *   calls,hits,decision,provider,instance,entry,op,a_type,...,sm_count    <- header, first line
 *   120,120,hit,kernels,gt_sm90_decode_...,cublasGemmEx,gemm,bf16,...,132
 *   3,0,pass,-,-,cublasGemmEx,-,-,...,-
 *
 * One row per distinct key (and entry point). calls: every call with that key; hits: the calls
 * the tuned candidate served. decision: hit (a row applies and its candidate ran), miss (no row),
 * notused (a row exists but cannot run here: library version, provider, prepare or launch
 * failure), deferred (seen only during CUDA graph capture, so never decided), pass (passed
 * through untouched: the call was not understood, e.g. device pointer mode or a non-default algo,
 * or the process has another cuBLAS). provider/instance: the DB row's, "-" when there is none.
 * entry: the entry point ("cublasGemmEx", "cublasLtMatmul", ...). Key columns: the 23 fields in
 * gt_key_field_names order as gt_problem_field_str prints them; rows of calls whose key could not
 * be built (decision pass) have "-" in every key column, one such row per entry point. Rows are
 * sorted by calls descending, then by the rest of the line. Pure C. */

typedef struct gt_rt_stats_rec {
  bool keyed;           /* false: no key (key columns are "-") */
  gt_problem_t key;
  uint64_t calls, hits;
  const char *decision; /* "hit", "miss", "pass", "notused", "deferred" */
  const char *provider; /* NULL or "" = "-" */
  const char *instance; /* NULL or "" = "-" */
  const char *entry;
} gt_rt_stats_rec_t;

/* The header line (no newline): "calls,hits,decision,provider,instance,entry," + key names. */
const char *gt_rt_stats_header(void);

/* Format recs as the file's text (malloc'ed). prev (may be NULL) is the text of a stats file
 * another process of the same workload wrote to the same path: when its first line is the
 * header, its rows are added in, summing calls and hits of rows whose other columns are all
 * equal; otherwise it is ignored. GT_ERR_NOMEM on allocation failure. */
gt_status_t gt_rt_stats_format(const gt_rt_stats_rec_t *recs, size_t n, const char *prev,
                               char **text, size_t *len);

/* Merge with the file at path if there is one (see gt_rt_stats_format), then write atomically.
 * Callers that share the path between processes serialise calls (the shim locks the directory).
 * The file at path is read only when it is a regular file of at most GT_FILE_MAX_HOST bytes
 * (opened non-blocking: a FIFO cannot stall the caller) and replaced only when it is empty or a
 * stats file; anything else is an error (GT_ERR_IO or GT_ERR_DATA naming path), nothing written.
 * Merged counters saturate at UINT64_MAX. */
gt_status_t gt_rt_stats_write(const char *path, const gt_rt_stats_rec_t *recs, size_t n);

/* Whether text starts with the stats header line, or with a capture header line (today's, or
 * the one before the not_tunable column; '#' lines before it skipped): what the shim checks
 * before it replaces a file it finds at its output path. */
bool gt_rt_stats_is_stats_text(const char *text);
bool gt_rt_capture_is_capture_text(const char *text);

#ifdef __cplusplus
}
#endif
#endif
