// Device helpers shared by the own kernel families: element-type traits, the PTX wrappers for
// streaming loads, cp.async, ldmatrix and mma.sync, the epilogue of the epilogue twins, and the
// common output store (direct with alpha/beta, or an fp32 split-K partial).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "core/gt_dtype.h"
#include "gt_kernel_args.h"

namespace gtk {

// Element-type tags. Kernels move raw 16-bit patterns; only these traits know the format.
struct bf16 {
  static __device__ __forceinline__ float2 to_f2(uint32_t v) {
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
  }
  static __device__ __forceinline__ float to_f(uint16_t v) {
    return __uint_as_float((uint32_t)v << 16);
  }
  static __device__ __forceinline__ uint16_t from_f(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
  static __device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                             uint32_t a3, uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};

struct f16 {
  static __device__ __forceinline__ float2 to_f2(uint32_t v) {
    __half2 h = *reinterpret_cast<__half2 *>(&v);
    return __half22float2(h);
  }
  static __device__ __forceinline__ float to_f(uint16_t v) {
    return __half2float(__ushort_as_half(v));
  }
  static __device__ __forceinline__ uint16_t from_f(float f) {
    return __half_as_ushort(__float2half_rn(f));
  }
  static __device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                             uint32_t a3, uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};

// V 16-bit elements held as V/2 32-bit words (V = 2, 4, 8).
template <int V> struct vec {
  static_assert(V == 2 || V == 4 || V == 8, "vector of 2, 4 or 8 elements");
  uint32_t w[V / 2];
};

// Weights are read exactly once: skip L1, and ask L2 for 256-byte sectors so the next chunks of
// the same row are already on their way (more bytes in flight per request).
template <int V> __device__ __forceinline__ vec<V> ld_stream(const uint16_t *p) {
  vec<V> r;
  if constexpr (V == 8) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3])
        : "l"(p));
  } else if constexpr (V == 4) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0,%1}, [%2];"
        : "=r"(r.w[0]), "=r"(r.w[1])
        : "l"(p));
  } else {
    asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];" : "=r"(r.w[0]) : "l"(p));
  }
  return r;
}

// Activations are re-read by every CTA that shares their K range: keep them in L1.
template <int V> __device__ __forceinline__ vec<V> ld_keep(const uint16_t *p) {
  vec<V> r;
  if constexpr (V == 8) {
    uint4 u = __ldg(reinterpret_cast<const uint4 *>(p));
    r.w[0] = u.x, r.w[1] = u.y, r.w[2] = u.z, r.w[3] = u.w;
  } else if constexpr (V == 4) {
    uint2 u = __ldg(reinterpret_cast<const uint2 *>(p));
    r.w[0] = u.x, r.w[1] = u.y;
  } else {
    r.w[0] = __ldg(reinterpret_cast<const unsigned int *>(p));
  }
  return r;
}

// The last, partial vector of a K range: element-wise loads of the `valid` leading elements
// (valid may be <= 0 or >= V), zeros after them. Zeros on both operands keep 0 * garbage out.
template <int V> __device__ __forceinline__ vec<V> ld_tail(const uint16_t *p, int64_t valid) {
  vec<V> r;
#pragma unroll
  for (int i = 0; i < V / 2; i++) {
    uint32_t lo = (2 * i < valid) ? (uint32_t)p[2 * i] : 0u;
    uint32_t hi = (2 * i + 1 < valid) ? (uint32_t)p[2 * i + 1] : 0u;
    r.w[i] = lo | (hi << 16);
  }
  return r;
}

// Programmatic dependent launch (sm_90). The provider launches every main kernel with
// programmatic stream serialization, so the next kernel in the stream may start while this one
// drains. pdl_wait() blocks until every grid this one depends on has completed and its memory is
// visible: nothing before it may read an operand into registers or write any output. Without the
// launch attribute both are no-ops.
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
// Lets the next kernel in the stream launch now. Safe at any point: the dependent's pdl_wait()
// still waits for this grid's completion. Called after pdl_wait(), so at most one grid ahead runs
// its prologue at a time.
__device__ __forceinline__ void pdl_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// Bulk prefetch of [p, p + bytes) into L2 (p 16-byte aligned, bytes a multiple of 16). It reads
// nothing into the SM, so it may run before pdl_wait(): L2 is the device's point of coherence,
// and a line the previous kernel writes afterwards is updated there, never read stale.
__device__ __forceinline__ void prefetch_l2(const void *p, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
}

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// 16-byte async copy global -> shared; bytes < 16 zero-fills the rest (bytes == 0 reads nothing).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// The epilogue of an epilogue twin on v = alpha * acc + beta * C of output row `row`, in fp32, as
// cuBLASLt defines it: the bias (a.bias, one element of D's type per row of D, broadcast along the
// columns) first, then the activation. The kind is read at run time (a.epilogue), so one twin
// serves every epilogue; GT_EPI_NONE returns v.
//
// GELU is the tanh approximation (gt_reference_gelu), computed in its equivalent logistic form:
// 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715 v^3), with the fast
// exponential (relative error about 1e-6 where the result matters, far below bf16/f16 rounding;
// exp overflowing to inf gives the limit, -0).
//
// Branch-free on purpose: every activation is computed and one is selected, and the bias load is
// predicated. A branch per kind made ptxas give the twins of several bodies up to 52 more
// registers than their plain instances (decodetc s3, tc), fewer CTAs per SM for an epilogue that
// costs a few instructions per output element.
//
// S: the bias's storage type, D's: the 16-bit pattern of bf16/f16, float for the fp8 families'
// fp32 D (gt_f8.cuh).
static_assert(GT_EPI_BIAS == 1 && GT_EPI_RELU == 2 && GT_EPI_BIAS_RELU == 3 && GT_EPI_GELU == 4 &&
                  GT_EPI_BIAS_GELU == 5,
              "epilogue_apply reads the kind as bit 0 = bias, e >> 1 = activation");
// The same with the activation given (act = a.epilogue >> 1): a caller that passes a constant
// 0 (a store step that has tested the key's activation once) leaves out the ReLU and GELU that
// are otherwise computed for every element before one is selected.
template <typename T, typename S = uint16_t>
__device__ __forceinline__ float epilogue_apply_act(const gt_kargs_t &a, int64_t row, float v,
                                                    int act) {
  const int e = a.epilogue;
  const float bias = (e & 1) ? T::to_f(static_cast<const S *>(a.bias)[row]) : 0.f;
  v = (e & 1) ? v + bias : v;  // selected, not + 0: GT_EPI_NONE keeps v bit for bit (-0 too)
  const float relu = v > 0.f ? v : 0.f;  // NaN -> 0, as the reference's v > 0 ? v : 0
  const float u = 0.7978845608028654f * (v + 0.044715f * v * v * v);  // sqrt(2/pi) (v + ...)
  const float gelu = __fdividef(v, 1.f + __expf(-2.f * u));
  return act == 1 ? relu : act == 2 ? gelu : v;  // 0 none, 1 relu, 2 gelu
}
template <typename T, typename S = uint16_t>
__device__ __forceinline__ float epilogue_apply(const gt_kargs_t &a, int64_t row, float v) {
  return epilogue_apply_act<T, S>(a, row, v, a.epilogue >> 1);
}
// Runs f(act) with the key's activation, a constant 0 for a key without one (the bias alone, the
// common case): a store loop that reaches epilogue_apply_act through f is compiled twice, and
// its bias-only copy leaves out the ReLU and GELU.
template <typename F>
__device__ __forceinline__ void epilogue_by_act(const gt_kargs_t &a, F &&f) {
  const int act = a.epilogue >> 1;
  if (act == 0)
    f(0);
  else
    f(act);
}

// Final value of output element (row, col): D = alpha * acc + beta * C, or the fp32 partial of
// split blockIdx.z when the K range is split across CTAs (the reduce kernel applies alpha/beta and
// the epilogue). EPI (epilogue twins) applies the epilogue to the final value; without it the
// code is exactly the plain instances' (their machine code must not change).
template <typename T, bool EPI = false>
__device__ __forceinline__ void store_out(const gt_kargs_t &a, int64_t row, int64_t col, float acc) {
  if (a.splits > 1) {
    a.ws[((int64_t)blockIdx.z * a.n + col) * a.m + row] = acc;
    return;
  }
  const int64_t off = row + col * a.ldc;
  float v = a.alpha * acc;
  if (a.beta_nonzero) v += a.beta * T::to_f(static_cast<const uint16_t *>(a.C)[off]);
  if constexpr (EPI) v = epilogue_apply<T>(a, row, v);
  static_cast<uint16_t *>(a.D)[off] = T::from_f(v);
}

// K range [kbeg, kend) of split blockIdx.z; empty (kbeg >= kend) for splits past the end.
struct krange {
  int64_t beg, end;
};
__device__ __forceinline__ krange split_range(const gt_kargs_t &a) {
  krange r;
  r.beg = (int64_t)blockIdx.z * a.kchunk;
  r.end = r.beg + a.kchunk < a.k ? r.beg + a.kchunk : a.k;
  if (r.end < r.beg) r.end = r.beg;
  return r;
}

}  // namespace gtk
