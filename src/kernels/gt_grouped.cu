// The CUDA half of the grouped GEMM host API (gt_grouped.h): the legality check and the launch
// of one instance. Per call it encodes the two TMA tensor maps of the TMA families (grpd, grpp)
// from the pointers (the weights 3-D: the group is the outer dimension, so TMA zero-fills N and
// K tails inside a group and a box never reads into the next group's weights; grpv reads with
// plain 16-byte loads under the same alignment rules and needs none) and launches one kernel,
// with a cluster of the instance's K splits and programmatic stream serialization (its prologue
// overlaps the previous kernel's drain); nothing here synchronises with the device. Host C++
// without its runtime (pthread, no std::mutex, nothing with a destructor): the shim links this
// into processes whose link line has no libstdc++.
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_grouped.h"
#include "gt_grouped_kargs.h"
#include "gt_kernel_arch.h"
#include "platform/gt_cudalib.h"

extern "C" {
extern const void *const gt_grouped_fns[];
extern const size_t gt_grouped_fn_count;
}

static_assert(sizeof(gt_tmap_t) == sizeof(CUtensorMap) && alignof(gt_tmap_t) >= alignof(CUtensorMap),
              "gt_tmap_t must mirror CUtensorMap");

namespace {

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                    const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                    const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
encode_tiled_fn g_encode;
pthread_once_t g_encode_once = PTHREAD_ONCE_INIT;
char g_encode_why[128];

void encode_lookup() {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
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

// Device properties of the current device, read once per device.
struct devinfo {
  int major, minor, smem_optin;
};
devinfo g_dev_cache[64];
bool g_dev_have[64];
pthread_mutex_t g_dev_mu = PTHREAD_MUTEX_INITIALIZER;
gt_status_t device_info(devinfo *out) {
  int dev = 0;
  GT_CUDA_CHECK(cudaGetDevice(&dev));
  pthread_mutex_lock(&g_dev_mu);
  const bool cached = dev >= 0 && dev < 64 && g_dev_have[dev];
  if (cached) *out = g_dev_cache[dev];
  pthread_mutex_unlock(&g_dev_mu);
  if (cached) return GT_OK;
  devinfo d;
  GT_CUDA_CHECK(cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev));
  GT_CUDA_CHECK(cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, dev));
  GT_CUDA_CHECK(cudaDeviceGetAttribute(&d.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  pthread_mutex_lock(&g_dev_mu);
  if (dev >= 0 && dev < 64) {
    g_dev_cache[dev] = d;
    g_dev_have[dev] = true;
  }
  pthread_mutex_unlock(&g_dev_mu);
  *out = d;
  return GT_OK;
}

// Whether an instance's shared-memory limit is set on a device: [device][instance].
#define GT_GROUPED_MAX_CACHED 256
int g_smem_set[64][GT_GROUPED_MAX_CACHED];

// Programmatic dependent launch (the kernel's prologue overlaps the previous kernel's drain;
// gt_grp.cuh waits before it reads anything): 1 on, 0 off. GEMMTUNE_GROUPED_PDL=0 turns it off
// (for measuring), and a runtime that refuses the attribute turns it off for the process.
int g_pdl = -1;
bool pdl_on() {
  int v = __atomic_load_n(&g_pdl, __ATOMIC_RELAXED);
  if (v < 0) {
    const char *e = getenv("GEMMTUNE_GROUPED_PDL");
    v = !(e && e[0] == '0' && !e[1]);
    int expect = -1;
    __atomic_compare_exchange_n(&g_pdl, &expect, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    v = __atomic_load_n(&g_pdl, __ATOMIC_RELAXED);
  }
  return v == 1;
}

bool aligned(const void *p, size_t n) { return ((uintptr_t)p % n) == 0; }

// A TMA coordinate is a signed 32-bit integer, a global extent at most 2^32 and a stride below
// 2^40 bytes.
bool fits32(int64_t v) { return v >= 0 && v <= INT32_MAX; }

// The operands' bytes per element: 1 for fp8 instances, 2 for bf16.
int elem_bytes(const gt_grouped_instance_t *in) { return in->dtype == GT_DT_F8E4M3FN ? 1 : 2; }

gt_status_t encode(gt_tmap_t *out, const void *ptr, int rank, const cuuint64_t *dims,
                   const cuuint64_t *strides_bytes, const cuuint32_t *box, int es,
                   const char *what) {
  CUtensorMap map;
  const cuuint32_t estr[3] = {1, 1, 1};
  // fp8 is moved as bytes (TMA has no fp8 type; wgmma reads the bytes as e4m3).
  const CUtensorMapDataType dt =
      es == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  CUresult r = g_encode(&map, dt, (cuuint32_t)rank, (void *)ptr,
                        dims, strides_bytes, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return gt_err_set(GT_ERR_UNSUPPORTED, "cuTensorMapEncodeTiled failed (CUresult %d) for %s",
                      (int)r, what);
  memcpy(out, &map, sizeof map);
  return GT_OK;
}

gt_status_t encode_maps(gt_grouped_kargs_t *k, const gt_grouped_instance_t *in) {
  pthread_once(&g_encode_once, encode_lookup);
  if (!g_encode) return gt_err_set(GT_ERR_UNSUPPORTED, "%s", g_encode_why);
  const gt_grouped_args_t &g = k->g;
  const int es = elem_bytes(in);
  const cuuint32_t kbox = (cuuint32_t)(128 / es);  // one 128-byte swizzle row of elements
  // One group: the group stride is never used, but TMA wants a valid one (a multiple of 16
  // bytes), whatever sbg the caller left there.
  const int64_t wstride = in->layout == GT_GROUPED_ENK ? g.sbn : g.sbk;
  const int64_t outer = in->layout == GT_GROUPED_ENK ? g.n : g.k;
  const cuuint64_t gstride = g.groups == 1 ? (cuuint64_t)((wstride * outer * es + 15) / 16 * 16)
                                           : (cuuint64_t)g.sbg * es;
  gt_status_t s;
  if (in->layout == GT_GROUPED_ENK) {
    // K innermost, then N, then the group: boxes of 128 bytes of K x BM weight rows.
    const cuuint64_t dims[3] = {(cuuint64_t)g.k, (cuuint64_t)g.n, (cuuint64_t)g.groups};
    const cuuint64_t str[2] = {(cuuint64_t)g.sbn * es, gstride};
    const cuuint32_t box[3] = {kbox, (cuuint32_t)in->tile_n, 1};
    s = encode(&k->tma_w, g.b, 3, dims, str, box, es, "the [E][N][K] weights");
  } else {
    // N innermost, then K, then the group: boxes of 64 N x 64 K (bf16 only).
    const cuuint64_t dims[3] = {(cuuint64_t)g.n, (cuuint64_t)g.k, (cuuint64_t)g.groups};
    const cuuint64_t str[2] = {(cuuint64_t)g.sbk * es, gstride};
    const cuuint32_t box[3] = {64, 64, 1};
    s = encode(&k->tma_w, g.b, 3, dims, str, box, es, "the [E][K][N] weights");
  }
  if (s != GT_OK) return s;
  const cuuint64_t dims[2] = {(cuuint64_t)g.k, (cuuint64_t)g.rows};
  const cuuint64_t str[1] = {(cuuint64_t)g.lda * es};
  const cuuint32_t box[2] = {kbox, (cuuint32_t)in->tile_rows};
  return encode(&k->tma_x, g.a, 2, dims, str, box, es, "the routed rows");
}

}  // namespace

extern "C" gt_status_t gt_grouped_supports(int idx, const gt_grouped_args_t *a) {
  if (idx < 0 || (size_t)idx >= gt_grouped_instance_count)
    return gt_err_set(GT_ERR_NOT_FOUND, "grouped instance %d: the table has %zu", idx,
                      gt_grouped_instance_count);
  const gt_grouped_instance_t *in = &gt_grouped_instances[idx];
  if (!a) return gt_err_set(GT_ERR_USAGE, "%s: no arguments", in->name);
  // No pointers at all: a shape-only question (a provider choosing or rebuilding a candidate
  // from a key, before any call's operands exist); some but not all: a malformed block.
  const bool shape_only = !a->a && !a->b && !a->d && !a->offs && !a->bias;
  if (!shape_only && (!a->a || !a->b || !a->d || !a->offs))
    return gt_err_set(GT_ERR_USAGE, "%s: a, b, d and offs are required", in->name);
  if (a->groups < 1 || a->rows < 0 || a->n < 0 || a->k < 0)
    return gt_err_set(GT_ERR_USAGE, "%s: groups >= 1 and non-negative rows, n, k", in->name);
  // The operands' type is the instance's: bf16, or e4m3 with rowwise scales (gt_grouped_args.h).
  const bool f8 = in->dtype == GT_DT_F8E4M3FN;
  if (a->operands != GT_GROUPED_OPERANDS_BF16 && a->operands != GT_GROUPED_OPERANDS_E4M3)
    return gt_err_set(GT_ERR_USAGE, "%s: operands %d is neither bf16 (0) nor e4m3 (1)", in->name,
                      (int)a->operands);
  if (f8 != (a->operands == GT_GROUPED_OPERANDS_E4M3))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s operands, the problem has %s", in->name,
                      f8 ? "e4m3" : "bf16", f8 ? "bf16" : "e4m3");
  if (f8) {
    if (a->bias)
      return gt_err_set(GT_ERR_UNSUPPORTED, "%s: no bias with fp8 operands", in->name);
    if (!shape_only && (!a->scale_a || !a->scale_b || !aligned(a->scale_a, 4) ||
                        !aligned(a->scale_b, 4)))
      return gt_err_set(GT_ERR_USAGE, "%s: e4m3 operands need 4-byte aligned scale_a and scale_b",
                        in->name);
    if (a->groups > 1 && a->sscale_b < a->n)
      return gt_err_set(GT_ERR_USAGE, "%s: sscale_b %lld < n %lld (the groups' weight scales"
                        " overlap)", in->name, (long long)a->sscale_b, (long long)a->n);
  } else if (in->dtype != GT_DT_BF16) {
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: bf16 or e4m3 only", in->name);
  }
  const int es = elem_bytes(in), align = 16 / es;  // TMA: 16-byte strides
  const int lay = gt_grouped_layout_of(a);
  if (lay != (int)in->layout)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: reads %s weights (%s), the problem has sbk %lld"
                      " sbn %lld", in->name, in->layout == GT_GROUPED_ENK ? "[E][N][K]" : "[E][K][N]",
                      in->layout == GT_GROUPED_ENK ? "sbk == 1" : "sbn == 1", (long long)a->sbk,
                      (long long)a->sbn);
  if (a->k == 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: k == 0 (no TMA box to read)", in->name);
  // TMA: 16-byte aligned bases and strides (8 bf16 or 16 e4m3 elements), 32-bit coordinates.
  const int64_t wstride = in->layout == GT_GROUPED_ENK ? a->sbn : a->sbk;
  if (!aligned(a->a, 16) || !aligned(a->b, 16))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: a or b is not 16-byte aligned (TMA)", in->name);
  if (a->lda % align || wstride % align || (a->groups > 1 && a->sbg % align) || a->lda < a->k ||
      wstride <= 0 || a->sbg < 0)
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "%s: lda %lld, weight stride %lld and sbg %lld must be multiples of %d"
                      " elements (TMA's 16-byte strides), lda >= k", in->name, (long long)a->lda,
                      (long long)wstride, (long long)a->sbg, align);
  if (a->groups > 1 && a->sbg == 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: sbg 0 (shared weights) is not a TMA tensor",
                      in->name);
  if (!fits32(a->rows + in->tile_rows) || !fits32(a->n + in->tile_n) || !fits32(a->k + 512))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: rows, n or k beyond TMA's 32-bit coordinates",
                      in->name);
  if (!aligned(a->d, 2) || (a->bias && !aligned(a->bias, 2)) || a->ldd < a->n)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: d and bias 2-byte aligned, ldd >= n", in->name);
  // The slots ride on grid x (grpd, grpp: up to 2^31 - 1) or grid y (grpv: up to 65535), the N
  // tiles on the other.
  const int64_t slots = gt_grouped_slots(idx, a);
  const int64_t ntiles = (a->n + in->tile_n - 1) / in->tile_n;
  const bool vector = in->family == GT_GROUPED_VECTOR;
  if (slots > (vector ? 65535 : INT32_MAX) || ntiles > (vector ? INT32_MAX : 65535))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %lld slots x %lld N tiles beyond the launch limits",
                      in->name, (long long)slots, (long long)ntiles);
  devinfo d;
  gt_status_t s = device_info(&d);
  if (s != GT_OK) return s;
  char why[160];
  const gt_karch_t *arch = (size_t)in->arch < gt_karch_count ? &gt_karchs[in->arch] : nullptr;
  if (!gt_karch_runs_on(arch, d.major, d.minor, why, sizeof why))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", in->name, why);
  if (in->smem + 16 * in->stages + 32 > d.smem_optin)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %d bytes of shared memory, the device allows %d",
                      in->name, in->smem, d.smem_optin);
  return GT_OK;
}

extern "C" gt_status_t gt_grouped_launch(const char *idx_or_name, const gt_grouped_args_t *a,
                                         void *workspace, size_t workspace_bytes,
                                         struct CUstream_st *stream) {
  (void)workspace;
  if (!idx_or_name) return gt_err_set(GT_ERR_USAGE, "gt_grouped_launch: no instance");
  int idx = gt_grouped_find(idx_or_name);
  if (idx < 0) {
    char *end = nullptr;
    const long v = strtol(idx_or_name, &end, 10);
    if (end == idx_or_name || *end || v < 0 || (size_t)v >= gt_grouped_instance_count)
      return gt_err_set(GT_ERR_NOT_FOUND, "%s: not a grouped instance name or index",
                        idx_or_name);
    idx = (int)v;
  }
  if (gt_grouped_fn_count != gt_grouped_instance_count)
    return gt_err_set(GT_ERR_INTERNAL, "grouped kernel table and handles differ in length");
  if (!a || !a->a || !a->b || !a->d || !a->offs)
    return gt_err_set(GT_ERR_USAGE, "%s: a, b, d and offs are required to launch",
                      gt_grouped_instances[idx].name);
  gt_status_t s = gt_grouped_supports(idx, a);
  if (s != GT_OK) return s;
  if (workspace_bytes < gt_grouped_workspace_bytes(idx, a))
    return gt_err_set(GT_ERR_USAGE, "%s: needs a %zu-byte workspace", gt_grouped_instances[idx].name,
                      gt_grouped_workspace_bytes(idx, a));
  if (a->rows == 0 || a->n == 0) return GT_OK;
  const gt_grouped_instance_t *in = &gt_grouped_instances[idx];
  gt_grouped_kargs_t k;
  memset(&k, 0, sizeof k);
  k.g = *a;
  // Splits start at multiples of BK, so only the last one ends inside a slice (at K).
  const int64_t per = (a->k + in->splitk - 1) / in->splitk;
  k.kchunk = (per + in->tile_k - 1) / in->tile_k * in->tile_k;
  k.evict_first = 1;
  unsigned grid[3];
  gt_grouped_grid(idx, a, grid);
  if (in->family != GT_GROUPED_VECTOR) {  // grpv reads with plain loads: no tensor maps
    s = encode_maps(&k, in);
    if (s != GT_OK) return s;
  }
  const void *fn = gt_grouped_fns[idx];
  // Function state, not a stream operation: legal while the stream is being captured. Set once
  // per device and instance (it is a host call of about a microsecond on every launch else).
  int dev = 0;
  GT_CUDA_CHECK(cudaGetDevice(&dev));
  const bool cacheable = dev >= 0 && dev < 64 && idx < GT_GROUPED_MAX_CACHED;
  if (!cacheable || !__atomic_load_n(&g_smem_set[cacheable ? dev : 0][cacheable ? idx : 0],
                                     __ATOMIC_ACQUIRE)) {
    GT_CUDA_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, in->smem));
    if (cacheable) __atomic_store_n(&g_smem_set[dev][idx], 1, __ATOMIC_RELEASE);
  }
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = dim3(grid[0], grid[1], grid[2]);
  cfg.blockDim = dim3((unsigned)in->threads, 1, 1);
  cfg.dynamicSmemBytes = (size_t)in->smem;
  cfg.stream = (cudaStream_t)stream;
  cudaLaunchAttribute attr[2];
  memset(attr, 0, sizeof attr);
  unsigned na = 0;
  if (in->splitk > 1) {
    attr[na].id = cudaLaunchAttributeClusterDimension;
    attr[na].val.clusterDim.x = 1;
    attr[na].val.clusterDim.y = 1;
    attr[na].val.clusterDim.z = (unsigned)in->splitk;
    na++;
  }
  const unsigned pdl_at = na;
  const bool pdl = pdl_on();
  if (pdl) {
    attr[na].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[na].val.programmaticStreamSerializationAllowed = 1;
    na++;
  }
  cfg.attrs = attr;
  cfg.numAttrs = na;
  void *args[] = {&k};
  cudaError_t e = cudaLaunchKernelExC(&cfg, fn, args);
  if (pdl && (e == cudaErrorNotSupported || e == cudaErrorInvalidValue)) {
    // A runtime that refuses the attribute: once, outside stream capture (a failed launch
    // inside capture has invalidated the capture; the caller's fall-through handles that), drop
    // it for the life of the process and launch again without it.
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(cfg.stream, &cs) == cudaSuccess && cs == cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      __atomic_store_n(&g_pdl, 0, __ATOMIC_RELAXED);
      cfg.numAttrs = pdl_at;
      e = cudaLaunchKernelExC(&cfg, fn, args);
    }
  }
  GT_CUDA_CHECK(e);
  return GT_OK;
}
