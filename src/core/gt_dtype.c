/* Type tables and scalar conversions (see gt_dtype.h). The conversions are bit-exact ports of
 * the IEEE-style rounding the GPU does, so host references and host providers see the same
 * values the device would. */
#define _GNU_SOURCE
#include "gt_dtype.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const struct {
  const char *name;
  size_t size;
} k_dtype[GT_DT__COUNT] = {
    [GT_DT_F32] = {"f32", 4},          [GT_DT_F16] = {"f16", 2},
    [GT_DT_BF16] = {"bf16", 2},        [GT_DT_F8E4M3FN] = {"f8e4m3fn", 1},
    [GT_DT_F8E5M2] = {"f8e5m2", 1},    [GT_DT_I8] = {"i8", 1},
    [GT_DT_I32] = {"i32", 4},          [GT_DT_F64] = {"f64", 8},
};

static const struct {
  const char *alias;
  gt_dtype_t t;
} k_dtype_alias[] = {
    {"fp32", GT_DT_F32},   {"float", GT_DT_F32},         {"float32", GT_DT_F32},
    {"fp16", GT_DT_F16},   {"half", GT_DT_F16},          {"float16", GT_DT_F16},
    {"bfloat16", GT_DT_BF16},                             {"e4m3fn", GT_DT_F8E4M3FN},
    {"float8_e4m3fn", GT_DT_F8E4M3FN},                    {"fp8e4m3fn", GT_DT_F8E4M3FN},
    {"e5m2", GT_DT_F8E5M2},{"float8_e5m2", GT_DT_F8E5M2}, {"fp8e5m2", GT_DT_F8E5M2},
    {"int8", GT_DT_I8},    {"int32", GT_DT_I32},          {"fp64", GT_DT_F64},
    {"double", GT_DT_F64}, {"float64", GT_DT_F64},
};

const char *gt_dtype_name(gt_dtype_t t) {
  return (unsigned)t < GT_DT__COUNT ? k_dtype[t].name : "?";
}

size_t gt_dtype_size(gt_dtype_t t) { return (unsigned)t < GT_DT__COUNT ? k_dtype[t].size : 0; }

gt_status_t gt_dtype_parse(const char *s, gt_dtype_t *out) {
  if (!s) return gt_err_set(GT_ERR_USAGE, "missing type name");
  for (int i = 0; i < GT_DT__COUNT; i++)
    if (strcasecmp(s, k_dtype[i].name) == 0) return *out = (gt_dtype_t)i, GT_OK;
  for (size_t i = 0; i < sizeof k_dtype_alias / sizeof k_dtype_alias[0]; i++)
    if (strcasecmp(s, k_dtype_alias[i].alias) == 0) return *out = k_dtype_alias[i].t, GT_OK;
  if (strcasestr(s, "fnuz"))
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "type '%s' is an FNUZ fp8 variant (AMD dialect: other bias, NaN at 0x80); "
                      "gemmtune supports the OCP dialect only: f8e4m3fn, f8e5m2",
                      s);
  if (strcasecmp(s, "e4m3") == 0 || strcasecmp(s, "fp8") == 0 || strcasecmp(s, "f8") == 0 ||
      strcasecmp(s, "f8e4m3") == 0)
    return gt_err_set(GT_ERR_USAGE,
                      "type '%s' is ambiguous: say f8e4m3fn (OCP e4m3) or f8e5m2 (OCP e5m2)", s);
  return gt_err_set(GT_ERR_USAGE,
                    "unknown type '%s' (known: f32 f16 bf16 f8e4m3fn f8e5m2 i8 i32 f64)", s);
}

static const char *const k_compute[GT_COMPUTE__COUNT] = {
    [GT_COMPUTE_F32] = "f32",           [GT_COMPUTE_TF32] = "tf32",
    [GT_COMPUTE_F16] = "f16",           [GT_COMPUTE_F64] = "f64",
    [GT_COMPUTE_I32] = "i32",           [GT_COMPUTE_F32_FAST_F16] = "f32_fast_f16",
    [GT_COMPUTE_F32_FAST_BF16] = "f32_fast_bf16",
};

const char *gt_compute_name(gt_compute_t c) {
  return (unsigned)c < GT_COMPUTE__COUNT ? k_compute[c] : "?";
}

gt_status_t gt_compute_parse(const char *s, gt_compute_t *out) {
  for (int i = 0; s && i < GT_COMPUTE__COUNT; i++)
    if (strcasecmp(s, k_compute[i]) == 0) return *out = (gt_compute_t)i, GT_OK;
  if (s && (strcasecmp(s, "fp32") == 0 || strcasecmp(s, "32f") == 0))
    return *out = GT_COMPUTE_F32, GT_OK;
  return gt_err_set(GT_ERR_USAGE,
                    "unknown compute type '%s' (known: f32 tf32 f16 f64 i32 f32_fast_f16 "
                    "f32_fast_bf16)",
                    s ? s : "");
}

static const char *const k_epi[GT_EPI__COUNT] = {
    [GT_EPI_NONE] = "none", [GT_EPI_BIAS] = "bias",           [GT_EPI_RELU] = "relu",
    [GT_EPI_BIAS_RELU] = "bias_relu", [GT_EPI_GELU] = "gelu", [GT_EPI_BIAS_GELU] = "bias_gelu",
};

const char *gt_epilogue_name(gt_epilogue_t e) {
  return (unsigned)e < GT_EPI__COUNT ? k_epi[e] : "?";
}

gt_status_t gt_epilogue_parse(const char *s, gt_epilogue_t *out) {
  for (int i = 0; s && i < GT_EPI__COUNT; i++)
    if (strcasecmp(s, k_epi[i]) == 0) return *out = (gt_epilogue_t)i, GT_OK;
  return gt_err_set(GT_ERR_USAGE,
                    "unknown epilogue '%s' (known: none bias relu bias_relu gelu bias_gelu)",
                    s ? s : "");
}

/* ---- conversions ------------------------------------------------------------------------ */

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float gt_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t gt_f32_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

float gt_f16_to_f32(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return u2f(s | 0x7f800000u | (m << 13)); /* inf / nan */
  if (e == 0) {                                             /* zero / subnormal */
    float v = ldexpf((float)m, -24);
    return s ? -v : v;
  }
  return u2f(s | ((e + 112u) << 23) | (m << 13));
}

uint16_t gt_f32_to_f16(float f) {
  uint32_t u = f2u(f), s = (u >> 16) & 0x8000u;
  float a = fabsf(f);
  if (isnan(f)) return (uint16_t)(s | 0x7e00u);
  if (a >= 65520.0f) return (uint16_t)(s | 0x7c00u); /* rounds to inf */
  if (a < 6.103515625e-05f) {                         /* subnormal: quantum 2^-24 */
    float q = nearbyintf(a * 16777216.0f);            /* default rounding: nearest even */
    return (uint16_t)(s | (uint32_t)q);
  }
  uint32_t au = f2u(a);
  uint32_t e = (au >> 23) - 112u, m = au & 0x7fffffu;
  uint32_t h = (e << 10) | (m >> 13);
  uint32_t rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(s | h);
}

/* Generic small-float decode: bits -> value, for e4m3fn (bias 7, no inf, NaN S.1111.111) and
 * e5m2 (bias 15, IEEE-like inf/nan). */
float gt_e4m3fn_to_f32(uint8_t v) {
  int s = v >> 7, e = (v >> 3) & 0xf, m = v & 7;
  if (e == 0xf && m == 7) return NAN;
  float r = e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + (float)m / 8.0f, e - 7);
  return s ? -r : r;
}

float gt_e5m2_to_f32(uint8_t v) { return gt_f16_to_f32((uint16_t)((uint16_t)v << 8)); }

/* Encode by searching the nearest representable value: the non-negative codes 0..cmax (cmax the
 * largest finite one) decode to increasing values, so a binary search finds the largest code at
 * or below |f| and the nearer of it and the next one wins, a tie going to the even code (round to
 * nearest even). At most nine decodes a value (the scan took 128): operand generation for fp8
 * tests and references encodes millions. */
static uint8_t encode_small(float f, float (*dec)(uint8_t), float maxv, int cmax) {
  if (isnan(f)) return 0x7f;
  float a = fabsf(f);
  if (a > maxv) a = maxv; /* saturate (cuBLAS' satfinite behaviour for outputs) */
  int lo = 0, hi = cmax;  /* dec(lo) <= a always (dec(0) = 0); find the largest such code */
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (dec((uint8_t)mid) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  int best = lo;
  if (lo < cmax) {
    const float dl = a - dec((uint8_t)lo), dh = dec((uint8_t)(lo + 1)) - a;
    if (dh < dl || (dh == dl && ((lo + 1) & 1) == 0)) best = lo + 1;
  }
  return (uint8_t)(best | (signbit(f) ? 0x80 : 0));
}

/* The largest finite codes: e4m3fn 0x7e = 448 (0x7f is NaN), e5m2 0x7b = 57344 (0x7c inf). */
uint8_t gt_f32_to_e4m3fn(float f) { return encode_small(f, gt_e4m3fn_to_f32, 448.0f, 0x7e); }
uint8_t gt_f32_to_e5m2(float f) { return encode_small(f, gt_e5m2_to_f32, 57344.0f, 0x7b); }

double gt_load_elem(const void *buf, gt_dtype_t t, size_t i) {
  switch (t) {
    case GT_DT_F32: return ((const float *)buf)[i];
    case GT_DT_F16: return gt_f16_to_f32(((const uint16_t *)buf)[i]);
    case GT_DT_BF16: return gt_bf16_to_f32(((const uint16_t *)buf)[i]);
    case GT_DT_F8E4M3FN: return gt_e4m3fn_to_f32(((const uint8_t *)buf)[i]);
    case GT_DT_F8E5M2: return gt_e5m2_to_f32(((const uint8_t *)buf)[i]);
    case GT_DT_I8: return ((const int8_t *)buf)[i];
    case GT_DT_I32: return ((const int32_t *)buf)[i];
    case GT_DT_F64: return ((const double *)buf)[i];
    default: return NAN;
  }
}

void gt_store_elem(void *buf, gt_dtype_t t, size_t i, double v) {
  switch (t) {
    case GT_DT_F32: ((float *)buf)[i] = (float)v; break;
    case GT_DT_F16: ((uint16_t *)buf)[i] = gt_f32_to_f16((float)v); break;
    case GT_DT_BF16: ((uint16_t *)buf)[i] = gt_f32_to_bf16((float)v); break;
    case GT_DT_F8E4M3FN: ((uint8_t *)buf)[i] = gt_f32_to_e4m3fn((float)v); break;
    case GT_DT_F8E5M2: ((uint8_t *)buf)[i] = gt_f32_to_e5m2((float)v); break;
    case GT_DT_I8: ((int8_t *)buf)[i] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : lrint(v)); break;
    case GT_DT_I32:
      ((int32_t *)buf)[i] =
          (int32_t)(v > 2147483647.0 ? 2147483647 : v < -2147483648.0 ? -2147483647 - 1 : llrint(v));
      break;
    case GT_DT_F64: ((double *)buf)[i] = v; break;
    default: break;
  }
}
