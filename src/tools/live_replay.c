/* A DB row replayed the way an application meets it (live_replay.h). The runtime engine
 * (src/runtime/rt_engine.h, what the preload shim runs on a hit) serves the row on this
 * process's stream, and the plain side is the unmodified entry point the key was issued through:
 * the row's baseline, the call tune raced the winner against (cublasGemmEx with its default
 * algorithm, or the application's cublasLtMatmul with cuBLASLt's heuristic algorithm, the key's
 * epilogue and its bias). Each side is captured as one CUDA graph of many calls over rotated
 * operand sets (at least 3x the L2 cache, so no call is timed out of cache), and each graph is
 * timed in three stretches of its own, each warmed up first, the stretches interleaved
 * (run_rounds). plain/served is the speedup the application gets, to compare with the one the
 * harness measured.
 *
 * What differs from the harness on purpose: the served call goes through the engine (its
 * decision, its prepared candidate, its per-stream workspace), not through the provider directly,
 * and a graph holds many calls of one path back to back as an application's step does, with C
 * updated in place where the entry point does so. */
#define _GNU_SOURCE
#include "live_replay.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gt_provider.h"

static void live_end(gt_live_result_t *out, gt_live_outcome_t how, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void live_end(gt_live_result_t *out, gt_live_outcome_t how, const char *fmt, ...) {
  out->outcome = how;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->why, sizeof out->why, fmt, ap);
  va_end(ap);
}

/* What rules a replay out before any CUDA call: false (out SKIPPED) when the row's calls never
 * reach the runtime's dispatch on a GPU. */
static bool live_precheck(const gt_db_row_t *row, gt_live_result_t *out) {
  const gt_provider_t *prov = gt_provider_find(row->provider);
  if (!prov) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "no provider '%s' in this build", row->provider);
    return false;
  }
  if (prov->backend != GT_BACKEND_CUDA) {
    live_end(out, GT_LIVE_OUT_SKIPPED,
             "%s runs on the host: no application call reaches it through the runtime's "
             "dispatch", prov->name);
    return false;
  }
  if (row->key.op == GT_OP_GROUPED_MM) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "grouped_mm: its entry point is torch's own function, "
             "which only a torch process runs (bench/grouped_race.py)");
    return false;
  }
  return true;
}

#ifdef GT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "core/gt_stats.h"
#include "harness/gt_harness.h"
#include "platform/gt_cudalib.h"
#include "runtime/rt_engine.h"

/* Sets are carved from one allocation per operand, each at a 256-byte boundary (the alignment
 * the heuristic of an Lt key is asked with, as PyTorch asks it): small shapes take many sets. */
#define LIVE_MAX_SETS 2048
#define LIVE_ALIGN 256
#define LIVE_L2_FACTOR 3.0
/* A replay at least this long: CUDA events resolve about half a microsecond, and a graph's launch
 * costs a few, so both are well under 1% of it. */
#define LIVE_TARGET_US 2000.0
#define LIVE_MIN_CALLS 20
#define LIVE_MAX_CALLS 4096
/* The warm-up that starts each timed stretch (warm_path). */
#define LIVE_WARM_MS 200.0
#define LIVE_WARM_MAX 20

/* One replay in progress: operands, the two paths, their graphs. */
typedef struct live {
  const gt_db_row_t *row;
  const gt_problem_t *p;
  int device;
  cudaStream_t s;
  /* operands: A, B, C (NULL where C is D), D of every set, each one allocation holding the sets
   * back to back; one bias vector and one group of fp8 scales shared by every set, as an
   * application's weights share theirs */
  int nsets;
  void *mem[4];
  void *bias;
  float *scale[4];
  gt_operands_t *ops; /* nsets */
  double alpha_buf, beta_buf; /* 8-byte storage for scalars of the scale type */
  /* plain: the row's baseline candidate through its provider, its own workspace */
  gt_candidate_t bc;
  void *pstate;
  void *pws;
  size_t pws_size;
  bool lt; /* the plain path is cublasLtMatmul: the application offers its workspace */
  /* served: an engine over a DB of this row alone */
  gt_db_t db;
  gt_rt_t *rt;
  gt_rt_entry_t *e;
  int calls;
} live_t;

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

static size_t align_up(size_t n) { return (n + LIVE_ALIGN - 1) / LIVE_ALIGN * LIVE_ALIGN; }

/* nsets operands of count elements of type t in one allocation at *dst, set s at s * the
 * aligned size, every set (padding included) filled on the device with the harness's random
 * values (gt_harness_fill_device: full-mantissa decimals, never zero, as real weights and
 * activations are; a few distinct values would let a compute-bound call draw less power, and so
 * run at other clocks, than it does on the application's data). */
static gt_status_t alloc_fill(void **dst, gt_dtype_t t, size_t count, int nsets, unsigned seed) {
  if (count == 0) count = 1;
  const size_t es = gt_dtype_size(t), stride = align_up(count * es),
               total = stride * (size_t)nsets;
  cudaError_t e = cudaMalloc(dst, total);
  if (e != cudaSuccess) {
    *dst = NULL;
    return gt_cuda_err(e, "cudaMalloc", __FILE__, __LINE__);
  }
  return gt_harness_fill_device(*dst, t, total / es, 0x11fe0000u + seed);
}

/* Set s of an operand alloc_fill made. */
static void *set_at(void *base, gt_dtype_t t, size_t count, int s) {
  if (!base) return NULL;
  return (char *)base + (size_t)s * align_up((count ? count : 1) * gt_dtype_size(t));
}

/* The fp8 scales of the key, positive and away from 1 (gt_harness_fill_scales), in device
 * memory; amax_d is written by the call. */
static cudaError_t alloc_scales(live_t *L) {
  static const char k_which[4] = {'A', 'B', 'D', 'X'};
  uint64_t rng = 0x5eed11fe;
  for (int i = 0; i < 4; i++) {
    size_t n = gt_harness_scale_elems(L->p, k_which[i]);
    if (!n) continue;
    float *h = malloc(n * sizeof *h);
    if (!h) return cudaErrorMemoryAllocation;
    if (k_which[i] == 'A' || k_which[i] == 'B') gt_harness_fill_scales(h, n, &rng);
    else for (size_t j = 0; j < n; j++) h[j] = 1.0f;
    cudaError_t e = cudaMalloc((void **)&L->scale[i], n * sizeof *h);
    if (e == cudaSuccess) e = cudaMemcpy(L->scale[i], h, n * sizeof *h, cudaMemcpyHostToDevice);
    free(h);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

/* Enough operand sets that their total is at least LIVE_L2_FACTOR x the L2 cache. C is D (the
 * call updates it in place, as cublasGemmEx always does and frameworks' cublasLtMatmul calls
 * do) unless C's type differs from D's, which only cuBLASLt takes and needs a C of its own. */
static bool make_bufs(live_t *L, gt_live_result_t *out) {
  const gt_problem_t *p = L->p;
  int l2 = 0;
  (void)cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, L->device);
  const bool own_c = !p->beta_zero && p->c_type != p->d_type;
  const size_t ea = gt_problem_operand_elems(p, 'A'), eb = gt_problem_operand_elems(p, 'B'),
               ec = gt_problem_operand_elems(p, 'C');
  const double per_set = (double)ea * gt_dtype_size(p->a_type) +
                         (double)eb * gt_dtype_size(p->b_type) +
                         (double)ec * (gt_dtype_size(p->d_type) +
                                       (own_c ? gt_dtype_size(p->c_type) : 0));
  double want = per_set > 0 ? LIVE_L2_FACTOR * l2 / per_set + 1 : 1;
  L->nsets = want < 2 ? 2 : want > LIVE_MAX_SETS ? LIVE_MAX_SETS : (int)want;
  if (!(L->ops = calloc((size_t)L->nsets, sizeof *L->ops))) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "out of host memory for %d operand sets", L->nsets);
    return false;
  }
  double alpha, beta;
  gt_harness_scalars(p, GT_INIT_RANDOM, &alpha, &beta);
  gt_store_elem(&L->alpha_buf, p->scale_type, 0, alpha);
  gt_store_elem(&L->beta_buf, p->scale_type, 0, p->beta_zero ? 0.0 : beta);
  gt_status_t st = GT_OK;
  if (epi_has_bias(p->epilogue))
    st = alloc_fill(&L->bias, gt_cudalib_bias_type(p), (size_t)p->m, 1, 7u);
  cudaError_t e;
  if (st == GT_OK && (e = alloc_scales(L)) != cudaSuccess)
    st = gt_cuda_err(e, "the fp8 scales", __FILE__, __LINE__);
  if (st == GT_OK) st = alloc_fill(&L->mem[0], p->a_type, ea, L->nsets, 1u);
  if (st == GT_OK) st = alloc_fill(&L->mem[1], p->b_type, eb, L->nsets, 2u);
  if (st == GT_OK && own_c) st = alloc_fill(&L->mem[2], p->c_type, ec, L->nsets, 3u);
  if (st == GT_OK) st = alloc_fill(&L->mem[3], p->d_type, ec, L->nsets, 4u);
  /* Nothing on the replay's stream (non-blocking) waits for the fills and copies: wait here. */
  if (st == GT_OK && (e = cudaDeviceSynchronize()) != cudaSuccess)
    st = gt_cuda_err(e, "cudaDeviceSynchronize", __FILE__, __LINE__);
  for (int s = 0; s < L->nsets && st == GT_OK; s++) {
    void *d = set_at(L->mem[3], p->d_type, ec, s);
    L->ops[s] = (gt_operands_t){.A = set_at(L->mem[0], p->a_type, ea, s),
                                .B = set_at(L->mem[1], p->b_type, eb, s),
                                .C = own_c ? set_at(L->mem[2], p->c_type, ec, s) : d,
                                .D = d,
                                .bias = L->bias,
                                .alpha = &L->alpha_buf,
                                .beta = &L->beta_buf,
                                .scale_a = L->scale[0],
                                .scale_b = L->scale[1],
                                .scale_d = L->scale[2],
                                .amax_d = L->scale[3]};
  }
  if (st != GT_OK) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "operands (%d sets of %.1f MB): %s", L->nsets,
             per_set / 1e6, gt_err_msg());
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

/* The engine entry point a call of the plain path names: the row's baseline provider says
 * whether it stands for cublasLtMatmul calls of this key or for cublasGemmEx ones. */
static const char *entry_point_of(const gt_candidate_t *bc, const gt_problem_t *p) {
  const gt_provider_t *bp = bc->provider;
  if (bp->baseline_for && bp->baseline_for(GT_ENTRY_LTMATMUL, p) &&
      !bp->baseline_for(GT_ENTRY_GEMMEX, p))
    return "cublasLtMatmul";
  return p->batch > 1 ? "cublasGemmStridedBatchedEx" : "cublasGemmEx";
}

/* The plain path: the row's baseline rebuilt and prepared, with the workspace it asks for. */
static bool open_plain(live_t *L, gt_live_result_t *out) {
  const gt_db_row_t *row = L->row;
  if (gt_provider_candidate_from_name(NULL, row->baseline, L->p, &L->bc) != GT_OK) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "the row's baseline %s cannot be rebuilt here: %s",
             row->baseline, gt_err_msg());
    return false;
  }
  if (L->bc.provider->backend != GT_BACKEND_CUDA) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "the row's baseline %s runs on the host",
             row->baseline);
    return false;
  }
  L->lt = strcmp(entry_point_of(&L->bc, L->p), "cublasLtMatmul") == 0;
  size_t ws = 0;
  if (L->bc.provider->prepare(&L->bc, L->p, &L->pstate, &ws) != GT_OK) {
    L->pstate = NULL;
    live_end(out, GT_LIVE_OUT_SKIPPED, "the plain path %s cannot be prepared: %s",
             row->baseline, gt_err_msg());
    return false;
  }
  if (ws && cudaMalloc(&L->pws, ws) != cudaSuccess) {
    L->pws = NULL;
    live_end(out, GT_LIVE_OUT_SKIPPED, "the plain path's workspace of %zu bytes: %s", ws,
             cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  L->pws_size = ws;
  return true;
}

/* The served path: a fresh engine over a DB holding the row alone, its key decided outside any
 * capture (which prepares the row's candidate, as the shim's first call outside capture does). */
static bool open_served(live_t *L, gt_live_result_t *out) {
  if (gt_db_put(&L->db, L->row) != GT_OK ||
      gt_rt_open(L->device, &L->db, "the row replayed live", NULL, NULL, &L->rt) != GT_OK) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "the runtime engine cannot take the row: %s",
             gt_err_msg());
    return false;
  }
  L->e = gt_rt_entry(L->rt, &L->row->key, entry_point_of(&L->bc, L->p));
  gt_rt_state_t st = L->e ? gt_rt_decide(L->rt, L->e, L->s) : GT_RT_NEW;
  if (st != GT_RT_HIT) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "the runtime does not serve this row here: %s",
             L->e ? L->e->why : "the key table is full");
    return false;
  }
  return true;
}

static gt_status_t run_plain(live_t *L, gt_operands_t *ops) {
  ops->workspace = L->pws;
  ops->ws_size = L->pws_size;
  return L->bc.provider->run(L->pstate, ops, L->s);
}

/* As the shim calls it: a cublasLtMatmul call offers the application's workspace (the engine
 * takes it when large enough), a cublasGemmEx call none (the engine's own per stream). */
static gt_status_t run_served(live_t *L, gt_operands_t *ops) {
  ops->workspace = L->lt ? L->pws : NULL;
  ops->ws_size = L->lt ? L->pws_size : 0;
  return gt_rt_run_hit(L->rt, L->e, ops, L->s);
}

typedef gt_status_t (*live_call_fn)(live_t *L, gt_operands_t *ops);

/* One call of run outside capture, waited for: each path prepares what it needs there (the
 * engine nothing more, cuBLAS its kernels' modules), and a failure is attributed to this path. */
static bool first_call(live_t *L, live_call_fn run, char *why, size_t cap) {
  gt_operands_t ops = L->ops[0];
  gt_err_clear();
  gt_status_t s = run(L, &ops);
  cudaError_t ce = s == GT_OK ? cudaStreamSynchronize(L->s) : cudaSuccess;
  if (s == GT_OK && ce == cudaSuccess) return true;
  snprintf(why, cap, "a first call failed: %s", s != GT_OK ? gt_err_msg() : cudaGetErrorString(ce));
  (void)cudaGetLastError();
  return false;
}

/* One graph of L->calls calls of run over the rotated sets. */
static bool capture_path(live_t *L, live_call_fn run, cudaGraphExec_t *exec, char *why,
                         size_t cap) {
  cudaGraph_t g = NULL;
  gt_status_t rs = GT_OK;
  if (cudaStreamBeginCapture(L->s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    snprintf(why, cap, "cannot begin a graph capture: %s", cudaGetErrorString(cudaGetLastError()));
    return false;
  }
  for (int i = 0; i < L->calls && rs == GT_OK; i++) {
    gt_operands_t ops = L->ops[i % L->nsets];
    rs = run(L, &ops);
  }
  cudaError_t ce = cudaStreamEndCapture(L->s, &g);
  if (rs != GT_OK || ce != cudaSuccess) {
    snprintf(why, cap, "capturing %d calls failed: %s", L->calls,
             rs != GT_OK ? gt_err_msg() : cudaGetErrorString(ce));
    (void)cudaGetLastError();
    if (g) (void)cudaGraphDestroy(g);
    return false;
  }
  ce = cudaGraphInstantiate(exec, g, 0);
  (void)cudaGraphDestroy(g);
  if (ce != cudaSuccess) {
    *exec = NULL;
    snprintf(why, cap, "cudaGraphInstantiate: %s", cudaGetErrorString(ce));
    (void)cudaGetLastError();
    return false;
  }
  return true;
}

/* Microseconds per call of one replay of exec. */
static bool time_replay(live_t *L, cudaGraphExec_t exec, cudaEvent_t ev[2], double *us) {
  float ms = 0;
  if (cudaEventRecord(ev[0], L->s) != cudaSuccess || cudaGraphLaunch(exec, L->s) != cudaSuccess ||
      cudaEventRecord(ev[1], L->s) != cudaSuccess || cudaEventSynchronize(ev[1]) != cudaSuccess ||
      cudaEventElapsedTime(&ms, ev[0], ev[1]) != cudaSuccess)
    return false;
  *us = (double)ms * 1000.0 / L->calls;
  return true;
}

/* Replays exec back to back until LIVE_WARM_MS of them have passed or LIVE_WARM_MAX replays,
 * whichever comes first (at least one): a stretch of one path alone brings the GPU to the state
 * an application running that path sustains (a compute-bound call slows by 10-15% over its
 * first ~150 ms as the GPU reaches its power limit, and a hungrier kernel throttles more).
 * The same rule as the application-side client's warm-up (python/gemmtune/grouped/harness.py). */
static bool warm_path(live_t *L, cudaGraphExec_t exec, cudaEvent_t ev[2]) {
  double total_ms = 0, us = 0;
  for (int n = 0; n == 0 || (total_ms < LIVE_WARM_MS && n < LIVE_WARM_MAX); n++) {
    if (!time_replay(L, exec, ev, &us)) return false;
    total_ms += us * L->calls / 1000.0;
  }
  return true;
}

/* The timed stretches (gt_live_block_plan: each path in GT_LIVE_BLOCKS stretches of its own,
 * each warmed up first). A failure here comes after the row's candidate ran, so it counts
 * against it (an asynchronous fault shows on whichever replay follows it). */
static void run_rounds(live_t *L, cudaGraphExec_t plain, cudaGraphExec_t served, int rounds,
                       gt_live_result_t *out) {
  cudaEvent_t ev[2];
  if (cudaEventCreate(&ev[0]) != cudaSuccess) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "cannot create CUDA events");
    return;
  }
  if (cudaEventCreate(&ev[1]) != cudaSuccess) {
    (void)cudaEventDestroy(ev[0]);
    live_end(out, GT_LIVE_OUT_SKIPPED, "cannot create CUDA events");
    return;
  }
  double *tp = calloc((size_t)rounds, sizeof *tp), *ts = calloc((size_t)rounds, sizeof *ts);
  gt_live_block_t plan[2 * GT_LIVE_BLOCKS];
  bool ok = tp && ts && gt_live_block_plan(rounds, plan);
  int np = 0, ns = 0;
  for (int b = 0; ok && b < 2 * GT_LIVE_BLOCKS; b++) {
    cudaGraphExec_t exec = plan[b].served ? served : plain;
    double *dst = plan[b].served ? ts : tp;
    int *n = plan[b].served ? &ns : &np;
    ok = warm_path(L, exec, ev);
    for (int r = 0; ok && r < plan[b].samples; r++) ok = time_replay(L, exec, ev, &dst[(*n)++]);
  }
  if (ok) {
    out->outcome = GT_LIVE_OUT_DONE;
    out->plain_us = gt_stats_median(tp, (size_t)rounds);
    out->served_us = gt_stats_median(ts, (size_t)rounds);
    out->speedup = out->served_us > 0 ? out->plain_us / out->served_us : 0;
    out->plain_spread = gt_stats_rel_spread(tp, (size_t)rounds);
    out->served_spread = gt_stats_rel_spread(ts, (size_t)rounds);
    out->rounds = rounds;
    out->calls = L->calls;
    out->sets = L->nsets;
  } else if (!tp || !ts) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "out of host memory for %d rounds", rounds);
  } else {
    live_end(out, GT_LIVE_OUT_FAILED, "a timed replay failed: %s",
             cudaGetErrorString(cudaGetLastError()));
  }
  free(tp);
  free(ts);
  (void)cudaEventDestroy(ev[0]);
  (void)cudaEventDestroy(ev[1]);
}

/* Calls per graph: two passes over the sets and at least LIVE_MIN_CALLS, and enough that a replay
 * lasts about LIVE_TARGET_US at the row's baseline time. */
_Static_assert(2 * LIVE_MAX_SETS <= LIVE_MAX_CALLS, "a graph holds two passes over the sets");
static int calls_for(const live_t *L) {
  int calls = 2 * L->nsets < LIVE_MIN_CALLS ? LIVE_MIN_CALLS : 2 * L->nsets;
  const double per = L->row->baseline_us;
  if (per > 0 && calls * per < LIVE_TARGET_US) calls = (int)ceil(LIVE_TARGET_US / per);
  return calls > LIVE_MAX_CALLS ? LIVE_MAX_CALLS : calls;
}

static void live_free(live_t *L) {
  (void)cudaStreamSynchronize(L->s);
  if (L->rt) gt_rt_close(L->rt);
  gt_db_free(&L->db);
  if (L->pstate && L->bc.provider->release) L->bc.provider->release(L->pstate);
  if (L->pws) (void)cudaFree(L->pws);
  for (int k = 0; k < 4; k++)
    if (L->mem[k]) (void)cudaFree(L->mem[k]);
  free(L->ops);
  if (L->bias) (void)cudaFree(L->bias);
  for (int i = 0; i < 4; i++)
    if (L->scale[i]) (void)cudaFree(L->scale[i]);
  (void)cudaStreamDestroy(L->s);
  (void)cudaGetLastError();
}

void gt_live_replay_row(const gt_db_row_t *row, int device, int rounds, gt_live_result_t *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->plain_name, sizeof out->plain_name, "%s", row->baseline);
  if (!live_precheck(row, out)) return;
  if (cudaSetDevice(device) != cudaSuccess) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "cannot use CUDA device %d: %s", device,
             cudaGetErrorString(cudaGetLastError()));
    return;
  }
  live_t L;
  memset(&L, 0, sizeof L);
  L.row = row;
  L.p = &row->key;
  L.device = device;
  gt_db_init(&L.db);
  if (cudaStreamCreateWithFlags(&L.s, cudaStreamNonBlocking) != cudaSuccess) {
    live_end(out, GT_LIVE_OUT_SKIPPED, "cannot create a stream: %s",
             cudaGetErrorString(cudaGetLastError()));
    return;
  }
  cudaGraphExec_t plain = NULL, served = NULL;
  char why[GT_LIVE_WHY_MAX];
  if (make_bufs(&L, out) && open_plain(&L, out) && open_served(&L, out)) {
    L.calls = calls_for(&L);
    /* The plain path first, so a failure of either is its own. */
    if (!first_call(&L, run_plain, why, sizeof why))
      live_end(out, GT_LIVE_OUT_SKIPPED, "the plain path %s: %s", row->baseline, why);
    else if (!first_call(&L, run_served, why, sizeof why))
      live_end(out, GT_LIVE_OUT_FAILED, "%s/%s served by the runtime: %s", row->provider,
               row->instance, why);
    else if (!capture_path(&L, run_plain, &plain, why, sizeof why))
      live_end(out, GT_LIVE_OUT_SKIPPED, "the plain path %s: %s", row->baseline, why);
    else if (!capture_path(&L, run_served, &served, why, sizeof why))
      live_end(out, GT_LIVE_OUT_FAILED, "%s/%s served by the runtime: %s", row->provider,
               row->instance, why);
    else
      run_rounds(&L, plain, served, rounds > 0 ? rounds : 15, out);
  }
  if (plain) (void)cudaGraphExecDestroy(plain);
  if (served) (void)cudaGraphExecDestroy(served);
  live_free(&L);
}

#else

void gt_live_replay_row(const gt_db_row_t *row, int device, int rounds, gt_live_result_t *out) {
  (void)device, (void)rounds;
  memset(out, 0, sizeof *out);
  snprintf(out->plain_name, sizeof out->plain_name, "%s", row->baseline);
  if (!live_precheck(row, out)) return;
  live_end(out, GT_LIVE_OUT_SKIPPED, "built without CUDA: nothing to replay live");
}

#endif
