/* The plain-C half of the grouped GEMM host API (gt_grouped.h): table lookup, the layout a
 * problem's strides describe, the launch grid and the workspace size. It builds without CUDA,
 * so the table and the grid rule are tested on any host. */
#include "gt_grouped.h"

#include <string.h>

int gt_grouped_find(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < gt_grouped_instance_count; i++)
    if (strcmp(gt_grouped_instances[i].name, name) == 0) return (int)i;
  return -1;
}

int gt_grouped_layout_of(const gt_grouped_args_t *a) {
  if (a->sbk == 1) return GT_GROUPED_ENK;
  if (a->sbn == 1) return GT_GROUPED_EKN;
  return -1;
}

/* x: every tile of BN rows of every non-empty group. The host does not know the split (offs is
 * on the device), but a group of c > 0 rows has ceil(c / BN) <= c / BN + 1 tiles, and at most
 * min(groups, rows) groups are non-empty, so ceil(rows / BN) + min(groups, rows) slots cover any
 * routing; the CTAs of slots past the last tile exit before loading. */
void gt_grouped_grid(int idx, const gt_grouped_args_t *a, unsigned grid[3]) {
  const gt_grouped_instance_t *in = &gt_grouped_instances[idx];
  const int64_t bn = in->tile_rows, bm = in->tile_n;
  const int64_t nonempty = a->groups < a->rows ? a->groups : a->rows;
  grid[0] = (unsigned)((a->rows + bn - 1) / bn + nonempty);
  grid[1] = (unsigned)((a->n + bm - 1) / bm);
  grid[2] = (unsigned)in->splitk;
}

size_t gt_grouped_workspace_bytes(int idx, const gt_grouped_args_t *a) {
  (void)idx;
  (void)a;
  return 0;
}
