/* Counting the GPU work of GEMM calls captured into CUDA graphs: how many times the kernels a
 * captured call added ran in graph replays, and for how long.
 *
 * A call made while its stream is captured runs nothing: it adds kernel nodes to the graph
 * being captured, and every replay of an executable graph instantiated from it runs them again.
 * Counting API calls therefore undercounts a decode step replayed from a graph by the number of
 * replays. The preload shim learns which kernel nodes each captured call added (the capture's
 * dependency set before and after the call); the tracer learns, from CUPTI, how often each
 * node of an executable graph ran and which captured node it was cloned from at instantiation
 * (an executable graph's nodes are clones, with ids of their own; a clone may itself be cloned,
 * as when a graph is cloned before it is instantiated). This file joins the two, with no CUDA:
 *
 *   gt_graph_runs_t   executed node id -> runs and time; clone id -> the id it was cloned from
 *   gt_graph_runs_resolve  for captured node ids: the runs and time of every clone of each
 *   gt_graph_fold     per key: captured calls, their runs (one per replay of the call's first
 *                     kernel node) and the time of all their kernels
 *   gt_graph_adjust   a key's calls and time with its captured calls replaced by their replays
 *
 * Pure C, no CUDA: the tracer and the shim share it, and CPU tests cover it. */
#ifndef GT_GRAPH_RUNS_H
#define GT_GRAPH_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_hindex.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kernel nodes kept per captured call: a GEMM adds one kernel, two with a split-K reduction,
 * a few with a memset of its output; a call adding more is kept with its first ones (its runs
 * come from the first, its time is then a lower bound). */
#define GT_GRAPH_CALL_MAX_NODES 8
/* Clone generations followed from an executed node back to the captured one. */
#define GT_GRAPH_MAX_CLONE_DEPTH 16

typedef struct gt_graph_runs {
  uint64_t *node, *runs, *ns; /* executed node ids and their aggregates, n of them */
  size_t n, cap;
  gt_hindex_t idx;
  uint64_t *clone, *orig; /* clone id -> the node it was cloned from, nc of them */
  size_t nc, ccap;
  gt_hindex_t cidx;
} gt_graph_runs_t;

/* `gt_graph_runs_t t = {0};` is empty as well. */
void gt_graph_runs_init(gt_graph_runs_t *t);
void gt_graph_runs_free(gt_graph_runs_t *t);

/* One execution of node `node` (a kernel record's graphNodeId, not 0) lasting ns nanoseconds.
 * GT_ERR_NOMEM (nothing added) when the table cannot grow. */
gt_status_t gt_graph_runs_add_run(gt_graph_runs_t *t, uint64_t node, uint64_t ns);
/* Node clone_id was cloned from node orig_id (instantiation, graph clone). The first report of
 * a clone id is kept (ids are unique for the life of the process). GT_ERR_NOMEM as above. */
gt_status_t gt_graph_runs_add_clone(gt_graph_runs_t *t, uint64_t clone_id, uint64_t orig_id);

/* For each ids[i] (a node of a captured graph): the runs and nanoseconds of every executed node
 * that is it or descends from it through clones (an executable graph instantiated twice from one
 * capture counts both). An id never executed gets 0. Repeated ids each get the full count.
 * GT_ERR_NOMEM when the lookup table cannot be built (outputs zeroed). */
gt_status_t gt_graph_runs_resolve(const gt_graph_runs_t *t, const uint64_t *ids, size_t n,
                                  uint64_t *runs, uint64_t *ns);

/* One GEMM call made while its stream was captured. */
typedef struct gt_graph_call {
  size_t key;       /* the caller's index of the call's key */
  bool identified;  /* the kernel nodes it added are known (else it counts as one API call) */
  uint32_t nids;    /* kernel nodes it added, ids[0] the first in stream order */
  uint64_t ids[GT_GRAPH_CALL_MAX_NODES];
} gt_graph_call_t;

/* What the captured calls of one key add up to. */
typedef struct gt_graph_key_sum {
  uint64_t captured;     /* identified captured calls */
  uint64_t unidentified; /* captured calls whose nodes are not known */
  uint64_t runs;         /* executions of those calls in graph replays */
  uint64_t ns;           /* GPU time of all their kernels in replays */
} gt_graph_key_sum_t;

/* Add each call of calls[0..n) to sums[call.key] (keys >= nkeys are ignored). runs and ns are
 * gt_graph_runs_resolve's answers for the calls' ids flattened in order (calls[0].ids[0..nids),
 * calls[1].ids...), i.e. sum of nids entries; NULL when replays could not be counted, which
 * makes every call unidentified. A call's runs are those of its first kernel node (each replay
 * runs every node once); its time is that of all its nodes. */
void gt_graph_fold(const gt_graph_call_t *calls, size_t n, const uint64_t *runs,
                   const uint64_t *ns, gt_graph_key_sum_t *sums, size_t nkeys);

/* A key's calls and GPU time with its identified captured calls replaced by their replays:
 * calls - s->captured + s->runs, and eager_us_per_call * (calls - s->captured) + s->ns / 1000
 * (captured calls ran nothing themselves; eager_us_per_call is the mean measured time of a
 * call made outside capture, 0 when none was measured). s NULL or nothing captured: calls and
 * eager_us_per_call * calls. */
void gt_graph_adjust(uint64_t calls, double eager_us_per_call, const gt_graph_key_sum_t *s,
                     uint64_t *calls_out, double *time_us_out);

#ifdef __cplusplus
}
#endif
#endif
