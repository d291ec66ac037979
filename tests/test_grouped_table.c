/* The grouped GEMM table (generated/grouped_instances.c, gt_grouped.h): every name spells its
 * row's parameters (gt_<arch>_<family>_<dtype>_<layout>_t<BM>x<BN>x<BK>_s<S>_ks<KS>, dtype bf16 or
 * e4m3: fp8 decode tiles with [E][N][K] weights only) and is found by gt_grouped_find; threads
 * and shared memory follow from the tile and the element size as the kernels assume; each
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
    if (in->family == GT_GROUPED_VECTOR)
      snprintf(want, sizeof want, "gt_%s_grpv_bf16_%s_t%dx%dx%d_w%d_c%d",
               gt_karchs[in->arch].token, in->layout == GT_GROUPED_ENK ? "enk" : "ekn",
               in->tile_n, in->tile_rows, in->tile_k, in->threads / 32, in->chunks);
    else
      snprintf(want, sizeof want, "gt_%s_%s_%s_%s_t%dx%dx%d_s%d_ks%d", gt_karchs[in->arch].token,
               in->family == GT_GROUPED_DECODE ? "grpd" : "grpp",
               in->dtype == GT_DT_F8E4M3FN ? "e4m3" : "bf16",
               in->layout == GT_GROUPED_ENK ? "enk" : "ekn", in->tile_n, in->tile_rows,
               in->tile_k, in->stages, in->splitk);
    assert_string_equal(in->name, want);
    assert_int_equal(gt_grouped_find(in->name), (int)i);
    assert_true(in->dtype == GT_DT_BF16 || in->dtype == GT_DT_F8E4M3FN);
    if (in->dtype == GT_DT_F8E4M3FN) {
      assert_int_equal(in->family, GT_GROUPED_DECODE);
      assert_int_equal(in->layout, GT_GROUPED_ENK);
      assert_int_equal(in->tile_k % 128, 0); /* whole 128-byte boxes of 1-byte elements */
    }
  }
  assert_int_equal(gt_grouped_find("gt_sm90_grpd_bf16_enk_t1x1x1_s1_ks1"), -1);
  assert_int_equal(gt_grouped_find(NULL), -1);
}

/* Decode: one consumer warpgroup + the producer warp; prefill: one per 64 rows. The ring holds
 * S stages of BM weight rows and BN routed rows of BK elements, plus 1 KB of alignment slack.
 * grpv: whole warps, no ring, no split; shared memory is the [warps][BN][BM] fp32 partials; K
 * per warp batch is 256 elements (32 lanes x 8) times the unroll; enk weights only; every other
 * family computes one chunk a CTA. */
static void test_geometry(void **state) {
  (void)state;
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    const gt_grouped_instance_t *in = &gt_grouped_instances[i];
    if (in->family == GT_GROUPED_VECTOR) {
      assert_int_equal(in->threads % 32, 0);
      assert_int_equal(in->smem, in->threads / 32 * in->tile_rows * in->tile_n * 4);
      assert_int_equal(in->stages, 1);
      assert_int_equal(in->splitk, 1);
      assert_int_equal(in->tile_k % 256, 0);
      assert_true(in->tile_rows >= 1 && in->tile_rows <= 8);
      assert_int_equal(in->layout, GT_GROUPED_ENK);
      assert_true(in->chunks >= 1);
      continue;
    }
    assert_int_equal(in->chunks, 1);
    const int wgs = in->family == GT_GROUPED_DECODE ? 1 : in->tile_rows / 64;
    assert_int_equal(in->threads, 128 * wgs + 32);
    const int es = in->dtype == GT_DT_F8E4M3FN ? 1 : 2;
    assert_int_equal(in->smem, in->stages * (in->tile_n + in->tile_rows) * in->tile_k * es + 1024);
    assert_true(in->family == GT_GROUPED_DECODE || in->splitk == 1);
  }
}

/* Both layouts have decode (grpd) and prefill (grpp) instances; the CUDA-core decode (grpv)
 * exists for [E][N][K] weights, the layout torch passes for nn.Linear-style experts. */
static void test_families_per_layout(void **state) {
  (void)state;
  int have[2][3] = {{0}};
  for (size_t i = 0; i < gt_grouped_instance_count; i++)
    have[gt_grouped_instances[i].layout][gt_grouped_instances[i].family]++;
  for (int l = 0; l < 2; l++)
    for (int f = GT_GROUPED_DECODE; f <= GT_GROUPED_PREFILL; f++) assert_true(have[l][f] > 0);
  assert_true(have[GT_GROUPED_ENK][GT_GROUPED_VECTOR] > 0);
  assert_int_equal(have[GT_GROUPED_EKN][GT_GROUPED_VECTOR], 0);
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
      /* The slots ride on x (grpd, grpp) or y (grpv), the N tiles on the other. */
      const int vector = in->family == GT_GROUPED_VECTOR;
      const unsigned ntiles = (unsigned)((1000 + in->tile_n - 1) / in->tile_n);
      const unsigned along_n = vector ? (ntiles + in->chunks - 1) / in->chunks : ntiles;
      const int64_t slots = gt_grouped_slots((int)i, &a);
      const int64_t nonempty = a.groups < a.rows ? a.groups : a.rows;
      assert_true(tiles <= slots);
      /* Never looser than ceil(rows / BN) + min(groups, rows); exactly the rows at BN 1 (a
       * tile per row: a one-token call launches no empty slot). */
      assert_true(slots <= (a.rows + bn - 1) / bn + nonempty);
      if (bn == 1) assert_int_equal(slots, a.rows);
      assert_int_equal(grid[vector ? 1 : 0], (unsigned)slots);
      assert_int_equal(grid[vector ? 0 : 1], along_n);
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
