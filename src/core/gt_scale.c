/* fp8 scale modes (see gt_scale.h): names, the shapes of the factor arrays (the factor that
 * covers an element is gt_scale.h's inline gt_scale_mode_index, shared with the device), and
 * which block-mode keys cuBLASLt runs. */
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
  /* outer: rows of op(A) = m, or columns of op(B) = n (gt_scale.h states the layouts). */
  const bool a = which == 'A';
  const int64_t outer = a ? m : n, kb = ceil_div(k, GT_SCALE_BLOCK);
  switch (md) {
    case GT_SCALE_TENSOR: *d0 = 1, *d1 = 1; return;
    case GT_SCALE_OUTER: *d0 = a ? m : 1, *d1 = a ? 1 : n; return;
    case GT_SCALE_BLK1X128: *d0 = outer, *d1 = kb; return;
    case GT_SCALE_BLK128X128:
      *d0 = ceil_div(kb, GT_SCALE_BLK_STRIDE_ALIGN) * GT_SCALE_BLK_STRIDE_ALIGN;
      *d1 = ceil_div(outer, GT_SCALE_BLOCK);
      return;
    default: *d0 = 0, *d1 = 0; return;
  }
}

bool gt_scale_mode_is_block(gt_scale_mode_t md) {
  return md == GT_SCALE_BLK1X128 || md == GT_SCALE_BLK128X128;
}

const char *gt_scale_block_refusal(gt_scale_mode_t sa, gt_scale_mode_t sb, int64_t m, int64_t n) {
  if (!gt_scale_mode_is_block(sa) && !gt_scale_mode_is_block(sb)) return NULL;
  /* The documentation's table of supported (A, B) pairs has only block modes on both sides. */
  if (!gt_scale_mode_is_block(sa) || !gt_scale_mode_is_block(sb))
    return "a block scale mode on one operand only (cuBLASLt pairs VEC128/BLK128x128 with each "
           "other)";
  if (sa == GT_SCALE_BLK128X128 && sb == GT_SCALE_BLK128X128)
    return "128x128 block scales on both A and B (cuBLASLt has no such kernel)";
  if (m % 4 != 0 || n % 4 != 0)
    return "block scales with m or n not a multiple of 4 (cuBLASLt requires both to be)";
  return NULL;
}
