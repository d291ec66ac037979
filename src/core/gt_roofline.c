/* The roofline floor (see gt_roofline.h). */
#include "gt_roofline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const k_rate_names[GT_RATE__COUNT] = {
    [GT_RATE_TC16] = "bf16/f16", [GT_RATE_TC8] = "fp8/i8", [GT_RATE_TF32] = "tf32",
    [GT_RATE_F32] = "f32",       [GT_RATE_F64] = "f64",
};

const char *gt_rate_name(gt_rate_t r) {
  return (unsigned)r < GT_RATE__COUNT ? k_rate_names[r] : "?";
}

const char *gt_bound_name(gt_bound_t b) {
  return b == GT_BOUND_BANDWIDTH ? "bandwidth" : b == GT_BOUND_COMPUTE ? "compute" : "-";
}

bool gt_bound_parse(const char *s, gt_bound_t *out) {
  for (int b = GT_BOUND_NONE; b <= GT_BOUND_COMPUTE; b++)
    if (strcmp(s, gt_bound_name((gt_bound_t)b)) == 0) return *out = (gt_bound_t)b, true;
  return false;
}

gt_rate_t gt_roof_rate_of(const gt_problem_t *p) {
  switch (p->a_type) {
    case GT_DT_F16:
    case GT_DT_BF16: return GT_RATE_TC16;
    case GT_DT_F8E4M3FN:
    case GT_DT_F8E5M2:
    case GT_DT_I8: return GT_RATE_TC8;
    case GT_DT_F64: return GT_RATE_F64;
    default: break;
  }
  /* f32 inputs: the FMA pipes, unless the products are made in tf32 or 16-bit on tensor cores. */
  if (p->compute == GT_COMPUTE_TF32) return GT_RATE_TF32;
  if (p->compute == GT_COMPUTE_F32_FAST_F16 || p->compute == GT_COMPUTE_F32_FAST_BF16)
    return GT_RATE_TC16;
  return GT_RATE_F32;
}

void gt_roof_floor_at(double flops, double bytes, double tflops, double gbps, gt_floor_t *out) {
  memset(out, 0, sizeof *out);
  out->flops = flops, out->bytes = bytes;
  out->tflops = tflops, out->gbps = gbps;
  if (!(tflops > 0) || !(gbps > 0) || !isfinite(tflops) || !isfinite(gbps)) return;
  const double compute_s = flops / (tflops * 1e12), memory_s = bytes / (gbps * 1e9);
  out->bound = compute_s > memory_s ? GT_BOUND_COMPUTE : GT_BOUND_BANDWIDTH;
  out->us = 1e6 * fmax(compute_s, memory_s);
}

bool gt_roof_floor(const gt_roof_t *roof, const gt_problem_t *p, gt_floor_t *out) {
  const gt_rate_t r = gt_roof_rate_of(p);
  gt_roof_floor_at(gt_problem_flops(p), gt_problem_min_bytes(p), roof ? roof->tflops[r] : 0,
                   roof ? roof->gbps : 0, out);
  out->rate = r;
  return out->us > 0;
}

double gt_floor_share(const gt_floor_t *f, double time_us) {
  return f && f->us > 0 && time_us > 0 && isfinite(time_us) ? f->us / time_us : 0;
}

/* Datasheet dense rates (TFLOP/s; TOPS for i8) and bandwidth (GB/s) of the GPUs gemmtune is
 * measured on. The fp8 column is twice the bf16 one on Hopper; the A100 has no fp8 and runs i8 at
 * twice its bf16 rate, so the column holds that. f64 is the tensor-core fp64 rate. */
static const struct {
  const char *name; /* a substring of the device name */
  int sms;          /* 0: any */
  double gbps, tc16, tc8, tf32, f32, f64;
} k_datasheets[] = {
    {"H200", 0, 4800, 989.4, 1978.9, 494.7, 66.9, 66.9},
    {"H100", 132, 3350, 989.4, 1978.9, 494.7, 66.9, 66.9}, /* SXM */
    {"H100", 114, 2000, 756.5, 1513.0, 378.0, 51.2, 51.2}, /* PCIe */
    {"A100", 108, 2039, 312.0, 624.0, 156.0, 19.5, 19.5},
};

bool gt_roof_datasheet(const char *device_name, int sm_count, gt_roof_t *out) {
  if (!device_name) return false;
  for (size_t i = 0; i < sizeof k_datasheets / sizeof k_datasheets[0]; i++) {
    if (!strstr(device_name, k_datasheets[i].name)) continue;
    if (k_datasheets[i].sms && k_datasheets[i].sms != sm_count) continue;
    memset(out, 0, sizeof *out);
    out->tflops[GT_RATE_TC16] = k_datasheets[i].tc16;
    out->tflops[GT_RATE_TC8] = k_datasheets[i].tc8;
    out->tflops[GT_RATE_TF32] = k_datasheets[i].tf32;
    out->tflops[GT_RATE_F32] = k_datasheets[i].f32;
    out->tflops[GT_RATE_F64] = k_datasheets[i].f64;
    out->gbps = k_datasheets[i].gbps;
    snprintf(out->source, sizeof out->source, "the %s datasheet (dense rates, %.0f GB/s)",
             k_datasheets[i].name, k_datasheets[i].gbps);
    return true;
  }
  return false;
}

void gt_roof_uniform(gt_roof_t *out, double tflops, double gbps, const char *source) {
  memset(out, 0, sizeof *out);
  for (int r = 0; r < GT_RATE__COUNT; r++) out->tflops[r] = tflops;
  out->gbps = gbps;
  snprintf(out->source, sizeof out->source, "%s", source ? source : "");
}
