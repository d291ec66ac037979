/* The _64 twins of the tunable entry points: cublasGemmEx_64, cublasGemmStridedBatchedEx_64,
 * cublasSgemm_v2_64, cublasHgemm_64, cublasSgemmStridedBatched_64 and
 * cublasHgemmStridedBatched_64 (the names cuBLAS 13 exports; cublas_v2.h maps cublasSgemm_64 to
 * cublasSgemm_v2_64). Their sizes are int64_t, which the key holds as they are: a call whose
 * sizes all fit an int is the same key as its 32-bit twin's and is served the same way (the
 * tuned candidate was gated on exactly that problem); larger sizes are keyed with a mark
 * (env.sizes_64: no baseline takes them, so `tune` could not race them) and passed through. */
#include <stdatomic.h>
#include <stdint.h>

#include "preload_internal.h"

typedef cublasStatus_t (*pfn_GemmEx_64)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                        int64_t, int64_t, int64_t, const void *, const void *,
                                        cudaDataType, int64_t, const void *, cudaDataType,
                                        int64_t, const void *, void *, cudaDataType, int64_t,
                                        cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_GemmStridedBatchedEx_64)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t, int64_t, int64_t, const void *,
    const void *, cudaDataType, int64_t, long long int, const void *, cudaDataType, int64_t,
    long long int, const void *, void *, cudaDataType, int64_t, long long int, int64_t,
    cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_Sgemm_64)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                       int64_t, int64_t, int64_t, const float *, const float *,
                                       int64_t, const float *, int64_t, const float *, float *,
                                       int64_t);
typedef cublasStatus_t (*pfn_Hgemm_64)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                       int64_t, int64_t, int64_t, const shim_half_t *,
                                       const shim_half_t *, int64_t, const shim_half_t *, int64_t,
                                       const shim_half_t *, shim_half_t *, int64_t);
typedef cublasStatus_t (*pfn_SgemmStridedBatched_64)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t, int64_t, int64_t,
    const float *, const float *, int64_t, long long int, const float *, int64_t, long long int,
    const float *, float *, int64_t, long long int, int64_t);
typedef cublasStatus_t (*pfn_HgemmStridedBatched_64)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t, int64_t, int64_t,
    const shim_half_t *, const shim_half_t *, int64_t, long long int, const shim_half_t *,
    int64_t, long long int, const shim_half_t *, shim_half_t *, int64_t, long long int, int64_t);

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
    int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType Atype, int64_t lda,
    const void *B, cudaDataType Btype, int64_t ldb, const void *beta, void *C, cudaDataType Ctype,
    int64_t ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmEx_64, cublasGemmEx_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmEx_64", handle, true)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks =
        gt_cublas_key_gemm_ex(&f.call.env, transa, transb, m, n, k, Atype, lda, Btype, ldb, beta,
                              Ctype, ldc, computeType, algo, &key, &mk);
    if (gt_preload_try_blas(&f, ks, &key, &mk, A, B, C, alpha, beta))
      return gt_preload_leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return gt_preload_leave(&f, real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
                                   ldb, beta, C, Ctype, ldc, computeType, algo));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmStridedBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
    int64_t n, int64_t k, const void *alpha, const void *A, cudaDataType Atype, int64_t lda,
    long long int strideA, const void *B, cudaDataType Btype, int64_t ldb, long long int strideB,
    const void *beta, void *C, cudaDataType Ctype, int64_t ldc, long long int strideC,
    int64_t batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmStridedBatchedEx_64,
                  cublasGemmStridedBatchedEx_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmStridedBatchedEx_64", handle, true)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks = gt_cublas_key_gemm_strided_batched_ex(
        &f.call.env, transa, transb, m, n, k, Atype, lda, strideA, Btype, ldb, strideB, beta,
        Ctype, ldc, strideC, batchCount, computeType, algo, &key, &mk);
    if (gt_preload_try_blas(&f, ks, &key, &mk, A, B, C, alpha, beta))
      return gt_preload_leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return gt_preload_leave(
      &f, real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
               strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasSgemm_v2_64(cublasHandle_t handle, cublasOperation_t transa,
                                                   cublasOperation_t transb, int64_t m, int64_t n,
                                                   int64_t k, const float *alpha, const float *A,
                                                   int64_t lda, const float *B, int64_t ldb,
                                                   const float *beta, float *C, int64_t ldc) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_Sgemm_64, cublasSgemm_v2_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasSgemm_v2_64", handle, true)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks = gt_cublas_key_sgemm(&f.call.env, transa, transb, m, n, k, lda, ldb,
                                               beta, ldc, &key, &mk);
    if (gt_preload_try_blas(&f, ks, &key, &mk, A, B, C, alpha, beta))
      return gt_preload_leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return gt_preload_leave(
      &f, real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasHgemm_64(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int64_t m, int64_t n,
                                                int64_t k, const shim_half_t *alpha,
                                                const shim_half_t *A, int64_t lda,
                                                const shim_half_t *B, int64_t ldb,
                                                const shim_half_t *beta, shim_half_t *C,
                                                int64_t ldc) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_Hgemm_64, cublasHgemm_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasHgemm_64", handle, true)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks = gt_cublas_key_hgemm(&f.call.env, transa, transb, m, n, k, lda, ldb,
                                               beta ? &beta->x : NULL, ldc, &key, &mk);
    if (gt_preload_try_blas(&f, ks, &key, &mk, A, B, C, alpha, beta))
      return gt_preload_leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return gt_preload_leave(
      &f, real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasSgemmStridedBatched_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
    int64_t n, int64_t k, const float *alpha, const float *A, int64_t lda, long long int strideA,
    const float *B, int64_t ldb, long long int strideB, const float *beta, float *C, int64_t ldc,
    long long int strideC, int64_t batchCount) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_SgemmStridedBatched_64, cublasSgemmStridedBatched_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasSgemmStridedBatched_64", handle, true)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks = gt_cublas_key_sgemm_strided_batched(
        &f.call.env, transa, transb, m, n, k, lda, strideA, ldb, strideB, beta, ldc, strideC,
        batchCount, &key, &mk);
    if (gt_preload_try_blas(&f, ks, &key, &mk, A, B, C, alpha, beta))
      return gt_preload_leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return gt_preload_leave(&f, real(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb,
                                   strideB, beta, C, ldc, strideC, batchCount));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasHgemmStridedBatched_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
    int64_t n, int64_t k, const shim_half_t *alpha, const shim_half_t *A, int64_t lda,
    long long int strideA, const shim_half_t *B, int64_t ldb, long long int strideB,
    const shim_half_t *beta, shim_half_t *C, int64_t ldc, long long int strideC,
    int64_t batchCount) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_HgemmStridedBatched_64, cublasHgemmStridedBatched_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasHgemmStridedBatched_64", handle, true)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks = gt_cublas_key_hgemm_strided_batched(
        &f.call.env, transa, transb, m, n, k, lda, strideA, ldb, strideB, beta ? &beta->x : NULL,
        ldc, strideC, batchCount, &key, &mk);
    if (gt_preload_try_blas(&f, ks, &key, &mk, A, B, C, alpha, beta))
      return gt_preload_leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return gt_preload_leave(&f, real(handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb,
                                   strideB, beta, C, ldc, strideC, batchCount));
}
