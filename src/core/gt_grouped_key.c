/* The key of a grouped GEMM call (see gt_grouped_key.h for the mapping and the rows bucket). */
#include "gt_grouped_key.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int64_t gt_grouped_rows_bucket(int64_t rows) {
  if (rows <= 1) return 1;
  if (rows > ((int64_t)1 << 62)) return -1;
  int64_t b = 1;
  while (b < rows) b <<= 1;
  return b;
}

/* The first reason a key is not tunable wins; it becomes a CSV cell, so no commas. */
static void mark(gt_cublas_mark_t *mk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mark(gt_cublas_mark_t *mk, const char *fmt, ...) {
  if (mk->why[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mk->why, sizeof mk->why, fmt, ap);
  va_end(ap);
  for (char *c = mk->why; *c; c++)
    if (*c == ',' || *c == '\n' || *c == '\r') *c = ';';
}

/* The weight's layout: K contiguous is the nn.Linear-style [E][N][K] seen transposed (BLAS A
 * transposed, ld = its N stride); N contiguous a plain [E][K][N] (BLAS A not transposed, ld = its
 * K stride). A weight of one column or row is contiguous both ways: K wins, as torch's own
 * contiguity rule prefers the transposed view then. */
static void key_weight(const gt_grouped_call_t *c, gt_problem_t *p, gt_cublas_mark_t *mk) {
  if (c->b_k_stride == 1 && c->b_n_stride >= c->k) {
    p->transa = GT_TRANS_T;
    p->lda = c->b_n_stride;
  } else if (c->b_n_stride == 1 && c->b_k_stride >= c->n) {
    p->transa = GT_TRANS_N;
    p->lda = c->b_k_stride;
  } else {
    mark(mk, "%s: weight strides (k %" PRId64 " n %" PRId64 ") contiguous in neither K nor N",
         c->entry, c->b_k_stride, c->b_n_stride);
    p->transa = GT_TRANS_T;
    p->lda = c->k;
  }
}

gt_status_t gt_grouped_key(const gt_grouped_call_t *c, const char *arch, int sm_count,
                           gt_problem_t *out, gt_cublas_mark_t *mark_out) {
  const char *entry = c->entry ? c->entry : "grouped_mm";
  if (c->rows < 0 || c->k <= 0 || c->n <= 0 || c->groups <= 0)
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "%s: sizes rows %" PRId64 " k %" PRId64 " n %" PRId64 " groups %" PRId64
                      " cannot be keyed",
                      entry, c->rows, c->k, c->n, c->groups);
  int64_t bucket = gt_grouped_rows_bucket(c->rows);
  if (bucket < 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %" PRId64 " rows: no bucket", entry, c->rows);

  gt_cublas_mark_t mk = {{0}};
  gt_problem_t p;
  gt_problem_init(&p);
  p.op = GT_OP_GROUPED_MM;
  p.a_type = c->b_type;
  p.b_type = c->a_type;
  p.c_type = p.d_type = c->out_type;
  p.compute = GT_COMPUTE_F32;
  p.scale_type = GT_DT_F32;
  p.m = c->n;
  p.n = bucket;
  p.k = c->k;
  p.batch = c->groups;
  p.beta_zero = true;
  snprintf(p.arch, sizeof p.arch, "%s", arch ? arch : "");
  p.sm_count = sm_count;

  /* The reasons, most fundamental first: the first one is what `capture` shows. */
  if (!c->a_2d || !c->b_3d) mark(&mk, "%s: only the 2-D x 3-D (MoE) form is tuned", entry);
  if (!c->has_offs) mark(&mk, "%s: no offs (the batched form)", entry);
  if (c->fp8_scaled) {
    if (c->a_type != GT_DT_F8E4M3FN || c->b_type != GT_DT_F8E4M3FN || c->out_type != GT_DT_BF16)
      mark(&mk, "%s: types %s x %s -> %s: only e4m3 x e4m3 -> bf16 is tuned", entry,
           gt_dtype_name(c->a_type), gt_dtype_name(c->b_type), gt_dtype_name(c->out_type));
    if (!c->scales_rowwise)
      mark(&mk, "%s: scales other than fp32 rowwise ([rows] and [groups][N] contiguous)", entry);
    /* The key states the scales only on fp8 operands (a marked call of other types keeps
     * none, as the key's validation requires). */
    if (gt_dtype_is_fp8(p.a_type)) p.scale_a = GT_SCALE_OUTER;
    if (gt_dtype_is_fp8(p.b_type)) p.scale_b = GT_SCALE_OUTER;
    p.fast_accum = c->fast_accum && (gt_dtype_is_fp8(p.a_type) || gt_dtype_is_fp8(p.b_type));
  } else if (c->a_type != GT_DT_BF16 || c->b_type != GT_DT_BF16 ||
             c->out_type != GT_DT_BF16) {
    mark(&mk, "%s: types %s x %s -> %s: only bf16 is tuned", entry, gt_dtype_name(c->a_type),
         gt_dtype_name(c->b_type), gt_dtype_name(c->out_type));
  }
  if (c->has_bias) mark(&mk, "%s: a bias: no own kernel takes one yet", entry);
  if (c->a_col_stride != 1 || c->a_row_stride < c->k)
    mark(&mk, "%s: mat_a strides (%" PRId64 " %" PRId64 ") are not row-major", entry,
         c->a_row_stride, c->a_col_stride);
  if (c->out_col_stride != 1 || c->out_row_stride < c->n)
    mark(&mk, "%s: out strides (%" PRId64 " %" PRId64 ") are not row-major", entry,
         c->out_row_stride, c->out_col_stride);
  if (c->rows == 0) mark(&mk, "%s: no routed rows", entry);
  key_weight(c, &p, &mk);
  if (c->fp8_scaled && p.transa != GT_TRANS_T)
    mark(&mk, "%s: fp8 weights must be K-contiguous ([E][N][K] seen transposed)", entry);
  p.ldb = c->a_row_stride >= c->k ? c->a_row_stride : c->k;
  p.ldc = c->out_row_stride >= c->n ? c->out_row_stride : c->n;
  p.stride_a = c->b_group_stride;
  /* One expert's weights must not overlap the next one's (a stride 0 broadcast weight is a plain
   * GEMM that torch would not issue as grouped). */
  int64_t one = p.transa == GT_TRANS_T ? p.lda * (p.m - 1) + p.k : p.lda * (p.k - 1) + p.m;
  if (p.batch > 1 && p.stride_a < one) {
    mark(&mk, "%s: weight group stride %" PRId64 " overlaps the next group (%" PRId64 ")", entry,
         p.stride_a, one);
    p.stride_a = one;
  }
  if (p.batch == 1) p.stride_a = 0;

  gt_status_t s = gt_problem_validate(&p);
  if (s != GT_OK) return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", entry, gt_err_msg());
  if (mk.why[0] && !mark_out) return gt_err_set(GT_ERR_UNSUPPORTED, "%s", mk.why);
  if (mark_out) *mark_out = mk;
  *out = p;
  return GT_OK;
}

bool gt_grouped_even_offs(const gt_problem_t *key, int32_t *offs, int64_t cap) {
  if (key->op != GT_OP_GROUPED_MM || key->batch < 1 || cap < key->batch || key->n > INT32_MAX)
    return false;
  int64_t base = key->n / key->batch, extra = key->n % key->batch, end = 0;
  for (int64_t g = 0; g < key->batch; g++) {
    end += base + (g < extra ? 1 : 0);
    offs[g] = (int32_t)end;
  }
  return true;
}
