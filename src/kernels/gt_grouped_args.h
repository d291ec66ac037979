/* The argument block of the own grouped GEMM kernels (Mixture-of-Experts), shared by the C code
 * that fills it and the CUDA kernels that read it. Plain C, standard layout.
 *
 * The problem is torch._grouped_mm's 2-D x 3-D form, in row-major terms: A holds `rows` routed
 * rows of K elements, sorted by group; offs[g] (int32, on the device) is the end of group g's rows,
 * so group g owns rows [g ? offs[g-1] : 0, offs[g]) (an empty group has offs[g] == offs[g-1]).
 * For every group g and every row r of it:
 *
 *     D[r][n] = sum_k A[r][k] * B[g][k][n]   (+ bias[g][n] when bias is not NULL), fp32 accumulate
 *
 * With e4m3 operands (operands == GT_GROUPED_OPERANDS_E4M3: torch's f8f8bf16_grouped_mm, the
 * rowwise-scaled fp8 MoE product of torch._scaled_grouped_mm) D is bf16 and each sum is scaled
 * in fp32 before it is rounded:
 *
 *     D[r][n] = scale_a[r] * scale_b[g][n] * sum_k A[r][k] * B[g][k][n]
 *
 * scale_a one fp32 per routed row (rows of them, contiguous), scale_b[g][n] at
 * scale_b + g*sscale_b + n (torch's [groups][N] scale of the weights). No bias (torch refuses one).
 *
 * Element addresses: A[r][k] at a + r*lda + k (K contiguous); B[g][k][n] at
 * b + g*sbg + k*sbk + n*sbn (the nn.Linear-style weight [E][N][K] seen transposed has sbk == 1,
 * a [E][K][N] weight has sbn == 1); D[r][n] at d + r*ldd + n; bias[g][n] at bias + g*sbias + n.
 * Rows at or past offs[groups-1] are neither read as output nor written (PyTorch leaves them
 * unspecified too). The split of rows among groups is read on the device only: no kernel
 * synchronises with the host, so a launch is legal inside CUDA graph capture and a replay sees the
 * routing of that replay. */
#ifndef GT_GROUPED_ARGS_H
#define GT_GROUPED_ARGS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The operands' type (gt_grouped_args_t.operands); D follows from it (bf16 for both). */
#define GT_GROUPED_OPERANDS_BF16 0 /* bf16 A, B, D and bias */
#define GT_GROUPED_OPERANDS_E4M3 1 /* e4m3 A and B, fp32 rowwise scales, bf16 D */

typedef struct gt_grouped_args {
  const void *a;        /* rows x k, the operands' type (below) */
  const void *b;        /* groups x k x n, strides below */
  void *d;              /* rows x n, bf16 */
  const int32_t *offs;  /* groups cumulative row ends, device memory */
  const void *bias;     /* NULL, or groups x n of D's type */
  int64_t rows;         /* rows of A and D as allocated (>= offs[groups-1]); host-known */
  int64_t n, k;
  int64_t lda, ldd;     /* elements */
  int64_t sbg, sbk, sbn;/* elements */
  int64_t sbias;        /* elements between groups' bias vectors */
  int32_t groups;
  int32_t operands;     /* GT_GROUPED_OPERANDS_*: 0 (bf16) when left zero */
  const float *scale_a; /* e4m3 only: rows fp32 scales of A's rows, device memory */
  const float *scale_b; /* e4m3 only: groups x n fp32 scales of the weights, device memory */
  int64_t sscale_b;     /* elements between groups' scale_b rows (>= n when groups > 1) */
} gt_grouped_args_t;

#ifdef __cplusplus
}
#endif
#endif
