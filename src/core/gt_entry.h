/* The entry point a GEMM call came through. It is not part of the key (the same product computed
 * through cublasGemmEx or cublasLtMatmul is the same problem, and a tuned row serves both), but it
 * decides the baseline: a tuned row must beat what that entry point runs by default, so `tune`
 * races each shape against the path its calls actually took, and `capture` records it. */
#ifndef GT_ENTRY_H
#define GT_ENTRY_H

#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_entry {
  GT_ENTRY_DEFAULT = 0, /* not stated: the backend's usual path (cublasGemmEx on CUDA, the host loop) */
  GT_ENTRY_GEMMEX,      /* cublasGemmEx and its strided-batched, typed and _64 forms */
  GT_ENTRY_LTMATMUL,    /* cublasLtMatmul */
  GT_ENTRY_HOST,        /* a host application's own loop */
  GT_ENTRY_GROUPED_MM,  /* torch._grouped_mm's CUDA path (at::cuda::detail::bf16bf16_grouped_mm,
                           f8f8bf16_grouped_mm): its baseline is torch's own function */
  GT_ENTRY__COUNT
} gt_entry_t;

/* "default", "gemmex", "ltmatmul", "host", "grouped_mm" (as shapes files and `--entry` spell them). */
const char *gt_entry_name(gt_entry_t e);
/* Parse that spelling; the cuBLAS function names (cublasGemmEx, cublasGemmStridedBatchedEx,
 * cublasLtMatmul) are accepted too, since capture files and shim counters use them. GT_ERR_DATA
 * naming the value otherwise. */
gt_status_t gt_entry_parse(const char *s, gt_entry_t *out);

#ifdef __cplusplus
}
#endif
#endif
