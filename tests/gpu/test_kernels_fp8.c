/* Every own fp8 instance (the wgf8 and dtf8 families) computes D = alpha * sa * sb * A^T B
 * (+ beta * C) (+ epilogue) within its error bound of an fp64 reference over the dequantized fp8
 * operands, on nn.Linear shapes (A the weights, m = out features; B the tokens, n = 1..64): K not
 * a multiple of 16 or of any tile (TMA zero-fills the tail), M not a multiple of any tile, padded
 * leading dimensions, beta != 0, with no scales, tensorwise scales, per-row (per-m) and
 * per-column (per-n) outer-vector scales and mixed; bf16 D on every shape, f16 and f32 D on every
 * third; the epilogue twins on bias (every other shape) and bias_gelu (every fourth); one shape
 * of same-signed operands and K = 8192, where nothing cancels and an accumulator that keeps fewer
 * bits than fp32 over the whole K shows its loss (the fp8 grouped kernels lost 0.8-1.7% on such
 * sums of 1024 products before they promoted; cuBLASLt promotes unless asked not to). Every
 * output element is checked (D is poisoned with NaN before each launch, so an element a kernel
 * does not write fails). Calls without fast accumulation (cuBLASLt's and torch's default) run
 * the promoted path (gt_kernel_args.h's f8_promote) of the instances that have one, on every
 * shape, and fast_accum calls their plain path on the tensorwise scales (the twins: on no
 * scales); a wgf8 tile too wide to promote runs fast_accum calls only, and not the same-signed
 * shape. There, each promoted call is repeated with fast_accum as a control: the wgf8 instances
 * must then exceed the bound, or the case could not tell a kernel that does not promote. Also:
 * gt_kernels_fp8_select refuses what an instance does not take, the launch refuses misaligned
 * operands, a missing bias, a missing scale pointer and a call without fast accumulation on a
 * tile that cannot promote, and split-K (reduced in a cluster) is bitwise reproducible.
 *
 * Error bound per element, with S = |alpha sa sb| sum_k |a_k b_k|: 2^-9 S for the accumulation
 * (Hopper's fp8 wgmma accumulates with fewer bits than fp32; a wrong layout gives errors of the
 * size of the result, about sqrt(k) / k of S larger than the bound at k >= 1000) plus D's rounding
 * (2^-8 |ref| for bf16, 2^-11 for f16, 2^-22 for f32) plus 1e-6 absolute.
 *
 * GT_FP8_GATE_FAMILY=wgf8 or dtf8 restricts the gate cases to that family's instances, and an
 * argument keeps only the tests whose name contains it (gate_all, gate_twins, refuses), to run a
 * part of the gate (the whole takes about a minute on an H100).
 *
 * Hang safety: wgf8 bounds every barrier wait (gt_wgf8.cuh traps after about 4 s; dtf8 has no
 * barrier but __syncthreads), and the session script runs this under `timeout`. Exits 77 without a
 * CUDA device or without an sm_90 one. Launches the instances through gt_kernels_fp8_launch, so it
 * needs no fp8 key fields. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "core/gt_dtype.h"
#include "kernels/gt_kernel_name.h"
#include "providers/cuda/gt_kernels_fp8.h"
#include "providers/gt_reference.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) fail_msg("%s: %s (%s:%d)", #x, cudaGetErrorString(e_), __FILE__, \
                                    __LINE__);                                             \
  } while (0)

/* ---- the case table ---------------------------------------------------------------------------- */

typedef struct shape_case {
  const char *name;
  int64_t m, n, k;
  int64_t pad_a, pad_b, pad_c; /* added to the tight leading dimensions (lda, ldb: to 16) */
  bool beta;                   /* beta != 0: C is read */
  bool same_sign;              /* every a_k b_k >= 0: nothing cancels in the sum over K */
} shape_case_t;

static const shape_case_t k_shapes[] = {
    {"t1_out4096_in4096", 4096, 1, 4096, 0, 0, 0, false, false},
    {"t2_out4095_in4112", 4095, 2, 4112, 0, 0, 0, false, false},
    {"t3_out1000_in1001", 1000, 3, 1001, 0, 0, 0, false, false},
    {"t7_out4096_in1040_beta", 4096, 7, 1040, 16, 0, 5, true, false},
    {"t8_out1024_in8192", 1024, 8, 8192, 0, 0, 0, false, false},
    {"t16_out4095_in4096_pad", 4095, 16, 4096, 32, 48, 3, false, false},
    {"t31_out1000_in4096", 1000, 31, 4096, 0, 0, 0, false, false},
    {"t33_out2048_in1001_beta", 2048, 33, 1001, 0, 16, 0, true, false},
    {"t48_out1000_in2048", 1000, 48, 2048, 0, 0, 0, false, false},
    {"t64_out4095_in1001", 4095, 64, 1001, 0, 0, 0, false, false},
    {"t64_out1024_in4096", 1024, 64, 4096, 0, 0, 1, false, false},
    {"t17_out72_in130", 72, 17, 130, 0, 0, 0, false, false},
    /* more weight tiles than resident CTAs: each persistent CTA (g1) takes several, its ring
     * running across the tile boundaries; a ragged last tile */
    {"t16_out20000_in1040_tiles_per_cta", 20000, 16, 1040, 0, 0, 0, false, false},
    {"t64_out12001_in1024_tiles_per_cta_beta", 12001, 64, 1024, 0, 0, 0, true, false},
    /* sums of 8192 same-signed products: an accumulator that keeps fewer bits than fp32 over
     * the whole K (no promotion) loses a share of the sum that grows with K, where cancelling
     * sums hide it */
    {"t8_out1024_in8192_same_sign", 1024, 8, 8192, 0, 0, 0, false, true},
};

/* Scale modes (a: per m, b: per n when outer). */
static const struct {
  const char *name;
  int ma, mb;
} k_scales[] = {{"noscale", 0, 0}, {"tensor", 1, 1}, {"outer", 2, 2}, {"tensor_outer", 1, 2},
                {"outer_none", 2, 0}};

/* The twins' keys: the bias epilogue on every shape, bias_gelu on a few. */
static const struct {
  gt_epilogue_t epi;
  int every; /* run on every every-th shape */
} k_epis[] = {{GT_EPI_BIAS, 2}, {GT_EPI_BIAS_GELU, 4}};

/* ---- operands ---------------------------------------------------------------------------------- */

static uint32_t g_rng = 0x12345678u;
static float frand(void) { /* uniform in [-1, 1) */
  g_rng = g_rng * 1664525u + 1013904223u;
  return (float)((g_rng >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

static uint8_t to_f8(gt_dtype_t t, float f) {
  return t == GT_DT_F8E4M3FN ? gt_f32_to_e4m3fn(f) : gt_f32_to_e5m2(f);
}
static double from_f8(gt_dtype_t t, uint8_t v) {
  return t == GT_DT_F8E4M3FN ? gt_e4m3fn_to_f32(v) : gt_e5m2_to_f32(v);
}

/* D's rounding share of the bound. */
static double d_eps(gt_dtype_t t) {
  return t == GT_DT_BF16 ? 1.0 / 256 : t == GT_DT_F16 ? 1.0 / 2048 : 1.0 / 4194304;
}

typedef struct host_ops {
  const shape_case_t *sc;
  int64_t lda, ldb, ldc;
  gt_dtype_t ta, tb;
  uint8_t *A, *B;   /* fp8 bytes */
  double *C;        /* C's values (rounded to D's type when uploaded) */
  double *bias;     /* m */
  float *sa, *sb;   /* m and n scales (mode 1 uses [0]) */
} host_ops_t;

static void make_host(host_ops_t *h, const shape_case_t *sc, gt_dtype_t ta, gt_dtype_t tb) {
  memset(h, 0, sizeof *h);
  h->sc = sc;
  h->ta = ta, h->tb = tb;
  h->lda = (sc->k + 15) / 16 * 16 + sc->pad_a;
  h->ldb = (sc->k + 15) / 16 * 16 + sc->pad_b;
  h->ldc = sc->m + sc->pad_c;
  h->A = calloc((size_t)(h->lda * sc->m), 1);
  h->B = calloc((size_t)(h->ldb * sc->n), 1);
  h->C = calloc((size_t)(h->ldc * sc->n), sizeof(double));
  h->bias = calloc((size_t)sc->m, sizeof(double));
  h->sa = calloc((size_t)sc->m, sizeof(float));
  h->sb = calloc((size_t)sc->n, sizeof(float));
  /* Values that use fp8's range: weights around 1, tokens a few units (e5m2 too). The padding
   * past k holds non-zero bytes so a kernel that reads it fails. */
  for (int64_t i = 0; i < sc->m; i++)
    for (int64_t kk = 0; kk < h->lda; kk++) {
      const float v = sc->same_sign ? fabsf(frand()) : frand();
      h->A[i * h->lda + kk] = kk < sc->k ? to_f8(ta, 1.5f * v) : to_f8(ta, 7.0f);
    }
  for (int64_t j = 0; j < sc->n; j++)
    for (int64_t kk = 0; kk < h->ldb; kk++) {
      const float v = sc->same_sign ? fabsf(frand()) : frand();
      h->B[j * h->ldb + kk] = kk < sc->k ? to_f8(tb, 4.0f * v) : to_f8(tb, -5.0f);
    }
  for (int64_t i = 0; i < h->ldc * sc->n; i++) h->C[i] = frand();
  for (int64_t i = 0; i < sc->m; i++) {
    h->bias[i] = 2.0 * frand();
    h->sa[i] = 0.5f + 0.1f * (float)(i % 7);
  }
  for (int64_t j = 0; j < sc->n; j++) h->sb[j] = 0.25f + 0.3f * (float)(j % 5);
}

static void free_host(host_ops_t *h) {
  free(h->A), free(h->B), free(h->C), free(h->bias), free(h->sa), free(h->sb);
}

/* The scale-free sums over K, computed once per operand set: sum[j*m + i] = sum_k a_ik b_jk and
 * abs[j*m + i] = sum_k |a_ik b_jk|. */
static void raw_sums(const host_ops_t *h, double *sum, double *abs_) {
  const shape_case_t *sc = h->sc;
  double *ad = malloc(sizeof(double) * (size_t)sc->k);
  double *bd = malloc(sizeof(double) * (size_t)(sc->k * sc->n));
  for (int64_t j = 0; j < sc->n; j++)
    for (int64_t kk = 0; kk < sc->k; kk++) bd[j * sc->k + kk] = from_f8(h->tb, h->B[j * h->ldb + kk]);
  for (int64_t i = 0; i < sc->m; i++) {
    for (int64_t kk = 0; kk < sc->k; kk++) ad[kk] = from_f8(h->ta, h->A[i * h->lda + kk]);
    for (int64_t j = 0; j < sc->n; j++) {
      const double *b = bd + j * sc->k;
      double s = 0, a = 0;
      for (int64_t kk = 0; kk < sc->k; kk++) {
        const double p = ad[kk] * b[kk];
        s += p, a += fabs(p);
      }
      sum[j * sc->m + i] = s;
      abs_[j * sc->m + i] = a;
    }
  }
  free(ad);
  free(bd);
}

/* Reference: ref[j*m + i] = the fp64 result, mag[...] = S (the bound's accumulation term). */
static void reference(const host_ops_t *h, const double *sum, const double *abs_, int ma, int mb,
                      float alpha, float beta, gt_epilogue_t epi, double *ref, double *mag) {
  const shape_case_t *sc = h->sc;
  for (int64_t j = 0; j < sc->n; j++)
    for (int64_t i = 0; i < sc->m; i++) {
      const double sa = ma == 0 ? 1.0 : h->sa[ma == 2 ? i : 0];
      const double sb = mb == 0 ? 1.0 : h->sb[mb == 2 ? j : 0];
      const double f = (double)alpha * sa * sb;
      double v = f * sum[j * sc->m + i];
      if (beta != 0.f) v += beta * h->C[j * h->ldc + i]; /* C as the device holds it */
      if (epi == GT_EPI_BIAS || epi == GT_EPI_BIAS_GELU) v += h->bias[i];
      if (epi == GT_EPI_BIAS_GELU) v = gt_reference_gelu(v);
      ref[j * sc->m + i] = v;
      mag[j * sc->m + i] = fabs(f) * abs_[j * sc->m + i];
    }
}

/* Round a host value to td and back (what the device sees for C and the bias). */
static double round_to(gt_dtype_t td, double v) {
  unsigned char buf[8];
  gt_store_elem(buf, td, 0, v);
  return gt_load_elem(buf, td, 0);
}

/* ---- device buffers ---------------------------------------------------------------------------- */

typedef struct dev_ops {
  void *A, *B, *C, *D, *bias;
  float *sa, *sb;
  size_t d_bytes;
} dev_ops_t;

static void upload(const host_ops_t *h, gt_dtype_t td, dev_ops_t *d) {
  const shape_case_t *sc = h->sc;
  const size_t es = gt_dtype_size(td);
  memset(d, 0, sizeof *d);
  CK(cudaMalloc(&d->A, (size_t)(h->lda * sc->m)));
  CK(cudaMalloc(&d->B, (size_t)(h->ldb * sc->n)));
  d->d_bytes = (size_t)(h->ldc * sc->n) * es;
  CK(cudaMalloc(&d->C, d->d_bytes));
  CK(cudaMalloc(&d->D, d->d_bytes));
  CK(cudaMalloc(&d->bias, (size_t)sc->m * es));
  CK(cudaMalloc((void **)&d->sa, (size_t)sc->m * sizeof(float)));
  CK(cudaMalloc((void **)&d->sb, (size_t)sc->n * sizeof(float)));
  CK(cudaMemcpy(d->A, h->A, (size_t)(h->lda * sc->m), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d->B, h->B, (size_t)(h->ldb * sc->n), cudaMemcpyHostToDevice));
  unsigned char *tmp = malloc(d->d_bytes > (size_t)sc->m * es ? d->d_bytes : (size_t)sc->m * es);
  for (int64_t i = 0; i < h->ldc * sc->n; i++) gt_store_elem(tmp, td, (size_t)i, h->C[i]);
  CK(cudaMemcpy(d->C, tmp, d->d_bytes, cudaMemcpyHostToDevice));
  for (int64_t i = 0; i < sc->m; i++) gt_store_elem(tmp, td, (size_t)i, h->bias[i]);
  CK(cudaMemcpy(d->bias, tmp, (size_t)sc->m * es, cudaMemcpyHostToDevice));
  free(tmp);
  CK(cudaMemcpy(d->sa, h->sa, (size_t)sc->m * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d->sb, h->sb, (size_t)sc->n * sizeof(float), cudaMemcpyHostToDevice));
}

static void free_dev(dev_ops_t *d) {
  cudaFree(d->A), cudaFree(d->B), cudaFree(d->C), cudaFree(d->D), cudaFree(d->bias);
  cudaFree(d->sa), cudaFree(d->sb);
}

static gt_kfp8_call_t make_call(const host_ops_t *h, const dev_ops_t *d, int idx, int ma, int mb,
                                float alpha, float beta, gt_epilogue_t epi, int fast) {
  const gt_kparams_t *kp = &gt_kinstances[idx].params;
  gt_kfp8_call_t c = {.m = h->sc->m, .n = h->sc->n, .k = h->sc->k, .lda = h->lda,
                      .ldb = h->ldb, .ldc = h->ldc, .A = d->A, .B = d->B,
                      .C = beta != 0.f ? d->C : NULL, .D = d->D,
                      .bias = epi != GT_EPI_NONE ? d->bias : NULL, .epilogue = (int)epi,
                      .alpha = alpha, .beta = beta, .scale_a = d->sa, .scale_b = d->sb,
                      .scale_mode_a = ma, .scale_mode_b = mb, .a_type = kp->dtype,
                      .b_type = kp->b_dtype, .d_type = kp->d_dtype, .fast_accum = fast};
  return c;
}

/* Launch instance idx (fast: the call's fast_accum), wait, and compare every element; returns
 * the worst error / bound. probe: report the worst ratio (infinite for a non-finite element)
 * instead of failing on an element beyond its bound. */
static double run_check(int idx, const host_ops_t *h, const dev_ops_t *d, int ma, int mb,
                        float alpha, float beta, gt_epilogue_t epi, int fast, bool probe,
                        const double *ref, const double *mag, unsigned char *got) {
  const gt_kinstance_t *in = &gt_kinstances[idx];
  const gt_dtype_t td = in->params.d_dtype;
  const shape_case_t *sc = h->sc;
  CK(cudaMemset(d->D, 0xff, d->d_bytes)); /* NaN in bf16, f16 and f32 */
  gt_kfp8_call_t c = make_call(h, d, idx, ma, mb, alpha, beta, epi, fast);
  if (gt_kernels_fp8_launch(idx, &c, NULL) != GT_OK) fail_msg("%s: %s", in->name, gt_err_msg());
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess)
    fail_msg("%s on %s: %s (a trap here is a barrier wait that timed out)", in->name, sc->name,
             cudaGetErrorString(e));
  CK(cudaMemcpy(got, d->D, d->d_bytes, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int64_t j = 0; j < sc->n; j++)
    for (int64_t i = 0; i < sc->m; i++) {
      const double r = ref[j * sc->m + i], v = gt_load_elem(got, td, (size_t)(j * h->ldc + i));
      const double bound = mag[j * sc->m + i] / 512.0 + d_eps(td) * fabs(r) + 1e-6;
      const double err = fabs(v - r);
      if (probe && isnan(err)) return INFINITY;
      if (!(err <= bound) && !probe)
        fail_msg("%s on %s (scales %d/%d, epilogue %s%s): D[%lld,%lld] = %.6g, reference %.6g, "
                 "bound %.3g",
                 in->name, sc->name, ma, mb, gt_epilogue_name(epi), fast ? ", fast_accum" : "",
                 (long long)i, (long long)j, v, r, bound);
      if (err / bound > worst) worst = err / bound;
    }
  return worst;
}

/* ---- the gate over every instance ------------------------------------------------------------ */

typedef struct gate_case {
  char name[96];
  const shape_case_t *sc;
  gt_epilogue_t epi; /* GT_EPI_NONE: the plain instances; else the twins */
} gate_case_t;

static const gt_dtype_t k_f8[2] = {GT_DT_F8E4M3FN, GT_DT_F8E5M2};
static const gt_dtype_t k_out[3] = {GT_DT_BF16, GT_DT_F16, GT_DT_F32};

/* Whether instance kp is gated here: an fp8 family, and the one GT_FP8_GATE_FAMILY names when
 * it is set. */
static bool gated(const gt_kparams_t *kp) {
  const char *only = getenv("GT_FP8_GATE_FAMILY");
  return gt_kfamily_is_fp8(kp->family) &&
         (!only || !*only || strcmp(only, gt_kfamily_name(kp->family)) == 0);
}

static void test_gate(void **state) {
  const gate_case_t *g = *state;
  const shape_case_t *sc = g->sc;
  const int64_t mn = sc->m * sc->n;
  double *ref = malloc(sizeof(double) * (size_t)mn), *mag = malloc(sizeof(double) * (size_t)mn);
  double *sum = malloc(sizeof(double) * (size_t)mn), *abs_ = malloc(sizeof(double) * (size_t)mn);
  int ran = 0, fast_runs = 0, skipped = 0;
  double worst = 0, unpromoted_wgf8 = 0, unpromoted_dtf8 = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) {
      /* The operands and their O(mnk) sums once per pair of input types (the sums do not depend
       * on D's type): the host side dominates this test's time. */
      bool any = false;
      for (size_t i = 0; i < gt_kinstance_count; i++) {
        const gt_kparams_t *kp = &gt_kinstances[i].params;
        any |= gated(kp) && kp->dtype == k_f8[a] && kp->b_dtype == k_f8[b] &&
               kp->epilogue == (g->epi != GT_EPI_NONE);
      }
      if (!any) continue;
      host_ops_t h;
      make_host(&h, sc, k_f8[a], k_f8[b]);
      raw_sums(&h, sum, abs_);
      const int64_t nc = h.ldc * sc->n;
      double *c0 = malloc(sizeof(double) * (size_t)nc), *b0 = malloc(sizeof(double) * (size_t)sc->m);
      memcpy(c0, h.C, sizeof(double) * (size_t)nc);
      memcpy(b0, h.bias, sizeof(double) * (size_t)sc->m);
      for (int o = 0; o < 3; o++) {
        /* f16 and f32 D on every third shape: D's type changes only the epilogue's store, and
         * every instance is checked on every shape in bf16 (the launches and the element-wise
         * checks, not the GPU, bound this test's time) */
        if (o > 0 && (sc - k_shapes) % 3 != 0) continue;
        /* the instances of these types and this variant */
        int idx[160], ni = 0;
        for (size_t i = 0; i < gt_kinstance_count; i++) {
          const gt_kparams_t *kp = &gt_kinstances[i].params;
          if (gated(kp) && kp->dtype == k_f8[a] && kp->b_dtype == k_f8[b] &&
              kp->d_dtype == k_out[o] && kp->epilogue == (g->epi != GT_EPI_NONE)) {
            if (ni == (int)NELEM(idx)) fail_msg("more than %d fp8 instances of one type set", ni);
            idx[ni++] = (int)i;
          }
        }
        if (!ni) continue;
        /* C and the bias as the device holds them (rounded to D's type) */
        for (int64_t i = 0; i < nc; i++) h.C[i] = round_to(k_out[o], c0[i]);
        for (int64_t i = 0; i < sc->m; i++) h.bias[i] = round_to(k_out[o], b0[i]);
        dev_ops_t d;
        upload(&h, k_out[o], &d);
        unsigned char *got = malloc(d.d_bytes);
        const float beta = sc->beta ? 0.75f : 0.f, alpha = 1.25f;
        for (size_t s = 0; s < NELEM(k_scales); s++) {
          /* the twins on the scale modes that matter most: none and outer */
          if (g->epi != GT_EPI_NONE && s != 0 && s != 2) continue;
          reference(&h, sum, abs_, k_scales[s].ma, k_scales[s].mb, alpha, beta, g->epi, ref, mag);
          for (int q = 0; q < ni; q++) {
            /* An instance that promotes runs its promoted path (the key without fast
             * accumulation) on every scale mode but one, which runs its fast path (tensorwise;
             * the twins, which run none and outer only: none); one that cannot promote runs
             * fast_accum calls only (it refuses the others), and not on the same-signed shape,
             * whose bound holds for promoted sums only. */
            const gt_kparams_t *kp = &gt_kinstances[idx[q]].params;
            const bool pr = gt_kparams_f8_promotes(kp);
            const int fast = !pr || (g->epi == GT_EPI_NONE ? k_scales[s].ma == 1 &&
                                                                k_scales[s].mb == 1
                                                           : k_scales[s].ma == 0);
            if (fast && sc->same_sign) {
              skipped++;
              continue;
            }
            if (sc->same_sign && pr) {
              /* the control: the same call with fast accumulation, probed (not failed) */
              const double u = run_check(idx[q], &h, &d, k_scales[s].ma, k_scales[s].mb, alpha,
                                         beta, g->epi, 1, true, ref, mag, got);
              double *t = kp->family == GT_KFAM_WGF8 ? &unpromoted_wgf8 : &unpromoted_dtf8;
              if (u > *t) *t = u;
            }
            const double w = run_check(idx[q], &h, &d, k_scales[s].ma, k_scales[s].mb, alpha,
                                       beta, g->epi, fast, false, ref, mag, got);
            if (w > worst) worst = w;
            ran++;
            fast_runs += fast;
          }
        }
        free(got);
        free_dev(&d);
      }
      free(c0);
      free(b0);
      free_host(&h);
    }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("  %s: %d runs (%d fast_accum, %d fast_accum skipped), worst error %.3f of its bound "
         "(%.1f s)\n",
         g->name, ran, fast_runs, skipped, worst,
         (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  assert_true(ran > 0);
  if (sc->same_sign) {
    /* The control: without promotion the same sums lose more than the bound allows (Hopper's fp8
     * wgmma accumulator; 0.8-1.7% at K = 1024 on an H100), so this case can tell a kernel that
     * does not promote. dtf8's mma.sync is reported, not asserted: each of its warps sums a
     * share of K, and its accumulator's width has not been measured. */
    printf("  %s: the same calls with fast_accum (no promotion): worst %.3f of the bound (wgf8), "
           "%.3f (dtf8)\n",
           g->name, unpromoted_wgf8, unpromoted_dtf8);
    if (unpromoted_wgf8 > 0 && unpromoted_wgf8 <= 1.0)
      fail_msg("%s: wgf8 without promotion stays within the bound (%.3f): this case cannot tell "
               "a kernel that does not promote", g->name, unpromoted_wgf8);
  }
  free(ref);
  free(mag);
  free(sum);
  free(abs_);
}

/* ---- refusals and reproducibility ------------------------------------------------------------ */

static int first_instance(gt_kfamily_t fam, gt_dtype_t a, gt_dtype_t b, gt_dtype_t d, bool twin,
                          int min_splits) {
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *kp = &gt_kinstances[i].params;
    if (kp->family == fam && kp->dtype == a && kp->b_dtype == b && kp->d_dtype == d &&
        kp->epilogue == twin && kp->splitk >= min_splits)
      return (int)i;
  }
  return -1;
}

static void test_select(void **state) {
  (void)state;
  char why[192];
  const int f8 = first_instance(GT_KFAM_WGF8, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, false, 1);
  assert_true(f8 >= 0);
  assert_true(gt_kernels_fp8_select(f8, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, 2, 1, why,
                                    sizeof why));
  assert_false(gt_kernels_fp8_select(f8, GT_DT_F8E5M2, GT_DT_F8E4M3FN, GT_DT_BF16, 0, 0, why,
                                     sizeof why));
  assert_false(gt_kernels_fp8_select(f8, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_F16, 0, 0, why,
                                     sizeof why));
  assert_false(gt_kernels_fp8_select(f8, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, 3, 0, why,
                                     sizeof why));
  int bf16 = -1;
  for (size_t i = 0; i < gt_kinstance_count && bf16 < 0; i++)
    if (gt_kinstances[i].params.family == GT_KFAM_WG) bf16 = (int)i;
  assert_true(bf16 >= 0);
  assert_false(gt_kernels_fp8_select(bf16, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, 0, 0, why,
                                     sizeof why));
  assert_non_null(strstr(why, "not an fp8 instance"));
}

static void test_refusals(void **state) {
  (void)state;
  const shape_case_t sc = {"refusals", 256, 8, 512, 0, 0, 0, false, false};
  host_ops_t h;
  make_host(&h, &sc, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN);
  dev_ops_t d;
  upload(&h, GT_DT_BF16, &d);
  /* both fp8 families: TMA (wgf8) and plain 16-byte loads (dtf8); fast_accum calls, which
   * every instance takes */
  for (int f = 0; f < 2; f++) {
    const gt_kfamily_t fam = f ? GT_KFAM_DTF8 : GT_KFAM_WGF8;
    const int plain = first_instance(fam, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, false, 1);
    const int twin = first_instance(fam, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN, GT_DT_BF16, true, 1);
    assert_true(plain >= 0 && twin >= 0);
    gt_kfp8_call_t c = make_call(&h, &d, plain, 1, 1, 1.f, 0.f, GT_EPI_NONE, 1);
    c.A = (const char *)d.A + 1; /* 16-byte loads (TMA for wgf8) need aligned operands */
    assert_int_equal(gt_kernels_fp8_launch(plain, &c, NULL), GT_ERR_UNSUPPORTED);
    c = make_call(&h, &d, plain, 1, 1, 1.f, 0.f, GT_EPI_NONE, 1);
    c.lda = h.lda + 8; /* 16-byte strides */
    assert_int_equal(gt_kernels_fp8_launch(plain, &c, NULL), GT_ERR_UNSUPPORTED);
    c = make_call(&h, &d, plain, 1, 1, 1.f, 0.f, GT_EPI_NONE, 1);
    c.scale_a = NULL; /* tensorwise needs its pointer */
    assert_int_equal(gt_kernels_fp8_launch(plain, &c, NULL), GT_ERR_USAGE);
    c = make_call(&h, &d, plain, 1, 1, 1.f, 0.f, GT_EPI_BIAS, 1); /* plain instance, bias call */
    assert_int_equal(gt_kernels_fp8_launch(plain, &c, NULL), GT_ERR_UNSUPPORTED);
    c = make_call(&h, &d, twin, 0, 0, 1.f, 0.f, GT_EPI_BIAS, 1);
    c.bias = NULL;
    assert_int_equal(gt_kernels_fp8_launch(twin, &c, NULL), GT_ERR_USAGE);
  }
  /* A wgf8 tile too wide to promote refuses a call without fast accumulation and runs one with
   * it (where the table has such a tile). */
  int wide = -1;
  for (size_t i = 0; i < gt_kinstance_count && wide < 0; i++) {
    const gt_kparams_t *kp = &gt_kinstances[i].params;
    if (kp->family == GT_KFAM_WGF8 && !gt_kparams_f8_promotes(kp) && !kp->epilogue &&
        kp->dtype == GT_DT_F8E4M3FN && kp->b_dtype == GT_DT_F8E4M3FN &&
        kp->d_dtype == GT_DT_BF16)
      wide = (int)i;
  }
  if (wide >= 0) {
    gt_kfp8_call_t c = make_call(&h, &d, wide, 1, 1, 1.f, 0.f, GT_EPI_NONE, 0);
    assert_int_equal(gt_kernels_fp8_launch(wide, &c, NULL), GT_ERR_UNSUPPORTED);
    assert_non_null(strstr(gt_err_msg(), "promote"));
    c.fast_accum = 1;
    assert_int_equal(gt_kernels_fp8_launch(wide, &c, NULL), GT_OK);
    CK(cudaDeviceSynchronize());
  } else {
    printf("  (no wgf8 tile of this build is too wide to promote)\n");
  }
  free_dev(&d);
  free_host(&h);
}

static void test_splitk_reproducible(void **state) {
  (void)state;
  const shape_case_t sc = {"splitk", 4096, 16, 4096, 0, 0, 0, false, false};
  host_ops_t h;
  make_host(&h, &sc, GT_DT_F8E4M3FN, GT_DT_F8E4M3FN);
  dev_ops_t d;
  upload(&h, GT_DT_BF16, &d);
  int tried = 0;
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kparams_t *kp = &gt_kinstances[i].params;
    if (kp->family != GT_KFAM_WGF8 || kp->splitk < 2 || kp->epilogue ||
        kp->dtype != GT_DT_F8E4M3FN || kp->b_dtype != GT_DT_F8E4M3FN || kp->d_dtype != GT_DT_BF16)
      continue;
    unsigned char *r1 = malloc(d.d_bytes), *r2 = malloc(d.d_bytes);
    for (int rep = 0; rep < 2; rep++) {
      gt_kfp8_call_t c =
          make_call(&h, &d, (int)i, 2, 2, 1.f, 0.f, GT_EPI_NONE, !gt_kparams_f8_promotes(kp));
      CK(cudaMemset(d.D, 0xff, d.d_bytes));
      if (gt_kernels_fp8_launch((int)i, &c, NULL) != GT_OK)
        fail_msg("%s: %s", gt_kinstances[i].name, gt_err_msg());
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(rep ? r2 : r1, d.D, d.d_bytes, cudaMemcpyDeviceToHost));
    }
    if (memcmp(r1, r2, d.d_bytes) != 0) fail_msg("%s: two runs differ", gt_kinstances[i].name);
    free(r1);
    free(r2);
    tried++;
  }
  assert_true(tried > 0);
  free_dev(&d);
  free_host(&h);
}

int main(int argc, char **argv) {
  int ndev = 0, major = 0, minor = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("skip: no CUDA device\n");
    return 77;
  }
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0) != cudaSuccess ||
      major != 9 || minor != 0) {
    printf("skip: the fp8 instances are built for sm_90a (device is sm_%d%d)\n", major, minor);
    return 77;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress visible under ctest and timeout */
  enum { NS = NELEM(k_shapes) };
  static gate_case_t gates[NS * (1 + NELEM(k_epis))];
  struct CMUnitTest t[NELEM(gates) + 3];
  size_t n = 0, ng = 0;
  for (size_t i = 0; i < NS; i++) {
    gate_case_t *g = &gates[ng++];
    snprintf(g->name, sizeof g->name, "gate_all:%s", k_shapes[i].name);
    g->sc = &k_shapes[i];
    g->epi = GT_EPI_NONE;
    t[n++] = (struct CMUnitTest){g->name, test_gate, NULL, NULL, g};
  }
  for (size_t e = 0; e < NELEM(k_epis); e++)
    for (size_t i = 0; i < NS; i += (size_t)k_epis[e].every) {
      gate_case_t *g = &gates[ng++];
      snprintf(g->name, sizeof g->name, "gate_twins:%s_%s", gt_epilogue_name(k_epis[e].epi),
               k_shapes[i].name);
      g->sc = &k_shapes[i];
      g->epi = k_epis[e].epi;
      t[n++] = (struct CMUnitTest){g->name, test_gate, NULL, NULL, g};
    }
  t[n++] = (struct CMUnitTest){"select_refuses_other_types", test_select, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"launch_refuses_bad_calls", test_refusals, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"splitk_is_bitwise_reproducible", test_splitk_reproducible, NULL,
                               NULL, NULL};
  /* the tests whose name contains argv[1], when given */
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (argc < 2 || strstr(t[i].name, argv[1])) t[kept++] = t[i];
  if (kept == 0) {
    fprintf(stderr, "no test name contains '%s'\n", argv[1]);
    return 2;
  }
  return _cmocka_run_group_tests("gpu_kernels_fp8", t, kept, NULL, NULL);
}
