/* The 32-bit cuBLAS GEMM entry points whose calls are tunable keys, and cublasLtMatmul:
 * cublasGemmEx, cublasGemmStridedBatchedEx, cublasSgemm_v2, cublasHgemm,
 * cublasSgemmStridedBatched, cublasHgemmStridedBatched and cublasLtMatmul, over the skeleton of
 * preload_internal.h (resolve the real function, enter, key and try, leave). A call with
 * something no key states (device pointer mode, a non-default algo, FP8 scaling...) is keyed with
 * a mark: recorded under its key and reason, and passed through. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "preload_internal.h"

typedef cublasStatus_t (*pfn_GemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                     int, int, const void *, const void *, cudaDataType, int,
                                     const void *, cudaDataType, int, const void *, void *,
                                     cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_GemmStridedBatchedEx)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
    const void *, cudaDataType, int, long long int, const void *, cudaDataType, int,
    long long int, const void *, void *, cudaDataType, int, long long int, int,
    cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_Sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const float *, const float *, int, const float *,
                                    int, const float *, float *, int);
typedef cublasStatus_t (*pfn_Hgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const shim_half_t *, const shim_half_t *, int,
                                    const shim_half_t *, int, const shim_half_t *, shim_half_t *,
                                    int);
typedef cublasStatus_t (*pfn_SgemmStridedBatched)(cublasHandle_t, cublasOperation_t,
                                                  cublasOperation_t, int, int, int, const float *,
                                                  const float *, int, long long int,
                                                  const float *, int, long long int,
                                                  const float *, float *, int, long long int, int);
typedef cublasStatus_t (*pfn_HgemmStridedBatched)(cublasHandle_t, cublasOperation_t,
                                                  cublasOperation_t, int, int, int,
                                                  const shim_half_t *, const shim_half_t *, int,
                                                  long long int, const shim_half_t *, int,
                                                  long long int, const shim_half_t *,
                                                  shim_half_t *, int, long long int, int);
typedef cublasStatus_t (*pfn_LtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                       const void *, cublasLtMatrixLayout_t, const void *,
                                       cublasLtMatrixLayout_t, const void *, const void *,
                                       cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);

/* gt_preload_enter_handle for cublasLtMatmul, whose descriptors are read before anything else
 * (the caller does that: see cublasLtMatmul). caller: the entry point's return address; cuBLAS's
 * own calls (from inside libcublas, which binds its own entry points to itself) are cuBLAS's
 * business and go straight through. */
static bool enter_lt(gt_preload_frame_t *f, uintptr_t caller) {
  f->entered = false;
  if (gt_preload_depth > 0 || !gt_preload_active()) return false;
  const gt_preload_api_t *a = gt_preload_api();
  if (!a->LtDescGet || !a->LtLayoutGet) a = gt_preload_api_refill();
  if (caller >= a->cublas_lo && caller < a->cublas_hi) return false;
  gt_preload_depth++;
  f->entered = true;
  memset(&f->call, 0, sizeof f->call);
  f->call.timer.slot = -1;
  return true;
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int m, int n, int k,
                                              const void *alpha, const void *A, cudaDataType Atype,
                                              int lda, const void *B, cudaDataType Btype, int ldb,
                                              const void *beta, void *C, cudaDataType Ctype,
                                              int ldc, cublasComputeType_t computeType,
                                              cublasGemmAlgo_t algo) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmEx, cublasGemmEx);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmEx", handle, false)) {
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

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
    const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmStridedBatchedEx, cublasGemmStridedBatchedEx);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmStridedBatchedEx", handle, false)) {
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

GT_PRELOAD_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k,
                                                const float *alpha, const float *A, int lda,
                                                const float *B, int ldb, const float *beta,
                                                float *C, int ldc) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_Sgemm, cublasSgemm_v2);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasSgemm_v2", handle, false)) {
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

GT_PRELOAD_EXPORT cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int m, int n, int k,
                                             const shim_half_t *alpha, const shim_half_t *A,
                                             int lda, const shim_half_t *B, int ldb,
                                             const shim_half_t *beta, shim_half_t *C, int ldc) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_Hgemm, cublasHgemm);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasHgemm", handle, false)) {
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

/* The typed strided-batched forms key as cublasGemmStridedBatchedEx with their types: tunable
 * keys, served like any other (PyTorch's fp32 bmm and baddbmm come this way). */
GT_PRELOAD_EXPORT cublasStatus_t cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const float *alpha, const float *A, int lda, long long int strideA, const float *B, int ldb,
    long long int strideB, const float *beta, float *C, int ldc, long long int strideC,
    int batchCount) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_SgemmStridedBatched, cublasSgemmStridedBatched);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasSgemmStridedBatched", handle, false)) {
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

GT_PRELOAD_EXPORT cublasStatus_t cublasHgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const shim_half_t *alpha, const shim_half_t *A, int lda, long long int strideA,
    const shim_half_t *B, int ldb, long long int strideB, const shim_half_t *beta, shim_half_t *C,
    int ldc, long long int strideC, int batchCount) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_HgemmStridedBatched, cublasHgemmStridedBatched);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasHgemmStridedBatched", handle, false)) {
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

GT_PRELOAD_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle,
                                                cublasLtMatmulDesc_t computeDesc,
                                                const void *alpha, const void *A,
                                                cublasLtMatrixLayout_t Adesc, const void *B,
                                                cublasLtMatrixLayout_t Bdesc, const void *beta,
                                                const void *C, cublasLtMatrixLayout_t Cdesc,
                                                void *D, cublasLtMatrixLayout_t Ddesc,
                                                const cublasLtMatmulAlgo_t *algo, void *workspace,
                                                size_t workspaceSizeInBytes, cudaStream_t stream) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLASLT, pfn_LtMatmul, cublasLtMatmul);
  gt_preload_frame_t f;
  if (enter_lt(&f, (uintptr_t)__builtin_return_address(0))) {
    /* The descriptors first: cuBLASLt itself validates them, and a call it cannot describe goes
     * through before the shim touches anything CUDA (the stream included). */
    gt_cublaslt_desc_t desc;
    gt_cublaslt_layout_t lay[4];
    gt_preload_lt_read(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &desc, lay);
    if (!desc.ok) {
      gt_preload_note_unsupported("cublasLtMatmul", "matmul descriptor unreadable");
    } else if (gt_preload_call_begin(&f.call, "cublasLtMatmul", stream)) {
      gt_problem_t key;
      gt_cublas_mark_t mk;
      /* The caller's algo is its own (heuristic) choice for this key; a tuned row replaces it. */
      const gt_status_t ks = gt_cublas_key_lt_matmul(&f.call.env, &desc, lay, beta, &key, &mk);
      gt_operands_t ops = {.A = A,
                           .B = B,
                           .C = C,
                           .D = D,
                           .bias = desc.bias,
                           .alpha = alpha,
                           .beta = beta,
                           .workspace = workspace,
                           .ws_size = workspace ? workspaceSizeInBytes : 0,
                           /* fp8: the application's own scale arrays, passed on as pointers
                            * (device memory the tuned kernel reads when it runs, as cuBLASLt
                            * would), and its amax output. */
                           .scale_a = desc.scale_ptr[GT_LT_SCALE_A],
                           .scale_b = desc.scale_ptr[GT_LT_SCALE_B],
                           .scale_d = desc.scale_ptr[GT_LT_SCALE_D],
                           .amax_d = (float *)desc.scale_ptr[GT_LT_AMAX_D]};
      if (gt_preload_call_try(&f.call, ks, &key, &mk, &ops))
        return gt_preload_leave(&f, CUBLAS_STATUS_SUCCESS);
    }
  }
  return gt_preload_leave(&f, real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C,
                                   Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream));
}
