/* Own-kernel instances: their parameters, their names, and the generated table listing them.
 *
 * Plain C with no CUDA dependency, so the name round trip is tested on machines without a GPU or
 * a toolkit. The parameter space is declared in src/kernels/space.json; gen_instances.py writes
 * one kernel per instance (its extern "C" symbol is the instance name, so a CUPTI trace maps back
 * to a DB row without demangling) and the table in generated/instances.c.
 *
 * Names, one token per parameter (see gt_name.h for the token grammar), after "gt" and the
 * architecture's name token (sm90: the table in gt_kernel_arch.h, generated from space.json):
 *   gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8
 *       CUDA-core decode: n tokens tile, r weight rows per warp, w warps splitting K in a CTA,
 *       u warp-chunks of K loaded before use, ks split-K across CTAs, v elements per load.
 *       With v8 the CTA's first K step of its rows is prefetched into L2 before the
 *       programmatic-dependent-launch wait; an optional last token p0 leaves that out.
 *   gt_sm90_decodetc_bf16_tn_n16_m1_w1x8_u4_s2_ks1_v8
 *       tensor-core decode (mma.sync m16n8k16, weight rows as M, tokens as N): n tokens tile,
 *       m 16-row tiles per warp, w warps along M x warps splitting K, u 32-wide K chunks per
 *       load batch, s pipeline stages (2 = next batch loaded into registers while this one
 *       multiplies; 3 = 2 plus the weight rows bulk-prefetched into L2 about 32 KB ahead).
 *       An optional last token p<KB> (s1, s2) prefetches the first KB of each of the CTA's
 *       weight rows into L2 before the programmatic-dependent-launch wait; no token means none.
 *   gt_sm90_tc_bf16_nn_t128x64x32_w2x2_s4_ks1_a8
 *       generic tensor-core tile: t CTA tile MxNxK, w warps along M x N, s cp.async stages,
 *       ks split-K, a operand alignment in elements (8: 16-byte cp.async, 1: scalar loads).
 *   gt_sm90_wg_bf16_tn_t128x16x256_s4_ks4_p16
 *       Hopper decode/skinny (TMA + wgmma; tn, nn, nt, tt): t CTA tile BM weight rows x BN tokens x BK
 *       (BK/64 TMA boxes side by side along K per stage), s shared-memory ring stages, ks splits
 *       of K reduced inside a cluster of ks CTAs, p 64-wide weight boxes of the CTA's range
 *       prefetched into L2 before the programmatic-dependent-launch wait
 *       (a prefetch kept ahead of the loads inside the main loop measured 30-40% slower).
 *       Optional tokens after p, in this order: c<CM> makes CM CTAs along M one cluster
 *       (CM x 1 x ks) that share the token tile by TMA multicast; w<CW> runs CW consumer
 *       warpgroups that split the weight rows. A missing token means 1.
 *   gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x16x512_s4_ks2_p8
 *       Hopper fp8 decode/skinny (gt_wgf8.cuh: the wg pipeline on 1-byte operands, TN only): the
 *       three element types A, B (e4m3 or e5m2) and D (bf16, f16 or f32; C and the bias have D's
 *       type) after the family, then wg's tokens (BK a multiple of 128: one 128-byte swizzle row
 *       of fp8 K); the optional w<CW> as in wg, no c. The tensorwise or outer-vector scales are
 *       read from the kernel arguments at run time (gt_kernel_args.h).
 *   gt_sm90_dtf8_e4m3_e4m3_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v16_p1
 *       tensor-core decode on fp8 operands (gt_dtf8.cuh: decodetc's pipeline, mma.sync
 *       m16n8k32): wgf8's three element types, then decodetc's tokens with v16 (a 16-byte load
 *       is 16 fp8 elements; u counts 64-wide K chunks) and ks1 only; scales as wgf8's.
 *
 * Every instance has an epilogue twin: the same name and parameters plus one last token, "e"
 * (gt_sm90_wg_bf16_tn_t128x16x256_s4_ks4_p16_e), a kernel of its own compiled from the same body
 * with the epilogue flag set. A twin applies the key's epilogue (bias, relu, bias_relu, gelu,
 * bias_gelu: gt_kargs_t's epilogue and bias) in fp32 after alpha * acc + beta * C, once per
 * output element; the plain instance has no epilogue and its machine code is what it was
 * before twins existed. The token is spelled exactly "e", last, and only for twins. */
#ifndef GT_KERNEL_NAME_H
#define GT_KERNEL_NAME_H

#include <stdbool.h>
#include <stddef.h>

#include "core/gt_dtype.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_kfamily {
  GT_KFAM_DECODE = 0, /* CUDA-core GEMV-like decode, tokens <= tile_n */
  GT_KFAM_DECODETC,   /* tensor-core decode/skinny, tokens in N tiles of 8 */
  GT_KFAM_TC,         /* generic tensor-core tiles, any shape and layout */
  GT_KFAM_WG,         /* Hopper TMA + wgmma decode/skinny tiles, TN */
  GT_KFAM_WGF8,       /* the same on fp8 operands with scales, TN */
  GT_KFAM_DTF8,       /* decodetc on fp8 operands with scales, TN, no split across CTAs */
  GT_KFAM__COUNT
} gt_kfamily_t;

/* Parameters of one instance. Fields a family does not use are 0.
 *            decode          decodetc             tc                   wg
 * tile_m     rows per warp   16-row tiles/warp    CTA tile M           CTA tile M (rows)
 * tile_n     tokens tile     tokens tile          CTA tile N           CTA tile N (tokens)
 * tile_k     -               -                    CTA tile K           K per stage (x64)
 * warps_m    -               warps along M        warps along M        -
 * warps_n    -               -                    warps along N        -
 * warps_k    warps along K   warps along K        -                    -
 * unroll     chunks/batch    chunks/batch         -                    -
 * stages     -               pipeline stages      cp.async stages      TMA ring stages
 * vec        elements/load   8                    alignment (8 or 1)   8 (TMA strides)
 * wgf8 as wg, with vec 16 (TMA's 16-byte strides in 1-byte elements), cluster_m only unsplit.
 * dtf8 as decodetc, with vec 16 (16 one-byte elements per load) and splitk 1.
 * splitk     splits of K across CTAs (1 = none), all families */
typedef struct gt_kparams {
  gt_kfamily_t family;
  int arch;         /* the architecture: row of gt_karchs[] (gt_kernel_arch.h) */
  gt_dtype_t dtype; /* A, B, C and D element type: bf16 or f16 (wgf8, dtf8: A's, f8e4m3fn or
                       f8e5m2) */
  gt_trans_t transa, transb;
  int tile_m, tile_n, tile_k;
  int warps_m, warps_n, warps_k;
  int unroll, stages, vec, splitk;
  int prefetch; /* prefetched into L2 before the PDL wait: wg 64-wide weight boxes (>= 1),
                   decodetc KB of each weight row (0 = none), decode 1 (its first K step, made
                   with v8 only) or 0 (none: p0, v8 only); others 0 */
  int cluster_m; /* wg, wgf8: CTAs along M of a cluster sharing the token tile by TMA
                    multicast (1 = none; wgf8: splitk 1); others 0 */
  int consumers; /* wg: consumer warpgroups splitting the weight rows (1 or 2); others 0 */
  int cluster_n; /* wg, wgf8: CTAs along N of a cluster sharing the weight tile by TMA multicast
                    (name token x2 or x4; splitk 1, K-major weights, cluster_m x cluster_n
                    <= 8); 0 = none */
  int persistent; /* wg, wgf8: 1 = persistent CTAs (as many as are resident, each looping over weight
                     tiles; name token g1, splitk 1 and cluster_m 1 only); others 0 */
  bool epilogue; /* the epilogue twin (name ends in _e): applies the key's epilogue in its
                    store step; false: the plain instance, for keys without one */
  gt_dtype_t b_dtype, d_dtype; /* wgf8, dtf8: B's type (f8e4m3fn, f8e5m2) and D's (bf16, f16,
                                  f32; C and the bias too); others 0, their dtype is all four */
} gt_kparams_t;

/* One row of the generated table. threads and smem are what the kernel is launched with. */
typedef struct gt_kinstance {
  const char *name;
  gt_kparams_t params;
  int threads;     /* threads per CTA */
  int smem_bytes;  /* dynamic shared memory per CTA */
} gt_kinstance_t;

/* The generated table (generated/instances.c), in a fixed order. */
extern const gt_kinstance_t gt_kinstances[];
extern const size_t gt_kinstance_count;

/* "decode", "decodetc", "tc", "wg", "wgf8", "dtf8"; "?" for an invalid value. */
const char *gt_kfamily_name(gt_kfamily_t f);

/* Whether family f's instances take fp8 A and B with scales (wgf8, dtf8): their names carry
 * three element types and they run through the fp8 entry points (gt_kernels_fp8.h). */
bool gt_kfamily_is_fp8(gt_kfamily_t f);

/* Whether an fp8 instance can promote its sums (gt_kernel_args.h's f8_promote, which a key
 * without fast accumulation asks for): every dtf8 instance; a wgf8 one whose accumulators and
 * the promotion's partials fit in 128 registers a thread (the rule of gt_f8_promo.cuh's
 * f8_promo, which the kernel applies to itself). False for every other family. */
bool gt_kparams_f8_promotes(const gt_kparams_t *p);

/* Parse an instance name into its parameters. Fails with GT_ERR_NOT_FOUND when the name is not
 * an own-kernel name at all (wrong prefix, an architecture token not in the table, unknown
 * family), GT_ERR_DATA when it is one but is malformed or not in canonical form (the message
 * names the token). */
gt_status_t gt_kernel_name_parse(const char *name, gt_kparams_t *out);

/* Write the canonical name of p into buf. Returns false when it does not fit or p holds a value
 * no name can carry (unknown family, architecture or type, or a non-positive parameter the
 * family uses). */
bool gt_kernel_name_format(const gt_kparams_t *p, char *buf, int cap);

/* Whether an instance with these parameters launches the split-K reduce kernel
 * (gt_kernel_reduce_symbol) after its main kernel: split-K partials go through the workspace and
 * the reduce kernel, except in wg, whose splits are one thread-block cluster and sum in
 * distributed shared memory. The provider plans its launches from this and verify expects the
 * kernels it names. */
bool gt_kparams_uses_reduce(const gt_kparams_t *p);

/* Write the symbol of the split-K reduce kernel for kp's architecture and element type,
 * gt_<arch token>_splitk_reduce_<type> ("gt_sm90_splitk_reduce_bf16"), into buf. Returns what
 * snprintf returns: the length of the whole symbol (buf holds a truncated copy when that is
 * cap or more), or -1 when kp->arch is not a row of the architecture table (buf is then ""). */
int gt_kernel_reduce_symbol(const gt_kparams_t *kp, char *buf, int cap);

/* Longest kernel symbol gt_kernel_symbols writes (instance names are far shorter). */
#define GT_KERNEL_SYMBOL_MAX 192
#define GT_KERNEL_SYMBOLS_MAX 2

/* The kernel symbols one call of own-kernel instance `instance` launches, for a trace to be
 * checked against: the instance's kernel (its extern "C" symbol is the instance name) and, when
 * the name parses and gt_kparams_uses_reduce, the split-K reduce after it. Writes at most max
 * symbols; returns how many, or -1 when instance is not an own-kernel name at all (no gt_<arch>_
 * prefix of the generated table). */
int gt_kernel_symbols(const char *instance, char (*sym)[GT_KERNEL_SYMBOL_MAX], int max);

/* Whether a traced kernel name is one of gemmtune's own kernels: it starts with the gt_<arch>_
 * prefix of an instance in the generated table (the split-K reduce kernels share it). */
bool gt_kernel_name_is_own(const char *kernel);

/* Field-by-field equality (struct padding is never compared). */
bool gt_kparams_equal(const gt_kparams_t *a, const gt_kparams_t *b);

/* Index of the table row with this exact name, or -1. */
int gt_kinstance_find(const char *name);

/* Index of the table row that is row idx's counterpart: the epilogue twin of a plain instance,
 * the plain instance of a twin (the same parameters but the epilogue flag). -1 when idx is not a
 * row or the table has no counterpart. */
int gt_kinstance_counterpart(int idx);

#ifdef __cplusplus
}
#endif
#endif
