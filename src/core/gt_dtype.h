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

const char *gt_dtype_name(gt_dtype_t t);        /* "bf16" */
size_t gt_dtype_size(gt_dtype_t t);             /* bytes per element */
/* Parse a type name; accepts a few common aliases (fp32, float, half, bfloat16, fp16, int8,
 * e4m3fn, float8_e4m3fn, e5m2, float8_e5m2). FNUZ names fail with a message naming the dialect. */
gt_status_t gt_dtype_parse(const char *s, gt_dtype_t *out);

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
