/* Problem descriptors / keys: defaults, the row-major view mappings, text form, and diffs. */
#include "gt_problem.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gt_key_field_names[GT_KEY_NFIELDS] = {
    "op",  "a_type", "b_type", "c_type", "d_type",   "compute",  "scale_type", "transa",
    "transb", "m",   "n",      "k",      "lda",      "ldb",      "ldc",        "batch",
    "stride_a", "stride_b", "stride_c", "epilogue", "beta_zero", "arch",      "sm_count",
    "scale_a", "scale_b", "fast_accum", "scale_d", "amax_d"};

enum {
  F_OP, F_A, F_B, F_C, F_D, F_COMPUTE, F_SCALE, F_TRANSA, F_TRANSB, F_M, F_N, F_K, F_LDA, F_LDB,
  F_LDC, F_BATCH, F_SA, F_SB, F_SC, F_EPI, F_BETA0, F_ARCH, F_SMS, F_SCALE_A, F_SCALE_B,
  F_FAST_ACCUM, F_SCALE_D, F_AMAX_D
};

/* The fp8 fields keep the key text of other keys as it was (gt_problem_format_key). */
static bool field_at_default(const gt_problem_t *p, int i) {
  switch (i) {
    case F_SCALE_A: return p->scale_a == GT_SCALE_NONE;
    case F_SCALE_B: return p->scale_b == GT_SCALE_NONE;
    case F_FAST_ACCUM: return !p->fast_accum;
    case F_SCALE_D: return !p->scale_d;
    case F_AMAX_D: return !p->amax_d;
    default: return false;
  }
}

const char *gt_op_name(gt_op_t op) {
  switch (op) {
    case GT_OP_GEMM: return "gemm";
    case GT_OP_GROUPED_MM: return "grouped_mm";
  }
  return "?";
}

void gt_problem_init(gt_problem_t *p) {
  memset(p, 0, sizeof *p);
  p->op = GT_OP_GEMM;
  p->a_type = p->b_type = p->c_type = p->d_type = GT_DT_BF16;
  p->compute = GT_COMPUTE_F32;
  p->scale_type = GT_DT_F32;
  p->transa = p->transb = GT_TRANS_N;
  p->batch = 1;
  p->epilogue = GT_EPI_NONE;
  p->beta_zero = true;
  snprintf(p->arch, sizeof p->arch, "cpu");
}

/* a*b, or INT64_MAX when it does not fit: a filled stride that overflowed must read as too
 * large (validation then names the field), never as a small wrapped value or as 0, which would
 * mean a broadcast operand. */
static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

void gt_problem_fill_lds(gt_problem_t *p) {
  /* Column-major: op(A) is m x k, so A itself is m x k (N) or k x m (T); ld = its row count. */
  if (p->lda == 0) p->lda = p->transa == GT_TRANS_N ? p->m : p->k;
  if (p->ldb == 0) p->ldb = p->transb == GT_TRANS_N ? p->k : p->n;
  if (p->ldc == 0) p->ldc = p->m;
  if (p->batch > 1) {
    /* grouped_mm splits B's and D's columns among the groups: their strides stay 0. */
    if (p->op == GT_OP_GROUPED_MM) {
      if (p->stride_a == 0) p->stride_a = sat_mul(p->lda, p->transa == GT_TRANS_N ? p->k : p->m);
      return;
    }
    if (p->stride_a == 0) p->stride_a = sat_mul(p->lda, p->transa == GT_TRANS_N ? p->k : p->m);
    if (p->stride_b == 0) p->stride_b = sat_mul(p->ldb, p->transb == GT_TRANS_N ? p->n : p->k);
    if (p->stride_c == 0) p->stride_c = sat_mul(p->ldc, p->n);
  }
}

void gt_problem_set_linear(gt_problem_t *p, int64_t tokens, int64_t out_features,
                           int64_t in_features) {
  /* y[t,o] = x[t,i] W[o,i]^T. Row-major W[out,in] is column-major in x out (ld = in), so
   * op(A) = W^T... as BLAS sees it: D(out x tokens) = A^T(out x in) * B(in x tokens). */
  p->transa = GT_TRANS_T;
  p->transb = GT_TRANS_N;
  p->m = out_features;
  p->n = tokens;
  p->k = in_features;
  p->lda = in_features;
  p->ldb = in_features;
  p->ldc = out_features;
}

gt_status_t gt_problem_set_rowmajor(gt_problem_t *p, const char *layout, int64_t M, int64_t N,
                                    int64_t K) {
  /* Row-major D[M,N] = A*B is column-major D^T[N,M] = B^T * A^T: BLAS m=N, n=M, and BLAS A is
   * the user's B. A row-major X[r,c] is a column-major c x r matrix with ld = c. */
  static const char *const codes[4] = {"mk,kn", "mk,nk", "km,kn", "km,nk"};
  int c = -1;
  for (int i = 0; i < 4; i++)
    if (layout && strcmp(layout, codes[i]) == 0) c = i;
  if (c < 0)
    return gt_err_set(GT_ERR_USAGE, "unknown layout '%s' (known: mk,kn mk,nk km,kn km,nk)",
                      layout ? layout : "");
  bool a_km = c >= 2, b_nk = c == 1 || c == 3;
  p->m = N;
  p->n = M;
  p->k = K;
  /* BLAS A = user's B. User B[K,N] row-major = colmajor N x K = op N with ld N.
   * User B[N,K] row-major = colmajor K x N: need op T, ld K. */
  p->transa = b_nk ? GT_TRANS_T : GT_TRANS_N;
  p->lda = b_nk ? K : N;
  /* BLAS B = user's A. User A[M,K] row-major = colmajor K x M = op N, ld K.
   * User A[K,M] row-major = colmajor M x K: op T, ld M. */
  p->transb = a_km ? GT_TRANS_T : GT_TRANS_N;
  p->ldb = a_km ? M : K;
  p->ldc = N;
  return GT_OK;
}

/* The memory geometry of operand which ('A', 'B', 'C'; D shares C's): rows and columns as
 * stored, leading dimension and batch stride, with the field names messages use. */
typedef struct operand_geom {
  int64_t rows, cols, ld, stride;
  const char *ld_name, *stride_name, *rows_name, *cols_name;
} operand_geom_t;

static bool operand_geom(const gt_problem_t *p, char which, operand_geom_t *g) {
  switch (which) {
    case 'A':
      *g = p->transa == GT_TRANS_N
               ? (operand_geom_t){p->m, p->k, p->lda, p->stride_a, "lda", "stride_a", "m", "k"}
               : (operand_geom_t){p->k, p->m, p->lda, p->stride_a, "lda", "stride_a", "k", "m"};
      return true;
    case 'B':
      *g = p->transb == GT_TRANS_N
               ? (operand_geom_t){p->k, p->n, p->ldb, p->stride_b, "ldb", "stride_b", "k", "n"}
               : (operand_geom_t){p->n, p->k, p->ldb, p->stride_b, "ldb", "stride_b", "n", "k"};
      return true;
    case 'C':
    case 'D':
      *g = (operand_geom_t){p->m, p->n, p->ldc, p->stride_c, "ldc", "stride_c", "m", "n"};
      return true;
    default: return false;
  }
}

/* Elements operand which spans in memory: ld*(cols-1) + rows for one item, plus (batch-1)*stride.
 * Every product is checked: a wrapped value would size buffers smaller than the kernels index.
 * Requires rows, cols > 0, ld >= rows, batch >= 1, stride >= 0 (validate checks those first).
 * GT_ERR_DATA naming the field whose product does not fit in 64 bits. */
static gt_status_t operand_span(const gt_problem_t *p, char which, int64_t *out) {
  operand_geom_t g;
  if (!operand_geom(p, which, &g)) return gt_err_set(GT_ERR_INTERNAL, "no operand '%c'", which);
  int64_t one, extra, total;
  if (__builtin_mul_overflow(g.ld, g.cols - 1, &one) || __builtin_add_overflow(one, g.rows, &one))
    return gt_err_set(GT_ERR_DATA,
                      "field '%s': %c spans %s*(%s-1)+%s = %" PRId64 "*%" PRId64 "+%" PRId64
                      " elements, which overflows 64 bits",
                      g.ld_name, which == 'D' ? 'C' : which, g.ld_name, g.cols_name, g.rows_name,
                      g.ld, g.cols - 1, g.rows);
  if (__builtin_mul_overflow(p->batch - 1, g.stride, &extra) ||
      __builtin_add_overflow(one, extra, &total))
    return gt_err_set(GT_ERR_DATA,
                      "field '%s': %" PRId64 " batch items %" PRId64
                      " elements apart overflow a 64-bit element count",
                      g.stride_name, p->batch, g.stride);
  *out = total > one ? total : one;
  return GT_OK;
}

/* The operand's span in bytes fits in 64 bits (the harnesses allocate and index it in bytes). */
static gt_status_t operand_bytes_check(const gt_problem_t *p, char which, gt_dtype_t t) {
  int64_t elems = 0, bytes;
  gt_status_t s = operand_span(p, which, &elems);
  if (s != GT_OK) return s;
  if (__builtin_mul_overflow(elems, (int64_t)gt_dtype_size(t), &bytes)) {
    operand_geom_t g;
    operand_geom(p, which, &g);
    return gt_err_set(GT_ERR_DATA,
                      "field '%s': %c spans %" PRId64 " elements of %zu bytes, which overflows 64 "
                      "bits",
                      p->batch > 1 ? g.stride_name : g.ld_name, which, elems,
                      gt_dtype_size(t));
  }
  return GT_OK;
}

gt_status_t gt_problem_validate(const gt_problem_t *p) {
  if (p->m <= 0) return gt_err_set(GT_ERR_DATA, "field 'm': must be > 0 (got %" PRId64 ")", p->m);
  if (p->n <= 0) return gt_err_set(GT_ERR_DATA, "field 'n': must be > 0 (got %" PRId64 ")", p->n);
  if (p->k <= 0) return gt_err_set(GT_ERR_DATA, "field 'k': must be > 0 (got %" PRId64 ")", p->k);
  int64_t arows = p->transa == GT_TRANS_N ? p->m : p->k;
  int64_t brows = p->transb == GT_TRANS_N ? p->k : p->n;
  if (p->lda < arows)
    return gt_err_set(GT_ERR_DATA, "field 'lda': %" PRId64 " < rows of A (%" PRId64 ")", p->lda,
                      arows);
  if (p->ldb < brows)
    return gt_err_set(GT_ERR_DATA, "field 'ldb': %" PRId64 " < rows of B (%" PRId64 ")", p->ldb,
                      brows);
  if (p->ldc < p->m)
    return gt_err_set(GT_ERR_DATA, "field 'ldc': %" PRId64 " < m (%" PRId64 ")", p->ldc, p->m);
  if (p->batch < 1)
    return gt_err_set(GT_ERR_DATA, "field 'batch': must be >= 1 (got %" PRId64 ")", p->batch);
  if (p->stride_a < 0 || p->stride_b < 0 || p->stride_c < 0)
    return gt_err_set(GT_ERR_DATA, "field 'stride_*': must be >= 0");
  /* A grouped product splits B's and D's n columns (the routed rows) among the groups: they are
   * not repeated per group, so their batch strides are 0 by definition, and A's must keep the
   * experts apart. */
  if (p->op == GT_OP_GROUPED_MM) {
    if (p->stride_b != 0 || p->stride_c != 0)
      return gt_err_set(GT_ERR_DATA,
                        "field 'stride_b'/'stride_c': must be 0 for grouped_mm (the routed rows "
                        "are split among the groups, not repeated)");
    if (!p->beta_zero)
      return gt_err_set(GT_ERR_DATA, "field 'beta_zero': grouped_mm never reads C");
  }
  gt_status_t s;
  if ((s = operand_bytes_check(p, 'A', p->a_type)) != GT_OK ||
      (s = operand_bytes_check(p, 'B', p->b_type)) != GT_OK ||
      (s = operand_bytes_check(p, 'C', p->c_type)) != GT_OK ||
      (s = operand_bytes_check(p, 'D', p->d_type)) != GT_OK)
    return s;
  int64_t one_c;
  if (p->op == GT_OP_GEMM && p->batch > 1 &&
      (__builtin_mul_overflow(p->ldc, p->n, &one_c) || p->stride_c < one_c))
    return gt_err_set(GT_ERR_DATA,
                      "field 'stride_c': %" PRId64 " < ldc*n (%" PRId64 "*%" PRId64
                      "): outputs would overlap",
                      p->stride_c, p->ldc, p->n);
  /* A scale factor or fast accumulation has a meaning only for fp8 operands, a D scale only for
   * an fp8 D: cuBLASLt rejects the others, and a key that states them would never match. */
  if (p->scale_a != GT_SCALE_NONE && !gt_dtype_is_fp8(p->a_type))
    return gt_err_set(GT_ERR_DATA, "field 'scale_a': %s on a %s operand (fp8 only)",
                      gt_scale_mode_name(p->scale_a), gt_dtype_name(p->a_type));
  if (p->scale_b != GT_SCALE_NONE && !gt_dtype_is_fp8(p->b_type))
    return gt_err_set(GT_ERR_DATA, "field 'scale_b': %s on a %s operand (fp8 only)",
                      gt_scale_mode_name(p->scale_b), gt_dtype_name(p->b_type));
  if (p->fast_accum && !gt_dtype_is_fp8(p->a_type) && !gt_dtype_is_fp8(p->b_type))
    return gt_err_set(GT_ERR_DATA, "field 'fast_accum': set on a %s x %s GEMM (fp8 only)",
                      gt_dtype_name(p->a_type), gt_dtype_name(p->b_type));
  if (p->amax_d && !gt_dtype_is_fp8(p->a_type) && !gt_dtype_is_fp8(p->b_type))
    return gt_err_set(GT_ERR_DATA, "field 'amax_d': set on a %s x %s GEMM (fp8 only)",
                      gt_dtype_name(p->a_type), gt_dtype_name(p->b_type));
  if (p->scale_d && !gt_dtype_is_fp8(p->d_type))
    return gt_err_set(GT_ERR_DATA, "field 'scale_d': D is %s (a D scale is for fp8 D only)",
                      gt_dtype_name(p->d_type));
  if (!p->arch[0]) return gt_err_set(GT_ERR_DATA, "field 'arch': empty");
  if (p->sm_count < 0) return gt_err_set(GT_ERR_DATA, "field 'sm_count': must be >= 0");
  return GT_OK;
}

double gt_problem_flops(const gt_problem_t *p) {
  /* grouped_mm: every routed row meets one group's weights only. */
  if (p->op == GT_OP_GROUPED_MM) return 2.0 * (double)p->m * (double)p->n * (double)p->k;
  return 2.0 * (double)p->m * (double)p->n * (double)p->k * (double)p->batch;
}

double gt_problem_min_bytes(const gt_problem_t *p) {
  double b = (double)p->batch;
  /* grouped_mm: every expert's weights, the routed rows once, their outputs once. */
  if (p->op == GT_OP_GROUPED_MM)
    return b * (double)p->m * p->k * gt_dtype_size(p->a_type) +
           (double)p->k * p->n * gt_dtype_size(p->b_type) +
           (double)p->m * p->n * gt_dtype_size(p->d_type);
  double bytes = b * ((double)p->m * p->k * gt_dtype_size(p->a_type) +
                      (double)p->k * p->n * gt_dtype_size(p->b_type) +
                      (double)p->m * p->n * gt_dtype_size(p->d_type));
  if (!p->beta_zero) bytes += b * (double)p->m * p->n * gt_dtype_size(p->c_type);
  /* fp8 scale factors are f32 arrays read once per item (a few per row at most). */
  int64_t d0, d1;
  gt_scale_mode_shape(p->scale_a, 'A', p->m, p->n, p->k, &d0, &d1);
  bytes += b * 4.0 * (double)d0 * (double)d1;
  gt_scale_mode_shape(p->scale_b, 'B', p->m, p->n, p->k, &d0, &d1);
  bytes += b * 4.0 * (double)d0 * (double)d1;
  /* Stride 0 on A or B (a broadcast operand) is read once, not per batch item. */
  if (p->batch > 1 && p->stride_a == 0) bytes -= (b - 1) * (double)p->m * p->k * gt_dtype_size(p->a_type);
  if (p->batch > 1 && p->stride_b == 0) bytes -= (b - 1) * (double)p->k * p->n * gt_dtype_size(p->b_type);
  return bytes;
}

size_t gt_problem_operand_elems(const gt_problem_t *p, char which) {
  operand_geom_t g;
  if (!operand_geom(p, which, &g)) return 0;
  if (g.rows <= 0 || g.cols <= 0 || g.ld < g.rows || p->batch < 1 || g.stride < 0) return 0;
  int64_t total = 0;
  if (operand_span(p, which, &total) != GT_OK) return 0;
  return (size_t)total;
}

const char *gt_problem_ops(const gt_problem_t *p) {
  static const char *const ops[4] = {"NN", "NT", "TN", "TT"};
  return ops[(p->transa == GT_TRANS_T) * 2 + (p->transb == GT_TRANS_T)];
}

bool gt_layout_parse(const char *lay, gt_trans_t *transa, gt_trans_t *transb) {
  if (!lay || strlen(lay) != 2 || (lay[0] != 'n' && lay[0] != 't') ||
      (lay[1] != 'n' && lay[1] != 't'))
    return false;
  *transa = lay[0] == 't' ? GT_TRANS_T : GT_TRANS_N;
  *transb = lay[1] == 't' ? GT_TRANS_T : GT_TRANS_N;
  return true;
}

void gt_problem_field_str(const gt_problem_t *p, int i, char *buf, int cap) {
  switch (i) {
    case F_OP: snprintf(buf, cap, "%s", gt_op_name(p->op)); break;
    case F_A: snprintf(buf, cap, "%s", gt_dtype_name(p->a_type)); break;
    case F_B: snprintf(buf, cap, "%s", gt_dtype_name(p->b_type)); break;
    case F_C: snprintf(buf, cap, "%s", gt_dtype_name(p->c_type)); break;
    case F_D: snprintf(buf, cap, "%s", gt_dtype_name(p->d_type)); break;
    case F_COMPUTE: snprintf(buf, cap, "%s", gt_compute_name(p->compute)); break;
    case F_SCALE: snprintf(buf, cap, "%s", gt_dtype_name(p->scale_type)); break;
    case F_TRANSA: snprintf(buf, cap, "%c", p->transa == GT_TRANS_T ? 'T' : 'N'); break;
    case F_TRANSB: snprintf(buf, cap, "%c", p->transb == GT_TRANS_T ? 'T' : 'N'); break;
    case F_M: snprintf(buf, cap, "%" PRId64, p->m); break;
    case F_N: snprintf(buf, cap, "%" PRId64, p->n); break;
    case F_K: snprintf(buf, cap, "%" PRId64, p->k); break;
    case F_LDA: snprintf(buf, cap, "%" PRId64, p->lda); break;
    case F_LDB: snprintf(buf, cap, "%" PRId64, p->ldb); break;
    case F_LDC: snprintf(buf, cap, "%" PRId64, p->ldc); break;
    case F_BATCH: snprintf(buf, cap, "%" PRId64, p->batch); break;
    case F_SA: snprintf(buf, cap, "%" PRId64, p->stride_a); break;
    case F_SB: snprintf(buf, cap, "%" PRId64, p->stride_b); break;
    case F_SC: snprintf(buf, cap, "%" PRId64, p->stride_c); break;
    case F_EPI: snprintf(buf, cap, "%s", gt_epilogue_name(p->epilogue)); break;
    case F_BETA0: snprintf(buf, cap, "%d", p->beta_zero ? 1 : 0); break;
    case F_ARCH: snprintf(buf, cap, "%s", p->arch); break;
    case F_SMS: snprintf(buf, cap, "%d", p->sm_count); break;
    case F_SCALE_A: snprintf(buf, cap, "%s", gt_scale_mode_name(p->scale_a)); break;
    case F_SCALE_B: snprintf(buf, cap, "%s", gt_scale_mode_name(p->scale_b)); break;
    case F_FAST_ACCUM: snprintf(buf, cap, "%d", p->fast_accum ? 1 : 0); break;
    case F_SCALE_D: snprintf(buf, cap, "%d", p->scale_d ? 1 : 0); break;
    case F_AMAX_D: snprintf(buf, cap, "%d", p->amax_d ? 1 : 0); break;
    default: snprintf(buf, cap, "?"); break;
  }
}

/* A decimal integer in [lo, hi]. Out-of-range text (past 64 bits, or past hi) is an error
 * naming the field, never a value silently cut to fit (4294967298 must not become 2). */
static gt_status_t parse_i64(const char *field, const char *v, int64_t lo, int64_t hi,
                             int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end)
    return gt_err_set(GT_ERR_DATA, "field '%s': not an integer: '%.80s'", field, v);
  if (errno == ERANGE || x > hi)
    return gt_err_set(GT_ERR_DATA, "field '%s': '%.80s' is above the maximum %lld", field, v,
                      (long long)hi);
  if (x < lo)
    return gt_err_set(GT_ERR_DATA, "field '%s': %lld is below the minimum %lld", field, x,
                      (long long)lo);
  *out = x;
  return GT_OK;
}

static gt_status_t parse_type_field(const char *field, const char *v, gt_dtype_t *out) {
  gt_status_t s = gt_dtype_parse(v, out);
  if (s != GT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    return gt_err_set(GT_ERR_DATA, "field '%s': %s", field, msg);
  }
  return GT_OK;
}

gt_status_t gt_problem_set_field(gt_problem_t *p, const char *field, const char *v) {
  int i;
  for (i = 0; i < GT_KEY_NFIELDS; i++)
    if (strcmp(field, gt_key_field_names[i]) == 0) break;
  int64_t x = 0;
  gt_status_t s;
  switch (i) {
    case F_OP:
      if (strcmp(v, "gemm") == 0) p->op = GT_OP_GEMM;
      else if (strcmp(v, "grouped_mm") == 0) p->op = GT_OP_GROUPED_MM;
      else
        return gt_err_set(GT_ERR_DATA,
                          "field 'op': unknown operation '%s' (known: gemm, grouped_mm)", v);
      return GT_OK;
    case F_A: return parse_type_field(field, v, &p->a_type);
    case F_B: return parse_type_field(field, v, &p->b_type);
    case F_C: return parse_type_field(field, v, &p->c_type);
    case F_D: return parse_type_field(field, v, &p->d_type);
    case F_SCALE: return parse_type_field(field, v, &p->scale_type);
    case F_COMPUTE:
      if (gt_compute_parse(v, &p->compute) != GT_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", gt_err_msg());
        return gt_err_set(GT_ERR_DATA, "field 'compute': %s", msg);
      }
      return GT_OK;
    case F_TRANSA:
    case F_TRANSB: {
      gt_trans_t t;
      if (strcmp(v, "N") == 0 || strcmp(v, "n") == 0) t = GT_TRANS_N;
      else if (strcmp(v, "T") == 0 || strcmp(v, "t") == 0) t = GT_TRANS_T;
      else return gt_err_set(GT_ERR_DATA, "field '%s': expected N or T, got '%s'", field, v);
      *(i == F_TRANSA ? &p->transa : &p->transb) = t;
      return GT_OK;
    }
    case F_M: return parse_i64(field, v, 1, INT64_MAX, &p->m);
    case F_N: return parse_i64(field, v, 1, INT64_MAX, &p->n);
    case F_K: return parse_i64(field, v, 1, INT64_MAX, &p->k);
    case F_LDA: return parse_i64(field, v, 1, INT64_MAX, &p->lda);
    case F_LDB: return parse_i64(field, v, 1, INT64_MAX, &p->ldb);
    case F_LDC: return parse_i64(field, v, 1, INT64_MAX, &p->ldc);
    case F_BATCH: return parse_i64(field, v, 1, INT64_MAX, &p->batch);
    case F_SA: return parse_i64(field, v, 0, INT64_MAX, &p->stride_a);
    case F_SB: return parse_i64(field, v, 0, INT64_MAX, &p->stride_b);
    case F_SC: return parse_i64(field, v, 0, INT64_MAX, &p->stride_c);
    case F_EPI:
      if (gt_epilogue_parse(v, &p->epilogue) != GT_OK)
        return gt_err_set(GT_ERR_DATA, "field 'epilogue': unknown epilogue '%s'", v);
      return GT_OK;
    case F_BETA0:
    case F_FAST_ACCUM:
    case F_SCALE_D:
    case F_AMAX_D: {
      if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
        return gt_err_set(GT_ERR_DATA, "field '%s': expected 0 or 1, got '%s'", field, v);
      bool *f = i == F_BETA0 ? &p->beta_zero : i == F_FAST_ACCUM ? &p->fast_accum
                : i == F_SCALE_D ? &p->scale_d : &p->amax_d;
      *f = v[0] == '1';
      return GT_OK;
    }
    case F_SCALE_A:
    case F_SCALE_B:
      if (gt_scale_mode_parse(v, i == F_SCALE_A ? &p->scale_a : &p->scale_b) != GT_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", gt_err_msg());
        return gt_err_set(GT_ERR_DATA, "field '%s': %s", field, msg);
      }
      return GT_OK;
    case F_ARCH:
      if (!*v || strlen(v) >= sizeof p->arch || strpbrk(v, ", \t"))
        return gt_err_set(GT_ERR_DATA, "field 'arch': bad value '%s'", v);
      snprintf(p->arch, sizeof p->arch, "%s", v);
      return GT_OK;
    case F_SMS:
      s = parse_i64(field, v, 0, INT_MAX, &x);
      if (s == GT_OK) p->sm_count = (int)x;
      return s;
    default: return gt_err_set(GT_ERR_DATA, "unknown key field '%s'", field);
  }
}

int gt_problem_format_key(const gt_problem_t *p, char *buf, int cap) {
  int len = 0;
  buf[0] = '\0';
  for (int i = 0; i < GT_KEY_NFIELDS && len < cap; i++) {
    if (i >= GT_KEY_NFIELDS_V2 && field_at_default(p, i)) continue;
    char v[64];
    gt_problem_field_str(p, i, v, sizeof v);
    int w = snprintf(buf + len, (size_t)(cap - len), "%s%s=%s", i ? "," : "",
                     gt_key_field_names[i], v);
    if (w < 0) break;
    len += w;
  }
  return len < cap ? len : cap - 1;
}

gt_status_t gt_problem_parse_key(const char *text, gt_problem_t *p) {
  char *copy = strdup(text ? text : "");
  if (!copy) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  gt_status_t s = GT_OK;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ", \t\n", &save); tok; tok = strtok_r(NULL, ", \t\n", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      s = gt_err_set(GT_ERR_DATA, "key item '%s': expected field=value", tok);
      break;
    }
    *eq = '\0';
    if ((s = gt_problem_set_field(p, tok, eq + 1)) != GT_OK) break;
  }
  free(copy);
  return s;
}

uint32_t gt_problem_diff(const gt_problem_t *a, const gt_problem_t *b) {
  uint32_t mask = 0;
  for (int i = 0; i < GT_KEY_NFIELDS; i++) {
    char va[64], vb[64];
    gt_problem_field_str(a, i, va, sizeof va);
    gt_problem_field_str(b, i, vb, sizeof vb);
    if (strcmp(va, vb) != 0) mask |= 1u << i;
  }
  return mask;
}

int gt_problem_diff_str(const gt_problem_t *a, const gt_problem_t *b, char *buf, int cap) {
  uint32_t mask = gt_problem_diff(a, b);
  int len = 0;
  buf[0] = '\0';
  for (int i = 0; i < GT_KEY_NFIELDS && len < cap; i++) {
    if (!(mask & (1u << i))) continue;
    char va[64], vb[64];
    gt_problem_field_str(a, i, va, sizeof va);
    gt_problem_field_str(b, i, vb, sizeof vb);
    int w = snprintf(buf + len, (size_t)(cap - len), "%s%s: %s vs %s", len ? ", " : "",
                     gt_key_field_names[i], va, vb);
    if (w < 0) break;
    len += w;
  }
  return len < cap ? len : cap - 1;
}

bool gt_problem_equal(const gt_problem_t *a, const gt_problem_t *b) {
  return gt_problem_diff(a, b) == 0;
}

uint64_t gt_problem_hash(const gt_problem_t *p) {
  char key[1024];
  int n = gt_problem_format_key(p, key, sizeof key);
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
  return h;
}

int gt_problem_describe(const gt_problem_t *p, char *buf, int cap) {
  if (p->op == GT_OP_GROUPED_MM)
    return snprintf(buf, (size_t)cap,
                    "%s grouped_mm groups=%" PRId64 " N=%" PRId64 " K=%" PRId64
                    " rows<=%" PRId64 " (weights %s)",
                    gt_dtype_name(p->a_type), p->batch, p->m, p->k, p->n,
                    p->transa == GT_TRANS_T ? "[E][N][K]" : "[E][K][N]");
  char extra[96] = "";
  bool linear = p->transa == GT_TRANS_T && p->transb == GT_TRANS_N && p->lda == p->k &&
                p->ldb == p->k && p->ldc == p->m && p->batch == 1;
  if (linear)
    snprintf(extra, sizeof extra, " (linear %" PRId64 "x%" PRId64 "x%" PRId64 ")", p->n, p->m,
             p->k);
  char batch[48] = "";
  if (p->batch > 1) snprintf(batch, sizeof batch, " batch=%" PRId64, p->batch);
  /* An fp8 GEMM names both operand types (they may differ) and how each is scaled. */
  char type[96];
  if (gt_dtype_is_fp8(p->a_type) || gt_dtype_is_fp8(p->b_type))
    snprintf(type, sizeof type, "%sx%s(%s,%s)%s", gt_dtype_name(p->a_type),
             gt_dtype_name(p->b_type), gt_scale_mode_name(p->scale_a),
             gt_scale_mode_name(p->scale_b), p->fast_accum ? " fast_accum" : "");
  else
    snprintf(type, sizeof type, "%s", gt_dtype_name(p->a_type));
  return snprintf(buf, (size_t)cap, "%s %s m=%" PRId64 " n=%" PRId64 " k=%" PRId64 "%s%s",
                  type, gt_problem_ops(p), p->m, p->n, p->k, batch, extra);
}
