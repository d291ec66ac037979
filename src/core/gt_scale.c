/* fp8 scale modes (see gt_scale.h): names, the shapes of the factor arrays, and the factor
 * that covers an element. */
#define _GNU_SOURCE
#include "gt_scale.h"

#include <stdbool.h>
#include <strings.h>

int gt_dtype_is_fp8(gt_dtype_t t) { return t == GT_DT_F8E4M3FN || t == GT_DT_F8E5M2; }

static const char *const k_scale_mode[GT_SCALE__COUNT] = {
    [GT_SCALE_NONE] = "none",          [GT_SCALE_TENSOR] = "tensor_f32",
    [GT_SCALE_OUTER] = "outer_f32",    [GT_SCALE_BLK1X128] = "blk1x128_f32",
    [GT_SCALE_BLK128X128] = "blk128x128_f32",
};

const char *gt_scale_mode_name(gt_scale_mode_t m) {
  return (unsigned)m < GT_SCALE__COUNT ? k_scale_mode[m] : "?";
}

gt_status_t gt_scale_mode_parse(const char *s, gt_scale_mode_t *out) {
  for (int i = 0; s && i < GT_SCALE__COUNT; i++)
    if (strcasecmp(s, k_scale_mode[i]) == 0) return *out = (gt_scale_mode_t)i, GT_OK;
  return gt_err_set(GT_ERR_USAGE,
                    "unknown scale mode '%s' (known: none tensor_f32 outer_f32 blk1x128_f32 "
                    "blk128x128_f32)",
                    s ? s : "");
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void gt_scale_mode_shape(gt_scale_mode_t md, char which, int64_t m, int64_t n, int64_t k,
                         int64_t *d0, int64_t *d1) {
  /* Operand A: (rows of op(A) = m) x k; operand B: k x (cols = n). */
  const bool a = which == 'A';
  const int64_t mn = a ? m : n, kb = ceil_div(k, GT_SCALE_BLOCK);
  switch (md) {
    case GT_SCALE_TENSOR: *d0 = 1, *d1 = 1; return;
    case GT_SCALE_OUTER: *d0 = a ? m : 1, *d1 = a ? 1 : n; return;
    case GT_SCALE_BLK1X128:
      if (a) *d0 = mn, *d1 = kb;
      else *d0 = kb, *d1 = mn;
      return;
    case GT_SCALE_BLK128X128:
      if (a) *d0 = ceil_div(mn, GT_SCALE_BLOCK), *d1 = kb;
      else *d0 = kb, *d1 = ceil_div(mn, GT_SCALE_BLOCK);
      return;
    default: *d0 = 0, *d1 = 0; return;
  }
}

int64_t gt_scale_mode_index(gt_scale_mode_t md, char which, int64_t m, int64_t n, int64_t k,
                            int64_t i, int64_t kk) {
  int64_t d0, d1;
  gt_scale_mode_shape(md, which, m, n, k, &d0, &d1);
  const bool a = which == 'A';
  const int64_t kb = kk / GT_SCALE_BLOCK;
  switch (md) {
    case GT_SCALE_TENSOR: return 0;
    case GT_SCALE_OUTER: return i;
    case GT_SCALE_BLK1X128: return a ? i + kb * d0 : kb + i * d0;
    case GT_SCALE_BLK128X128:
      return a ? i / GT_SCALE_BLOCK + kb * d0 : kb + (i / GT_SCALE_BLOCK) * d0;
    default: (void)d1; return -1;
  }
}

