/* What `gemmtune report` shows, gathered from a DB, a verify record and a shapes file
 * (cmd_report.c), and the one self-contained HTML page drawn from it (report_html.c: inline SVG
 * and CSS, no script, nothing fetched). */
#ifndef GT_REPORT_H
#define GT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/gt_roofline.h"
#include "gt_json.h"

/* One tuned key: a DB row, with what the shapes file says about it. */
typedef struct gt_report_key {
  char shape[96];      /* "TN m=4096 n=16 k=4096" */
  char label[96];      /* the shapes file's label ("llama3_8b/qkv"), "" when unknown */
  char dtype[24];      /* the roofline it belongs to: "bf16", "f32 (tf32)", ... */
  char provider[32], instance[192];
  double flops, bytes;           /* per call */
  double base_us, tuned_us;      /* medians as tune measured them */
  double speedup, spread_pct;    /* and the winner's round-to-round spread */
  double share;                  /* share of captured GEMM time, < 0 unknown */
  long calls;                    /* captured calls, 0 unknown */
} gt_report_key_t;

/* A roof of the roofline: the device's dense rate for a dtype and its memory bandwidth. */
typedef struct gt_report_roof {
  char dtype[24];
  gt_rate_t rate;    /* the rate class of its keys (gt_roof_rate_of) */
  double peak_flops; /* FLOP/s, 0 unknown */
  double bw;         /* bytes/s, 0 unknown */
} gt_report_roof_t;

typedef struct gt_report {
  char db_path[512], device[160], arch[16], version[32], generated[40];
  int sm_count;
  char roof_source[200];         /* where the roofs come from, said under each plot */
  gt_report_key_t *keys;
  size_t n;
  gt_report_roof_t *roofs;       /* one per dtype among the keys */
  size_t nroofs;
  const gt_json_t *verify;       /* a `verify --json` record, NULL when none was given */
  char verify_path[512];
  bool have_shapes;
  char shapes_path[512];
  size_t shapes_total, shapes_tuned;
  double gemm_bound;             /* Amdahl bound on GEMM time from the shapes' shares, 0 none */
} gt_report_t;

/* Write the page to f. Returns false when writing failed. */
bool gt_report_write_html(FILE *f, const gt_report_t *r);

#endif
