/* Reading the counters file the preload shim writes at exit when GEMMTUNE_STATS=path is set:
 * what the shim decided for every distinct key the process issued, and how many calls it served.
 *
 *   calls,hits,decision,provider,instance,entry,op,a_type,...,sm_count   <- header, exactly
 *   96,96,hit,kernels,gt_sm90_decodetc_bf16_tn_...,cublasGemmEx,gemm,bf16,...,132
 *
 * calls: every call with that key; hits: the calls the tuned candidate served. decision: hit (a
 * row applies and its candidate is prepared), miss (no row for the key), pass (the shim passed the
 * key through without deciding it), notused (a row exists but cannot run here), deferred (first
 * seen during CUDA graph capture and never decided outside it). provider/instance: the row's
 * choice ("" or "-" when there is none). entry: the cuBLAS entry point that issued the key. The
 * 23 key columns follow in gt_key_field_names order. Calls whose key the shim could not build
 * (decision pass) are counted per entry point in rows whose key columns are all "-". A key may
 * appear on several rows (one per entry point, or per GPU with different decisions); they are
 * combined here, since verify judges keys. Lines starting with '#' are comments. The writer is
 * src/runtime/capture_csv.h (gt_rt_stats_*).
 *
 * Pure C: the CLI reads it; CPU tests cover it. */
#ifndef GT_SHIM_STATS_H
#define GT_SHIM_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "core/gt_problem.h"
#include "core/gt_status.h"
#include "providers/gt_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_SHIM_STATS_LEAD "calls,hits,decision,provider,instance,entry"

typedef enum gt_shim_decision {
  GT_SHIM_HIT = 0,
  GT_SHIM_MISS,
  GT_SHIM_PASS,
  GT_SHIM_NOTUSED,
  GT_SHIM_DEFERRED,
  GT_SHIM__COUNT
} gt_shim_decision_t;

/* "hit", "miss", "pass", "notused", "deferred". */
const char *gt_shim_decision_name(gt_shim_decision_t d);

typedef struct gt_shim_key {
  gt_problem_t key;
  uint64_t calls, hits;
  gt_shim_decision_t decision;
  char provider[32];
  char instance[GT_NAME_MAX];
  char entry[48];
} gt_shim_key_t;

/* Calls the shim passed through without building a key, per entry point ("-" unknown). */
typedef struct gt_shim_unkeyed {
  char entry[48];
  uint64_t calls;
} gt_shim_unkeyed_t;

typedef struct gt_shim_stats {
  gt_shim_key_t *v;
  size_t n, cap;
  gt_shim_unkeyed_t *u;
  size_t nu, capu;
  int files; /* files merged in */
} gt_shim_stats_t;

/* The exact header line (no newline): GT_SHIM_STATS_LEAD + ',' + the 23 key field names. */
const char *gt_shim_stats_header(void);

/* Parse a stats file's text strictly (header, decisions, counters with hits <= calls, keys that
 * gt_problem_validate accepts or all "-"). Rows of the same key are combined as by
 * gt_shim_stats_merge (entry points joined with '+'). out is output only; on failure it is empty
 * and the message names name:line and the column (GT_ERR_DATA). */
gt_status_t gt_shim_stats_parse(const char *name, const char *text, gt_shim_stats_t *out);
gt_status_t gt_shim_stats_read(const char *path, gt_shim_stats_t *out);

/* Add src into dst (several processes of one workload): counters of the same key add up; when
 * the decisions differ, the one that explains a missed call is kept (notused, deferred, pass,
 * miss, then hit). */
gt_status_t gt_shim_stats_merge(gt_shim_stats_t *dst, const gt_shim_stats_t *src);

void gt_shim_stats_free(gt_shim_stats_t *s);

#ifdef __cplusplus
}
#endif
#endif
