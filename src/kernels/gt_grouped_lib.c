/* libgemmtune_grouped.so: the grouped GEMM kernels (gt_grouped.h) behind a flat C surface that
 * Python's ctypes calls without mirroring any struct: the grouped race that `gemmtune tune` runs
 * in a torch process (python/gemmtune/grouped/harness.py) and bench/grouped_vs_torch.py. Pointers
 * are device addresses as integers, the stream a cudaStream_t (torch's current stream). */
#include <stdint.h>

#include "kernels/gt_grouped.h"

int gtgb_count(void) { return (int)gt_grouped_instance_count; }

const char *gtgb_name(int i) {
  return i >= 0 && (size_t)i < gt_grouped_instance_count ? gt_grouped_instances[i].name : "";
}

/* 0 decode, 1 prefill; -1 for a bad index. */
int gtgb_family(int i) {
  return i >= 0 && (size_t)i < gt_grouped_instance_count ? (int)gt_grouped_instances[i].family
                                                         : -1;
}

/* The operands of instance i: GT_GROUPED_OPERANDS_BF16 (0) or GT_GROUPED_OPERANDS_E4M3 (1: e4m3
 * A and B with rowwise scales, gtgb_*_f8); -1 for a bad index. */
int gtgb_operands(int i) {
  if (i < 0 || (size_t)i >= gt_grouped_instance_count) return -1;
  return gt_grouped_instances[i].dtype == GT_DT_F8E4M3FN ? GT_GROUPED_OPERANDS_E4M3
                                                         : GT_GROUPED_OPERANDS_BF16;
}

/* 0 [E][N][K] (sbk == 1), 1 [E][K][N] (sbn == 1). */
int gtgb_layout(int i) {
  return i >= 0 && (size_t)i < gt_grouped_instance_count ? (int)gt_grouped_instances[i].layout
                                                         : -1;
}

static gt_grouped_args_t args_of(uint64_t a, uint64_t b, uint64_t d, uint64_t offs,
                                  uint64_t bias, int64_t rows, int64_t n, int64_t k, int64_t lda,
                                  int64_t ldd, int64_t sbg, int64_t sbk, int64_t sbn,
                                  int64_t sbias, int32_t groups) {
  gt_grouped_args_t g = {0};
  g.a = (const void *)(uintptr_t)a;
  g.b = (const void *)(uintptr_t)b;
  g.d = (void *)(uintptr_t)d;
  g.offs = (const int32_t *)(uintptr_t)offs;
  g.bias = (const void *)(uintptr_t)bias;
  g.rows = rows;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.ldd = ldd;
  g.sbg = sbg;
  g.sbk = sbk;
  g.sbn = sbn;
  g.sbias = sbias;
  g.groups = groups;
  return g;
}

/* gt_grouped_supports: 0, or a gt_status_t (reason in gtgb_error()). */
int gtgb_supports(int i, uint64_t a, uint64_t b, uint64_t d, uint64_t offs, uint64_t bias,
                  int64_t rows, int64_t n, int64_t k, int64_t lda, int64_t ldd, int64_t sbg,
                  int64_t sbk, int64_t sbn, int64_t sbias, int32_t groups) {
  gt_grouped_args_t g = args_of(a, b, d, offs, bias, rows, n, k, lda, ldd, sbg, sbk, sbn, sbias,
                                groups);
  return (int)gt_grouped_supports(i, &g);
}

/* gt_grouped_launch of instance i on `stream`: 0, or a gt_status_t. */
int gtgb_launch(int i, uint64_t a, uint64_t b, uint64_t d, uint64_t offs, uint64_t bias,
                int64_t rows, int64_t n, int64_t k, int64_t lda, int64_t ldd, int64_t sbg,
                int64_t sbk, int64_t sbn, int64_t sbias, int32_t groups, uint64_t stream) {
  gt_grouped_args_t g = args_of(a, b, d, offs, bias, rows, n, k, lda, ldd, sbg, sbk, sbn, sbias,
                                groups);
  return (int)gt_grouped_launch(gtgb_name(i), &g, 0, 0,
                                (struct CUstream_st *)(uintptr_t)stream);
}

const char *gtgb_error(void) { return gt_err_msg(); }

/* The e4m3 forms (torch's f8f8bf16_grouped_mm): e4m3 a and b, bf16 d, scale_a one fp32 per row,
 * scale_b groups x n fp32 (sscale_b elements between groups), no bias. */
static gt_grouped_args_t args_f8(uint64_t a, uint64_t b, uint64_t d, uint64_t offs,
                                 uint64_t scale_a, uint64_t scale_b, int64_t sscale_b,
                                 int64_t rows, int64_t n, int64_t k, int64_t lda, int64_t ldd,
                                 int64_t sbg, int64_t sbn, int32_t groups) {
  gt_grouped_args_t g = args_of(a, b, d, offs, 0, rows, n, k, lda, ldd, sbg, 1, sbn, 0, groups);
  g.operands = GT_GROUPED_OPERANDS_E4M3;
  g.scale_a = (const float *)(uintptr_t)scale_a;
  g.scale_b = (const float *)(uintptr_t)scale_b;
  g.sscale_b = sscale_b;
  return g;
}

/* gt_grouped_supports for an e4m3 problem whose weights are [E][N][K] with row stride sbn. */
int gtgb_supports_f8(int i, uint64_t a, uint64_t b, uint64_t d, uint64_t offs, uint64_t scale_a,
                     uint64_t scale_b, int64_t sscale_b, int64_t rows, int64_t n, int64_t k,
                     int64_t lda, int64_t ldd, int64_t sbg, int64_t sbn, int32_t groups) {
  gt_grouped_args_t g = args_f8(a, b, d, offs, scale_a, scale_b, sscale_b, rows, n, k, lda, ldd,
                                sbg, sbn, groups);
  return (int)gt_grouped_supports(i, &g);
}

/* gt_grouped_launch of an e4m3 instance on `stream`: 0, or a gt_status_t. */
int gtgb_launch_f8(int i, uint64_t a, uint64_t b, uint64_t d, uint64_t offs, uint64_t scale_a,
                   uint64_t scale_b, int64_t sscale_b, int64_t rows, int64_t n, int64_t k,
                   int64_t lda, int64_t ldd, int64_t sbg, int64_t sbn, int32_t groups,
                   uint64_t stream) {
  gt_grouped_args_t g = args_f8(a, b, d, offs, scale_a, scale_b, sscale_b, rows, n, k, lda, ldd,
                                sbg, sbn, groups);
  return (int)gt_grouped_launch(gtgb_name(i), &g, 0, 0,
                                (struct CUstream_st *)(uintptr_t)stream);
}
