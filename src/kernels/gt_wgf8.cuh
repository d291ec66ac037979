// Hopper fp8 decode/skinny family (wgf8): the wg pipeline (gt_wg.cuh: a producer warp streams
// K slices into an S-stage shared-memory ring with TMA, consumer warpgroups run wgmma.mma_async
// from shared memory, split-K summed inside a cluster) on e4m3 / e5m2 operands, with the fp8
// scales and the D conversion in the fp32 epilogue.
//
// Why a family of its own and not a wg dtype: the operands are 1 byte and D is another type
// (bf16, f16 or f32), so a name carries three types; fp8 wgmma reads both operands K-major only
// (no transpose immediates), so only TN (the nn.Linear call) exists; the epilogue reads the
// scales. Keeping it out of wg_body leaves every wg instance's machine code as it is.
//
// What changes with 1-byte elements (checked against CUTLASS's GMMA descriptors and DeepGEMM's
// sm90 fp8 GEMM): a 128-byte swizzle row is 128 elements of K, so a TMA box is 128 K x rows and
// a slice of BK is BK/128 boxes; the shared-memory descriptor is byte-based and so the same as
// wg's K-major one (wg_desc: 8-row groups 1024 bytes apart, 128-byte swizzle); one instruction
// is m64nNk32 (32 elements = 32 bytes of K, the same 32-byte step along a row as bf16's k16),
// four per box. The instruction is
//   wgmma.mma_async.sync.aligned.m64nNk32.f32.<ta>.<tb> {d}, desc-a, desc-b, scale-d, 1, 1;
// with no transpose immediates (generated/wgmma_f8.cuh).
//
// Epilogue (fp32, once per element, by the thread that writes it after the cluster's split-K
// sum): v = alpha * sa * sb * acc (+ beta * C) (+ act(bias)), sa = 1, scale_a[0] or scale_a[row]
// by scale_mode_a, sb = 1, scale_b[0] or scale_b[col] by scale_mode_b (gt_kernel_args.h: for
// nn.Linear scale_a is the weight's, per output feature; scale_b the activations', per token).
// The scales are read from device memory when the kernel runs, after the dependent-launch wait.
//
// Hang safety: every mbarrier wait is bounded (wgf8_wait: about 4 s of clock cycles, then
// __trap()), so a kernel whose copies never complete (a wrong tensor map, a miscounted
// expect_tx) fails the launch with an error instead of holding the GPU.
#pragma once

#include <cooperative_groups.h>

#include "gt_f8.cuh"
#include "gt_f8_promo.cuh"
#include "gt_kcommon.cuh"
#include "gt_wg.cuh"
#include "gt_wgp.cuh"

namespace gtk {

template <typename TA, typename TB, int N> struct wgmma_f8;

// d = sd * d + A * B (sd 0: d starts from zero, the promoting consumers' fresh partial sums).
#define GT_WGMMA_F8(TA, TB, PA, PB, N)                                                     \
  template <> struct wgmma_f8<TA, TB, N> {                                                 \
    static __device__ __forceinline__ void mma(float(&d)[N / 2], uint64_t da, uint64_t db, \
                                               int sd = 1) {                               \
      GT_WGMMA_F8_N##N(PA, PB);                                                            \
    }                                                                                      \
  };

#include "kernels/generated/wgmma_f8.cuh"

#undef GT_WGMMA_F8

// mbar_wait with a bound: a phase that has not completed after ~8e9 clock cycles (about 4 s at
// the H200's 1.98 GHz; a slice takes microseconds) traps, which ends the grid with
// cudaErrorLaunchFailure. The clock is read only after a failed try_wait.
__device__ __forceinline__ void wgf8_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  asm volatile(
      "{\n.reg .pred P1;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n"
      "selp.u32 %0, 1, 0, P1;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  if (done) return;
  const long long t0 = clock64();
  for (;;) {
    asm volatile(
        "{\n.reg .pred P1;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n"
        "selp.u32 %0, 1, 0, P1;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (clock64() - t0 > 8000000000LL) __trap();
  }
}

// fin of wgf8_body and wgf8p_body: the element's sum finished in fp32 as v = alpha * sa * sb *
// sum (+ beta * C) (+ act(bias)), in that order, as f8_store_out computes it. A tensorwise scale
// is read once (here, so after the dependent-launch wait); an outer-vector one per row or token.
template <typename T, bool EPI>
__device__ __forceinline__ auto wgf8_fin(const gt_kargs_t &a) {
  using DS = typename f8_store<T>::S;
  const DS *C = static_cast<const DS *>(a.C);
  const bool va = a.scale_mode_a == 2, vb = a.scale_mode_b == 2;
  const float sa1 = va ? 1.f : f8_scale(a.scale_a, a.scale_mode_a, 0);
  const float sb1 = vb ? 1.f : f8_scale(a.scale_b, a.scale_mode_b, 0);
  return [&a, C, va, vb, sa1, sb1](int64_t grow, int64_t gcol, int64_t off, float sum, int act) {
    const float sa = va ? __ldg(a.scale_a + grow) : sa1;
    const float sb = vb ? __ldg(a.scale_b + gcol) : sb1;
    float v = a.alpha * sa * sb * sum;
    if (a.beta_nonzero) v += a.beta * T::to_f(C[off]);
    if constexpr (EPI) v = epilogue_apply_act<T, DS>(a, grow, v, act);
    return v;
  };
}

// One 32-byte K step of a consumer warpgroup's wgmma's, from the weight box at ka and the token
// box at kb: wgf8p_body's, and the promoting loops' (sd 0: into a fresh partial). wgf8_body's
// plain loop spells the same step inline: through this function its measured one-tile kernels
// compile to other address arithmetic (PTX, 2026-12-07), and they keep their machine code
// (wg_body and wgp_body likewise).
template <typename TA, typename TB, int MB, int R, int BN, bool SW, int WN>
__device__ __forceinline__ void wgf8_mma(float (&acc)[MB][R], uint32_t ka, uint32_t kb, int wgi,
                                         int sd = 1) {
  if constexpr (SW) {
    // Tokens are wgmma's A (M = 64 rows of the B box), the warpgroup's weight rows its B.
    wgmma_f8<TB, TA, WN>::mma(acc[0], wg_desc(kb), wg_desc(ka + wgi * WN * 128), sd);
  } else {
#pragma unroll
    for (int mb = 0; mb < MB; mb++)
      wgmma_f8<TA, TB, BN>::mma(acc[mb], wg_desc(ka + (wgi * MB + mb) * 64 * 128), wg_desc(kb),
                                sd);
  }
}

// The unsplit store of wgf8_body and wgf8p_body: each consumer thread stores its accumulators
// from registers (wg_store_regs), finished by fin (wgf8_fin). Loads in fin (an outer-vector
// scale, the bias of a twin) go before the stores (wg_store_regs' PRELOAD); a tensorwise plain
// instance has none. A plain instance with both store paths needs registers for both: up to 64
// accumulators a thread that spills nothing; the 224-256-row tiles keep the one pass.
template <typename T, int MB, int R, int BN, bool SW, int WN, bool EPI, typename Fin>
__device__ __forceinline__ void wgf8_store_regs(const gt_kargs_t &a, const float (&acc)[MB][R],
                                                int warp, int lane, int64_t row0, int64_t tok0,
                                                Fin fin) {
  using DS = typename f8_store<T>::S;
  if (EPI || (MB * R <= 64 && (a.scale_mode_a == 2 || a.scale_mode_b == 2)))
    wg_store_regs<T, DS, MB, R, BN, SW, WN, true>(a, acc, warp, lane, row0, tok0, fin);
  else
    wg_store_regs<T, DS, MB, R, BN, SW, WN>(a, acc, warp, lane, row0, tok0, fin);
}

// TA, TB: operand types (e4m3, e5m2); T: D's type (bf16, f16, f32); the tile, ring, split,
// prefetch, orientation (SW) and consumer warpgroups (CW) as in wg_body; EPI the epilogue twin.
//
// Weight multicast (CN > 1, no split): the CN CTAs of a cluster (1 x CN x 1) own the same BM
// weight rows and consecutive token tiles. Each loads BM/CN of the rows per box with TMA multicast
// into the same offset of every peer's ring, so the tile is read from L2 once for CN token tiles
// (cuBLASLt's 64-token fp8 kernels run such 1 x 2 clusters). A peer writes into this CTA's ring,
// so a stage is free only when the consumers of all CN CTAs are done with it: each consumer warp
// arrives on the empty barrier of every CTA of the cluster, and the barrier counts 4 warps x CW x
// CN (as wg_body's token multicast). The grid along N is a multiple of CN: a CTA past N loads
// zero tokens, still loads its share of the weights for its peers, and stores nothing.
//
// Token multicast (CM > 1, no split; wg_body's `c`): the CM CTAs of a cluster row own
// consecutive weight tiles and the same tokens, and each loads BN/CM of the token rows per box
// into every peer's ring (cuBLASLt's 64-token fp8 kernels on large weights run cl2x1 and cl4x1).
// With both, the cluster is CM x CN x 1 (ranks x-fastest): a CTA's token share goes to the CTAs
// of its row, its weight share to those of its column, and a stage is free only when the
// consumers of all CM x CN CTAs are done with it. The grid along M is a multiple of CM: a CTA
// past M loads zero weights, still loads its share of the tokens, and stores nothing.
template <typename TA, typename TB, typename T, int BM, int BN, int BK, int S, int KS, int P,
          bool SW, int CW, bool EPI = false, int CN = 1, int CM = 1>
__device__ __forceinline__ void wgf8_body(const gt_kargs_t &a) {
  namespace cg = cooperative_groups;
  constexpr int BOX = 128;         // one 128-byte swizzle row of 1-byte elements
  constexpr int NBOX = BK / BOX;   // boxes per slice along K
  constexpr int KSTEP = 32;        // elements (= bytes) of K per wgmma
  static_assert(CW == 1 || CW == 2, "one or two consumer warpgroups");
  using shape = wg_shape<BM, BN, SW, CW>;
  constexpr int WN = shape::WN, MB = shape::MB, R = shape::R;
  constexpr int BR = SW ? 64 : BN;           // token rows of a B box in shared memory
  constexpr uint32_t A_BOX = BM * BOX, B_BOX = BR * BOX, B_LOAD = BN * BOX;
  constexpr uint32_t A_BYTES = NBOX * A_BOX, B_BYTES = NBOX * B_BOX, STAGE = A_BYTES + B_BYTES;
  constexpr int RS = BM + 4;                 // row stride of the fp32 partial tile
  static_assert((SW ? BM % 8 == 0 && BM <= 256 && BN <= 64 : BM % 64 == 0) && BN % 8 == 0 &&
                    BK % BOX == 0 && KS >= 1 && KS <= 8,
                "wgf8 tile");
  static_assert((size_t)BN * RS * 4 <= (size_t)S * STAGE, "partial tile fits in the ring");
  static_assert(SW ? WN % 8 == 0 : (BM / 64) % CW == 0, "wgf8 consumer split");
  // Each CTA of a multicast cluster loads BMS weight rows, whole 8-row (1024-byte) swizzle
  // groups, so every sub-box lands in the pattern the full box would have.
  constexpr int BMS = BM / CN;
  static_assert(CN >= 1 && CN <= 4 && BM % CN == 0 && BMS % 8 == 0 && (CN == 1 || KS == 1),
                "wgf8 weight multicast");
  constexpr int BNS = BN / CM;  // token rows each CTA of a token-multicast cluster loads
  static_assert(CM >= 1 && BN % CM == 0 && BNS % 8 == 0 && (CM == 1 || KS == 1) && CM * CN <= 8,
                "wgf8 token multicast");
  constexpr int CX = CM * CN;  // CTAs of a multicast cluster
  constexpr int PRODUCER = 4 * CW;  // warp index of the producer warp
  using DS = typename f8_store<T>::S;
  constexpr bool PROMO = f8_promo<MB, R>::ok;  // else the provider refuses f8_promote
  constexpr int NP = f8_promo<MB, R>::NP;

  extern __shared__ uint8_t wg_smem[];
  __shared__ __align__(8) uint64_t bars[2 * S];  // full[S], then empty[S]
  const uint32_t raw = smem_u32(wg_smem);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the provider adds 1024 bytes of slack
  float *red = reinterpret_cast<float *>(wg_smem + (base - raw));
  const uint32_t full0 = smem_u32(&bars[0]), empty0 = smem_u32(&bars[S]);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row0 = (int)blockIdx.x * BM, tok0 = (int)blockIdx.y * BN;
  const krange kr = split_range(a);
  // Splits start at multiples of BK (kchunk is rounded to the tile); the last slice of the last
  // split may run past K, and TMA zero-fills it, so every slice runs all BK/32 steps.
  const int nk = kr.end > kr.beg ? (int)((kr.end - kr.beg + BK - 1) / BK) : 0;
  cg::cluster_group cluster = cg::this_cluster();
  const uint32_t my_rank = CX > 1 ? cluster_ctarank() : 0;
  const uint32_t cy = CN > 1 ? my_rank / CM : 0;  // this CTA's share of the weight rows
  const uint32_t cx = CM > 1 ? my_rank % CM : 0;  // this CTA's share of the tokens

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < S; s++) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, CX > 1 ? 4 * CW * CX : 128 * CW);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (CX > 1)
    cluster.sync();  // every peer's barriers exist before any multicast reaches them
  else
    __syncthreads();

  float acc[MB][R];
#pragma unroll
  for (int mb = 0; mb < MB; mb++)
#pragma unroll
    for (int i = 0; i < R; i++) acc[mb][i] = 0.f;

  const int wgi = warp / 4;
  if (warp == PRODUCER) {
    if (lane == 0) {
      const void *ta = &a.tma_a, *tb = &a.tma_b;
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(ta) : "memory");
      const int nbox = (int)((kr.end - kr.beg + BOX - 1) / BOX) * (kr.end > kr.beg);
      for (int i = 0; i < nbox && i < P; i++)
        tma_prefetch_2d(ta, (int)(kr.beg + i * BOX), row0 + (int)cy * BMS);
      pdl_wait();
      pdl_launch_dependents();
      const uint64_t evict_first = l2_evict_first_policy();
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(tb) : "memory");
      for (int it = 0; it < nk; it++) {
        const int s = it % S;
        if (it >= S) wgf8_wait(empty0 + 8 * s, ((it / S) & 1) ^ 1);
        const uint32_t dst = base + s * STAGE, bar = full0 + 8 * s;
        const int kc = (int)(kr.beg + (int64_t)it * BK);
        mbar_expect_tx(bar, NBOX * (A_BOX + B_LOAD));
#pragma unroll
        for (int b = 0; b < NBOX; b++) {
          if constexpr (CN > 1)
            wg_load_w_share<CN, BMS, CM>(dst + b * A_BOX, ta, bar, kc + b * BOX, row0, cy,
                                         a.evict_first, evict_first, cx);
          else if (a.evict_first)
            tma_load_2d_hint(dst + b * A_BOX, ta, bar, kc + b * BOX, row0, evict_first);
          else
            tma_load_2d(dst + b * A_BOX, ta, bar, kc + b * BOX, row0);
          if constexpr (CM > 1)
            wg_load_t_share<CM, BNS>(dst + A_BYTES + b * B_BOX, tb, bar, kc + b * BOX, tok0, cx,
                                     CM * cy);
          else
            tma_load_2d(dst + A_BYTES + b * B_BOX, tb, bar, kc + b * BOX, tok0);
        }
      }
    } else {
      pdl_wait();
    }
  } else if (PROMO && a.f8_promote) {
    // Promoted (see f8_promo): each stage goes back as soon as its slice is summed, except the
    // last, as in the plain loop below (no peer waits for it).
    pdl_wait();
    if constexpr (PROMO) {
      float part[NP][MB][R];
      f8_promo_zero(part);
      for (int it = 0; it < nk; it++) {
        const int s = it % S;
        wgf8_wait(full0 + 8 * s, (it / S) & 1);
        const uint32_t sa = base + s * STAGE, sb = sa + A_BYTES;
        f8_promo_slice<MB, R, NP, NBOX>(acc, part, [&](float (&q)[MB][R], int j) {
#pragma unroll
          for (int kk = 0; kk < 4; kk++)
            wgf8_mma<TA, TB, MB, R, BN, SW, WN>(q, sa + j * A_BOX + kk * KSTEP,
                                                sb + j * B_BOX + kk * KSTEP, wgi, kk != 0);
        });
        if (it + 1 < nk) {
          if constexpr (CX > 1) {
            if (lane < CX) mbar_arrive_remote(empty0 + 8 * s, (uint32_t)lane);
          } else {
            mbar_arrive(empty0 + 8 * s);
          }
        }
      }
    }
  } else {
    pdl_wait();
    for (int it = 0; it < nk; it++) {
      const int s = it % S;
      wgf8_wait(full0 + 8 * s, (it / S) & 1);
      const uint32_t sa = base + s * STAGE, sb = sa + A_BYTES;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < BK / KSTEP; kk++) {
        const uint32_t ka = sa + (kk / 4) * A_BOX + (kk % 4) * KSTEP;
        const uint32_t kb = sb + (kk / 4) * B_BOX + (kk % 4) * KSTEP;
        if constexpr (SW) {
          // Tokens are wgmma's A (M = 64 rows of the B box), the warpgroup's weight rows its B.
          wgmma_f8<TB, TA, WN>::mma(acc[0], wg_desc(kb), wg_desc(ka + wgi * WN * 128));
        } else {
#pragma unroll
          for (int mb = 0; mb < MB; mb++)
            wgmma_f8<TA, TB, BN>::mma(acc[mb], wg_desc(ka + (wgi * MB + mb) * 64 * 128),
                                      wg_desc(kb));
        }
      }
      wg_commit();
      wg_wait<1>();
      if (it > 0) {
        if constexpr (CX > 1) {
          // Lane l of each warp frees the stage in CTA l of the cluster (itself included).
          if (lane < CX) mbar_arrive_remote(empty0 + 8 * ((it - 1) % S), (uint32_t)lane);
        } else {
          mbar_arrive(empty0 + 8 * ((it - 1) % S));
        }
      }
    }
    wg_wait<0>();
#pragma unroll
    for (int mb = 0; mb < MB; mb++) wg_fence_acc(acc[mb]);
  }
  const auto fin = wgf8_fin<T, EPI>(a);
  if constexpr (KS == 1) {
    // One split: the consumers store from their registers; every copy the producer warp issued
    // was consumed.
    if (warp < PRODUCER)
      wgf8_store_regs<T, MB, R, BN, SW, WN, EPI>(a, acc, warp, lane, row0, tok0, fin);
    // No CTA leaves while a peer may still arrive on its barriers.
    if constexpr (CX > 1) cluster.sync();
    return;
  }
  // The ring is idle (every copy was waited for): reuse it for the fp32 partial red[token][row].
  __syncthreads();
  if (warp < PRODUCER) wg_park_partial<MB, R, BN, SW, WN, RS>(red, acc, warp, lane);
  if (KS > 1)
    cluster.sync();
  else
    __syncthreads();

  const int rank = KS > 1 ? (int)blockIdx.z : 0;
  const float *parts[KS];
#pragma unroll
  for (int src = 0; src < KS; src++)
    parts[src] = KS > 1 ? cluster.map_shared_rank(red, (unsigned)src) : red;
  wg_store_tile<T, DS, BM, BN, KS, RS, 128 * CW + 32, EPI>(a, parts, rank, row0, tok0, fin);
  if (KS > 1) cluster.sync();
}

// Persistent CTAs (name token g1; KS = 1, no multicast): wgf8_body's instruction, bounded waits
// and epilogue on gt_wgp.cuh's persistent loop, which keeps the ring streaming across tile
// boundaries while the consumers store a tile (bf16's g1 tiles won most large rows at 16-64
// tokens on the H200, where a one-tile-per-CTA grid pays each CTA's ramp and store with nothing
// of its own in flight). The template arguments are wgf8_body's without KS, CN and CM.
template <typename TA, typename TB, typename T, int BM, int BN, int BK, int S, int P, bool SW,
          int CW, bool EPI = false>
__device__ __forceinline__ void wgf8p_body(const gt_kargs_t &a) {
  using shape = wg_shape<BM, BN, SW, CW>;
  constexpr int WN = shape::WN, MB = shape::MB, R = shape::R;
  const int tok0 = (int)blockIdx.y * BN;
  wgp_loop<1, BM, BN, BK, S, P, SW, CW, false, false, f8_promo<MB, R>::ok>(
      a,
      [](float (&acc)[MB][R], uint32_t ka, uint32_t kb, int wgi, int sd = 1) {
        wgf8_mma<TA, TB, MB, R, BN, SW, WN>(acc, ka, kb, wgi, sd);
      },
      [](uint32_t bar, uint32_t parity) { wgf8_wait(bar, parity); },
      [&](const float (&acc)[MB][R], int warp, int lane, int row0) {
        // As wgf8_body's unsplit store; the scales are read after the dependent-launch wait,
        // which the loop's consumers passed before their first tile.
        wgf8_store_regs<T, MB, R, BN, SW, WN, EPI>(a, acc, warp, lane, row0, tok0,
                                                   wgf8_fin<T, EPI>(a));
      });
}

}  // namespace gtk
