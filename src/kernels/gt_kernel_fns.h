/* Host-side handles of the own kernels (CUDA builds only): the generated function table, in the
 * same order as gt_kinstances[], and the split-K reduce kernels. A kernel handle is the address
 * cudaLaunchKernel and cudaFuncGetAttributes take. */
#ifndef GT_KERNEL_FNS_H
#define GT_KERNEL_FNS_H

#include <stddef.h>

#include "core/gt_dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_kfn {
  const char *name; /* equals gt_kinstances[i].name; checked when the provider initialises */
  const void *fn;
} gt_kfn_t;

/* generated/instances_fn.cu */
extern const gt_kfn_t gt_kinstance_fns[];
extern const size_t gt_kinstance_fn_count;

/* The split-K reduce kernel for an output type (bf16, f16), NULL for any other type. It takes
 * the same gt_kargs_t as the main kernel, one thread per output element. */
const void *gt_kreduce_fn(gt_dtype_t t);
/* Threads per CTA the reduce kernel is launched with. */
#define GT_KREDUCE_THREADS 256

#ifdef __cplusplus
}
#endif
#endif
