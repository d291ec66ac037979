// Persistent CTAs for the wg and wgf8 families (gt_wg.cuh has the pipeline; name token g1, KS
// = 1 and no multicast only). The grid holds as many CTAs as are resident at once (the provider
// sizes it from the occupancy calculator), and CTA i takes the weight tiles i, i + gridDim.x, ...
// in turn. The
// producer's ring runs on across tile boundaries: while the consumers finish one tile and store
// it, the next tile's first slices are already on their way.
//
// Why: a grid of one tile per CTA pays, for every CTA, its launch and the latency of its first
// slices with nothing of its own in flight on that SM. With one CTA per SM (rings of 144-200 KB)
// and K = 4096 a CTA streams its rows in about 20-40 us, so that gap recurs every few tens of
// microseconds; the same tile streams the 70B weights (K = 8192) measurably faster than the 8B
// ones (H100, 16 tokens: t64x16x256_s4 at 3.08 TB/s on 70B gate_up, 2.89 on 8B gate_up).
//
// Without a split there is nothing to reduce: each consumer thread writes its accumulators to D
// straight from registers (wg_store_regs, as wg_body's unsplit tiles), so the ring is never
// borrowed for a partial tile and the next tile's loads are not held up by the store.
// Kept out of gt_wg.cuh so that the one-tile instances' sources stay as they are.
#pragma once

#include "gt_f8_promo.cuh"
#include "gt_wg.cuh"

namespace gtk {

// One tile's nk slices on wgp_loop's promoted path (PROMO, f8_promote), from slice counter g
// on: each 128-K box summed into a fresh partial by mma (its fifth argument the scale-d, 0 on
// a box's first step), and each stage given back as soon as its slice is summed.
template <int NBOX, int S, uint32_t A_BOX, uint32_t B_BOX, uint32_t A_BYTES, uint32_t STAGE,
          int MB, int R, int NP, typename Mma, typename Wait>
__device__ __forceinline__ void wgp_promo_tile(float (&acc)[MB][R], float (&part)[NP][MB][R],
                                               int nk, int &g, uint32_t base, uint32_t full0,
                                               uint32_t empty0, int wgi, Mma &mma, Wait &wait) {
  for (int it = 0; it < nk; it++, g++) {
    const int s = g % S;
    wait(full0 + 8 * s, (g / S) & 1);
    const uint32_t sa = base + s * STAGE, sb = sa + A_BYTES;
    f8_promo_slice<MB, R, NP, NBOX>(acc, part, [&](float (&q)[MB][R], int j) {
#pragma unroll
      for (int kk = 0; kk < 4; kk++)
        mma(q, sa + j * A_BOX + kk * 32, sb + j * B_BOX + kk * 32, wgi, kk != 0);
    });
    mbar_arrive(empty0 + 8 * s);
  }
}

// The persistent pipeline, shared by wg (16-bit operands, wgp_body below) and wgf8 (fp8,
// gt_wgf8.cuh's wgf8p_body): KS = 1 and CM = 1, looping over weight tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... with one ring and one slice counter g for the whole loop (stage
// g % S, phase (g / S) & 1), so the producer never waits for a tile's epilogue.
//
// ESZ is the element size in bytes (2 or 1). A 128-byte swizzle box is 128 / ESZ elements of K
// and one wgmma step reads 32 bytes of K either way (k16 of 16-bit elements, k32 of fp8), so
// boxes, stages and the walk through a slice are the same in bytes; only the instruction, the
// barrier wait and the store differ, and the caller passes them:
//   mma(acc, ka, kb, wgi): the warpgroup's wgmma's for one 32-byte K step, ka the A (weight)
//     box and kb the B (token) box at that step;
//   wait(bar, parity): a barrier wait (the producer's empty and the consumers' full waits);
//   store(acc, warp, lane, row0): the consumers' store of one finished tile from registers,
//     called after the dependent-launch wait.
//
// PROMO (fp8 only; gt_f8_promo.cuh's f8_promo): where the key asks for it (f8_promote), each 128-K
// box is summed into a fresh partial, mma's fifth argument the scale-d (0 on a box's first
// step), and each stage goes back as soon as its slice is summed.
template <int ESZ, int BM, int BN, int BK, int S, int P, bool SW, int CW, bool AMN, bool BMN,
          bool PROMO, typename Mma, typename Wait, typename Store>
__device__ __forceinline__ void wgp_loop(const gt_kargs_t &a, Mma &&mma, Wait &&wait,
                                         Store &&store) {
  static_assert(ESZ == 1 || ESZ == 2, "1- or 2-byte elements");
  constexpr int BOX = 128 / ESZ;         // elements of K in one 128-byte swizzle row
  constexpr int NBOX = BK / BOX;
  static_assert(CW == 1 || CW == 2, "one or two consumer warpgroups");
  using shape = wg_shape<BM, BN, SW, CW>;
  constexpr int WN = shape::WN, MB = shape::MB, R = shape::R;
  constexpr int BR = SW ? 64 : BN;
  constexpr uint32_t A_BOX = BM * 128, B_BOX = BR * 128, B_LOAD = BN * 128;
  constexpr uint32_t A_BYTES = NBOX * A_BOX, B_BYTES = NBOX * B_BOX, STAGE = A_BYTES + B_BYTES;
  static_assert((SW ? BM % 8 == 0 && BM <= 256 && BN <= 64 : BM % 64 == 0) && BN % 8 == 0 &&
                    BK % BOX == 0,
                "wg tile");
  static_assert(SW ? WN % 8 == 0 : (BM / 64) % CW == 0, "wg consumer split");
  constexpr int PRODUCER = 4 * CW;
  static_assert(!PROMO || (ESZ == 1 && f8_promo<MB, R>::ok), "promotion: fp8, within registers");
  static_assert(!AMN || (ESZ == 2 && BM % 64 == 0 && (!SW || WN % 64 == 0)),
                "wg M-major weights");
  static_assert(!BMN || (ESZ == 2 && SW && BN == 64), "wg N-major tokens");
  constexpr int MBOX = 64 * BOX * ESZ;
  constexpr int KSTEP_A = AMN ? 2048 : 32, KSTEP_B = BMN ? 2048 : 32;

  extern __shared__ uint8_t wg_smem[];
  __shared__ __align__(8) uint64_t bars[2 * S];  // full[S], then empty[S]
  const uint32_t raw = smem_u32(wg_smem);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the provider adds 1024 bytes of slack
  const uint32_t full0 = smem_u32(&bars[0]), empty0 = smem_u32(&bars[S]);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int tiles = (int)((a.m + BM - 1) / BM);
  const int tok0 = (int)blockIdx.y * BN;
  const krange kr = split_range(a);  // one split: all of K
  const int nk = kr.end > kr.beg ? (int)((kr.end - kr.beg + BK - 1) / BK) : 0;

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < S; s++) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, 128 * CW);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  const int wgi = warp / 4;
  if (warp == PRODUCER) {
    if (lane == 0) {
      const void *ta = &a.tma_a, *tb = &a.tma_b;
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(ta) : "memory");
      // Before the wait: the first boxes of this CTA's first tile, into L2 only.
      const int first0 = (int)blockIdx.x * BM;
      const int nbox = (int)((kr.end - kr.beg + BOX - 1) / BOX) * (kr.end > kr.beg);
      for (int i = 0; i < nbox && i < P; i++) {
        if constexpr (AMN) {
#pragma unroll
          for (int j = 0; j < BM / 64; j++)
            tma_prefetch_2d(ta, first0 + j * 64, (int)(kr.beg + i * BOX));
        } else {
          tma_prefetch_2d(ta, (int)(kr.beg + i * BOX), first0);
        }
      }
      pdl_wait();
      pdl_launch_dependents();
      const uint64_t evict_first = l2_evict_first_policy();
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(tb) : "memory");
      int g = 0;
      for (int tile = (int)blockIdx.x; tile < tiles; tile += (int)gridDim.x) {
        const int row0 = tile * BM;
        for (int it = 0; it < nk; it++, g++) {
          const int s = g % S;
          if (g >= S) wait(empty0 + 8 * s, ((g / S) & 1) ^ 1);
          const uint32_t dst = base + s * STAGE, bar = full0 + 8 * s;
          const int kc = (int)(kr.beg + (int64_t)it * BK);
          mbar_expect_tx(bar, NBOX * (A_BOX + B_LOAD));
          auto load_w = [&](uint32_t d, int c0, int c1) {
            if (a.evict_first)
              tma_load_2d_hint(d, ta, bar, c0, c1, evict_first);
            else
              tma_load_2d(d, ta, bar, c0, c1);
          };
#pragma unroll
          for (int b = 0; b < NBOX; b++) {
            if constexpr (AMN) {
#pragma unroll
              for (int j = 0; j < BM / 64; j++)
                load_w(dst + b * A_BOX + j * MBOX, row0 + j * 64, kc + b * BOX);
            } else {
              load_w(dst + b * A_BOX, kc + b * BOX, row0);
            }
            if constexpr (BMN)
              tma_load_2d(dst + A_BYTES + b * B_BOX, tb, bar, tok0, kc + b * BOX);
            else
              tma_load_2d(dst + A_BYTES + b * B_BOX, tb, bar, kc + b * BOX, tok0);
          }
        }
      }
    } else {
      pdl_wait();
    }
    return;
  }

  // Consumer warpgroups.
  pdl_wait();
  constexpr int NP = f8_promo<MB, R>::NP;
  float part[PROMO ? NP : 1][MB][PROMO ? R : 1];
  if constexpr (PROMO) f8_promo_zero(part);
  int g = 0;
  for (int tile = (int)blockIdx.x; tile < tiles; tile += (int)gridDim.x) {
    float acc[MB][R];
#pragma unroll
    for (int mb = 0; mb < MB; mb++)
#pragma unroll
      for (int i = 0; i < R; i++) acc[mb][i] = 0.f;
    if (PROMO && a.f8_promote) {
      if constexpr (PROMO)
        wgp_promo_tile<NBOX, S, A_BOX, B_BOX, A_BYTES, STAGE>(acc, part, nk, g, base, full0,
                                                              empty0, wgi, mma, wait);
      store(acc, warp, lane, tile * BM);
      continue;
    }
    for (int it = 0; it < nk; it++, g++) {
      const int s = g % S;
      wait(full0 + 8 * s, (g / S) & 1);
      const uint32_t sa = base + s * STAGE, sb = sa + A_BYTES;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < BK * ESZ / 32; kk++) {
        const uint32_t ka = sa + (kk / 4) * A_BOX + (kk % 4) * KSTEP_A;
        const uint32_t kb = sb + (kk / 4) * B_BOX + (kk % 4) * KSTEP_B;
        mma(acc, ka, kb, wgi);
      }
      wg_commit();
      // The previous slice's group is complete after this wait: its stage goes back.
      wg_wait<1>();
      if (it > 0) mbar_arrive(empty0 + 8 * ((g - 1) % S));
    }
    wg_wait<0>();
#pragma unroll
    for (int mb = 0; mb < MB; mb++) wg_fence_acc(acc[mb]);
    // The tile's last slice is done too: the producer may refill its stage while this tile is
    // stored.
    if (nk > 0) mbar_arrive(empty0 + 8 * ((g - 1) % S));
    store(acc, warp, lane, tile * BM);
  }
}

// Persistent CTAs of the wg family (see the top of this file). The template arguments are
// wg_body's without KS and CM.
template <typename T, int BM, int BN, int BK, int S, int P, bool SW, int CW, bool AMN, bool BMN,
          bool EPI = false>
__device__ __forceinline__ void wgp_body(const gt_kargs_t &a) {
  using shape = wg_shape<BM, BN, SW, CW>;
  constexpr int WN = shape::WN, MB = shape::MB, R = shape::R;
  const int tok0 = (int)blockIdx.y * BN;
  const auto fin = wg_fin<T, EPI>(a);
  wgp_loop<2, BM, BN, BK, S, P, SW, CW, AMN, BMN, false>(
      a,
      [](float (&acc)[MB][R], uint32_t ka, uint32_t kb, int wgi) {
        if constexpr (SW) {
          const uint32_t w = ka + wgi * WN * 128;
          wgmma_ss<T, WN>::template mma<BMN, AMN>(acc[0], BMN ? wg_desc_mn(kb) : wg_desc(kb),
                                                  AMN ? wg_desc_mn(w) : wg_desc(w));
        } else {
#pragma unroll
          for (int mb = 0; mb < MB; mb++) {
            const uint32_t w = ka + (wgi * MB + mb) * 64 * 128;
            wgmma_ss<T, BN>::template mma<AMN, 0>(acc[mb], AMN ? wg_desc_mn(w) : wg_desc(w),
                                                  wg_desc(kb));
          }
        }
      },
      [](uint32_t bar, uint32_t parity) { mbar_wait(bar, parity); },
      [&](const float (&acc)[MB][R], int warp, int lane, int row0) {
        wg_store_regs<T, uint16_t, MB, R, BN, SW, WN, EPI>(a, acc, warp, lane, row0, tok0, fin);
      });
}

}  // namespace gtk
