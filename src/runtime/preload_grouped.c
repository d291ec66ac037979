/* torch's grouped GEMM calls (MoE experts), as the torch bridge hands them over through
 * gt_grouped_entry.h: keyed, counted and timed like any cuBLAS call, served by the tuned kernel on
 * a hit, left to torch's own function otherwise. The bridge reads the tensors; everything decided
 * here is plain C over the same engine the cuBLAS entry points use. */
#include <string.h>

#include "gt_grouped_entry.h"
#include "preload_internal.h"

/* The call begin took on, ended by gemmtune_grouped_end on the same thread. Interposed calls do
 * not nest (the depth check), so one frame per thread is enough. */
static _Thread_local gt_preload_frame_t g_frame;

GT_PRELOAD_EXPORT int gemmtune_grouped_begin(const gt_grouped_call_t *call,
                                             const gemmtune_grouped_ops_t *ops, void *stream) {
  gt_preload_frame_t *f = &g_frame;
  f->entered = false;
  if (!call || !ops || gt_preload_depth > 0 || !gt_preload_active()) return GEMMTUNE_GROUPED_PASS;
  gt_preload_depth++;
  f->entered = true;
  const char *entry = call->entry ? call->entry : "bf16bf16_grouped_mm";
  if (!gt_preload_call_begin(&f->call, entry, (cudaStream_t)stream))
    return GEMMTUNE_GROUPED_ENTERED;
  gt_problem_t key;
  gt_cublas_mark_t mark;
  gt_status_t ks = gt_grouped_key(call, f->call.env.arch, f->call.env.sm_count, &key, &mark);
  /* BLAS terms (gt_grouped_key.h): A is the weights, B the routed rows, D the output; so A's
   * scale is torch's scale_b (per group and column), B's torch's scale_a (per row). */
  gt_operands_t o = {.A = ops->mat_b, .B = ops->mat_a, .C = ops->out, .D = ops->out,
                     .bias = ops->bias, .offs = ops->offs, .rows = call->rows,
                     .scale_a = ops->scale_b, .scale_b = ops->scale_a};
  if (gt_preload_call_try(&f->call, ks, &key, &mark, &o)) {
    gemmtune_grouped_end();
    return GEMMTUNE_GROUPED_SERVED;
  }
  return GEMMTUNE_GROUPED_ENTERED;
}

GT_PRELOAD_EXPORT void gemmtune_grouped_end(void) {
  gt_preload_frame_t *f = &g_frame;
  if (!f->entered) return;
  gt_preload_call_end(&f->call);
  gt_preload_depth--;
  f->entered = false;
}
