// The tile slots of the grouped GEMM kernels (gt_grp.cuh, gt_grpv.cuh): a slot is one tile of
// BN routed rows of one non-empty group. The host sizes the grid by an upper bound of the slots
// (gt_grouped_grid); each CTA finds its slot's group and rows from offs on the device.
#pragma once

#include <stdint.h>

#include "gt_grouped_args.h"

namespace gtk {

// The group and row range of tile slot `slot` (rows of BN), or group -1 when the slot is past
// the last tile. Run by one whole warp; every lane returns the same result. Group g's rows are
// [clamp(offs[g-1]), clamp(offs[g])), clamped to [0, rows): a routing that overruns the
// allocation is cut at it, never written past it.
struct grp_slot {
  int group;
  int64_t r0, rend;  // first row of the tile, end of the group's rows
};
template <int BN>
__device__ __forceinline__ grp_slot grp_find_slot(const gt_grouped_args_t &g, int64_t slot) {
  constexpr int U = 8;  // groups per lane per round
  const int lane = threadIdx.x & 31;
  const int64_t rows = g.rows;
  auto clampr = [rows](int64_t v) { return v < 0 ? 0 : (v > rows ? rows : v); };
  grp_slot out = {-1, 0, 0};
  int64_t left = slot;  // tiles still to skip
  for (int base = 0; base < g.groups; base += 32 * U) {
    const int first = base + lane * U;
    int64_t end[U], beg0;
#pragma unroll
    for (int j = 0; j < U; j++)
      end[j] = first + j < g.groups ? clampr(g.offs[first + j]) : -1;
    beg0 = first == 0 ? 0 : (first - 1 < g.groups ? clampr(g.offs[first - 1]) : 0);
    int64_t tiles[U], mine = 0;
#pragma unroll
    for (int j = 0; j < U; j++) {
      const int64_t beg = j == 0 ? beg0 : end[j - 1];
      const int64_t cnt = end[j] > beg ? end[j] - beg : 0;
      tiles[j] = (cnt + BN - 1) / BN;
      mine += tiles[j];
    }
    // Exclusive scan of the lanes' tile counts.
    int64_t incl = mine;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int64_t v = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += v;
    }
    const int64_t excl = incl - mine;
    const int64_t total = __shfl_sync(0xffffffffu, incl, 31);
    const bool here = left >= excl && left < incl;
    const unsigned who = __ballot_sync(0xffffffffu, here);
    if (who) {
      const int src = __ffs(who) - 1;
      int grp = -1;
      int64_t r0 = 0, rend = 0;
      if (here) {
        int64_t t = left - excl;
#pragma unroll
        for (int j = 0; j < U; j++) {
          if (grp < 0 && t < tiles[j]) {
            const int64_t beg = j == 0 ? beg0 : end[j - 1];
            grp = first + j;
            r0 = beg + t * BN;
            rend = end[j];
          } else if (grp < 0) {
            t -= tiles[j];
          }
        }
      }
      out.group = __shfl_sync(0xffffffffu, grp, src);
      out.r0 = __shfl_sync(0xffffffffu, r0, src);
      out.rend = __shfl_sync(0xffffffffu, rend, src);
      return out;
    }
    left -= total;
  }
  return out;
}

// The slot of this CTA: warp 0 finds it (grp_find_slot) and shares it through shared memory with
// the whole CTA, which every thread must reach (a __syncthreads inside). Group -1: past the last
// tile, and the whole CTA may leave together.
template <int BN>
__device__ __forceinline__ grp_slot grp_cta_slot(const gt_grouped_args_t &g, int64_t slot) {
  __shared__ grp_slot s_slot;
  if ((threadIdx.x >> 5) == 0) {
    const grp_slot sl = grp_find_slot<BN>(g, slot);
    if ((threadIdx.x & 31) == 0) s_slot = sl;
  }
  __syncthreads();
  return s_slot;
}

}  // namespace gtk
