/* The grouped GEMM table (generated/grouped_instances.c, gt_grouped.h): every name spells its
 * row's parameters (gt_<arch>_<family>_bf16_<layout>_t<BM>x<BN>x<BK>_s<S>_ks<KS>) and is found by
 * gt_grouped_find; threads and shared memory follow from the tile as the kernels assume; each
 * layout has decode and prefill instances; the grid covers every tile of any routing (the slot
 * bound) and the layout of a problem comes from its strides. Plain C, no GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "kernels/gt_grouped.h"
#include "kernels/gt_kernel_arch.h"

static void test_names_spell_rows(void **state) {
  (void)state;
  assert_true(gt_grouped_instance_count > 0);
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    const gt_grouped_instance_t *in = &gt_grouped_instances[i];
    char want[160];
    assert_true((size_t)in->arch < gt_karch_count);
    snprintf(want, sizeof want, "gt_%s_%s_bf16_%s_t%dx%dx%d_s%d_ks%d", gt_karchs[in->arch].token,
             in->family == GT_GROUPED_DECODE ? "grpd" : "grpp",
             in->layout == GT_GROUPED_ENK ? "enk" : "ekn", in->tile_n, in->tile_rows, in->tile_k,
             in->stages, in->splitk);
    assert_string_equal(in->name, want);
    assert_int_equal(gt_grouped_find(in->name), (int)i);
    assert_int_equal(in->dtype, GT_DT_BF16);
  }
  assert_int_equal(gt_grouped_find("gt_sm90_grpd_bf16_enk_t1x1x1_s1_ks1"), -1);
  assert_int_equal(gt_grouped_find(NULL), -1);
}

/* Decode: one consumer warpgroup + the producer warp; prefill: one per 64 rows. The ring holds
 * S stages of BM weight rows and BN routed rows of BK elements, plus 1 KB of alignment slack. */
static void test_geometry(void **state) {
  (void)state;
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    const gt_grouped_instance_t *in = &gt_grouped_instances[i];
    const int wgs = in->family == GT_GROUPED_DECODE ? 1 : in->tile_rows / 64;
    assert_int_equal(in->threads, 128 * wgs + 32);
    assert_int_equal(in->smem, in->stages * (in->tile_n + in->tile_rows) * in->tile_k * 2 + 1024);
    assert_true(in->family == GT_GROUPED_DECODE || in->splitk == 1);
  }
}

static void test_families_per_layout(void **state) {
  (void)state;
  int have[2][2] = {{0}};
  for (size_t i = 0; i < gt_grouped_instance_count; i++)
    have[gt_grouped_instances[i].layout][gt_grouped_instances[i].family]++;
  for (int l = 0; l < 2; l++)
    for (int f = 0; f < 2; f++) assert_true(have[l][f] > 0);
}

/* Every routing of `rows` rows over `groups` groups has at most ceil(rows / BN) +
 * min(groups, rows) tiles: checked on the worst splits (every group one row more than a
 * multiple of BN, or one row each). */
static void test_grid_covers_routing(void **state) {
  (void)state;
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    const gt_grouped_instance_t *in = &gt_grouped_instances[i];
    const int bn = in->tile_rows;
    const int64_t cases[][2] = {{1, 256}, {8, 8}, {64, 256}, {(int64_t)bn * 8 + 8, 8},
                                {4096, 8}, {0, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      gt_grouped_args_t a = {0};
      a.rows = cases[c][0];
      a.groups = (int32_t)cases[c][1];
      a.n = 1000;
      a.k = 512;
      unsigned grid[3];
      gt_grouped_grid((int)i, &a, grid);
      /* Worst split: as many groups as possible with bn*q + 1 rows. */
      int64_t tiles = 0, left = a.rows;
      for (int g = 0; g < a.groups && left > 0; g++) {
        int64_t share = g == a.groups - 1 ? left : (a.rows / a.groups / bn) * bn + 1;
        if (share > left) share = left;
        tiles += (share + bn - 1) / bn;
        left -= share;
      }
      assert_true(tiles <= (int64_t)grid[0]);
      assert_int_equal(grid[1], (unsigned)((1000 + in->tile_n - 1) / in->tile_n));
      assert_int_equal(grid[2], (unsigned)in->splitk);
    }
  }
}

static void test_layout_of(void **state) {
  (void)state;
  gt_grouped_args_t a = {0};
  a.sbk = 1;
  a.sbn = 4096;
  assert_int_equal(gt_grouped_layout_of(&a), GT_GROUPED_ENK);
  a.sbk = 4096;
  a.sbn = 1;
  assert_int_equal(gt_grouped_layout_of(&a), GT_GROUPED_EKN);
  a.sbn = 2;
  assert_int_equal(gt_grouped_layout_of(&a), -1);
  assert_int_equal(gt_grouped_workspace_bytes(0, &a), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_spell_rows),
      cmocka_unit_test(test_geometry),
      cmocka_unit_test(test_families_per_layout),
      cmocka_unit_test(test_grid_covers_routing),
      cmocka_unit_test(test_layout_of),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
