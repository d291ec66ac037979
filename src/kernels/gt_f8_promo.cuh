// Promotion of Hopper's fp8 wgmma sums, shared by the dense (gt_wgf8.cuh, gt_wgp.cuh) and
// grouped (gt_grp.cuh) fp8 consumers.
#pragma once

#include "gt_wg.cuh"

namespace gtk {

// Promotion (gt_kernel_args.h's f8_promote; the grouped e4m3 kernels always): Hopper's fp8
// wgmma sums into an accumulator of about 14 bits, so a long K of same-signed products drifts
// low (0.8-1.7% at K = 1024 on an H100, 2026-12-07). Each 128-element box of K (four k32
// instructions) is summed into a fresh partial (scale-d 0 on its first instruction) and added
// to the fp32 sum in registers once its group is complete. NP = 2 partials alternate, so one
// box's instructions run while the previous one is added; NP = 1 waits for each box. acc and its
// partials must fit in 128 registers a thread (ok): a tile whose accumulators are wider cannot
// promote (the provider's gt_kparams_f8_promotes applies the same rule).
template <int MB, int R> struct f8_promo {
  static constexpr int NP = MB * R <= 32 ? 2 : 1;
  static constexpr bool ok = MB * R * (1 + NP) <= 128;
};

// The partials zeroed once, before the first box: wgmma reads its d registers (scale-d 0
// discards their values, but they must be defined).
template <int NP, int MB, int R>
__device__ __forceinline__ void f8_promo_zero(float (&part)[NP][MB][R]) {
#pragma unroll
  for (int j = 0; j < NP; j++)
#pragma unroll
    for (int mb = 0; mb < MB; mb++)
#pragma unroll
      for (int i = 0; i < R; i++) part[j][mb][i] = 0.f;
}

// acc += part, once part's wgmma group is complete (its registers pinned after the wait).
template <int MB, int R>
__device__ __forceinline__ void f8_promo_add(float (&acc)[MB][R], float (&part)[MB][R]) {
#pragma unroll
  for (int mb = 0; mb < MB; mb++) {
    wg_fence_acc(part[mb]);
#pragma unroll
    for (int i = 0; i < R; i++) acc[mb][i] += part[mb][i];
  }
}

// One slice of NBOX boxes, promoted: box(part, j) issues box j's four k32 steps into part, the
// first with scale-d 0. The slice ends with every group complete and added: the caller may
// release the slice's stage at once.
template <int MB, int R, int NP, int NBOX, typename Box>
__device__ __forceinline__ void f8_promo_slice(float (&acc)[MB][R], float (&part)[NP][MB][R],
                                               Box &&box) {
  static_assert(NP == 1 || NP == 2, "one or two partials");
#pragma unroll
  for (int j = 0; j < NBOX; j++) {
    // The partial was last read by this thread (added to acc): its registers are pinned here,
    // so those reads stay above the fence that must separate them from wgmma's rewrite.
#pragma unroll
    for (int mb = 0; mb < MB; mb++) wg_fence_acc(part[j % NP][mb]);
    wg_fence();
    box(part[j % NP], j);
    wg_commit();
    if (NP == 1) {
      wg_wait<0>();
      f8_promo_add(acc, part[0]);
    } else if (j > 0) {
      wg_wait<1>();  // box j - 1 is complete, box j may still run
      f8_promo_add(acc, part[(j - 1) % 2]);
    }
  }
  if (NP == 2) {
    wg_wait<0>();
    f8_promo_add(acc, part[(NBOX - 1) % 2]);
  }
}

}  // namespace gtk
