/* Internals of the CUDA harness shared by its files: the device kernels it launches (input
 * initialisation, output poisoning, the fp64 reference, the comparison) and NVML telemetry.
 * Nothing outside src/harness/cuda includes this except tests that want the timing method. */
#ifndef GT_CUDA_HARNESS_H
#define GT_CUDA_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/gt_dtype.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"
#include "harness/gt_harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernels (cuda_kernels.cu) --------------------------------------------------------------- */

/* Fill count elements of type t with random values that are never zero: decimals in [-1, 1), or
 * integers in [-range, range] \ {0} when ints (range 3 for GT_INIT_INT, 16 for integer element
 * types, as the host harness draws them). Element i depends only on (seed, i), so a fill is
 * reproducible from the seed. */
cudaError_t gt_cuk_fill_random(void *buf, gt_dtype_t t, size_t count, uint64_t seed, bool ints,
                               int range, cudaStream_t s);

/* The separator of fenced timing (gt_measure_opts_t.fenced): one warp increments *word, so the
 * kernel has a side effect and cannot be dropped, and it never triggers programmatic dependent
 * launch, so a PDL kernel after it starts only when it has finished. */
cudaError_t gt_cuk_fence(unsigned *word, cudaStream_t s);

/* Fill count elements of elem_size bytes each with the byte pattern pat (elem_size <= 8). */
cudaError_t gt_cuk_fill_pattern(void *buf, size_t elem_size, size_t count, const void *pat,
                                cudaStream_t s);

/* The GEMM a reference or comparison is about (a device-friendly copy of gt_problem_t). */
typedef struct gt_cuk_gemm {
  int a_type, b_type, c_type, d_type, bias_type; /* gt_dtype_t */
  int transa, transb;                            /* gt_trans_t */
  int epilogue;                                  /* gt_epilogue_t */
  int beta_zero;
  int64_t m, n, k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c;
  double alpha, beta;
  /* fp8 scaling (gt_scale_mode_t of A and B; device f32 arrays, NULL for none): each operand
   * element is dequantized by its factor before the product, D scaled by *sd after the
   * epilogue, as gt_reference_gemm does. */
  int scale_a, scale_b;
  const float *sa, *sb, *sd;
} gt_cuk_gemm_t;

/* ref[(b*n + j)*m + i] = act(alpha * sum_k op(A)[i,k] op(B)[k,j] + beta * C[i,j] + bias[i]) in
 * fp64, then saturated to fp8's finite range or rounded and saturated to an integer output type,
 * as gt_reference_gemm defines it. C is read only when !beta_zero, bias only for bias epilogues. */
cudaError_t gt_cuk_reference(const gt_cuk_gemm_t *g, const void *A, const void *B, const void *C,
                             const void *bias, double *ref, cudaStream_t s);

/* Sums the comparison needs, accumulated on the device. */
typedef struct gt_cuk_acc {
  double ref2_all;  /* pass 1: sum of ref^2 over finite references */
  unsigned long long finite_all;
  double diff2, ref2; /* pass 2: as gt_metric_acc_t */
  unsigned long long mismatches, nonfinite, unwritten, checked;
  unsigned long long absmax_bits; /* pass 1: max |ref| over finite references, as the bits of a
                                     non-negative double (they order as the values do) */
} gt_cuk_acc_t;

/* Pass 1: ref2_all and finite_all of the m*n*batch reference values into *acc (device memory,
 * zeroed by the caller). */
cudaError_t gt_cuk_ref_stats(const double *ref, size_t count, gt_cuk_acc_t *acc, cudaStream_t s);

/* Pass 2: every output element through gt_metric_acc_add's rules (poisoned = its bytes equal
 * pat, the poison pattern of d_type; has_poison false when outputs were not poisoned). */
cudaError_t gt_cuk_compare(const gt_cuk_gemm_t *g, const void *D, const double *ref, double atol,
                           double rtol, const void *pat, bool has_poison, gt_cuk_acc_t *acc,
                           cudaStream_t s);

/* ---- NVML telemetry (nvml.c) ---------------------------------------------------------------- */

/* NVML's handle for CUDA device `device` (matched by PCI bus id), loading libnvidia-ml.so.1 on
 * first use. GT_ERR_LIBRARY with the reason when NVML is missing or does not know the device. */
gt_status_t gt_nvml_device(int device, void **handle);
/* SM clock, temperature, power and clock-event reasons now. */
gt_status_t gt_nvml_telemetry(void *handle, gt_telemetry_t *out);
/* Processes other than this one with a compute context on the device (-1 when unknown). */
int gt_nvml_busy_processes(void *handle);

/* ---- timing method --------------------------------------------------------------------------- */

/* How a loaded candidate is timed: "graph" (CUDA-graph replays of `launches` launches) or
 * "stream" (plain launches between events: capture failed for it). Decided at load (one launch
 * is captured as a probe); the same string gt_harness_cuda.timing returns. */
const char *gt_harness_cuda_timing_method(struct gt_loaded *l);
/* Why graph capture failed for l ("" when it did not). */
const char *gt_harness_cuda_capture_error(struct gt_loaded *l);
/* Input sets the bench rotates through and their total bytes. */
void gt_harness_cuda_rotation(struct gt_bench *b, int *nsets, size_t *total_bytes);

#ifdef __cplusplus
}
#endif
#endif
