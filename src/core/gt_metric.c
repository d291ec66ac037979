/* The correctness gate's metric: error bound from types and K, elementwise tolerances, output
 * poisoning, and the verdict (see gt_metric.h).
 *
 * Where the bound comes from. Let u_x be the unit roundoff of type x (2^-t, t significand bits
 * counting the implicit one): f64 2^-53, f32 2^-24, tf32 and f16 2^-11, bf16 2^-8, e4m3 2^-4,
 * e5m2 2^-3. The normwise relative error ||D - D_ref|| / ||D_ref|| of a correct GEMM has three
 * sources:
 *
 *   output rounding   each element is rounded once to the output type: relative error <= u_out,
 *                     RMS about u_out / 2. We allow 2 * u_out.
 *   accumulation      summing k products with random signs: partial sums grow like sqrt(j), each
 *                     addition rounds by u_acc, so the accumulated error relative to the result
 *                     (which is itself ~sqrt(k) times a product) grows like u_acc * sqrt(k/2).
 *                     Blocked or split-K sums do better, never worse. We allow 8 * u_acc * sqrt(k)
 *                     (a >= 10x margin over the expected value; the worst case k * u_acc needs
 *                     adversarial same-sign inputs the harness never draws).
 *   input rounding    only when the compute type rounds inputs to a narrower type than they are
 *                     stored in (tf32 tensor cores on f32 data, FAST_16F/16BF): each product picks
 *                     up an independent relative error of about 2 * u_round (truncation, not RNE,
 *                     on some tensor cores), which sums like noise and does not grow with k
 *                     relative to the result. We allow 4 * u_round.
 *
 * GELU epilogues add 4 * 2^-11 because GPU epilogues may use the hardware tanh approximation.
 *
 * Resulting bounds (k = 4096):
 *   bf16 in/out, f32 compute : 2*2^-8 + 8*2^-24*64          = 7.84e-3 (measured bf16 GEMMs: ~2e-3,
 *                                                               all of it output rounding)
 *   f16 in/out,  f32 compute : 2*2^-11 + 8*2^-24*64         = 1.01e-3 (typical ~3e-4)
 *   f32,         f32 compute : 2*2^-24 + 8*2^-24*64         = 3.2e-5  (typical ~3e-6)
 *   f32,         tf32        : 2*2^-24 + 4*2^-11 + 8*2^-24*64 = 1.98e-3 (typical ~4e-4)
 * A GEMM that drops one product of k has error ~1/sqrt(k) (0.125 at k = 64, 0.0156 at k = 4096),
 * far above every bound for f32/f16 outputs and above bf16's until k ~ 16k.
 *
 * FP8 inputs: Hopper's fp8 tensor-core accumulators keep about 14 significand bits between
 * promotions to fp32 (more loss with CUBLASLT fast-accumulation), so fp8 problems use
 * u_acc = 2^-14 even with f32 compute.
 *
 * Integer outputs are exact when the scale is integer (bound 0, atol 0): i8 x i8 -> i32 sums never
 * round and the random integer inputs are small enough never to overflow. With a float scale the
 * final alpha*acc is rounded to the integer type, which can differ by one at ties (atol 1). */
#include "gt_metric.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gt_dtype.h"

/* Unit roundoff of a storage type; 0 for integers (exact). */
static double unit_roundoff(gt_dtype_t t) {
  switch (t) {
    case GT_DT_F64: return ldexp(1.0, -53);
    case GT_DT_F32: return ldexp(1.0, -24);
    case GT_DT_F16: return ldexp(1.0, -11);
    case GT_DT_BF16: return ldexp(1.0, -8);
    case GT_DT_F8E4M3FN: return ldexp(1.0, -4);
    case GT_DT_F8E5M2: return ldexp(1.0, -3);
    case GT_DT_I8:
    case GT_DT_I32: return 0.0;
    default: return 1.0; /* unknown: nothing passes a meaningful bound */
  }
}

static bool is_int_type(gt_dtype_t t) { return t == GT_DT_I8 || t == GT_DT_I32; }
static bool is_fp8_type(gt_dtype_t t) { return t == GT_DT_F8E4M3FN || t == GT_DT_F8E5M2; }

/* Roundoff of the accumulator for a problem. */
static double acc_roundoff(const gt_problem_t *p) {
  double u;
  switch (p->compute) {
    case GT_COMPUTE_F64: u = ldexp(1.0, -53); break;
    case GT_COMPUTE_F16: u = ldexp(1.0, -11); break;
    case GT_COMPUTE_I32: u = 0.0; break;
    default: u = ldexp(1.0, -24); break; /* F32, TF32, F32_FAST_*: fp32 accumulators */
  }
  /* fp8 operands: the reference reads the same bytes, dequantized exactly, so the fp8 input
   * precision costs nothing itself; what it costs is the accumulation. Hopper's fp8 tensor cores
   * keep about 14 bits in their adders (promoted to fp32 every few K steps by a careful kernel);
   * with fast accumulation there is no promotion, and the sums carry one bit less. */
  if (is_fp8_type(p->a_type) || is_fp8_type(p->b_type)) {
    const double u8 = p->fast_accum ? ldexp(1.0, -13) : ldexp(1.0, -14);
    if (u < u8) u = u8;
  }
  return u;
}

/* Roundoff the compute type applies to inputs stored in a finer type (0 when it applies none). */
static double input_roundoff(const gt_problem_t *p) {
  double ur;
  switch (p->compute) {
    case GT_COMPUTE_TF32: ur = ldexp(1.0, -11); break;
    case GT_COMPUTE_F32_FAST_F16: ur = ldexp(1.0, -11); break;
    case GT_COMPUTE_F32_FAST_BF16: ur = ldexp(1.0, -8); break;
    case GT_COMPUTE_F16: ur = ldexp(1.0, -11); break;
    default: return 0.0;
  }
  double ua = unit_roundoff(p->a_type), ub = unit_roundoff(p->b_type);
  double finer = ua < ub ? ua : ub;
  return finer < ur ? ur : 0.0;
}

static bool has_gelu(gt_epilogue_t e) { return e == GT_EPI_GELU || e == GT_EPI_BIAS_GELU; }

double gt_metric_bound(const gt_problem_t *p) {
  if (is_int_type(p->d_type)) return p->scale_type == GT_DT_I32 ? 0.0 : ldexp(1.0, -7);
  double u_out = unit_roundoff(p->d_type);
  double k = p->k > 0 ? (double)p->k : 1.0;
  double b = 2.0 * u_out + 4.0 * input_roundoff(p) + 8.0 * acc_roundoff(p) * sqrt(k);
  if (has_gelu(p->epilogue)) b += 4.0 * ldexp(1.0, -11);
  /* Floor: the fp64 reference itself is not exact, and an f64 candidate summing in another order
   * differs from it by more than 2^-53. */
  return b + 1e-12;
}

void gt_metric_elem_tol(const gt_problem_t *p, double *atol, double *rtol) {
  if (is_int_type(p->d_type)) {
    *atol = p->scale_type == GT_DT_I32 ? 0.0 : 1.0;
    *rtol = 0.0;
    return;
  }
  /* An element is off when its error is beyond what the normwise bound allows at the reference's
   * typical magnitude, plus the output rounding of that element itself (<= u_out relative; 4x
   * margin). Errors of a correct GEMM fall well inside: the normwise bound is itself ~4x above
   * the typical error. */
  *atol = gt_metric_bound(p);
  *rtol = 4.0 * unit_roundoff(p->d_type);
}

/* ---- poison ---------------------------------------------------------------------------------
 * Patterns a correct GEMM of finite inputs never writes: NaNs with a recognisable payload for
 * floats (the only NaN encoding e4m3fn has is 0x7F), the most negative value for integers. */
#define POISON_F32 0x7FBADBADu
#define POISON_F16 0x7DBAu
#define POISON_BF16 0x7FBAu
#define POISON_FP8 0x7Fu
#define POISON_F64 0x7FF4BADBADBADBADull

void gt_metric_poison(void *buf, gt_dtype_t t, size_t count) {
  size_t i;
  switch (t) {
    case GT_DT_F32:
      for (i = 0; i < count; i++) ((uint32_t *)buf)[i] = POISON_F32;
      break;
    case GT_DT_F16:
      for (i = 0; i < count; i++) ((uint16_t *)buf)[i] = POISON_F16;
      break;
    case GT_DT_BF16:
      for (i = 0; i < count; i++) ((uint16_t *)buf)[i] = POISON_BF16;
      break;
    case GT_DT_F8E4M3FN:
    case GT_DT_F8E5M2: memset(buf, POISON_FP8, count); break;
    case GT_DT_I8: memset(buf, 0x80, count); break;
    case GT_DT_I32:
      for (i = 0; i < count; i++) ((int32_t *)buf)[i] = INT32_MIN;
      break;
    case GT_DT_F64:
      for (i = 0; i < count; i++) ((uint64_t *)buf)[i] = POISON_F64;
      break;
    default: break;
  }
}

bool gt_metric_is_poison(const void *buf, gt_dtype_t t, size_t i) {
  switch (t) {
    case GT_DT_F32: return ((const uint32_t *)buf)[i] == POISON_F32;
    case GT_DT_F16: return ((const uint16_t *)buf)[i] == POISON_F16;
    case GT_DT_BF16: return ((const uint16_t *)buf)[i] == POISON_BF16;
    case GT_DT_F8E4M3FN:
    case GT_DT_F8E5M2: return ((const uint8_t *)buf)[i] == POISON_FP8;
    case GT_DT_I8: return ((const int8_t *)buf)[i] == INT8_MIN;
    case GT_DT_I32: return ((const int32_t *)buf)[i] == INT32_MIN;
    case GT_DT_F64: return ((const uint64_t *)buf)[i] == POISON_F64;
    default: return false;
  }
}

/* ---- verdict --------------------------------------------------------------------------------- */

void gt_metric_acc_init(gt_metric_acc_t *a, const gt_problem_t *p) {
  memset(a, 0, sizeof *a);
  gt_metric_elem_tol(p, &a->atol, &a->rtol);
}

void gt_metric_acc_set_ref_rms(gt_metric_acc_t *a, const gt_problem_t *p, double ref_rms) {
  double atol, rtol;
  gt_metric_elem_tol(p, &atol, &rtol);
  a->atol = is_int_type(p->d_type) || !(ref_rms > 0) || !isfinite(ref_rms) ? atol : atol * ref_rms;
  a->rtol = rtol;
}

void gt_metric_acc_add(gt_metric_acc_t *a, double d, double ref, bool poisoned) {
  a->checked++;
  if (!isfinite(ref)) return; /* nothing to judge against; the reference never overflows on our inputs */
  a->ref2 += ref * ref;
  /* Integer poison values are legitimate saturated results; they only count as unwritten where
   * the reference says otherwise. Float poison is a NaN, never equal to a finite reference. */
  if (poisoned && !(d == ref)) {
    a->unwritten++;
    return;
  }
  if (!isfinite(d)) {
    a->nonfinite++;
    return;
  }
  double diff = d - ref;
  a->diff2 += diff * diff;
  if (fabs(diff) > a->atol + a->rtol * fabs(ref)) a->mismatches++;
}

void gt_metric_acc_finish(const gt_metric_acc_t *a, const gt_problem_t *p, gt_gate_t *g) {
  memset(g, 0, sizeof *g);
  g->bound = gt_metric_bound(p);
  if (a->ref2 > 0)
    g->error = sqrt(a->diff2 / a->ref2);
  else
    g->error = a->diff2 > 0 ? INFINITY : 0.0;
  g->checked = a->checked;
  g->mismatch_frac = a->checked ? (double)a->mismatches / (double)a->checked : 0.0;
  g->max_mismatch = is_int_type(p->d_type) ? 0.0 : 1e-3;
  g->nonfinite = a->nonfinite;
  g->unwritten = a->unwritten;
  g->passed = false;
  if (a->checked == 0)
    snprintf(g->why, sizeof g->why, "no output elements were compared");
  else if (a->unwritten)
    snprintf(g->why, sizeof g->why, "%lld of %lld outputs never written (still poisoned)",
             (long long)a->unwritten, (long long)a->checked);
  else if (a->nonfinite)
    snprintf(g->why, sizeof g->why, "%lld NaN/Inf outputs where the reference is finite",
             (long long)a->nonfinite);
  else if (!(g->error <= g->bound))
    snprintf(g->why, sizeof g->why, "normwise error %.3g > bound %.3g", g->error, g->bound);
  else if (g->mismatch_frac > g->max_mismatch)
    snprintf(g->why, sizeof g->why,
             "%lld of %lld outputs outside atol %.3g + rtol %.3g*|ref| (allowed fraction %.3g)",
             (long long)a->mismatches, (long long)a->checked, a->atol, a->rtol, g->max_mismatch);
  else
    g->passed = true;
}

/* Integer outputs store round-to-nearest-even, saturated values; the fp64 reference is compared
 * after the same conversion so exactness is well defined. */
static double int_store_value(gt_dtype_t t, double v) {
  double lo = t == GT_DT_I8 ? -128.0 : -2147483648.0, hi = t == GT_DT_I8 ? 127.0 : 2147483647.0;
  if (!isfinite(v)) return v;
  v = nearbyint(v);
  return v < lo ? lo : v > hi ? hi : v;
}

void gt_metric_compare(const gt_problem_t *p, const void *D, const double *ref, gt_gate_t *g) {
  const bool isint = is_int_type(p->d_type);
  const int64_t m = p->m, n = p->n, nb = p->batch > 0 ? p->batch : 1;
  const size_t total = (size_t)m * (size_t)n * (size_t)nb;
  /* Pass 1: the reference's RMS scales the elementwise absolute tolerance. */
  double s2 = 0;
  size_t nf = 0;
  for (size_t i = 0; i < total; i++) {
    double r = isint ? int_store_value(p->d_type, ref[i]) : ref[i];
    if (isfinite(r)) s2 += r * r, nf++;
  }
  gt_metric_acc_t a;
  gt_metric_acc_init(&a, p);
  gt_metric_acc_set_ref_rms(&a, p, nf ? sqrt(s2 / (double)nf) : 0.0);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        size_t di = (size_t)(b * p->stride_c + j * p->ldc + i);
        double r = ref[((size_t)b * (size_t)n + (size_t)j) * (size_t)m + (size_t)i];
        if (isint) r = int_store_value(p->d_type, r);
        bool poisoned = gt_metric_is_poison(D, p->d_type, di);
        gt_metric_acc_add(&a, gt_load_elem(D, p->d_type, di), r, poisoned);
      }
  gt_metric_acc_finish(&a, p, g);
}
