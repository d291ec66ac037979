/* The key of a grouped GEMM call (torch._grouped_mm's 2-D x 3-D form, the MoE experts' product),
 * built from the plain values the interposed function received, so the runtime looks up exactly
 * the key `tune` wrote. Pure C: the part of the shim that reads torch tensors passes their sizes,
 * strides and types in, and every decision is made here and in the runtime.
 *
 * The call, row-major as torch states it: out[rows][N] = mat_a[rows][K] @ mat_b[g][K][N] for the
 * rows of group g (offs[g] is the end of group g's rows, on the device). The key states it in the
 * column-major BLAS terms of every other key (gt_problem.h), transposed as cuBLAS would see it:
 *
 *   op = grouped_mm        batch = groups, stride_a = mat_b's group stride (elements)
 *   A  = mat_b[g]          a_type = mat_b's type; transa T for an nn.Linear-style weight
 *                          [E][N][K] viewed transposed (K contiguous: lda = its N stride),
 *                          N for a [E][K][N] weight (N contiguous: lda = its K stride)
 *   B  = mat_a             b_type = mat_a's type, transb N, ldb = mat_a's row stride
 *   D  = out               c_type = d_type = out's type, ldc = out's row stride, beta_zero 1
 *   m = N, k = K, n = the routed-row bucket (below); stride_b = stride_c = 0: the rows are split
 *   among the groups, not repeated per group.
 *
 * Rows bucketing. The host knows the total routed rows (mat_a's rows: tokens x top-k), never
 * their split among the experts, which only the device-side offs holds. The key's n is the total
 * rounded up to a power of two (1, 2, 4, ... ). Why not the exact total: a serving engine's
 * decode graphs have one fixed total per captured batch size (batch x top-k, powers of two in
 * practice: 1x8, 16x8), which the bucket keeps exact, while prefill totals vary with every prompt
 * and would each be a key of their own that no tune ever saw; a kernel's best tile depends on the
 * rows per expert, which within a factor of two the total predicts as well as the exact value
 * does. `tune` measures a bucket at its upper end with the rows split evenly among the groups
 * (the balanced routing a trained router aims for); a call with fewer rows runs the same kernel,
 * which is correct for any split (the kernels read offs on the device).
 *
 * fp8 (f8f8bf16_grouped_mm, torch._scaled_grouped_mm with rowwise scales): a_type = b_type =
 * f8e4m3fn, d_type bf16, scale_a = outer (the weights' scale, one per output column N of each
 * group: BLAS A's rows), scale_b = outer (one per routed row: BLAS B's columns), fast_accum as
 * the call asked. The scales are read on the device when the kernel runs (a graph replay sees
 * new values); their layout is part of what makes the key tunable: scale_a of torch (rows
 * fp32, contiguous) and scale_b of torch ([groups][N] fp32, N contiguous, groups N apart).
 *
 * Calls it keys but marks not tunable (recorded by `capture`, always served by torch): a type
 * other than bf16 in and out (or e4m3 x e4m3 -> bf16 with those scales), a bias, operands whose
 * innermost dimension is not contiguous or a weight contiguous in neither K nor N (K, for fp8),
 * no offs (the 3-D x 3-D batched form), any other form. */
#ifndef GT_GROUPED_KEY_H
#define GT_GROUPED_KEY_H

#include <stdbool.h>
#include <stdint.h>

#include "gt_cublas_key.h"
#include "gt_problem.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The facts of one call, as the interposer reads them from the tensors (elements, not bytes). */
typedef struct gt_grouped_call {
  const char *entry;        /* the interposed function ("bf16bf16_grouped_mm"), for reasons */
  gt_dtype_t a_type;        /* mat_a (activations) */
  gt_dtype_t b_type;        /* mat_b (weights) */
  gt_dtype_t out_type;      /* out */
  bool a_2d, b_3d;          /* mat_a is 2-D [rows][K], mat_b 3-D [groups][K][N] */
  bool has_offs;            /* offs given (int32 on the device) */
  bool has_bias;
  bool fp8_scaled;          /* an fp8 call with scales (f8f8bf16_grouped_mm) */
  bool scales_rowwise;      /* fp8: scale_a fp32 [rows] contiguous, scale_b fp32 [groups][N]
                               with strides (N, 1): the layout the own kernels read */
  bool fast_accum;          /* fp8: use_fast_accum */
  int64_t rows, k, n, groups;
  int64_t a_row_stride, a_col_stride;          /* mat_a strides */
  int64_t b_group_stride, b_k_stride, b_n_stride;
  int64_t out_row_stride, out_col_stride;
} gt_grouped_call_t;

/* The routed-row bucket of a call with `rows` rows: the smallest power of two >= rows (1 for
 * rows <= 1). -1 when rows is above 2^62 (no bucket: the call is not keyed). */
int64_t gt_grouped_rows_bucket(int64_t rows);

/* The key of call c on a device of arch and sm_count (see the file comment for the mapping).
 * With mark given, mark->why says why the key is not tunable ("" when it is); with mark NULL a
 * key that is not tunable is GT_ERR_UNSUPPORTED with that reason. GT_ERR_UNSUPPORTED for calls
 * no key can state (sizes <= 0 or too large, types no key has). */
gt_status_t gt_grouped_key(const gt_grouped_call_t *c, const char *arch, int sm_count,
                           gt_problem_t *out, gt_cublas_mark_t *mark);

/* The routed-row counts `tune` measures a grouped key with: its bucket n split as evenly as
 * possible over its groups (the first n % groups groups one row more), as cumulative ends:
 * offs[g] for g < key->batch. False when the key is not grouped_mm or cap < key->batch. */
bool gt_grouped_even_offs(const gt_problem_t *key, int32_t *offs, int64_t cap);

#ifdef __cplusplus
}
#endif
#endif
