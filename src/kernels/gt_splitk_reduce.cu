// Which split-K reduce kernel an instance launches (host side). The kernels are generated for
// every architecture in the table (generated/splitk_reduce_<arch>.cu, body in
// gt_splitk_reduce.cuh) and listed by symbol in generated/instances_fn.cu; the symbol is looked
// up by the name gt_kernel_reduce_symbol writes, the same name verify expects in a trace, so
// the kernel launched and the kernel expected cannot drift apart.
#include <string.h>

#include "gt_kernel_fns.h"
#include "gt_kernel_name.h"

extern "C" const void *gt_kreduce_fn(const gt_kparams_t *kp) {
  char sym[96];
  const int n = gt_kernel_reduce_symbol(kp, sym, (int)sizeof sym);
  if (n < 0 || n >= (int)sizeof sym) return nullptr;
  for (size_t i = 0; i < gt_kreduce_fn_count; i++)
    if (strcmp(gt_kreduce_fns[i].name, sym) == 0) return gt_kreduce_fns[i].fn;
  return nullptr;
}
