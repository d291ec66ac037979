// Grouped GEMM (Mixture-of-Experts) kernels for Hopper: torch._grouped_mm's 2-D x 3-D problem
// (gt_grouped_args.h), TMA + wgmma, the routing (offs) read on the device, one launch per call.
//
// Grid: x = tile slots, y = N tiles (BM weight rows = output columns each), z = the K splits
// (one cluster of KS CTAs along z). A slot is one token tile (BN routed rows) of one non-empty
// group: the host cannot know the split of rows among groups, but it knows an upper bound of the
// tiles, floor((rows + min(groups, rows) (BN - 1)) / BN) (gt_grouped_slots: each non-empty group
// adds at most one partial tile), and sizes the grid by it. At kernel start warp 0 scans offs
// (32 lanes x 8 groups per round, all loads of a round in flight together; grp_cta_slot in
// gt_grp_slot.cuh) and finds the slot's group and tile; a slot
// past the last tile exits before its first load, so an empty group costs no weight bytes and a
// replay of a captured graph follows that replay's offs. Slots are gridDim.x so that CTAs launched
// together share an N tile: its weight slice is read from DRAM once and reused from L2 by the
// group's token tiles (prefill), and a decode call's few slots of one N tile run side by side.
//
// The main loop is gt_wg.cuh's: one producer warp streams BK-wide K slices of the group's BM
// weight rows and of the BN rows of the slot into an S-stage ring (128-byte swizzle, one full and
// one empty mbarrier per stage), the consumer warpgroups run wgmma on each slice from shared memory
// and keep one slice's group in flight. The weights are a 3-D tensor map (K or N innermost, then
// the other, then the group), so TMA zero-fills N and K past the problem inside the group and
// never reads the next group's weights; the rows of a token box past the group (another group's
// rows, or past the tensor) are computed but never stored.
//
// Two orientations (SW):
// - decode (SW false, family grpd): the weight rows are wgmma's M (BM/64 blocks of m64) and the
//   routed rows its N (BN 8-64), one consumer warpgroup: a decode call has 1-8 rows per group,
//   so an N of 8 wastes nothing and the CTA is a pure weight stream. Split-K (KS > 1) sums the
//   KS partials in a cluster through distributed shared memory in rank order, as gt_wg does.
// - prefill (SW true, family grpp): the routed rows are wgmma's M, BN/64 consumer warpgroups of
//   64 rows each, every one multiplying by all BM weight rows as wgmma's N (m64nBMk16): the
//   weight slice in shared memory feeds BN rows, so BM x BN = 256 x 128 reads each weight byte
//   from shared memory once per 128 rows.
//
// fp8 (TO e4m3, decode orientation and enk weights only: fp8 wgmma reads both operands K-major):
// the same ring and pipeline on 1-byte elements, as gt_wgf8.cuh does for the dense family. A
// 128-byte swizzle row is 128 elements of K, so a box is 128 K x rows and an instruction is
// m64nBNk32 (the same 32-byte step along a row as bf16's k16); the store scales each fp32 sum by
// the row's scale_a and the group's scale_b of the column before rounding it to bf16. Hopper's
// fp8 wgmma keeps fewer mantissa bits in its accumulator than fp32 (about 14: DeepSeek-V3's
// technical report, section 3.3.2), so a long K of same-signed products loses digits that
// cuBLASLt and torch's CUTLASS path keep unless fast accumulation is asked for: the fp8 consumer
// promotes (grp_f8_slice), each 128 elements of K summed by wgmma into a fresh partial and added
// to the fp32 sum in registers (CUTLASS's promotion interval of 4 k32 instructions).
//
// Weight layouts (WMN): enk (sbk == 1, the [E][N][K] nn.Linear stack seen transposed) is
// K-major, read in boxes of 64 K x BM rows; ekn (sbn == 1, a [E][K][N] stack) is N-major, read
// in 64 x 64 boxes and fed to wgmma with its transpose bit (gt_wg.cuh's M-major path).
//
// Waits are bounded: a wait that has not completed after about two seconds of clock traps (the
// launch fails with an error) instead of spinning forever, so a broken pipeline cannot hang a
// test or a benchmark.
#pragma once

#include "gt_grouped_kargs.h"
#include "gt_grp_slot.cuh"
#include "gt_wg.cuh"
#include "gt_wgf8.cuh"

namespace gtk {

// Whether an operand tag is an fp8 type (1-byte elements, wgmma_f8).
template <typename X> struct grp_f8 { static constexpr bool value = false; };
template <> struct grp_f8<e4m3> { static constexpr bool value = true; };
template <> struct grp_f8<e5m2> { static constexpr bool value = true; };

// mbarrier wait with a bound: traps after ~2^32 cycles (about 2 s at 1.98 GHz).
__device__ __forceinline__ void grp_wait(uint32_t bar, uint32_t parity) {
  const long long t0 = clock64();
  for (;;) {
    uint32_t ok;
    asm volatile(
        "{\n"
        ".reg .pred P1;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n"
        "selp.u32 %0, 1, 0, P1;\n"
        "}\n"
        : "=r"(ok)
        : "r"(bar), "r"(parity)
        : "memory");
    if (ok) return;
    if (clock64() - t0 > (1ll << 32)) __trap();
  }
}

// 3-D tiled TMA load (c0 innermost, c2 the group) completing on mbarrier bar, with an L2 hint.
__device__ __forceinline__ void tma_load_3d_hint(uint32_t dst, const void *tmap, uint32_t bar,
                                                 int c0, int c1, int c2, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(policy)
      : "memory");
}
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void *tmap, uint32_t bar, int c0,
                                            int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}

// The producer lane: streams nk BK-wide slices of the group's BM weight rows from n0 and of the
// BN routed rows from r0, starting at K kbeg, into the S-stage ring at `base`. ES: bytes per
// element (2, or 1 for fp8: a box is then 128 elements of K, still 128 bytes).
template <int BM, int BN, int BK, int S, bool WMN, int ES = 2>
__device__ __forceinline__ void grp_produce(const gt_grouped_kargs_t &p, uint32_t base,
                                            uint32_t full0, uint32_t empty0, int grp, int n0,
                                            int r0, int64_t kbeg, int nk) {
  constexpr int BOX = 128 / ES, NBOX = BK / BOX;
  constexpr uint32_t A_BOX = BM * BOX * ES, B_BOX = BN * BOX * ES;
  constexpr uint32_t A_BYTES = NBOX * A_BOX, STAGE = A_BYTES + NBOX * B_BOX;
  constexpr int MBOX = 64 * BOX * ES;  // bytes of one 64 x 64 box (ekn weights)
  const void *tw = &p.tma_w, *tx = &p.tma_x;  // prefetched by grp_body before the wait
  const uint64_t evict_first = l2_evict_first_policy();
  for (int it = 0; it < nk; it++) {
    const int s = it % S;
    if (it >= S) grp_wait(empty0 + 8 * s, ((it / S) & 1) ^ 1);
    const uint32_t dst = base + s * STAGE, bar = full0 + 8 * s;
    const int kc = (int)(kbeg + (int64_t)it * BK);
    mbar_expect_tx(bar, STAGE);
    auto load_w = [&](uint32_t d, int c0, int c1) {
      if (p.evict_first)
        tma_load_3d_hint(d, tw, bar, c0, c1, grp, evict_first);
      else
        tma_load_3d(d, tw, bar, c0, c1, grp);
    };
#pragma unroll
    for (int b = 0; b < NBOX; b++) {
      if constexpr (WMN) {
#pragma unroll
        for (int j = 0; j < BM / 64; j++)
          load_w(dst + b * A_BOX + j * MBOX, n0 + j * 64, kc + b * BOX);
      } else {
        load_w(dst + b * A_BOX, kc + b * BOX, n0);
      }
      tma_load_2d(dst + A_BYTES + b * B_BOX, tx, bar, kc + b * BOX, r0);
    }
  }
}

// Writes this cluster rank's share of the output tile: the KS fp32 partials red[row][column]
// (row stride BM + 4) summed in rank order, scaled by scale_a[row] * scale_b[group][column] when
// F8, plus the group's bias, for the tile's columns below n and its rows below the group's end
// rend. Eight columns per thread and one 16-byte store where D (and the bias) allow it, so a
// prefill tile's 32K outputs do not cost more than a few slices of the main loop; element by
// element otherwise, and at the N tail.
template <typename T, int BM, int BN, int KS, bool F8 = false>
__device__ __forceinline__ void grp_store(const gt_grouped_args_t &g, float *red, int grp, int n0,
                                          int r0, int64_t rend) {
  namespace cg = cooperative_groups;
  constexpr int RS = BM + 4, RROWS = (BM + KS - 1) / KS, V = 8;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = KS > 1 ? (int)blockIdx.z : 0;
  uint16_t *D = static_cast<uint16_t *>(g.d);
  const uint16_t *bias = static_cast<const uint16_t *>(g.bias);
  const uint16_t *gbias = bias ? bias + (int64_t)grp * g.sbias : nullptr;
  const bool vec = RROWS % V == 0 && g.ldd % V == 0 && ((uintptr_t)D & 15) == 0 &&
                   (!bias || (g.sbias % V == 0 && ((uintptr_t)bias & 15) == 0));
  if (vec) {
    constexpr int CV = RROWS / V;  // vectors per tile row in this rank's share
    for (int e = threadIdx.x; e < CV * BN; e += blockDim.x) {
      const int wrow = rank * RROWS + (e % CV) * V, trow = e / CV;
      const int64_t col = (int64_t)n0 + wrow, row = (int64_t)r0 + trow;
      if (wrow >= BM || col >= g.n || row >= rend) continue;
      float v[V];
#pragma unroll
      for (int j = 0; j < V; j++) v[j] = 0.f;
#pragma unroll
      for (int src = 0; src < KS; src++) {
        const float *q = (KS > 1 ? cluster.map_shared_rank(red, (unsigned)src) : red) +
                         trow * RS + wrow;
        const float4 x0 = *reinterpret_cast<const float4 *>(q);
        const float4 x1 = *reinterpret_cast<const float4 *>(q + 4);
        v[0] += x0.x, v[1] += x0.y, v[2] += x0.z, v[3] += x0.w;
        v[4] += x1.x, v[5] += x1.y, v[6] += x1.z, v[7] += x1.w;
      }
      const bool whole = col + V <= g.n;
      if constexpr (F8) {
        const float sa = __ldg(g.scale_a + row);
        const float *sb = g.scale_b + (int64_t)grp * g.sscale_b + col;
#pragma unroll
        for (int j = 0; j < V; j++) v[j] *= sa * (whole || col + j < g.n ? __ldg(sb + j) : 0.f);
      }
      if (gbias) {
        if (whole) {
          const uint4 bv = *reinterpret_cast<const uint4 *>(gbias + col);
          const uint32_t w[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
          for (int j = 0; j < V; j++) v[j] += T::to_f((uint16_t)(w[j / 2] >> (16 * (j % 2))));
        } else {
#pragma unroll
          for (int j = 0; j < V; j++)
            if (col + j < g.n) v[j] += T::to_f(gbias[col + j]);
        }
      }
      uint16_t *dst = D + row * g.ldd + col;
      if (whole) {
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
          w[j] = (uint32_t)T::from_f(v[2 * j]) | ((uint32_t)T::from_f(v[2 * j + 1]) << 16);
        *reinterpret_cast<uint4 *>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
      } else {
#pragma unroll
        for (int j = 0; j < V; j++)
          if (col + j < g.n) dst[j] = T::from_f(v[j]);
      }
    }
    return;
  }
  for (int e = threadIdx.x; e < RROWS * BN; e += blockDim.x) {
    const int wrow = rank * RROWS + e % RROWS, trow = e / RROWS;
    const int64_t col = (int64_t)n0 + wrow, row = (int64_t)r0 + trow;
    if (wrow >= BM || col >= g.n || row >= rend) continue;
    float sum = 0.f;
#pragma unroll
    for (int src = 0; src < KS; src++) {
      const float *q = KS > 1 ? cluster.map_shared_rank(red, (unsigned)src) : red;
      sum += q[trow * RS + wrow];
    }
    if constexpr (F8)
      sum *= __ldg(g.scale_a + row) * __ldg(g.scale_b + (int64_t)grp * g.sscale_b + col);
    if (gbias) sum += T::to_f(gbias[col]);
    D[row * g.ldd + col] = T::from_f(sum);
  }
}

// The fp8 consumer's work on one slice of the ring (sa: its weight boxes, sb: its row boxes),
// promoted box by box (gt_f8_promo.cuh's f8_promo_slice): the slice ends with every group complete,
// so the caller may release the stage at once.
template <typename TO, int MB, int R, int BN, int NBOX, int NP, uint32_t A_BOX, uint32_t B_BOX>
__device__ __forceinline__ void grp_f8_slice(float (&acc)[MB][R], float (&part)[NP][MB][R],
                                             uint32_t sa, uint32_t sb) {
  f8_promo_slice<MB, R, NP, NBOX>(acc, part, [&](float (&q)[MB][R], int j) {
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
#pragma unroll
      for (int mb = 0; mb < MB; mb++)
        wgmma_f8<TO, TO, BN>::mma(q[mb], wg_desc(sa + j * A_BOX + mb * 64 * 128 + kk * 32),
                                  wg_desc(sb + j * B_BOX + kk * 32), kk != 0);
  });
}

// T: D's element type (and the operands' when TO is T); BM weight rows (output columns) x BN
// routed rows x BK per slice; S stages; KS splits of K in one cluster; SW: the prefill
// orientation (see the top of the file); WMN: ekn weights (N-major); TO: the operand type, T or
// an fp8 tag (gtk::e4m3: decode orientation, enk weights, rowwise scales in the store).
template <typename T, int BM, int BN, int BK, int S, int KS, bool SW, bool WMN, typename TO = T>
__device__ __forceinline__ void grp_body(const gt_grouped_kargs_t &p) {
  namespace cg = cooperative_groups;
  constexpr bool F8 = grp_f8<TO>::value;
  static_assert(!F8 || (!SW && !WMN), "fp8 grouped: decode orientation, K-major weights only");
  constexpr int ES = F8 ? 1 : 2;  // bytes per operand element
  constexpr int BOX = 128 / ES;   // one 128-byte swizzle row of elements
  constexpr int NBOX = BK / BOX;  // boxes per slice along K
  constexpr int KSTEPS = BK * ES / 32;  // 32-byte K steps per slice (k16 bf16, k32 fp8)
  constexpr int NWG = SW ? BN / 64 : 1;  // consumer warpgroups
  constexpr int MB = SW ? 1 : BM / 64;   // m64 blocks of weight rows (decode)
  constexpr int R = SW ? BM / 2 : BN / 2;  // accumulator registers per thread per block
  constexpr uint32_t A_BOX = BM * BOX * ES, B_BOX = BN * BOX * ES;
  constexpr uint32_t A_BYTES = NBOX * A_BOX, STAGE = A_BYTES + NBOX * B_BOX;
  constexpr int RS = BM + 4;  // row stride of the fp32 partial tile (no bank conflicts)
  constexpr int KSTEP_A = WMN ? 2048 : 32;
  constexpr int PRODUCER = 4 * NWG;
  static_assert(BM % 64 == 0 && BM <= 256 && BK % BOX == 0 && KS >= 1 && KS <= 8, "grp tile");
  static_assert(SW ? (BN == 64 || BN == 128) && KS == 1 : BN % 8 == 0 && BN <= 64, "grp rows");
  static_assert((size_t)BN * RS * 4 <= (size_t)S * STAGE, "partial tile fits in the ring");

  extern __shared__ uint8_t grp_smem[];
  __shared__ __align__(8) uint64_t bars[2 * S];  // full[S], then empty[S]
  const gt_grouped_args_t &g = p.g;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  const uint32_t raw = smem_u32(grp_smem);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the host adds 1024 bytes of slack
  float *red = reinterpret_cast<float *>(grp_smem + (base - raw));
  const uint32_t full0 = smem_u32(&bars[0]), empty0 = smem_u32(&bars[S]);
  // The prologue that touches no operand runs before the dependent-launch wait, overlapping the
  // previous kernel's drain (the host launches with programmatic stream serialization): the
  // ring's barriers, and the tensor maps (kernel parameters) fetched into the descriptor cache.
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < S; s++) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, 128 * NWG);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (warp == PRODUCER && lane == 0) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&p.tma_w) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(&p.tma_x) : "memory");
  }
  // offs, the routed rows and the weights may be written by the kernels before this one
  // (torch's routing): nothing reads them, and nothing is stored, before the wait. Then the next
  // kernel in the stream may launch and run its own prologue while this one streams.
  pdl_wait();
  pdl_launch_dependents();
  const grp_slot sl = grp_cta_slot<BN>(g, blockIdx.x);
  // Past the last tile: the whole CTA leaves before any load. The CTAs of a cluster share the
  // slot, so they all leave (no cluster barrier is left waiting).
  if (sl.group < 0) return;
  const int grp = sl.group;
  const int n0 = (int)blockIdx.y * BM;
  const int r0 = (int)sl.r0;
  const int64_t kbeg = (int64_t)blockIdx.z * p.kchunk;
  const int64_t kend = kbeg + p.kchunk < g.k ? kbeg + p.kchunk : g.k;
  const int nk = kend > kbeg ? (int)((kend - kbeg + BK - 1) / BK) : 0;
  cg::cluster_group cluster = cg::this_cluster();

  float acc[MB][R];
#pragma unroll
  for (int mb = 0; mb < MB; mb++)
#pragma unroll
    for (int i = 0; i < R; i++) acc[mb][i] = 0.f;

  const int wgi = warp / 4;
  if (warp == PRODUCER) {
    if (lane == 0)
      grp_produce<BM, BN, BK, S, WMN, ES>(p, base, full0, empty0, grp, n0, r0, kbeg, nk);
  } else if constexpr (F8) {
    // Two partials where the registers allow (acc and both: at most 96 a thread).
    constexpr int NP = f8_promo<MB, R>::NP;
    static_assert(f8_promo<MB, R>::ok, "fp8 grouped tile: acc and its partials in registers");
    float part[NP][MB][R];
    f8_promo_zero(part);
    for (int it = 0; it < nk; it++) {
      const int s = it % S;
      grp_wait(full0 + 8 * s, (it / S) & 1);
      const uint32_t sa = base + s * STAGE;
      grp_f8_slice<TO, MB, R, BN, NBOX, NP, A_BOX, B_BOX>(acc, part, sa, sa + A_BYTES);
      mbar_arrive(empty0 + 8 * s);
    }
  } else {
    for (int it = 0; it < nk; it++) {
      const int s = it % S;
      grp_wait(full0 + 8 * s, (it / S) & 1);
      const uint32_t sa = base + s * STAGE, sb = sa + A_BYTES;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < KSTEPS; kk++) {
        const uint32_t ka = sa + (kk / 4) * A_BOX + (kk % 4) * KSTEP_A;
        const uint32_t kb = sb + (kk / 4) * B_BOX + (kk % 4) * 32;
        if constexpr (SW) {
          // This warpgroup's 64 routed rows (8192 bytes of K-major rows) times all BM weights.
          wgmma_ss<T, BM>::template mma<0, WMN>(acc[0], wg_desc(kb + wgi * 64 * 128),
                                                 WMN ? wg_desc_mn(ka) : wg_desc(ka));
        } else {
#pragma unroll
          for (int mb = 0; mb < MB; mb++) {
            const uint32_t w = ka + mb * 64 * 128;  // 64 rows: 8192 bytes in either layout
            wgmma_ss<T, BN>::template mma<WMN, 0>(acc[mb], WMN ? wg_desc_mn(w) : wg_desc(w),
                                                  wg_desc(kb));
          }
        }
      }
      wg_commit();
      wg_wait<1>();
      if (it > 0) mbar_arrive(empty0 + 8 * ((it - 1) % S));
    }
    wg_wait<0>();
#pragma unroll
    for (int mb = 0; mb < MB; mb++) wg_fence_acc(acc[mb]);
  }
  // The ring is idle (the consumers waited for every copy): reuse it for red[row][column].
  __syncthreads();
  if (warp < PRODUCER) {
    const int gq = lane >> 2, q = lane & 3, wq = warp & 3;
#pragma unroll
    for (int mb = 0; mb < MB; mb++)
#pragma unroll
      for (int i = 0; i < R; i++) {
        const int ar = wq * 16 + gq + 8 * ((i >> 1) & 1), ac = 8 * (i >> 2) + 2 * q + (i & 1);
        const int wrow = SW ? ac : mb * 64 + ar;      // weight row (output column) in the tile
        const int trow = SW ? wgi * 64 + ar : ac;     // routed row in the tile
        red[trow * RS + wrow] = acc[mb][i];
      }
  }
  if (KS > 1)
    cluster.sync();
  else
    __syncthreads();

  grp_store<T, BM, BN, KS, F8>(g, red, grp, n0, r0, sl.rend);
  // No CTA leaves while a peer may still read its partial.
  if (KS > 1) cluster.sync();
}

}  // namespace gtk
