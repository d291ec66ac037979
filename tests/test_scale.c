/* The fp8 scale arrays are laid out as cuBLASLt 13 reads them (the cuBLAS documentation's
 * "Scaling factors layouts" of the 128-element 1D and 128x128 2D block scaling):
 *   for each mode and operand, a table of (shape, element) -> (array shape, factor index) written
 *   out by hand from that text: 1x128 arrays outer-major (m x L for A, n x L for B), 128x128
 *   arrays K-major with the K-block stride rounded up to a multiple of 4;
 *   over a spread of shapes, every element's factor lies inside the array, elements of one block
 *   share a factor, and distinct blocks have distinct factors (so a layout that lost a block or
 *   folded two together would show), and no 128x128 factor sits in the stride's padding;
 *   the mode pairs and shapes cuBLASLt documents no kernel for are refused with a reason:
 *   a block mode on one operand only, 128x128 on both, m or n not a multiple of 4;
 *   mode names parse back to themselves. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_scale.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

typedef struct layout_case {
  const char *name;
  gt_scale_mode_t md;
  char which;
  int64_t m, n, k;
  int64_t d0, d1; /* the array: d0 fastest */
  int64_t i, kk;  /* an element of op(A) (i, kk) or op(B) (kk, i) */
  int64_t index;  /* the factor covering it */
} layout_case_t;

static const layout_case_t k_layouts[] = {
    {"tensor", GT_SCALE_TENSOR, 'B', 8, 12, 384, 1, 1, 11, 383, 0},
    {"outer A", GT_SCALE_OUTER, 'A', 8, 12, 384, 8, 1, 5, 300, 5},
    {"outer B", GT_SCALE_OUTER, 'B', 8, 12, 384, 1, 12, 9, 300, 9},
    {"none", GT_SCALE_NONE, 'A', 8, 12, 384, 0, 0, 5, 300, -1},
    /* VEC128_32F: "M-major for A with shape M x L", "N-major for B with shape N x L" */
    {"1x128 A: rows contiguous", GT_SCALE_BLK1X128, 'A', 8, 12, 384, 8, 3, 5, 130, 5 + 1 * 8},
    {"1x128 A: last factor", GT_SCALE_BLK1X128, 'A', 8, 12, 384, 8, 3, 7, 383, 23},
    {"1x128 B: columns contiguous", GT_SCALE_BLK1X128, 'B', 8, 12, 384, 12, 3, 5, 130, 5 + 1 * 12},
    {"1x128 B: last factor", GT_SCALE_BLK1X128, 'B', 8, 12, 384, 12, 3, 11, 383, 35},
    {"1x128 B: partial last K block", GT_SCALE_BLK1X128, 'B', 8, 4, 300, 4, 3, 2, 299, 2 + 2 * 4},
    /* BLK128x128_32F: "K-major", shape L4 x ceil(M/128) for A, L4 x ceil(N/128) for B */
    {"128x128 A: K blocks contiguous, stride 5 -> 8", GT_SCALE_BLK128X128, 'A', 300, 8, 640, 8, 3,
     130, 300, 2 + 1 * 8},
    {"128x128 A: last factor in the padded array", GT_SCALE_BLK128X128, 'A', 300, 8, 640, 8, 3, 299,
     639, 4 + 2 * 8},
    {"128x128 B: stride 4 needs no padding", GT_SCALE_BLK128X128, 'B', 8, 256, 512, 4, 2, 200, 129,
     1 + 1 * 4},
    {"128x128 B: one K block, stride 4", GT_SCALE_BLK128X128, 'B', 8, 256, 128, 4, 2, 128, 0, 4},
    {"128x128 B: the DeepSeek weight, 7168 x 2048", GT_SCALE_BLK128X128, 'B', 16, 2048, 7168, 56,
     16, 1000, 7000, 54 + 7 * 56},
};

static void test_layout(void **state) {
  const layout_case_t *c = *state;
  int64_t d0 = -1, d1 = -1;
  gt_scale_mode_shape(c->md, c->which, c->m, c->n, c->k, &d0, &d1);
  if (d0 != c->d0 || d1 != c->d1)
    fail_msg("%s: shape %" PRId64 " x %" PRId64 ", expected %" PRId64 " x %" PRId64, c->name, d0,
             d1, c->d0, c->d1);
  int64_t got = gt_scale_mode_index(c->md, c->which, c->m, c->n, c->k, c->i, c->kk);
  if (got != c->index)
    fail_msg("%s: factor %" PRId64 ", expected %" PRId64, c->name, got, c->index);
}

/* Every element of op(A) / op(B) of a spread of shapes: its factor is inside the array, the same
 * for its whole block, and no other block's; 128x128 factors never in the stride's padding. */
static void test_blocks_cover_the_array(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{4, 4, 1},     {8, 12, 128},  {136, 16, 320},
                                      {384, 32, 640}, {260, 132, 129}, {128, 128, 1024}};
  static const gt_scale_mode_t modes[] = {GT_SCALE_BLK1X128, GT_SCALE_BLK128X128};
  for (size_t s = 0; s < NELEM(shapes); s++)
    for (size_t md = 0; md < NELEM(modes); md++)
      for (int w = 0; w < 2; w++) {
        const int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        const char which = w ? 'B' : 'A';
        const int64_t outer = w ? n : m, nkb = (k + 127) / 128;
        const int64_t per = modes[md] == GT_SCALE_BLK1X128 ? 1 : GT_SCALE_BLOCK;
        int64_t d0, d1;
        gt_scale_mode_shape(modes[md], which, m, n, k, &d0, &d1);
        /* owner[f]: the block (outer block * nkb + K block) that factor f covers, -1 for none */
        int64_t *owner = malloc((size_t)(d0 * d1) * sizeof *owner);
        assert_non_null(owner);
        for (int64_t f = 0; f < d0 * d1; f++) owner[f] = -1;
        for (int64_t i = 0; i < outer; i++)
          for (int64_t q = 0; q < k; q++) {
            const int64_t f = gt_scale_mode_index(modes[md], which, m, n, k, i, q);
            const int64_t blk = (i / per) * nkb + q / GT_SCALE_BLOCK;
            if (f < 0 || f >= d0 * d1)
              fail_msg("%" PRId64 "x%" PRId64 "x%" PRId64 " %s %c: factor %" PRId64
                       " outside %" PRId64 " x %" PRId64, m, n, k, gt_scale_mode_name(modes[md]),
                       which, f, d0, d1);
            if (owner[f] != -1 && owner[f] != blk)
              fail_msg("%" PRId64 "x%" PRId64 "x%" PRId64 " %s %c: factor %" PRId64
                       " covers two blocks", m, n, k, gt_scale_mode_name(modes[md]), which, f);
            owner[f] = blk;
            if (modes[md] == GT_SCALE_BLK128X128) assert_true(f % d0 < nkb);
          }
        /* 1x128: every factor is used; 128x128: all but the padding */
        int64_t used = 0;
        for (int64_t f = 0; f < d0 * d1; f++) used += owner[f] != -1;
        assert_int_equal(used, ((outer + per - 1) / per) * nkb);
        free(owner);
      }
}

typedef struct refusal_case {
  const char *name;
  gt_scale_mode_t sa, sb;
  int64_t m, n;
  const char *why; /* NULL: cuBLASLt offers kernels; else a substring of the reason */
} refusal_case_t;

static const refusal_case_t k_refusals[] = {
    {"no block mode", GT_SCALE_TENSOR, GT_SCALE_OUTER, 7, 5, NULL},
    {"1x128 x 1x128", GT_SCALE_BLK1X128, GT_SCALE_BLK1X128, 4096, 16, NULL},
    {"128x128 W x 1x128 x", GT_SCALE_BLK128X128, GT_SCALE_BLK1X128, 4096, 16, NULL},
    {"1x128 x 128x128", GT_SCALE_BLK1X128, GT_SCALE_BLK128X128, 16, 4096, NULL},
    {"128x128 on both", GT_SCALE_BLK128X128, GT_SCALE_BLK128X128, 4096, 4096, "both A and B"},
    {"block with tensorwise", GT_SCALE_BLK128X128, GT_SCALE_TENSOR, 4096, 16, "one operand only"},
    {"block with none", GT_SCALE_NONE, GT_SCALE_BLK1X128, 4096, 16, "one operand only"},
    {"decode of 1 token", GT_SCALE_BLK128X128, GT_SCALE_BLK1X128, 4096, 1, "multiple of 4"},
    {"m of 4094", GT_SCALE_BLK1X128, GT_SCALE_BLK1X128, 4094, 16, "multiple of 4"},
};

static void test_refusal(void **state) {
  const refusal_case_t *c = *state;
  const char *why = gt_scale_block_refusal(c->sa, c->sb, c->m, c->n);
  if (!c->why && why) fail_msg("%s: refused: %s", c->name, why);
  if (c->why && (!why || !strstr(why, c->why)))
    fail_msg("%s: reason '%s', expected one with '%s'", c->name, why ? why : "(none)", c->why);
}

static void test_names_round_trip(void **state) {
  (void)state;
  for (int i = 0; i < GT_SCALE__COUNT; i++) {
    gt_scale_mode_t back = GT_SCALE__COUNT;
    assert_int_equal(gt_scale_mode_parse(gt_scale_mode_name((gt_scale_mode_t)i), &back), GT_OK);
    assert_int_equal(back, i);
  }
  gt_scale_mode_t back;
  assert_int_equal(gt_scale_mode_parse("vec128", &back), GT_ERR_USAGE);
}

int main(void) {
  static struct CMUnitTest t[NELEM(k_layouts) + NELEM(k_refusals) + 2];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_layouts); i++)
    t[n++] = (struct CMUnitTest){k_layouts[i].name, test_layout, NULL, NULL, (void *)&k_layouts[i]};
  t[n++] = (struct CMUnitTest){"blocks_cover_the_array", test_blocks_cover_the_array, NULL, NULL, NULL};
  for (size_t i = 0; i < NELEM(k_refusals); i++)
    t[n++] = (struct CMUnitTest){k_refusals[i].name, test_refusal, NULL, NULL, (void *)&k_refusals[i]};
  t[n++] = (struct CMUnitTest){"names_round_trip", test_names_round_trip, NULL, NULL, NULL};
  return _cmocka_run_group_tests("scale", t, n, NULL, NULL);
}
