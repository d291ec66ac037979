// wgmma.mma_async wrappers for the wg family: D(64 x N, f32, registers) += A(64 x 16, shared
// memory) * B(16 x N, shared memory), each operand described by a 64-bit shared-memory
// descriptor (see gt_wg.cuh); TA / TB are wgmma's transpose immediates: 0 for a K-major operand,
// 1 for an M-major A or N-major B (16-bit types only). An inline-asm operand list has a fixed
// length, so there is one statement per N (GT_WGMMA_N<N>, taking the PTX element type) and one
// specialization per (element type, N); gen_instances.py writes them into
// generated/wgmma_ss.cuh for every N the wg instances of space.json use. Register i of d holds row 16*warp + lane/4 + 8*((i/2)%2),
// column 8*(i/4) + 2*(lane%4) + i%2 of the warpgroup's 64 x N tile.
#pragma once

#include "gt_kcommon.cuh"

namespace gtk {

template <typename T, int N> struct wgmma_ss;

#define GT_WGMMA_SS(T, TY, N)                                                          \
  template <> struct wgmma_ss<T, N> {                                                  \
    template <int TA, int TB>                                                          \
    static __device__ __forceinline__ void mma(float(&d)[N / 2], uint64_t da,          \
                                               uint64_t db) {                          \
      GT_WGMMA_N##N(TY);                                                               \
    }                                                                                  \
  };

#include "kernels/generated/wgmma_ss.cuh"

#undef GT_WGMMA_SS

}  // namespace gtk
