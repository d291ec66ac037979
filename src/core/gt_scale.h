/* fp8 scale modes: how an fp8 operand's stored values are scaled back to the numbers they stand
 * for, the layout of the factor arrays each mode reads, and which factor covers which element.
 * (The element types themselves are gt_dtype.h's.) */
#ifndef GT_SCALE_H
#define GT_SCALE_H

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
 *   blk1x128_f32    one factor per 1x128 run of K: A's are m x ceil(k/128), B's ceil(k/128) x n
 *                   (VEC128_32F, DeepSeek V3's activation scaling)
 *   blk128x128_f32  one factor per 128x128 tile: ceil(m/128) x ceil(k/128) for A,
 *                   ceil(k/128) x ceil(n/128) for B (BLK128x128_32F, its weight scaling)
 * The factor arrays are column-major in those shapes (the first index runs fastest). */
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

/* Whether t is one of the fp8 types (f8e4m3fn, f8e5m2). */
int gt_dtype_is_fp8(gt_dtype_t t);

const char *gt_scale_mode_name(gt_scale_mode_t m); /* "outer_f32" */
gt_status_t gt_scale_mode_parse(const char *s, gt_scale_mode_t *out);
/* Factors a scale of mode md covers for operand which ('A': op(A) is rows x k, rows = m; 'B':
 * op(B) is k x cols, cols = n): the array's shape as (d0 fastest, d1); 0 x 0 for none. */
void gt_scale_mode_shape(gt_scale_mode_t md, char which, int64_t m, int64_t n, int64_t k,
                         int64_t *d0, int64_t *d1);
/* Index into operand which's factor array of the factor that covers element (i, kk) of op(A)
 * (i < m) or element (kk, j) of op(B) (j < n, passed as i). -1 for none. */
int64_t gt_scale_mode_index(gt_scale_mode_t md, char which, int64_t m, int64_t n, int64_t k,
                            int64_t i, int64_t kk);

#ifdef __cplusplus
}
#endif
#endif
