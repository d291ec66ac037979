/* The kernels provider's fp8 entry points (src/providers/cuda/kernels.c): which own fp8
 * instances (the wgf8 and dtf8 families) take a call's element types and scale modes, how the
 * scales go into the kernel arguments, and a direct launch of one instance with explicit
 * operands and scales.
 *
 * The provider's own path (enumerate / prepare / run) selects fp8 instances by the key's
 * element types already (A, B e4m3 or e5m2; C, D bf16, f16 or f32) and runs them with no scales
 * (mode 0) until the key and the operands carry scale modes and pointers: then prepare calls
 * gt_kernels_fp8_select with the key's modes and run gt_kernels_fp8_set_scales with the call's
 * pointers. The direct launch is what the fp8 GPU test and kernels_bench --dtype f8e4m3fn use,
 * so they do not depend on those key fields. CUDA builds only. */
#ifndef GT_KERNELS_FP8_H
#define GT_KERNELS_FP8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gt_dtype.h"
#include "core/gt_status.h"
#include "kernels/gt_kernel_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Scale modes of gt_kargs_t's scale_mode_a / scale_mode_b. */
enum {
  GT_KFP8_SCALE_NONE = 0,   /* 1.0 */
  GT_KFP8_SCALE_TENSOR = 1, /* one fp32 for the whole operand */
  GT_KFP8_SCALE_OUTER = 2   /* one fp32 per row of op(A) (per m), resp. per column of op(B) (per n) */
};

/* One fp8 GEMM in the kernels' BLAS terms, TN: D[m,n] = alpha * sa * sb * A^T[m,k] B[k,n]
 * (+ beta * C) (+ epilogue with bias[m]); A is m runs of k fp8 elements lda apart (nn.Linear's
 * weight), B n runs of k lda apart (the tokens), C, D and the bias of D's type. */
typedef struct gt_kfp8_call {
  int64_t m, n, k, lda, ldb, ldc;
  const void *A, *B, *C; /* C may be NULL when beta == 0 */
  void *D;
  const void *bias;      /* m elements of D's type; NULL unless the epilogue has a bias */
  int epilogue;          /* gt_epilogue_t; GT_EPI_NONE for a plain instance */
  float alpha, beta;
  const float *scale_a, *scale_b; /* device pointers (see gt_kernel_args.h) */
  int scale_mode_a, scale_mode_b;
  gt_dtype_t a_type, b_type, d_type; /* must be the instance's */
  int fast_accum; /* 0 (cuBLASLt's default): the sums are promoted to fp32 every 128 (wgf8) or
                     64 x u (dtf8) elements of K, and an instance that cannot is refused; 1:
                     the tensor core's own accumulator throughout */
} gt_kfp8_call_t;

/* Whether table row idx is an fp8 instance that takes these element types (A, B; C and D share
 * d) and scale modes (0..2 each). False, with the reason in why, otherwise. */
bool gt_kernels_fp8_select(int idx, gt_dtype_t a, gt_dtype_t b, gt_dtype_t d, int mode_a,
                           int mode_b, char *why, size_t cap);

/* Fill the scale fields of the kernel arguments (the only place the provider writes them);
 * a mode other than 0 needs its pointer. GT_ERR_USAGE for a bad mode or a missing pointer. */
gt_status_t gt_kernels_fp8_set_scales(gt_kargs_t *a, const float *scale_a, int mode_a,
                                      const float *scale_b, int mode_b);

/* Launch fp8 instance idx on stream (a cudaStream_t) for call c: the provider's hard rules for
 * fp8 (types, scale modes, TMA's 16-byte strides and alignment, the device's architecture and
 * shared memory), then its geometry, tensor maps and launch (cluster of the splits, dependent
 * launch). GT_ERR_UNSUPPORTED naming the rule when the instance cannot run c. Asynchronous;
 * capturable in a CUDA graph (the tensor maps are kernel parameters). */
gt_status_t gt_kernels_fp8_launch(int idx, const gt_kfp8_call_t *c, void *stream);

#ifdef __cplusplus
}
#endif
#endif
