/* The own grouped GEMM kernels (torch._grouped_mm's 2-D x 3-D problem, gt_grouped_args.h): their
 * table and a plain-C host API to check and launch one. The table (generated/grouped_instances.c)
 * is plain C and builds everywhere; gt_grouped_supports and gt_grouped_launch are in the CUDA
 * build only (gt_grouped.cu).
 *
 * Names: gt_<arch>_<family>_<dtype>_<layout>_t<BM>x<BN>x<BK>_s<S>_ks<KS>, the kernel's symbol too,
 * so a CUPTI trace names the instance that ran (gt_sm90_grpd_bf16_enk_t128x16x128_s4_ks2; dtype
 * e4m3: fp8 operands with rowwise scales and a bf16 D, torch's f8f8bf16_grouped_mm, BK in
 * elements).
 * Families: grpd (decode: a CTA streams BM weight rows of one group once per BN routed rows, the
 * weight rows as wgmma's M; 1-64 rows per group), grpp (prefill: BN = 64 or 128 routed rows
 * as wgmma's M times BM weight rows) and grpv (decode on CUDA cores, gt_grpv.cuh: a CTA of W
 * warps computes BM weight rows for BN <= 8 routed rows over the whole K; named
 * gt_<arch>_grpv_bf16_enk_t<BM>x<BN>x<BK>_w<W>_c<C>, BK the K elements of one warp batch, C
 * chunks of BM rows a CTA). One launch per call, no host synchronisation, legal in CUDA graph
 * capture: the routing is read from offs on the device by every CTA. */
#ifndef GT_GROUPED_H
#define GT_GROUPED_H

#include <stddef.h>
#include <stdint.h>

#include "core/gt_dtype.h"
#include "core/gt_status.h"
#include "gt_grouped_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cudaStream_t is `struct CUstream_st *`: declared here so this header needs no CUDA header. */
struct CUstream_st;

typedef enum gt_grouped_family {
  GT_GROUPED_DECODE = 0, /* grpd */
  GT_GROUPED_PREFILL,    /* grpp */
  GT_GROUPED_VECTOR      /* grpv */
} gt_grouped_family_t;

/* Which weight layout an instance reads (fixed per instance: the TMA boxes and the wgmma
 * transpose differ). */
typedef enum gt_grouped_layout {
  GT_GROUPED_ENK = 0, /* sbk == 1: weights [E][N][K] (torch's w.transpose(-2, -1) of nn.Linear) */
  GT_GROUPED_EKN      /* sbn == 1: weights [E][K][N] */
} gt_grouped_layout_t;

typedef struct gt_grouped_instance {
  const char *name;
  gt_grouped_family_t family;
  int arch;          /* row of gt_karchs[] (gt_kernel_arch.h) */
  gt_dtype_t dtype;  /* of A and B: bf16 (D and bias bf16 too), or f8e4m3fn (grpd: D bf16,
                        rowwise scales; gt_grouped_args.h) */
  gt_grouped_layout_t layout;
  int tile_n;        /* BM: weight rows (output columns) per CTA (grpv: per chunk) */
  int tile_rows;     /* BN: routed rows per CTA */
  int tile_k;        /* BK: K per ring stage (grpv: K per warp batch, 256 x its unroll) */
  int stages;        /* ring stages (grpv: 1, no ring) */
  int splitk;        /* CTAs along K in one cluster (1: none; grpv: 1) */
  int chunks;        /* grpv: chunks of BM weight rows one CTA computes in turn; 1 elsewhere */
  int threads;
  int smem;          /* dynamic shared memory per CTA, bytes (grpd, grpp: 1024 of it alignment
                        slack; grpv: the fp32 partials) */
} gt_grouped_instance_t;

/* generated/grouped_instances.c */
extern const gt_grouped_instance_t gt_grouped_instances[];
extern const size_t gt_grouped_instance_count;

/* The index of the instance named `name` in gt_grouped_instances[], or -1. */
int gt_grouped_find(const char *name);

/* The layout a problem's weight strides describe: GT_GROUPED_ENK when sbk == 1, GT_GROUPED_EKN
 * when sbn == 1 (and sbk != 1), -1 when neither stride is 1. */
int gt_grouped_layout_of(const gt_grouped_args_t *args);

/* The tile slots any routing of args needs (tiles of BN rows of each non-empty group), bounded
 * on the host: floor((rows + min(groups, rows) (BN - 1)) / BN). Plain C. */
int64_t gt_grouped_slots(int idx, const gt_grouped_args_t *args);

/* The {x, y, z} grid of the one launch of instance `idx` for args: grpd and grpp x the tile
 * slots, y the N tiles of BM, z the K splits; grpv x the CTAs along N (ceil(N tiles / chunks)),
 * y the slots, z 1. Plain C. */
void gt_grouped_grid(int idx, const gt_grouped_args_t *args, unsigned grid[3]);

/* The workspace instance `idx` needs for args, bytes: 0 for every instance today (split-K is
 * reduced inside a cluster); callers pass what this says so a future instance can need one. */
size_t gt_grouped_workspace_bytes(int idx, const gt_grouped_args_t *args);

/* Whether instance `idx` runs args on the current device: GT_OK, or GT_ERR_UNSUPPORTED (or
 * GT_ERR_USAGE for a malformed argument block, GT_ERR_NOT_FOUND for a bad index) with the reason
 * in gt_err_msg(). Checks the dtype, the weight layout, TMA's rules (16-byte aligned A and B,
 * strides a multiple of 8 elements, extents within 32-bit coordinates), the device's
 * architecture and shared memory. Reads no device memory (offs included). CUDA builds only.
 * With a, b, d, offs and bias all NULL it answers for the shape alone (what a provider asks when
 * it rebuilds a candidate from a key); the pointers' alignment is then checked at launch. */
gt_status_t gt_grouped_supports(int idx, const gt_grouped_args_t *args);

/* Launches instance `idx_or_name` (a decimal index into gt_grouped_instances[] or a name) on
 * `stream` for args: one kernel launch, nothing synchronises, so it may be captured into a CUDA
 * graph (a replay reads that replay's offs). Runs gt_grouped_supports first and returns its
 * status when it refuses. The TMA descriptors are encoded on the host from the pointers on every
 * call. rows == 0 or n == 0 launches nothing. workspace: at least gt_grouped_workspace_bytes
 * (may be NULL when that is 0). Returns GT_ERR_DEVICE when the launch fails. */
gt_status_t gt_grouped_launch(const char *idx_or_name, const gt_grouped_args_t *args,
                              void *workspace, size_t workspace_bytes,
                              struct CUstream_st *stream);

#ifdef __cplusplus
}
#endif
#endif
