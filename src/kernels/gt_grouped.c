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

/* Every tile of BN rows of every non-empty group. The host does not know the split (offs is on
 * the device), but a group of c > 0 rows has ceil(c / BN) <= (c + BN - 1) / BN tiles and at most
 * m = min(groups, rows) groups are non-empty, so the tiles number at most
 * floor((rows + m (BN - 1)) / BN): rows itself when BN is 1 (a tile per row, no slot wasted at
 * one token), never more than ceil(rows / BN) + m. The CTAs of slots past the last tile exit
 * before loading. */
int64_t gt_grouped_slots(int idx, const gt_grouped_args_t *a) {
  const int64_t bn = gt_grouped_instances[idx].tile_rows;
  if (a->rows <= 0) return 0;
  const int64_t nonempty = a->groups < a->rows ? a->groups : a->rows;
  return (a->rows + (nonempty > 0 ? nonempty : 0) * (bn - 1)) / bn;
}

void gt_grouped_grid(int idx, const gt_grouped_args_t *a, unsigned grid[3]) {
  const gt_grouped_instance_t *in = &gt_grouped_instances[idx];
  const unsigned slots = (unsigned)gt_grouped_slots(idx, a);
  const unsigned ntiles = (unsigned)((a->n + in->tile_n - 1) / in->tile_n);
  if (in->family == GT_GROUPED_VECTOR) {
    grid[0] = (ntiles + (unsigned)in->chunks - 1) / (unsigned)in->chunks;
    grid[1] = slots;
  } else {
    grid[0] = slots;
    grid[1] = ntiles;
  }
  grid[2] = (unsigned)in->splitk;
}

size_t gt_grouped_workspace_bytes(int idx, const gt_grouped_args_t *a) {
  (void)idx;
  (void)a;
  return 0;
}
