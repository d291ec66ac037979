/* The "testonly" host provider: planted bad candidates that prove the harness catches what it
 * claims to catch. Never enabled by accident: init() refuses unless GEMMTUNE_TEST_PROVIDERS=1.
 *
 *   testonly_wrong  sums only the first ceil(k/8) products and scales by k/ceil(k/8): the right
 *                   magnitude, much faster than any correct instance, wrong. Only the gate can
 *                   reject it; its time would win any race.
 *   testonly_stale  correct on its first run, afterwards copies that first output again: passes a
 *                   check that reuses the inputs it was warmed on, fails one on fresh inputs.
 *   testonly_fault  run() fails with GT_ERR_DEVICE "planted fault".
 * For problems whose epilogue has a bias (bias, bias_relu, bias_gelu), and only for those, two
 * that get everything right but the bias, so only a gate that feeds a bias and checks it catches
 * them:
 *   testonly_nobias   computes act(alpha*op(A)op(B) + beta*C) correctly and drops the bias.
 *   testonly_twobias  adds the bias twice: act(alpha*op(A)op(B) + beta*C + 2*bias).
 * For fp8 keys (an fp8 A or B), and only for those, one correct instance and five that get one
 * thing about the scales wrong, each a mistake that gives finite, plausible, wrong results:
 *   testonly_f8_exact    dequantizes as the key says (every scale mode, D's scale and amax):
 *                        the control, which must pass.
 *   testonly_f8_noscaleb ignores scale_b (uses B as stored).
 *   testonly_f8_rowcol   applies A's per-row factors by the column of D (factor of row j mod m
 *                        for D(i,j)), the row/column mix-up of an outer-vector epilogue; listed
 *                        where A's scale has a factor per row (outer_f32 and the block modes).
 *   testonly_f8_ksplit   splits K in two at a point inside a 128 block and scales each part by
 *                        the factors of the block that part starts in; listed where a scale is
 *                        blockwise (blk1x128_f32, blk128x128_f32) and k > 128.
 *   testonly_f8_blkorder reads the block arrays transposed: a 1x128 array K-block-major (the
 *                        factors of one row of op(A) / column of op(B) contiguous), a 128x128
 *                        array outer-block-major, the opposite of cuBLASLt's layouts (gt_scale.h;
 *                        gemmtune's reference read 1x128 B and 128x128 A arrays so once); listed
 *                        where a block array has more than one K block and more than one entry
 *                        across (a row or column for 1x128, a 128-block of them for 128x128).
 *   testonly_f8_blkunpadded  reads a 128x128 array with a K-block stride of ceil(k/128) instead
 *                        of cuBLASLt's, rounded up to a multiple of 4; listed where that differs
 *                        (ceil(k/128) not a multiple of 4) and the array has more than one
 *                        128-block across.
 *   testonly_f8_amaxscaled  D right, but amax_d taken after D's scale instead of before it;
 *                        listed where the key has an amax output and a D scale.
 * With GEMMTUNE_TEST_PROVIDERS=all, two more that only an isolated worker survives
 * (`gemmtune tune --isolate`): they prove the supervisor records them and carries on.
 *   testonly_crash  run() raises SIGSEGV, like a kernel launch that corrupts the process.
 *   testonly_hang   run() never returns, like a kernel that never finishes.
 * With GEMMTUNE_TEST_PROVIDERS=widen, instead of all of the above, a space whose candidates gain
 * 1% per widening of the search (gt_search.h), to prove its stopping rules:
 *   testonly_widen_sG_I  returns exactly 300 us x 0.99^G after it was called, having written
 *                   nothing (so the gate rejects it: only its quick-pass time matters). The
 *                   default space holds group 0 (8 candidates); the full space (exhaustive) adds
 *                   groups 1..5 of 8 x 2^(G-1), the sizes of the search's widenings with
 *                   --widen-step 8, so each widening races one group and gains 1%. Short and
 *                   timed to a deadline, its times stay exact on a loaded machine; a group of 8
 *                   makes the best of each widening robust to the odd late one. Use a problem
 *                   whose baseline takes well over 300 us.
 *
 * Types as the cpu provider: f32, bf16 or f16 for all of A, B, C, D; f32 compute and scale. The
 * first five need no epilogue; the bias pair applies the problem's activation as the cpu
 * provider does (fp32, GELU the tanh approximation). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/gt_dtype.h"
#include "gt_provider.h"
#include "gt_reference.h"

extern const gt_provider_t gt_provider_testonly;

typedef enum to_kind {
  TO_WRONG = 1,
  TO_STALE,
  TO_FAULT,
  TO_CRASH,
  TO_HANG,
  TO_NOBIAS,
  TO_TWOBIAS,
  TO_F8_EXACT,
  TO_F8_NOSCALE_B,
  TO_F8_ROWCOL,
  TO_F8_KSPLIT,
  TO_F8_BLKORDER,
  TO_F8_BLKPAD,
  TO_F8_AMAX,
  TO__LAST = TO_F8_AMAX,
  TO_WIDEN /* its own space, named by group and index (widen_*) */
} to_kind_t;

/* The widening family: group 0 is the default space, groups 1..WIDEN_GROUPS the full space's. */
enum { WIDEN_GROUPS = 5, WIDEN_STEP = 8 };
static const double k_widen_us = 300.0, k_widen_gain = 0.99;

static const char *const k_names[] = {[TO_WRONG] = "testonly_wrong", [TO_STALE] = "testonly_stale",
                                      [TO_FAULT] = "testonly_fault", [TO_CRASH] = "testonly_crash",
                                      [TO_HANG] = "testonly_hang", [TO_NOBIAS] = "testonly_nobias",
                                      [TO_TWOBIAS] = "testonly_twobias",
                                      [TO_F8_EXACT] = "testonly_f8_exact",
                                      [TO_F8_NOSCALE_B] = "testonly_f8_noscaleb",
                                      [TO_F8_ROWCOL] = "testonly_f8_rowcol",
                                      [TO_F8_KSPLIT] = "testonly_f8_ksplit",
                                      [TO_F8_BLKORDER] = "testonly_f8_blkorder",
                                      [TO_F8_BLKPAD] = "testonly_f8_blkunpadded",
                                      [TO_F8_AMAX] = "testonly_f8_amaxscaled"};

static gt_status_t to_init(void) {
  const char *e = getenv("GEMMTUNE_TEST_PROVIDERS");
  if (!e || (strcmp(e, "1") != 0 && strcmp(e, "all") != 0 && strcmp(e, "widen") != 0))
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "set GEMMTUNE_TEST_PROVIDERS=1 to enable planted test candidates");
  return GT_OK;
}

/* Whether the widening family is what this process plants (GEMMTUNE_TEST_PROVIDERS=widen). */
static bool widen_mode(void) {
  const char *e = getenv("GEMMTUNE_TEST_PROVIDERS");
  return e && strcmp(e, "widen") == 0;
}

/* Whether kind k exists in this process: crash and hang only when asked for by
 * GEMMTUNE_TEST_PROVIDERS=all; none of the planted faults with =widen. */
static bool to_enabled(to_kind_t k) {
  if (widen_mode()) return k == TO_WIDEN;
  if (k == TO_WIDEN) return false;
  if (k != TO_CRASH && k != TO_HANG) return true;
  const char *e = getenv("GEMMTUNE_TEST_PROVIDERS");
  return e && strcmp(e, "all") == 0;
}

static bool is_bias_kind(to_kind_t k) { return k == TO_NOBIAS || k == TO_TWOBIAS; }

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

static bool is_f8_kind(to_kind_t k) { return k >= TO_F8_EXACT && k <= TO_F8_AMAX; }
static bool is_f8_key(const gt_problem_t *p) {
  return gt_dtype_is_fp8(p->a_type) || gt_dtype_is_fp8(p->b_type);
}
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Entries across a block array of mode md over `outer` rows of op(A) / columns of op(B): one
 * per row or column for 1x128, one per 128 of them for 128x128 (0: not a block mode). */
static int64_t block_across(gt_scale_mode_t md, int64_t outer) {
  return md == GT_SCALE_BLK1X128 ? outer
         : md == GT_SCALE_BLK128X128 ? ceil_div(outer, GT_SCALE_BLOCK) : 0;
}

/* Whether reading an operand's array of mode md transposed (blkorder) or unpadded (blkpad)
 * reads other factors than cuBLASLt's layout. */
static bool blkorder_differs(gt_scale_mode_t md, int64_t outer, int64_t k) {
  return block_across(md, outer) > 1 && k > GT_SCALE_BLOCK;
}
static bool blkpad_differs(gt_scale_mode_t md, int64_t outer, int64_t k) {
  return md == GT_SCALE_BLK128X128 &&
         ceil_div(k, GT_SCALE_BLOCK) % GT_SCALE_BLK_STRIDE_ALIGN != 0 && block_across(md, outer) > 1;
}

/* The factor that planted instance `kind` reads for element (i, q) of operand which: the one
 * cuBLASLt's layout puts there, except for the two layout mistakes. */
static int64_t f8_scale_index(to_kind_t kind, gt_scale_mode_t md, char which, int64_t m,
                              int64_t n, int64_t k, int64_t i, int64_t q) {
  const int64_t outer = which == 'A' ? m : n, nkb = ceil_div(k, GT_SCALE_BLOCK);
  const int64_t kb = q / GT_SCALE_BLOCK, ib = i / GT_SCALE_BLOCK;
  if (kind == TO_F8_BLKORDER && md == GT_SCALE_BLK1X128) return kb + i * nkb;
  if (kind == TO_F8_BLKORDER && md == GT_SCALE_BLK128X128)
    return ib + kb * ceil_div(outer, GT_SCALE_BLOCK);
  if (kind == TO_F8_BLKPAD && md == GT_SCALE_BLK128X128) return kb + ib * nkb;
  return gt_scale_mode_index(md, which, m, n, k, i, q);
}

/* Whether k is listed for p: the bias pair only where there is a bias to get wrong, the fp8
 * family only for fp8 keys, each of its faults only where the key has what it gets wrong. */
static bool to_listed(to_kind_t k, const gt_problem_t *p) {
  if (!to_enabled(k)) return false;
  if (is_bias_kind(k)) return epi_has_bias(p->epilogue);
  if (!is_f8_kind(k)) return true;
  if (!is_f8_key(p)) return false;
  switch (k) {
    case TO_F8_NOSCALE_B: return p->scale_b != GT_SCALE_NONE;
    case TO_F8_ROWCOL: return p->scale_a == GT_SCALE_OUTER || gt_scale_mode_is_block(p->scale_a);
    case TO_F8_KSPLIT:
      return (gt_scale_mode_is_block(p->scale_a) || gt_scale_mode_is_block(p->scale_b)) && p->k > GT_SCALE_BLOCK;
    case TO_F8_BLKORDER:
      return blkorder_differs(p->scale_a, p->m, p->k) || blkorder_differs(p->scale_b, p->n, p->k);
    case TO_F8_BLKPAD:
      return blkpad_differs(p->scale_a, p->m, p->k) || blkpad_differs(p->scale_b, p->n, p->k);
    case TO_F8_AMAX: return p->amax_d && p->scale_d;
    default: return true;
  }
}

static bool f8_supports(const gt_problem_t *p, char *why, size_t cap) {
  const gt_dtype_t d = p->d_type;
  if (!is_f8_key(p) || p->c_type != d ||
      !(d == GT_DT_F32 || d == GT_DT_BF16 || d == GT_DT_F16 || gt_dtype_is_fp8(d))) {
    snprintf(why, cap, "types a=%s b=%s d=%s not implemented by the fp8 testonly instances",
             gt_dtype_name(p->a_type), gt_dtype_name(p->b_type), gt_dtype_name(d));
    return false;
  }
  if (p->compute != GT_COMPUTE_F32 || p->scale_type != GT_DT_F32 ||
      (p->epilogue != GT_EPI_NONE && p->epilogue != GT_EPI_BIAS)) {
    snprintf(why, cap, "fp8 testonly instances need f32 compute and scale, no epilogue or bias");
    return false;
  }
  return true;
}

static bool to_supports(to_kind_t k, const gt_problem_t *p, char *why, size_t cap) {
  if (is_f8_kind(k)) return f8_supports(p, why, cap);
  gt_dtype_t t = p->a_type;
  bool type_ok = (t == GT_DT_F32 || t == GT_DT_BF16 || t == GT_DT_F16) && p->b_type == t &&
                 p->c_type == t && p->d_type == t;
  if (!type_ok) {
    snprintf(why, cap, "types a=%s d=%s not implemented by testonly instances (f32, bf16, f16)",
             gt_dtype_name(p->a_type), gt_dtype_name(p->d_type));
    return false;
  }
  if (is_bias_kind(k)) {
    if (p->compute != GT_COMPUTE_F32 || p->scale_type != GT_DT_F32 || !epi_has_bias(p->epilogue)) {
      snprintf(why, cap, "%s needs f32 compute and scale and a bias epilogue", k_names[k]);
      return false;
    }
    return true;
  }
  if (p->compute != GT_COMPUTE_F32 || p->scale_type != GT_DT_F32 || p->epilogue != GT_EPI_NONE) {
    snprintf(why, cap, "testonly instances need f32 compute and scale and no epilogue");
    return false;
  }
  return true;
}

static void to_make(to_kind_t k, gt_candidate_t *out) {
  memset(out, 0, sizeof *out);
  out->provider = &gt_provider_testonly;
  strcpy(out->name, k_names[k]);
  out->blob[0] = (unsigned char)k;
}

static void widen_make(int group, int idx, gt_candidate_t *out) {
  memset(out, 0, sizeof *out);
  out->provider = &gt_provider_testonly;
  snprintf(out->name, sizeof out->name, "testonly_widen_s%d_%d", group, idx);
  out->blob[0] = (unsigned char)TO_WIDEN;
  out->blob[1] = (unsigned char)group;
  memcpy(out->blob + 2, &idx, sizeof idx);
}

static int widen_group_size(int group) { return group == 0 ? WIDEN_STEP : WIDEN_STEP << (group - 1); }

/* The widening family: group 0, and with the full space groups 1..WIDEN_GROUPS. */
static gt_status_t widen_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o,
                                   gt_cand_list_t *out) {
  char why[GT_REASON_MAX];
  const bool ok = to_supports(TO_WIDEN, p, why, sizeof why);
  const int groups = o && o->exhaustive ? WIDEN_GROUPS : 0;
  for (int g = 0; g <= groups; g++)
    for (int i = 0; i < widen_group_size(g); i++) {
      gt_candidate_t c;
      widen_make(g, i, &c);
      if (!ok) c.excluded = true, snprintf(c.reason, sizeof c.reason, "%s", why);
      gt_status_t s = gt_cand_list_push(out, &c);
      if (s != GT_OK) return s;
      if (!ok) return GT_OK; /* one exclusion says it for the family */
    }
  return GT_OK;
}

static gt_status_t to_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o,
                                gt_cand_list_t *out) {
  char why[GT_REASON_MAX];
  if (widen_mode()) return widen_enumerate(p, o, out);
  for (int k = TO_WRONG; k <= TO__LAST; k++) {
    if (!to_listed((to_kind_t)k, p)) continue;
    gt_candidate_t c;
    to_make((to_kind_t)k, &c);
    if (!to_supports((to_kind_t)k, p, why, sizeof why)) {
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "%s", why);
    }
    gt_status_t s = gt_cand_list_push(out, &c);
    if (s != GT_OK) return s;
  }
  return GT_OK;
}

static gt_status_t to_from_name(const char *name, const gt_problem_t *p, gt_candidate_t *out) {
  int g, i, len = 0;
  if (widen_mode() && sscanf(name, "testonly_widen_s%d_%d%n", &g, &i, &len) == 2 &&
      name[len] == '\0' && g >= 0 && g <= WIDEN_GROUPS && i >= 0 && i < widen_group_size(g)) {
    char why[GT_REASON_MAX];
    if (!to_supports(TO_WIDEN, p, why, sizeof why))
      return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
    widen_make(g, i, out);
    return GT_OK;
  }
  for (int k = TO_WRONG; k <= TO__LAST; k++)
    if (to_enabled((to_kind_t)k) && strcmp(name, k_names[k]) == 0) {
      char why[GT_REASON_MAX];
      if (!to_supports((to_kind_t)k, p, why, sizeof why))
        return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
      to_make((to_kind_t)k, out);
      return GT_OK;
    }
  return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a testonly instance", name);
}

typedef struct to_state {
  to_kind_t kind;
  double widen_us; /* TO_WIDEN: how long each call takes */
  gt_problem_t p;
  float *acc;        /* m column sums */
  void *cache;       /* stale: the first output, the whole D footprint */
  size_t cache_bytes;
  bool cached;
} to_state_t;

static size_t d_footprint_bytes(const gt_problem_t *p) {
  size_t elems = (size_t)(p->ldc * p->n) + (size_t)((p->batch - 1) * p->stride_c);
  return elems * gt_dtype_size(p->d_type);
}

static gt_status_t to_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                              size_t *ws_needed) {
  char why[GT_REASON_MAX];
  const to_kind_t kind = (to_kind_t)c->blob[0];
  if ((kind < TO_WRONG || kind > TO__LAST) && kind != TO_WIDEN)
    return gt_err_set(GT_ERR_USAGE, "%s: not a testonly candidate", c->name);
  if (!to_supports(kind, p, why, sizeof why))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", c->name, why);
  to_state_t *s = calloc(1, sizeof *s);
  if (!s) return gt_err_set(GT_ERR_NOMEM, "%s: no memory", c->name);
  s->kind = kind;
  s->p = *p;
  s->widen_us = k_widen_us * pow(k_widen_gain, c->blob[1]);
  s->acc = malloc((size_t)p->m * sizeof(float));
  if (s->kind == TO_STALE) {
    s->cache_bytes = d_footprint_bytes(p);
    s->cache = malloc(s->cache_bytes);
  }
  if (!s->acc || (s->kind == TO_STALE && !s->cache)) {
    free(s->acc), free(s->cache), free(s);
    return gt_err_set(GT_ERR_NOMEM, "%s: no memory for scratch", c->name);
  }
  *state = s;
  if (ws_needed) *ws_needed = 0;
  return GT_OK;
}

static float ldv(const void *p, gt_dtype_t dt, size_t i) {
  switch (dt) {
    case GT_DT_F32: return ((const float *)p)[i];
    case GT_DT_BF16: return gt_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return gt_f16_to_f32(((const uint16_t *)p)[i]);
  }
}

static float gelu_f32(float x) {
  const float c = 0.7978845608028654f; /* sqrt(2/pi) */
  return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

/* The problem's activation of v (its bias already added or, for the planted pair, not). */
static float act(gt_epilogue_t e, float v) {
  switch (e) {
    case GT_EPI_RELU:
    case GT_EPI_BIAS_RELU: return v > 0.0f ? v : 0.0f;
    case GT_EPI_GELU:
    case GT_EPI_BIAS_GELU: return gelu_f32(v);
    default: return v;
  }
}

/* D = act(alpha * (k / kk) * sum_{q < kk} op(A)(:,q) op(B)(q,:) + beta * C + bias_times * bias):
 * correct when kk == k and bias_times is 1 (or the problem has no bias). */
static void to_gemm(to_state_t *s, const gt_operands_t *o, int64_t kk, float bias_times) {
  const gt_problem_t *p = &s->p;
  const gt_dtype_t dt = p->a_type;
  const float alpha = *(const float *)o->alpha;
  const float beta = p->beta_zero ? 0.0f : *(const float *)o->beta;
  const float scale = (float)p->k / (float)kk;
  const bool bias = epi_has_bias(p->epilogue);
  const gt_dtype_t bias_t = gt_reference_bias_type(p);
  for (int64_t b = 0; b < p->batch; b++) {
    const size_t oa = (size_t)(b * p->stride_a), ob = (size_t)(b * p->stride_b),
                 oc = (size_t)(b * p->stride_c);
    for (int64_t j = 0; j < p->n; j++) {
      for (int64_t i = 0; i < p->m; i++) s->acc[i] = 0.0f;
      for (int64_t q = 0; q < kk; q++) {
        size_t bi = p->transb == GT_TRANS_N ? (size_t)(q + j * p->ldb) : (size_t)(j + q * p->ldb);
        float bv = ldv(o->B, dt, ob + bi);
        for (int64_t i = 0; i < p->m; i++) {
          size_t ai = p->transa == GT_TRANS_N ? (size_t)(i + q * p->lda) : (size_t)(q + i * p->lda);
          s->acc[i] += ldv(o->A, dt, oa + ai) * bv;
        }
      }
      for (int64_t i = 0; i < p->m; i++) {
        size_t di = oc + (size_t)(i + j * p->ldc);
        float v = alpha * scale * s->acc[i];
        if (!p->beta_zero) v += beta * ldv(o->C, dt, di);
        if (bias) v += bias_times * ldv(o->bias, bias_t, (size_t)i);
        gt_store_elem(o->D, dt, di, act(p->epilogue, v));
      }
    }
  }
}

/* The fp8 family: D = scale_d * (alpha * sum_q dq(A)(i,q) dq(B)(q,j) + beta*C + bias), summed
 * in fp64, dq the dequantized operand, with the one mistake of kind s->kind; amax_d written. */
static void f8_gemm(to_state_t *s, const gt_operands_t *o) {
  const gt_problem_t *p = &s->p;
  const int64_t m = p->m, n = p->n, k = p->k;
  const double alpha = *(const float *)o->alpha;
  const double beta = p->beta_zero ? 0.0 : *(const float *)o->beta;
  const bool bias = epi_has_bias(p->epilogue);
  const gt_dtype_t bias_t = gt_reference_bias_type(p);
  /* ksplit: the second part starts 64 into a 128 block, never on a block edge. */
  const int64_t split = s->kind == TO_F8_KSPLIT ? (k / 2) / GT_SCALE_BLOCK * GT_SCALE_BLOCK + 64 : k;
  double amax = 0.0;
  for (int64_t b = 0; b < p->batch; b++) {
    const size_t oa = (size_t)(b * p->stride_a), ob = (size_t)(b * p->stride_b),
                 oc = (size_t)(b * p->stride_c);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        /* The row whose A factors this element uses: its own, or (rowcol) its column's. */
        const int64_t ia = s->kind == TO_F8_ROWCOL ? j % m : i;
        double acc = 0.0;
        for (int64_t q = 0; q < k; q++) {
          const int64_t qs = s->kind == TO_F8_KSPLIT ? (q < split ? 0 : split) : q;
          size_t ai = p->transa == GT_TRANS_N ? (size_t)(i + q * p->lda) : (size_t)(q + i * p->lda);
          size_t bi = p->transb == GT_TRANS_N ? (size_t)(q + j * p->ldb) : (size_t)(j + q * p->ldb);
          double av = gt_load_elem(o->A, p->a_type, oa + ai);
          double bv = gt_load_elem(o->B, p->b_type, ob + bi);
          if (p->scale_a != GT_SCALE_NONE)
            av *= o->scale_a[f8_scale_index(s->kind, p->scale_a, 'A', m, n, k, ia, qs)];
          if (p->scale_b != GT_SCALE_NONE && s->kind != TO_F8_NOSCALE_B)
            bv *= o->scale_b[f8_scale_index(s->kind, p->scale_b, 'B', m, n, k, j, qs)];
          acc += av * bv;
        }
        size_t di = oc + (size_t)(i + j * p->ldc);
        double v = alpha * acc;
        if (!p->beta_zero) v += beta * gt_load_elem(o->C, p->c_type, di);
        if (bias) v += gt_load_elem(o->bias, bias_t, (size_t)i);
        if (s->kind != TO_F8_AMAX) amax = fmax(amax, fabs(v));
        if (p->scale_d) v *= (double)o->scale_d[0];
        if (s->kind == TO_F8_AMAX) amax = fmax(amax, fabs(v));
        gt_store_elem(o->D, p->d_type, di, v);
      }
  }
  if (p->amax_d && o->amax_d) o->amax_d[0] = (float)amax;
}

static double mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

/* TO_WIDEN: nothing computed, returned exactly widen_us after the call began (a deadline, so
 * being descheduled while waiting costs nothing unless it outlasts the deadline). */
static gt_status_t widen_run(const to_state_t *s) {
  const double until = mono_us() + s->widen_us;
  while (mono_us() < until) {
  }
  return GT_OK;
}

static gt_status_t to_run(void *state, const gt_operands_t *ops, void *stream) {
  to_state_t *s = state;
  if (epi_has_bias(s->p.epilogue) && !ops->bias)
    return gt_err_set(GT_ERR_USAGE, "testonly run: epilogue %s needs a bias vector",
                      gt_epilogue_name(s->p.epilogue));
  switch (s->kind) {
    case TO_WRONG: to_gemm(s, ops, (s->p.k + 7) / 8, 1.0f); return GT_OK;
    case TO_STALE:
      if (s->cached) {
        memcpy(ops->D, s->cache, s->cache_bytes);
      } else {
        to_gemm(s, ops, s->p.k, 1.0f);
        memcpy(s->cache, ops->D, s->cache_bytes);
        s->cached = true;
      }
      return GT_OK;
    case TO_FAULT: return gt_err_set(GT_ERR_DEVICE, "planted fault");
    case TO_CRASH: raise(SIGSEGV); return gt_err_set(GT_ERR_INTERNAL, "planted crash survived");
    case TO_HANG:
      for (;;) pause();
    case TO_NOBIAS: to_gemm(s, ops, s->p.k, 0.0f); return GT_OK;
    case TO_TWOBIAS: to_gemm(s, ops, s->p.k, 2.0f); return GT_OK;
    case TO_WIDEN: return widen_run(s);
    case TO_F8_EXACT:
    case TO_F8_NOSCALE_B:
    case TO_F8_ROWCOL:
    case TO_F8_KSPLIT:
    case TO_F8_BLKORDER:
    case TO_F8_BLKPAD:
    case TO_F8_AMAX:
      if ((s->p.scale_a != GT_SCALE_NONE && !ops->scale_a) ||
          (s->p.scale_b != GT_SCALE_NONE && !ops->scale_b) || (s->p.scale_d && !ops->scale_d))
        return gt_err_set(GT_ERR_USAGE, "testonly run: the key's fp8 scales are not given");
      f8_gemm(s, ops);
      return GT_OK;
  }
  return gt_err_set(GT_ERR_INTERNAL, "testonly: bad candidate kind %d", (int)s->kind);
}

static void to_release(void *state) {
  to_state_t *s = state;
  if (!s) return;
  free(s->acc);
  free(s->cache);
  free(s);
}

const gt_provider_t gt_provider_testonly = {
    .api_version = GT_PROVIDER_API_VERSION,
    .name = "testonly",
    .description = "planted wrong/stale/faulting/bias-dropping host candidates "
                   "(GEMMTUNE_TEST_PROVIDERS=1)",
    .backend = GT_BACKEND_HOST,
    .init = to_init,
    .lib_version = NULL,
    .enumerate = to_enumerate,
    .from_name = to_from_name,
    .prepare = to_prepare,
    .run = to_run,
    .release = to_release,
};
