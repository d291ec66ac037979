/* Kernel identity of grouped GEMMs (gt_grouped_names.h). */
#include "gt_grouped_names.h"

#include <stdio.h>
#include <string.h>

#include "kernels/gt_grouped.h"

bool gt_grouped_row_kernels(const char *instance, const gt_problem_t *key, gt_row_kernels_t *out) {
  (void)key;
  memset(out, 0, sizeof *out);
  if (!instance || !gt_grouped_owns_kernel(instance)) return false;
  out->n = 1;
  snprintf(out->sym[0], sizeof out->sym[0], "%s", instance);
  return true;
}

bool gt_grouped_owns_kernel(const char *kernel) {
  return kernel && gt_grouped_find(kernel) >= 0; /* the symbol is the instance's name */
}

bool gt_grouped_is_torch_kernel(const char *kernel) {
  if (!kernel) return false;
  if (strstr(kernel, "prepare_grouped_gemm_data")) return true;
  /* The CUTLASS kernel: _ZN7cutlass13device_kernel...GroupProblemShape... (CUPTI's mangled
   * name) or cutlass::device_kernel<...GroupProblemShape...> (demangled). */
  return strstr(kernel, "cutlass") && strstr(kernel, "device_kernel") &&
         strstr(kernel, "GroupProblemShape");
}
