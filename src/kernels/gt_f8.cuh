// What the fp8 families (wgf8: gt_wgf8.cuh, dtf8: gt_dtf8.cuh) share: the operand type tags, D
// as fp32, D's storage type, the scale read, the final store of an element, and the mma.sync
// m16n8k32 statement on fp8 operands (dtf8's instruction; wgf8's wgmma wrappers are generated).
#pragma once

#include <stdint.h>

#include "gt_kcommon.cuh"

namespace gtk {

// Operand type tags (the PTX type is in the specializations of the mma statements).
struct e4m3 {};
struct e5m2 {};

// D as fp32 (the 16-bit D types are gtk::bf16 and gtk::f16).
struct f32 {
  static __device__ __forceinline__ float to_f(float v) { return v; }
  static __device__ __forceinline__ float from_f(float f) { return f; }
};
// D's storage type: 16-bit patterns for bf16 / f16, float for f32.
template <typename T> struct f8_store { using S = uint16_t; };
template <> struct f8_store<f32> { using S = float; };

// One fp32 scale: 1 (mode 0), the tensorwise scalar p[0] (mode 1) or p[i] (mode 2, outer vector).
__device__ __forceinline__ float f8_scale(const float *p, int mode, int64_t i) {
  return mode == 0 ? 1.f : __ldg(p + (mode == 2 ? i : 0));
}

// The final value of output element (row, col) from its fp32 sum over K: D = alpha * sa * sb *
// acc (+ beta * C) (+ the twin's epilogue, epilogue_apply with the bias read as D's storage
// type, float for an fp32 D), stored as D's type. Once per element, after any split is summed.
template <typename T, bool EPI>
__device__ __forceinline__ void f8_store_out(const gt_kargs_t &a, int64_t row, int64_t col,
                                             float acc) {
  using S = typename f8_store<T>::S;
  const int64_t off = row + col * a.ldc;
  const float sc = a.alpha * f8_scale(a.scale_a, a.scale_mode_a, row) *
                   f8_scale(a.scale_b, a.scale_mode_b, col);
  float v = sc * acc;
  if (a.beta_nonzero) v += a.beta * T::to_f(static_cast<const S *>(a.C)[off]);
  if constexpr (EPI) v = epilogue_apply<T, S>(a, row, v);
  static_cast<S *>(a.D)[off] = T::from_f(v);
}

// mma.sync.m16n8k32 with fp8 A (row-major 16 x 32) and B (column-major 32 x 8), fp32
// accumulators. Its fragments are those of m16n8k16 on 16-bit types counted in bytes: register
// a0 holds row g, k 4q..4q+3 (a 16-bit a0 holds k 2q, 2q+1: the same 4 bytes), a1 row g + 8, a2
// and a3 the same rows at k + 16; b0 k 4q..4q+3 of column g, b1 k + 16 (g = lane / 4, q = lane %
// 4). A is the weights (TA), B the tokens (TB).
template <typename TA, typename TB> struct mma_f8;

#define GT_MMA_F8(TA, TB, PA, PB)                                                              \
  template <> struct mma_f8<TA, TB> {                                                          \
    static __device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1,        \
                                               uint32_t a2, uint32_t a3, uint32_t b0,          \
                                               uint32_t b1) {                                  \
      asm("mma.sync.aligned.m16n8k32.row.col.f32." PA "." PB ".f32 {%0,%1,%2,%3}, "            \
          "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                                             \
          : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                     \
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));                             \
    }                                                                                          \
  };
GT_MMA_F8(e4m3, e4m3, "e4m3", "e4m3")
GT_MMA_F8(e4m3, e5m2, "e4m3", "e5m2")
GT_MMA_F8(e5m2, e4m3, "e5m2", "e4m3")
GT_MMA_F8(e5m2, e5m2, "e5m2", "e5m2")
#undef GT_MMA_F8

}  // namespace gtk
