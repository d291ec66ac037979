/* Shapes files: the list of GEMMs a workload issues, as `tune` and `shapes` read them.
 *
 * A CSV with a header row; '#' lines and blank lines are ignored. Three column sets are
 * understood (extra descriptive columns model, proj, label are kept as the shape's label):
 *   nn.Linear view:   tokens,out_features,in_features        (the ../corpus files)
 *   row-major codes:  layout,M,N,K   with layout one of mk,kn mk,nk km,kn km,nk, quoted in
 *                     rows since the code holds a comma: "mk,nk",16,4096,4096
 *   BLAS key columns: any of the 23 key fields (m,n,k required) - what `gemmtune capture` writes,
 *                     with optional calls,time_us,share,entry,workspace columns
 * A `dtype` column (or the caller's default) sets A/B/C/D types. Any view may add key columns
 * (an `epilogue` column makes a Linear with bias: `bias`, `bias_gelu`, ...) and two columns about
 * how the workload called it: `entry` (gemmex, ltmatmul, or a cuBLAS function name; it decides
 * the baseline) and `workspace` (bytes the application offered a cublasLtMatmul call). A
 * `not_tunable` column (capture writes it) marks rows of GEMMs the workload ran that gemmtune
 * cannot tune, with the reason ("-" or empty: tunable): `tune` skips them saying why, `shapes`
 * lists them; a marked row and a tunable row of the same key are two shapes. Files without the
 * column read as before (every row tunable). Cells are split as RFC 4180
 * fields (core/gt_csv.h), blanks around them dropped. Every error names file:line and the
 * column; a row with more cells than a header with a layout column is told to quote the code. */
#ifndef GT_SHAPES_H
#define GT_SHAPES_H

#include <stddef.h>

#include "gt_entry.h"
#include "gt_problem.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_SHAPE_REASON_MAX 160

typedef struct gt_shape {
  gt_problem_t p;
  char label[96];    /* "llama3_8b/qkv" or "" */
  int line;          /* source line */
  long calls;        /* from capture (0 unknown) */
  double time_us;    /* GPU time the workload spent in this key (0 unknown) */
  double share;      /* fraction of the captured GEMM time */
  char view[128];    /* the input as written + the mapping applied: "linear 16x4096x4096 -> TN" */
  gt_entry_t entry;  /* the entry point its calls came through (column `entry`; default: not
                        stated), which decides the baseline `tune` races it against */
  uint64_t workspace; /* bytes of workspace the application gave the call (column `workspace`,
                         cublasLtMatmul calls; 0 unknown) */
  char not_tunable[GT_SHAPE_REASON_MAX]; /* why gemmtune cannot tune it (column `not_tunable`);
                                            "" = tunable */
} gt_shape_t;

typedef struct gt_shapes {
  gt_shape_t *v;
  size_t n, cap;
  char path[512];
} gt_shapes_t;

/* Read a shapes file. `defaults` supplies every field a row does not state (types, compute,
 * arch, sm_count...). Duplicate keys are merged (calls and time summed), the later line noted in
 * the returned count *merged (may be NULL). On error nothing is returned and the message names
 * file:line and the column. */
gt_status_t gt_shapes_read(const char *path, const gt_problem_t *defaults, gt_shapes_t *out,
                           size_t *merged);
gt_status_t gt_shapes_parse(const char *name, const char *text, const gt_problem_t *defaults,
                            gt_shapes_t *out, size_t *merged);
void gt_shapes_free(gt_shapes_t *s);

#ifdef __cplusplus
}
#endif
#endif
