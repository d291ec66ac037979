/* kernels_bench --dtype f8e4m3fn / f8e5m2: the own fp8 instances (wgf8) against the
 * application's cublasLtMatmul fp8 call with the same scales, in one run (kernels_bench_fp8.c). */
#ifndef GT_KERNELS_BENCH_FP8_H
#define GT_KERNELS_BENCH_FP8_H

#include <stdbool.h>

#include "core/gt_dtype.h"

typedef struct kb_fp8_opts {
  const char *shapes, *out, *filter, *tokens;
  int rounds, finalists;
  gt_dtype_t dtype; /* A and B: GT_DT_F8E4M3FN or GT_DT_F8E5M2; D is bf16 */
  bool outer;       /* rowwise scales (per output feature x per token) instead of tensorwise */
} kb_fp8_opts_t;

/* Run the fp8 race over the shapes file and print the table and the summary; with o->out, write
 * kernels_bench_fp8.csv there. Returns the process exit code (77: no usable device). */
int kb_fp8_run(const kb_fp8_opts_t *o);

#endif
