/* libgemmtune: run GEMMs through a tuned DB from your own code.
 *
 *   gt_ctx_t *ctx;
 *   gt_ctx_create(0, &ctx);                          // CUDA device 0
 *   gt_ctx_load_db(ctx, "/opt/models/h200.csv");     // colon-separated list of tuned DBs
 *   gt_problem_t p;
 *   gt_ctx_problem_init(ctx, &p);                    // bf16, f32 compute, this device's identity
 *   gt_problem_set_linear(&p, 16, 4096, 4096);       // nn.Linear tokens x out x in
 *   gt_gemm_args_t a = {.A = W, .B = x, .D = y, .alpha = &one, .beta = &zero};
 *   gt_gemm(ctx, &p, &a, stream);                    // tuned candidate, or cuBLAS's default
 *   gt_decision_t d;
 *   gt_last_decision(ctx, &d);                       // what ran, and why
 *
 * The problem is stated in the BLAS column-major terms of cublasGemmEx (see core/gt_problem.h);
 * a DB row applies only when every key field matches. On a hit the row's candidate (a cuBLASLt
 * configuration or one of gemmtune's kernels) runs; on a miss cuBLAS runs with its default
 * algorithm, exactly as cublasGemmEx would. Every function returns a gt_status_t; on failure
 * gt_err_msg() says why (thread-local). Link with `pkg-config --libs gemmtune`. */
#ifndef GEMMTUNE_H
#define GEMMTUNE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/gt_dtype.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device and the tuned rows used on it. Thread-safe for gt_gemm and gt_last_decision; create,
 * load and destroy must not run concurrently with other calls on the same context. */
typedef struct gt_ctx gt_ctx_t;

/* Operands of one GEMM: device pointers, column-major, as described by the problem.
 * D = alpha * op(A) * op(B) + beta * C (+ bias and activation per the problem's epilogue).
 * C may equal D (in place, as cublasGemmEx). alpha and beta point to HOST scalars of the
 * problem's scale_type (device-resident scalars are not supported). */
typedef struct gt_gemm_args {
  const void *A, *B, *C;
  void *D;
  const void *bias;          /* length m, D's type; only for epilogues with a bias */
  const void *alpha, *beta;
  /* fp8 keys only (NULL otherwise): device f32 scale factors laid out as the key's scale_a /
   * scale_b modes say, D's scale, and the f32 max|D| output, read and written when the kernel
   * runs (so a replayed graph sees the values the arrays hold then). */
  const float *scale_a, *scale_b, *scale_d;
  float *amax_d;
} gt_gemm_args_t;

/* What the most recent gt_gemm on a context ran, and why. */
typedef struct gt_decision {
  bool hit;                  /* true: a tuned row's candidate ran */
  char provider[32];         /* what ran: "cublaslt", "kernels", or "cublas" on a miss */
  char instance[192];        /* the instance name (matches the kernel name in a trace) */
  char reason[768];          /* hit: the row's speedup and timing; miss: the nearest row and the
                                fields that differ ("n: 2688 vs 2624"); a row that exists but could
                                not be used: why (library version, launch failure...) */
  char key[512];             /* the key of the call, as gt_problem_format_key prints it */
} gt_decision_t;

/* Create a context for CUDA device `device` (its architecture and SM count become the device
 * identity of every key). No DB is loaded yet: every call misses until gt_ctx_load_db.
 * GT_ERR_DEVICE when the device does not exist or cannot be queried. Call it outside CUDA graph
 * capture: it creates the calling thread's cuBLAS handle for the default path. */
gt_status_t gt_ctx_create(int device, gt_ctx_t **out);

/* Load tuned DBs from a colon-separated list of paths (the first file listing a key wins), adding
 * to what is loaded, and forget cached decisions. Every file is tried: a missing or malformed
 * file contributes no rows and the call returns the first such failure (GT_ERR_NOT_FOUND for a
 * missing file, GT_ERR_DATA for a malformed one; gt_err_msg names file:line), while the rows of
 * the good files stay loaded. */
gt_status_t gt_ctx_load_db(gt_ctx_t *ctx, const char *paths);

/* Number of tuned rows loaded (for every device; only this device's can match). */
size_t gt_ctx_db_rows(const gt_ctx_t *ctx);

/* gt_problem_init with this context's device identity (arch "sm_90", SM count). */
void gt_ctx_problem_init(const gt_ctx_t *ctx, gt_problem_t *p);

/* Enqueue D = alpha*op(A)*op(B) + beta*C on `stream` (a cudaStream_t; NULL = legacy default
 * stream). p's arch and sm_count are replaced by the context's device, and beta_zero is taken from
 * *beta, so the key is the one a DB row for this call has. Asynchronous; nothing allocates or
 * synchronises once a key has been seen, so calls may be captured into a CUDA graph. The first
 * call of a key may be made during a capture too: its tuned candidate is used when it was
 * prepared ahead (the context prepares every row for its device at the first call made outside
 * capture) or can be prepared safely there, otherwise cuBLAS's default path runs for that call.
 * The default path needs the calling thread's cuBLAS handle: a thread other than the creating one
 * whose very first call is under capture gets GT_ERR_UNSUPPORTED (nothing enqueued). A tuned
 * candidate that fails to launch is dropped for that key and cuBLAS runs instead. GT_ERR_USAGE
 * for an invalid problem or missing operands. */
gt_status_t gt_gemm(gt_ctx_t *ctx, const gt_problem_t *p, const gt_gemm_args_t *args,
                    void *stream);

/* The decision of the most recent gt_gemm on this context (from any thread).
 * GT_ERR_NOT_FOUND before the first call. */
gt_status_t gt_last_decision(gt_ctx_t *ctx, gt_decision_t *out);

/* Release the context, its prepared candidates and workspaces. Work enqueued by gt_gemm must have
 * completed (synchronise the streams first). */
void gt_ctx_destroy(gt_ctx_t *ctx);

#ifdef __cplusplus
}
#endif
#endif
