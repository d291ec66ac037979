/* Provider "kernels": gemmtune's own CUDA kernel instances (src/kernels/), listed by the
 * generated table. This file is the only place that knows which rules make an instance legal
 * for a problem on a device; each rule excludes with a one-line reason.
 *
 * Two kinds of rule. Hard rules say the instance cannot run the problem correctly or at all
 * (types, transposes, alignment, shared memory, grid limits); from_name applies only these, so a
 * DB row or a test can always rebuild any instance that can run. Pruning rules say it can run
 * but should not be raced (register spills, re-streaming weights, an oversized tokens tile, a
 * grid that leaves most SMs idle, empty splits); enumerate applies both, and when pruning would
 * leave no own candidate at all it keeps the one with the largest grid, so every bf16/f16
 * problem has an own candidate for the tuner to race.
 *
 * Epilogues: every instance has an epilogue twin (its name plus "_e", gt_kernel_name.h) that
 * applies the key's epilogue (bias, relu, bias_relu, gelu, bias_gelu) in its store step. A key
 * with an epilogue runs on the twins only, a key without one on the plain instances only, each
 * excluding the other with its reason; the kernel arguments carry the epilogue and the bias.
 *
 * FP8 (wgf8 and dtf8, gt_kernels_fp8.h): an instance takes the key's A and B types (e4m3, e5m2)
 * and C/D type (bf16, f16, f32); its scales are kernel arguments, filled by
 * gt_kernels_fp8_set_scales. wgf8 reads its operands through TMA (tensor maps per call), dtf8
 * with plain 16-byte loads. */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* CUtensorMap and its enums only: the encoder is fetched from the runtime */
#include <cuda_runtime_api.h>

#include "kernels/gt_kernel_arch.h"
#include "kernels/gt_kernel_args.h"
#include "kernels/gt_kernel_fns.h"
#include "kernels/gt_kernel_name.h"
#include "providers/gt_provider.h"
#include "providers/gt_reference.h"
#include "gt_cuda_kernel_names.h"
#include "gt_kernels_fp8.h"
#include "platform/gt_cudalib.h"

extern const gt_provider_t gt_provider_kernels;

#define K_MAX_DEVICES 64
/* Shared memory a kernel may use without cudaFuncSetAttribute. */
#define K_SMEM_DEFAULT (48 * 1024)
/* The SM-fill rule: a grid smaller than this share of the SMs leaves the rest idle. */
#define K_MIN_FILL 0.25

/* What an instance needs to know about a device. */
typedef struct kdev {
  int ready;
  int sm_count;
  int smem_optin; /* cudaDevAttrMaxSharedMemoryPerBlockOptin */
  int cc_major, cc_minor;
} kdev_t;

/* What ptxas decided for an instance (cudaFuncGetAttributes), queried once per process. */
typedef struct kfunc {
  int ready;       /* 1 ok, -1 the query failed (why holds the message) */
  int local_bytes; /* spills and stack */
  int num_regs;
  int max_threads; /* most threads per block the register use allows */
  int per_sm;      /* persistent instances: CTAs resident on one SM at once (>= 1); others 0 */
  char why[96];
} kfunc_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
/* Programmatic dependent launch of the main kernels: 1 on, 0 off (GEMMTUNE_KERNELS_PDL=0, or the
 * runtime refused the attribute once). Read without the lock: it only ever goes from 1 to 0. */
static volatile int g_pdl = 1;
/* wg A/B switches, read once by init: the tensor maps' L2 promotion
 * (GEMMTUNE_WG_L2_PROMOTION=none|64|128|256, default 128) and the evict-first hint on weight
 * loads (GEMMTUNE_WG_EVICT_FIRST=0 drops it). For measuring only; tuned rows assume defaults.
 * Measured on the H200 (bench/results/kernels.md): 128-byte promotion against 256, all 84
 * rows of kernels_bench in one session: own/cuBLAS geomean 1.063 -> 1.083 (tokens 16: 1.032 ->
 * 1.070); without the evict-first hint the 64-token 70b rows were 2% slower. */
static int g_wg_promo = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
static int g_wg_evict_first = 1;
/* The persistent instances' grid (GEMMTUNE_WG_PERSISTENT_GRID, read once by init): 0 "resident",
 * every resident CTA (the default, what was measured); 1 "balanced", the fewest CTAs that take
 * the same number of tiles as the resident grid's busiest (ceil(tiles / rounds) CTAs, rounds =
 * ceil(tiles / resident)): no CTA starts a last round most others have no tile for. For
 * measuring only; tuned rows assume the default. */
static int g_wg_pgrid_balanced = 0;
static kdev_t g_dev[K_MAX_DEVICES];
static kfunc_t *g_func; /* gt_kinstance_count entries, allocated by init */

/* The candidate blob: which table row. Names are checked against the table on every use, so a
 * blob from another build fails loudly instead of launching the wrong kernel. */
typedef struct kblob {
  int idx;
} kblob_t;

typedef struct kstate {
  int idx;
  gt_problem_t p;
  gt_kargs_t args; /* pointers and alpha/beta filled per run */
  const void *fn, *reduce;
  unsigned grid[3], reduce_blocks;
  unsigned cluster_x; /* CTAs per cluster along x (wg/wgf8 token multicast), 1 = none */
  unsigned cluster_y; /* CTAs per cluster along y (wg/wgf8 weight multicast), 1 = none */
  unsigned cluster_z; /* CTAs per cluster along z (wg split-K), 1 = no cluster */
  int threads, smem;
  size_t ws_needed;
} kstate_t;

/* ---- device and function facts ----------------------------------------------------------- */

static gt_status_t device_facts(int dev, kdev_t *out) {
  if (dev < 0 || dev >= K_MAX_DEVICES)
    return gt_err_set(GT_ERR_UNSUPPORTED, "CUDA device %d: more than %d devices", dev,
                      K_MAX_DEVICES);
  pthread_mutex_lock(&g_lock);
  kdev_t d = g_dev[dev];
  pthread_mutex_unlock(&g_lock);
  if (!d.ready) {
    GT_CUDA_CHECK(cudaDeviceGetAttribute(&d.sm_count, cudaDevAttrMultiProcessorCount, dev));
    GT_CUDA_CHECK(
        cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    GT_CUDA_CHECK(cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, dev));
    GT_CUDA_CHECK(cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, dev));
    d.ready = 1;
    pthread_mutex_lock(&g_lock);
    g_dev[dev] = d;
    pthread_mutex_unlock(&g_lock);
  }
  *out = d;
  return GT_OK;
}

/* Cached in g_func once init has made the table; a direct fp8 launch (gt_kernels_fp8_launch,
 * which needs no init) of a persistent instance before it computes them on every call. */
static kfunc_t func_facts(int idx) {
  pthread_mutex_lock(&g_lock);
  kfunc_t f = g_func ? g_func[idx] : (kfunc_t){0};
  pthread_mutex_unlock(&g_lock);
  if (f.ready) return f;
  struct cudaFuncAttributes fa;
  memset(&fa, 0, sizeof fa);
  cudaError_t e = cudaFuncGetAttributes(&fa, gt_kinstance_fns[idx].fn);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); /* not sticky; keep it from surfacing in a later check */
    f.ready = -1;
    snprintf(f.why, sizeof f.why, "cudaFuncGetAttributes: %s", cudaGetErrorString(e));
  } else {
    f.ready = 1;
    f.local_bytes = (int)fa.localSizeBytes;
    f.num_regs = fa.numRegs;
    f.max_threads = fa.maxThreadsPerBlock;
    const gt_kinstance_t *in = &gt_kinstances[idx];
    if (in->params.persistent) {
      /* The grid of a persistent instance is as many CTAs as are resident at once: ask the
       * occupancy calculator with the dynamic shared memory it launches with (opted in first;
       * a failure leaves one per SM, and hard_ok refuses an instance that cannot launch). */
      int nb = 0;
      const void *fn = gt_kinstance_fns[idx].fn;
      if ((in->smem_bytes > K_SMEM_DEFAULT &&
           cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                in->smem_bytes) != cudaSuccess) ||
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn, in->threads,
                                                        (size_t)in->smem_bytes) != cudaSuccess) {
        nb = 0;
        (void)cudaGetLastError(); /* ours, not sticky: keep it from surfacing later */
      }
      f.per_sm = nb > 0 ? nb : 1;
    }
  }
  pthread_mutex_lock(&g_lock);
  if (g_func) g_func[idx] = f;
  pthread_mutex_unlock(&g_lock);
  return f;
}

/* ---- geometry ------------------------------------------------------------------------------ */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* K elements a split's range is a multiple of (the kernel's batch or tile along K). */
static int64_t k_granule(const gt_kparams_t *kp) {
  switch (kp->family) {
  case GT_KFAM_DECODE:
    return 32LL * kp->vec * kp->unroll;
  case GT_KFAM_DECODETC:
    return 32LL * kp->unroll; /* four lanes of 8 elements per chunk */
  case GT_KFAM_DTF8:
    return 64LL * kp->unroll; /* four lanes of 16 one-byte elements */
  default:
    return kp->tile_k;
  }
}

/* Whether kp's family reads its operands through TMA (tensor maps encoded per call; 32-bit box
 * coordinates): wg and wgf8. The others use plain vector loads. */
static bool uses_tma(const gt_kparams_t *kp) {
  return kp->family == GT_KFAM_WG || kp->family == GT_KFAM_WGF8;
}

static int64_t rows_per_cta(const gt_kparams_t *kp) {
  switch (kp->family) {
  case GT_KFAM_DECODE:
    return kp->tile_m;
  case GT_KFAM_DECODETC:
  case GT_KFAM_DTF8:
    return 16LL * kp->warps_m * kp->tile_m;
  default:
    return kp->tile_m;
  }
}

typedef struct kgeom {
  int64_t grid[3];
  int64_t kchunk;
  size_t ws_bytes;    /* fp32 partials for the split-K reduce kernel; 0: no reduce kernel */
  unsigned cluster_x; /* CTAs per cluster along x (token tile multicast); 1: none */
  unsigned cluster_y; /* CTAs per cluster along y (weight tile multicast); 1: none */
  unsigned cluster_z; /* CTAs per cluster along z (splits reduced in the cluster); 1: none */
} kgeom_t;

/* slots: CTAs resident at once on the device, for a persistent instance (its grid is at most
 * that many, each CTA looping over the weight tiles); ignored for the others. */
static void geometry(const gt_kparams_t *kp, const gt_problem_t *p, int64_t slots, kgeom_t *g) {
  const int64_t gran = k_granule(kp);
  /* Token multicast (wg, wgf8): the grid along M is whole clusters (a CTA past M loads zero
   * weights and its share of the tokens for its peers, and stores nothing). */
  g->cluster_x = (kp->family == GT_KFAM_WG || kp->family == GT_KFAM_WGF8) && kp->cluster_m > 1
                     ? (unsigned)kp->cluster_m
                     : 1;
  g->grid[0] = ceil_div(ceil_div(p->m, rows_per_cta(kp)), g->cluster_x) * g->cluster_x;
  /* Weight multicast: the grid along N is whole clusters (a CTA past N loads zero tokens and
   * its share of the weights for its peers, and stores nothing). */
  g->cluster_y = kp->cluster_n > 1 ? (unsigned)kp->cluster_n : 1;
  g->grid[1] = ceil_div(ceil_div(p->n, kp->tile_n), g->cluster_y) * g->cluster_y;
  /* Persistent: at most the resident CTAs in all, shared by the token tiles along y. */
  if (kp->persistent && slots > 0) {
    const int64_t per_y = slots / g->grid[1] > 0 ? slots / g->grid[1] : 1;
    if (g->grid[0] > per_y) {
      const int64_t tiles = g->grid[0], rounds = ceil_div(tiles, per_y);
      g->grid[0] = g_wg_pgrid_balanced ? ceil_div(tiles, rounds) : per_y;
    }
  }
  g->grid[2] = kp->splitk;
  g->kchunk = ceil_div(ceil_div(p->k, kp->splitk), gran) * gran;
  /* wg reduces its splits inside a cluster; the others write fp32 partials to a workspace that
   * the reduce kernel sums (gt_kparams_uses_reduce, which verify reads too). */
  g->cluster_z =
      kp->family == GT_KFAM_WG || kp->family == GT_KFAM_WGF8 ? (unsigned)kp->splitk : 1;
  g->ws_bytes = gt_kparams_uses_reduce(kp)
                    ? (size_t)kp->splitk * (size_t)p->m * (size_t)p->n * sizeof(float)
                    : 0;
}

/* CTAs of instance idx resident at once on device d: a persistent instance's grid bound. */
static int64_t resident_slots(int idx, const kdev_t *d) {
  if (!gt_kinstances[idx].params.persistent) return 0;
  const kfunc_t f = func_facts(idx);
  return (int64_t)d->sm_count * (f.per_sm > 0 ? f.per_sm : 1);
}

/* ---- rules --------------------------------------------------------------------------------- */

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

static const char *lay_str(gt_trans_t a, gt_trans_t b) {
  static const char *const k[2][2] = {{"NN", "NT"}, {"TN", "TT"}};
  return k[a == GT_TRANS_T][b == GT_TRANS_T];
}

/* Hard rules: false (and why) when instance idx cannot run p correctly on device d. */
static bool hard_ok(int idx, const gt_problem_t *p, const kdev_t *d, char *why, size_t cap) {
  const gt_kinstance_t *in = &gt_kinstances[idx];
  const gt_kparams_t *kp = &in->params;
  const char *dt = gt_dtype_name(kp->dtype);
  // Types: mma.sync m16n8k16 (and the decode kernels' bf16x2/f16x2 unpacking) take 16-bit
  // floats; all four operands share the type and accumulation is fp32. The fp8 families (wgf8,
  // dtf8) take fp8 A and B and a D type of their own (below).
  if (p->op != GT_OP_GEMM) return snprintf(why, cap, "not a GEMM"), false;
  if (gt_kfamily_is_fp8(kp->family)) {
    // fp8: the key's A and B types and scale modes (none, tensorwise, outer vector; block
    // scales are not read by these kernels), C and D of the instance's D type. An fp8 D (its
    // scale and amax) is cuBLASLt's alone.
    if (!gt_kernels_fp8_select(idx, p->a_type, p->b_type, p->d_type, (int)p->scale_a,
                               (int)p->scale_b, why, cap))
      return false;
    if (p->scale_d || p->amax_d)
      return snprintf(why, cap, "writes no D scale or amax (the key has %s%s)",
                      p->scale_d ? "a D scale" : "", p->amax_d ? " an amax output" : ""),
             false;
    if (p->c_type != p->d_type)
      return snprintf(why, cap, "takes C of D's type %s; problem's C is %s",
                      gt_dtype_name(p->d_type), gt_dtype_name(p->c_type)),
             false;
    // Without fast accumulation the key asks for cuBLASLt's full fp32 sum: Hopper's fp8
    // tensor-core accumulator keeps about 14 bits, so the instance must promote (f8_promote).
    if (!p->fast_accum && !gt_kparams_f8_promotes(kp))
      return snprintf(why, cap, "cannot promote its fp8 sums (its accumulators and a partial "
                                "exceed 128 registers); the key asks for full accumulation "
                                "(no fast_accum)"),
             false;
    // dtf8 stores D itself: no workspace, and the split-K reduce kernel applies no scales. Its
    // names cannot carry a split; a table row that did would be refused here, not run.
    if (kp->family == GT_KFAM_DTF8 && kp->splitk != 1)
      return snprintf(why, cap, "dtf8 with split-K %d (it stores D itself)", kp->splitk), false;
  } else if (p->a_type != kp->dtype || p->b_type != kp->dtype || p->c_type != kp->dtype ||
             p->d_type != kp->dtype)
    return snprintf(why, cap, "takes %s A/B/C/D; problem is %s/%s/%s/%s", dt,
                    gt_dtype_name(p->a_type), gt_dtype_name(p->b_type), gt_dtype_name(p->c_type),
                    gt_dtype_name(p->d_type)),
           false;
  const bool fast_same = (kp->dtype == GT_DT_BF16 && p->compute == GT_COMPUTE_F32_FAST_BF16) ||
                         (kp->dtype == GT_DT_F16 && p->compute == GT_COMPUTE_F32_FAST_F16);
  if (p->compute != GT_COMPUTE_F32 && !fast_same)
    return snprintf(why, cap, "accumulates in f32; problem asks for %s compute",
                    gt_compute_name(p->compute)),
           false;
  if (p->scale_type != GT_DT_F32)
    return snprintf(why, cap, "takes f32 alpha/beta; problem's scale type is %s",
                    gt_dtype_name(p->scale_type)),
           false;
  // Layout: each instance runs the layout in its name (decode and decodetc: TN only).
  if (p->transa != kp->transa || p->transb != kp->transb)
    return snprintf(why, cap, "%s instance; problem is %s", lay_str(kp->transa, kp->transb),
                    lay_str(p->transa, p->transb)),
           false;
  if (p->batch != 1) return snprintf(why, cap, "not batched (batch=%lld)", (long long)p->batch), false;
  // Epilogue: a key with one runs on the epilogue twins, which apply it when they store D; a
  // key without one on the plain instances (a twin would compute it too, under a second name
  // for the same kernel body, and the plain machine code is the one measured without).
  if ((unsigned)p->epilogue >= GT_EPI__COUNT)
    return snprintf(why, cap, "unknown epilogue %d", (int)p->epilogue), false;
  if (p->epilogue != GT_EPI_NONE && !kp->epilogue)
    return snprintf(why, cap, "plain instance: the key has a %s epilogue, its _e twin is listed",
                    gt_epilogue_name(p->epilogue)),
           false;
  if (p->epilogue == GT_EPI_NONE && kp->epilogue)
    return snprintf(why, cap, "epilogue twin: for keys with an epilogue"), false;
  // The twins read the bias as D's type (what cuBLASLt takes for a bf16/f16 D).
  if (epi_has_bias(p->epilogue) && gt_reference_bias_type(p) != p->d_type)
    return snprintf(why, cap, "reads a bias of D's type %s; the key's bias is %s",
                    gt_dtype_name(p->d_type), gt_dtype_name(gt_reference_bias_type(p))),
           false;
  // Alignment: vector loads need every row start aligned, i.e. ld a multiple of the vector.
  if (kp->vec > 1 && (p->lda % kp->vec || p->ldb % kp->vec))
    return snprintf(why, cap, "lda=%lld, ldb=%lld not multiples of %d elements (%d-byte loads)",
                    (long long)p->lda, (long long)p->ldb, kp->vec,
                    kp->vec * (int)gt_dtype_size(kp->dtype)),
           false;
  // Device: the code of the instance's architecture runs on some compute capabilities only.
  if (!gt_karch_runs_on(gt_kparams_arch(kp), d->cc_major, d->cc_minor, why, cap)) return false;
  // Shared-memory budget.
  if (in->smem_bytes > d->smem_optin)
    return snprintf(why, cap, "needs %d bytes of shared memory; device allows %d per block",
                    in->smem_bytes, d->smem_optin),
           false;
  // Grid limits (y and z are 16-bit).
  kgeom_t g;
  geometry(kp, p, resident_slots(idx, d), &g);
  if (g.grid[0] > INT_MAX || g.grid[1] > 65535 || g.grid[2] > 65535)
    return snprintf(why, cap, "grid %lldx%lldx%lld exceeds CUDA's limits", (long long)g.grid[0],
                    (long long)g.grid[1], (long long)g.grid[2]),
           false;
  // TMA (wg): box coordinates are 32-bit signed.
  if (uses_tma(kp) &&
      (p->m > INT_MAX || p->n > INT_MAX || p->k > INT_MAX))
    return snprintf(why, cap, "m, n or k exceeds TMA's 32-bit coordinates"), false;
  // Registers: a block the register file cannot hold fails to launch.
  kfunc_t f = func_facts(idx);
  if (f.ready < 0) return snprintf(why, cap, "%s", f.why), false;
  if (in->threads > f.max_threads)
    return snprintf(why, cap, "%d registers x %d threads exceed the register file", f.num_regs,
                    in->threads),
           false;
  return true;
}

/* Whether an instance of kp's family, type and layout has a tokens tile in [n, kp->tile_n): the
 * tile the tokens-range rule below points to. (wg's N-major-token layouts only come with 64.) */
static bool smaller_tile_exists(const gt_kparams_t *kp, int64_t n) {
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *q = &gt_kinstances[i].params;
    if (q->family == kp->family && q->dtype == kp->dtype && q->b_dtype == kp->b_dtype &&
        q->d_dtype == kp->d_dtype && q->transa == kp->transa &&
        q->transb == kp->transb && q->epilogue == kp->epilogue && q->tile_n >= n &&
        q->tile_n < kp->tile_n)
      return true;
  }
  return false;
}

/* Pruning rules: false (and why) when instance idx runs p correctly but should not be raced.
 * *ctas receives the main grid's CTA count. */
static bool prune_ok(int idx, const gt_problem_t *p, const kdev_t *d, char *why, size_t cap,
                     int64_t *ctas) {
  const gt_kparams_t *kp = &gt_kinstances[idx].params;
  kgeom_t g;
  geometry(kp, p, resident_slots(idx, d), &g);
  *ctas = g.grid[0] * g.grid[1] * g.grid[2];
  // Register spills: local-memory traffic competes with the operand stream.
  kfunc_t f = func_facts(idx);
  if (f.ready > 0 && f.local_bytes > 0)
    return snprintf(why, cap, "spills %d bytes to local memory", f.local_bytes), false;
  // Tokens range: each tokens tile streams the whole weight matrix once more; with weight
  // multicast (cluster_n) each cluster of token tiles does, and a cluster with fewer token tiles
  // than CTAs leaves a CTA loading weights for nothing.
  if (kp->family == GT_KFAM_DECODE || kp->family == GT_KFAM_DECODETC || kp->family == GT_KFAM_WG ||
      gt_kfamily_is_fp8(kp->family)) {
    const int min_tile = kp->family == GT_KFAM_DECODE ? 1 : 8;
    const int64_t span = (int64_t)kp->tile_n * g.cluster_y;  // tokens per weight read
    if (p->n > span)
      return snprintf(why, cap, "tokens n=%lld exceed the tokens tile %lld%s: weights streamed %lld "
                      "times", (long long)p->n, (long long)span,
                      g.cluster_y > 1 ? " of a multicast cluster" : "",
                      (long long)(g.grid[1] / g.cluster_y)),
             false;
    if (g.cluster_y > 1 && ceil_div(p->n, kp->tile_n) < (int64_t)g.cluster_y)
      return snprintf(why, cap, "tokens n=%lld fill %lld of the %u token tiles of a multicast "
                      "cluster", (long long)p->n, (long long)ceil_div(p->n, kp->tile_n),
                      g.cluster_y),
             false;
    // Weight multicast pays where the tile's grid without it leaves SMs idle (few weight tiles:
    // the cluster's CTAs share one weight read); where that grid already fills the SMs, the
    // clusters only add waves. H100, 4096 x 4096 at 32 tokens (64 x 2 CTAs): fp8 8.37 us against
    // 10.02 for the best tile without; every row whose plain grid was over the SMs lost.
    const int64_t plain_ctas = (int64_t)g.grid[0] * ceil_div(p->n, kp->tile_n);
    if (g.cluster_y > 1 && plain_ctas > d->sm_count)
      return snprintf(why, cap, "grid of %lld CTAs without the multicast already fills the %d SMs",
                      (long long)plain_ctas, d->sm_count),
             false;
    if (kp->tile_n > min_tile && kp->tile_n >= 2 * p->n && smaller_tile_exists(kp, p->n))
      return snprintf(why, cap, "tokens tile %d is at least twice n=%lld (a smaller tile exists)",
                      kp->tile_n, (long long)p->n),
             false;
  }
  // Split-K: a split whose K range is empty only adds a partial of zeros.
  if (kp->splitk > 1 && (int64_t)(kp->splitk - 1) * g.kchunk >= p->k)
    return snprintf(why, cap, "split-K %d with k=%lld leaves a split empty", kp->splitk,
                    (long long)p->k),
           false;
  // SM fill.
  if ((double)*ctas < K_MIN_FILL * d->sm_count)
    return snprintf(why, cap, "grid of %lld CTAs fills < %d%% of %d SMs", (long long)*ctas,
                    (int)(K_MIN_FILL * 100), d->sm_count),
           false;
  return true;
}

/* ---- provider entry points ----------------------------------------------------------------- */

static gt_status_t kernels_init(void) {
  gt_status_t st = gt_cuda_device_count(NULL);
  if (st != GT_OK) return st;
  // The two generated tables must describe the same instances in the same order.
  if (gt_kinstance_fn_count != gt_kinstance_count)
    return gt_err_set(GT_ERR_INTERNAL, "kernel tables disagree: %zu instances, %zu kernels",
                      gt_kinstance_count, gt_kinstance_fn_count);
  for (size_t i = 0; i < gt_kinstance_count; i++)
    if (strcmp(gt_kinstances[i].name, gt_kinstance_fns[i].name) != 0)
      return gt_err_set(GT_ERR_INTERNAL, "kernel tables disagree at %zu: %s vs %s", i,
                        gt_kinstances[i].name, gt_kinstance_fns[i].name);
  int dev = 0;
  GT_CUDA_CHECK(cudaGetDevice(&dev));
  kdev_t d = {0};
  gt_status_t s = device_facts(dev, &d);
  if (s != GT_OK) return s;
  // At least one architecture of the table must run here, or no instance can.
  size_t runnable = 0;
  char archs[128] = "";
  for (size_t i = 0; i < gt_karch_count; i++) {
    runnable += gt_karch_runs_on(&gt_karchs[i], d.cc_major, d.cc_minor, NULL, 0);
    const size_t n = strlen(archs);
    snprintf(archs + n, sizeof archs - n, "%s%s", i ? ", " : "", gt_karchs[i].target);
  }
  if (!runnable)
    return gt_err_set(GT_ERR_UNSUPPORTED, "own kernels are built for %s; device %d is sm_%d%d",
                      archs, dev, d.cc_major, d.cc_minor);
  const char *pdl = getenv("GEMMTUNE_KERNELS_PDL");
  if (pdl && strcmp(pdl, "0") == 0) g_pdl = 0;
  const char *promo = getenv("GEMMTUNE_WG_L2_PROMOTION");
  if (promo) {
    if (!strcmp(promo, "none")) g_wg_promo = CU_TENSOR_MAP_L2_PROMOTION_NONE;
    else if (!strcmp(promo, "64")) g_wg_promo = CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    else if (!strcmp(promo, "128")) g_wg_promo = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    else if (!strcmp(promo, "256")) g_wg_promo = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    else
      return gt_err_set(GT_ERR_USAGE,
                        "GEMMTUNE_WG_L2_PROMOTION=%s: expected none, 64, 128 or 256", promo);
  }
  const char *ef = getenv("GEMMTUNE_WG_EVICT_FIRST");
  if (ef && strcmp(ef, "0") == 0) g_wg_evict_first = 0;
  const char *pg = getenv("GEMMTUNE_WG_PERSISTENT_GRID");
  if (pg) {
    if (!strcmp(pg, "resident")) g_wg_pgrid_balanced = 0;
    else if (!strcmp(pg, "balanced")) g_wg_pgrid_balanced = 1;
    else
      return gt_err_set(GT_ERR_USAGE,
                        "GEMMTUNE_WG_PERSISTENT_GRID=%s: expected resident or balanced", pg);
  }
  pthread_mutex_lock(&g_lock);
  if (!g_func) g_func = calloc(gt_kinstance_count, sizeof *g_func);
  const bool ok = g_func != NULL;
  pthread_mutex_unlock(&g_lock);
  if (!ok) return gt_err_set(GT_ERR_NOMEM, "kernels: out of host memory");
  return GT_OK;
}

static const char *kernels_lib_version(void) { return "gemmtune-kernels=1"; }

static void fill_candidate(gt_candidate_t *c, int idx) {
  memset(c, 0, sizeof *c);
  c->provider = &gt_provider_kernels;
  snprintf(c->name, sizeof c->name, "%s", gt_kinstances[idx].name);
  c->splitk = gt_kinstances[idx].params.splitk > 1;
  kblob_t b = {idx};
  memcpy(c->blob, &b, sizeof b);
}

/* The hook for own fp8 kernels: an fp8 key is answered by the instances whose dtype is fp8,
 * and while the generated table has none, by one exclusion that says so (rather than one
 * "takes bf16 A/B/C/D" line per 16-bit instance). hard_ok checks the fp8 instances against the
 * key's scale modes, scale_d and amax_d; kernels_run hands them gt_operands_t's scale arrays. */
static bool fp8_refused(const gt_problem_t *p, gt_cand_list_t *out, gt_status_t *st) {
  if (!gt_dtype_is_fp8(p->a_type) && !gt_dtype_is_fp8(p->b_type)) return false;
  for (size_t i = 0; i < gt_kinstance_count; i++)
    if (gt_dtype_is_fp8(gt_kinstances[i].params.dtype)) return false;
  *st = gt_cand_list_exclude(out, &gt_provider_kernels, "gt_sm90_fp8",
                             "no own fp8 kernel instances in this build (%s x %s, scales %s/%s): "
                             "cuBLASLt's fp8 configurations race alone",
                             gt_dtype_name(p->a_type), gt_dtype_name(p->b_type),
                             gt_scale_mode_name(p->scale_a), gt_scale_mode_name(p->scale_b));
  return true;
}

static gt_status_t kernels_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o,
                                     gt_cand_list_t *out) {
  if (!g_func) return gt_err_set(GT_ERR_USAGE, "kernels: enumerate before init");
  gt_status_t fst = GT_OK;
  if (fp8_refused(p, out, &fst)) return fst;
  kdev_t d = {0};
  gt_status_t s = device_facts(o ? o->device : 0, &d);
  if (s != GT_OK) return s;
  const size_t first = out->n;
  const int cap = o && o->max_candidates > 0 ? o->max_candidates : 0;
  int active = 0;
  /* Pruned-only candidates, so one can be restored when nothing else is left. */
  int64_t best_ctas = -1;
  size_t best_pos = 0;
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    char why[GT_REASON_MAX];
    int64_t ctas = 0;
    gt_candidate_t c;
    fill_candidate(&c, (int)i);
    if (!hard_ok((int)i, p, &d, why, sizeof why)) {
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "%s", why);
    } else if (!prune_ok((int)i, p, &d, why, sizeof why, &ctas) && !(o && o->exhaustive)) {
      /* The soft rules (spills, tokens tile, empty splits, SM fill) prune the default space; the
       * full space (exhaustive) holds every instance the hard rules allow. */
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "%s", why);
      if (ctas > best_ctas) best_ctas = ctas, best_pos = out->n;
    } else if (cap && active >= cap) {
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "over the candidate cap of %d", cap);
    } else {
      active++;
    }
    if ((s = gt_cand_list_push(out, &c)) != GT_OK) return s;
  }
  // Every problem the own kernels can run keeps at least one own candidate.
  if (active == 0 && best_ctas >= 0 && best_pos >= first) {
    out->v[best_pos].excluded = false;
    out->v[best_pos].reason[0] = '\0';
  }
  return GT_OK;
}

/* The hard rules on the current device: GT_ERR_UNSUPPORTED naming `name` when instance idx
 * cannot run p there. *d receives the device's facts. */
static gt_status_t check_current_device(int idx, const gt_problem_t *p, const char *name,
                                        kdev_t *d) {
  int dev = 0;
  GT_CUDA_CHECK(cudaGetDevice(&dev));
  gt_status_t s = device_facts(dev, d);
  if (s != GT_OK) return s;
  char why[GT_REASON_MAX];
  if (!hard_ok(idx, p, d, why, sizeof why))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
  return GT_OK;
}

static gt_status_t kernels_from_name(const char *name, const gt_problem_t *p,
                                     gt_candidate_t *out) {
  gt_kparams_t kp;
  gt_status_t s = gt_kernel_name_parse(name, &kp);
  if (s != GT_OK) return s;
  const int idx = gt_kinstance_find(name);
  if (idx < 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is a valid own-kernel name but not an instance of "
                      "this build (see src/kernels/space.json)", name);
  if (!g_func) return gt_err_set(GT_ERR_USAGE, "kernels: from_name before init");
  kdev_t d = {0};
  if ((s = check_current_device(idx, p, name, &d)) != GT_OK) return s;
  fill_candidate(out, idx);
  return GT_OK;
}

static gt_status_t blob_index(const gt_candidate_t *c, int *idx) {
  kblob_t b;
  memcpy(&b, c->blob, sizeof b);
  if (b.idx < 0 || (size_t)b.idx >= gt_kinstance_count ||
      strcmp(gt_kinstances[b.idx].name, c->name) != 0)
    return gt_err_set(GT_ERR_USAGE, "candidate '%s' is not one of this build's kernels", c->name);
  *idx = b.idx;
  return GT_OK;
}

static gt_status_t kernels_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                                   size_t *ws_needed) {
  int idx = -1;
  gt_status_t s = blob_index(c, &idx);
  if (s != GT_OK) return s;
  if (!g_func) return gt_err_set(GT_ERR_USAGE, "kernels: prepare before init");
  if ((s = gt_problem_validate(p)) != GT_OK) return s;
  kdev_t d = {0};
  if ((s = check_current_device(idx, p, c->name, &d)) != GT_OK) return s;

  const gt_kinstance_t *in = &gt_kinstances[idx];
  /* gt_kargs_t holds 128-byte-aligned tensor maps: calloc's alignment is not enough. */
  kstate_t *st = aligned_alloc(_Alignof(kstate_t), (sizeof *st + _Alignof(kstate_t) - 1) /
                                                       _Alignof(kstate_t) * _Alignof(kstate_t));
  if (!st) return gt_err_set(GT_ERR_NOMEM, "kernels: out of host memory");
  memset(st, 0, sizeof *st);
  st->idx = idx;
  st->p = *p;
  st->fn = gt_kinstance_fns[idx].fn;
  st->threads = in->threads;
  st->smem = in->smem_bytes;
  kgeom_t g;
  geometry(&in->params, p, resident_slots(idx, &d), &g);
  for (int i = 0; i < 3; i++) st->grid[i] = (unsigned)g.grid[i];
  st->ws_needed = g.ws_bytes;
  st->args.m = p->m;
  st->args.n = p->n;
  st->args.k = p->k;
  st->args.lda = p->lda;
  st->args.ldb = p->ldb;
  st->args.ldc = p->ldc;
  st->args.kchunk = g.kchunk;
  st->args.splits = in->params.splitk;
  /* Plain instances (and their reduce kernel) see GT_EPI_NONE: the hard rules keep them off
   * keys with an epilogue. */
  st->args.epilogue = in->params.epilogue ? (int)p->epilogue : (int)GT_EPI_NONE;
  st->cluster_x = g.cluster_x;
  st->cluster_y = g.cluster_y;
  st->cluster_z = g.cluster_z;
  if (st->ws_needed) {
    st->reduce = gt_kreduce_fn(&in->params);
    if (!st->reduce) {
      free(st);
      return gt_err_set(GT_ERR_INTERNAL, "kernels: no split-K reduce for %s",
                        gt_dtype_name(in->params.dtype));
    }
    const int64_t total = p->m * p->n;
    int64_t blocks = ceil_div(total, GT_KREDUCE_THREADS);
    const int64_t most = (int64_t)d.sm_count * 16; /* grid-stride beyond a few waves */
    st->reduce_blocks = (unsigned)(blocks < most ? blocks : most);
  }
  // Above the default 48 KB a kernel must opt in, once per device context.
  if (st->smem > K_SMEM_DEFAULT) {
    cudaError_t e =
        cudaFuncSetAttribute(st->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, st->smem);
    if (e != cudaSuccess) {
      free(st);
      return gt_cuda_err(e, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)", __FILE__,
                         __LINE__);
    }
  }
  *state = st;
  *ws_needed = st->ws_needed;
  return GT_OK;
}

static bool aligned(const void *ptr, size_t bytes) { return ((uintptr_t)ptr % bytes) == 0; }

/* Launch a main kernel. With PDL the kernel may be launched while the previous kernel in the
 * stream still runs: its CTAs prefetch weights into L2 and then wait (griddepcontrol.wait) for
 * that kernel's completion before touching any operand, so stream order is kept; only launch
 * latency and the previous kernel's tail are overlapped. A runtime that refuses the attribute
 * outside a capture turns PDL off for the process; inside a capture the error is returned, since
 * the capture is already invalidated. */
static cudaError_t launch_main(const void *fn, dim3 grid, dim3 block, void **args, size_t smem,
                               unsigned cluster_x, unsigned cluster_y, unsigned cluster_z,
                               cudaStream_t s) {
  const bool cluster = cluster_x > 1 || cluster_y > 1 || cluster_z > 1;
  if (!g_pdl && !cluster) return cudaLaunchKernel(fn, grid, block, args, smem, s);
  cudaLaunchAttribute attr[2];
  memset(attr, 0, sizeof attr);
  unsigned na = 0;
  if (cluster) {
    attr[na].id = cudaLaunchAttributeClusterDimension;
    attr[na].val.clusterDim.x = cluster_x;
    attr[na].val.clusterDim.y = cluster_y;
    attr[na].val.clusterDim.z = cluster_z;
    na++;
  }
  const unsigned pdl_at = na;
  if (g_pdl) {
    attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[na].val.programmaticStreamSerializationAllowed = 1;
    na++;
  }
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.numAttrs = na;
  cudaError_t e = cudaLaunchKernelExC(&cfg, fn, args);
  if (g_pdl && (e == cudaErrorNotSupported || e == cudaErrorInvalidValue)) {
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      g_pdl = 0;
      cfg.numAttrs = pdl_at; /* keep the cluster shape */
      e = pdl_at ? cudaLaunchKernelExC(&cfg, fn, args)
                 : cudaLaunchKernel(fn, grid, block, args, smem, s);
    }
  }
  return e;
}

/* ---- TMA tensor maps (wg) ------------------------------------------------------------------ */

/* The key's scale modes are handed to the fp8 kernels by number. */
_Static_assert((int)GT_SCALE_NONE == GT_KFP8_SCALE_NONE && (int)GT_SCALE_TENSOR == GT_KFP8_SCALE_TENSOR &&
                   (int)GT_SCALE_OUTER == GT_KFP8_SCALE_OUTER,
               "gt_scale_mode_t and the fp8 kernels' scale modes agree");
_Static_assert(sizeof(gt_tmap_t) == sizeof(CUtensorMap) &&
                   _Alignof(gt_tmap_t) == _Alignof(CUtensorMap),
               "gt_tmap_t must mirror CUtensorMap");

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                    const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                    const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static encode_tiled_fn g_encode;
static pthread_once_t g_encode_once = PTHREAD_ONCE_INIT;
static char g_encode_why[128];

static void encode_lookup(void) {
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                   cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn) {
    (void)cudaGetLastError();
    snprintf(g_encode_why, sizeof g_encode_why, "cuTensorMapEncodeTiled unavailable (%s)",
             e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found");
    return;
  }
  g_encode = (encode_tiled_fn)fn;
}

/* One 2-D operand stored as `outer` runs of `inner` contiguous elements, `ld` apart, read in boxes
 * of box_inner x box_outer with 128-byte swizzle; whatever lies past the tensor is zero-filled by
 * TMA. A K-major operand has inner = k (box: 64 K x the tile's rows); an M- or N-major one has
 * inner = m or n (box: 64 rows or tokens x 64 K). */
static gt_status_t encode_one(gt_tmap_t *out, const void *ptr, gt_dtype_t t, int64_t inner,
                              int64_t outer, int64_t ld, int box_inner, int box_outer) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {(cuuint64_t)inner, (cuuint64_t)outer};
  const cuuint64_t strides[1] = {(cuuint64_t)ld * gt_dtype_size(t)};
  const cuuint32_t box[2] = {(cuuint32_t)box_inner, (cuuint32_t)box_outer};
  const cuuint32_t estr[2] = {1, 1};
  /* fp8 is moved as bytes: TMA never converts, and zero bytes are +0 in both fp8 formats. */
  const CUtensorMapDataType dt = t == GT_DT_BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                 : t == GT_DT_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                  : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  CUresult r = g_encode(&map, dt,
                        2, (void *)ptr, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, (CUtensorMapL2promotion)g_wg_promo,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "cuTensorMapEncodeTiled failed (CUresult %d) for %lld runs of %lld, ld %lld",
                      (int)r, (long long)outer, (long long)inner, (long long)ld);
  memcpy(out, &map, sizeof map);
  return GT_OK;
}

/* Rows of a K-major weight box: the tile's, or with weight multicast (cluster_n) each CTA's share
 * of them (wg and wgf8). */
static int weight_box_rows(const gt_kparams_t *kp) {
  return kp->cluster_n > 1 ? kp->tile_m / kp->cluster_n : kp->tile_m;
}

/* Rows of a K-major token box: the tile's, or with token multicast (cluster_m) each CTA's share
 * of them (wg and wgf8). */
static int token_box_rows(const gt_kparams_t *kp) {
  return kp->cluster_m > 1 ? kp->tile_n / kp->cluster_m : kp->tile_n;
}

/* wgf8: both operands K-major, in boxes of 128 fp8 K (the 128-byte swizzle span) x the tile's
 * weight rows, resp. tokens (a multicast CTA's share of them). */
static gt_status_t encode_tmaps_f8(gt_kargs_t *a, const gt_kparams_t *kp, int64_t m, int64_t n,
                                   int64_t k, int64_t lda, int64_t ldb) {
  pthread_once(&g_encode_once, encode_lookup);
  if (!g_encode) return gt_err_set(GT_ERR_UNSUPPORTED, "%s", g_encode_why);
  gt_status_t s = encode_one(&a->tma_a, a->A, kp->dtype, k, m, lda, 128, weight_box_rows(kp));
  if (s != GT_OK) return s;
  return encode_one(&a->tma_b, a->B, kp->b_dtype, k, n, ldb, 128, token_box_rows(kp));
}

static gt_status_t encode_tmaps(gt_kargs_t *a, const gt_kparams_t *kp, const gt_problem_t *p) {
  if (kp->family == GT_KFAM_WGF8) return encode_tmaps_f8(a, kp, p->m, p->n, p->k, p->lda, p->ldb);
  pthread_once(&g_encode_once, encode_lookup);
  if (!g_encode) return gt_err_set(GT_ERR_UNSUPPORTED, "%s", g_encode_why);
  /* A stage of tile_k is tile_k / 64 boxes along K: 64 elements = the 128-byte swizzle span.
   * Weights: K-major (transa T) in boxes of 64 K x tile_m rows; M-major (N) in 64 x 64 boxes. */
  gt_status_t s =
      kp->transa == GT_TRANS_T
          ? encode_one(&a->tma_a, a->A, kp->dtype, p->k, p->m, p->lda, 64, weight_box_rows(kp))
          : encode_one(&a->tma_a, a->A, kp->dtype, p->m, p->k, p->lda, 64, 64);
  if (s != GT_OK) return s;
  /* Tokens: N-major (transb T) in 64 x 64 boxes. K-major with multicast: each of the cluster_m
   * CTAs of a row group loads its share of the tokens. */
  if (kp->transb == GT_TRANS_T)
    return encode_one(&a->tma_b, a->B, kp->dtype, p->n, p->k, p->ldb, 64, 64);
  return encode_one(&a->tma_b, a->B, kp->dtype, p->k, p->n, p->ldb, 64, token_box_rows(kp));
}

static gt_status_t kernels_run(void *state, const gt_operands_t *ops, void *stream) {
  kstate_t *st = state;
  const gt_kinstance_t *in = &gt_kinstances[st->idx];
  if (!ops->A || !ops->B || !ops->D || !ops->alpha)
    return gt_err_set(GT_ERR_USAGE, "%s: A, B, D and alpha are required", in->name);
  const float beta = ops->beta ? *(const float *)ops->beta : 0.0f;
  if (beta != 0.0f && !ops->C)
    return gt_err_set(GT_ERR_USAGE, "%s: beta != 0 needs C", in->name);
  // Vector loads need aligned operands; a misaligned pointer is refused, never read unaligned.
  const bool f8 = gt_kfamily_is_fp8(in->params.family);
  const size_t esize = gt_dtype_size(in->params.dtype);
  const size_t dsize = f8 ? gt_dtype_size(in->params.d_dtype) : 2;
  const size_t vbytes = (size_t)in->params.vec * esize;
  if (vbytes > esize && (!aligned(ops->A, vbytes) || !aligned(ops->B, vbytes)))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: A or B is not %zu-byte aligned", in->name, vbytes);
  if (!aligned(ops->D, dsize) || (ops->C && !aligned(ops->C, dsize)))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: C or D is not %zu-byte aligned", in->name, dsize);
  const bool bias = epi_has_bias((gt_epilogue_t)st->args.epilogue);
  if (bias && !ops->bias)
    return gt_err_set(GT_ERR_USAGE, "%s: the %s epilogue needs a bias vector", in->name,
                      gt_epilogue_name((gt_epilogue_t)st->args.epilogue));
  if (bias && !aligned(ops->bias, dsize))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: the bias is not %zu-byte aligned", in->name, dsize);
  if (st->ws_needed && (!ops->workspace || ops->ws_size < st->ws_needed ||
                        !aligned(ops->workspace, sizeof(float))))
    return gt_err_set(GT_ERR_USAGE, "%s: needs a %zu-byte workspace (got %zu)", in->name,
                      st->ws_needed, ops->workspace ? ops->ws_size : 0);

  gt_kargs_t a = st->args;
  a.A = ops->A;
  a.B = ops->B;
  a.C = ops->C;
  a.D = ops->D;
  a.ws = st->ws_needed ? (float *)ops->workspace : NULL;
  a.alpha = *(const float *)ops->alpha;
  a.beta = beta;
  a.beta_nonzero = beta != 0.0f;
  a.evict_first = g_wg_evict_first;
  a.bias = bias ? ops->bias : NULL;
  /* fp8: the call's scale arrays, read by the kernel when it runs (a graph replay sees the
   * values of that replay), in the key's modes (hard_ok admitted only none/tensor/outer, whose
   * numbers are gt_kernels_fp8.h's). */
  if (f8) {
    gt_status_t ss = gt_kernels_fp8_set_scales(&a, ops->scale_a, (int)st->p.scale_a, ops->scale_b,
                                               (int)st->p.scale_b);
    if (ss != GT_OK) return ss;
    a.f8_promote = !st->p.fast_accum; /* hard_ok admitted only instances that can */
  }
  void *args[] = {&a};
  cudaStream_t s = (cudaStream_t)stream;
  dim3 grid = {st->grid[0], st->grid[1], st->grid[2]};
  dim3 block = {(unsigned)st->threads, 1, 1};
  if (uses_tma(&in->params)) {
    gt_status_t es = encode_tmaps(&a, &in->params, &st->p);
    if (es != GT_OK) return es;
  }
  GT_CUDA_CHECK(
      launch_main(st->fn, grid, block, args, (size_t)st->smem, st->cluster_x, st->cluster_y,
                  st->cluster_z, s));
  if (st->reduce) {
    dim3 rgrid = {st->reduce_blocks, 1, 1};
    dim3 rblock = {GT_KREDUCE_THREADS, 1, 1};
    GT_CUDA_CHECK(cudaLaunchKernel(st->reduce, rgrid, rblock, args, 0, s));
  }
  return GT_OK;
}

/* ---- fp8 entry points (gt_kernels_fp8.h) ---------------------------------------------------- */

bool gt_kernels_fp8_select(int idx, gt_dtype_t a, gt_dtype_t b, gt_dtype_t d, int mode_a,
                           int mode_b, char *why, size_t cap) {
  if (idx < 0 || (size_t)idx >= gt_kinstance_count)
    return snprintf(why, cap, "not an instance of this build"), false;
  const gt_kparams_t *kp = &gt_kinstances[idx].params;
  if (!gt_kfamily_is_fp8(kp->family))
    return snprintf(why, cap, "not an fp8 instance (family %s)", gt_kfamily_name(kp->family)),
           false;
  if (a != kp->dtype || b != kp->b_dtype || d != kp->d_dtype)
    return snprintf(why, cap, "takes %s/%s A/B and %s C/D; problem is %s/%s and %s",
                    gt_dtype_name(kp->dtype), gt_dtype_name(kp->b_dtype),
                    gt_dtype_name(kp->d_dtype), gt_dtype_name(a), gt_dtype_name(b),
                    gt_dtype_name(d)),
           false;
  // Every instance reads both scales at run time in any of the three modes.
  if (mode_a < GT_KFP8_SCALE_NONE || mode_a > GT_KFP8_SCALE_OUTER || mode_b < GT_KFP8_SCALE_NONE ||
      mode_b > GT_KFP8_SCALE_OUTER)
    return snprintf(why, cap, "scale modes %d/%d (takes none, tensorwise or outer vector)", mode_a,
                    mode_b),
           false;
  return true;
}

gt_status_t gt_kernels_fp8_set_scales(gt_kargs_t *a, const float *scale_a, int mode_a,
                                      const float *scale_b, int mode_b) {
  if (mode_a < GT_KFP8_SCALE_NONE || mode_a > GT_KFP8_SCALE_OUTER || mode_b < GT_KFP8_SCALE_NONE ||
      mode_b > GT_KFP8_SCALE_OUTER)
    return gt_err_set(GT_ERR_USAGE, "fp8 scale modes %d/%d (0 none, 1 tensorwise, 2 outer)",
                      mode_a, mode_b);
  if ((mode_a != GT_KFP8_SCALE_NONE && !scale_a) || (mode_b != GT_KFP8_SCALE_NONE && !scale_b))
    return gt_err_set(GT_ERR_USAGE, "fp8 scale mode %d/%d needs its scale pointer", mode_a,
                      mode_b);
  a->scale_a = mode_a != GT_KFP8_SCALE_NONE ? scale_a : NULL;
  a->scale_b = mode_b != GT_KFP8_SCALE_NONE ? scale_b : NULL;
  a->scale_mode_a = mode_a;
  a->scale_mode_b = mode_b;
  return GT_OK;
}

gt_status_t gt_kernels_fp8_launch(int idx, const gt_kfp8_call_t *c, void *stream) {
  char why[GT_REASON_MAX];
  if (!gt_kernels_fp8_select(idx, c->a_type, c->b_type, c->d_type, c->scale_mode_a,
                             c->scale_mode_b, why, sizeof why))
    return gt_err_set(GT_ERR_UNSUPPORTED, "fp8 launch: %s", why);
  const gt_kinstance_t *in = &gt_kinstances[idx];
  const gt_kparams_t *kp = &in->params;
  // The hard rules the key-based path applies, on the call's own fields.
  const bool has_bias = epi_has_bias((gt_epilogue_t)c->epilogue);
  if ((c->epilogue != GT_EPI_NONE) != kp->epilogue)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", in->name,
                      kp->epilogue ? "epilogue twin: for calls with an epilogue"
                                   : "plain instance: the call has an epilogue");
  if (!c->fast_accum && !gt_kparams_f8_promotes(kp))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: cannot promote its fp8 sums (accumulators and a "
                      "partial over 128 registers): a call without fast_accum needs that",
                      in->name);
  const size_t dsize = gt_dtype_size(kp->d_dtype);
  if (c->m < 1 || c->n < 1 || c->k < 1 || c->m > INT_MAX || c->n > INT_MAX || c->k > INT_MAX ||
      c->lda < c->k || c->ldb < c->k || c->ldc < c->m)
    return gt_err_set(GT_ERR_USAGE, "%s: bad shape m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld",
                      in->name, (long long)c->m, (long long)c->n, (long long)c->k,
                      (long long)c->lda, (long long)c->ldb, (long long)c->ldc);
  if (c->lda % kp->vec || c->ldb % kp->vec || !aligned(c->A, 16) || !aligned(c->B, 16))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: its 16-byte loads (TMA's strides for wgf8) need "
                      "lda, ldb multiples of 16 and 16-byte aligned A and B", in->name);
  if (!c->D || !aligned(c->D, dsize) || (c->C && !aligned(c->C, dsize)) ||
      (c->beta != 0.f && !c->C) || (has_bias && (!c->bias || !aligned(c->bias, dsize))))
    return gt_err_set(GT_ERR_USAGE, "%s: D (and C when beta != 0, the bias for a bias epilogue) "
                      "needed, %zu-byte aligned", in->name, dsize);
  int dev = 0;
  GT_CUDA_CHECK(cudaGetDevice(&dev));
  kdev_t d = {0};
  gt_status_t s = device_facts(dev, &d);
  if (s != GT_OK) return s;
  if (!gt_karch_runs_on(gt_kparams_arch(kp), d.cc_major, d.cc_minor, why, sizeof why))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", in->name, why);
  if (in->smem_bytes > d.smem_optin)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: needs %d bytes of shared memory (device: %d)",
                      in->name, in->smem_bytes, d.smem_optin);
  const void *fn = gt_kinstance_fns[idx].fn;
  if (in->smem_bytes > K_SMEM_DEFAULT)
    GT_CUDA_CHECK(
        cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, in->smem_bytes));

  gt_problem_t p;
  memset(&p, 0, sizeof p);
  p.m = c->m, p.n = c->n, p.k = c->k;
  kgeom_t g;
  geometry(kp, &p, resident_slots(idx, &d), &g);
  gt_kargs_t a;
  memset(&a, 0, sizeof a);
  a.A = c->A, a.B = c->B, a.C = c->C, a.D = c->D;
  a.m = c->m, a.n = c->n, a.k = c->k;
  a.lda = c->lda, a.ldb = c->ldb, a.ldc = c->ldc;
  a.kchunk = g.kchunk;
  a.alpha = c->alpha, a.beta = c->beta, a.beta_nonzero = c->beta != 0.f;
  a.splits = kp->splitk;
  a.evict_first = g_wg_evict_first;
  a.bias = has_bias ? c->bias : NULL;
  a.epilogue = c->epilogue;
  a.f8_promote = !c->fast_accum;
  if ((s = gt_kernels_fp8_set_scales(&a, c->scale_a, c->scale_mode_a, c->scale_b,
                                     c->scale_mode_b)) != GT_OK)
    return s;
  if (uses_tma(kp) &&
      (s = encode_tmaps_f8(&a, kp, c->m, c->n, c->k, c->lda, c->ldb)) != GT_OK)
    return s;
  void *args[] = {&a};
  dim3 grid = {(unsigned)g.grid[0], (unsigned)g.grid[1], (unsigned)g.grid[2]};
  dim3 block = {(unsigned)in->threads, 1, 1};
  GT_CUDA_CHECK(launch_main(fn, grid, block, args, (size_t)in->smem_bytes, g.cluster_x,
                            g.cluster_y, g.cluster_z, (cudaStream_t)stream));
  return GT_OK;
}

static void kernels_release(void *state) { free(state); }

/* from_name and prepare read device attributes (cached), the kernel's attributes and opt it into
 * more shared memory (cudaFuncGetAttributes, cudaFuncSetAttribute: function state, no stream
 * operation, what attention libraries do on every call inside captured graphs) and allocate host
 * memory. The one cost is loading the kernel's module the first time (lazy loading), as the first
 * launch of any kernel inside a capture does; the runtime prepares its rows outside capture
 * whenever the process makes a call there first. */
static bool kernels_capture_safe(void) { return true; }

const gt_provider_t gt_provider_kernels = {
    .api_version = GT_PROVIDER_API_VERSION,
    .name = "kernels",
    .description = "gemmtune's own CUDA kernels: decode (CUDA cores), decodetc (tensor-core "
                   "decode/skinny), tc (generic tensor-core tiles), wg (Hopper TMA + wgmma "
                   "decode/skinny), wgf8 (the same on fp8 operands with tensorwise or "
                   "outer-vector scales), dtf8 (decodetc on fp8 operands, the same scales), "
                   "each instance with an epilogue twin (_e: bias, relu, gelu)",
    .backend = GT_BACKEND_CUDA,
    .init = kernels_init,
    .lib_version = kernels_lib_version,
    .enumerate = kernels_enumerate,
    .from_name = kernels_from_name,
    .prepare = kernels_prepare,
    .run = kernels_run,
    .release = kernels_release,
    .row_kernels = gt_own_row_kernels,
    .owns_kernel = gt_own_owns_kernel,
    .capture_safe = kernels_capture_safe,
};
