/* The one argument block every own kernel takes, by value (__grid_constant__), shared by the C
 * provider that fills it and the CUDA kernels that read it. Plain C, standard layout, so the two
 * compilers agree on it.
 *
 * The problem is the BLAS column-major one: D[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C,
 * C and D with leading dimension ldc (they may alias, as in cublasGemmEx). With splits > 1 the
 * kernel writes fp32 partials to ws[split][n][m] instead of D, and the split-K reduce kernel sums
 * them in split order (deterministic), applies alpha/beta and writes D. The wg family reads A and
 * B through TMA tensor maps the provider encodes per call (tma_a, tma_b; unused by the others)
 * and reduces its splits inside a thread-block cluster, so it needs no workspace.
 *
 * Epilogue twins (gt_kernel_name.h) also read the last two fields: D = act(alpha * acc + beta * C
 * + bias[row]) in fp32, the kind (a gt_epilogue_t: bias, relu, bias_relu, gelu, bias_gelu) read at
 * run time, applied once per element by whichever kernel writes D (the split-K reduce kernel when
 * the partials go through the workspace). They are appended at the end so every other field keeps
 * its offset, and the plain instances, compiled without the epilogue, never read them.
 *
 * FP8 scales (the wgf8 and dtf8 families; every other family ignores them): D = alpha * sa * sb * acc
 * (+ beta * C) (+ bias[row]) in fp32, with sa = 1 (mode 0), *scale_a (mode 1, tensorwise) or
 * scale_a[row] (mode 2, one per m), and sb likewise with scale_b[col] (one per n). For
 * PyTorch's nn.Linear (y = x W^T, run column-major as D[out, tokens] = W[out, in] x^T[in,
 * tokens]: A = W with transa T, B = x with transb N), scale_a is the weight's scale (per output
 * feature when rowwise) and scale_b the activations' (per token). torch._scaled_mm(x, W.t(),
 * scale_a, scale_b) names them the other way round: its scale_a belongs to its mat1 = x, so it
 * is our scale_b, and its scale_b (W's, shape [1, out]) is our scale_a; cuBLASLt, which torch
 * calls with the operands swapped, sees them as we do (A_SCALE_POINTER = the weight's). The
 * pointers are read on the device when the kernel runs, so a captured graph replays with
 * whatever scales the buffers hold then. */
#ifndef GT_KERNEL_ARGS_H
#define GT_KERNEL_ARGS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
#define GT_KARGS_ALIGN alignas(128)
#else
#define GT_KARGS_ALIGN _Alignas(128)
#endif

/* Same size and alignment as the driver's CUtensorMap (checked where it is encoded). */
typedef struct gt_tmap {
  GT_KARGS_ALIGN uint64_t opaque[16];
} gt_tmap_t;

typedef struct gt_kargs {
  gt_tmap_t tma_a, tma_b; /* first: TMA needs them 64-byte (CUDA 13 declares 128) aligned in the parameter space */
  const void *A, *B, *C;
  void *D;
  float *ws;        /* splits * m * n floats when splits > 1, else NULL */
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
  int64_t kchunk;   /* K elements per split: a multiple of the instance's K granule, >= k / splits */
  float alpha, beta;
  int beta_nonzero; /* 0: C is not read (BLAS semantics: beta == 0 ignores C, even NaN) */
  int splits;       /* gridDim.z of the main kernel */
  int evict_first;  /* wg: weight loads carry the L2 evict-first hint (1 unless diagnosing) */
  const void *bias; /* m elements of D's type, one per row of D (broadcast along n); NULL unless
                       the epilogue has a bias */
  int epilogue;     /* gt_epilogue_t; GT_EPI_NONE for plain instances (the reduce kernel reads it) */
  const float *scale_a, *scale_b; /* device pointers, read by the kernel when it runs */
  int scale_mode_a, scale_mode_b; /* 0: none (1.0), 1: tensorwise scalar, 2: outer vector
                                     (one fp32 per row of op(A) i.e. per m, resp. per column of
                                     op(B) i.e. per n) */
  int f8_promote;   /* fp8: 1 unless the key asks for fast accumulation. Hopper's fp8 tensor-core
                       accumulator keeps about 14 bits of an fp32 sum (DeepSeek-V3 report,
                       3.3.2), so the kernels then sum each 128 (wgf8) or 64 x u (dtf8) elements
                       of K into a fresh partial and add it to the fp32 sum, as cuBLASLt does
                       without CUBLASLT_MATMUL_DESC_FAST_ACCUM; wgf8 tiles too wide for the
                       partial's registers refuse such keys (gt_kparams_f8_promotes) */
} gt_kargs_t;

#ifdef __cplusplus
}
#endif
#endif
