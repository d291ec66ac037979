// Tensor-core decode/skinny family (TN only). mma.sync m16n8k16 with the operands swapped
// relative to the textbook use: 16 weight rows fill M and 8 tokens fill N, so a decode batch of
// 1..64 tokens wastes at most 7 columns of one N tile instead of 15 rows of an M tile.
//
// No shared memory on the operand path. Lane (g = lane/4, q = lane%4) loads 16 bytes (8 k
// values) of weight rows g and g+8 and of token g at the same 8 k positions; since a dot product
// does not care in which order k is summed, those 8 values feed two mma's directly in registers:
// physical k 0..3 of every lane form the first m16n8k16 (logical k 2q,2q+1 <- physical 0,1 and
// 8+2q,8+2q+1 <- physical 2,3), physical 4..7 the second. The same permutation applies to both
// operands, so the products pair up correctly and each weight byte is loaded exactly once.
//
// A CTA owns WM*MR*16 rows and one tokens tile; its WK warps split the CTA's K range. With
// S == 2 the next batch of loads is issued before the current batch is multiplied (register
// double buffering), keeping more bytes in flight per warp. S == 3 adds a third stage in L2:
// the CTA's weight rows are bulk-prefetched (cp.async.bulk.prefetch.L2) about 32 KB ahead of the
// register loads, so the bytes in flight per SM no longer depend on registers and occupancy,
// and the first batches are prefetched before pdl_wait(), overlapping the previous kernel's
// tail. PF > 0 (S 1 or 2 only) prefetches the first PF KB of each of the CTA's weight rows into
// L2 before pdl_wait() and nothing after it: the register pipeline is left as it is, only the
// start of the CTA's stream overlaps the previous kernel. Warp partials meet in shared memory
// and are summed in fixed warp order.
#pragma once

#include "gt_kcommon.cuh"

namespace gtk {

// The streaming loads take 16-bit element pointers; a lane's 16 bytes are the same bytes
// whatever the element type.
template <typename E> __device__ __forceinline__ const uint16_t *u16p(const E *p) {
  return reinterpret_cast<const uint16_t *>(p);
}

// The operands of decodetc_core: 16-bit elements (bf16, f16: eight per 16-byte lane load, two
// mma.sync m16n8k16 per load). The fp8 operands of the dtf8 family are gt_dtf8.cuh's.
template <typename T> struct dtc16 {
  using E = uint16_t;           // element storage
  static constexpr int VE = 8;  // elements per 16-byte load
  static constexpr bool PROMO = false;  // 16-bit products: the accumulator is fp32
  static __device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                             uint32_t a3, uint32_t b0, uint32_t b1) {
    T::mma(c, a0, a1, a2, a3, b0, b1);
  }
  static __device__ __forceinline__ vec<8> tail(const E *p, int64_t valid) {
    return ld_tail<8>(p, valid);
  }
  template <bool EPI>
  static __device__ __forceinline__ void store(const gt_kargs_t &a, int64_t row, int64_t col,
                                               float acc) {
    store_out<T, EPI>(a, row, col, acc);
  }
};

// OP: the operand traits (dtc16<T>, or gt_dtf8.cuh's fp8 ones): element storage E, VE elements
// per 16-byte lane load, the mma on two 32-bit words of each, the K tail's load and the final
// store, and PROMO: whether the accumulator must be promoted where the key asks (fp8's
// f8_promote: each lane's batch of KU x 64 elements of K is summed into a fresh fragment and
// added to the fp32 sum: Hopper's fp8 wgmma keeps fewer bits than fp32, mma.sync's width is not
// measured here). Every offset below is in elements, so with 16-bit elements the code is the one
// the bf16 and f16 instances always had. EPI: the epilogue twin (the store applies the key's
// epilogue); false is the plain instance.
template <typename OP, int NT, int MR, int WM, int WK, int KU, int S, int PF, bool EPI>
__device__ __forceinline__ void decodetc_core(const gt_kargs_t &a) {
  using E = typename OP::E;
  constexpr int VE = OP::VE;
  static_assert(NT % 8 == 0, "tokens tile is a multiple of the mma N (8)");
  static_assert(S >= 1 && S <= 3, "1 or 2 register stages, 3: 2 plus an L2 prefetch stage");
  static_assert(PF >= 0 && (PF == 0 || S < 3), "a pre-wait prefetch only without the L2 stage");
  constexpr int NB = NT / 8;           // n8 tiles
  constexpr int ROWS = WM * MR * 16;   // rows per CTA
  constexpr int RS = ROWS + 4;         // padded row stride of the reduction buffer (no conflicts)
  constexpr int GK = 4 * VE * KU;      // K per batch (four lanes of VE elements, KU times)
  constexpr int THREADS = WM * WK * 32;
  extern __shared__ float red[];       // [WK][NT][RS]

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp % WM, wk = warp / WM;
  const int g = lane >> 2, q = lane & 3;
  const int64_t m = a.m, n = a.n;
  const int64_t cta_row0 = (int64_t)blockIdx.x * ROWS;
  const int64_t tok0 = (int64_t)blockIdx.y * NT;
  const krange kr = split_range(a);
  const E *A = static_cast<const E *>(a.A);
  const E *B = static_cast<const E *>(a.B);

  // Out-of-range rows and tokens are clamped (loads stay in bounds, results are dropped).
  const E *wp[MR][2];
  const E *xp[NB];
#pragma unroll
  for (int mt = 0; mt < MR; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      int64_t row = cta_row0 + wm * MR * 16 + mt * 16 + h * 8 + g;
      row = row < m ? row : m - 1;
      wp[mt][h] = A + row * a.lda + q * VE;
    }
#pragma unroll
  for (int nb = 0; nb < NB; nb++) {
    int64_t tok = tok0 + nb * 8 + g;
    tok = tok < n ? tok : n - 1;
    xp[nb] = B + tok * a.ldb + q * VE;
  }

  float acc[MR][NB][4];
#pragma unroll
  for (int mt = 0; mt < MR; mt++)
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
      for (int i = 0; i < 4; i++) acc[mt][nb][i] = 0.f;

  struct batch {
    vec<8> w[KU][MR][2];
    vec<8> x[KU][NB];
  };
  auto load = [&](batch &b, int64_t k0) {
#pragma unroll
    for (int u = 0; u < KU; u++)
#pragma unroll
      for (int mt = 0; mt < MR; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) b.w[u][mt][h] = ld_stream<8>(u16p(wp[mt][h] + k0 + u * 4 * VE));
#pragma unroll
    for (int u = 0; u < KU; u++)
#pragma unroll
      for (int nb = 0; nb < NB; nb++) b.x[u][nb] = ld_keep<8>(u16p(xp[nb] + k0 + u * 4 * VE));
  };
  auto mma2 = [&](float (&c)[4], const vec<8> &w0, const vec<8> &w1, const vec<8> &x) {
    OP::mma(c, w0.w[0], w1.w[0], w0.w[1], w1.w[1], x.w[0], x.w[1]);
    OP::mma(c, w0.w[2], w1.w[2], w0.w[3], w1.w[3], x.w[2], x.w[3]);
  };
  const bool promote = OP::PROMO && a.f8_promote;
  auto compute = [&](const batch &b) {
    if (promote) {
#pragma unroll
      for (int mt = 0; mt < MR; mt++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) {
          float f[4] = {0.f, 0.f, 0.f, 0.f};  // the batch's fragment
#pragma unroll
          for (int u = 0; u < KU; u++) mma2(f, b.w[u][mt][0], b.w[u][mt][1], b.x[u][nb]);
#pragma unroll
          for (int i = 0; i < 4; i++) acc[mt][nb][i] += f[i];
        }
      return;
    }
#pragma unroll
    for (int u = 0; u < KU; u++)
#pragma unroll
      for (int mt = 0; mt < MR; mt++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) mma2(acc[mt][nb], b.w[u][mt][0], b.w[u][mt][1], b.x[u][nb]);
  };

  const int64_t len = kr.end - kr.beg;
  const int64_t nfull = len / GK;

  // L2 stage (S == 3): CTA step j covers K [beg + j*CK, beg + (j+1)*CK) of every row, CK = WK*GK
  // (warp wk's j-th batch is batch wk + j*WK). Each warp prefetches step j + PFD of the rows
  // i = wk, wk + WK, ... of its row group while it works on step j.
  constexpr int CK = WK * GK;
  constexpr int PF_STEP_BYTES = CK * (int)sizeof(E) * ROWS;
  constexpr int PFD = PF_STEP_BYTES >= 32768 ? 1 : 32768 / PF_STEP_BYTES;
  auto prefetch_step = [&](int64_t j) {
    const int64_t k0 = kr.beg + j * CK;
    if (k0 >= kr.end) return;
    const int64_t left = kr.end - k0;
    const uint32_t bytes = (uint32_t)((left < CK ? left : CK) * (int64_t)sizeof(E)) & ~15u;
    if (bytes == 0) return;
    for (int i = wk + lane * WK; i < MR * 16; i += 32 * WK) {
      const int64_t row = cta_row0 + wm * MR * 16 + i;
      if (row < m) prefetch_l2(A + row * a.lda + k0, bytes);
    }
  };
  if constexpr (S == 3) {
#pragma unroll 1
    for (int j = 0; j < PFD; j++) prefetch_step(j);
  }
  if constexpr (PF > 0) {
    // One bulk prefetch per row, from the start of the CTA's K range.
    const int64_t left = kr.end - kr.beg;
    constexpr int PFE = PF * 1024 / (int)sizeof(E);  // PF KB in elements
    const uint32_t bytes =
        (uint32_t)((left < PFE ? left : (int64_t)PFE) * (int64_t)sizeof(E)) & ~15u;
    if (bytes > 0)
      for (int i = threadIdx.x; i < ROWS; i += THREADS) {
        const int64_t row = cta_row0 + i;
        if (row < m) prefetch_l2(A + row * a.lda + kr.beg, bytes);
      }
  }
  pdl_wait();
  pdl_launch_dependents();

  if constexpr (S == 1) {
    for (int64_t gi = wk; gi < nfull; gi += WK) {
      batch b;
      load(b, kr.beg + gi * GK);
      compute(b);
    }
  } else {
    // Two named buffers and a loop unrolled by two keep every register index compile-time.
    batch b0, b1;
    int64_t gi = wk, j = 0;
    if (gi < nfull) load(b0, kr.beg + gi * GK);
    while (gi < nfull) {
      if constexpr (S == 3) prefetch_step(++j + PFD - 1);
      int64_t gn = gi + WK;
      if (gn < nfull) load(b1, kr.beg + gn * GK);
      compute(b0);
      gi = gn;
      if (gi >= nfull) break;
      if constexpr (S == 3) prefetch_step(++j + PFD - 1);
      gn = gi + WK;
      if (gn < nfull) load(b0, kr.beg + gn * GK);
      compute(b1);
      gi = gn;
    }
  }
  // The rest of the range (less than one batch) in chunks of four lanes' vectors; only the
  // last vector of the range can be partial.
  for (int64_t c = kr.beg + nfull * GK + (int64_t)wk * 4 * VE; c < kr.end;
       c += (int64_t)WK * 4 * VE) {
    const int64_t valid = kr.end - (c + q * VE);
    vec<8> w[MR][2], x[NB];
    if (valid >= VE) {
#pragma unroll
      for (int mt = 0; mt < MR; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) w[mt][h] = ld_stream<8>(u16p(wp[mt][h] + c));
#pragma unroll
      for (int nb = 0; nb < NB; nb++) x[nb] = ld_keep<8>(u16p(xp[nb] + c));
    } else {
#pragma unroll
      for (int mt = 0; mt < MR; mt++)
#pragma unroll
        for (int h = 0; h < 2; h++) w[mt][h] = OP::tail(wp[mt][h] + c, valid);
#pragma unroll
      for (int nb = 0; nb < NB; nb++) x[nb] = OP::tail(xp[nb] + c, valid);
    }
#pragma unroll
    for (int mt = 0; mt < MR; mt++)
#pragma unroll
      for (int nb = 0; nb < NB; nb++) {
        if (promote) {
          float f[4] = {0.f, 0.f, 0.f, 0.f};
          mma2(f, w[mt][0], w[mt][1], x[nb]);
#pragma unroll
          for (int i = 0; i < 4; i++) acc[mt][nb][i] += f[i];
        } else {
          mma2(acc[mt][nb], w[mt][0], w[mt][1], x[nb]);
        }
      }
  }

  // Accumulator element i of tile (mt, nb) is row g (+8 for i >= 2), token 2q (+1 for odd i).
#pragma unroll
  for (int mt = 0; mt < MR; mt++)
#pragma unroll
    for (int nb = 0; nb < NB; nb++)
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const int row_l = wm * MR * 16 + mt * 16 + g + (i >> 1) * 8;
        const int tok_l = nb * 8 + q * 2 + (i & 1);
        red[(wk * NT + tok_l) * RS + row_l] = acc[mt][nb][i];
      }
  __syncthreads();
  // Consecutive threads take consecutive rows of one token: D (column-major) is written in
  // contiguous runs.
  auto store_elem = [&](int e) {
    const int tok_l = e / ROWS, row_l = e % ROWS;
    const int64_t row = cta_row0 + row_l, tok = tok0 + tok_l;
    if (row < m && tok < n) {
      float s = 0.f;
#pragma unroll
      for (int w = 0; w < WK; w++) s += red[(w * NT + tok_l) * RS + row_l];
      OP::template store<EPI>(a, row, tok, s);
    }
  };
  if constexpr (EPI) {
    // Unrolled by two as the compiler unrolls the plain loop: left to itself it keeps the
    // twin's longer loop rolled, and ptxas then gives the s3 twins 18-26 more registers.
#pragma unroll 2
    for (int e = threadIdx.x; e < NT * ROWS; e += THREADS) store_elem(e);
  } else {
    for (int e = threadIdx.x; e < NT * ROWS; e += THREADS) store_elem(e);
  }
}

// The bf16 and f16 instances.
template <typename T, int NT, int MR, int WM, int WK, int KU, int S, int PF, bool EPI = false>
__device__ __forceinline__ void decodetc_body(const gt_kargs_t &a) {
  decodetc_core<dtc16<T>, NT, MR, WM, WK, KU, S, PF, EPI>(a);
}

}  // namespace gtk
