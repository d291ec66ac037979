/* Element types, compute types and epilogues: their canonical names and element sizes, plus
 * scalar conversions used by the CPU providers and the correctness metric.
 *
 * FP8 is the OCP dialect only (the one NVIDIA Hopper implements): e4m3 is spelled "f8e4m3fn"
 * (finite, no infinities, NaN = S.1111.111) and e5m2 "f8e5m2", as PyTorch spells
 * float8_e4m3fn / float8_e5m2. AMD's FNUZ variants ("e4m3fnuz", "e5m2fnuz") have a different
 * bias and NaN encoding; their names are rejected with a message saying so, never aliased. */
#ifndef GT_DTYPE_H
#define GT_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_dtype {
  GT_DT_F32 = 0,
  GT_DT_F16,
  GT_DT_BF16,
  GT_DT_F8E4M3FN, /* OCP e4m3 */
  GT_DT_F8E5M2,   /* OCP e5m2 */
  GT_DT_I8,
  GT_DT_I32,
  GT_DT_F64,
  GT_DT__COUNT
} gt_dtype_t;

/* How products are accumulated (cublasComputeType_t in spirit). */
typedef enum gt_compute {
  GT_COMPUTE_F32 = 0,   /* fp32 accumulate */
  GT_COMPUTE_TF32,      /* fp32 accumulate, tf32 tensor-core inputs (CUBLAS_COMPUTE_32F_FAST_TF32) */
  GT_COMPUTE_F16,       /* fp16 accumulate */
  GT_COMPUTE_F64,       /* fp64 accumulate */
  GT_COMPUTE_I32,       /* int32 accumulate */
  GT_COMPUTE_F32_FAST_F16,  /* CUBLAS_COMPUTE_32F_FAST_16F */
  GT_COMPUTE_F32_FAST_BF16, /* CUBLAS_COMPUTE_32F_FAST_16BF */
  GT_COMPUTE__COUNT
} gt_compute_t;

typedef enum gt_epilogue {
  GT_EPI_NONE = 0,
  GT_EPI_BIAS,
  GT_EPI_RELU,
  GT_EPI_BIAS_RELU,
  GT_EPI_GELU,
  GT_EPI_BIAS_GELU,
  GT_EPI__COUNT
} gt_epilogue_t;

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

const char *gt_dtype_name(gt_dtype_t t);        /* "bf16" */
size_t gt_dtype_size(gt_dtype_t t);             /* bytes per element */
/* Parse a type name; accepts a few common aliases (fp32, float, half, bfloat16, fp16, int8,
 * e4m3fn, float8_e4m3fn, e5m2, float8_e5m2). FNUZ names fail with a message naming the dialect. */
gt_status_t gt_dtype_parse(const char *s, gt_dtype_t *out);

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

const char *gt_compute_name(gt_compute_t c);    /* "f32", "tf32", ... */
gt_status_t gt_compute_parse(const char *s, gt_compute_t *out);

const char *gt_epilogue_name(gt_epilogue_t e);  /* "none", "bias", "bias_gelu" ... */
gt_status_t gt_epilogue_parse(const char *s, gt_epilogue_t *out);

/* Scalar conversions (round-to-nearest-even on the way down; NaN preserved). */
float gt_bf16_to_f32(uint16_t h);
uint16_t gt_f32_to_bf16(float f);
float gt_f16_to_f32(uint16_t h);
uint16_t gt_f32_to_f16(float f);
float gt_e4m3fn_to_f32(uint8_t v);
uint8_t gt_f32_to_e4m3fn(float f); /* saturates to +-448 */
float gt_e5m2_to_f32(uint8_t v);
uint8_t gt_f32_to_e5m2(float f);

/* Element i of a buffer of type t, widened to double. */
double gt_load_elem(const void *buf, gt_dtype_t t, size_t i);
/* Store v (rounded per type; ints saturate) into element i. */
void gt_store_elem(void *buf, gt_dtype_t t, size_t i, double v);

#ifdef __cplusplus
}
#endif
#endif
