/* The parameter block a grouped GEMM kernel instance takes (by value, __grid_constant__): the
 * problem as the caller gave it (gt_grouped_args.h) plus what the host derives from it per call,
 * the two TMA tensor maps and the split of K. Plain C, standard layout, so the host side
 * (gt_grouped.cu) and the kernels (gt_grp.cuh) agree on it. */
#ifndef GT_GROUPED_KARGS_H
#define GT_GROUPED_KARGS_H

#include <stdint.h>

#include "gt_grouped_args.h"
#include "gt_kernel_args.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_grouped_kargs {
  /* First: TMA needs them 64-byte aligned in the parameter space. tma_w is 3-D (the group is
   * the outer coordinate, so a box never reads into the next group's weights); tma_x is the
   * routed rows, 2-D (K, rows). */
  gt_tmap_t tma_w, tma_x;
  gt_grouped_args_t g;
  int64_t kchunk;   /* K elements per split (a multiple of the instance's BK), k when ks == 1 */
  int32_t evict_first; /* weight loads carry the L2 evict-first hint */
} gt_grouped_kargs_t;

#ifdef __cplusplus
}
#endif
#endif
