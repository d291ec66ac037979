/* The C interface between the torch bridge (libgemmtune_torchmm.so, src/runtime/torch/) and the
 * preload shim: the bridge defines torch's grouped GEMM functions, reads the tensors' sizes,
 * strides, types and pointers into plain values, and leaves every decision (key, capture, DB
 * lookup, running the tuned kernel) to the shim through these two calls, exported by
 * libgemmtune_preload.so and found by the bridge with dlsym (RTLD_DEFAULT). When the shim is not
 * loaded, the bridge only forwards.
 *
 * One call of the interposed function is:
 *
 *   int r = gemmtune_grouped_begin(&call, &ops, stream);
 *   if (r == GEMMTUNE_GROUPED_SERVED) return;          // the tuned kernel ran on stream
 *   original(...);                                     // torch's own function
 *   if (r == GEMMTUNE_GROUPED_ENTERED) gemmtune_grouped_end();
 *
 * begin never throws, aborts or synchronises; it is legal under CUDA graph capture (the kernel it
 * enqueues reads the routing from offs on the device). end closes the call's GPU-time
 * measurement (capture) on the calling thread. Plain C. */
#ifndef GT_GROUPED_ENTRY_H
#define GT_GROUPED_ENTRY_H

#include <stdint.h>

#include "core/gt_grouped_key.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device pointers of one call (row-major, as torch holds them). */
typedef struct gemmtune_grouped_ops {
  const void *mat_a; /* [rows][K] */
  const void *mat_b; /* [groups][K][N] (strides in the call) */
  const int32_t *offs;
  const void *bias;  /* NULL */
  void *out;         /* [rows][N] */
  const float *scale_a; /* f8f8bf16_grouped_mm: fp32 [rows]; NULL otherwise */
  const float *scale_b; /* f8f8bf16_grouped_mm: fp32 [groups][N]; NULL otherwise */
} gemmtune_grouped_ops_t;

enum {
  GEMMTUNE_GROUPED_PASS = 0,    /* call the original; nothing to end */
  GEMMTUNE_GROUPED_SERVED = 1,  /* the tuned kernel ran: do not call the original */
  GEMMTUNE_GROUPED_ENTERED = 2  /* call the original, then gemmtune_grouped_end() */
};

typedef int (*gemmtune_grouped_begin_fn)(const gt_grouped_call_t *call,
                                         const gemmtune_grouped_ops_t *ops, void *stream);
typedef void (*gemmtune_grouped_end_fn)(void);

/* The names the bridge looks up. */
#define GEMMTUNE_GROUPED_BEGIN_SYM "gemmtune_grouped_begin"
#define GEMMTUNE_GROUPED_END_SYM "gemmtune_grouped_end"

/* Takes one call on (see above): keys it (gt_grouped_key), counts and times it under its key for
 * capture, and on a tuned row runs the row's kernel on stream (a cudaStream_t) with ops. Returns
 * a GEMMTUNE_GROUPED_* value. */
int gemmtune_grouped_begin(const gt_grouped_call_t *call, const gemmtune_grouped_ops_t *ops,
                           void *stream);
/* Ends the call begin returned GEMMTUNE_GROUPED_ENTERED for, after the original ran. */
void gemmtune_grouped_end(void);

#ifdef __cplusplus
}
#endif
#endif
