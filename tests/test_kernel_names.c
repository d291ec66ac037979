/* Own-kernel instance names: every generated instance's name parses back to its table parameters
 * and formats back to itself; its launch geometry follows from its parameters; malformed and
 * non-canonical names are refused with the right status; each instance's architecture comes from
 * the generated table, names its kernels and decides which devices may run it; every instance has
 * an epilogue twin (its name plus "_e") with the same parameters but the flag, and the twins' names
 * round-trip and have one spelling. Plain C, no GPU.
 * (A second, test-only architecture is shown by tests/cli/test_kernels_generated.sh.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gt_kernel_arch.h"
#include "kernels/gt_kernel_name.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- every generated instance ---------------------------------------------------------------- */

static void test_round_trip(void **state) {
  const gt_kinstance_t *in = *state;
  gt_kparams_t kp;
  gt_status_t s = gt_kernel_name_parse(in->name, &kp);
  if (s != GT_OK) fail_msg("%s: %s", in->name, gt_err_msg());
  assert_true(gt_kparams_equal(&kp, &in->params));
  char buf[192];
  assert_true(gt_kernel_name_format(&in->params, buf, sizeof buf));
  assert_string_equal(buf, in->name);
  assert_int_equal(gt_kinstance_find(in->name), (int)(in - gt_kinstances));
}

/* wg and wgf8: whether a tile is swapped (the tokens as wgmma's M, a whole m64 tile of them per
 * B box): BN 64, and BN 8, 16 or 32 with BM not a multiple of 64 (gen_instances.py's
 * wg_swapped). */
static bool wg_swapped(const gt_kparams_t *p) {
  return p->tile_n == 64 ||
         ((p->tile_n == 8 || p->tile_n == 16 || p->tile_n == 32) && p->tile_m % 64 != 0);
}

/* Threads and shared memory in the table are what the kernels assume: recomputed here from the
 * parameters with the formulas the kernel sources use. */
static void test_geometry(void **state) {
  const gt_kinstance_t *in = *state;
  const gt_kparams_t *p = &in->params;
  int threads = 0, smem = 0;
  switch (p->family) {
  case GT_KFAM_DECODE: /* reduction buffer [warps_k][tokens][rows] of floats */
    threads = 32 * p->warps_k;
    smem = p->warps_k * p->tile_n * p->tile_m * 4;
    break;
  case GT_KFAM_DECODETC: /* reduction buffer [warps_k][tokens][rows + 4] of floats */
  case GT_KFAM_DTF8:     /* the same pipeline on 1-byte elements */
    threads = 32 * p->warps_m * p->warps_k;
    smem = p->warps_k * p->tile_n * (16 * p->warps_m * p->tile_m + 4) * 4;
    assert_true(p->prefetch >= 0 && (p->prefetch == 0 || p->stages < 3)); /* s3 has its own */
    /* one 16-byte load feeds two mma's: 8 16-bit or 16 fp8 elements */
    assert_int_equal(p->vec, p->family == GT_KFAM_DTF8 ? 16 : 8);
    assert_true(p->transa == GT_TRANS_T && p->transb == GT_TRANS_N);
    if (p->family == GT_KFAM_DTF8) {
      /* no split across CTAs: the split-K reduce kernel applies no fp8 scales */
      assert_int_equal(p->splitk, 1);
      assert_true((p->dtype == GT_DT_F8E4M3FN || p->dtype == GT_DT_F8E5M2) &&
                  (p->b_dtype == GT_DT_F8E4M3FN || p->b_dtype == GT_DT_F8E5M2));
      assert_true(p->d_dtype == GT_DT_BF16 || p->d_dtype == GT_DT_F16 ||
                  p->d_dtype == GT_DT_F32);
    }
    break;
  case GT_KFAM_TC: { /* stages x (A tile + B tile), rows padded by 8 elements */
    threads = 32 * p->warps_m * p->warps_n;
    const int ak = p->transa == GT_TRANS_T, bk = p->transb == GT_TRANS_N;
    const int a_elems = ak ? p->tile_m * (p->tile_k + 8) : p->tile_k * (p->tile_m + 8);
    const int b_elems = bk ? p->tile_n * (p->tile_k + 8) : p->tile_k * (p->tile_n + 8);
    smem = p->stages * (a_elems + b_elems) * 2;
    break;
  }
  case GT_KFAM_WG: { /* warpgroups + producer warp; ring of stages x (A + B) boxes, 1 KB slack */
    threads = 128 * p->consumers + 32;
    assert_true(p->consumers == 1 || p->consumers == 2);
    const bool swapped = wg_swapped(p);
    const int b_rows = swapped ? 64 : p->tile_n;
    smem = p->stages * (p->tile_m + b_rows) * p->tile_k * 2 + 1024;
    assert_int_equal(p->tile_k % 64, 0);   /* whole 128-byte swizzle boxes */
    assert_true(p->prefetch >= 1);
    /* weight rows are wgmma's N when swapped, else m64 blocks */
    assert_int_equal(p->tile_m % (swapped ? 8 : 64), 0);
    assert_true(p->splitk >= 1 && p->splitk <= 8); /* one portable cluster per split */
    /* multicast: cluster_m x 1 x splitk is one portable cluster, each CTA loads whole 8-row
     * swizzle groups of the token tile */
    assert_true(p->cluster_m >= 1 && p->cluster_m * p->splitk <= 8);
    assert_int_equal(p->tile_n % (8 * p->cluster_m), 0);
    /* two consumer warpgroups split the weight rows on 8-row swizzle groups */
    if (p->consumers == 2) assert_int_equal(p->tile_m % (swapped ? 16 : 128), 0);
    /* M-major weights (nn, nt) come in 64-row boxes, each warpgroup's share too; N-major tokens
     * (nt, tt) in one 64-token box: the swapped orientation, no multicast */
    if (p->transa == GT_TRANS_N) assert_int_equal(p->tile_m % (64 * p->consumers), 0);
    if (p->transb == GT_TRANS_T) assert_true(p->tile_n == 64 && p->cluster_m == 1);
    /* persistent CTAs store their tiles from registers: no split, no multicast */
    assert_true(p->persistent == 0 || p->persistent == 1);
    if (p->persistent) assert_true(p->splitk == 1 && p->cluster_m == 1 && p->cluster_n == 0);
    /* weight multicast: cluster_m x cluster_n x 1 clusters of K-major weights (one portable
     * cluster), each CTA loading whole 8-row swizzle groups of the weight tile; no split */
    if (p->cluster_n)
      assert_true((p->cluster_n == 2 || p->cluster_n == 4) && p->splitk == 1 &&
                  p->cluster_m * p->cluster_n <= 8 && p->transa == GT_TRANS_T &&
                  p->tile_m % (8 * p->cluster_n) == 0);
    break;
  }
  case GT_KFAM_WGF8: { /* wg's pipeline on 1-byte elements: ring of stages x (A + B) bytes */
    threads = 128 * p->consumers + 32;
    assert_true(p->consumers == 1 || p->consumers == 2);
    const bool swapped = wg_swapped(p);
    const int b_rows = swapped ? 64 : p->tile_n;
    smem = p->stages * (p->tile_m + b_rows) * p->tile_k + 1024;
    assert_int_equal(p->tile_k % 128, 0); /* whole 128-byte swizzle boxes of fp8 K */
    assert_true(p->prefetch >= 1 && p->vec == 16);
    /* token multicast: cluster_m x cluster_n x 1 clusters, no split, whole 8-row swizzle groups
     * of the token tile per CTA */
    assert_true(p->cluster_m >= 1 && (p->cluster_m == 1 || p->splitk == 1));
    assert_int_equal(p->tile_n % (8 * p->cluster_m), 0);
    assert_int_equal(p->tile_m % (swapped ? 8 : 64), 0);
    assert_true(p->splitk >= 1 && p->splitk <= 8);
    /* K-major operands only (fp8 wgmma): the nn.Linear layout */
    assert_true(p->transa == GT_TRANS_T && p->transb == GT_TRANS_N);
    assert_true((p->dtype == GT_DT_F8E4M3FN || p->dtype == GT_DT_F8E5M2) &&
                (p->b_dtype == GT_DT_F8E4M3FN || p->b_dtype == GT_DT_F8E5M2));
    assert_true(p->d_dtype == GT_DT_BF16 || p->d_dtype == GT_DT_F16 || p->d_dtype == GT_DT_F32);
    if (p->cluster_n) /* weight multicast, as wg's */
      assert_true((p->cluster_n == 2 || p->cluster_n == 4) && p->splitk == 1 &&
                  p->cluster_m * p->cluster_n <= 8 && p->tile_m % (8 * p->cluster_n) == 0);
    /* persistent CTAs, as wg's: no split, no multicast */
    assert_true(p->persistent == 0 || p->persistent == 1);
    if (p->persistent) assert_true(p->splitk == 1 && p->cluster_m == 1 && p->cluster_n == 0);
    break;
  }
  default:
    fail_msg("%s: unknown family %d", in->name, (int)p->family);
  }
  assert_int_equal(in->threads, threads);
  assert_int_equal(in->smem_bytes, smem);
  assert_true(in->threads >= 32 && in->threads <= 1024);
}

/* Every instance has its counterpart: each plain instance one epilogue twin named by its name and
 * "_e", each twin its plain instance; the two share every parameter but the flag, the threads
 * and the shared memory, and the plain instances come first, in the order they had before twins
 * existed (tuned DBs name them; the provider lists them in table order). */
static void test_epilogue_twins(void **state) {
  (void)state;
  size_t plain = 0, twins = 0;
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kinstance_t *in = &gt_kinstances[i];
    const int j = gt_kinstance_counterpart((int)i);
    if (j < 0) fail_msg("%s has no %s", in->name, in->params.epilogue ? "plain instance" : "twin");
    const gt_kinstance_t *c = &gt_kinstances[j];
    assert_int_equal(gt_kinstance_counterpart(j), (int)i);
    assert_true(c->params.epilogue != in->params.epilogue);
    gt_kparams_t a = in->params, b = c->params;
    a.epilogue = b.epilogue = false;
    if (!gt_kparams_equal(&a, &b)) fail_msg("%s and %s differ beyond the flag", in->name, c->name);
    assert_int_equal(in->threads, c->threads);
    assert_int_equal(in->smem_bytes, c->smem_bytes);
    const gt_kinstance_t *pl = in->params.epilogue ? c : in, *tw = in->params.epilogue ? in : c;
    char want[224];
    snprintf(want, sizeof want, "%s_e", pl->name);
    assert_string_equal(tw->name, want);
    if (in->params.epilogue) {
      twins++;
      assert_true(j < (int)i);
    } else {
      plain++;
      if (twins) fail_msg("plain instance %s after a twin in the table", in->name);
    }
  }
  assert_true(plain > 0);
  assert_int_equal(plain, twins);
  assert_int_equal(gt_kinstance_counterpart(-1), -1);
  assert_int_equal(gt_kinstance_counterpart((int)gt_kinstance_count), -1);
}

/* A twin launches what its plain instance launches, under its own symbol: the reduce kernel after
 * it exactly when the plain instance has one (split-K through the workspace), and that reduce
 * kernel is the plain instance's (one kernel serves both; it reads the epilogue at run time). */
static void test_twin_symbols(void **state) {
  (void)state;
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kinstance_t *tw = &gt_kinstances[i];
    if (!tw->params.epilogue) continue;
    const gt_kinstance_t *pl = &gt_kinstances[gt_kinstance_counterpart((int)i)];
    char ts[GT_KERNEL_SYMBOLS_MAX][GT_KERNEL_SYMBOL_MAX], ps[GT_KERNEL_SYMBOLS_MAX][GT_KERNEL_SYMBOL_MAX];
    const int nt = gt_kernel_symbols(tw->name, ts, GT_KERNEL_SYMBOLS_MAX);
    const int np = gt_kernel_symbols(pl->name, ps, GT_KERNEL_SYMBOLS_MAX);
    assert_int_equal(nt, np);
    assert_int_equal(nt, gt_kparams_uses_reduce(&tw->params) ? 2 : 1);
    assert_string_equal(ts[0], tw->name);
    if (nt == 2) assert_string_equal(ts[1], ps[1]);
    assert_true(gt_kernel_name_is_own(tw->name));
  }
  static const struct {
    const char *name, *reduce; /* NULL: no reduce kernel */
  } k[] = {{"gt_sm90_tc_bf16_tn_t64x64x64_w2x2_s4_ks2_a8_e", "gt_sm90_splitk_reduce_bf16"},
           {"gt_sm90_decode_f16_tn_n1_r4_w4_u2_ks1_v8_e", NULL},
           {"gt_sm90_tc_f16_tn_t128x32x64_w4x1_s4_ks4_a8_e", "gt_sm90_splitk_reduce_f16"},
           {"gt_sm90_wg_bf16_tn_t48x32x256_s3_ks2_p8_e", NULL}};
  for (size_t i = 0; i < NELEM(k); i++) {
    char sym[GT_KERNEL_SYMBOLS_MAX][GT_KERNEL_SYMBOL_MAX];
    assert_true(gt_kinstance_find(k[i].name) >= 0);
    const int n = gt_kernel_symbols(k[i].name, sym, GT_KERNEL_SYMBOLS_MAX);
    assert_int_equal(n, k[i].reduce ? 2 : 1);
    assert_string_equal(sym[0], k[i].name);
    if (k[i].reduce) assert_string_equal(sym[1], k[i].reduce);
  }
}

static void test_names_unique(void **state) {
  (void)state;
  assert_true(gt_kinstance_count > 0);
  for (size_t i = 0; i < gt_kinstance_count; i++)
    for (size_t j = i + 1; j < gt_kinstance_count; j++)
      if (strcmp(gt_kinstances[i].name, gt_kinstances[j].name) == 0)
        fail_msg("duplicate instance %s", gt_kinstances[i].name);
}

/* Every family and both element types are present, so the tuner always has an own candidate; the
 * generic and the TMA families cover all four layouts. */
static void test_families_present(void **state) {
  (void)state;
  int seen[GT_KFAM__COUNT][2] = {{0}};
  int generic_layouts[4] = {0}; /* tc: NN, NT, TN, TT */
  int wg_layouts[2][4] = {{0}}; /* wg per element type, the same order */
  int generic_unaligned = 0;
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *p = &gt_kinstances[i].params;
    /* an fp8 family's operands are fp8 whatever D is: its type axis is D's */
    seen[p->family][(gt_kfamily_is_fp8(p->family) ? p->d_dtype : p->dtype) == GT_DT_F16]++;
    if (p->family == GT_KFAM_TC) {
      generic_layouts[2 * (p->transa == GT_TRANS_T) + (p->transb == GT_TRANS_T)]++;
      if (p->vec == 1) generic_unaligned++;
    }
    if (p->family == GT_KFAM_WG) {
      const int l = 2 * (p->transa == GT_TRANS_T) + (p->transb == GT_TRANS_T);
      wg_layouts[p->dtype == GT_DT_F16][l]++;
    }
  }
  for (int f = 0; f < GT_KFAM__COUNT; f++)
    for (int d = 0; d < 2; d++)
      if (!seen[f][d]) fail_msg("no %s instance for %s", gt_kfamily_name((gt_kfamily_t)f), d ? "f16" : "bf16");
  for (int l = 0; l < 4; l++) assert_true(generic_layouts[l] > 0);
  /* the skinny TMA family runs all four layouts too, in both types */
  for (int d = 0; d < 2; d++)
    for (int l = 0; l < 4; l++)
      if (!wg_layouts[d][l])
        fail_msg("no %s wg instance for layout %s", d ? "f16" : "bf16",
                 (const char *[]){"nn", "nt", "tn", "tt"}[l]);
  assert_true(generic_unaligned > 0);
}

/* ---- hand-written names ----------------------------------------------------------------------- */

typedef struct good_case {
  const char *name;
  gt_kparams_t params; /* .arch is set from the name's token by the test */
} good_case_t;

static const good_case_t k_good[] = {
    {"gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks2_v8",
     {.family = GT_KFAM_DECODE, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 4, .tile_n = 8, .warps_k = 4, .unroll = 2, .vec = 8, .splitk = 2, .prefetch = 1}},
    /* decode without its pre-wait prefetch: the optional last token p0 */
    {"gt_sm90_decode_f16_tn_n1_r8_w4_u2_ks1_v8_p0",
     {.family = GT_KFAM_DECODE, .dtype = GT_DT_F16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 8, .tile_n = 1, .warps_k = 4, .unroll = 2, .vec = 8, .splitk = 1}},
    /* v4 never prefetches, yet its table value is the default's: no token */
    {"gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4",
     {.family = GT_KFAM_DECODE, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 4, .tile_n = 1, .warps_k = 4, .unroll = 4, .vec = 4, .splitk = 1, .prefetch = 1}},
    {"gt_sm90_decodetc_f16_tn_n64_m2_w2x4_u1_s2_ks3_v8",
     {.family = GT_KFAM_DECODETC, .dtype = GT_DT_F16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 2, .tile_n = 64, .warps_m = 2, .warps_k = 4, .unroll = 1, .stages = 2, .vec = 8,
      .splitk = 3}},
    {"gt_sm90_decodetc_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v8_p64",
     {.family = GT_KFAM_DECODETC, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 1, .tile_n = 8, .warps_m = 1, .warps_k = 16, .unroll = 2, .stages = 2, .vec = 8,
      .splitk = 1, .prefetch = 64}},
    {"gt_sm90_tc_bf16_nt_t256x128x64_w4x2_s5_ks16_a1",
     {.family = GT_KFAM_TC, .dtype = GT_DT_BF16, .transa = GT_TRANS_N, .transb = GT_TRANS_T,
      .tile_m = 256, .tile_n = 128, .tile_k = 64, .warps_m = 4, .warps_n = 2, .stages = 5,
      .vec = 1, .splitk = 16}},
    {"gt_sm90_wgf8_e4m3_e5m2_f32_tn_t80x64x512_s3_ks2_p8_w2",
     {.family = GT_KFAM_WGF8, .dtype = GT_DT_F8E4M3FN, .transa = GT_TRANS_T,
      .transb = GT_TRANS_N, .tile_m = 80, .tile_n = 64, .tile_k = 512, .stages = 3, .vec = 16,
      .splitk = 2, .prefetch = 8, .cluster_m = 1, .consumers = 2, .b_dtype = GT_DT_F8E5M2,
      .d_dtype = GT_DT_F32}},
    {"gt_sm90_wgf8_e5m2_e5m2_bf16_tn_t64x16x512_s4_ks1_p8_e",
     {.family = GT_KFAM_WGF8, .dtype = GT_DT_F8E5M2, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 64, .tile_n = 16, .tile_k = 512, .stages = 4, .vec = 16, .splitk = 1,
      .prefetch = 8, .cluster_m = 1, .consumers = 1, .epilogue = true, .b_dtype = GT_DT_F8E5M2,
      .d_dtype = GT_DT_BF16}},
    {"gt_sm90_dtf8_e4m3_e4m3_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v16_p1",
     {.family = GT_KFAM_DTF8, .dtype = GT_DT_F8E4M3FN, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 1, .tile_n = 8, .warps_m = 1, .warps_k = 16, .unroll = 2, .stages = 2, .vec = 16,
      .splitk = 1, .prefetch = 1, .b_dtype = GT_DT_F8E4M3FN, .d_dtype = GT_DT_BF16}},
    {"gt_sm90_dtf8_e5m2_e4m3_f32_tn_n32_m2_w1x4_u1_s1_ks1_v16_e",
     {.family = GT_KFAM_DTF8, .dtype = GT_DT_F8E5M2, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 2, .tile_n = 32, .warps_m = 1, .warps_k = 4, .unroll = 1, .stages = 1, .vec = 16,
      .splitk = 1, .epilogue = true, .b_dtype = GT_DT_F8E4M3FN, .d_dtype = GT_DT_F32}},
    {"gt_sm90_wg_f16_tn_t128x16x256_s8_ks4_p32",
     {.family = GT_KFAM_WG, .dtype = GT_DT_F16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 128, .tile_n = 16, .tile_k = 256, .stages = 8, .vec = 8, .splitk = 4,
      .prefetch = 32, .cluster_m = 1, .consumers = 1}},
    {"gt_sm90_wg_bf16_tn_t112x64x128_s4_ks2_p8_c4",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 112, .tile_n = 64, .tile_k = 128, .stages = 4, .vec = 8, .splitk = 2,
      .prefetch = 8, .cluster_m = 4, .consumers = 1}},
    /* weight multicast across token tiles: x<CN> after c, before w */
    {"gt_sm90_wg_bf16_tn_t64x32x128_s4_ks1_p8_x2",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 64, .tile_n = 32, .tile_k = 128, .stages = 4, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 1, .consumers = 1, .cluster_n = 2}},
    {"gt_sm90_wg_bf16_tn_t128x32x64_s4_ks1_p8_x4_w2_e",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 128, .tile_n = 32, .tile_k = 64, .stages = 4, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 1, .consumers = 2, .cluster_n = 4, .epilogue = true}},
    {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x32x256_s4_ks1_p8_x2",
     {.family = GT_KFAM_WGF8, .dtype = GT_DT_F8E4M3FN, .transa = GT_TRANS_T,
      .transb = GT_TRANS_N, .tile_m = 64, .tile_n = 32, .tile_k = 256, .stages = 4, .vec = 16,
      .splitk = 1, .prefetch = 8, .cluster_m = 1, .consumers = 1, .cluster_n = 2,
      .b_dtype = GT_DT_F8E4M3FN, .d_dtype = GT_DT_BF16}},
    /* both multicasts: a c x x cluster, c before x */
    {"gt_sm90_wg_bf16_tn_t64x32x128_s4_ks1_p8_c2_x2_e",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 64, .tile_n = 32, .tile_k = 128, .stages = 4, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 2, .consumers = 1, .cluster_n = 2, .epilogue = true}},
    {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t112x64x256_s3_ks1_p8_c4",
     {.family = GT_KFAM_WGF8, .dtype = GT_DT_F8E4M3FN, .transa = GT_TRANS_T,
      .transb = GT_TRANS_N, .tile_m = 112, .tile_n = 64, .tile_k = 256, .stages = 3, .vec = 16,
      .splitk = 1, .prefetch = 8, .cluster_m = 4, .consumers = 1,
      .b_dtype = GT_DT_F8E4M3FN, .d_dtype = GT_DT_BF16}},
    /* wgf8's persistent CTAs: g1 last, as wg's */
    {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t112x64x256_s3_ks1_p8_g1",
     {.family = GT_KFAM_WGF8, .dtype = GT_DT_F8E4M3FN, .transa = GT_TRANS_T,
      .transb = GT_TRANS_N, .tile_m = 112, .tile_n = 64, .tile_k = 256, .stages = 3, .vec = 16,
      .splitk = 1, .prefetch = 8, .cluster_m = 1, .consumers = 1, .persistent = 1,
      .b_dtype = GT_DT_F8E4M3FN, .d_dtype = GT_DT_BF16}},
    {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t128x32x256_s4_ks1_p8_w2_g1_e",
     {.family = GT_KFAM_WGF8, .dtype = GT_DT_F8E4M3FN, .transa = GT_TRANS_T,
      .transb = GT_TRANS_N, .tile_m = 128, .tile_n = 32, .tile_k = 256, .stages = 4, .vec = 16,
      .splitk = 1, .prefetch = 8, .cluster_m = 1, .consumers = 2, .persistent = 1,
      .b_dtype = GT_DT_F8E4M3FN, .d_dtype = GT_DT_BF16, .epilogue = true}},
    {"gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_w2",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 112, .tile_n = 64, .tile_k = 64, .stages = 9, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 1, .consumers = 2}},
    {"gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_c4_w2",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 112, .tile_n = 64, .tile_k = 64, .stages = 9, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 4, .consumers = 2}},
    {"gt_sm90_wg_bf16_nn_t128x16x64_s8_ks1_p8_w2",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_N, .transb = GT_TRANS_N,
      .tile_m = 128, .tile_n = 16, .tile_k = 64, .stages = 8, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 1, .consumers = 2}},
    {"gt_sm90_wg_bf16_tn_t64x16x256_s4_ks1_p16_g1",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 64, .tile_n = 16, .tile_k = 256, .stages = 4, .vec = 8, .splitk = 1,
      .prefetch = 16, .cluster_m = 1, .consumers = 1, .persistent = 1}},
    {"gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_w2_g1_e",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 112, .tile_n = 64, .tile_k = 64, .stages = 9, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 1, .consumers = 2, .persistent = 1, .epilogue = true}},
    {"gt_sm90_wg_bf16_tt_t80x64x128_s6_ks1_p8",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_T,
      .tile_m = 80, .tile_n = 64, .tile_k = 128, .stages = 6, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 1, .consumers = 1}},
    /* epilogue twins: the last token "e", after every optional token */
    {"gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks2_v8_e",
     {.family = GT_KFAM_DECODE, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 4, .tile_n = 8, .warps_k = 4, .unroll = 2, .vec = 8, .splitk = 2, .prefetch = 1,
      .epilogue = true}},
    {"gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8_p0_e",
     {.family = GT_KFAM_DECODE, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 4, .tile_n = 1, .warps_k = 4, .unroll = 2, .vec = 8, .splitk = 1,
      .epilogue = true}},
    {"gt_sm90_decodetc_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v8_p64_e",
     {.family = GT_KFAM_DECODETC, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 1, .tile_n = 8, .warps_m = 1, .warps_k = 16, .unroll = 2, .stages = 2, .vec = 8,
      .splitk = 1, .prefetch = 64, .epilogue = true}},
    {"gt_sm90_tc_f16_nt_t64x64x32_w2x2_s2_ks1_a1_e",
     {.family = GT_KFAM_TC, .dtype = GT_DT_F16, .transa = GT_TRANS_N, .transb = GT_TRANS_T,
      .tile_m = 64, .tile_n = 64, .tile_k = 32, .warps_m = 2, .warps_n = 2, .stages = 2,
      .vec = 1, .splitk = 1, .epilogue = true}},
    {"gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_c4_w2_e",
     {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .transb = GT_TRANS_N,
      .tile_m = 112, .tile_n = 64, .tile_k = 64, .stages = 9, .vec = 8, .splitk = 1,
      .prefetch = 8, .cluster_m = 4, .consumers = 2, .epilogue = true}},
    {"gt_sm90_wg_f16_nn_t64x8x256_s4_ks2_p16_e",
     {.family = GT_KFAM_WG, .dtype = GT_DT_F16, .transa = GT_TRANS_N, .transb = GT_TRANS_N,
      .tile_m = 64, .tile_n = 8, .tile_k = 256, .stages = 4, .vec = 8, .splitk = 2,
      .prefetch = 16, .cluster_m = 1, .consumers = 1, .epilogue = true}},
};

static void test_good_name(void **state) {
  const good_case_t *c = *state;
  gt_kparams_t want = c->params;
  want.arch = gt_karch_find("sm90"); /* every hand-written name here is gt_sm90_... */
  assert_true(want.arch >= 0);
  gt_kparams_t kp;
  gt_status_t s = gt_kernel_name_parse(c->name, &kp);
  if (s != GT_OK) fail_msg("%s: %s", c->name, gt_err_msg());
  assert_true(gt_kparams_equal(&kp, &want));
  char buf[192];
  assert_true(gt_kernel_name_format(&want, buf, sizeof buf));
  assert_string_equal(buf, c->name);
}

typedef struct bad_case {
  const char *what;
  const char *name;
  gt_status_t want;
} bad_case_t;

static const bad_case_t k_bad[] = {
    {"other_provider_name", "cublas_gemmex_default", GT_ERR_NOT_FOUND},
    {"empty_name", "", GT_ERR_NOT_FOUND},
    {"other_arch", "gt_sm80_decode_bf16_tn_n8_r4_w4_u2_ks1_v8", GT_ERR_NOT_FOUND},
    {"arch_token_prefix", "gt_sm9_decode_bf16_tn_n8_r4_w4_u2_ks1_v8", GT_ERR_NOT_FOUND},
    {"arch_token_glued", "gt_sm90decode_bf16_tn_n8_r4_w4_u2_ks1_v8", GT_ERR_NOT_FOUND},
    {"cuda_target_as_token", "gt_sm_90a_decode_bf16_tn_n8_r4_w4_u2_ks1_v8", GT_ERR_NOT_FOUND},
    {"unknown_family", "gt_sm90_gemv_bf16_tn_n8_r4_w4_u2_ks1_v8", GT_ERR_NOT_FOUND},
    {"missing_token", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1", GT_ERR_DATA},
    {"extra_token", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8_x1", GT_ERR_DATA},
    {"tokens_out_of_order", "gt_sm90_decode_bf16_tn_r4_n8_w4_u2_ks1_v8", GT_ERR_DATA},
    {"leading_zero_not_canonical", "gt_sm90_decode_bf16_tn_n08_r4_w4_u2_ks1_v8", GT_ERR_DATA},
    {"zero_value", "gt_sm90_decode_bf16_tn_n0_r4_w4_u2_ks1_v8", GT_ERR_DATA},
    {"f32_has_no_instance", "gt_sm90_decode_f32_tn_n8_r4_w4_u2_ks1_v8", GT_ERR_DATA},
    {"alias_type_name", "gt_sm90_decode_bfloat16_tn_n8_r4_w4_u2_ks1_v8", GT_ERR_DATA},
    {"bad_layout", "gt_sm90_tc_bf16_tx_t128x64x32_w2x2_s4_ks1_a8", GT_ERR_DATA},
    {"upper_case_layout", "gt_sm90_tc_bf16_TN_t128x64x32_w2x2_s4_ks1_a8", GT_ERR_DATA},
    {"tile_with_two_values", "gt_sm90_tc_bf16_tn_t128x64_w2x2_s4_ks1_a8", GT_ERR_DATA},
    {"warps_with_one_value", "gt_sm90_decodetc_bf16_tn_n8_m1_w8_u4_s1_ks1_v8", GT_ERR_DATA},
    {"trailing_x", "gt_sm90_tc_bf16_tn_t128x64x32x_w2x2_s4_ks1_a8", GT_ERR_DATA},
    {"empty_token", "gt_sm90_tc_bf16_tn__t128x64x32_w2x2_s4_ks1_a8", GT_ERR_DATA},
    {"wg_missing_prefetch", "gt_sm90_wg_bf16_tn_t128x16x64_s8_ks4", GT_ERR_DATA},
    {"wgf8_one_type", "gt_sm90_wgf8_e4m3_tn_t64x16x512_s4_ks1_p8", GT_ERR_DATA},
    {"wgf8_two_types", "gt_sm90_wgf8_e4m3_bf16_tn_t64x16x512_s4_ks1_p8", GT_ERR_DATA},
    {"wgf8_long_type_name", "gt_sm90_wgf8_f8e4m3fn_e4m3_bf16_tn_t64x16x512_s4_ks1_p8",
     GT_ERR_DATA},
    {"wgf8_fp8_output", "gt_sm90_wgf8_e4m3_e4m3_e4m3_tn_t64x16x512_s4_ks1_p8", GT_ERR_DATA},
    {"wgf8_not_tn", "gt_sm90_wgf8_e4m3_e4m3_bf16_nn_t64x16x512_s4_ks1_p8", GT_ERR_DATA},
    {"wgf8_token_multicast_with_split", "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x16x512_s4_ks2_p8_c2",
     GT_ERR_DATA},
    {"wgf8_token_multicast_short_rows", "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x16x512_s4_ks1_p8_c4",
     GT_ERR_DATA},
    {"wgf8_weight_before_token_multicast",
     "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x32x256_s4_ks1_p8_x2_c2", GT_ERR_DATA},
    {"wg_fp8_type", "gt_sm90_wg_e4m3_tn_t64x16x512_s4_ks1_p8", GT_ERR_DATA},
    {"wg_with_alignment_token", "gt_sm90_wg_bf16_tn_t128x16x64_s8_ks4_a8", GT_ERR_DATA},
    {"wg_stages_before_tile", "gt_sm90_wg_bf16_tn_s8_t128x16x64_ks4_p8", GT_ERR_DATA},
    {"wg_zero_prefetch", "gt_sm90_wg_bf16_tn_t128x16x64_s8_ks4_p0", GT_ERR_DATA},
    {"decodetc_zero_prefetch_spelled", "gt_sm90_decodetc_bf16_tn_n8_m1_w1x8_u2_s2_ks1_v8_p0",
     GT_ERR_DATA},
    {"decode_default_prefetch_spelled", "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8_p1",
     GT_ERR_DATA},
    {"decode_prefetch_not_0_or_1", "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8_p8", GT_ERR_DATA},
    {"decode_p0_with_narrow_loads", "gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4_p0", GT_ERR_DATA},
    {"decode_p0_after_twin_token", "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8_e_p0", GT_ERR_DATA},
    {"decodetc_token_after_prefetch", "gt_sm90_decodetc_bf16_tn_n8_m1_w1x8_u2_s2_ks1_v8_p8_x1",
     GT_ERR_DATA},
    {"decodetc_other_optional_token", "gt_sm90_decodetc_bf16_tn_n8_m1_w1x8_u2_s2_ks1_v8_a8",
     GT_ERR_DATA},
    {"wg_no_multicast_spelled", "gt_sm90_wg_bf16_tn_t112x64x128_s4_ks1_p8_c1", GT_ERR_DATA},
    {"wg_multicast_before_prefetch", "gt_sm90_wg_bf16_tn_t112x64x128_s4_ks1_c4_p8", GT_ERR_DATA},
    {"wg_multicast_twice", "gt_sm90_wg_bf16_tn_t112x64x128_s4_ks1_p8_c4_c2", GT_ERR_DATA},
    {"wg_warpgroups_before_multicast", "gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_w2_c4",
     GT_ERR_DATA},
    {"wg_one_warpgroup_spelled", "gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_w1", GT_ERR_DATA},
    {"wg_three_optional_tokens", "gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_c4_w2_w2", GT_ERR_DATA},
    {"wg_unknown_optional_token", "gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_a8", GT_ERR_DATA},
    {"wg_one_tile_per_cta_spelled", "gt_sm90_wg_bf16_tn_t64x16x256_s4_ks1_p16_g0", GT_ERR_DATA},
    {"wg_persistent_not_a_flag", "gt_sm90_wg_bf16_tn_t64x16x256_s4_ks1_p16_g2", GT_ERR_DATA},
    {"wg_persistent_with_split", "gt_sm90_wg_bf16_tn_t64x16x256_s4_ks2_p16_g1", GT_ERR_DATA},
    {"wg_persistent_with_multicast", "gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_c4_g1",
     GT_ERR_DATA},
    {"wg_persistent_before_warpgroups", "gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_g1_w2",
     GT_ERR_DATA},
    {"wgf8_persistent_with_split", "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x16x512_s4_ks2_p8_g1",
     GT_ERR_DATA},
    {"wgf8_persistent_with_multicast",
     "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x32x256_s4_ks1_p8_c4_g1", GT_ERR_DATA},
    {"wgf8_persistent_before_warpgroups",
     "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t128x32x256_s4_ks1_p8_g1_w2", GT_ERR_DATA},
    {"wgf8_one_tile_per_cta_spelled", "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x16x512_s4_ks1_p8_g0",
     GT_ERR_DATA},
    {"wg_weight_multicast_one", "gt_sm90_wg_bf16_tn_t64x32x128_s4_ks1_p8_x1", GT_ERR_DATA},
    {"wg_weight_multicast_three", "gt_sm90_wg_bf16_tn_t96x32x128_s4_ks1_p8_x3", GT_ERR_DATA},
    {"wg_weight_multicast_with_split", "gt_sm90_wg_bf16_tn_t64x32x128_s4_ks2_p8_x2",
     GT_ERR_DATA},
    {"wg_cluster_over_eight", "gt_sm90_wg_bf16_tn_t64x32x128_s4_ks1_p8_c4_x4", GT_ERR_DATA},
    {"wg_split_cluster_over_eight", "gt_sm90_wg_bf16_tn_t64x64x64_s6_ks4_p6_c4", GT_ERR_DATA},
    {"wgf8_cluster_over_eight", "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x64x256_s4_ks1_p8_c8_x2",
     GT_ERR_DATA},
    {"wg_token_multicast_short_rows", "gt_sm90_wg_bf16_tn_t64x16x256_s4_ks1_p8_c4", GT_ERR_DATA},
    {"wg_weight_multicast_m_major", "gt_sm90_wg_bf16_nn_t64x32x128_s4_ks1_p8_x2", GT_ERR_DATA},
    {"wg_weight_multicast_short_rows", "gt_sm90_wg_bf16_tn_t48x32x128_s4_ks1_p8_x4",
     GT_ERR_DATA},
    {"wg_weight_multicast_persistent", "gt_sm90_wg_bf16_tn_t64x32x128_s4_ks1_p8_x2_g1",
     GT_ERR_DATA},
    {"wg_warpgroups_before_weight_multicast", "gt_sm90_wg_bf16_tn_t128x32x64_s4_ks1_p8_w2_x2",
     GT_ERR_DATA},
    {"wgf8_weight_multicast_with_split",
     "gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x32x256_s4_ks2_p8_x2", GT_ERR_DATA},
    {"dtf8_one_type", "gt_sm90_dtf8_e4m3_tn_n8_m1_w1x16_u2_s2_ks1_v16", GT_ERR_DATA},
    {"dtf8_bf16_operands", "gt_sm90_dtf8_bf16_bf16_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v16",
     GT_ERR_DATA},
    {"dtf8_split_across_ctas", "gt_sm90_dtf8_e4m3_e4m3_bf16_tn_n8_m1_w1x16_u2_s2_ks2_v16",
     GT_ERR_DATA},
    {"dtf8_16bit_vector", "gt_sm90_dtf8_e4m3_e4m3_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v8", GT_ERR_DATA},
    {"dtf8_not_tn", "gt_sm90_dtf8_e4m3_e4m3_bf16_nt_n8_m1_w1x16_u2_s2_ks1_v16", GT_ERR_DATA},
    {"dtf8_zero_prefetch_spelled", "gt_sm90_dtf8_e4m3_e4m3_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v16_p0",
     GT_ERR_DATA},
    {"decodetc_fp8_types", "gt_sm90_decodetc_e4m3_e4m3_bf16_tn_n8_m1_w1x16_u2_s2_ks1_v16",
     GT_ERR_DATA},
    {"decode_has_no_prefetch_token", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8_p8", GT_ERR_DATA},
    /* the epilogue twin's token: exactly "e", once, last */
    {"twin_token_upper_case", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8_E", GT_ERR_DATA},
    {"twin_token_with_a_value", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8_e1", GT_ERR_DATA},
    {"twin_token_zero", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8_e0", GT_ERR_DATA},
    {"twin_token_spelled_out", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8_epi", GT_ERR_DATA},
    {"twin_token_twice", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_v8_e_e", GT_ERR_DATA},
    {"twin_token_among_fixed_tokens", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_e_v8", GT_ERR_DATA},
    {"twin_token_replacing_a_token", "gt_sm90_decode_bf16_tn_n8_r4_w4_u2_ks1_e", GT_ERR_DATA},
    {"twin_token_before_prefetch", "gt_sm90_decodetc_bf16_tn_n8_m1_w1x8_u2_s2_ks1_v8_e_p2",
     GT_ERR_DATA},
    {"twin_token_before_multicast", "gt_sm90_wg_bf16_tn_t112x64x128_s4_ks1_p8_e_c4", GT_ERR_DATA},
    {"twin_token_glued", "gt_sm90_wg_bf16_tn_t112x64x128_s4_ks1_p8e", GT_ERR_DATA},
    {"twin_token_after_spelled_default", "gt_sm90_wg_bf16_tn_t112x64x64_s9_ks1_p8_w1_e",
     GT_ERR_DATA},
    {"twin_of_unknown_family", "gt_sm90_gemv_bf16_tn_n8_r4_w4_u2_ks1_v8_e", GT_ERR_NOT_FOUND},
};

static void test_bad_name(void **state) {
  const bad_case_t *c = *state;
  gt_kparams_t kp;
  gt_err_clear();
  gt_status_t s = gt_kernel_name_parse(c->name, &kp);
  if (s != c->want)
    fail_msg("%s: got %s, want %s (%s)", c->name, gt_status_name(s), gt_status_name(c->want),
             gt_err_msg());
  assert_true(strlen(gt_err_msg()) > 0);
}

typedef struct unformattable_case {
  const char *what;
  gt_kparams_t params;
} unformattable_case_t;

static const unformattable_case_t k_unformattable[] = {
    {"family_out_of_range", {.family = GT_KFAM__COUNT, .dtype = GT_DT_BF16, .tile_m = 1,
                             .tile_n = 1, .warps_k = 1, .unroll = 1, .vec = 8, .splitk = 1}},
    {"f32_elements", {.family = GT_KFAM_DECODE, .dtype = GT_DT_F32, .transa = GT_TRANS_T,
                      .tile_m = 4, .tile_n = 1, .warps_k = 4, .unroll = 1, .vec = 8, .splitk = 1}},
    {"zero_tile", {.family = GT_KFAM_TC, .dtype = GT_DT_BF16, .tile_m = 0, .tile_n = 64,
                   .tile_k = 32, .warps_m = 2, .warps_n = 2, .stages = 3, .vec = 8, .splitk = 1}},
    {"zero_splitk", {.family = GT_KFAM_DECODETC, .dtype = GT_DT_F16, .transa = GT_TRANS_T,
                     .tile_m = 1, .tile_n = 8, .warps_m = 1, .warps_k = 8, .unroll = 4,
                     .stages = 1, .vec = 8, .splitk = 0}},
    {"wg_vec_not_8", {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T,
                      .tile_m = 128, .tile_n = 16, .tile_k = 64, .stages = 8, .vec = 1,
                      .splitk = 1, .prefetch = 8, .cluster_m = 1, .consumers = 1}},
    {"decode_persistent", {.family = GT_KFAM_DECODE, .dtype = GT_DT_BF16, .transa = GT_TRANS_T,
                           .tile_m = 4, .tile_n = 1, .warps_k = 4, .unroll = 1, .vec = 8,
                           .splitk = 1, .persistent = 1}},
    {"wg_persistent_split", {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T,
                             .tile_m = 128, .tile_n = 16, .tile_k = 64, .stages = 8, .vec = 8,
                             .splitk = 2, .prefetch = 8, .cluster_m = 1, .consumers = 1,
                             .persistent = 1}},
    {"wg_cluster_m_unset", {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T,
                            .tile_m = 128, .tile_n = 16, .tile_k = 64, .stages = 8, .vec = 8,
                            .splitk = 1, .prefetch = 8, .cluster_m = 0, .consumers = 1}},
    {"wg_consumers_unset", {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T,
                            .tile_m = 128, .tile_n = 16, .tile_k = 64, .stages = 8, .vec = 8,
                            .splitk = 1, .prefetch = 8, .cluster_m = 1, .consumers = 0}},
    {"tc_with_cluster_m", {.family = GT_KFAM_TC, .dtype = GT_DT_BF16, .tile_m = 64, .tile_n = 64,
                           .tile_k = 32, .warps_m = 2, .warps_n = 2, .stages = 3, .vec = 8,
                           .splitk = 1, .cluster_m = 2}},
    {"decodetc_negative_prefetch",
     {.family = GT_KFAM_DECODETC, .dtype = GT_DT_BF16, .transa = GT_TRANS_T, .tile_m = 1,
      .tile_n = 8, .warps_m = 1, .warps_k = 8, .unroll = 2, .stages = 2, .vec = 8, .splitk = 1,
      .prefetch = -1}},
    {"dtf8_split", {.family = GT_KFAM_DTF8, .dtype = GT_DT_F8E4M3FN, .transa = GT_TRANS_T,
                    .transb = GT_TRANS_N, .tile_m = 1, .tile_n = 8, .warps_m = 1, .warps_k = 8,
                    .unroll = 2, .stages = 2, .vec = 16, .splitk = 2,
                    .b_dtype = GT_DT_F8E4M3FN, .d_dtype = GT_DT_BF16}},
    {"dtf8_16bit_operands", {.family = GT_KFAM_DTF8, .dtype = GT_DT_BF16, .transa = GT_TRANS_T,
                             .transb = GT_TRANS_N, .tile_m = 1, .tile_n = 8, .warps_m = 1,
                             .warps_k = 8, .unroll = 2, .stages = 2, .vec = 16, .splitk = 1}},
    {"wg_no_prefetch", {.family = GT_KFAM_WG, .dtype = GT_DT_BF16, .transa = GT_TRANS_T,
                        .tile_m = 128, .tile_n = 16, .tile_k = 64, .stages = 8, .vec = 8,
                        .splitk = 1, .prefetch = 0, .cluster_m = 1, .consumers = 1}},
    {"arch_negative", {.family = GT_KFAM_DECODE, .arch = -1, .dtype = GT_DT_BF16,
                       .transa = GT_TRANS_T, .tile_m = 4, .tile_n = 1, .warps_k = 4, .unroll = 1,
                       .vec = 8, .splitk = 1}},
    {"arch_past_the_table", {.family = GT_KFAM_DECODE, .arch = 1 << 20, .dtype = GT_DT_BF16,
                             .transa = GT_TRANS_T, .tile_m = 4, .tile_n = 1, .warps_k = 4,
                             .unroll = 1, .vec = 8, .splitk = 1}},
};

static void test_unformattable(void **state) {
  const unformattable_case_t *c = *state;
  char buf[192];
  assert_false(gt_kernel_name_format(&c->params, buf, sizeof buf));
}

static void test_format_truncation_fails(void **state) {
  (void)state;
  char buf[16];
  assert_false(gt_kernel_name_format(&gt_kinstances[0].params, buf, sizeof buf));
}

/* The layout code kernel names and --layout options spell: the four lower-case codes map to
 * (transa, transb); anything else is refused and leaves the outputs as they were. */
static void test_layout_parse(void **state) {
  (void)state;
  static const struct {
    const char *code;
    gt_trans_t a, b;
  } good[] = {{"nn", GT_TRANS_N, GT_TRANS_N},
              {"nt", GT_TRANS_N, GT_TRANS_T},
              {"tn", GT_TRANS_T, GT_TRANS_N},
              {"tt", GT_TRANS_T, GT_TRANS_T}};
  for (size_t i = 0; i < NELEM(good); i++) {
    /* start from the opposite values, so a parse that writes nothing fails */
    gt_trans_t a = good[i].a == GT_TRANS_T ? GT_TRANS_N : GT_TRANS_T;
    gt_trans_t b = good[i].b == GT_TRANS_T ? GT_TRANS_N : GT_TRANS_T;
    assert_true(gt_layout_parse(good[i].code, &a, &b));
    assert_int_equal(a, good[i].a);
    assert_int_equal(b, good[i].b);
  }
  static const char *const bad[] = {"TN", "t", "tnn", "xt", "tx", ""};
  for (size_t i = 0; i < NELEM(bad); i++) {
    gt_trans_t a = GT_TRANS_N, b = GT_TRANS_T;
    if (gt_layout_parse(bad[i], &a, &b)) fail_msg("layout '%s' accepted", bad[i]);
    assert_int_equal(a, GT_TRANS_N);
    assert_int_equal(b, GT_TRANS_T);
  }
  gt_trans_t a = GT_TRANS_N, b = GT_TRANS_N;
  assert_false(gt_layout_parse(NULL, &a, &b));
}

/* ---- architectures -------------------------------------------------------------------------- */

/* The table is well formed and every instance targets one of its rows, fits that row's
 * shared-memory budget and runs on the compute capability the row's target names. */
static void test_arch_table(void **state) {
  (void)state;
  assert_true(gt_karch_count > 0);
  for (size_t a = 0; a < gt_karch_count; a++) {
    const gt_karch_t *k = &gt_karchs[a];
    assert_int_equal(gt_karch_find(k->token), (int)a);
    assert_true(strncmp(k->token, "sm", 2) == 0 && strncmp(k->target, "sm_", 3) == 0);
    assert_true(k->max_smem > 0);
    char why[160];
    if (!gt_karch_runs_on(k, k->cc_major, k->cc_minor, why, sizeof why))
      fail_msg("%s does not run on its own compute capability: %s", k->target, why);
  }
  size_t per_arch[64] = {0};
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kinstance_t *in = &gt_kinstances[i];
    const gt_karch_t *k = gt_kparams_arch(&in->params);
    if (!k) fail_msg("%s: arch %d is not a row of the table", in->name, in->params.arch);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "gt_%s_", k->token);
    assert_true(strncmp(in->name, prefix, strlen(prefix)) == 0);
    /* dynamic shared memory alone: the generator counted the static part as well */
    assert_true(in->smem_bytes <= k->max_smem);
    if (in->params.arch < 64) per_arch[in->params.arch]++;
  }
  /* the generator lists only architectures some family builds for */
  for (size_t a = 0; a < gt_karch_count && a < 64; a++)
    if (!per_arch[a]) fail_msg("%s has no instance", gt_karchs[a].target);
  assert_int_equal(gt_karch_find("sm80"), -1);
  assert_int_equal(gt_karch_find(NULL), -1);
}

/* What sm_90a code runs on, the rule the provider applies to every sm90 instance: compute
 * capability 9.0 only, and a refusal names the target and the device. */
static void test_sm90_runs_on_cc90_only(void **state) {
  (void)state;
  const int sm90 = gt_karch_find("sm90");
  assert_true(sm90 >= 0);
  const gt_karch_t *k = &gt_karchs[sm90];
  assert_string_equal(k->target, "sm_90a");
  static const struct {
    int major, minor;
    bool runs;
  } dev[] = {{9, 0, true}, {8, 0, false}, {8, 9, false}, {9, 1, false}, {10, 0, false},
             {12, 0, false}};
  for (size_t i = 0; i < NELEM(dev); i++) {
    char why[160] = "";
    const bool runs = gt_karch_runs_on(k, dev[i].major, dev[i].minor, why, sizeof why);
    if (runs != dev[i].runs)
      fail_msg("sm_90a on %d.%d: runs %d, want %d", dev[i].major, dev[i].minor, runs, dev[i].runs);
    if (!runs) {
      char dev_name[16];
      snprintf(dev_name, sizeof dev_name, "sm_%d%d", dev[i].major, dev[i].minor);
      if (!strstr(why, "sm_90a") || !strstr(why, dev_name))
        fail_msg("reason '%s' names neither sm_90a nor %s", why, dev_name);
    }
  }
}

/* The three kinds of CUDA target, on devices around them: sm_XYa only on X.Y, sm_XYf on later
 * minors of X, plain sm_XY on anything from X.Y on (machine code within X, PTX beyond). */
static void test_runs_on_rules(void **state) {
  (void)state;
  static const gt_karch_t exact = {"smt1", "sm_100a", 10, 0, GT_KARCH_EXACT, 1024};
  static const gt_karch_t family = {"smt2", "sm_100f", 10, 0, GT_KARCH_FAMILY, 1024};
  static const gt_karch_t forward = {"smt3", "sm_86", 8, 6, GT_KARCH_FORWARD, 1024};
  static const struct {
    const gt_karch_t *arch;
    int major, minor;
    bool runs;
  } k[] = {
      {&exact, 10, 0, true},   {&exact, 10, 3, false},  {&exact, 9, 0, false},
      {&exact, 12, 0, false},  {&family, 10, 0, true},  {&family, 10, 3, true},
      {&family, 9, 0, false},  {&family, 11, 0, false}, {&forward, 8, 6, true},
      {&forward, 8, 9, true},  {&forward, 9, 0, true},  {&forward, 8, 0, false},
      {&forward, 7, 5, false},
  };
  for (size_t i = 0; i < NELEM(k); i++) {
    char why[160] = "";
    const bool runs = gt_karch_runs_on(k[i].arch, k[i].major, k[i].minor, why, sizeof why);
    if (runs != k[i].runs)
      fail_msg("%s on %d.%d: runs %d, want %d (%s)", k[i].arch->target, k[i].major, k[i].minor,
               runs, k[i].runs, why);
    if (!runs && !strstr(why, k[i].arch->target))
      fail_msg("reason '%s' does not name %s", why, k[i].arch->target);
  }
  char why[64] = "";
  assert_false(gt_karch_runs_on(NULL, 9, 0, why, sizeof why));
  assert_true(strlen(why) > 0);
  assert_false(gt_karch_runs_on(&exact, 9, 0, NULL, 0)); /* no reason wanted */
}

/* A name whose architecture token is not in the table says which tokens are. */
static void test_unknown_arch_message(void **state) {
  (void)state;
  gt_kparams_t kp;
  gt_err_clear();
  assert_int_equal(gt_kernel_name_parse("gt_sm80_decode_bf16_tn_n8_r4_w4_u2_ks1_v8", &kp),
                   GT_ERR_NOT_FOUND);
  for (size_t a = 0; a < gt_karch_count; a++)
    if (!strstr(gt_err_msg(), gt_karchs[a].token))
      fail_msg("'%s' does not list %s", gt_err_msg(), gt_karchs[a].token);
}

/* The split-K reduce kernel's symbol follows the instance's architecture and type, with
 * snprintf's return convention; every instance that launches it names one. */
static void test_reduce_symbol(void **state) {
  (void)state;
  gt_kparams_t kp;
  assert_int_equal(gt_kernel_name_parse("gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks2_v8", &kp), GT_OK);
  assert_true(gt_kparams_uses_reduce(&kp));
  char buf[64];
  assert_int_equal(gt_kernel_reduce_symbol(&kp, buf, sizeof buf),
                   (int)strlen("gt_sm90_splitk_reduce_bf16"));
  assert_string_equal(buf, "gt_sm90_splitk_reduce_bf16");
  kp.dtype = GT_DT_F16;
  gt_kernel_reduce_symbol(&kp, buf, sizeof buf);
  assert_string_equal(buf, "gt_sm90_splitk_reduce_f16");
  char small[8];
  assert_int_equal(gt_kernel_reduce_symbol(&kp, small, sizeof small),
                   (int)strlen("gt_sm90_splitk_reduce_f16"));
  assert_string_equal(small, "gt_sm90");
  kp.arch = -1;
  assert_int_equal(gt_kernel_reduce_symbol(&kp, buf, sizeof buf), -1);
  assert_string_equal(buf, "");
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *p = &gt_kinstances[i].params;
    if (!gt_kparams_uses_reduce(p)) continue;
    const int n = gt_kernel_reduce_symbol(p, buf, sizeof buf);
    if (n <= 0 || n >= (int)sizeof buf) fail_msg("%s: no reduce symbol", gt_kinstances[i].name);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "gt_%s_splitk_reduce_", gt_kparams_arch(p)->token);
    assert_true(strncmp(buf, prefix, strlen(prefix)) == 0);
  }
}

/* Which fp8 instances can promote their sums (a key without fast accumulation needs it): the
 * accumulators (gt_wg.cuh's wg_shape) and the partials (one, or two up to 32 accumulators) within
 * 128 registers a thread; dtf8 always; no 16-bit family. */
static void test_f8_promotes(void **state) {
  (void)state;
  static const struct {
    const char *name;
    bool promotes;
  } cases[] = {
      /* swapped (BN 64): BM / CW / 2 accumulators */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t128x64x256_s4_ks1_p8", true},      /* 64 + 64 */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t224x64x128_s4_ks1_p8", false},     /* 112 + 112 */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t224x64x128_s4_ks1_p8_w2", true},   /* 56 + 56 */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t256x64x128_s4_ks1_p8_g1", false},  /* 128 */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t112x64x128_s9_ks1_p8_w2", true},   /* 28 + 2 x 28 */
      /* swapped (BN 8 with BM not a multiple of 64) */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t224x8x256_s3_ks1_p8", false},      /* 112 + 112 */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t80x8x512_s3_ks1_p8", true},        /* 40 + 40 */
      /* m64 blocks: BM / 64 / CW x BN / 2 */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t128x16x256_s4_ks1_p8", true},      /* 16 + 2 x 16 */
      {"gt_sm90_wgf8_e4m3_e4m3_bf16_tn_t64x32x256_s4_ks1_p8", true},       /* 16 + 2 x 16 */
      {"gt_sm90_dtf8_e4m3_e4m3_bf16_tn_n32_m2_w1x4_u1_s1_ks1_v16", true},
      {"gt_sm90_wg_bf16_tn_t64x8x256_s2_ks1_p8", false},
  };
  for (size_t i = 0; i < NELEM(cases); i++) {
    gt_kparams_t kp;
    if (gt_kernel_name_parse(cases[i].name, &kp) != GT_OK)
      fail_msg("%s: %s", cases[i].name, gt_err_msg());
    if (gt_kparams_f8_promotes(&kp) != cases[i].promotes)
      fail_msg("%s: promotes %d, want %d", cases[i].name, !cases[i].promotes, cases[i].promotes);
  }
  /* every dtf8 instance of the table promotes, and no 16-bit one claims to */
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *p = &gt_kinstances[i].params;
    if (p->family == GT_KFAM_DTF8 ? !gt_kparams_f8_promotes(p)
                                  : !gt_kfamily_is_fp8(p->family) && gt_kparams_f8_promotes(p))
      fail_msg("%s: promotes %d", gt_kinstances[i].name, gt_kparams_f8_promotes(p));
  }
}

int main(void) {
  const size_t n_inst = gt_kinstance_count;
  const size_t cap = 2 * n_inst + NELEM(k_good) + NELEM(k_bad) + NELEM(k_unformattable) + 16;
  struct CMUnitTest *t = calloc(cap, sizeof *t);
  if (!t) return 1;
  /* cmocka keeps the name pointers: one buffer per generated case, alive until exit. */
  char *nb = calloc(2 * n_inst + NELEM(k_bad) + NELEM(k_unformattable), 224);
  if (!nb) return 1;
  size_t n = 0, nn = 0;
  for (size_t i = 0; i < n_inst; i++) {
    char *s = nb + 224 * nn++;
    snprintf(s, 224, "round_trip:%s", gt_kinstances[i].name);
    t[n++] = (struct CMUnitTest){s, test_round_trip, NULL, NULL, (void *)&gt_kinstances[i]};
    s = nb + 224 * nn++;
    snprintf(s, 224, "geometry:%s", gt_kinstances[i].name);
    t[n++] = (struct CMUnitTest){s, test_geometry, NULL, NULL, (void *)&gt_kinstances[i]};
  }
  t[n++] = (struct CMUnitTest){"names_unique", test_names_unique, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"every_instance_has_an_epilogue_twin", test_epilogue_twins, NULL,
                               NULL, NULL};
  t[n++] = (struct CMUnitTest){"twin_kernel_symbols", test_twin_symbols, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"every_family_and_type_present", test_families_present, NULL, NULL,
                               NULL};
  for (size_t i = 0; i < NELEM(k_good); i++)
    t[n++] = (struct CMUnitTest){k_good[i].name, test_good_name, NULL, NULL, (void *)&k_good[i]};
  for (size_t i = 0; i < NELEM(k_bad); i++) {
    char *s = nb + 224 * nn++;
    snprintf(s, 224, "refuses:%s", k_bad[i].what);
    t[n++] = (struct CMUnitTest){s, test_bad_name, NULL, NULL, (void *)&k_bad[i]};
  }
  for (size_t i = 0; i < NELEM(k_unformattable); i++) {
    char *s = nb + 224 * nn++;
    snprintf(s, 224, "no_name_for:%s", k_unformattable[i].what);
    t[n++] = (struct CMUnitTest){s, test_unformattable, NULL, NULL, (void *)&k_unformattable[i]};
  }
  t[n++] = (struct CMUnitTest){"format_into_small_buffer_fails", test_format_truncation_fails,
                               NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"layout_parse", test_layout_parse, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"arch_table", test_arch_table, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"sm90_runs_on_cc90_only", test_sm90_runs_on_cc90_only, NULL, NULL,
                               NULL};
  t[n++] = (struct CMUnitTest){"runs_on_rules", test_runs_on_rules, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"unknown_arch_message", test_unknown_arch_message, NULL, NULL,
                               NULL};
  t[n++] = (struct CMUnitTest){"reduce_symbol", test_reduce_symbol, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"f8_promotes", test_f8_promotes, NULL, NULL, NULL};
  return _cmocka_run_group_tests("kernel_names", t, n, NULL, NULL);
}
