/* The batches no key can state: cublasGemmBatchedEx (arrays of operand pointers, in device
 * memory) and cublasGemmGroupedBatchedEx (groups of such batches, each group its own shape), and
 * their _64 twins. They are GEMMs the workload runs, so they are recorded (a row per key with the
 * reason it cannot be tuned, their calls and GPU time in `capture` and in the stats), and always
 * run by the real function: the operand pointers are never read (they are device memory, and
 * reading them would mean a copy and a synchronisation). Of a grouped call the host arrays the
 * API documents as host memory (transposes, sizes, leading dimensions, group sizes, and beta in
 * host pointer mode) are read: one key per group, the call's time split between them by FLOPs. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "preload_internal.h"

/* Groups of one grouped call the shim records, at most (a larger call is counted unkeyed). */
#define GT_PRELOAD_MAX_GROUPS 1024

typedef cublasStatus_t (*pfn_GemmBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int, int, int, const void *, const void *const[],
                                            cudaDataType, int, const void *const[], cudaDataType,
                                            int, const void *, void *const[], cudaDataType, int,
                                            int, cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_GemmBatchedEx_64)(cublasHandle_t, cublasOperation_t,
                                               cublasOperation_t, int64_t, int64_t, int64_t,
                                               const void *, const void *const[], cudaDataType,
                                               int64_t, const void *const[], cudaDataType,
                                               int64_t, const void *, void *const[],
                                               cudaDataType, int64_t, int64_t,
                                               cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_GemmGroupedBatchedEx)(
    cublasHandle_t, const cublasOperation_t[], const cublasOperation_t[], const int[], const int[],
    const int[], const void *, const void *const[], cudaDataType_t, const int[],
    const void *const[], cudaDataType_t, const int[], const void *, void *const[], cudaDataType_t,
    const int[], int, const int[], cublasComputeType_t);
typedef cublasStatus_t (*pfn_GemmGroupedBatchedEx_64)(
    cublasHandle_t, const cublasOperation_t[], const cublasOperation_t[], const int64_t[],
    const int64_t[], const int64_t[], const void *, const void *const[], cudaDataType_t,
    const int64_t[], const void *const[], cudaDataType_t, const int64_t[], const void *,
    void *const[], cudaDataType_t, const int64_t[], int64_t, const int64_t[],
    cublasComputeType_t);

/* Records a pointer-array call under its (always marked) key. The mark is the only thing that
 * keeps a tuned candidate from running with the NULL operands given here, so it is made sure of. */
static void record_batched(gt_preload_frame_t *f, gt_status_t ks, const gt_problem_t *key,
                           gt_cublas_mark_t *mk, const void *alpha, const void *beta) {
  if (ks == GT_OK && !mk->why[0]) snprintf(mk->why, sizeof mk->why, "pointer-array batch");
  (void)gt_preload_try_blas(f, ks, key, mk, NULL, NULL, NULL, alpha, beta);
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *const Aarray[], cudaDataType Atype, int lda,
    const void *const Barray[], cudaDataType Btype, int ldb, const void *beta,
    void *const Carray[], cudaDataType Ctype, int ldc, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmBatchedEx, cublasGemmBatchedEx);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmBatchedEx", handle, false)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks = gt_cublas_key_gemm_batched_ex(
        &f.call.env, transa, transb, m, n, k, Atype, lda, Btype, ldb, beta, Ctype, ldc,
        batchCount, computeType, algo, &key, &mk);
    record_batched(&f, ks, &key, &mk, alpha, beta);
  }
  return gt_preload_leave(&f, real(handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda,
                                   Barray, Btype, ldb, beta, Carray, Ctype, ldc, batchCount,
                                   computeType, algo));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmBatchedEx_64(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
    int64_t n, int64_t k, const void *alpha, const void *const Aarray[], cudaDataType Atype,
    int64_t lda, const void *const Barray[], cudaDataType Btype, int64_t ldb, const void *beta,
    void *const Carray[], cudaDataType Ctype, int64_t ldc, int64_t batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmBatchedEx_64, cublasGemmBatchedEx_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmBatchedEx_64", handle, true)) {
    gt_problem_t key;
    gt_cublas_mark_t mk;
    const gt_status_t ks = gt_cublas_key_gemm_batched_ex(
        &f.call.env, transa, transb, m, n, k, Atype, lda, Btype, ldb, beta, Ctype, ldc,
        batchCount, computeType, algo, &key, &mk);
    record_batched(&f, ks, &key, &mk, alpha, beta);
  }
  return gt_preload_leave(&f, real(handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda,
                                   Barray, Btype, ldb, beta, Carray, Ctype, ldc, batchCount,
                                   computeType, algo));
}

/* A grouped call's host arrays, of int (32-bit entry point) or int64_t (_64). */
typedef struct groups {
  const cublasOperation_t *ta, *tb;
  const void *m, *n, *k, *lda, *ldb, *ldc, *size;
  bool wide;
  int64_t count;
  int atype, btype, ctype, compute;
  const void *beta;
} groups_t;

static int64_t at(const groups_t *g, const void *arr, int64_t i) {
  return g->wide ? ((const int64_t *)arr)[i] : ((const int *)arr)[i];
}

/* One key per group (or the call counted unkeyed, with the reason), recorded together. */
static void record_groups(gt_preload_frame_t *f, const groups_t *g) {
  const char *entry = f->call.entry;
  if (g->count < 1) {
    gt_preload_note_unsupported(entry, "grouped batch without groups");
    return;
  }
  if (g->count > GT_PRELOAD_MAX_GROUPS) {
    gt_preload_note_unsupported(entry, "grouped batch of more than 1024 groups");
    return;
  }
  if (!g->ta || !g->tb || !g->m || !g->n || !g->k || !g->lda || !g->ldb || !g->ldc || !g->size) {
    gt_preload_note_unsupported(entry, "grouped batch with a NULL array argument");
    return;
  }
  gt_problem_t *keys = malloc((size_t)g->count * sizeof *keys);
  gt_cublas_mark_t *marks = malloc((size_t)g->count * sizeof *marks);
  gt_status_t s = keys && marks ? GT_OK : gt_err_set(GT_ERR_NOMEM, "out of host memory");
  for (int64_t i = 0; s == GT_OK && i < g->count; i++)
    s = gt_cublas_key_gemm_grouped_ex(&f->call.env, g->ta[i], g->tb[i], at(g, g->m, i),
                                      at(g, g->n, i), at(g, g->k, i), g->atype, at(g, g->lda, i),
                                      g->btype, at(g, g->ldb, i), g->beta, i, g->ctype,
                                      at(g, g->ldc, i), at(g, g->size, i), g->compute, &keys[i],
                                      &marks[i]);
  if (s == GT_OK)
    gt_preload_call_groups(&f->call, keys, marks, (int)g->count);
  else
    gt_preload_note_unsupported(entry, gt_err_msg());
  free(keys);
  free(marks);
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmGroupedBatchedEx(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int m_array[], const int n_array[],
    const int k_array[], const void *alpha_array, const void *const Aarray[], cudaDataType_t Atype,
    const int lda_array[], const void *const Barray[], cudaDataType_t Btype,
    const int ldb_array[], const void *beta_array, void *const Carray[], cudaDataType_t Ctype,
    const int ldc_array[], int group_count, const int group_size[],
    cublasComputeType_t computeType) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmGroupedBatchedEx, cublasGemmGroupedBatchedEx);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmGroupedBatchedEx", handle, false)) {
    const groups_t g = {transa_array, transb_array, m_array,    n_array,   k_array,
                        lda_array,    ldb_array,    ldc_array,  group_size, false,
                        group_count,  Atype,        Btype,      Ctype,     computeType,
                        beta_array};
    record_groups(&f, &g);
  }
  return gt_preload_leave(&f, real(handle, transa_array, transb_array, m_array, n_array, k_array,
                                   alpha_array, Aarray, Atype, lda_array, Barray, Btype,
                                   ldb_array, beta_array, Carray, Ctype, ldc_array, group_count,
                                   group_size, computeType));
}

GT_PRELOAD_EXPORT cublasStatus_t cublasGemmGroupedBatchedEx_64(
    cublasHandle_t handle, const cublasOperation_t transa_array[],
    const cublasOperation_t transb_array[], const int64_t m_array[], const int64_t n_array[],
    const int64_t k_array[], const void *alpha_array, const void *const Aarray[],
    cudaDataType_t Atype, const int64_t lda_array[], const void *const Barray[],
    cudaDataType_t Btype, const int64_t ldb_array[], const void *beta_array,
    void *const Carray[], cudaDataType_t Ctype, const int64_t ldc_array[], int64_t group_count,
    const int64_t group_size[], cublasComputeType_t computeType) {
  GT_PRELOAD_REAL(GT_PRELOAD_LIB_CUBLAS, pfn_GemmGroupedBatchedEx_64,
                  cublasGemmGroupedBatchedEx_64);
  gt_preload_frame_t f;
  if (gt_preload_enter_handle(&f, "cublasGemmGroupedBatchedEx_64", handle, true)) {
    const groups_t g = {transa_array, transb_array, m_array,    n_array,   k_array,
                        lda_array,    ldb_array,    ldc_array,  group_size, true,
                        group_count,  Atype,        Btype,      Ctype,     computeType,
                        beta_array};
    record_groups(&f, &g);
  }
  return gt_preload_leave(&f, real(handle, transa_array, transb_array, m_array, n_array, k_array,
                                   alpha_array, Aarray, Atype, lda_array, Barray, Btype,
                                   ldb_array, beta_array, Carray, Ctype, ldc_array, group_count,
                                   group_size, computeType));
}
