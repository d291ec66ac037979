/* Host-side handles of the own kernels (CUDA builds only): the generated function table, in the
 * same order as gt_kinstances[], and the split-K reduce kernels of every architecture. A kernel
 * handle is the address cudaLaunchKernel and cudaFuncGetAttributes take. */
#ifndef GT_KERNEL_FNS_H
#define GT_KERNEL_FNS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gt_kernel_name.h's parameters, declared only: the kernel sources that include this header
 * need none of it. */
struct gt_kparams;

typedef struct gt_kfn {
  const char *name; /* equals gt_kinstances[i].name; checked when the provider initialises */
  const void *fn;
} gt_kfn_t;

/* generated/instances_fn.cu: the instances, and the split-K reduce kernels by symbol
 * (gt_<arch>_splitk_reduce_<type> for every architecture of the table, bf16 and f16). */
extern const gt_kfn_t gt_kinstance_fns[];
extern const size_t gt_kinstance_fn_count;
extern const gt_kfn_t gt_kreduce_fns[];
extern const size_t gt_kreduce_fn_count;

/* The split-K reduce kernel an instance with parameters kp launches (the one named by
 * gt_kernel_reduce_symbol: kp's architecture and output type), NULL when this build has none
 * (a type other than bf16 and f16). It takes the same gt_kargs_t as the main kernel, one
 * thread per output element. */
const void *gt_kreduce_fn(const struct gt_kparams *kp);
/* Threads per CTA the reduce kernel is launched with. */
#define GT_KREDUCE_THREADS 256

#ifdef __cplusplus
}
#endif
#endif
