// CUDA-core decode family (TN only: D[row, tok] = sum_k W[row*lda + k] * X[tok*ldb + k]).
//
// A CTA owns RW weight rows and one tokens tile of NT; its WK warps split the K range of the
// CTA's split. Each lane streams V-element vectors of all RW rows (weights are read exactly
// once, KU chunks of 32*V elements issued before the first use) and reuses each activation
// vector across the RW rows from registers. Partial sums are reduced across the warp by recursive
// halving (RW*NT values in about RW*NT shuffles, not 5 per value), then across warps through
// shared memory in fixed warp order: the result does not depend on scheduling.
#pragma once

#include "gt_kcommon.cuh"

namespace gtk {

// Recursive-halving warp reduction of CNT values per lane, one shuffle step per level OFF
// (16, 8, ..., 1). A template, not a loop, so every register index is a compile-time constant.
template <int CNT, int OFF> struct halve_reduce {
  static __device__ __forceinline__ void run(float *v, int lane, int &start) {
    if constexpr (CNT >= 2) {
      constexpr int HALF = CNT / 2;
      const bool up = (lane & OFF) != 0;
#pragma unroll
      for (int i = 0; i < HALF; i++) {
        const float send = up ? v[i] : v[i + HALF];
        const float keep = up ? v[i + HALF] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
      }
      if (up) start += HALF;
      if constexpr (OFF > 1) halve_reduce<HALF, OFF / 2>::run(v, lane, start);
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], OFF);
      if constexpr (OFF > 1) halve_reduce<1, OFF / 2>::run(v, lane, start);
    }
  }
};

// The dot products of one decode CTA: RW weight rows (wp[r], already offset by lane * V) times NT
// activation rows (xp[t], the same) over K [kbeg, kend), split among the CTA's WK warps, reduced
// across the warp by recursive halving (RW*NT values in about RW*NT shuffles, not 5 per value),
// then across warps through shared memory `red` ([WK][NT][RW] floats) in fixed warp order, so
// the result does not depend on scheduling. store(r, t, sum) is called once per (row, token) by
// one thread of the CTA; the caller's bounds check decides what it writes. Shared by the dense
// decode family (decode_body) and the grouped vector family (gt_grpv.cuh).
template <typename T, int NT, int RW, int WK, int KU, int V, typename Store>
__device__ __forceinline__ void decode_dot(const uint16_t *const (&wp)[RW],
                                           const uint16_t *const (&xp)[NT], int64_t kbeg,
                                           int64_t kend, float *red, Store store) {
  constexpr int VW = V / 2;      // 32-bit words per vector
  constexpr int CH = 32 * V;     // elements of K one warp covers per load instruction
  constexpr int GK = CH * KU;    // elements of K per batch
  constexpr int NV = RW * NT;    // partial sums per thread
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;

  float acc[RW][NT];
#pragma unroll
  for (int r = 0; r < RW; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) acc[r][t] = 0.f;

  auto fma_vec = [&](const vec<V> (&w)[RW], const vec<V> (&x)[NT]) {
#pragma unroll
    for (int j = 0; j < VW; j++) {
      float2 xf[NT];
#pragma unroll
      for (int t = 0; t < NT; t++) xf[t] = T::to_f2(x[t].w[j]);
#pragma unroll
      for (int r = 0; r < RW; r++) {
        const float2 wf = T::to_f2(w[r].w[j]);
#pragma unroll
        for (int t = 0; t < NT; t++) {
          acc[r][t] = fmaf(wf.x, xf[t].x, acc[r][t]);
          acc[r][t] = fmaf(wf.y, xf[t].y, acc[r][t]);
        }
      }
    }
  };

  const int64_t len = kend - kbeg;
  const int64_t nfull = len / GK;
  for (int64_t gi = warp; gi < nfull; gi += WK) {
    const int64_t k0 = kbeg + gi * GK;
    vec<V> w[KU][RW], x[KU][NT];
#pragma unroll
    for (int u = 0; u < KU; u++)
#pragma unroll
      for (int r = 0; r < RW; r++) w[u][r] = ld_stream<V>(wp[r] + k0 + u * CH);
#pragma unroll
    for (int u = 0; u < KU; u++)
#pragma unroll
      for (int t = 0; t < NT; t++) x[u][t] = ld_keep<V>(xp[t] + k0 + u * CH);
#pragma unroll
    for (int u = 0; u < KU; u++) fma_vec(w[u], x[u]);
  }
  // What is left of the range (less than one batch), one warp-chunk at a time; only the last
  // vector of the range can be partial.
  for (int64_t c = kbeg + nfull * GK + (int64_t)warp * CH; c < kend; c += (int64_t)WK * CH) {
    const int64_t valid = kend - (c + lane * V);
    vec<V> w[RW], x[NT];
    if (valid >= V) {
#pragma unroll
      for (int r = 0; r < RW; r++) w[r] = ld_stream<V>(wp[r] + c);
#pragma unroll
      for (int t = 0; t < NT; t++) x[t] = ld_keep<V>(xp[t] + c);
    } else {
#pragma unroll
      for (int r = 0; r < RW; r++) w[r] = ld_tail<V>(wp[r] + c, valid);
#pragma unroll
      for (int t = 0; t < NT; t++) x[t] = ld_tail<V>(xp[t] + c, valid);
    }
    fma_vec(w, x);
  }

  // Warp reduction by recursive halving: at each step a lane keeps one half of its values and
  // sends the other half to its partner, so NV values cost about NV shuffles in all. Once one
  // value is left the remaining steps are plain butterflies. `start` tracks which of the
  // original NV values v[0] now holds.
  float v[NV];
#pragma unroll
  for (int r = 0; r < RW; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) v[r * NT + t] = acc[r][t];
  int start = 0;
  halve_reduce<NV, 16>::run(v, lane, start);
  constexpr int HELD = NV >= 32 ? NV / 32 : 1;    // values each lane ends with
  constexpr int REPL = NV >= 32 ? 1 : 32 / NV;    // lanes holding the same value
  if ((lane & (REPL - 1)) == 0) {
#pragma unroll
    for (int i = 0; i < HELD; i++) {
      const int idx = start + i;
      const int r = idx / NT, t = idx % NT;
      red[(warp * NT + t) * RW + r] = v[i];
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < NT * RW; e += WK * 32) {
    const int t = e / RW, r = e % RW;
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < WK; w++) s += red[(w * NT + t) * RW + r];
    store(r, t, s);
  }
}

// A CTA owns RW weight rows and one tokens tile of NT; its WK warps split the K range of the
// CTA's split (decode_dot). EPI: the epilogue twin (store_out applies the key's epilogue); false
// is the plain instance. PF: the pre-wait L2 prefetch below (every instance has it;
// bench/gemv_probe.cu times the same body without it).
template <typename T, int NT, int RW, int WK, int KU, int V, bool EPI = false, bool PF = true>
__device__ __forceinline__ void decode_body(const gt_kargs_t &a) {
  constexpr int CH = 32 * V;     // elements of K one warp covers per load instruction
  extern __shared__ float red[]; // [WK][NT][RW]

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t m = a.m, n = a.n;
  const int64_t row0 = (int64_t)blockIdx.x * RW;
  const int64_t tok0 = (int64_t)blockIdx.y * NT;
  const krange kr = split_range(a);
  const uint16_t *A = static_cast<const uint16_t *>(a.A);
  const uint16_t *B = static_cast<const uint16_t *>(a.B);

  // Rows and tokens past the end are clamped to the last one: their loads stay in bounds and
  // their sums are never stored, so the hot loop needs no predicates.
  const uint16_t *wp[RW];
  const uint16_t *xp[NT];
#pragma unroll
  for (int r = 0; r < RW; r++) {
    int64_t row = row0 + r < m ? row0 + r : m - 1;
    wp[r] = A + row * a.lda + lane * V;
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    int64_t tok = tok0 + t < n ? tok0 + t : n - 1;
    xp[t] = B + tok * a.ldb + lane * V;
  }

  // The CTA's first K step (WK batches) of its rows goes to L2 before pdl_wait(), overlapping
  // the previous kernel's tail (a prefetch reads nothing into the SM; see gt_kcommon.cuh).
  if constexpr (PF) {
    if (warp == 0 && lane < RW && row0 + lane < m) {
      constexpr int64_t CK = (int64_t)WK * CH * KU;
      const int64_t left = kr.end - kr.beg;
      const uint32_t bytes = (uint32_t)((left < CK ? left : CK) * 2) & ~15u;
      const int64_t off = (row0 + lane) * a.lda + kr.beg;
      // Vector loads imply 16-byte aligned rows only when V == 8.
      if (V == 8 && bytes) prefetch_l2(A + off, bytes);
    }
  }
  pdl_wait();
  pdl_launch_dependents();

  decode_dot<T, NT, RW, WK, KU, V>(wp, xp, kr.beg, kr.end, red, [&](int r, int t, float s) {
    const int64_t row = row0 + r, tok = tok0 + t;
    if (row < m && tok < n) store_out<T, EPI>(a, row, tok, s);
  });
}

}  // namespace gtk
