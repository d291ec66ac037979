/* The fp64 reference GEMM: the answer every candidate is gated against on the host, and the
 * provider "reference" that lists it (excluded: it is never raced).
 *
 * It accepts every problem the key can state: all element types (fp8 and int8 included, read
 * through gt_load_elem), N/T operands with leading dimensions, strided batches, alpha/beta of the
 * problem's scale type, and the cuBLASLt epilogues (bias, relu, gelu with the tanh approximation,
 * applied as act(alpha*op(A)op(B) + beta*C + bias)). Products are accumulated in fp64. For fp8
 * keys the operands are dequantized first (each element times the factor of scale_a/scale_b that
 * covers it, per the key's scale modes), and an fp8 D with a scale is scale_d * act(...). */
#ifndef GT_REFERENCE_H
#define GT_REFERENCE_H

#include "gt_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const gt_provider_t gt_provider_reference;

/* Compute the reference for p on host operands ops (A, B, C, bias, alpha, beta; D is not used)
 * into ref_out: tight column-major m x n per batch item, batch items one after another
 * (m*n*batch doubles). Values are what an exact GEMM would store before rounding to a float
 * output type; integer outputs are rounded to nearest even and saturated to the type, fp8
 * outputs saturated to the type's finite range (as cuBLASLt's fp8 conversion does). C is read
 * only when !p->beta_zero, bias only for bias epilogues. Uses up to the online cores for large
 * problems. */
gt_status_t gt_reference_gemm(const gt_problem_t *p, const gt_operands_t *ops, double *ref_out);

/* Element type of the bias vector (length m, shared by every batch item) for bias epilogues:
 * the output type, except bf16 for fp8 outputs (cuBLASLt's default bias type for those). */
gt_dtype_t gt_reference_bias_type(const gt_problem_t *p);

/* GELU as cuBLASLt computes it: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
double gt_reference_gelu(double x);

#ifdef __cplusplus
}
#endif
#endif
