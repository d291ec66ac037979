/* The kernel trace file libgemmtune_trace.so writes at exit and `gemmtune verify` reads: every
 * GPU kernel the process ran, aggregated per kernel name.
 *
 *   #gemmtune-trace 1 status=ok pid=4242 records=1234 dropped=0 total_ns=987654 reason=-
 *   name,calls,total_ns,min_ns,max_ns,stream_count,graph_launches
 *   nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT,120,1500000,12000,13500,1,96
 *
 * The first line says whether the trace can be trusted. status=ok: CUPTI delivered the records
 * (records= counts them, dropped= those CUPTI reported lost). status=unverified: CUPTI could not
 * be used (another tool holds it, libcupti missing, an error); reason= says why (free text to
 * the end of the line) and there are no rows. status=incomplete: the file the tracer writes when
 * it starts, replaced at exit; finding it means the process ended without running its exit
 * handlers (killed, _exit), so the kernels are unknown. total_ns is the sum of the rows' total_ns.
 *
 * Rows: one per distinct kernel name exactly as CUPTI reports it (mangled for C++ kernels; own
 * kernels are extern "C", so their name is the DB instance name). calls counts launches,
 * including each kernel node of every CUDA-graph replay; graph_launches is how many of those
 * came from graphs. stream_count is the number of distinct streams the kernel ran on (counted up
 * to GT_TRACE_MAX_STREAMS). A name containing ',' or '"' is CSV-quoted. Rows are sorted by
 * total_ns descending, then name, so the file is stable.
 *
 * Pure C, no CUDA: the tracer and the CLI share it, and CPU tests cover it. */
#ifndef GT_TRACE_FILE_H
#define GT_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_TRACE_FORMAT_LINE "#gemmtune-trace 1"
#define GT_TRACE_HEADER "name,calls,total_ns,min_ns,max_ns,stream_count,graph_launches"
#define GT_TRACE_MAX_STREAMS 32
#define GT_TRACE_REASON_MAX 400

typedef enum gt_trace_state {
  GT_TRACE_OK = 0,     /* the records CUPTI delivered are all here */
  GT_TRACE_UNVERIFIED, /* CUPTI could not be used; reason says why; no rows */
  GT_TRACE_INCOMPLETE  /* the process exited before the tracer could write its records */
} gt_trace_state_t;

/* "ok", "unverified", "incomplete". */
const char *gt_trace_state_name(gt_trace_state_t s);

typedef struct gt_trace_kernel {
  char *name; /* owned */
  uint64_t calls, total_ns, min_ns, max_ns, graph_launches;
  uint32_t stream_count;
  uint32_t streams[GT_TRACE_MAX_STREAMS]; /* the ids counted so far (only while aggregating) */
} gt_trace_kernel_t;

typedef struct gt_trace {
  gt_trace_state_t state;
  char reason[GT_TRACE_REASON_MAX]; /* "" when none */
  long pid;                         /* writer's process id (0 unknown, or several merged) */
  uint64_t records;                 /* kernel records received */
  uint64_t dropped;                 /* records CUPTI reported dropped */
  uint64_t total_ns;                /* sum of every kernel's total_ns */
  int files;                        /* trace files merged into this one (verify) */
  gt_trace_kernel_t *k;
  size_t n, cap;
  /* name index (private): open addressing, slot = index + 1, 0 = empty */
  size_t *slots;
  size_t nslots;
} gt_trace_t;

/* An empty trace with state ok (all zero is equivalent). */
void gt_trace_init(gt_trace_t *t);
/* Release everything and leave t empty. */
void gt_trace_free(gt_trace_t *t);

/* Aggregate one kernel record: [start_ns, end_ns] on `stream`, from a graph replay or not.
 * end_ns < start_ns counts the launch with duration 0. GT_ERR_NOMEM on allocation failure. */
gt_status_t gt_trace_add(gt_trace_t *t, const char *name, uint64_t start_ns, uint64_t end_ns,
                         uint32_t stream, bool from_graph);

/* The aggregate for a kernel name, or NULL. */
const gt_trace_kernel_t *gt_trace_find(const gt_trace_t *t, const char *name);

/* Set state and reason (reason: printf-style, newlines replaced by spaces). */
void gt_trace_set_state(gt_trace_t *t, gt_trace_state_t s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The file's text (malloc'ed, NUL-terminated; *len without the NUL; len may be NULL).
 * NULL when out of memory. */
char *gt_trace_format(const gt_trace_t *t, size_t *len);

/* Parse a trace file's text strictly: format line, known status, header, rows with valid
 * numbers (min <= max, graph_launches <= calls), total_ns equal to the rows' sum, a trailing
 * newline. out is output only; on failure it is left empty and the message names name:line.
 * GT_ERR_DATA for a malformed file. */
gt_status_t gt_trace_parse(const char *name, const char *text, gt_trace_t *out);
/* Read and parse path (GT_ERR_IO when it cannot be read). */
gt_status_t gt_trace_read(const char *path, gt_trace_t *out);

/* A whole CSV cell as a non-negative decimal integer: no sign, no blanks, nothing after the
 * digits, no overflow. Shared by the readers of verify's files (this one, gt_shim_stats.c). */
bool gt_trace_parse_u64(const char *s, uint64_t *out);

/* Add src's kernels into dst (several processes of one workload). The merged state is the worst
 * of the two (unverified > incomplete > ok) with that trace's reason; stream counts add up
 * (streams of different processes are different streams). */
gt_status_t gt_trace_merge(gt_trace_t *dst, const gt_trace_t *src);

#ifdef __cplusplus
}
#endif
#endif
