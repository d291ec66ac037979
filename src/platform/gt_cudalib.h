/* cuBLAS and cuBLASLt resolved at run time, the type mappings between gemmtune and CUDA, and one
 * check macro per foreign status type.
 *
 * gemmtune never links cuBLAS. In a process that already loaded it (PyTorch's wheel, the host
 * application under the preload shim) the copy that is already there is used, found with
 * dlopen(RTLD_NOLOAD); otherwise the file GEMMTUNE_CUBLASLT_LIB / GEMMTUNE_CUBLAS_LIB names (the copy
 * a captured application loaded, set by `tune`), else the normal search path. Symbols are
 * looked up on the library's own handle (dlvsym with its version node first), never through
 * RTLD_DEFAULT or RTLD_NEXT, so a preloaded library that defines cublasGemmEx/cublasLtMatmul itself
 * (libgemmtune_preload.so) is never mistaken for the real one.
 *
 * The cuBLAS headers are included for their types only; every call goes through gt_cublas_api_t. */
#ifndef GT_CUDALIB_H
#define GT_CUDALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <library_types.h>

#include "core/gt_dtype.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Function pointer types, spelled out from cublas_api.h / cublasLt.h (13.x) because the C++
 * overloads in those headers make __typeof__ ambiguous. */
typedef cublasStatus_t (*gt_pfn_cublasCreate)(cublasHandle_t *handle);
typedef cublasStatus_t (*gt_pfn_cublasDestroy)(cublasHandle_t handle);
typedef cublasStatus_t (*gt_pfn_cublasGetVersion)(cublasHandle_t handle, int *version);
typedef cublasStatus_t (*gt_pfn_cublasSetWorkspace)(cublasHandle_t handle, void *workspace,
                                                    size_t bytes);
typedef cublasStatus_t (*gt_pfn_cublasSetStream)(cublasHandle_t handle, cudaStream_t stream);
typedef cublasStatus_t (*gt_pfn_cublasGetStream)(cublasHandle_t handle, cudaStream_t *stream);
typedef cublasStatus_t (*gt_pfn_cublasGetPointerMode)(cublasHandle_t handle,
                                                      cublasPointerMode_t *mode);
typedef cublasStatus_t (*gt_pfn_cublasSetPointerMode)(cublasHandle_t handle,
                                                      cublasPointerMode_t mode);
typedef cublasStatus_t (*gt_pfn_cublasGetMathMode)(cublasHandle_t handle, cublasMath_t *mode);
typedef cublasStatus_t (*gt_pfn_cublasSetMathMode)(cublasHandle_t handle, cublasMath_t mode);
typedef cublasStatus_t (*gt_pfn_cublasGemmEx)(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype,
    int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
    cublasGemmAlgo_t algo);
typedef cublasStatus_t (*gt_pfn_cublasGemmStridedBatchedEx)(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
    const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo);
typedef cublasStatus_t (*gt_pfn_cublasSgemm)(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int m, int n, int k,
                                             const float *alpha, const float *A, int lda,
                                             const float *B, int ldb, const float *beta, float *C,
                                             int ldc);
/* cublas_api.h declares cublasHgemm for C++ only (__half is a C++ type); C sees 16-bit words. */
#ifdef __cplusplus
typedef __half gt_cublas_half_t;
#else
typedef struct gt_cublas_half { unsigned short x; } gt_cublas_half_t;
#endif
typedef cublasStatus_t (*gt_pfn_cublasHgemm)(cublasHandle_t handle, cublasOperation_t transa,
                                             cublasOperation_t transb, int m, int n, int k,
                                             const gt_cublas_half_t *alpha,
                                             const gt_cublas_half_t *A, int lda,
                                             const gt_cublas_half_t *B, int ldb,
                                             const gt_cublas_half_t *beta, gt_cublas_half_t *C,
                                             int ldc);
typedef const char *(*gt_pfn_cublasGetStatusString)(cublasStatus_t status);
typedef cublasStatus_t (*gt_pfn_cublasGetProperty)(libraryPropertyType type, int *value);

typedef cublasStatus_t (*gt_pfn_cublasLtCreate)(cublasLtHandle_t *handle);
typedef cublasStatus_t (*gt_pfn_cublasLtDestroy)(cublasLtHandle_t handle);
typedef size_t (*gt_pfn_cublasLtGetVersion)(void);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *desc,
                                                          cublasComputeType_t computeType,
                                                          cudaDataType_t scaleType);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t desc);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t desc,
                                                                cublasLtMatmulDescAttributes_t attr,
                                                                const void *buf, size_t size);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulDescGetAttribute)(cublasLtMatmulDesc_t desc,
                                                                cublasLtMatmulDescAttributes_t attr,
                                                                void *buf, size_t size,
                                                                size_t *written);
typedef cublasStatus_t (*gt_pfn_cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *layout,
                                                            cudaDataType type, uint64_t rows,
                                                            uint64_t cols, int64_t ld);
typedef cublasStatus_t (*gt_pfn_cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t layout);
typedef cublasStatus_t (*gt_pfn_cublasLtMatrixLayoutSetAttribute)(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, const void *buf,
    size_t size);
typedef cublasStatus_t (*gt_pfn_cublasLtMatrixLayoutGetAttribute)(
    cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr, void *buf, size_t size,
    size_t *written);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *pref);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulPreferenceSetAttribute)(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t size);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t pref);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulAlgoGetHeuristic)(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int *returned);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulAlgoGetIds)(
    cublasLtHandle_t handle, cublasComputeType_t computeType, cudaDataType_t scaleType,
    cudaDataType_t Atype, cudaDataType_t Btype, cudaDataType_t Ctype, cudaDataType_t Dtype,
    int requested, int ids[], int *returned);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulAlgoInit)(
    cublasLtHandle_t handle, cublasComputeType_t computeType, cudaDataType_t scaleType,
    cudaDataType_t Atype, cudaDataType_t Btype, cudaDataType_t Ctype, cudaDataType_t Dtype,
    int algoId, cublasLtMatmulAlgo_t *algo);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulAlgoCheck)(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    const cublasLtMatmulAlgo_t *algo, cublasLtMatmulHeuristicResult_t *result);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulAlgoCapGetAttribute)(
    const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoCapAttributes_t attr, void *buf,
    size_t size, size_t *written);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulAlgoConfigSetAttribute)(
    cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr, const void *buf,
    size_t size);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmulAlgoConfigGetAttribute)(
    const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr, void *buf,
    size_t size, size_t *written);
typedef cublasStatus_t (*gt_pfn_cublasLtMatmul)(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
    cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc, const void *beta,
    const void *C, cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
    const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSize, cudaStream_t stream);

/* The resolved entry points. Members are named after the C symbol without its "cublas" prefix
 * and "_v2" suffix (cublasSetStream_v2 -> SetStream, cublasLtMatmul -> LtMatmul); the macros in
 * cublas_v2.h therefore cannot rename them. */
typedef struct gt_cublas_api {
  bool have_cublas;           /* false when only cuBLASLt was asked for or found */
  bool have_cublaslt;
  bool cublas_was_loaded;     /* found already in the process (RTLD_NOLOAD) */
  bool cublaslt_was_loaded;
  char cublas_path[256];      /* the file the symbols came from (dladdr), "" when absent */
  char cublaslt_path[256];

  /* cuBLAS (valid when have_cublas) */
  gt_pfn_cublasCreate Create;                 /* cublasCreate_v2 */
  gt_pfn_cublasDestroy Destroy;               /* cublasDestroy_v2 */
  gt_pfn_cublasSetStream SetStream;           /* cublasSetStream_v2 */
  gt_pfn_cublasGetStream GetStream;           /* cublasGetStream_v2 */
  gt_pfn_cublasSetWorkspace SetWorkspace;     /* cublasSetWorkspace_v2 */
  gt_pfn_cublasSetMathMode SetMathMode;
  gt_pfn_cublasGetMathMode GetMathMode;
  gt_pfn_cublasGetPointerMode GetPointerMode; /* cublasGetPointerMode_v2 */
  gt_pfn_cublasSetPointerMode SetPointerMode; /* cublasSetPointerMode_v2 */
  gt_pfn_cublasGemmEx GemmEx;
  gt_pfn_cublasGemmStridedBatchedEx GemmStridedBatchedEx;
  gt_pfn_cublasSgemm Sgemm;                   /* cublasSgemm_v2 */
  gt_pfn_cublasHgemm Hgemm;
  gt_pfn_cublasGetVersion GetVersion;         /* cublasGetVersion_v2 */
  gt_pfn_cublasGetStatusString GetStatusString; /* (optional) NULL when absent */
  gt_pfn_cublasGetProperty GetProperty;       /* (optional) NULL when absent */

  /* cuBLASLt (valid when have_cublaslt) */
  gt_pfn_cublasLtCreate LtCreate;
  gt_pfn_cublasLtDestroy LtDestroy;
  gt_pfn_cublasLtGetVersion LtGetVersion;
  gt_pfn_cublasLtMatmulDescCreate LtMatmulDescCreate;
  gt_pfn_cublasLtMatmulDescDestroy LtMatmulDescDestroy;
  gt_pfn_cublasLtMatmulDescSetAttribute LtMatmulDescSetAttribute;
  gt_pfn_cublasLtMatmulDescGetAttribute LtMatmulDescGetAttribute;
  gt_pfn_cublasLtMatrixLayoutCreate LtMatrixLayoutCreate;
  gt_pfn_cublasLtMatrixLayoutDestroy LtMatrixLayoutDestroy;
  gt_pfn_cublasLtMatrixLayoutSetAttribute LtMatrixLayoutSetAttribute;
  gt_pfn_cublasLtMatrixLayoutGetAttribute LtMatrixLayoutGetAttribute;
  gt_pfn_cublasLtMatmulPreferenceCreate LtMatmulPreferenceCreate;
  gt_pfn_cublasLtMatmulPreferenceSetAttribute LtMatmulPreferenceSetAttribute;
  gt_pfn_cublasLtMatmulPreferenceDestroy LtMatmulPreferenceDestroy;
  gt_pfn_cublasLtMatmulAlgoGetHeuristic LtMatmulAlgoGetHeuristic;
  gt_pfn_cublasLtMatmulAlgoGetIds LtMatmulAlgoGetIds;
  gt_pfn_cublasLtMatmulAlgoInit LtMatmulAlgoInit;
  gt_pfn_cublasLtMatmulAlgoCheck LtMatmulAlgoCheck;
  gt_pfn_cublasLtMatmulAlgoCapGetAttribute LtMatmulAlgoCapGetAttribute;
  gt_pfn_cublasLtMatmulAlgoConfigSetAttribute LtMatmulAlgoConfigSetAttribute;
  gt_pfn_cublasLtMatmulAlgoConfigGetAttribute LtMatmulAlgoConfigGetAttribute;
  gt_pfn_cublasLtMatmul LtMatmul;
  gt_pfn_cublasGetStatusString LtGetStatusString; /* (optional) NULL when absent */
} gt_cublas_api_t;

/* Resolve cuBLAS and cuBLASLt (both required). Thread-safe; the work is done once per process
 * and later calls return the same table (or the same failure). On failure *out is NULL, the
 * status is GT_ERR_LIBRARY and the message names the library or symbol that is missing. */
gt_status_t gt_cudalib_load(const gt_cublas_api_t **out);
/* Resolve cuBLASLt only (cuBLAS is resolved too when present; have_cublas says so). For callers
 * that never touch the cuBLAS handle API. */
gt_status_t gt_cudalib_load_lt(const gt_cublas_api_t **out);

/* gemmtune types -> CUDA types. GT_ERR_UNSUPPORTED (message names the type) when CUDA has none. */
gt_status_t gt_cudalib_data_type(gt_dtype_t t, cudaDataType_t *out);
gt_status_t gt_cudalib_compute_type(gt_compute_t c, cublasComputeType_t *out);
/* Element type of the bias vector of a bias epilogue: the output type, except bf16 for fp8
 * outputs (cuBLASLt's default, which the harness and references follow). */
gt_dtype_t gt_cudalib_bias_type(const gt_problem_t *p);

/* "CUBLAS_STATUS_NOT_SUPPORTED" style name; never NULL (works without the library loaded). */
const char *gt_cublas_status_name(cublasStatus_t s);

/* True for errors after which the CUDA context cannot be used again (illegal address, launch
 * failure, assert, ...): every later CUDA call in this process returns the same error. */
bool gt_cuda_error_is_sticky(cudaError_t e);
/* True once a sticky error or a hang was seen in this process (set by gt_cuda_err and by
 * the harness). The process must stop using the GPU; a driver can still report and exit. */
bool gt_cuda_context_broken(void);
/* GT_OK when at least one CUDA device answers; *count (may be NULL) receives how many. Otherwise
 * GT_ERR_DEVICE with "no CUDA device[: reason]". */
gt_status_t gt_cuda_device_count(int *count);
/* Record that the context is unusable (a hang the harness gave up on). */
void gt_cuda_mark_context_broken(void);

/* Set the error message for a failed CUDA runtime call and return its status: GT_ERR_DEVICE
 * with a message starting "device fault:" for sticky errors (and the context marked broken),
 * GT_ERR_NOMEM for cudaErrorMemoryAllocation, GT_ERR_DEVICE otherwise. */
gt_status_t gt_cuda_err(cudaError_t e, const char *what, const char *file, int line);
/* Same for a cuBLAS/cuBLASLt status: GT_ERR_LIBRARY (GT_ERR_UNSUPPORTED for NOT_SUPPORTED and
 * ARCH_MISMATCH, GT_ERR_NOMEM for ALLOC_FAILED). An EXECUTION_FAILED also checks the CUDA context
 * for a sticky error, so a fault inside the library is reported as one. */
gt_status_t gt_cublas_err(cublasStatus_t s, const char *what, const char *file, int line);

/* Return from the enclosing gt_status_t function when a CUDA runtime call fails. */
#define GT_CUDA_CHECK(call)                                                   \
  do {                                                                        \
    cudaError_t gt_cuda_check_e_ = (call);                                    \
    if (gt_cuda_check_e_ != cudaSuccess)                                      \
      return gt_cuda_err(gt_cuda_check_e_, #call, __FILE__, __LINE__);       \
  } while (0)

/* Return from the enclosing gt_status_t function when a cuBLAS/cuBLASLt call fails. */
#define GT_CUBLAS_CHECK(call)                                                 \
  do {                                                                        \
    cublasStatus_t gt_cublas_check_s_ = (call);                               \
    if (gt_cublas_check_s_ != CUBLAS_STATUS_SUCCESS)                          \
      return gt_cublas_err(gt_cublas_check_s_, #call, __FILE__, __LINE__);    \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
