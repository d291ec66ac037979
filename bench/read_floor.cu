// The read floor of a GEMM key, measured: kernels that do nothing but move the bytes the GEMM
// must move (the weights, the activations, C when beta != 0 and the bias read once, D written
// once), timed by the same harness, in the same process and with the same rotating input sets as
// the candidates they bound. No kernel that computes the GEMM can move those bytes in less time
// than the fastest design here, within the noise, unless it reads its weights faster than these
// streams do; so base / floor bounds the speedup over the baseline any own kernel can reach on the
// row (bench/kernels_bench.c --floor).
//
// Designs (every one launched as the kernels provider launches its instances, with programmatic
// stream serialization, so back-to-back launches overlap the same way, unless
// GEMMTUNE_KERNELS_PDL=0 turns it off for both; the weights, which no earlier kernel writes, are
// streamed before griddepcontrol.wait, the activations, C, the bias and D after it, which is
// more freedom than a GEMM has: the floor errs low, the bound high):
//   ldg_u<U>_g<G>: G CTAs of 512 threads per SM (the launch bounds hold the registers to what G
//     resident CTAs allow), each thread U independent 16-byte loads in flight
//     (ld.global.nc.L1::no_allocate), a CTA one contiguous span of each region.
//   bulk_<KB>k_s<S>: one CTA of one warp per SM, a ring of S stages of KB KiB, lane 0 keeping S
//     bulk copies (cp.async.bulk, the TMA engine) in flight into it, completion counted on one
//     mbarrier per stage: how the wg kernels stream their weights, without the tensor maps.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <new>

#include "read_floor.h"

#include "core/gt_dtype.h"
#include "core/gt_status.h"
#include "platform/gt_cudalib.h"
// The own kernels' mbarrier and programmatic-dependent-launch steps (gtk::mbar_*, pdl_*).
#include "kernels/gt_wg.cuh"

namespace {

// One region of bytes to read (16-byte aligned base; bytes any count).
struct region {
  const unsigned char *p;
  unsigned long long bytes;
};

struct floor_args {
  region pre;      // the weights: streamed before griddepcontrol.wait
  region post[3];  // the activations, C, the bias: after it
  unsigned char *d;
  unsigned long long d_bytes;
};

__device__ __forceinline__ int4 ld_stream(const int4 *p) {
  int4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// This CTA's span [lo, hi) of n items split over the grid in contiguous spans.
__device__ __forceinline__ void span(unsigned long long n, unsigned long long *lo,
                                     unsigned long long *hi) {
  const unsigned long long per = (n + gridDim.x - 1) / gridDim.x;
  *lo = per * blockIdx.x;
  *hi = *lo + per < n ? *lo + per : n;
  if (*lo > n) *lo = n;
}

// Read region r by 16-byte loads, U in flight per thread; the bytes past the last whole vector
// by the first thread of the last CTA. Returns the xor of what was read (so nothing is dead).
template <int U>
__device__ __forceinline__ unsigned read_ldg(region r) {
  unsigned acc = 0;
  const int4 *v = reinterpret_cast<const int4 *>(r.p);
  const unsigned long long n = r.bytes / 16;
  unsigned long long lo, hi;
  span(n, &lo, &hi);
  const unsigned long long step = (unsigned long long)blockDim.x * U;
  unsigned long long i = lo + threadIdx.x;
  // Whole steps: U loads issued back to back, no bound checks between them.
  for (; i + (unsigned long long)(U - 1) * blockDim.x < hi; i += step) {
    int4 x[U];
#pragma unroll
    for (int u = 0; u < U; u++) x[u] = ld_stream(v + i + (unsigned long long)u * blockDim.x);
#pragma unroll
    for (int u = 0; u < U; u++) acc ^= (unsigned)(x[u].x ^ x[u].y ^ x[u].z ^ x[u].w);
  }
  for (; i < hi; i += blockDim.x) {
    const int4 x = ld_stream(v + i);
    acc ^= (unsigned)(x.x ^ x.y ^ x.z ^ x.w);
  }
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
    for (unsigned long long b = n * 16; b < r.bytes; b++) acc ^= r.p[b];
  return acc;
}

// Write this CTA's span of D (16-byte stores, then the tail bytes), every value the xor of what
// the thread read, so the stores wait for the reads as a GEMM's do.
__device__ __forceinline__ void write_d(unsigned char *d, unsigned long long bytes, unsigned acc) {
  int4 *v = reinterpret_cast<int4 *>(d);
  const unsigned long long n = bytes / 16;
  unsigned long long lo, hi;
  span(n, &lo, &hi);
  const int a = (int)acc;
  for (unsigned long long i = lo + threadIdx.x; i < hi; i += blockDim.x)
    v[i] = make_int4(a, a, a, a);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
    for (unsigned long long b = n * 16; b < bytes; b++) d[b] = (unsigned char)acc;
}

template <int U, int G>
__global__ void __launch_bounds__(512, G) floor_ldg(floor_args a) {
  gtk::pdl_launch_dependents();
  unsigned acc = read_ldg<U>(a.pre);
  gtk::pdl_wait();
#pragma unroll
  for (int r = 0; r < 3; r++) acc ^= read_ldg<U>(a.post[r]);
  write_d(a.d, a.d_bytes, acc);
}

// ---- bulk copies (TMA) into a ring that nobody reads ----------------------------------------

__device__ __forceinline__ void bulk_load(uint32_t dst, const void *src, uint32_t bytes,
                                          uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

// One warp: lane 0 streams this CTA's span of region r through the S-stage ring, S copies of
// up to CH bytes in flight; the bytes past the last whole 16 go by plain loads. *slot and
// *phase carry the ring's position from one region to the next.
template <int CH, int S>
__device__ __forceinline__ unsigned read_bulk(region r, uint32_t ring, uint32_t bars, int *slot,
                                              uint32_t *phase) {
  unsigned acc = 0;
  const unsigned long long n16 = r.bytes / 16;
  unsigned long long lo, hi;
  span(n16, &lo, &hi);
  if (threadIdx.x == 0) {
    int issued = 0;
    for (unsigned long long b = lo * 16; b < hi * 16; b += CH) {
      const uint32_t len = (uint32_t)(hi * 16 - b < (unsigned long long)CH ? hi * 16 - b : CH);
      const uint32_t bar = bars + 8u * (uint32_t)*slot;
      if (issued >= S) gtk::mbar_wait(bar, *phase >> *slot & 1u), *phase ^= 1u << *slot;
      gtk::mbar_expect_tx(bar, len);
      bulk_load(ring + (uint32_t)*slot * CH, r.p + b, len, bar);
      issued++;
      *slot = *slot + 1 == S ? 0 : *slot + 1;
    }
    // Drain: wait for the copies still in flight (the oldest first).
    const int left = issued < S ? issued : S;
    for (int i = 0; i < left; i++) {
      const int s = (*slot - left + i + S) % S;
      gtk::mbar_wait(bars + 8u * (uint32_t)s, *phase >> s & 1u);
      *phase ^= 1u << s;
    }
  }
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0)
    for (unsigned long long b = n16 * 16; b < r.bytes; b++) acc ^= r.p[b];
  return acc;
}

template <int CH, int S>
__global__ void __launch_bounds__(32) floor_bulk(floor_args a) {
  extern __shared__ __align__(128) unsigned char ring_mem[];
  __shared__ __align__(8) unsigned long long bar_mem[S];
  const uint32_t ring = (uint32_t)__cvta_generic_to_shared(ring_mem);
  const uint32_t bars = (uint32_t)__cvta_generic_to_shared(bar_mem);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; s++) gtk::mbar_init(bars + 8u * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncwarp();
  gtk::pdl_launch_dependents();
  int slot = 0;
  uint32_t phase = 0;
  unsigned acc = read_bulk<CH, S>(a.pre, ring, bars, &slot, &phase);
  gtk::pdl_wait();
#pragma unroll
  for (int r = 0; r < 3; r++) acc ^= read_bulk<CH, S>(a.post[r], ring, bars, &slot, &phase);
  // Lane 0 has waited for every copy: D is stored after the last byte arrived, as a GEMM's is.
  __syncwarp();
  write_d(a.d, a.d_bytes, acc);
}

// ---- the provider ----------------------------------------------------------------------------

typedef void (*kernel_fn)(floor_args);
struct variant {
  const char *name;
  kernel_fn fn;
  int threads, per_sm;
  size_t smem;
};

const variant k_variants[] = {
    {"readfloor_ldg_u8_g2", floor_ldg<8, 2>, 512, 2, 0},
    {"readfloor_ldg_u4_g4", floor_ldg<4, 4>, 512, 4, 0},
    {"readfloor_bulk_16k_s8", floor_bulk<16384, 8>, 32, 1, 8 * 16384},
    {"readfloor_bulk_32k_s6", floor_bulk<32768, 6>, 32, 1, 6 * 32768},
    {"readfloor_bulk_8k_s8_g2", floor_bulk<8192, 8>, 32, 2, 8 * 8192},
};
const int k_nvariants = (int)(sizeof k_variants / sizeof k_variants[0]);

struct state {
  int v;
  int sms;
  bool pdl;
  gt_read_floor_bytes_t bytes;
};

int find(const char *name) {
  for (int i = 0; i < k_nvariants; i++)
    if (strcmp(name, k_variants[i].name) == 0) return i;
  return -1;
}

gt_status_t rf_enumerate(const gt_problem_t *, const gt_enum_opts_t *, gt_cand_list_t *) {
  return GT_OK;  // never raced: kernels_bench loads the designs by name
}

gt_status_t rf_from_name(const char *name, const gt_problem_t *, gt_candidate_t *out) {
  const int v = find(name);
  if (v < 0) return gt_err_set(GT_ERR_NOT_FOUND, "read floor: no design %s", name);
  memset(out, 0, sizeof *out);
  out->provider = &gt_read_floor_provider;
  snprintf(out->name, sizeof out->name, "%s", name);
  memcpy(out->blob, &v, sizeof v);
  return GT_OK;
}

gt_status_t rf_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **st, size_t *ws) {
  *ws = 0;
  *st = nullptr;
  int v;
  memcpy(&v, c->blob, sizeof v);
  if (v < 0 || v >= k_nvariants) return gt_err_set(GT_ERR_USAGE, "read floor: bad candidate");
  int dev = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess && k_variants[v].smem > 48 * 1024)
    e = cudaFuncSetAttribute(k_variants[v].fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)k_variants[v].smem);
  if (e != cudaSuccess)
    return gt_err_set(GT_ERR_DEVICE, "read floor %s: %s", c->name, cudaGetErrorString(e));
  state *s = new (std::nothrow) state;
  if (!s) return gt_err_set(GT_ERR_NOMEM, "read floor: no host memory");
  s->v = v;
  s->sms = sms;
  const char *pdl = getenv("GEMMTUNE_KERNELS_PDL");
  s->pdl = !(pdl && strcmp(pdl, "0") == 0);
  s->bytes = gt_read_floor_bytes(p);
  *st = s;
  return GT_OK;
}

gt_status_t rf_run(void *st, const gt_operands_t *o, void *stream) {
  const state *s = static_cast<const state *>(st);
  const variant &v = k_variants[s->v];
  floor_args a;
  memset(&a, 0, sizeof a);
  const gt_read_floor_bytes_t &b = s->bytes;
  a.pre = {static_cast<const unsigned char *>(o->A), b.a};
  a.post[0] = {static_cast<const unsigned char *>(o->B), b.b};
  // C when beta != 0 (b.c is 0 otherwise), also when it is the output buffer (the harness
  // runs such keys in place); the bias when the key has one.
  a.post[1] = {static_cast<const unsigned char *>(o->C), o->C ? b.c : 0ull};
  a.post[2] = {static_cast<const unsigned char *>(o->bias), o->bias ? b.bias : 0ull};
  a.d = static_cast<unsigned char *>(o->D);
  a.d_bytes = b.d;
  cudaLaunchConfig_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDim = dim3((unsigned)(s->sms * v.per_sm));
  cfg.blockDim = dim3((unsigned)v.threads);
  cfg.dynamicSmemBytes = v.smem;
  cfg.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = s->pdl ? 1 : 0;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, v.fn, a);
  if (e != cudaSuccess)
    return gt_err_set(GT_ERR_DEVICE, "read floor %s: %s", v.name, cudaGetErrorString(e));
  return GT_OK;
}

void rf_release(void *st) { delete static_cast<state *>(st); }

}  // namespace

extern "C" {

gt_read_floor_bytes_t gt_read_floor_bytes(const gt_problem_t *p) {
  gt_read_floor_bytes_t b;
  memset(&b, 0, sizeof b);
  b.a = gt_problem_operand_elems(p, 'A') * gt_dtype_size(p->a_type);
  b.b = gt_problem_operand_elems(p, 'B') * gt_dtype_size(p->b_type);
  b.d = gt_problem_operand_elems(p, 'C') * gt_dtype_size(p->d_type);
  if (!p->beta_zero) b.c = gt_problem_operand_elems(p, 'C') * gt_dtype_size(p->c_type);
  if (p->epilogue == GT_EPI_BIAS || p->epilogue == GT_EPI_BIAS_RELU ||
      p->epilogue == GT_EPI_BIAS_GELU)
    b.bias = (size_t)p->m * gt_dtype_size(gt_cudalib_bias_type(p));
  return b;
}

int gt_read_floor_count(void) { return k_nvariants; }

const char *gt_read_floor_name(int i) {
  return i >= 0 && i < k_nvariants ? k_variants[i].name : nullptr;
}

const gt_provider_t gt_read_floor_provider = {
    GT_PROVIDER_API_VERSION,
    "readfloor",
    "kernels that only move a GEMM key's bytes (kernels_bench --floor; never raced)",
    GT_BACKEND_CUDA,
    nullptr,  // init
    nullptr,  // baseline_for
    nullptr,  // lib_version
    rf_enumerate,
    rf_from_name,
    rf_prepare,
    rf_run,
    rf_release,
};

}  // extern "C"
