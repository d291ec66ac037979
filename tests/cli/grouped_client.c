/* Hands grouped GEMM calls to the preload shim as the torch bridge does (gt_grouped_entry.h), for
 * test_preload_grouped.sh: a Mixtral-style expert projection at 2 and 32 routed rows, three calls
 * each, the 32-row one also at 17 rows (the same bucket), and one call with a bias (marked). The
 * pointers are placeholders: without a usable GPU nothing runs (GEMMTUNE_TEST_DEVICE). Prints what
 * begin returned for each call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "runtime/gt_grouped_entry.h"

static gt_grouped_call_t expert(int64_t rows, bool bias) {
  gt_grouped_call_t c = {.entry = "bf16bf16_grouped_mm", .a_type = GT_DT_BF16,
                         .b_type = GT_DT_BF16, .out_type = GT_DT_BF16, .a_2d = true, .b_3d = true,
                         .has_offs = true, .has_bias = bias, .rows = rows, .k = 1024, .n = 3584,
                         .groups = 8, .a_row_stride = 1024, .a_col_stride = 1,
                         .b_group_stride = 3584 * 1024, .b_k_stride = 1, .b_n_stride = 1024,
                         .out_row_stride = 3584, .out_col_stride = 1};
  return c;
}

int main(void) {
  gemmtune_grouped_begin_fn begin =
      (gemmtune_grouped_begin_fn)dlsym(RTLD_DEFAULT, GEMMTUNE_GROUPED_BEGIN_SYM);
  gemmtune_grouped_end_fn end = (gemmtune_grouped_end_fn)dlsym(RTLD_DEFAULT, GEMMTUNE_GROUPED_END_SYM);
  if (!begin || !end) return printf("no shim\n"), 3;
  static char buf[64];
  gemmtune_grouped_ops_t ops = {.mat_a = buf, .mat_b = buf, .offs = (const int32_t *)buf,
                                .out = buf};
  const int64_t rows[] = {2, 2, 2, 32, 32, 17};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    gt_grouped_call_t c = expert(rows[i], false);
    int r = begin(&c, &ops, NULL);
    printf("rows %lld: %d\n", (long long)rows[i], r);
    if (r == GEMMTUNE_GROUPED_ENTERED) end();
  }
  gt_grouped_call_t b = expert(32, true);
  int r = begin(&b, &ops, NULL);
  printf("bias: %d\n", r);
  if (r == GEMMTUNE_GROUPED_ENTERED) end();
  return 0;
}
