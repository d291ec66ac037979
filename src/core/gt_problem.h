/* The GEMM problem descriptor, which is also the tuned-DB key.
 *
 * A problem is stated in the BLAS column-major terms the live entry point receives
 * (cublasGemmEx / cublasLtMatmul): D[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n],
 * every matrix column-major with its leading dimension. A tuned row applies only when every
 * field here matches the live call; gt_problem_diff names the fields that differ.
 *
 * Tools also accept the row-major views users think in and map them here:
 *   nn.Linear  y[tokens,out] = x[tokens,in] @ W[out,in]^T   ->  TN, m=out n=tokens k=in
 *   row-major layout codes for D[M,N] = A * B, A and B as stored:
 *     "mk,kn" A[M,K]*B[K,N]   "mk,nk" A[M,K]*B[N,K]   "km,kn" A[K,M]*B[K,N]   "km,nk" A[K,M]*B[N,K]
 * gt_problem_mapping_str explains the mapping that was applied. */
#ifndef GT_PROBLEM_H
#define GT_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_dtype.h"
#include "gt_scale.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GT_OP_GROUPED_MM is torch._grouped_mm's 2-D x 3-D product (MoE experts), stated in the same
 * column-major terms: the weights are BLAS A (batch = groups, stride_a between experts), the
 * routed rows are BLAS B and D, shared by all groups (stride_b = stride_c = 0), and n is the
 * routed-row bucket (gt_grouped_key.h documents the mapping and the bucketing). */
typedef enum gt_op { GT_OP_GEMM = 0, GT_OP_GROUPED_MM = 1 } gt_op_t;

/* "gemm", "grouped_mm" (the key's op field). */
const char *gt_op_name(gt_op_t op);

typedef enum gt_trans { GT_TRANS_N = 0, GT_TRANS_T = 1 } gt_trans_t;

#define GT_ARCH_MAX 16

typedef struct gt_problem {
  gt_op_t op;
  gt_dtype_t a_type, b_type, c_type, d_type;
  gt_compute_t compute;
  gt_dtype_t scale_type; /* type of alpha/beta */
  gt_trans_t transa, transb;
  int64_t m, n, k;
  int64_t lda, ldb, ldc; /* D uses ldc (as cublasGemmEx); cublasLt calls with ldd != ldc pass through */
  int64_t batch;         /* 1 = not batched */
  int64_t stride_a, stride_b, stride_c; /* elements between batch items; 0 when batch == 1 */
  gt_epilogue_t epilogue;
  bool beta_zero;        /* beta == 0: C is not read */
  char arch[GT_ARCH_MAX];/* "sm_90"; "cpu" for host providers */
  int sm_count;          /* multiprocessors (GPU) or cores (host) */
  /* FP8 scaling (cuBLASLt's A/B scale modes, fast accumulation, D's scale and amax). All at
   * their defaults (none, 0) for every key that is not an fp8 GEMM; see gt_scale_mode_t. The
   * factors themselves are device arrays the kernel reads when it runs (so a graph replay sees
   * new values): the key says only how they are laid out. */
  gt_scale_mode_t scale_a, scale_b; /* only on an fp8 operand */
  bool fast_accum;       /* CUBLASLT_MATMUL_DESC_FAST_ACCUM: fp8 products summed without
                            periodic promotion to fp32 (a coarser result, part of the key) */
  bool scale_d;          /* D is fp8 and divided by a device scalar before conversion */
  bool amax_d;           /* the call writes max|D| (before D's scale) to a device scalar */
} gt_problem_t;

/* Number of key fields, and their names in the order keys are printed and DB columns appear.
 * The first GT_KEY_NFIELDS_V2 are the fields keys had before fp8 scaling (DB formats 1 and 2
 * have exactly those key columns); the fp8 fields follow them. */
#define GT_KEY_NFIELDS 28
#define GT_KEY_NFIELDS_V2 23
extern const char *const gt_key_field_names[GT_KEY_NFIELDS];

/* A problem with defaults: bf16 in/out, f32 compute and scale, NN, batch 1, beta 0, no epilogue,
 * arch "cpu", sm_count 0. Dimensions and leading dimensions zero (must be set). */
void gt_problem_init(gt_problem_t *p);

/* Set m/n/k, transposes and leading dimensions (tight) from the nn.Linear view. */
void gt_problem_set_linear(gt_problem_t *p, int64_t tokens, int64_t out_features,
                           int64_t in_features);
/* Same from a row-major layout code ("mk,kn", "mk,nk", "km,kn", "km,nk") and M,N,K. */
gt_status_t gt_problem_set_rowmajor(gt_problem_t *p, const char *layout, int64_t M, int64_t N,
                                    int64_t K);
/* Fill leading dims left at 0 with the tight values for the transposes and dims. */
void gt_problem_fill_lds(gt_problem_t *p);

/* Check internal consistency (dims > 0, ld >= rows, strides for batch). On failure the
 * message names the field. */
gt_status_t gt_problem_validate(const gt_problem_t *p);

/* FLOPs (2*m*n*k*batch) and the fewest bytes a GEMM must move (A, B read once, D written once,
 * C read once when beta != 0). */
double gt_problem_flops(const gt_problem_t *p);
double gt_problem_min_bytes(const gt_problem_t *p);
/* Elements a GEMM operand spans in memory (leading dimension, batch stride): which is 'A', 'B'
 * or 'C' (C and D share ldc and stride_c). 0 for an invalid problem. */
size_t gt_problem_operand_elems(const gt_problem_t *p, char which);

/* Two-letter transpose code "TN" (transa then transb). */
const char *gt_problem_ops(const gt_problem_t *p);
/* The lower-case form of that code as kernel names and layout options spell it ("tn", "nn",
 * "nt", "tt"): false, leaving *transa and *transb alone, for anything else. */
bool gt_layout_parse(const char *lay, gt_trans_t *transa, gt_trans_t *transb);

/* Key text: "m=4096,n=16,k=4096,..." with every field, in gt_key_field_names order, except that
 * the fp8 fields (those after the first GT_KEY_NFIELDS_V2) are left out where they hold their
 * defaults: the text, and the hash sharding uses, of every key that is not fp8 stays what it was
 * before those fields existed. Returns chars written (truncated to cap, always terminated). */
int gt_problem_format_key(const gt_problem_t *p, char *buf, int cap);
/* Parse key text (comma or space separated field=value; fields not given keep p's values,
 * so callers start from gt_problem_init or a device-filled default). Unknown fields and bad
 * values fail with a message naming the field. */
gt_status_t gt_problem_parse_key(const char *text, gt_problem_t *p);

/* Value of key field i as text (for CSV columns and diffs). */
void gt_problem_field_str(const gt_problem_t *p, int i, char *buf, int cap);
/* Set key field by name from text. */
gt_status_t gt_problem_set_field(gt_problem_t *p, const char *field, const char *value);

/* Bitmask of key fields (bit i = gt_key_field_names[i]) where a and b differ. 0 = same key. */
uint32_t gt_problem_diff(const gt_problem_t *a, const gt_problem_t *b);
/* "n: 2688 vs 2624, sm_count: 132 vs 114" for the differing fields (a's value first). */
int gt_problem_diff_str(const gt_problem_t *a, const gt_problem_t *b, char *buf, int cap);
bool gt_problem_equal(const gt_problem_t *a, const gt_problem_t *b);
/* 64-bit FNV-1a hash of the key text (for sharding and hash tables). */
uint64_t gt_problem_hash(const gt_problem_t *p);

/* Human-readable shape summary: "bf16 TN m=4096 n=16 k=4096 (linear 16x4096x4096)". */
int gt_problem_describe(const gt_problem_t *p, char *buf, int cap);

#ifdef __cplusplus
}
#endif
#endif
