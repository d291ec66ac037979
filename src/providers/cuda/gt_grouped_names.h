/* How grouped GEMMs (torch._grouped_mm) appear in a kernel trace: the kernel-identity members of
 * the `grouped` provider, and the kernels torch's own path runs. Pure C, built everywhere, so a
 * trace recorded on a GPU host is judged the same on any host. */
#ifndef GT_GROUPED_NAMES_H
#define GT_GROUPED_NAMES_H

#include <stdbool.h>

#include "providers/gt_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An own grouped kernel's instance name is its kernel symbol: one kernel per call, no prepare
 * kernel (the kernel reads offs itself). */
bool gt_grouped_row_kernels(const char *instance, const gt_problem_t *key, gt_row_kernels_t *out);
/* The own grouped kernels: a traced symbol that is the name of an instance of this build's table
 * (gt_grouped_instances: gt_sm90_grpd_..., gt_sm90_grpp_...). */
bool gt_grouped_owns_kernel(const char *kernel);
/* Whether a traced kernel is one torch's bf16bf16_grouped_mm / f8f8bf16_grouped_mm path runs:
 * its one-block prepare_grouped_gemm_data kernel, or its CUTLASS ptr-array kernel (a
 * cutlass::device_kernel over a GroupProblemShape), mangled or demangled. What verify expects
 * to be gone where a grouped row engaged. */
bool gt_grouped_is_torch_kernel(const char *kernel);

#ifdef __cplusplus
}
#endif
#endif
