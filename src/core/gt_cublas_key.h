/* The key of a live cuBLAS / cuBLASLt call: a gt_problem_t built from the raw arguments the
 * entry point received, so the runtime looks up exactly the key `tune` wrote.
 *
 * This file is pure C and includes no CUDA header: the numeric values of the cuBLAS enums it
 * needs are defined here (they are part of the libraries' stable ABI; checked against CUDA 13's
 * library_types.h, cublas_api.h and cublasLt.h). The runtime shim reads the handle state and the
 * cuBLASLt descriptor attributes itself and passes the plain values in.
 *
 * Every builder is conservative, and tells two kinds of call apart:
 *   - calls it cannot key at all (a data type no key has, arguments cuBLAS itself rejects, an
 *     unreadable descriptor): GT_ERR_UNSUPPORTED with a one-line reason in gt_err_msg();
 *   - calls it can key but that gemmtune must never tune or serve (a non-default algorithm,
 *     device pointer mode where beta cannot be read, pedantic or emulated math, fp8 scaling
 *     the key cannot state (C / aux / D-out scales, block formats), ldd != ldc, an epilogue with auxiliary outputs, pointer-array and grouped
 *     batches, ...): with a mark (gt_cublas_mark_t) they are keyed as well as the key can state
 *     them and the mark says why they are not tunable, so `capture` can record them (the GEMM
 *     time they cost is part of the workload's); without a mark they are GT_ERR_UNSUPPORTED with
 *     that reason, as before marks existed.
 * Either way the caller passes the call through untouched. */
#ifndef GT_CUBLAS_KEY_H
#define GT_CUBLAS_KEY_H

#include <stdbool.h>
#include <stdint.h>

#include "gt_problem.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cudaDataType_t (library_types.h) */
enum {
  GT_CUDA_R_32F = 0,
  GT_CUDA_R_64F = 1,
  GT_CUDA_R_16F = 2,
  GT_CUDA_R_8I = 3,
  GT_CUDA_R_32I = 10,
  GT_CUDA_R_16BF = 14,
  GT_CUDA_R_8F_E4M3 = 28,
  GT_CUDA_R_8F_E5M2 = 29
};

/* cublasComputeType_t (cublas_api.h) */
enum {
  GT_CUBLAS_COMPUTE_16F = 64,
  GT_CUBLAS_COMPUTE_16F_PEDANTIC = 65,
  GT_CUBLAS_COMPUTE_32F = 68,
  GT_CUBLAS_COMPUTE_32F_PEDANTIC = 69,
  GT_CUBLAS_COMPUTE_64F = 70,
  GT_CUBLAS_COMPUTE_64F_PEDANTIC = 71,
  GT_CUBLAS_COMPUTE_32I = 72,
  GT_CUBLAS_COMPUTE_32I_PEDANTIC = 73,
  GT_CUBLAS_COMPUTE_32F_FAST_16F = 74,
  GT_CUBLAS_COMPUTE_32F_FAST_16BF = 75,
  GT_CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  GT_CUBLAS_COMPUTE_32F_EMULATED_16BFX9 = 78,
  GT_CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT = 79
};

/* cublasOperation_t */
enum { GT_CUBLAS_OP_N = 0, GT_CUBLAS_OP_T = 1, GT_CUBLAS_OP_C = 2, GT_CUBLAS_OP_CONJG = 3 };

/* cublasGemmAlgo_t: the two values that mean "let cuBLAS choose". */
enum { GT_CUBLAS_GEMM_DEFAULT = -1, GT_CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 };

/* cublasPointerMode_t / cublasLtPointerMode_t */
enum { GT_CUBLAS_POINTER_MODE_HOST = 0, GT_CUBLAS_POINTER_MODE_DEVICE = 1 };

/* cublasMath_t: the low nibble is the mode, higher bits are flags. */
enum {
  GT_CUBLAS_DEFAULT_MATH = 0,
  GT_CUBLAS_TENSOR_OP_MATH = 1,
  GT_CUBLAS_PEDANTIC_MATH = 2,
  GT_CUBLAS_TF32_TENSOR_OP_MATH = 3,
  GT_CUBLAS_FP32_EMULATED_BF16X9_MATH = 4,
  GT_CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH = 8,
  GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16
};

/* cublasFillMode_t: cuBLASLt's default fill mode is FULL. */
enum { GT_CUBLAS_FILL_MODE_FULL = 2 };

/* cublasLtOrder_t, cublasLtEpilogue_t, cublasLtBatchMode_t (cublasLt.h) */
enum { GT_CUBLASLT_ORDER_COL = 0 };
enum {
  GT_CUBLASLT_EPILOGUE_DEFAULT = 1,
  GT_CUBLASLT_EPILOGUE_RELU = 2,
  GT_CUBLASLT_EPILOGUE_BIAS = 4,
  GT_CUBLASLT_EPILOGUE_RELU_BIAS = 6,
  GT_CUBLASLT_EPILOGUE_GELU = 32,
  GT_CUBLASLT_EPILOGUE_GELU_BIAS = 36
};
enum { GT_CUBLASLT_BATCH_MODE_STRIDED = 0 };

/* cublasLtMatmulDescAttributes_t / cublasLtMatrixLayoutAttribute_t values the shim reads. */
enum {
  GT_CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0,
  GT_CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1,
  GT_CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,
  GT_CUBLASLT_MATMUL_DESC_TRANSA = 3,
  GT_CUBLASLT_MATMUL_DESC_TRANSB = 4,
  GT_CUBLASLT_MATMUL_DESC_TRANSC = 5,
  GT_CUBLASLT_MATMUL_DESC_FILL_MODE = 6,
  GT_CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  GT_CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
  GT_CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10,
  GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,
  GT_CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE = 14,
  GT_CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = 15,
  GT_CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17,
  GT_CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18,
  GT_CUBLASLT_MATMUL_DESC_C_SCALE_POINTER = 19,
  GT_CUBLASLT_MATMUL_DESC_D_SCALE_POINTER = 20,
  GT_CUBLASLT_MATMUL_DESC_AMAX_D_POINTER = 21,
  GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER = 23,
  GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER = 24,
  GT_CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25,
  GT_CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,
  GT_CUBLASLT_MATMUL_DESC_A_SCALE_MODE = 31,
  GT_CUBLASLT_MATMUL_DESC_B_SCALE_MODE = 32,
  GT_CUBLASLT_MATMUL_DESC_C_SCALE_MODE = 33,
  GT_CUBLASLT_MATMUL_DESC_D_SCALE_MODE = 34,
  GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE = 35,
  GT_CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER = 36,
  GT_CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE = 37,
  GT_CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR = 38
};
enum {
  GT_CUBLASLT_MATRIX_LAYOUT_TYPE = 0,
  GT_CUBLASLT_MATRIX_LAYOUT_ORDER = 1,
  GT_CUBLASLT_MATRIX_LAYOUT_ROWS = 2,
  GT_CUBLASLT_MATRIX_LAYOUT_COLS = 3,
  GT_CUBLASLT_MATRIX_LAYOUT_LD = 4,
  GT_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
  GT_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6,
  GT_CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET = 7,
  GT_CUBLASLT_MATRIX_LAYOUT_BATCH_MODE = 8
};

/* cublasLtMatmulMatrixScale_t (cublasLt.h, CUDA 12.8+) */
enum {
  GT_CUBLASLT_MATRIX_SCALE_SCALAR_32F = 0,
  GT_CUBLASLT_MATRIX_SCALE_VEC16_UE4M3 = 1,
  GT_CUBLASLT_MATRIX_SCALE_VEC32_UE8M0 = 2,
  GT_CUBLASLT_MATRIX_SCALE_OUTER_VEC_32F = 3,
  GT_CUBLASLT_MATRIX_SCALE_VEC128_32F = 4,
  GT_CUBLASLT_MATRIX_SCALE_BLK128X128_32F = 5
};

/* Positions in gt_cublaslt_desc_t.scale_ptr. */
enum {
  GT_LT_SCALE_A = 0,
  GT_LT_SCALE_B,
  GT_LT_SCALE_C,
  GT_LT_SCALE_D,
  GT_LT_AMAX_D,
  GT_LT_SCALE_AUX,
  GT_LT_AMAX_AUX,
  GT_LT_SCALE_D_OUT
};

/* What the key needs beyond the call's arguments: the handle's modes and the device identity. */
typedef struct gt_cublas_env {
  int pointer_mode;       /* cublasGetPointerMode of the handle (ignored for cublasLtMatmul) */
  int math_mode;          /* cublasGetMathMode of the handle (ignored for cublasLtMatmul) */
  char arch[GT_ARCH_MAX]; /* "sm_90" */
  int sm_count;           /* multiprocessors of the handle's device */
  bool sizes_64;          /* the call came through a _64 entry point (cublasGemmEx_64, ...): its
                             sizes are int64_t. One whose sizes all fit an int is the same key as
                             its 32-bit twin; larger ones are marked (no baseline takes them). */
} gt_cublas_env_t;

/* Why a keyed call cannot be tuned: why[0] == '\0' for a tunable key. The reason is one line
 * without commas (it becomes a CSV cell), e.g. "pointer-array batch (cublasGemmBatchedEx):
 * operands at arbitrary addresses; strides shown as if packed". */
#define GT_CUBLAS_MARK_MAX 160
typedef struct gt_cublas_mark {
  char why[GT_CUBLAS_MARK_MAX];
} gt_cublas_mark_t;

/* Map a cudaDataType_t value to a gemmtune element type. GT_ERR_UNSUPPORTED for complex,
 * unsigned, sub-byte and block-scaled types. */
gt_status_t gt_cublas_dtype(int cuda_type, gt_dtype_t *out);

/* Every builder below ends in (gt_problem_t *out, gt_cublas_mark_t *mark). On GT_OK *out is the
 * key; with mark given, mark->why says why the key is not tunable ("" when it is). With mark
 * NULL a key that is not tunable is GT_ERR_UNSUPPORTED with that reason. Calls that cannot be
 * keyed are GT_ERR_UNSUPPORTED either way. */

/* The key of cublasGemmEx (and cublasGemmEx_64, with env->sizes_64). beta points to the host
 * scalar (scale type implied by the compute type); it is read only to decide beta_zero. Marked:
 * device pointer mode (beta_zero recorded as 0), a non-default algo, pedantic/emulated compute,
 * math modes whose effect on the result is not part of the key. Not keyed: arguments cuBLAS
 * itself would reject, types no key has. */
gt_status_t gt_cublas_key_gemm_ex(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                  int64_t n, int64_t k, int atype, int64_t lda, int btype,
                                  int64_t ldb, const void *beta, int ctype, int64_t ldc,
                                  int compute_type, int algo, gt_problem_t *out,
                                  gt_cublas_mark_t *mark);

/* The key of cublasGemmStridedBatchedEx (and its _64 form). batch_count 1 gives the same key as
 * cublasGemmEx (strides 0), because the computation is the same. */
gt_status_t gt_cublas_key_gemm_strided_batched_ex(
    const gt_cublas_env_t *env, int transa, int transb, int64_t m, int64_t n, int64_t k,
    int atype, int64_t lda, int64_t stride_a, int btype, int64_t ldb, int64_t stride_b,
    const void *beta, int ctype, int64_t ldc, int64_t stride_c, int64_t batch_count,
    int compute_type, int algo, gt_problem_t *out, gt_cublas_mark_t *mark);

/* The key of cublasGemmBatchedEx (and its _64 form): pointer arrays, so no key can state where
 * the operands are. Always marked (beyond the marks of cublasGemmEx); batch = batch_count, the
 * strides as if the operands were packed (tight). */
gt_status_t gt_cublas_key_gemm_batched_ex(const gt_cublas_env_t *env, int transa, int transb,
                                          int64_t m, int64_t n, int64_t k, int atype, int64_t lda,
                                          int btype, int64_t ldb, const void *beta, int ctype,
                                          int64_t ldc, int64_t batch_count, int compute_type,
                                          int algo, gt_problem_t *out, gt_cublas_mark_t *mark);

/* The key of group `group` of a cublasGemmGroupedBatchedEx call (and its _64 form): that group's
 * transposes, sizes and leading dimensions, beta element `group` of beta_array (read only in host
 * pointer mode), batch = group_size. Always marked (pointer arrays, several shapes per call). */
gt_status_t gt_cublas_key_gemm_grouped_ex(const gt_cublas_env_t *env, int transa, int transb,
                                          int64_t m, int64_t n, int64_t k, int atype, int64_t lda,
                                          int btype, int64_t ldb, const void *beta_array,
                                          int64_t group, int ctype, int64_t ldc,
                                          int64_t group_size, int compute_type, gt_problem_t *out,
                                          gt_cublas_mark_t *mark);

/* The key of cublasSgemm_v2 (and cublasSgemm_v2_64): f32 everywhere; compute f32, or tf32 when
 * the handle's math mode is CUBLAS_TF32_TENSOR_OP_MATH, or f32_fast_f16 under the deprecated
 * CUBLAS_TENSOR_OP_MATH (other modes are marked). */
gt_status_t gt_cublas_key_sgemm(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                const float *beta, int64_t ldc, gt_problem_t *out,
                                gt_cublas_mark_t *mark);
/* cublasSgemmStridedBatched (and _64): the Sgemm key with batch and strides, as
 * cublasGemmStridedBatchedEx keys them (batch 1 is the cublasSgemm_v2 key). */
gt_status_t gt_cublas_key_sgemm_strided_batched(const gt_cublas_env_t *env, int transa,
                                                int transb, int64_t m, int64_t n, int64_t k,
                                                int64_t lda, int64_t stride_a, int64_t ldb,
                                                int64_t stride_b, const float *beta, int64_t ldc,
                                                int64_t stride_c, int64_t batch_count,
                                                gt_problem_t *out, gt_cublas_mark_t *mark);

/* The key of cublasHgemm (and cublasHgemm_64): f16 everywhere, f16 compute and scale. beta is an
 * IEEE half. */
gt_status_t gt_cublas_key_hgemm(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                const uint16_t *beta, int64_t ldc, gt_problem_t *out,
                                gt_cublas_mark_t *mark);
/* cublasHgemmStridedBatched (and _64): the Hgemm key with batch and strides. */
gt_status_t gt_cublas_key_hgemm_strided_batched(const gt_cublas_env_t *env, int transa,
                                                int transb, int64_t m, int64_t n, int64_t k,
                                                int64_t lda, int64_t stride_a, int64_t ldb,
                                                int64_t stride_b, const uint16_t *beta,
                                                int64_t ldc, int64_t stride_c,
                                                int64_t batch_count, gt_problem_t *out,
                                                gt_cublas_mark_t *mark);

/* One cuBLASLt matrix layout's attribute values. ok = false when the shim could not read them. */
typedef struct gt_cublaslt_layout {
  bool ok;
  uint32_t type;        /* cudaDataType_t */
  int32_t order;        /* cublasLtOrder_t */
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch_count;
  int64_t batch_stride; /* CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET */
  int64_t plane_offset;
  uint32_t batch_mode;
} gt_cublaslt_layout_t;

/* A cuBLASLt matmul descriptor's attribute values. Every attribute the key cannot express must
 * be at its default for a tunable key (otherwise the key is marked); ok = false (or
 * extras_unreadable) makes the call unsupported. */
typedef struct gt_cublaslt_desc {
  bool ok;                    /* the core attributes were read */
  int32_t compute_type;       /* cublasComputeType_t */
  int32_t scale_type;         /* cudaDataType_t */
  int32_t pointer_mode;
  int32_t transa, transb, transc;
  int32_t fill_mode;
  uint32_t epilogue;
  const void *bias;           /* CUBLASLT_MATMUL_DESC_BIAS_POINTER */
  int32_t bias_data_type;     /* -1 = default (D's type) */
  int64_t bias_batch_stride;
  const void *aux;            /* epilogue auxiliary output */
  int64_t alpha_vector_batch_stride;
  int32_t sm_count_target;
  /* FP8 scaling (GT_LT_SCALE_*): A's and B's scales (with their modes), D's scale and amax are
   * keyed; the others set, or a mode the key has not, are marked. */
  const void *scale_ptr[8];   /* A, B, C, D, amax D, aux scale, aux amax, D out scale */
  int32_t scale_mode[6];      /* A, B, C, D, aux, D out */
  int8_t fast_accum;
  const void *emulation_desc;
  bool extras_unreadable;     /* an optional attribute could not be read */
} gt_cublaslt_desc_t;

/* The key of cublasLtMatmul from its descriptor and layouts (lay[0..3] = A, B, C, D). beta is the
 * host scalar of the descriptor's scale type (read only in host pointer mode). fp8 scaling is
 * keyed (scale_a/scale_b from the A/B scale pointers and modes, fast_accum, scale_d for an fp8 D
 * with a D scale, amax_d). Marked: device pointer modes, C / aux / D-out scale pointers, scaling
 * modes of C and D, the Blackwell block-scale formats, a scale on an operand that is not fp8,
 * the sm_90 block modes where cuBLASLt refuses them (gt_scale_block_refusal), fast accumulation without fp8 operands, an emulation descriptor, an SM count target, a fill mode, an epilogue the key has not (recorded as
 * none), row-major or pointer-array layouts, ldd != ldc, D's batch stride != C's, a bias of
 * another type or batched. Not keyed: unreadable attributes, types no key has, inconsistent
 * layouts, transc, a bias epilogue without a bias. */
gt_status_t gt_cublas_key_lt_matmul(const gt_cublas_env_t *env, const gt_cublaslt_desc_t *desc,
                                    const gt_cublaslt_layout_t lay[4], const void *beta,
                                    gt_problem_t *out, gt_cublas_mark_t *mark);

#ifdef __cplusplus
}
#endif
#endif
