/* fp8 scale modes: how an fp8 operand's stored values are scaled back to the numbers they stand
 * for, the layout of the factor arrays each mode reads (cuBLASLt's), which factor covers which
 * element, and which block-mode pairs and shapes cuBLASLt runs.
 * (The element types themselves are gt_dtype.h's.) */
#ifndef GT_SCALE_H
#define GT_SCALE_H

#include <stdbool.h>
#include <stdint.h>

#include "gt_dtype.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How an fp8 operand's stored values are scaled back to the numbers they stand for, as cuBLASLt 13
 * states it (cublasLtMatmulMatrixScale_t, CUBLASLT_MATMUL_DESC_{A,B}_SCALE_MODE). The scale
 * factors are device arrays read when the kernel runs, never values in the key: the mode says
 * which element of op(A)[m,k] (op(B)[k,n]) a factor covers, and the name carries the factor's
 * type (all f32 on Hopper):
 *   none            no scale pointer: the values are used as stored (factor 1)
 *   tensor_f32      one factor for the whole operand (CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)
 *   outer_f32       one factor per row of op(A) (m of them) / per column of op(B) (n of them):
 *                   OUTER_VEC_32F, what torch calls rowwise scaling
 *   blk1x128_f32    one factor per 1x128 run of K of each row of op(A) / column of op(B)
 *                   (VEC128_32F, DeepSeek V3's activation scaling)
 *   blk128x128_f32  one factor per 128x128 tile of op(A) / op(B) (BLK128x128_32F, its weight
 *                   scaling)
 * The block arrays are laid out as cuBLASLt reads them, which is not a choice of ours: the
 * library has no attribute for their shape or stride, and the transposes of A and B do not
 * change it. With L = ceil(k/128) K blocks and "outer" = m for A, n for B:
 *   blk1x128_f32    outer x L, outer-major (the factors of one K block for every row of op(A) /
 *                   column of op(B) are contiguous): factor (i, kb) at i + kb * outer
 *   blk128x128_f32  L4 x ceil(outer/128), K-major, with L4 = L rounded up to a multiple of 4 (the
 *                   stride between the K-block columns is 16-byte aligned; the factors past L in
 *                   each column are never read): factor (kb, ib) at kb + ib * L4
 * Sources: the cuBLAS 13 documentation, section "128-element 1D and 128x128 2D Block Scaling For
 * FP8 Data Types", subsection "Scaling factors layouts" (docs.nvidia.com/cuda/cublas), which
 * also requires m and n to be multiples of 4 and offers VEC128 x VEC128, VEC128 x BLK128x128
 * and BLK128x128 x VEC128 for (A, B), not BLK128x128 on both (gt_scale_block_refusal). PyTorch
 * agrees for its row-major operands, which it hands to cuBLASLt swapped (cuBlasCommonArgs.h:
 * its mat2 and scale_b are cuBLASLt's A, its activations B): _scaled_mm's checks
 * (aten/src/ATen/native/cuda/ScaledBlas.cpp, is_blockwise_1x128_scaling) want 1x128 scales of
 * [rows, ceil(K/128)] with strides (1, rows), "outer-dim-major", and 128x128 ones K-block-
 * contiguous (is_blockwise_128x128_scaling); its test helper _pad_128x128_scales
 * (test/test_scaled_matmul_cuda.py) pads their K blocks to L4 citing the same
 * section. On the H200 (cuBLASLt 13.1), the reference's former layout (B's 1x128 factors
 * K-block-major, A's 128x128 ones block-row-major) failed cuBLASLt's own result for m 128, n
 * 4096, k 4096 by a normwise error of 1.08 (bench/results/fp8): with one block-row of A, B's
 * order alone differed there. */
typedef enum gt_scale_mode {
  GT_SCALE_NONE = 0,
  GT_SCALE_TENSOR,
  GT_SCALE_OUTER,
  GT_SCALE_BLK1X128,
  GT_SCALE_BLK128X128,
  GT_SCALE__COUNT
} gt_scale_mode_t;

/* Edge of the K blocks of the blockwise modes: a split of K must fall on a multiple of it. */
#define GT_SCALE_BLOCK 128
/* The K-block stride of a blk128x128_f32 array is a multiple of this many factors (16 bytes). */
#define GT_SCALE_BLK_STRIDE_ALIGN 4

/* Functions the CUDA harness's fp64 reference also calls on the device, so that the host and
 * device references cannot disagree on a layout. */
#ifdef __CUDACC__
#define GT_SCALE_HOSTDEV __host__ __device__
#else
#define GT_SCALE_HOSTDEV
#endif

/* Whether t is one of the fp8 types (f8e4m3fn, f8e5m2). */
int gt_dtype_is_fp8(gt_dtype_t t);

const char *gt_scale_mode_name(gt_scale_mode_t m); /* "outer_f32" */
gt_status_t gt_scale_mode_parse(const char *s, gt_scale_mode_t *out);
/* The factor array of a scale of mode md for operand which ('A': op(A) is m x k; 'B': op(B) is
 * k x n) as (d0 fastest, d1), padding included: d0 * d1 factors are what the array holds and
 * what a caller allocates. 0 x 0 for none. */
void gt_scale_mode_shape(gt_scale_mode_t md, char which, int64_t m, int64_t n, int64_t k,
                         int64_t *d0, int64_t *d1);

/* Index into operand which's factor array of the factor that covers element (i, kk) of op(A)
 * (i < m) or element (kk, j) of op(B) (j < n, passed as i), in the layouts above; always below
 * d0 * d1 of gt_scale_mode_shape. -1 for none. */
static inline GT_SCALE_HOSTDEV int64_t gt_scale_mode_index(gt_scale_mode_t md, char which,
                                                           int64_t m, int64_t n, int64_t k,
                                                           int64_t i, int64_t kk) {
  const int64_t outer = which == 'A' ? m : n, kb = kk / GT_SCALE_BLOCK;
  const int64_t nkb = (k + GT_SCALE_BLOCK - 1) / GT_SCALE_BLOCK;
  const int64_t l4 = (nkb + GT_SCALE_BLK_STRIDE_ALIGN - 1) / GT_SCALE_BLK_STRIDE_ALIGN *
                     GT_SCALE_BLK_STRIDE_ALIGN;
  switch (md) {
    case GT_SCALE_TENSOR: return 0;
    case GT_SCALE_OUTER: return i;
    case GT_SCALE_BLK1X128: return i + kb * outer;
    case GT_SCALE_BLK128X128: return kb + (i / GT_SCALE_BLOCK) * l4;
    default: return -1;
  }
}

/* Whether md is one of the blockwise modes (blk1x128_f32, blk128x128_f32). */
bool gt_scale_mode_is_block(gt_scale_mode_t md);
/* NULL when cuBLASLt 13 offers kernels for A and B scaled by modes sa and sb at op(A) m x k,
 * op(B) k x n as far as the block modes go; otherwise why not (a static string): a block mode on
 * one operand only, blk128x128_f32 on both, or m or n not a multiple of 4 (the cuBLAS
 * documentation's table of supported pairs and its "Scaling factors layouts"). Keys without a
 * block mode: NULL. */
const char *gt_scale_block_refusal(gt_scale_mode_t sa, gt_scale_mode_t sb, int64_t m, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
