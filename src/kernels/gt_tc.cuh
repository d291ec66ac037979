// Generic tensor-core family: any M, N, K, any leading dimensions, all four transposes.
//
// A CTA computes a BM x BN tile of D over the K range of its split, in BK steps through an
// S-stage shared-memory ring. Each operand tile is stored as it lies in global memory (K-major
// for op = T on A / op = N on B, otherwise M- or N-major), rows padded by 16 bytes so ldmatrix
// reads are conflict-free; ldmatrix.trans turns M/N-major tiles into mma fragments. Warps
// (WM x WN) each own a (BM/WM) x (BN/WN) sub-tile of m16n8k16 accumulators.
//
// AL = 8: 16-byte cp.async with a byte count, so partial vectors at the M/N/K edges read only
// valid bytes and zero-fill the rest (operands must be 16-byte aligned with ld % 8 == 0).
// AL = 1: element-wise predicated loads staged through registers, for any alignment.
#pragma once

#include "gt_kcommon.cuh"

namespace gtk {

// Load one R x C tile (C contiguous in global memory) into shared memory with row stride LD.
// Global element (r, c) is g[(rbase + r) * ld + cbase + c], valid when rbase + r < rlim and
// cbase + c < clim; invalid elements are zero.
template <int R, int C, int LD, int THREADS, int AL>
__device__ __forceinline__ void load_tile(uint16_t *s, const uint16_t *g, int64_t ld, int64_t rbase,
                                          int64_t rlim, int64_t cbase, int64_t clim) {
  constexpr int CPR = C / 8; // 8-element chunks per row
  constexpr int NCH = R * CPR;
  constexpr int PER = (NCH + THREADS - 1) / THREADS;
#pragma unroll
  for (int i = 0; i < PER; i++) {
    const int ch = threadIdx.x + i * THREADS;
    if (NCH % THREADS != 0 && ch >= NCH) break;
    const int r = ch / CPR, cc = (ch % CPR) * 8;
    const int64_t gr = rbase + r, gc = cbase + cc;
    const bool rok = gr < rlim;
    if constexpr (AL == 8) {
      int bytes = 0;
      const uint16_t *src = g;
      if (rok && gc < clim) {
        const int64_t rem = clim - gc;
        bytes = rem >= 8 ? 16 : (int)rem * 2;
        src = g + gr * ld + gc;
      }
      cp_async16(smem_u32(s + r * LD + cc), src, bytes);
    } else {
      uint32_t w[4];
      const uint16_t *src = g + (rok ? gr : 0) * ld + gc;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const uint32_t lo = (rok && gc + 2 * j < clim) ? (uint32_t)src[2 * j] : 0u;
        const uint32_t hi = (rok && gc + 2 * j + 1 < clim) ? (uint32_t)src[2 * j + 1] : 0u;
        w[j] = lo | (hi << 16);
      }
      *reinterpret_cast<uint4 *>(s + r * LD + cc) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// EPI: the epilogue twin (store_out applies the key's epilogue); false is the plain instance.
template <typename T, bool AK, bool BKM, int BM, int BN, int BK, int WM, int WN, int S, int AL,
          bool EPI = false>
__device__ __forceinline__ void tc_body(const gt_kargs_t &a) {
  // AK: A is K-contiguous (transa = T). BKM: B is K-contiguous (transb = N).
  constexpr int THREADS = WM * WN * 32;
  constexpr int WTM = BM / WM, WTN = BN / WN;
  constexpr int MT = WTM / 16, NTL = WTN / 8;
  static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BK % 16 == 0, "warp tile of m16 x n16 steps");
  constexpr int A_R = AK ? BM : BK, A_C = AK ? BK : BM, A_LD = A_C + 8;
  constexpr int B_R = BKM ? BN : BK, B_C = BKM ? BK : BN, B_LD = B_C + 8;
  constexpr int A_STAGE = A_R * A_LD, B_STAGE = B_R * B_LD; // elements
  extern __shared__ __align__(16) uint16_t smem_tc[];
  uint16_t *sA = smem_tc;
  uint16_t *sB = smem_tc + S * A_STAGE;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp % WM, wn = warp / WM;
  const int g = lane >> 2, q = lane & 3;
  const int64_t M = a.m, N = a.n;
  const int64_t m0 = (int64_t)blockIdx.x * BM, n0 = (int64_t)blockIdx.y * BN;
  const krange kr = split_range(a);
  const int ktiles = (int)((kr.end - kr.beg + BK - 1) / BK);
  const uint16_t *Ag = static_cast<const uint16_t *>(a.A);
  const uint16_t *Bg = static_cast<const uint16_t *>(a.B);

  pdl_wait();
  pdl_launch_dependents();

  auto load_stage = [&](int kt, int st) {
    const int64_t kb = kr.beg + (int64_t)kt * BK;
    uint16_t *dA = sA + st * A_STAGE;
    uint16_t *dB = sB + st * B_STAGE;
    if constexpr (AK)
      load_tile<A_R, A_C, A_LD, THREADS, AL>(dA, Ag, a.lda, m0, M, kb, kr.end);
    else
      load_tile<A_R, A_C, A_LD, THREADS, AL>(dA, Ag, a.lda, kb, kr.end, m0, M);
    if constexpr (BKM)
      load_tile<B_R, B_C, B_LD, THREADS, AL>(dB, Bg, a.ldb, n0, N, kb, kr.end);
    else
      load_tile<B_R, B_C, B_LD, THREADS, AL>(dB, Bg, a.ldb, kb, kr.end, n0, N);
  };

  float acc[MT][NTL][4];
#pragma unroll
  for (int i = 0; i < MT; i++)
#pragma unroll
    for (int j = 0; j < NTL; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;

#pragma unroll
  for (int st = 0; st < S - 1; st++) {
    if (st < ktiles) load_stage(st, st);
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; kt++) {
    // Tile kt has landed (at most S-2 younger groups pending), and every warp is done with the
    // stage computed last iteration, which the load below overwrites.
    cp_async_wait<S - 2>();
    __syncthreads();
    {
      const int nk = kt + S - 1;
      if (nk < ktiles) load_stage(nk, nk % S);
      cp_async_commit(); // empty groups keep the wait count uniform
    }
    const uint16_t *cA = sA + (kt % S) * A_STAGE;
    const uint16_t *cB = sB + (kt % S) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
      uint32_t af[MT][4], bfr[NTL][2];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        const int mb = wm * WTM + mt * 16;
        if constexpr (AK) {
          // matrices: (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15)
          ldsm_x4(af[mt], smem_u32(cA + (mb + (lane & 15)) * A_LD + kk * 16 + (lane >> 4) * 8));
        } else {
          // stored [k][m]: same four matrices, transposed on the way out
          ldsm_x4_t(af[mt], smem_u32(cA + (kk * 16 + (lane & 7) + (lane >> 4) * 8) * A_LD + mb +
                                     ((lane >> 3) & 1) * 8));
        }
      }
#pragma unroll
      for (int np = 0; np < NTL / 2; np++) {
        const int nb = wn * WTN + np * 16;
        uint32_t r[4];
        if constexpr (BKM) {
          // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
          ldsm_x4(r, smem_u32(cB + (nb + (lane & 7) + (lane >> 4) * 8) * B_LD + kk * 16 +
                              ((lane >> 3) & 1) * 8));
        } else {
          // stored [k][n]: (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15)
          ldsm_x4_t(r, smem_u32(cB + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * B_LD + nb +
                                (lane >> 4) * 8));
        }
        bfr[2 * np][0] = r[0];
        bfr[2 * np][1] = r[1];
        bfr[2 * np + 1][0] = r[2];
        bfr[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int nt = 0; nt < NTL; nt++)
          T::mma(acc[mt][nt], af[mt][0], af[mt][1], af[mt][2], af[mt][3], bfr[nt][0], bfr[nt][1]);
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int nt = 0; nt < NTL; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int64_t row = m0 + wm * WTM + mt * 16 + g + (e >> 1) * 8;
        const int64_t col = n0 + wn * WTN + nt * 8 + q * 2 + (e & 1);
        if (row < M && col < N) store_out<T, EPI>(a, row, col, acc[mt][nt][e]);
      }
}

}  // namespace gtk
