/* The entry points the preload shim interposes: cublasGemmEx, cublasGemmStridedBatchedEx,
 * cublasSgemm_v2, cublasHgemm and cublasLtMatmul, the only symbols the library exports
 * (preload.map). Their signatures differ; what they do does not, and is written once:
 *
 *   SHIM_REAL       find the real function (once), or fail the call when there is none
 *   enter_*         take the call on, or leave it to the real function untouched (already inside
 *                   an interposed call on this thread, nothing to do, a call cuBLAS makes itself)
 *   key, try        build the call's key, then gt_preload_call_try: count, decide, run on a hit
 *   leave           after the tuned candidate ran, or after the real function did: end the
 *                   timing, lower the depth, return the status
 *
 * so an entry point is its signature, its key builder and its one call of the real function. */
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
typedef struct shim_half { unsigned short x; } shim_half_t; /* __half is C++ only */
typedef cublasStatus_t (*pfn_Hgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const shim_half_t *, const shim_half_t *, int,
                                    const shim_half_t *, int, const shim_half_t *, shim_half_t *,
                                    int);
typedef cublasStatus_t (*pfn_LtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                       const void *, cublasLtMatrixLayout_t, const void *,
                                       cublasLtMatrixLayout_t, const void *, const void *,
                                       cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);

/* Declares `real`, the real `name` of library lib, resolved on the first call and kept (release
 * and acquire: another thread either resolves it again or sees the whole pointer). Without it the
 * call fails (there is nothing to fall back on). */
#define SHIM_REAL(lib, type, name)                                          \
  static _Atomic(type) resolved;                                            \
  type real = atomic_load_explicit(&resolved, memory_order_acquire);        \
  if (!real) {                                                              \
    real = (type)gt_preload_real_symbol(lib, #name, (void *)(name));        \
    atomic_store_explicit(&resolved, real, memory_order_release);           \
  }                                                                         \
  if (!real) return gt_preload_missing_real(#name)

/* One interposed call as its entry point sees it. entered: the shim took the call on and raised
 * this thread's depth (leave lowers it); call is valid only then. */
typedef struct frame {
  bool entered;
  gt_preload_call_t call;
} frame_t;

/* True when the call is to be keyed: the shim took it on (entered) and the handle's stream and
 * modes were read. False: call the real function, then leave. */
static bool enter_handle(frame_t *f, const char *entry, cublasHandle_t handle) {
  f->entered = false;
  if (gt_preload_depth > 0 || !gt_preload_active()) return false;
  gt_preload_depth++;
  f->entered = true;
  return gt_preload_call_begin_handle(&f->call, entry, handle);
}

/* The same for cublasLtMatmul, whose descriptors are read before anything else (the caller does
 * that: see cublasLtMatmul). caller: the entry point's return address; cuBLAS's own calls (from
 * entry points the shim does not define) are cuBLAS's business and go straight through. */
static bool enter_lt(frame_t *f, uintptr_t caller) {
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

/* gt_preload_call_try with the operands of a cublas<...> call: D is C, no bias, no workspace. */
static bool try_blas(frame_t *f, gt_status_t key_status, const gt_problem_t *key, const void *A,
                     const void *B, void *C, const void *alpha, const void *beta) {
  gt_operands_t ops = {.A = A, .B = B, .C = C, .D = C, .alpha = alpha, .beta = beta};
  return gt_preload_call_try(&f->call, key_status, key, &ops);
}

/* Ends the call (status is the tuned candidate's CUBLAS_STATUS_SUCCESS or the real function's). */
static cublasStatus_t leave(frame_t *f, cublasStatus_t status) {
  if (f->entered) {
    gt_preload_call_end(&f->call);
    gt_preload_depth--;
  }
  return status;
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                              cublasOperation_t transb, int m, int n, int k,
                                              const void *alpha, const void *A, cudaDataType Atype,
                                              int lda, const void *B, cudaDataType Btype, int ldb,
                                              const void *beta, void *C, cudaDataType Ctype,
                                              int ldc, cublasComputeType_t computeType,
                                              cublasGemmAlgo_t algo) {
  SHIM_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmEx, cublasGemmEx);
  frame_t f;
  if (enter_handle(&f, "cublasGemmEx", handle)) {
    gt_problem_t key;
    const gt_status_t ks =
        gt_cublas_key_gemm_ex(&f.call.env, transa, transb, m, n, k, Atype, lda, Btype, ldb, beta,
                              Ctype, ldc, computeType, algo, &key);
    if (try_blas(&f, ks, &key, A, B, C, alpha, beta)) return leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return leave(&f, real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
                        beta, C, Ctype, ldc, computeType, algo));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
    const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  SHIM_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmStridedBatchedEx, cublasGemmStridedBatchedEx);
  frame_t f;
  if (enter_handle(&f, "cublasGemmStridedBatchedEx", handle)) {
    gt_problem_t key;
    const gt_status_t ks = gt_cublas_key_gemm_strided_batched_ex(
        &f.call.env, transa, transb, m, n, k, Atype, lda, strideA, Btype, ldb, strideB, beta,
        Ctype, ldc, strideC, batchCount, computeType, algo, &key);
    if (try_blas(&f, ks, &key, A, B, C, alpha, beta)) return leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return leave(&f, real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype,
                        ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType,
                        algo));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k,
                                                const float *alpha, const float *A, int lda,
                                                const float *B, int ldb, const float *beta,
                                                float *C, int ldc) {
  SHIM_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_Sgemm, cublasSgemm_v2);
  frame_t f;
  if (enter_handle(&f, "cublasSgemm_v2", handle)) {
    gt_problem_t key;
    const gt_status_t ks =
        gt_cublas_key_sgemm(&f.call.env, transa, transb, m, n, k, lda, ldb, beta, ldc, &key);
    if (try_blas(&f, ks, &key, A, B, C, alpha, beta)) return leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return leave(&f, real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int m, int n, int k,
                                             const shim_half_t *alpha, const shim_half_t *A,
                                             int lda, const shim_half_t *B, int ldb,
                                             const shim_half_t *beta, shim_half_t *C, int ldc) {
  SHIM_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_Hgemm, cublasHgemm);
  frame_t f;
  if (enter_handle(&f, "cublasHgemm", handle)) {
    gt_problem_t key;
    const gt_status_t ks = gt_cublas_key_hgemm(&f.call.env, transa, transb, m, n, k, lda, ldb,
                                               beta ? &beta->x : NULL, ldc, &key);
    if (try_blas(&f, ks, &key, A, B, C, alpha, beta)) return leave(&f, CUBLAS_STATUS_SUCCESS);
  }
  return leave(&f, real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
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
  SHIM_REAL(GT_PRELOAD_LIB_CUBLASLT, pfn_LtMatmul, cublasLtMatmul);
  frame_t f;
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
      /* The caller's algo is its own (heuristic) choice for this key; a tuned row replaces it. */
      const gt_status_t ks = gt_cublas_key_lt_matmul(&f.call.env, &desc, lay, beta, &key);
      gt_operands_t ops = {.A = A,
                           .B = B,
                           .C = C,
                           .D = D,
                           .bias = desc.bias,
                           .alpha = alpha,
                           .beta = beta,
                           .workspace = workspace,
                           .ws_size = workspace ? workspaceSizeInBytes : 0};
      if (gt_preload_call_try(&f.call, ks, &key, &ops)) return leave(&f, CUBLAS_STATUS_SUCCESS);
    }
  }
  return leave(&f, real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D,
                        Ddesc, algo, workspace, workspaceSizeInBytes, stream));
}
