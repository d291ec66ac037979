// Device kernels of the CUDA harness: random inputs, output poison, the fp64 reference GEMM and
// the comparison that feeds the gate (see gt_cuda_harness.h). They favour being obviously right
// over being fast; the reference runs once per gate, not per timed launch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "gt_cuda_harness.h"

namespace {

const int kThreads = 256;
const unsigned kMaxBlocks = 4096;

unsigned blocks_for(size_t count) {
  size_t b = (count + kThreads - 1) / kThreads;
  if (b < 1) b = 1;
  return b > kMaxBlocks ? kMaxBlocks : (unsigned)b;
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ __forceinline__ double fp8_to_double(uint8_t x, __nv_fp8_interpretation_t kind) {
  __half_raw hr = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)x, kind);
  return (double)__half2float(__half(hr));
}

// Element i of a buffer of gemmtune type t, widened to double.
__device__ __forceinline__ double ld_elem(const void *p, int t, size_t i) {
  switch (t) {
    case GT_DT_F32: return (double)((const float *)p)[i];
    case GT_DT_F16: return (double)__half2float(((const __half *)p)[i]);
    case GT_DT_BF16: return (double)__bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case GT_DT_F8E4M3FN: return fp8_to_double(((const uint8_t *)p)[i], __NV_E4M3);
    case GT_DT_F8E5M2: return fp8_to_double(((const uint8_t *)p)[i], __NV_E5M2);
    case GT_DT_I8: return (double)((const int8_t *)p)[i];
    case GT_DT_I32: return (double)((const int32_t *)p)[i];
    case GT_DT_F64: return ((const double *)p)[i];
    default: return 0.0;
  }
}

// Store v rounded to type t (fp8 saturating to its finite range, integers truncated: callers
// store integral values only).
__device__ __forceinline__ void st_elem(void *p, int t, size_t i, double v) {
  switch (t) {
    case GT_DT_F32: ((float *)p)[i] = (float)v; break;
    case GT_DT_F16: ((__half *)p)[i] = __double2half(v); break;
    case GT_DT_BF16: ((__nv_bfloat16 *)p)[i] = __double2bfloat16(v); break;
    case GT_DT_F8E4M3FN:
      ((uint8_t *)p)[i] = (uint8_t)__nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
      break;
    case GT_DT_F8E5M2:
      ((uint8_t *)p)[i] = (uint8_t)__nv_cvt_double_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
      break;
    case GT_DT_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case GT_DT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case GT_DT_F64: ((double *)p)[i] = v; break;
    default: break;
  }
}

__device__ __forceinline__ size_t elem_size(int t) {
  switch (t) {
    case GT_DT_F32: case GT_DT_I32: return 4;
    case GT_DT_F16: case GT_DT_BF16: return 2;
    case GT_DT_F64: return 8;
    default: return 1;
  }
}

// ---- init -----------------------------------------------------------------------------------

__global__ void fill_random_kernel(void *buf, int t, size_t count, uint64_t seed, int ints,
                                   int range) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    // Redraw the rare values that round to zero in the storage type (tiny decimals in fp8).
    double v = 1.0;
    for (int attempt = 0; attempt < 32; attempt++) {
      uint64_t r = splitmix64(seed ^ splitmix64(i * 64 + (uint64_t)attempt));
      if (ints) {
        int x = (int)(r % (uint64_t)(2 * range)) - range;  // [-range, range-1]
        v = x >= 0 ? x + 1 : x;                             // skip 0
      } else {
        v = (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0;  // [-1, 1)
      }
      st_elem(buf, t, i, v);
      if (ld_elem(buf, t, i) != 0.0) break;
      v = (r & 1) ? 1.0 : -1.0;
      st_elem(buf, t, i, v);
    }
  }
}

__global__ void fill_pattern_kernel(void *buf, int esz, size_t count, uint64_t pat) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    switch (esz) {
      case 1: ((uint8_t *)buf)[i] = (uint8_t)pat; break;
      case 2: ((uint16_t *)buf)[i] = (uint16_t)pat; break;
      case 4: ((uint32_t *)buf)[i] = (uint32_t)pat; break;
      default: ((uint64_t *)buf)[i] = pat; break;
    }
  }
}

// ---- reference --------------------------------------------------------------------------------

const int kRT = 64;  // output tile (rows and columns) per block
const int kKT = 16;  // K per shared-memory step

__device__ __forceinline__ double epilogue_act(int epi, double x) {
  if (epi == GT_EPI_RELU || epi == GT_EPI_BIAS_RELU) return x > 0.0 ? x : 0.0;
  if (epi == GT_EPI_GELU || epi == GT_EPI_BIAS_GELU)
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  return x;
}

// What an exact GEMM stores before rounding to a float type: fp8 saturates (cuBLASLt's
// conversion), integers round to nearest even and saturate.
__device__ __forceinline__ double output_value(int t, double v) {
  switch (t) {
    case GT_DT_F8E4M3FN: return v > 448.0 ? 448.0 : v < -448.0 ? -448.0 : v;
    case GT_DT_F8E5M2: return v > 57344.0 ? 57344.0 : v < -57344.0 ? -57344.0 : v;
    case GT_DT_I8: v = rint(v); return v > 127.0 ? 127.0 : v < -128.0 ? -128.0 : v;
    case GT_DT_I32:
      v = rint(v);
      return v > 2147483647.0 ? 2147483647.0 : v < -2147483648.0 ? -2147483648.0 : v;
    default: return v;
  }
}

// The factor of a scale of mode md covering element (i, kk) of op(A) (a) or (kk, i) of op(B):
// gt_scale_mode_index itself (gt_scale.h), so the device reference reads cuBLASLt's layouts
// exactly as the host one does.
__device__ __forceinline__ int64_t scale_index(int md, bool a, int64_t m, int64_t n, int64_t k,
                                               int64_t i, int64_t kk) {
  return gt_scale_mode_index((gt_scale_mode_t)md, a ? 'A' : 'B', m, n, k, i, kk);
}

// 256 threads compute a 64x64 output tile, 4x4 per thread, K in steps of 16 through shared
// memory, accumulating in fp64. Tiles of A and B are loaded along their contiguous dimension.
__global__ void __launch_bounds__(256) reference_kernel(gt_cuk_gemm_t g, const void *A,
                                                         const void *B, const void *C,
                                                         const void *bias, double *ref) {
  __shared__ double As[kKT][kRT + 1];
  __shared__ double Bs[kKT][kRT + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t tiles_n = (g.n + kRT - 1) / kRT;
  const int64_t i0 = (int64_t)blockIdx.x * kRT;
  const bool has_bias = g.epilogue == GT_EPI_BIAS || g.epilogue == GT_EPI_BIAS_RELU ||
                        g.epilogue == GT_EPI_BIAS_GELU;

  for (int64_t bz = blockIdx.z; bz < g.batch; bz += gridDim.z) {
    for (int64_t by = blockIdx.y; by < tiles_n; by += gridDim.y) {
      const int64_t j0 = by * kRT;
      const size_t aoff = (size_t)(bz * g.stride_a), boff = (size_t)(bz * g.stride_b);
      double acc[4][4];
#pragma unroll
      for (int r = 0; r < 4; r++)
#pragma unroll
        for (int c = 0; c < 4; c++) acc[r][c] = 0.0;

      for (int64_t k0 = 0; k0 < g.k; k0 += kKT) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
          int e = threadIdx.x + r * 256;  // 0..1023 = 64 x 16
          int ii, kk;
          if (g.transa == GT_TRANS_N) ii = e % kRT, kk = e / kRT;
          else kk = e % kKT, ii = e / kKT;
          int64_t gi = i0 + ii, gk = k0 + kk;
          double v = 0.0;
          if (gi < g.m && gk < g.k) {
            v = ld_elem(A, g.a_type,
                        aoff + (size_t)(g.transa == GT_TRANS_N ? gi + gk * g.lda : gk + gi * g.lda));
            if (g.sa) v *= (double)g.sa[scale_index(g.scale_a, true, g.m, g.n, g.k, gi, gk)];
          }
          As[kk][ii] = v;

          int jj;
          if (g.transb == GT_TRANS_N) kk = e % kKT, jj = e / kKT;
          else jj = e % kRT, kk = e / kRT;
          int64_t gj = j0 + jj;
          gk = k0 + kk;
          v = 0.0;
          if (gj < g.n && gk < g.k) {
            v = ld_elem(B, g.b_type,
                        boff + (size_t)(g.transb == GT_TRANS_N ? gk + gj * g.ldb : gj + gk * g.ldb));
            if (g.sb) v *= (double)g.sb[scale_index(g.scale_b, false, g.m, g.n, g.k, gj, gk)];
          }
          Bs[kk][jj] = v;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < kKT; kk++) {
          double a[4], b[4];
#pragma unroll
          for (int r = 0; r < 4; r++) a[r] = As[kk][tx + 16 * r];
#pragma unroll
          for (int c = 0; c < 4; c++) b[c] = Bs[kk][ty + 16 * c];
#pragma unroll
          for (int r = 0; r < 4; r++)
#pragma unroll
            for (int c = 0; c < 4; c++) acc[r][c] = fma(a[r], b[c], acc[r][c]);
        }
        __syncthreads();
      }

#pragma unroll
      for (int r = 0; r < 4; r++) {
#pragma unroll
        for (int c = 0; c < 4; c++) {
          int64_t i = i0 + tx + 16 * r, j = j0 + ty + 16 * c;
          if (i >= g.m || j >= g.n) continue;
          double v = g.alpha * acc[r][c];
          if (!g.beta_zero)
            v += g.beta * ld_elem(C, g.c_type, (size_t)(bz * g.stride_c + j * g.ldc + i));
          if (has_bias) v += ld_elem(bias, g.bias_type, (size_t)i);
          v = epilogue_act(g.epilogue, v);
          if (g.sd) v *= (double)g.sd[0];
          ref[((size_t)bz * (size_t)g.n + (size_t)j) * (size_t)g.m + (size_t)i] =
              output_value(g.d_type, v);
        }
      }
    }
  }
}

// ---- comparison ---------------------------------------------------------------------------------

__device__ __forceinline__ double warp_sum(double v) {
  for (int off = 16; off; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int off = 16; off; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Sum v over the block and add it to *dst once per block. Every thread of the block calls it.
template <typename T>
__device__ void block_add(T v, T *dst) {
  __shared__ T part[kThreads / 32];
  v = warp_sum(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? part[lane] : (T)0;
    v = warp_sum(v);
    if (lane == 0 && v != (T)0) atomicAdd(dst, v);
  }
  __syncthreads();
}

__global__ void ref_stats_kernel(const double *ref, size_t count, gt_cuk_acc_t *acc) {
  double s2 = 0.0, mx = 0.0;
  unsigned long long nf = 0;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    double r = ref[i];
    if (isfinite(r)) s2 += r * r, nf++, mx = fmax(mx, fabs(r));
  }
  block_add(s2, &acc->ref2_all);
  block_add(nf, &acc->finite_all);
  // the amax an fp8 call must write; one atomic per thread is cheap next to the reference
  if (mx > 0.0) atomicMax(&acc->absmax_bits, (unsigned long long)__double_as_longlong(mx));
}

// gt_metric_acc_add, element by element.
__global__ void compare_kernel(gt_cuk_gemm_t g, const void *D, const double *ref, double atol,
                               double rtol, uint64_t pat, int has_poison, gt_cuk_acc_t *acc) {
  const size_t total = (size_t)g.m * (size_t)g.n * (size_t)g.batch;
  const size_t esz = elem_size(g.d_type);
  double diff2 = 0.0, ref2 = 0.0;
  unsigned long long mism = 0, nonfin = 0, unwr = 0, checked = 0;
  for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (size_t)gridDim.x * blockDim.x) {
    size_t i = e % (size_t)g.m, t = e / (size_t)g.m;
    size_t j = t % (size_t)g.n, b = t / (size_t)g.n;
    size_t di = b * (size_t)g.stride_c + j * (size_t)g.ldc + i;
    double r = ref[e];
    double d = ld_elem(D, g.d_type, di);
    bool poisoned = false;
    if (has_poison) {
      uint64_t bits = 0;
      switch (esz) {
        case 1: bits = ((const uint8_t *)D)[di]; break;
        case 2: bits = ((const uint16_t *)D)[di]; break;
        case 4: bits = ((const uint32_t *)D)[di]; break;
        default: bits = ((const uint64_t *)D)[di]; break;
      }
      poisoned = bits == pat;
    }
    checked++;
    if (!isfinite(r)) continue;
    ref2 += r * r;
    if (poisoned && !(d == r)) {
      unwr++;
      continue;
    }
    if (!isfinite(d)) {
      nonfin++;
      continue;
    }
    double diff = d - r;
    diff2 += diff * diff;
    if (fabs(diff) > atol + rtol * fabs(r)) mism++;
  }
  block_add(diff2, &acc->diff2);
  block_add(ref2, &acc->ref2);
  block_add(mism, &acc->mismatches);
  block_add(nonfin, &acc->nonfinite);
  block_add(unwr, &acc->unwritten);
  block_add(checked, &acc->checked);
}

__global__ void fence_kernel(unsigned *word) {
  if (threadIdx.x == 0) atomicAdd(word, 1u);
}

}  // namespace

extern "C" cudaError_t gt_cuk_fence(unsigned *word, cudaStream_t s) {
  fence_kernel<<<1, 32, 0, s>>>(word);
  return cudaGetLastError();
}

extern "C" cudaError_t gt_cuk_fill_random(void *buf, gt_dtype_t t, size_t count, uint64_t seed,
                                          bool ints, int range, cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  if (range < 1) range = 1;
  fill_random_kernel<<<blocks_for(count), kThreads, 0, s>>>(buf, (int)t, count, seed, ints ? 1 : 0,
                                                            range);
  return cudaGetLastError();
}

extern "C" cudaError_t gt_cuk_fill_pattern(void *buf, size_t esz, size_t count, const void *pat,
                                           cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  uint64_t p = 0;
  const unsigned char *src = (const unsigned char *)pat;
  for (size_t i = 0; i < esz && i < 8; i++) p |= (uint64_t)src[i] << (8 * i);  // little endian
  fill_pattern_kernel<<<blocks_for(count), kThreads, 0, s>>>(buf, (int)esz, count, p);
  return cudaGetLastError();
}

extern "C" cudaError_t gt_cuk_reference(const gt_cuk_gemm_t *g, const void *A, const void *B,
                                        const void *C, const void *bias, double *ref,
                                        cudaStream_t s) {
  if (g->m <= 0 || g->n <= 0 || g->batch <= 0) return cudaErrorInvalidValue;
  int64_t tm = (g->m + kRT - 1) / kRT, tn = (g->n + kRT - 1) / kRT;
  if (tm > 0x7fffffff) return cudaErrorInvalidValue;
  dim3 grid((unsigned)tm, (unsigned)(tn < 65535 ? tn : 65535),
            (unsigned)(g->batch < 65535 ? g->batch : 65535));
  reference_kernel<<<grid, 256, 0, s>>>(*g, A, B, C, bias, ref);
  return cudaGetLastError();
}

extern "C" cudaError_t gt_cuk_ref_stats(const double *ref, size_t count, gt_cuk_acc_t *acc,
                                        cudaStream_t s) {
  ref_stats_kernel<<<blocks_for(count), kThreads, 0, s>>>(ref, count, acc);
  return cudaGetLastError();
}

extern "C" cudaError_t gt_cuk_compare(const gt_cuk_gemm_t *g, const void *D, const double *ref,
                                      double atol, double rtol, const void *pat, bool has_poison,
                                      gt_cuk_acc_t *acc, cudaStream_t s) {
  uint64_t p = 0;
  if (has_poison) {
    size_t esz = gt_dtype_size((gt_dtype_t)g->d_type);
    const unsigned char *src = (const unsigned char *)pat;
    for (size_t i = 0; i < esz && i < 8; i++) p |= (uint64_t)src[i] << (8 * i);
  }
  size_t total = (size_t)g->m * (size_t)g->n * (size_t)g->batch;
  compare_kernel<<<blocks_for(total), kThreads, 0, s>>>(*g, D, ref, atol, rtol, p,
                                                        has_poison ? 1 : 0, acc);
  return cudaGetLastError();
}
