/* gemmtune check --live: a DB row replayed the way an application meets it. The runtime engine
 * (src/runtime/rt_engine.h, what the preload shim runs on a hit) serves the row on this
 * process's stream, and the plain path is the engine's default path, the baseline provider's
 * call of the real cuBLAS entry point (cublasGemmEx with its default algorithm); each is captured
 * as one CUDA graph of many calls over rotated operand sets (at least 3x the L2 cache, so no
 * call is timed out of cache), and the two graphs are replayed alternately, in an order that
 * flips every round. The ratio plain/served is the speedup the application gets, to compare
 * with the one the row recorded. */
#define _GNU_SOURCE
#include "check_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/gt_stats.h"
#include "runtime/rt_engine.h"

#define LIVE_MAX_SETS 64
#define LIVE_L2_FACTOR 3.0

typedef struct live_bufs {
  void *mem[LIVE_MAX_SETS][4]; /* A, B, C, D of each set */
  gt_operands_t ops[LIVE_MAX_SETS];
  int nsets;
  unsigned char alpha[16], beta[16];
} live_bufs_t;

/* One operand of p filled on the host with small values of its type (never zeros, so no
 * candidate is timed on a shortcut) and copied to the device. */
static cudaError_t fill_operand(void **dst, const gt_problem_t *p, char which, gt_dtype_t t,
                                unsigned seed) {
  size_t n = gt_problem_operand_elems(p, which), es = gt_dtype_size(t);
  if (n == 0) n = 1;
  cudaError_t e = cudaMalloc(dst, n * es);
  if (e != cudaSuccess) return e;
  unsigned char *h = malloc(n * es);
  if (!h) return cudaErrorMemoryAllocation;
  unsigned x = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    gt_store_elem(h, t, i, ((int)(x >> 28) - 8 + ((x >> 28) >= 8)) / 8.0); /* +-1/8 .. +-1 */
  }
  e = cudaMemcpy(*dst, h, n * es, cudaMemcpyHostToDevice);
  free(h);
  return e;
}

static void free_bufs(live_bufs_t *b) {
  for (int s = 0; s < b->nsets; s++)
    for (int k = 0; k < 4; k++)
      if (b->mem[s][k]) (void)cudaFree(b->mem[s][k]);
  b->nsets = 0;
}

/* Enough operand sets that their total is at least LIVE_L2_FACTOR x the L2 cache. */
static bool make_bufs(const gt_problem_t *p, int device, live_bufs_t *b, char *why, size_t cap) {
  memset(b, 0, sizeof *b);
  int l2 = 0;
  (void)cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  const double per_set =
      (double)gt_problem_operand_elems(p, 'A') * gt_dtype_size(p->a_type) +
      (double)gt_problem_operand_elems(p, 'B') * gt_dtype_size(p->b_type) +
      (double)gt_problem_operand_elems(p, 'C') * (gt_dtype_size(p->c_type) +
                                                  gt_dtype_size(p->d_type));
  int want = per_set > 0 ? (int)(LIVE_L2_FACTOR * l2 / per_set) + 1 : 1;
  b->nsets = want < 2 ? 2 : want > LIVE_MAX_SETS ? LIVE_MAX_SETS : want;
  gt_store_elem(b->alpha, p->scale_type, 0, 1.0);
  gt_store_elem(b->beta, p->scale_type, 0, p->beta_zero ? 0.0 : 1.0);
  for (int s = 0; s < b->nsets; s++) {
    cudaError_t e = fill_operand(&b->mem[s][0], p, 'A', p->a_type, 4u * (unsigned)s + 1u);
    if (e == cudaSuccess) e = fill_operand(&b->mem[s][1], p, 'B', p->b_type, 4u * (unsigned)s + 2u);
    if (e == cudaSuccess) e = fill_operand(&b->mem[s][2], p, 'C', p->c_type, 4u * (unsigned)s + 3u);
    if (e == cudaSuccess) e = fill_operand(&b->mem[s][3], p, 'C', p->d_type, 4u * (unsigned)s + 4u);
    if (e != cudaSuccess) {
      snprintf(why, cap, "operand set %d of %d: %s", s + 1, b->nsets, cudaGetErrorString(e));
      (void)cudaGetLastError();
      free_bufs(b);
      return false;
    }
    b->ops[s] = (gt_operands_t){.A = b->mem[s][0], .B = b->mem[s][1], .C = b->mem[s][2],
                                .D = b->mem[s][3], .alpha = b->alpha, .beta = b->beta};
  }
  return true;
}

typedef gt_status_t (*live_run_fn)(gt_rt_t *rt, gt_rt_entry_t *e, gt_operands_t *ops, void *s);

/* One graph of `calls` calls of run over the rotated sets. */
static bool capture_path(gt_rt_t *rt, gt_rt_entry_t *e, live_run_fn run, live_bufs_t *b,
                         int calls, cudaStream_t s, cudaGraphExec_t *exec, char *why, size_t cap) {
  cudaGraph_t g = NULL;
  gt_status_t rs = GT_OK;
  if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    snprintf(why, cap, "cannot begin a graph capture: %s", cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  for (int i = 0; i < calls && rs == GT_OK; i++) {
    gt_operands_t ops = b->ops[i % b->nsets];
    rs = run(rt, e, &ops, s);
  }
  cudaError_t ce = cudaStreamEndCapture(s, &g);
  if (rs != GT_OK || ce != cudaSuccess) {
    snprintf(why, cap, "capturing the calls failed: %s",
             rs != GT_OK ? gt_err_msg() : cudaGetErrorString(ce));
    (void)cudaGetLastError();
    if (g) (void)cudaGraphDestroy(g);
    return false;
  }
  ce = cudaGraphInstantiate(exec, g, 0);
  (void)cudaGraphDestroy(g);
  if (ce != cudaSuccess) {
    snprintf(why, cap, "cudaGraphInstantiate: %s", cudaGetErrorString(ce));
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

/* Microseconds per call of one replay of exec. */
static bool time_replay(cudaGraphExec_t exec, int calls, cudaStream_t s, cudaEvent_t ev[2],
                        double *us) {
  float ms = 0;
  if (cudaEventRecord(ev[0], s) != cudaSuccess || cudaGraphLaunch(exec, s) != cudaSuccess ||
      cudaEventRecord(ev[1], s) != cudaSuccess || cudaEventSynchronize(ev[1]) != cudaSuccess ||
      cudaEventElapsedTime(&ms, ev[0], ev[1]) != cudaSuccess)
    return false;
  *us = (double)ms * 1000.0 / calls;
  return true;
}

/* The decided entry of row's key in a fresh engine over db (empty) given that row alone. */
static gt_rt_entry_t *serve_row(const gt_db_row_t *row, int device, gt_db_t *db, gt_rt_t **rt,
                                cudaStream_t s, char *why, size_t cap) {
  if (gt_db_put(db, row) != GT_OK || gt_rt_open(device, db, "check --live", NULL, NULL, rt) != GT_OK) {
    snprintf(why, cap, "the runtime engine cannot serve the row: %s", gt_err_msg());
    return NULL;
  }
  gt_rt_entry_t *e = gt_rt_entry(*rt, &row->key, "cublasGemmEx");
  gt_rt_state_t st = e ? gt_rt_decide(*rt, e, s) : GT_RT_NEW;
  if (st != GT_RT_HIT) {
    snprintf(why, cap, "the runtime does not serve this row here: %s",
             e ? e->why : "the key table is full");
    return NULL;
  }
  return e;
}

static void run_rounds(cudaGraphExec_t plain, cudaGraphExec_t served, int calls, int rounds,
                       cudaStream_t s, gt_check_live_t *out) {
  cudaEvent_t ev[2];
  if (cudaEventCreate(&ev[0]) != cudaSuccess || cudaEventCreate(&ev[1]) != cudaSuccess) {
    snprintf(out->why, sizeof out->why, "cannot create CUDA events");
    return;
  }
  double *tp = calloc((size_t)rounds, sizeof *tp), *ts = calloc((size_t)rounds, sizeof *ts);
  double warm;
  bool ok = tp && ts && time_replay(plain, calls, s, ev, &warm) &&
            time_replay(served, calls, s, ev, &warm);
  for (int r = 0; ok && r < rounds; r++) {
    /* Alternate, flipping the order every round: neither path always runs first. */
    if (r % 2 == 0)
      ok = time_replay(plain, calls, s, ev, &tp[r]) && time_replay(served, calls, s, ev, &ts[r]);
    else
      ok = time_replay(served, calls, s, ev, &ts[r]) && time_replay(plain, calls, s, ev, &tp[r]);
  }
  if (ok) {
    out->plain_us = gt_stats_median(tp, (size_t)rounds);
    out->served_us = gt_stats_median(ts, (size_t)rounds);
    out->speedup = out->served_us > 0 ? out->plain_us / out->served_us : 0;
    out->rounds = rounds;
    out->done = true;
  } else {
    snprintf(out->why, sizeof out->why, "a timed replay failed: %s",
             cudaGetErrorString(cudaGetLastError()));
  }
  free(tp);
  free(ts);
  (void)cudaEventDestroy(ev[0]);
  (void)cudaEventDestroy(ev[1]);
}

gt_status_t gt_check_live_row(const gt_db_row_t *row, int device, int rounds,
                              gt_check_live_t *out) {
  memset(out, 0, sizeof *out);
  if (row->key.epilogue != GT_EPI_NONE) {
    snprintf(out->why, sizeof out->why, "rows with an epilogue are not replayed live yet");
    return GT_OK;
  }
  if (cudaSetDevice(device) != cudaSuccess) {
    snprintf(out->why, sizeof out->why, "cannot use device %d", device);
    return GT_OK;
  }
  cudaStream_t s = NULL;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
    snprintf(out->why, sizeof out->why, "cannot create a stream");
    return GT_OK;
  }
  live_bufs_t b;
  gt_db_t db;
  gt_db_init(&db);
  gt_rt_t *rt = NULL;
  cudaGraphExec_t plain = NULL, served = NULL;
  gt_rt_entry_t *e = NULL;
  if (make_bufs(&row->key, device, &b, out->why, sizeof out->why) &&
      (e = serve_row(row, device, &db, &rt, s, out->why, sizeof out->why))) {
    /* Enough calls per graph that launch overhead is noise, and at least two passes over
     * the sets. */
    int calls = 2 * b.nsets < 20 ? 20 : 2 * b.nsets;
    gt_operands_t ops = b.ops[0];
    /* One call of each outside capture: both paths prepare what they need there. */
    if (gt_rt_run_default(rt, e, &ops, s) != GT_OK || gt_rt_run_hit(rt, e, &ops, s) != GT_OK ||
        cudaStreamSynchronize(s) != cudaSuccess)
      snprintf(out->why, sizeof out->why, "a first call failed: %s", gt_err_msg());
    else if (capture_path(rt, e, gt_rt_run_default, &b, calls, s, &plain, out->why,
                          sizeof out->why) &&
             capture_path(rt, e, gt_rt_run_hit, &b, calls, s, &served, out->why,
                          sizeof out->why))
      run_rounds(plain, served, calls, rounds > 0 ? rounds : 15, s, out);
    snprintf(out->plain_name, sizeof out->plain_name, "%s", gt_rt_default_provider(e));
  }
  if (plain) (void)cudaGraphExecDestroy(plain);
  if (served) (void)cudaGraphExecDestroy(served);
  (void)cudaStreamSynchronize(s);
  if (rt) gt_rt_close(rt);
  gt_db_free(&db);
  free_bufs(&b);
  (void)cudaStreamDestroy(s);
  (void)cudaGetLastError();
  return GT_OK;
}

#else

gt_status_t gt_check_live_row(const gt_db_row_t *row, int device, int rounds,
                              gt_check_live_t *out) {
  (void)row, (void)device, (void)rounds;
  memset(out, 0, sizeof *out);
  snprintf(out->why, sizeof out->why, "built without CUDA: nothing to replay live");
  return GT_OK;
}

#endif
