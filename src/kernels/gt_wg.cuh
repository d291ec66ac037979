// Hopper decode/skinny family: TMA + wgmma, warp-specialized, split-K reduced inside a
// thread-block cluster. All four layouts: TN (the nn.Linear call) first; see "Layouts" below.
//
// A CTA owns BM weight rows (M) x BN tokens (N) and one split of K. One producer warp streams
// BK-wide K slices of the weight rows and of the tokens into an S-stage shared-memory ring with TMA
// (cp.async.bulk.tensor, 128-byte swizzle, completion counted on an mbarrier per stage); a slice is
// BK/64 boxes of 64 elements side by side along K, so each weight row is read in BK*2-byte runs.
// The bytes in flight per SM are the stages of the resident CTAs, independent of registers. One
// consumer warpgroup (or two, CW below) runs wgmma.mma_async on each slice straight from shared
// memory: m64nBNk16 per 64 weight rows (weight rows as M, tokens as N: a decode batch wastes at
// most 7 columns of one N tile), or one m64nBMk16 (the tokens as M, the weight rows as N: BN 64,
// and BN 8-32 with BM not a multiple of 64; see SW below). It keeps one slice's group of wgmma's in flight while it waits for the
// next, and returns each stage to the producer once its group is done. TMA zero-fills rows, tokens
// and K beyond the problem, so any M, N and K run with no predication in the main loop; the only
// alignment rule is TMA's (leading dimensions a multiple of 8 elements, A and B 16-byte aligned).
//
// Split-K without a workspace: the KS CTAs of a split are one cluster (1 x 1 x KS, KS <= 8).
// Each parks its fp32 partial tile in its own shared memory; after a cluster barrier, CTA r
// sums rows [r*R, (r+1)*R) of the tile, R = ceil(BM/KS), over ranks 0..KS-1 in that fixed
// order through distributed shared memory (deterministic), applies alpha/beta and writes D; a
// second barrier keeps every partial alive until it has been read. KS = 1 is the same code
// with a CTA barrier. An epilogue twin (EPI) applies the key's epilogue in that same step, so
// once per element, after the sum over the splits.
//
// Token multicast (CM > 1): the CM CTAs along M of a cluster (CM x 1 x KS) share one token tile and
// K split. Each loads BN/CM token rows per box with TMA multicast into the same offset of every
// peer's ring, so one L2 read of the tokens feeds CM SMs (cuBLAS's skinny kernel runs 4-CTA
// clusters and reads a quarter of our L2 hits). A peer writes into this CTA's ring, so a stage is
// free only when the consumers of all CM CTAs are done with it: each consumer warp arrives on the
// empty barrier of every CTA of its row group (remote mbarrier arrive), and the barrier counts 4
// warps x CW x CM (x CN with weight multicast too: then every CTA of the CM x CN cluster frees
// every stage, see wg_body). A CTA's full barrier may see a peer's bytes before its own
// expect_tx; the producer's own arrival keeps the phase open until then. A cluster barrier after
// the barrier init (no peer writes into an uninitialized ring) and one at the end (no CTA exits
// while a peer may still arrive on its barriers) frame the loop. The grid along M is a multiple
// of CM: a CTA past M loads zeros and stores nothing. Measured on the H200: no faster than the
// same tile without it (the token reads are not what limits these kernels); a few instances keep
// it gated.
//
// Two consumer warpgroups (CW = 2): the tile's weight rows are split between them (swapped:
// BM/2 rows each as wgmma's N; otherwise half of the m64 blocks each). Both read every stage and
// both release it (the empty barrier counts both). Each warpgroup's wgmma chain is half as long,
// and two chains from different warpgroups keep the tensor cores busier while one waits
// (cuBLAS's nvjet 112x64 kernel runs two consumer warpgroups too). Measured: 2-8% faster at
// 64 tokens where the grid fills the GPU, slower on small grids.
//
// Layouts (AMN, BMN). A TN call has both operands K-major: each weight row and each token is a
// run along K, read in boxes of 64 K x BM rows (BN tokens) and fed to wgmma K-major. NN and NT
// calls have the weights M-major (a run of output rows per k, e.g. x @ W with W stored
// [in, out], or the data gradient of nn.Linear); NT and TT have the tokens N-major. An
// M/N-major operand is read in boxes of 64 rows (or tokens) x 64 K: the box lands as 64 k-rows
// of 128 bytes, 128-byte swizzled like a K-major box, and wgmma reads it with its transpose bit
// set and an MN-major descriptor (8-k-row groups 1024 bytes apart, 64-wide M/N atoms one box,
// 8192 bytes, apart). So a k16 step moves 2048 bytes into the box instead of 32 bytes, and the
// m64 blocks (or a warpgroup's 64-row share of N) sit at the same offsets as in the K-major
// ring. M-major weights need BM (and a warpgroup's share) a multiple of 64; N-major tokens need
// the swapped orientation with BN 64 (one m64 tile of tokens) and no multicast.
//
// Programmatic dependent launch: before griddepcontrol.wait the producer only asks L2 to
// prefetch the first P 64-wide weight boxes of its range (cp.async.bulk.prefetch.tensor: nothing
// reaches the SM, and L2 is the point of coherence, so a line written later is never read
// stale); every operand load into shared memory and every store comes after the wait. With
// small rings several CTAs fit on an SM, so the next GEMM's CTAs can be resident and stream
// their first weights into L2 while this one drains.
#pragma once

#include <cooperative_groups.h>

#include "gt_kcommon.cuh"
#include "gt_wgmma.cuh"

namespace gtk {

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Blocks until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred P1;\n"
      "WG_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra WG_DONE;\n"
      "bra WG_WAIT;\n"
      "WG_DONE:\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// 2-D tiled TMA load of box (c0 = K, c1 = row) into shared memory, completing on mbarrier bar.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const void *tmap, uint32_t bar, int c0,
                                            int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same with an L2 eviction-priority hint (weights are read once: evict them first).
__device__ __forceinline__ void tma_load_2d_hint(uint32_t dst, const void *tmap, uint32_t bar,
                                                 int c0, int c1, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
      : "memory");
}
// The same, multicast to the CTAs of the cluster in `mask` (same shared offsets, and each
// destination's mbarrier at offset `bar` receives the bytes it got).
__device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const void *tmap, uint32_t bar, int c0,
                                               int c1, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}
// The same with the L2 eviction-priority hint (the weight multicast keeps the hint the one-CTA
// weight loads have).
__device__ __forceinline__ void tma_load_2d_mc_hint(uint32_t dst, const void *tmap, uint32_t bar,
                                                    int c0, int c1, uint16_t mask,
                                                    uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar), "h"(mask), "l"(policy)
      : "memory");
}
// Ranks N CTAs apart by STRIDE, from rank 0: the bits of one column of a CM x CN cluster
// (ranks are x-fastest, so the CTAs that own the same weight rows are cx + CM * j).
template <int N, int STRIDE> __device__ constexpr uint16_t rank_column_mask() {
  uint32_t m = 0;
  for (int j = 0; j < N; j++) m |= 1u << (j * STRIDE);
  return (uint16_t)m;
}
// The weight multicast's share of one K-major weight box (wg and wgf8, CN CTAs along N): CTA
// cy of the column loads rows [cy * BMS, (cy + 1) * BMS) of the box at (kx, row0), 128-byte
// swizzle rows, into the same offset of every peer's ring that owns those rows (the CTAs cx +
// CM * j of a CM x CN cluster), with the L2 hint when `hint`.
template <int CN, int BMS, int CM = 1>
__device__ __forceinline__ void wg_load_w_share(uint32_t box, const void *ta, uint32_t bar, int kx,
                                                int row0, unsigned cy, bool hint,
                                                uint64_t policy, unsigned cx = 0) {
  const uint32_t d = box + cy * BMS * 128;
  const int r = row0 + (int)cy * BMS;
  const uint16_t peers = (uint16_t)(rank_column_mask<CN, CM>() << cx);
  if (hint)
    tma_load_2d_mc_hint(d, ta, bar, kx, r, peers, policy);
  else
    tma_load_2d_mc(d, ta, bar, kx, r, peers);
}
// The token multicast's share of one K-major token box (wg and wgf8, CM CTAs along M): CTA cx of
// the row loads token rows [cx * BNS, (cx + 1) * BNS) of the box at (kx, tok0) into the same
// offset of the rings of the CM CTAs from rank `first` on.
template <int CM, int BNS>
__device__ __forceinline__ void wg_load_t_share(uint32_t box, const void *tb, uint32_t bar, int kx,
                                                int tok0, unsigned cx, unsigned first) {
  tma_load_2d_mc(box + cx * BNS * 128, tb, bar, kx, tok0 + (int)cx * BNS,
                 (uint16_t)(((1u << CM) - 1) << first));
}
// Arrive on the mbarrier at this CTA's shared offset `bar` in cluster CTA `rank`. Default
// semantics (release at CTA scope): the stage's reads were wgmma's, complete after
// wgmma.wait_group. A .release.cluster arrive put a cluster-scope fence (ERRBAR) before every
// arrive, and Nsight Compute found 47% of the stall samples on it (t80x64x256 c2, 64 tokens).
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t rank) {
  asm volatile(
      "{\n"
      ".reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n"
      "}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ void tma_prefetch_2d(const void *tmap, int c0, int c1) {
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];\n" ::"l"(tmap),
               "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}

// Shared-memory matrix descriptor of a K-major tile written by TMA with 128-byte swizzle: rows of
// 64 16-bit elements (128 bytes), 8-row groups 1024 bytes apart (stride byte offset), the leading
// byte offset unused for this layout. The tile must start 1024-byte aligned; a step of 16 along
// K adds 32 bytes to the start address (the hardware applies the swizzle to the final address).
__device__ __forceinline__ uint64_t wg_desc(uint32_t saddr) {
  return (uint64_t)((saddr & 0x3FFFFu) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
         ((uint64_t)1 << 62);
}

// The same for an M- or N-major tile written by TMA as 64-element boxes with 128-byte swizzle:
// each k is a 128-byte row of 64 consecutive M (or N) elements, 8-k-row groups 1024 bytes apart
// (stride byte offset), consecutive 64-element atoms along M/N 8192 bytes apart (leading byte
// offset: one 64 x 64 box). A step of 16 along K adds 2048 bytes.
__device__ __forceinline__ uint64_t wg_desc_mn(uint32_t saddr) {
  return (uint64_t)((saddr & 0x3FFFFu) >> 4) | ((uint64_t)(8192 >> 4) << 16) |
         ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads across the asynchronous wgmma's.
template <int R> __device__ __forceinline__ void wg_fence_acc(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// Where accumulator register i of m64 block mb sits in the tile, for lane (g = lane / 4, q =
// lane % 4) of warp wq in consumer warpgroup wgi: wgmma's layout puts it at accumulator row
// 16 wq + g + 8 ((i/2) % 2), column 8 (i/4) + 2 q + i % 2; swapped (SW) the weight rows are the
// accumulator's columns (WN per warpgroup), unswapped its rows (MB m64 blocks per warpgroup).
// row is the weight row in the tile, col the token.
template <bool SW, int MB, int WN>
__device__ __forceinline__ void wg_acc_pos(int mb, int i, int wgi, int wq, int g, int q, int &row,
                                           int &col) {
  const int ar = wq * 16 + g + 8 * ((i >> 1) & 1), ac = 8 * (i >> 2) + 2 * q + (i & 1);
  row = SW ? wgi * WN + ac : (wgi * MB + mb) * 64 + ar;
  col = SW ? ar : ac;
}

// fin of wg_body and wgp_body (16-bit D): the element's sum finished as D = alpha * sum + beta *
// C, then, in a twin, the key's epilogue with activation act (epilogue_apply_act).
template <typename T, bool EPI>
__device__ __forceinline__ auto wg_fin(const gt_kargs_t &a) {
  const uint16_t *C = static_cast<const uint16_t *>(a.C);
  return [&a, C](int64_t grow, int64_t, int64_t off, float sum, int act) {
    float v = a.alpha * sum;
    if (a.beta_nonzero) v += a.beta * T::to_f(C[off]);
    if constexpr (EPI) v = epilogue_apply_act<T>(a, grow, v, act);
    return v;
  };
}

// The store step of wg_body and wgf8_body without a split (KS = 1): each consumer thread stores
// its own accumulators acc[MB][R] (at wg_acc_pos), finished by fin(row, col, offset, sum, act)
// (act: the activation, epilogue_apply_act) and stored as T (storage S). No partial tile and no
// barrier: the indices are constants per register, a thread's tokens are two (SW) or its rows
// one per m64 block and register pair, where a loop through a partial tile spends index
// arithmetic on every element (a 224 x 64 tile is 90 elements per thread). wgp_body stores
// through it too. On an H100 this made the unsplit tiles 8% faster at 64 tokens than that loop
// (bench/results/experiments/wg_store_v3/).
//
// PRELOAD (the epilogue twins): elements are finished in chunks of up to 16, all of a chunk
// before its first store. Their fin reads memory (the bias, C when beta != 0), and a load after
// a store to D cannot be moved above it (D may alias them), nor out of the bounds check around
// it, so finishing and storing element by element waits for one load's latency per element:
// the bias twins' store cost 4% at 64 tokens, up to 13% on a row
// (bench/results/h100_20261206/kernels_bias/). With PRELOAD fin runs on indices clamped into the
// problem (every load in bounds, no branch; an element outside is not stored), so a chunk waits
// once; chunks and not the whole tile, because the largest tiles (224-256 weight rows, 128
// accumulators a thread) would spill holding a loaded value per accumulator. The plain instances
// keep one pass (their machine code as it was): with beta = 0 their fin reads nothing.
template <typename T, typename S, int MB, int R, int BN, bool SW, int WN, bool PRELOAD = false,
          typename Fin>
__device__ __forceinline__ void wg_store_regs(const gt_kargs_t &a, const float (&acc)[MB][R],
                                              int warp, int lane, int64_t row0, int64_t tok0,
                                              Fin fin) {
  S *D = static_cast<S *>(a.D);
  const int g = lane >> 2, q = lane & 3, wq = warp & 3, wgi = warp / 4;
  // Swapped, a 16-bit D: registers i and i + 1 hold weight rows 2k and 2k + 1 of one token,
  // adjacent in D (rows are its contiguous dimension), so they leave as one 4-byte store when
  // every such pair is 4-byte aligned (row0 and the tile's columns are even, so: an even ldc and
  // D itself aligned). Half the store instructions of the element loop.
  constexpr bool PAIRS = SW && sizeof(S) == 2;
  if constexpr (!PRELOAD) {
    // One pass, each element finished as it is stored.
    if constexpr (PAIRS) {
      const bool pairs = (a.ldc & 1) == 0 && (reinterpret_cast<uintptr_t>(D) & 3) == 0;
#pragma unroll
      for (int i = 0; i < R; i += 2) {
        int row, col;
        wg_acc_pos<SW, MB, WN>(0, i, wgi, wq, g, q, row, col);
        const int64_t grow = row0 + row, gcol = tok0 + col;
        if (col >= BN || grow >= a.m || gcol >= a.n) continue;
        const int64_t off = grow + gcol * a.ldc;
        const S lo = T::from_f(fin(grow, gcol, off, acc[0][i], 0));
        if (grow + 1 >= a.m) {
          D[off] = lo;
          continue;
        }
        const S hi = T::from_f(fin(grow + 1, gcol, off + 1, acc[0][i + 1], 0));
        if (pairs) {
          *reinterpret_cast<uint32_t *>(D + off) = (uint32_t)lo | ((uint32_t)hi << 16);
        } else {
          D[off] = lo;
          D[off + 1] = hi;
        }
      }
    } else {
#pragma unroll
      for (int mb = 0; mb < MB; mb++)
#pragma unroll
        for (int i = 0; i < R; i++) {
          int row, col;
          wg_acc_pos<SW, MB, WN>(mb, i, wgi, wq, g, q, row, col);
          const int64_t grow = row0 + row, gcol = tok0 + col;
          if (col >= BN || grow >= a.m || gcol >= a.n) continue;
          const int64_t off = grow + gcol * a.ldc;
          D[off] = T::from_f(fin(grow, gcol, off, acc[mb][i], 0));
        }
    }
  } else {
    // PRELOAD: chunks of CH elements (e = mb * R + i), all of a chunk finished, then stored.
    constexpr int NE = MB * R, CH = NE > 16 ? 16 : NE;
    const bool pairs = PAIRS && (a.ldc & 1) == 0 && (reinterpret_cast<uintptr_t>(D) & 3) == 0;
    auto store_all = [&](const int act) {
#pragma unroll
      for (int c0 = 0; c0 < NE; c0 += CH) {
        float v[CH];
#pragma unroll
        for (int j = 0; j < CH; j++) {
          const int e = c0 + j;
          if (e >= NE) break;
          int row, col;
          wg_acc_pos<SW, MB, WN>(e / R, e % R, wgi, wq, g, q, row, col);
          const int64_t gr = row0 + row < a.m ? row0 + row : a.m - 1;
          const int64_t gc = tok0 + col < a.n ? tok0 + col : a.n - 1;
          v[j] = fin(gr, gc, gr + gc * a.ldc, acc[e / R][e % R], act);
        }
#pragma unroll
        for (int e = c0; e < c0 + CH && e < NE; e += PAIRS ? 2 : 1) {
          int row, col;
          wg_acc_pos<SW, MB, WN>(e / R, e % R, wgi, wq, g, q, row, col);
          const int64_t grow = row0 + row, gcol = tok0 + col;
          if (col >= BN || grow >= a.m || gcol >= a.n) continue;
          const int64_t off = grow + gcol * a.ldc;
          const S lo = T::from_f(v[e - c0]);
          if (!PAIRS || grow + 1 >= a.m) {
            D[off] = lo;
            continue;
          }
          const S hi = T::from_f(v[e + 1 - c0]);
          if (pairs) {
            *reinterpret_cast<uint32_t *>(D + off) = (uint32_t)lo | ((uint32_t)hi << 16);
          } else {
            D[off] = lo;
            D[off + 1] = hi;
          }
        }
      }
    };
    epilogue_by_act(a, store_all);
  }
}

// A split's consumer thread parks its accumulators (at wg_acc_pos) in the fp32 partial tile
// red[token][row] (row stride RS) that wg_store_tile sums: wg_body's and wgf8_body's split step.
template <int MB, int R, int BN, bool SW, int WN, int RS>
__device__ __forceinline__ void wg_park_partial(float *red, const float (&acc)[MB][R], int warp,
                                                int lane) {
  const int g = lane >> 2, q = lane & 3, wq = warp & 3, wgi = warp / 4;
#pragma unroll
  for (int mb = 0; mb < MB; mb++)
#pragma unroll
    for (int i = 0; i < R; i++) {
      int row, col;  // weight row and token in the tile
      wg_acc_pos<SW, MB, WN>(mb, i, wgi, wq, g, q, row, col);
      if (col < BN) red[col * RS + row] = acc[mb][i];
    }
}

// The store step of wg_body and wgf8_body: this cluster rank's rows of the tile, each element
// the sum of the KS partial tiles parts[0..KS-1] (fp32, red[token][row], row stride RS; in that
// order, so the result is the same bits as a rolled loop's), finished by fin(row, col, offset,
// sum, act) and stored as T (storage S). Consecutive threads take consecutive rows of one token,
// so D (column-major) is written in contiguous runs.
//
// In batches of U elements per thread: every load of a batch (the partials, from peers' shared
// memory when KS > 1; C, the bias and fp8 scales in fin) is issued before any of its values is
// used, and every store after all of them, so a thread waits for memory once a batch instead of
// once an element. A rolled loop waits once an element, and with one CTA of 5 warps on an SM
// nothing hides that: at 64 tokens a 64-row tile is 4096 elements, 26 per thread, each waiting
// for a shared (or distributed shared) load and, in fp8, two scale loads in a row.
//
// TWIN (the epilogue twins): fin runs on indices clamped into the problem, with no branch around
// its loads, and a bias-only key runs a copy of the loop in which the activation is a constant 0
// (no ReLU or GELU per element), as wg_store_regs' PRELOAD path.
template <typename T, typename S, int BM, int BN, int KS, int RS, int NT, bool TWIN = false,
          typename Fin>
__device__ __forceinline__ void wg_store_tile(const gt_kargs_t &a, const float *const (&parts)[KS],
                                              int rank, int64_t row0, int64_t tok0, Fin fin) {
  constexpr int RROWS = (BM + KS - 1) / KS, NE = RROWS * BN, U = 4;
  S *D = static_cast<S *>(a.D);
  auto store_all = [&](const int act) {
    for (int e0 = (int)threadIdx.x; e0 < NE; e0 += U * NT) {
      float v[U];
      int64_t grow[U], gcol[U];
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        const int e = e0 + u * NT;
        const int row = rank * RROWS + e % RROWS, col = e / RROWS;
        grow[u] = row0 + row;
        gcol[u] = tok0 + col;
        ok[u] = e < NE && row < BM && grow[u] < a.m && gcol[u] < a.n;
        float sum = 0.f;
        if (ok[u]) {
#pragma unroll
          for (int src = 0; src < KS; src++) sum += parts[src][col * RS + row];
        }
        v[u] = sum;
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        if constexpr (TWIN) {
          const int64_t gr = grow[u] < a.m ? grow[u] : a.m - 1;
          const int64_t gc = gcol[u] < a.n ? gcol[u] : a.n - 1;
          v[u] = fin(gr, gc, gr + gc * a.ldc, v[u], act);
        } else if (ok[u]) {
          v[u] = fin(grow[u], gcol[u], grow[u] + gcol[u] * a.ldc, v[u], act);
        }
      }
#pragma unroll
      for (int u = 0; u < U; u++)
        if (ok[u]) D[grow[u] + gcol[u] * a.ldc] = T::from_f(v[u]);
    }
  };
  if constexpr (TWIN)
    epilogue_by_act(a, store_all);
  else
    store_all(a.epilogue >> 1);
}

// A consumer warpgroup's share of a BM x BN tile with CW consumer warpgroups (wg_body's,
// wgf8_body's and the persistent bodies'): WN weight rows as wgmma's N when swapped (SW), else
// MB m64 blocks of them; R accumulator registers a thread per block.
template <int BM, int BN, bool SW, int CW> struct wg_shape {
  static constexpr int WN = SW ? BM / CW : 0;
  static constexpr int MB = SW ? 1 : BM / 64 / CW;
  static constexpr int R = SW ? WN / 2 : BN / 2;
};

// EPI: the epilogue twin (the thread that writes an element of D applies the key's epilogue to
// it, after the cluster's split-K sum); false is the plain instance. CN > 1: weight multicast
// across CN token tiles (K-major weights, no split; as wgf8_body's, see gt_wgf8.cuh). With CM > 1
// too the cluster is CM x CN x 1: the CTAs of a row (same token tile) share the tokens, those of
// a column (same weight rows) the weights, and every stage is freed by all CM x CN CTAs.
template <typename T, int BM, int BN, int BK, int S, int KS, int P, bool SW, int CM, int CW,
          bool AMN, bool BMN, bool EPI = false, int CN = 1>
__device__ __forceinline__ void wg_body(const gt_kargs_t &a) {
  namespace cg = cooperative_groups;
  constexpr int BOX = 64;                // one 128-byte swizzle row of 16-bit elements
  constexpr int NBOX = BK / BOX;         // boxes per slice along K
  // Orientation. Weight rows are wgmma's M (BM/64 blocks of m64) and tokens its N, unless SW:
  // then the roles swap, the tokens are M (one m64 tile, rows past BN unused) and the BM weight
  // rows are N (one m64nBMk16 per k16 step). gen_instances.py decides SW (BN 64, or BN 8, 16
  // or 32 with BM not a multiple of 64) and sizes the ring from it. N only has to be a multiple
  // of 8, so a swapped tile can have as many weight rows as make the grid match the SM count
  // (10240 rows / 80 = 128 CTAs): one wave of equal CTAs beats a grid of m64 blocks that leaves
  // part of a second wave (the MMA's unused token rows cost no memory traffic).
  static_assert(CW == 1 || CW == 2, "one or two consumer warpgroups");
  using shape = wg_shape<BM, BN, SW, CW>;
  constexpr int WN = shape::WN, MB = shape::MB, R = shape::R;
  constexpr int BR = SW ? 64 : BN;         // token rows of a B box in shared memory
  constexpr uint32_t A_BOX = BM * BOX * 2, B_BOX = BR * BOX * 2, B_LOAD = BN * BOX * 2;
  constexpr uint32_t A_BYTES = NBOX * A_BOX, B_BYTES = NBOX * B_BOX, STAGE = A_BYTES + B_BYTES;
  constexpr int RS = BM + 4;             // row stride of the fp32 partial tile (no bank conflicts)
  static_assert((SW ? BM % 8 == 0 && BM <= 256 && BN <= 64 : BM % 64 == 0) && BN % 8 == 0 &&
                    BK % BOX == 0 && KS >= 1 && KS <= 8,
                "wg tile");
  static_assert((size_t)BN * RS * 4 <= (size_t)S * STAGE, "partial tile fits in the ring");
  // Multicast: each CTA of the row group loads BNS token rows, a whole number of the swizzle's
  // 8-row (1024-byte) groups, so every sub-box lands in the pattern the full box would have.
  constexpr int BNS = BN / CM;
  static_assert(CM >= 1 && CM * KS <= 8 && BN % CM == 0 && BNS % 8 == 0, "wg multicast");
  constexpr int BMS = BM / CN;  // weight rows each CTA of a weight-multicast cluster loads
  static_assert(CN >= 1 && CN <= 4 && BM % CN == 0 && BMS % 8 == 0 &&
                    (CN == 1 || (KS == 1 && !AMN && CM * CN <= 8)),
                "wg weight multicast");
  constexpr int CX = CM * CN;  // CTAs of a multicast cluster
  // A warpgroup's share of the rows starts on an 8-row (1024-byte) swizzle group.
  static_assert(SW ? WN % 8 == 0 : (BM / 64) % CW == 0, "wg consumer split");
  constexpr int PRODUCER = 4 * CW;  // warp index of the producer warp
  // Layouts (see the top of the file): 64 x 64 boxes for an M-major weight or N-major token tile.
  static_assert(!AMN || (BM % 64 == 0 && (!SW || WN % 64 == 0)), "wg M-major weights");
  static_assert(!BMN || (SW && BN == 64 && CM == 1), "wg N-major tokens");
  constexpr int MBOX = 64 * BOX * 2;  // bytes of one 64 x 64 box
  constexpr int KSTEP_A = AMN ? 2048 : 32, KSTEP_B = BMN ? 2048 : 32;  // bytes per k16 step

  extern __shared__ uint8_t wg_smem[];
  __shared__ __align__(8) uint64_t bars[2 * S];  // full[S], then empty[S]
  const uint32_t raw = smem_u32(wg_smem);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the provider adds 1024 bytes of slack
  float *red = reinterpret_cast<float *>(wg_smem + (base - raw));
  const uint32_t full0 = smem_u32(&bars[0]), empty0 = smem_u32(&bars[S]);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int row0 = (int)blockIdx.x * BM, tok0 = (int)blockIdx.y * BN;
  const krange kr = split_range(a);
  const int nk = kr.end > kr.beg ? (int)((kr.end - kr.beg + BK - 1) / BK) : 0;
  // Every slice is BK wide. Splits start at multiples of BK (the provider rounds kchunk to the
  // tile), so only the last split can end inside a slice, and it ends at K: the part of that
  // slice past K, whole boxes included, is outside the tensor and TMA fills it with zeros. So
  // every slice loads all its boxes and runs all BK/16 wgmma steps; no branch depends on the
  // data, which would make ptxas serialize the wgmma's (warning C7520).

  // Cluster position: x (0..CM-1) along M in the row group, y (0..CN-1) along N, z the split.
  // Ranks are x-fastest.
  const uint32_t my_rank = CM * KS * CN > 1 ? cluster_ctarank() : 0;
  const uint32_t cy = CN > 1 ? my_rank / CM : 0;  // weight multicast: this CTA's share of the rows
  const uint32_t cx = CM > 1 ? blockIdx.x % CM : 0;
  // Rank of the first CTA of the CTAs that free each other's stages: x = 0 of the row group of
  // this split; with weight multicast (no split) the whole cluster: 0.
  const uint32_t group0 = my_rank - cx - CM * cy;
  cg::cluster_group cluster = cg::this_cluster();

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

  const int wgi = warp / 4;  // consumer warpgroup (CW = 2: which half of the rows)
  if (warp == PRODUCER) {
    // Producer warp: one lane issues every copy.
    if (lane == 0) {
      const void *ta = &a.tma_a, *tb = &a.tma_b;
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(ta) : "memory");
      const int nbox = (int)((kr.end - kr.beg + BOX - 1) / BOX) * (kr.end > kr.beg);
      for (int i = 0; i < nbox && i < P; i++) {
        if constexpr (AMN) {
#pragma unroll
          for (int j = 0; j < BM / 64; j++) tma_prefetch_2d(ta, row0 + j * 64, (int)(kr.beg + i * BOX));
        } else {
          tma_prefetch_2d(ta, (int)(kr.beg + i * BOX), row0 + (int)cy * BMS);
        }
      }
      pdl_wait();
      pdl_launch_dependents();
      const uint64_t evict_first = l2_evict_first_policy();
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(tb) : "memory");
      for (int it = 0; it < nk; it++) {
        const int s = it % S;
        if (it >= S) mbar_wait(empty0 + 8 * s, ((it / S) & 1) ^ 1);
        const uint32_t dst = base + s * STAGE, bar = full0 + 8 * s;
        const int kc = (int)(kr.beg + (int64_t)it * BK);
        mbar_expect_tx(bar, NBOX * (A_BOX + B_LOAD));
        // One weight box at box coordinates (c0, c1), with the evict-first hint unless diagnosing.
        auto load_w = [&](uint32_t d, int c0, int c1) {
          if (a.evict_first)
            tma_load_2d_hint(d, ta, bar, c0, c1, evict_first);
          else
            tma_load_2d(d, ta, bar, c0, c1);
        };
#pragma unroll
        for (int b = 0; b < NBOX; b++) {
          if constexpr (AMN) {
            // M-major weights: BM/64 boxes of 64 rows x 64 K, one after the other.
#pragma unroll
            for (int j = 0; j < BM / 64; j++)
              load_w(dst + b * A_BOX + j * MBOX, row0 + j * 64, kc + b * BOX);
          } else if constexpr (CN > 1) {
            wg_load_w_share<CN, BMS, CM>(dst + b * A_BOX, ta, bar, kc + b * BOX, row0, cy,
                                         a.evict_first, evict_first, cx);
          } else {
            load_w(dst + b * A_BOX, kc + b * BOX, row0);
          }
          if constexpr (BMN)
            tma_load_2d(dst + A_BYTES + b * B_BOX, tb, bar, tok0, kc + b * BOX);
          else if constexpr (CM > 1)
            wg_load_t_share<CM, BNS>(dst + A_BYTES + b * B_BOX, tb, bar, kc + b * BOX, tok0, cx,
                                     group0 + CM * cy);
          else
            tma_load_2d(dst + A_BYTES + b * B_BOX, tb, bar, kc + b * BOX, tok0);
        }
      }
    } else {
      pdl_wait();
    }
  } else {
    // Consumer warpgroup.
    pdl_wait();
    for (int it = 0; it < nk; it++) {
      const int s = it % S;
      mbar_wait(full0 + 8 * s, (it / S) & 1);
      const uint32_t sa = base + s * STAGE, sb = sa + A_BYTES;
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 16; kk++) {
        const uint32_t ka = sa + (kk / 4) * A_BOX + (kk % 4) * KSTEP_A;
        const uint32_t kb = sb + (kk / 4) * B_BOX + (kk % 4) * KSTEP_B;
        // A warpgroup's rows start at the same offset in either weight layout: 128 bytes per
        // K-major row, 8192 bytes per M-major 64-row box.
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
      }
      wg_commit();
      // Keep this slice's wgmma's in flight while waiting for the next slice; the previous
      // slice's group is complete after this wait, so its stage goes back to the producer.
      wg_wait<1>();
      if (it > 0) {
        if constexpr (CX > 1) {
          // Lane l of each warp frees the stage in CTA l of the row group (itself included;
          // with weight multicast, of the cluster).
          if (lane < CX) mbar_arrive_remote(empty0 + 8 * ((it - 1) % S), group0 + lane);
        } else {
          mbar_arrive(empty0 + 8 * ((it - 1) % S));
        }
      }
    }
    wg_wait<0>();
#pragma unroll
    for (int mb = 0; mb < MB; mb++) wg_fence_acc(acc[mb]);
  }
  const auto fin = wg_fin<T, EPI>(a);
  if constexpr (KS == 1) {
    // One split: the consumers store from their registers (wg_store_regs); the producer warp
    // has nothing left to do. No CTA leaves while a peer may still arrive on its barriers.
    if (warp < PRODUCER)
      wg_store_regs<T, uint16_t, MB, R, BN, SW, WN, EPI>(a, acc, warp, lane, row0, tok0, fin);
    if constexpr (CX > 1) cluster.sync();
    return;
  }
  // Every issued copy was waited for by the consumers, so the ring is idle: reuse it for the
  // fp32 partial tile red[token][row].
  __syncthreads();
  if (warp < PRODUCER) wg_park_partial<MB, R, BN, SW, WN, RS>(red, acc, warp, lane);
  if (KS > 1)
    cluster.sync();
  else
    __syncthreads();

  const int rank = KS > 1 ? (int)blockIdx.z : 0;  // the split; the cluster spans all KS of them
  const float *parts[KS];
#pragma unroll
  for (int src = 0; src < KS; src++)
    parts[src] = KS > 1 ? cluster.map_shared_rank(red, (unsigned)(cx + src * CM)) : red;
  wg_store_tile<T, uint16_t, BM, BN, KS, RS, 128 * CW + 32, EPI>(a, parts, rank, row0, tok0,
                                                                 fin);
  // No CTA leaves while a peer may still read its partial or arrive on its barriers.
  if (KS > 1 || CM > 1) cluster.sync();
}

}  // namespace gtk
