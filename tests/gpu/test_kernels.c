/* Every own-kernel instance passes the correctness gate (the CUDA harness: fresh random inputs,
 * poisoned outputs, device fp64 reference) on every problem it accepts: aligned and odd shapes
 * (tokens 1..64 not powers of two, M and K not multiples of 8 or of any tile, padded leading
 * dimensions, beta != 0, all four transposes), with random and with small-integer inputs.
 * Instances a problem's hard rules refuse (alignment, layout, type) are counted, not run.
 *
 * Epilogues: every epilogue twin (the instances named ..._e) passes the gate on bias keys (TN and
 * NN as PyTorch issues them, tokens 1..136, M and K not multiples of 64, aligned and not, beta 0
 * and not, bf16 and f16; split-K twins among them, whose reduce kernel applies the bias), and a
 * sample of twins of every family, split-K ones included, on bias_relu, bias_gelu, relu and gelu
 * keys. On a key with an epilogue only twins run and on a key without one only plain instances.
 *
 * Also: enumeration always leaves an own candidate and gives every exclusion a reason (twins for
 * keys with an epilogue, plain instances for keys without); run refuses misaligned operands and a
 * missing bias; split-K results are bitwise reproducible; run is capturable in a CUDA graph.
 * Exits 77 when there is no CUDA device or it is not an sm_90 part. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/gt_dtype.h"
#include "core/gt_problem.h"
#include "harness/gt_harness.h"
#include "kernels/gt_kernel_name.h"
#include "providers/gt_provider.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const gt_provider_t *g_prov;
static const gt_harness_ops_t *g_h;
static gt_device_info_t g_dev;

/* ---- the shape table --------------------------------------------------------------------------- */

typedef struct shape_case {
  const char *name;
  const char *layout; /* "tn" (nn.Linear: m=out, n=tokens, k=in), "nn", "nt", "tt" */
  gt_dtype_t dtype;
  int64_t m, n, k;
  int64_t pad_a, pad_b, pad_c; /* added to the tight leading dimensions */
  bool beta;                   /* beta != 0 (C read) */
} shape_case_t;

static const shape_case_t k_shapes[] = {
    /* nn.Linear decode shapes: tokens 1..64, out 4096/4095/1000, in 4096/4104/1001 */
    {"tn_t1_out4096_in4096", "tn", GT_DT_BF16, 4096, 1, 4096, 0, 0, 0, false},
    {"tn_t3_out4095_in4104", "tn", GT_DT_BF16, 4095, 3, 4104, 0, 0, 0, false},
    {"tn_t7_out1000_in1001", "tn", GT_DT_BF16, 1000, 7, 1001, 0, 0, 0, false},
    {"tn_t16_out4096_in4104", "tn", GT_DT_BF16, 4096, 16, 4104, 0, 0, 0, false},
    {"tn_t33_out1000_in4096", "tn", GT_DT_BF16, 1000, 33, 4096, 0, 0, 0, false},
    {"tn_t64_out4095_in4096", "tn", GT_DT_BF16, 4095, 64, 4096, 0, 0, 0, false},
    {"tn_t64_out4096_in1001", "tn", GT_DT_BF16, 4096, 64, 1001, 0, 0, 0, false},
    {"tn_t1_out4095_in1001", "tn", GT_DT_BF16, 4095, 1, 1001, 0, 0, 0, false},
    /* beta != 0, padded leading dimensions (aligned and not), K shorter than any split */
    {"tn_t16_out4096_in4096_beta", "tn", GT_DT_BF16, 4096, 16, 4096, 0, 0, 0, true},
    {"tn_t5_out3000_in2048_padded", "tn", GT_DT_BF16, 3000, 5, 2048, 8, 16, 5, true},
    {"tn_t9_out2000_in1000_pad_odd", "tn", GT_DT_BF16, 2000, 9, 1000, 3, 1, 1, false},
    {"tn_t16_out4096_in40_short_k", "tn", GT_DT_BF16, 4096, 16, 40, 0, 0, 0, false},
    {"tn_t130_out520_in200_many_tiles", "tn", GT_DT_BF16, 520, 130, 200, 0, 0, 0, true},
    /* more weight tiles than resident CTAs: each persistent CTA (g1) takes several, its ring
     * running across the tile boundaries; a ragged last tile and K tail */
    {"tn_t16_out30001_in1000_tiles_per_cta", "tn", GT_DT_BF16, 30001, 16, 1000, 0, 0, 0, false},
    {"tn_t64_out20000_in520_tiles_per_cta_beta", "tn", GT_DT_BF16, 20000, 64, 520, 0, 0, 0, true},
    /* f16 */
    {"f16_tn_t8_out4096_in4096", "tn", GT_DT_F16, 4096, 8, 4096, 0, 0, 0, false},
    {"f16_tn_t33_out1000_in4104", "tn", GT_DT_F16, 1000, 33, 4104, 0, 0, 0, true},
    {"f16_tn_t3_out4095_in1001", "tn", GT_DT_F16, 4095, 3, 1001, 0, 0, 0, false},
    /* the other transposes: wg (aligned) and the generic family */
    {"nn_t1_out4096_in4096", "nn", GT_DT_BF16, 4096, 1, 4096, 0, 0, 0, false},
    {"nn_t16_out4000_in4104_beta", "nn", GT_DT_BF16, 4000, 16, 4104, 0, 0, 0, true},
    {"nn_t5_out3000_in2048_padded", "nn", GT_DT_BF16, 3000, 5, 2048, 8, 16, 5, false},
    {"nn_t64_out1000_in40_short_k", "nn", GT_DT_BF16, 1000, 64, 40, 0, 0, 0, false},
    {"tt_t8_out4096_in1000", "tt", GT_DT_BF16, 4096, 8, 1000, 0, 0, 0, false},
    {"tt_t40_out1000_in4104_padded", "tt", GT_DT_BF16, 1000, 40, 4104, 8, 24, 3, true},
    {"nt_t64_out4000_in2048", "nt", GT_DT_BF16, 4000, 64, 2048, 0, 0, 0, false},
    {"nt_t136_out520_in200_many_tiles", "nt", GT_DT_BF16, 520, 136, 200, 0, 0, 0, true},
    {"nn_m1000_n33_k1001", "nn", GT_DT_BF16, 1000, 33, 1001, 0, 0, 0, false},
    {"nn_m4096_n64_k4104", "nn", GT_DT_BF16, 4096, 64, 4104, 0, 0, 0, false},
    {"nn_m520_n130_k200_beta_padded", "nn", GT_DT_BF16, 520, 130, 200, 8, 8, 3, true},
    {"nt_m1000_n33_k1001", "nt", GT_DT_BF16, 1000, 33, 1001, 0, 0, 0, false},
    {"nt_m4096_n64_k4104", "nt", GT_DT_BF16, 4096, 64, 4104, 0, 0, 0, true},
    {"tt_m1000_n33_k1001", "tt", GT_DT_BF16, 1000, 33, 1001, 0, 0, 0, false},
    {"tt_m4096_n64_k4104", "tt", GT_DT_BF16, 4096, 64, 4104, 0, 0, 0, false},
    {"f16_nn_m1000_n33_k1001", "nn", GT_DT_F16, 1000, 33, 1001, 0, 0, 0, true},
    {"f16_nn_t16_out4000_in2048_beta", "nn", GT_DT_F16, 4000, 16, 2048, 0, 0, 0, true},
    {"f16_nt_t40_out1000_in1000", "nt", GT_DT_F16, 1000, 40, 1000, 0, 0, 0, false},
    {"f16_tt_m4096_n64_k4104", "tt", GT_DT_F16, 4096, 64, 4104, 0, 0, 0, false},
};

/* Bias keys, as PyTorch sends F.linear / addmm / GPT-2 Conv1D with a bias to cublasLtMatmul
 * (TN and NN, beta 0), and with beta != 0: every twin of the key's type and layout runs. M
 * and K are not multiples of 64 (1000, 4104, 520, 200); in1001 and out1001 rows are not
 * 16-byte aligned (only the generic family's a1 twins run them); the split-K twins (tc, wg)
 * run every key, K long enough for every split on the in4096 rows. */
static const shape_case_t k_bias_shapes[] = {
    {"tn_t1_out4096_in4096", "tn", GT_DT_BF16, 4096, 1, 4096, 0, 0, 0, false},
    {"tn_t7_out1000_in1000", "tn", GT_DT_BF16, 1000, 7, 1000, 0, 0, 0, false},
    {"tn_t16_out4000_in4104_beta", "tn", GT_DT_BF16, 4000, 16, 4104, 0, 0, 0, true},
    {"tn_t33_out1000_in4096", "tn", GT_DT_BF16, 1000, 33, 4096, 0, 0, 0, false},
    {"tn_t64_out4095_in2048", "tn", GT_DT_BF16, 4095, 64, 2048, 0, 0, 0, false},
    {"tn_t136_out520_in200_beta", "tn", GT_DT_BF16, 520, 136, 200, 0, 0, 0, true},
    {"tn_t33_out30001_in264_tiles_per_cta", "tn", GT_DT_BF16, 30001, 33, 264, 0, 0, 0, false},
    {"tn_t5_out3000_in1001_unaligned", "tn", GT_DT_BF16, 3000, 5, 1001, 0, 0, 0, false},
    {"tn_t9_out2000_in1000_padded", "tn", GT_DT_BF16, 2000, 9, 1000, 8, 16, 5, true},
    {"f16_tn_t8_out4096_in4096", "tn", GT_DT_F16, 4096, 8, 4096, 0, 0, 0, false},
    {"f16_tn_t33_out1000_in4104_beta", "tn", GT_DT_F16, 1000, 33, 4104, 0, 0, 0, true},
    {"f16_tn_t3_out4095_in1001_unaligned", "tn", GT_DT_F16, 4095, 3, 1001, 0, 0, 0, false},
    {"nn_t1_out4096_in4096", "nn", GT_DT_BF16, 4096, 1, 4096, 0, 0, 0, false},
    {"nn_t16_out4000_in4104_beta", "nn", GT_DT_BF16, 4000, 16, 4104, 0, 0, 0, true},
    {"nn_t64_out1000_in1000", "nn", GT_DT_BF16, 1000, 64, 1000, 0, 0, 0, false},
    {"nn_t130_out520_in200_beta", "nn", GT_DT_BF16, 520, 130, 200, 0, 0, 0, true},
    {"nn_t5_out3000_in2048_padded", "nn", GT_DT_BF16, 3000, 5, 2048, 8, 16, 5, false},
    {"nn_t9_out1001_in999_unaligned", "nn", GT_DT_BF16, 1001, 9, 999, 0, 0, 0, false},
    {"f16_nn_t33_out1000_in1001_beta", "nn", GT_DT_F16, 1000, 33, 1001, 0, 0, 0, true},
    {"f16_nn_t16_out4000_in2048", "nn", GT_DT_F16, 4000, 16, 2048, 0, 0, 0, false},
};

/* Keys of the other epilogues: each gates a sample of the twins of its type and layout
 * (sample_twin), split-K ones included. */
static const shape_case_t k_act_shapes[] = {
    {"tn_t16_out4096_in4096", "tn", GT_DT_BF16, 4096, 16, 4096, 0, 0, 0, false},
    {"tn_t130_out520_in4096_beta", "tn", GT_DT_BF16, 520, 130, 4096, 0, 0, 0, true},
    {"f16_tn_t7_out1000_in1001", "tn", GT_DT_F16, 1000, 7, 1001, 0, 0, 0, false},
    {"nn_t64_out1000_in2048", "nn", GT_DT_BF16, 1000, 64, 2048, 0, 0, 0, false},
    {"f16_nn_t33_out4000_in4104_beta", "nn", GT_DT_F16, 4000, 33, 4104, 0, 0, 0, true},
};
static const gt_epilogue_t k_acts[] = {GT_EPI_BIAS_RELU, GT_EPI_BIAS_GELU, GT_EPI_RELU,
                                       GT_EPI_GELU};

typedef struct gate_case {
  char name[128];
  const shape_case_t *shape;
  gt_epilogue_t epilogue; /* the key's: with one, the epilogue twins run */
  gt_init_mode_t init;
  bool sample; /* gate only sample_twin's choice of the twins (activation keys) */
} gate_case_t;

static void make_problem(const shape_case_t *s, gt_epilogue_t epi, gt_problem_t *p) {
  gt_problem_init(p);
  p->a_type = p->b_type = p->c_type = p->d_type = s->dtype;
  p->compute = GT_COMPUTE_F32;
  p->scale_type = GT_DT_F32;
  assert_true(gt_layout_parse(s->layout, &p->transa, &p->transb));
  p->m = s->m;
  p->n = s->n;
  p->k = s->k;
  p->lda = p->ldb = p->ldc = 0;
  gt_problem_fill_lds(p);
  p->lda += s->pad_a;
  p->ldb += s->pad_b;
  p->ldc += s->pad_c;
  p->beta_zero = !s->beta;
  p->epilogue = epi;
  snprintf(p->arch, sizeof p->arch, "%s", g_dev.arch);
  p->sm_count = g_dev.sm_count;
}

/* Whether instance kp is of p's type and layout and of the variant p runs: the epilogue twins for
 * a key with an epilogue, the plain instances for a key without one. */
static bool runs_variant(const gt_kparams_t *kp, const gt_problem_t *p) {
  return kp->dtype == p->a_type && kp->transa == p->transa && kp->transb == p->transb &&
         kp->epilogue == (p->epilogue != GT_EPI_NONE);
}

/* Instances of family fam, p's type and layout and the variant p runs, in the table. */
static int fam_count(const gt_problem_t *p, gt_kfamily_t fam) {
  int n = 0;
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *kp = &gt_kinstances[i].params;
    n += kp->family == fam && runs_variant(kp, p);
  }
  return n;
}

/* The activation keys' sample: of the twins a key's hard rules accept, per family the first, the
 * first split-K one (tc: through the reduce kernel; wg: in the cluster), the first wg one with
 * token multicast or two consumer warpgroups, the first persistent wg one, the first one with
 * weight multicast, the first with token multicast (wg, wgf8), the first with both, and every
 * 16th.
 * seen[] counts per family. */
static bool sample_twin(const gt_kparams_t *kp, int (*seen)[7]) {
  int *s = seen[kp->family];
  const int nth = s[0]++;
  bool take = nth == 0 || nth % 16 == 0;
  if (kp->splitk > 1 && !s[1]++) take = true;
  if (kp->family == GT_KFAM_WG && (kp->cluster_m > 1 || kp->consumers > 1) && !s[2]++)
    take = true;
  if (kp->family == GT_KFAM_WG && kp->persistent && !s[3]++) take = true;
  if (kp->cluster_n > 1 && !s[4]++) take = true; /* weight multicast (wg, wgf8) */
  if (kp->cluster_m > 1 && !s[5]++) take = true; /* token multicast (wg, wgf8) */
  if (kp->cluster_m > 1 && kp->cluster_n > 1 && !s[6]++) take = true; /* a 2-D cluster */
  return take;
}

/* Gate every instance of the problem's type and layout (the twins for a key with an epilogue)
 * that the problem's hard rules accept, or sample_twin's choice of them. */
static void test_gate_all(void **state) {
  const gate_case_t *gc = *state;
  gt_problem_t p;
  make_problem(gc->shape, gc->epilogue, &p);
  gt_measure_opts_t o;
  gt_measure_opts_init(&o);
  o.warm = true; /* only gated here: no rotation sets */
  o.init = gc->init;
  o.seed = 20261129;
  struct gt_bench *b = NULL;
  if (g_h->open(&p, &o, &b) != GT_OK) fail_msg("%s: open: %s", gc->name, gt_err_msg());

  int passed = 0, refused = 0, failed = 0;
  int fam_passed[GT_KFAM__COUNT] = {0};
  int seen[GT_KFAM__COUNT][7] = {{0}};
  char fails[2048] = "";
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kinstance_t *in = &gt_kinstances[i];
    if (in->params.dtype != p.a_type || in->params.transa != p.transa ||
        in->params.transb != p.transb)
      continue;
    gt_candidate_t c;
    gt_status_t s = g_prov->from_name(in->name, &p, &c);
    /* The other variant (plain instances on a key with an epilogue, twins on one without) is
     * refused by a hard rule: counted with the refused, never run. */
    if (in->params.epilogue != (p.epilogue != GT_EPI_NONE)) {
      if (s != GT_ERR_UNSUPPORTED)
        fail_msg("%s: %s accepted on a key with epilogue %s", gc->name, in->name,
                 gt_epilogue_name(p.epilogue));
      refused++;
      continue;
    }
    if (s == GT_ERR_UNSUPPORTED) {
      refused++;
      continue;
    }
    if (gc->sample && s == GT_OK && !sample_twin(&in->params, seen)) continue;
    char why[400] = "";
    struct gt_loaded *l = NULL;
    gt_gate_t g;
    memset(&g, 0, sizeof g);
    if (s != GT_OK)
      snprintf(why, sizeof why, "from_name: %s", gt_err_msg());
    else if ((s = g_h->load(b, &c, &l)) != GT_OK)
      snprintf(why, sizeof why, "load: %s", gt_err_msg());
    else if ((s = g_h->gate(b, l, &g)) != GT_OK || !g.passed)
      snprintf(why, sizeof why, "gate: %s (error %.3g, bound %.3g, unwritten %lld)",
               g.why[0] ? g.why : gt_err_msg(), g.error, g.bound, (long long)g.unwritten);
    if (l) g_h->unload(l);
    if (why[0]) {
      failed++;
      printf("  FAIL %s: %s\n", in->name, why);
      size_t used = strlen(fails);
      if (used + 100 < sizeof fails)
        snprintf(fails + used, sizeof fails - used, " %s", in->name);
    } else {
      passed++;
      fam_passed[in->params.family]++;
    }
  }
  g_h->close(b);
  printf("  %s: %d %s passed (decode %d, decodetc %d, tc %d, wg %d), %d refused by hard "
         "rules, %d failed\n",
         gc->name, passed, p.epilogue != GT_EPI_NONE ? "epilogue twins" : "instances",
         fam_passed[GT_KFAM_DECODE], fam_passed[GT_KFAM_DECODETC],
         fam_passed[GT_KFAM_TC], fam_passed[GT_KFAM_WG], refused, failed);
  if (failed) fail_msg("%s: %d instances failed:%s", gc->name, failed, fails);
  /* Some own instance can run every bf16/f16 problem (the generic family has a scalar path). */
  assert_true(passed > 0);
  /* A problem with 16-byte-aligned rows whose type and layout the TMA family has instances for
   * (bf16 in all four layouts) is one it must have run: a family, or a layout of it, refused
   * wholesale would otherwise pass this test without being checked. */
  if (p.lda % 8 == 0 && p.ldb % 8 == 0 && fam_count(&p, GT_KFAM_WG) > 0 &&
      fam_passed[GT_KFAM_WG] == 0)
    fail_msg("%s: no wg instance ran on an aligned %s problem (%d wg instances of its type and "
             "layout)",
             gc->name, gc->shape->layout, fam_count(&p, GT_KFAM_WG));
  /* The same for the twins on a key with an epilogue, for every family: each family that has
   * twins of an aligned key's type and layout must have run one (their hard rules are the plain
   * instances' and an aligned key meets every alignment rule). */
  if (p.epilogue != GT_EPI_NONE && p.lda % 8 == 0 && p.ldb % 8 == 0)
    for (int f = 0; f < GT_KFAM__COUNT; f++)
      if (fam_count(&p, (gt_kfamily_t)f) > 0 && fam_passed[f] == 0)
        fail_msg("%s: no %s twin ran on an aligned %s %s key (%d twins of its type and layout)",
                 gc->name, gt_kfamily_name((gt_kfamily_t)f), gc->shape->layout,
                 gt_epilogue_name(p.epilogue), fam_count(&p, (gt_kfamily_t)f));
}

/* ---- enumeration ------------------------------------------------------------------------------- */

static void test_enumerate_keeps_one(void **state) {
  const gate_case_t *ec = *state;
  gt_problem_t p;
  make_problem(ec->shape, ec->epilogue, &p);
  gt_cand_list_t list = {0};
  gt_enum_opts_t o = {.max_candidates = 0, .exhaustive = false, .device = 0};
  if (g_prov->enumerate(&p, &o, &list) != GT_OK) fail_msg("enumerate: %s", gt_err_msg());
  assert_int_equal(list.n, gt_kinstance_count);
  size_t active = 0;
  const bool epi = p.epilogue != GT_EPI_NONE;
  for (size_t i = 0; i < list.n; i++) {
    const gt_kparams_t *kp = &gt_kinstances[i].params;
    assert_string_equal(list.v[i].name, gt_kinstances[i].name);
    /* A key with an epilogue lists only the twins, a key without one only the plain instances;
     * the other variant is excluded with the reason that says which is listed instead. */
    if (kp->epilogue != epi) {
      if (!list.v[i].excluded) fail_msg("%s listed for epilogue %s", list.v[i].name,
                                        gt_epilogue_name(p.epilogue));
      const char *want = epi ? "plain instance: the key has a" : "epilogue twin: for keys with";
      /* Instances of another type or layout may be refused for that first. */
      const bool same_kind = kp->dtype == p.a_type && kp->transa == p.transa &&
                             kp->transb == p.transb;
      if (same_kind && !strstr(list.v[i].reason, want))
        fail_msg("%s: reason '%s', want '%s...'", list.v[i].name, list.v[i].reason, want);
    }
    if (!list.v[i].excluded) {
      active++;
      continue;
    }
    if (!list.v[i].reason[0]) fail_msg("%s excluded without a reason", list.v[i].name);
  }
  gt_cand_list_free(&list);
  assert_true(active > 0);
}

/* Weight multicast (x2) is listed only where the same tile's grid without it leaves SMs idle:
 * 4096 weight rows at 32 tokens in 64 x 16 tiles are 64 x 2 = 128 CTAs (listed on a part of 128
 * or more SMs), 28672 rows 448 x 2 (excluded, with the reason). */
static void test_multicast_prune(void **state) {
  (void)state;
  int idx = -1;
  for (size_t i = 0; i < gt_kinstance_count && idx < 0; i++) {
    const gt_kparams_t *kp = &gt_kinstances[i].params;
    if (kp->family == GT_KFAM_WG && kp->dtype == GT_DT_BF16 && kp->transa == GT_TRANS_T &&
        kp->transb == GT_TRANS_N && !kp->epilogue && kp->cluster_n == 2 && kp->tile_m == 64 &&
        kp->tile_n == 16)
      idx = (int)i;
  }
  if (idx < 0) fail_msg("no plain bf16 TN wg instance t64x16 with x2 in the table");
  static const shape_case_t small = {"tn_t32_out4096_in4096", "tn", GT_DT_BF16, 4096, 32, 4096,
                                     0, 0, 0, false};
  static const shape_case_t large = {"tn_t32_out28672_in4096", "tn", GT_DT_BF16, 28672, 32, 4096,
                                     0, 0, 0, false};
  const shape_case_t *cases[] = {&small, &large};
  for (int c = 0; c < 2; c++) {
    gt_problem_t p;
    make_problem(cases[c], GT_EPI_NONE, &p);
    gt_cand_list_t list = {0};
    gt_enum_opts_t o = {.max_candidates = 0, .exhaustive = false, .device = 0};
    if (g_prov->enumerate(&p, &o, &list) != GT_OK) fail_msg("enumerate: %s", gt_err_msg());
    assert_int_equal(list.n, gt_kinstance_count);
    const gt_candidate_t *cd = &list.v[idx];
    assert_string_equal(cd->name, gt_kinstances[idx].name);
    const int64_t plain = (cases[c]->m / 64) * 2;
    const bool fills = plain > g_dev.sm_count;
    const bool said = cd->excluded && strstr(cd->reason, "without the multicast already fills");
    if (fills != said)
      fail_msg("%s on %s (%lld plain CTAs, %d SMs): excluded %d, reason '%s'", cd->name,
               cases[c]->name, (long long)plain, g_dev.sm_count, cd->excluded, cd->reason);
    if (!fills && cd->excluded)
      fail_msg("%s excluded on %s: %s", cd->name, cases[c]->name, cd->reason);
    gt_cand_list_free(&list);
  }
}

/* ---- run-level behaviour on buffers of our own -------------------------------------------------- */

typedef struct bufs {
  void *A, *B, *D, *ws;
  void *bias; /* m elements when p's epilogue has a bias, else NULL */
  size_t ws_size;
} bufs_t;

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

static uint16_t *host_random(size_t count, uint32_t seed) {
  uint16_t *h = malloc(count * 2);
  assert_non_null(h);
  uint32_t x = seed | 1u;
  for (size_t i = 0; i < count; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    h[i] = gt_f32_to_bf16((float)((int)(x % 2001) - 1000) / 1000.0f + 0.0005f);
  }
  return h;
}

/* Device A (m x k, TN) and B (k x n) with random bf16 data, D, a workspace and, for an epilogue
 * with a bias, a random bias of m elements, plus `slack` extra bytes in front of A so a
 * misaligned pointer stays inside the allocation. */
static void bufs_make(const gt_problem_t *p, size_t ws, size_t slack, bufs_t *b) {
  const size_t na = (size_t)p->lda * (size_t)p->m, nb = (size_t)p->ldb * (size_t)p->n;
  const size_t nd = (size_t)p->ldc * (size_t)p->n;
  memset(b, 0, sizeof *b);
  assert_int_equal(cudaMalloc(&b->A, na * 2 + slack), cudaSuccess);
  assert_int_equal(cudaMalloc(&b->B, nb * 2), cudaSuccess);
  assert_int_equal(cudaMalloc(&b->D, nd * 2), cudaSuccess);
  if (ws) assert_int_equal(cudaMalloc(&b->ws, ws), cudaSuccess);
  b->ws_size = ws;
  uint16_t *ha = host_random(na, 7), *hb = host_random(nb, 11);
  assert_int_equal(cudaMemcpy(b->A, ha, na * 2, cudaMemcpyHostToDevice), cudaSuccess);
  assert_int_equal(cudaMemcpy(b->B, hb, nb * 2, cudaMemcpyHostToDevice), cudaSuccess);
  free(ha);
  free(hb);
  if (epi_has_bias(p->epilogue)) {
    assert_int_equal(cudaMalloc(&b->bias, (size_t)p->m * 2), cudaSuccess);
    uint16_t *hbias = host_random((size_t)p->m, 13);
    assert_int_equal(cudaMemcpy(b->bias, hbias, (size_t)p->m * 2, cudaMemcpyHostToDevice),
                     cudaSuccess);
    free(hbias);
  }
  /* A cudaMemcpy from pageable memory may return before its DMA lands, on the legacy stream, which
   * the tests' non-blocking streams do not wait for: without this a kernel could read inputs still
   * being copied (seen once as a graph replay that "differed" from a plain run under ctest -j4). */
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
}

static void bufs_free(bufs_t *b) {
  cudaFree(b->A);
  cudaFree(b->B);
  cudaFree(b->D);
  if (b->ws) cudaFree(b->ws);
  if (b->bias) cudaFree(b->bias);
}

/* The first bf16 TN instance of family fam with at least these splits and vector width: a plain
 * instance, or with twin an epilogue twin. */
static const char *first_instance(gt_kfamily_t fam, int splitk_min, int vec_min, bool twin) {
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *kp = &gt_kinstances[i].params;
    if (kp->family == fam && kp->dtype == GT_DT_BF16 && kp->transa == GT_TRANS_T &&
        kp->transb == GT_TRANS_N && kp->splitk >= splitk_min && kp->vec >= vec_min &&
        kp->epilogue == twin)
      return gt_kinstances[i].name;
  }
  return NULL;
}

static void linear_problem(gt_problem_t *p, int64_t tokens, int64_t out, int64_t in) {
  shape_case_t s = {"", "tn", GT_DT_BF16, out, tokens, in, 0, 0, 0, false};
  make_problem(&s, GT_EPI_NONE, p);
}

static void test_run_refuses_misaligned(void **state) {
  (void)state;
  gt_problem_t p;
  linear_problem(&p, 4, 512, 512);
  const char *name = first_instance(GT_KFAM_DECODETC, 1, 8, false);
  assert_non_null(name);
  gt_candidate_t c;
  assert_int_equal(g_prov->from_name(name, &p, &c), GT_OK);
  void *st = NULL;
  size_t ws = 0;
  assert_int_equal(g_prov->prepare(&c, &p, &st, &ws), GT_OK);
  bufs_t b;
  bufs_make(&p, ws, 16, &b);
  const float alpha = 1.0f, beta = 0.0f;
  gt_operands_t ops = {.A = (const char *)b.A + 2, .B = b.B, .C = b.D, .D = b.D,
                       .alpha = &alpha, .beta = &beta, .workspace = b.ws, .ws_size = b.ws_size};
  assert_int_equal(g_prov->run(st, &ops, NULL), GT_ERR_UNSUPPORTED);
  ops.A = b.A;
  assert_int_equal(g_prov->run(st, &ops, NULL), GT_OK);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  g_prov->release(st);
  bufs_free(&b);
}

/* A twin on a bias key needs the bias: run refuses a call without one and accepts it with one. */
static void test_run_refuses_missing_bias(void **state) {
  (void)state;
  const gt_kfamily_t fams[] = {GT_KFAM_DECODE, GT_KFAM_DECODETC, GT_KFAM_TC, GT_KFAM_WG};
  for (size_t f = 0; f < NELEM(fams); f++) {
    gt_problem_t p;
    linear_problem(&p, 4, 512, 512);
    p.epilogue = GT_EPI_BIAS_GELU;
    const char *name = first_instance(fams[f], 1, 8, true);
    assert_non_null(name);
    gt_candidate_t c;
    if (g_prov->from_name(name, &p, &c) != GT_OK) fail_msg("%s: %s", name, gt_err_msg());
    void *st = NULL;
    size_t ws = 0;
    assert_int_equal(g_prov->prepare(&c, &p, &st, &ws), GT_OK);
    bufs_t b;
    bufs_make(&p, ws, 0, &b);
    const float alpha = 1.0f, beta = 0.0f;
    gt_operands_t ops = {.A = b.A, .B = b.B, .C = b.D, .D = b.D, .alpha = &alpha, .beta = &beta,
                         .workspace = b.ws, .ws_size = b.ws_size};
    assert_int_equal(g_prov->run(st, &ops, NULL), GT_ERR_USAGE);
    ops.bias = (const char *)b.bias + 1;
    assert_int_equal(g_prov->run(st, &ops, NULL), GT_ERR_UNSUPPORTED);
    ops.bias = b.bias;
    assert_int_equal(g_prov->run(st, &ops, NULL), GT_OK);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    g_prov->release(st);
    bufs_free(&b);
  }
}

/* Run `name` on fixed inputs; D copied to host (caller frees). Optionally inside stream capture. */
static uint16_t *run_fixed(const char *name, const gt_problem_t *p, bool capture) {
  gt_candidate_t c;
  if (g_prov->from_name(name, p, &c) != GT_OK) fail_msg("%s: %s", name, gt_err_msg());
  void *st = NULL;
  size_t ws = 0;
  if (g_prov->prepare(&c, p, &st, &ws) != GT_OK) fail_msg("%s: %s", name, gt_err_msg());
  bufs_t b;
  bufs_make(p, ws, 0, &b);
  const float alpha = 0.5f, beta = 0.0f;
  gt_operands_t ops = {.A = b.A, .B = b.B, .C = b.D, .D = b.D, .bias = b.bias, .alpha = &alpha,
                       .beta = &beta, .workspace = b.ws, .ws_size = b.ws_size};
  cudaStream_t s;
  assert_int_equal(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  if (capture) {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    gt_status_t rs = g_prov->run(st, &ops, s);
    assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
    if (rs != GT_OK) fail_msg("%s under capture: %s", name, gt_err_msg());
    assert_int_equal(cudaGraphInstantiate(&ge, g, 0), cudaSuccess);
    assert_int_equal(cudaGraphLaunch(ge, s), cudaSuccess);
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  } else {
    if (g_prov->run(st, &ops, s) != GT_OK) fail_msg("%s: %s", name, gt_err_msg());
    assert_int_equal(cudaStreamSynchronize(s), cudaSuccess);
  }
  const size_t nd = (size_t)p->ldc * (size_t)p->n;
  uint16_t *h = malloc(nd * 2);
  assert_non_null(h);
  assert_int_equal(cudaMemcpy(h, b.D, nd * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaStreamDestroy(s);
  g_prov->release(st);
  bufs_free(&b);
  return h;
}

/* Plain instances on a key without an epilogue, twins on a bias_gelu key (their split-K reduce
 * kernel applies it). */
static const gt_epilogue_t k_run_epis[] = {GT_EPI_NONE, GT_EPI_BIAS_GELU};

static void test_splitk_reproducible(void **state) {
  (void)state;
  const gt_kfamily_t fams[] = {GT_KFAM_DECODE, GT_KFAM_DECODETC, GT_KFAM_TC, GT_KFAM_WG};
  for (size_t e = 0; e < NELEM(k_run_epis); e++)
    for (size_t f = 0; f < NELEM(fams); f++) {
      gt_problem_t p;
      linear_problem(&p, 8, 1024, 4096);
      p.epilogue = k_run_epis[e];
      const char *name = first_instance(fams[f], 2, 1, p.epilogue != GT_EPI_NONE);
      if (!name) continue;
      uint16_t *d1 = run_fixed(name, &p, false), *d2 = run_fixed(name, &p, false);
      if (memcmp(d1, d2, (size_t)p.ldc * (size_t)p.n * 2) != 0)
        fail_msg("%s: two runs on the same inputs differ", name);
      free(d1);
      free(d2);
    }
}

static void test_run_capturable(void **state) {
  (void)state;
  const gt_kfamily_t fams[] = {GT_KFAM_DECODE, GT_KFAM_DECODETC, GT_KFAM_TC, GT_KFAM_WG};
  for (size_t e = 0; e < NELEM(k_run_epis); e++)
    for (size_t f = 0; f < NELEM(fams); f++) {
      gt_problem_t p;
      linear_problem(&p, 8, 1024, 4096);
      p.epilogue = k_run_epis[e];
      const bool twin = p.epilogue != GT_EPI_NONE;
      const char *name = first_instance(fams[f], 2, 1, twin); /* split-K: two launches */
      if (!name) name = first_instance(fams[f], 1, 1, twin);
      assert_non_null(name);
      uint16_t *d1 = run_fixed(name, &p, false), *d2 = run_fixed(name, &p, true);
      const size_t nd = (size_t)p.ldc * (size_t)p.n;
      if (memcmp(d1, d2, nd * 2) != 0) {
        /* Say how: a few values or all of them, by how much, and where the first one is. */
        size_t ndiff = 0, first = nd;
        double worst = 0;
        for (size_t i = 0; i < nd; i++)
          if (d1[i] != d2[i]) {
            const double x = (double)gt_bf16_to_f32(d1[i]), y = (double)gt_bf16_to_f32(d2[i]);
            const double rel = fabs(x - y) / (fabs(x) > 1e-30 ? fabs(x) : 1.0);
            if (rel > worst || ndiff == 0) worst = rel;
            if (first == nd) first = i;
            ndiff++;
          }
        fail_msg("%s: graph replay differs from a plain run in %zu of %zu elements (first at "
                 "row %zu col %zu: %g vs %g; largest relative difference %.3g)",
                 name, ndiff, nd, first % (size_t)p.ldc, first / (size_t)p.ldc,
                 (double)gt_bf16_to_f32(d1[first]), (double)gt_bf16_to_f32(d2[first]), worst);
      }
      free(d1);
      free(d2);
    }
}

int main(void) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("skip: no CUDA device\n");
    return 77;
  }
  g_h = gt_harness_for(GT_BACKEND_CUDA);
  if (!g_h || g_h->available(0) != GT_OK) {
    printf("skip: CUDA harness unavailable: %s\n", gt_err_msg());
    return 77;
  }
  if (g_h->describe(0, &g_dev) != GT_OK) {
    fprintf(stderr, "describe: %s\n", gt_err_msg());
    return 1;
  }
  g_prov = gt_provider_find("kernels");
  if (!g_prov) {
    fprintf(stderr, "no 'kernels' provider in this build\n");
    return 1;
  }
  gt_status_t s = gt_provider_ready(g_prov);
  if (s == GT_ERR_UNSUPPORTED) {
    printf("skip: %s\n", gt_err_msg()); /* not an sm_90 device */
    return 77;
  }
  if (s != GT_OK) {
    fprintf(stderr, "kernels provider: %s\n", gt_err_msg());
    return 1;
  }

  /* The plain keys and the bias keys, each with random and small-integer inputs and once
   * enumerated; the activation keys' samples with random inputs. */
  enum { NPLAIN = NELEM(k_shapes), NBIAS = NELEM(k_bias_shapes),
         NACT = NELEM(k_act_shapes) * NELEM(k_acts) };
  static gate_case_t gates[2 * (NPLAIN + NBIAS) + NACT], enums[NPLAIN + NBIAS];
  struct CMUnitTest t[3 * (NPLAIN + NBIAS) + NACT + 8];
  size_t n = 0, ng = 0;
  static const struct {
    gt_init_mode_t mode;
    const char *name;
  } k_modes[] = {{GT_INIT_RANDOM, "random"}, {GT_INIT_INT, "int"}};
  for (size_t i = 0; i < NPLAIN + NBIAS; i++) {
    const shape_case_t *sc = i < NPLAIN ? &k_shapes[i] : &k_bias_shapes[i - NPLAIN];
    const gt_epilogue_t epi = i < NPLAIN ? GT_EPI_NONE : GT_EPI_BIAS;
    for (size_t j = 0; j < NELEM(k_modes); j++) {
      gate_case_t *g = &gates[ng++];
      snprintf(g->name, sizeof g->name, "gate_all:%s%s:%s", epi ? "bias_" : "", sc->name,
               k_modes[j].name);
      g->shape = sc;
      g->epilogue = epi;
      g->init = k_modes[j].mode;
      t[n++] = (struct CMUnitTest){g->name, test_gate_all, NULL, NULL, g};
    }
  }
  for (size_t a = 0; a < NELEM(k_acts); a++)
    for (size_t i = 0; i < NELEM(k_act_shapes); i++) {
      gate_case_t *g = &gates[ng++];
      snprintf(g->name, sizeof g->name, "gate_sample:%s_%s:random", gt_epilogue_name(k_acts[a]),
               k_act_shapes[i].name);
      g->shape = &k_act_shapes[i];
      g->epilogue = k_acts[a];
      g->init = GT_INIT_RANDOM;
      g->sample = true;
      t[n++] = (struct CMUnitTest){g->name, test_gate_all, NULL, NULL, g};
    }
  for (size_t i = 0; i < NPLAIN + NBIAS; i++) {
    gate_case_t *e = &enums[i];
    e->shape = i < NPLAIN ? &k_shapes[i] : &k_bias_shapes[i - NPLAIN];
    e->epilogue = i < NPLAIN ? GT_EPI_NONE : GT_EPI_BIAS;
    snprintf(e->name, sizeof e->name, "enumerate_keeps_one:%s%s", e->epilogue ? "bias_" : "",
             e->shape->name);
    t[n++] = (struct CMUnitTest){e->name, test_enumerate_keeps_one, NULL, NULL, e};
  }
  t[n++] = (struct CMUnitTest){"multicast_listed_only_where_the_plain_grid_leaves_sms_idle",
                               test_multicast_prune, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"run_refuses_misaligned_operands", test_run_refuses_misaligned,
                               NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"run_refuses_a_missing_bias", test_run_refuses_missing_bias, NULL,
                               NULL, NULL};
  t[n++] = (struct CMUnitTest){"splitk_is_bitwise_reproducible", test_splitk_reproducible, NULL,
                               NULL, NULL};
  t[n++] = (struct CMUnitTest){"run_is_graph_capturable", test_run_capturable, NULL, NULL, NULL};
  return _cmocka_run_group_tests("gpu_kernels", t, n, NULL, NULL);
}
