// Grouped GEMM on CUDA cores for decode (family grpv): torch._grouped_mm's 2-D x 3-D problem
// (gt_grouped_args.h) with [E][N][K] weights (sbk == 1, K contiguous), one launch per call, the
// routing (offs) read on the device.
//
// Grid: x = runs of C chunks of RW weight rows (output columns), y = tile slots (NT routed rows
// of one non-empty group, gt_grp_slot.cuh; the host bounds the slots as for grpd). A CTA of WK
// warps finds its slot once, then computes its chunks in turn, each RW columns for the slot's
// rows over the whole K with gt_decode.cuh's dot product (decode_dot): every lane streams
// 16-byte vectors of the RW weight rows (read once, L1 bypassed) and reuses each activation
// vector across them from registers. A CTA carries C x RW x K x 2 bytes of weights (tens to
// hundreds of KB), so a call is thousands of CTAs and the last wave is a sliver of it: the tile
// granularity that caps the TMA families (grpd) on 1-2 tokens a group does not arise. What it
// pays instead is a fixed cost per CTA (its launch, the slot lookup: one round of offs loads,
// the first loads' latency), which C chunks share, and CUDA-core arithmetic, which is why NT is
// at most 8.
//
// Slots past the last tile exit before loading anything; a replay of a captured graph follows
// that replay's offs.
#pragma once

#include "gt_decode.cuh"
#include "gt_grouped_kargs.h"
#include "gt_grp_slot.cuh"

namespace gtk {

// T: element type; NT routed rows a slot; RW weight rows a chunk; WK warps splitting K; KU
// vectors of 32 x 8 elements per warp batch; C chunks a CTA.
template <typename T, int NT, int RW, int WK, int KU, int C>
__device__ __forceinline__ void grpv_body(const gt_grouped_kargs_t &p) {
  constexpr int V = 8;
  extern __shared__ float grpv_red[];  // [WK][NT][RW]
  const gt_grouped_args_t &g = p.g;
  const int lane = threadIdx.x & 31;

  // offs, the routed rows and the weights may be written by the kernels before this one.
  pdl_wait();
  pdl_launch_dependents();
  const grp_slot sl = grp_cta_slot<NT>(g, blockIdx.y);
  if (sl.group < 0) return;  // the whole CTA: no barrier is left waiting
  const int grp = sl.group;
  const int64_t n = g.n, ntiles = (n + RW - 1) / RW;
  const uint16_t *W = static_cast<const uint16_t *>(g.b) + (int64_t)grp * g.sbg;
  const uint16_t *X = static_cast<const uint16_t *>(g.a);
  uint16_t *D = static_cast<uint16_t *>(g.d);
  const uint16_t *bias = static_cast<const uint16_t *>(g.bias);

  // Rows past the group's end are clamped to its last row: their loads stay inside the group's
  // rows, and their sums are never stored.
  const uint16_t *xp[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) {
    const int64_t row = sl.r0 + t < sl.rend ? sl.r0 + t : sl.rend - 1;
    xp[t] = X + row * g.lda + lane * V;
  }
  for (int c = 0; c < C; c++) {
    const int64_t tile = (int64_t)blockIdx.x * C + c;
    if (tile >= ntiles) break;  // uniform across the CTA
    const int64_t n0 = tile * RW;
    // Columns past N are clamped to the last one, like the rows.
    const uint16_t *wp[RW];
#pragma unroll
    for (int r = 0; r < RW; r++) {
      const int64_t col = n0 + r < n ? n0 + r : n - 1;
      wp[r] = W + col * g.sbn + lane * V;
    }
    decode_dot<T, NT, RW, WK, KU, V>(wp, xp, 0, g.k, grpv_red, [&](int r, int t, float s) {
      const int64_t col = n0 + r, row = sl.r0 + t;
      if (col < n && row < sl.rend) {
        if (bias) s += T::to_f(bias[(int64_t)grp * g.sbias + col]);
        D[row * g.ldd + col] = T::from_f(s);
      }
    });
    // The next chunk's partials reuse grpv_red: every thread has read this chunk's first.
    if (C > 1) __syncthreads();
  }
}

}  // namespace gtk
