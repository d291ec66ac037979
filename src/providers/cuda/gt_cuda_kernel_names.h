/* How the CUDA providers' kernels appear in a kernel trace: the kernel-identity members of the
 * cublas, cublaslt and kernels providers (gt_provider_t's row_kernels, owns_kernel, same_kernel).
 *
 * Pure C with no CUDA dependency, built in every build: the providers' tables point here, and
 * so do their stand-ins in the registry of a build without CUDA, so `verify`'s judgement of a
 * trace recorded on a GPU host is the same, and tested, on any host. */
#ifndef GT_CUDA_KERNEL_NAMES_H
#define GT_CUDA_KERNEL_NAMES_H

#include <stdbool.h>

#include "providers/gt_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLAS and cuBLASLt pick their kernels at run time from the call and the configuration, so a
 * row's kernels are "any of the library's" (out->any) and are found by running the row. */
bool gt_cublas_row_kernels(const char *instance, const gt_problem_t *key, gt_row_kernels_t *out);
/* The library's GEMM kernels by name: starting nvjet, sm90_xmma or cutlass, or containing gemm,
 * gemv or splitKreduce (case-insensitive). */
bool gt_cublas_owns_kernel(const char *kernel);
/* nvjet kernels that differ only in the token saying how the epilogue treats C (bz / bx / badd
 * ...), which follows the call's pointers and beta rather than the tuned configuration. */
bool gt_cublas_same_kernel(const char *expected, const char *ran);

/* gemmtune's own kernels: the instance name is the kernel symbol, plus the split-K reduce when the
 * instance uses one (gt_kernel_symbols). */
bool gt_own_row_kernels(const char *instance, const gt_problem_t *key, gt_row_kernels_t *out);
/* The gt_<arch>_ prefix of the generated instances (gt_kernel_name_is_own). */
bool gt_own_owns_kernel(const char *kernel);

#ifdef __cplusplus
}
#endif
#endif
