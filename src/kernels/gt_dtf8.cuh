// Tensor-core decode/skinny family on fp8 operands (dtf8): decodetc's pipeline (gt_decodetc.cuh:
// no shared memory on the operand path, each lane streams 16 bytes of two weight rows and of one
// token per load straight into mma.sync registers, warps split K inside the CTA) with 1-byte
// elements, mma.sync m16n8k32 on e4m3 / e5m2, and the fp8 scales applied in the fp32 store.
//
// Why it exists next to wgf8: wgf8 (TMA + wgmma) owns whole 64..256-row tiles, so a weight of a
// few thousand rows is a few dozen tiles on 132 SMs, and a K split per cluster pays a
// distributed-shared-memory reduction per tile. decodetc's CTA owns 16..64 rows and the K split
// is inside the CTA, so the grid is hundreds of small CTAs, resident several per SM: the weight
// is streamed with no tail wave at the 1..16-token counts where a GEMM is a read of its weights.
// With 1-byte elements a 16-byte load is 16 K values and one m16n8k32 covers what one m16n8k16
// covers in bytes (gt_f8.cuh), so the instruction count per weight byte is bf16's.
//
// No split-K across CTAs (ks1 only): the split-K reduce kernel knows no scales, and the K split
// inside the CTA already covers what decode needs. Every element's scale (tensorwise or outer
// vector, gt_kernel_args.h) is read when the kernel runs, after the dependent-launch wait.
#pragma once

#include "gt_decodetc.cuh"
#include "gt_f8.cuh"

namespace gtk {

// The last, partial vector of a K range of 1-byte elements: byte loads of the `valid` leading
// elements, zeros after them (zero is +0 in both fp8 formats).
__device__ __forceinline__ vec<8> ld_tail_u8(const uint8_t *p, int64_t valid) {
  vec<8> r;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    uint32_t w = 0;
#pragma unroll
    for (int b = 0; b < 4; b++)
      w |= (4 * i + b < valid ? (uint32_t)p[4 * i + b] : 0u) << (8 * b);
    r.w[i] = w;
  }
  return r;
}

// decodetc_core's operands for fp8 A (weights, TA) and B (tokens, TB) with a D of type TD (bf16,
// f16 or f32; C and the bias have D's type).
template <typename TA, typename TB, typename TD> struct dtc8 {
  using E = uint8_t;
  static constexpr int VE = 16;
  static constexpr bool PROMO = true;  // where the key asks (f8_promote)
  static __device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                             uint32_t a3, uint32_t b0, uint32_t b1) {
    mma_f8<TA, TB>::mma(c, a0, a1, a2, a3, b0, b1);
  }
  static __device__ __forceinline__ vec<8> tail(const E *p, int64_t valid) {
    return ld_tail_u8(p, valid);
  }
  // No split across CTAs: the CTA's sum is the element's whole K.
  template <bool EPI>
  static __device__ __forceinline__ void store(const gt_kargs_t &a, int64_t row, int64_t col,
                                               float acc) {
    f8_store_out<TD, EPI>(a, row, col, acc);
  }
};

// TA, TB: operand types (e4m3, e5m2); TD: D's type; the rest as decodetc_body's.
template <typename TA, typename TB, typename TD, int NT, int MR, int WM, int WK, int KU, int S,
          int PF, bool EPI = false>
__device__ __forceinline__ void dtf8_body(const gt_kargs_t &a) {
  decodetc_core<dtc8<TA, TB, TD>, NT, MR, WM, WK, KU, S, PF, EPI>(a);
}

}  // namespace gtk
