/* The roofline floor of a GEMM: the least time a problem can take on a device, from the fewest
 * bytes it must move (gt_problem_min_bytes) at the memory bandwidth and the FLOPs it must do
 * (gt_problem_flops) at the device's dense peak for the problem's type. No kernel runs much faster
 * than its floor, so the share of the floor a time reaches (floor / time) says how much a search
 * can still gain: `shapes` prints the floor, `tune` and `profile` the baseline's and the winner's
 * share of it, DB rows record it, and the search stops widening a shape that is at it.
 *
 * A device's roof is data: the rate per class of type, the bandwidth and where the figures come
 * from. gt_roof_datasheet knows the GPUs gemmtune is measured on (H100, H200, A100: their
 * datasheets' dense rates); the harness fills the rest from the device's own numbers (SMs, clocks,
 * memory bus), and the host harness from its configured estimates. */
#ifndef GT_ROOFLINE_H
#define GT_ROOFLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "gt_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Classes of dense rate a GEMM runs at, by its input type and how products are made. */
typedef enum gt_rate {
  GT_RATE_TC16 = 0, /* bf16 / f16 inputs, tensor cores (any accumulation) */
  GT_RATE_TC8,      /* f8e4m3fn / f8e5m2 / i8 inputs, tensor cores: twice TC16 on Hopper */
  GT_RATE_TF32,     /* f32 inputs with tf32 products (compute tf32) */
  GT_RATE_F32,      /* f32 inputs on the FMA pipes */
  GT_RATE_F64,      /* f64 inputs */
  GT_RATE__COUNT
} gt_rate_t;

/* What limits a problem's floor. */
typedef enum gt_bound {
  GT_BOUND_NONE = 0, /* the roof is not known: no floor */
  GT_BOUND_BANDWIDTH,
  GT_BOUND_COMPUTE
} gt_bound_t;

/* A device's roofline. All zero: not known. */
typedef struct gt_roof {
  double tflops[GT_RATE__COUNT]; /* dense TFLOP/s (TOPS for i8) per class, 0 unknown */
  double gbps;                   /* memory bandwidth, GB/s, 0 unknown */
  char source[128];              /* where the figures come from, said next to the floors */
} gt_roof_t;

/* One problem's floor on a roof. */
typedef struct gt_floor {
  double us;      /* the floor, microseconds; 0 when the roof does not know the rate */
  gt_bound_t bound;
  gt_rate_t rate; /* the class the compute side used */
  double flops, bytes;
  double tflops, gbps; /* the rates the floor was computed at */
} gt_floor_t;

/* "bf16/f16", "fp8/i8", "tf32", "f32", "f64". */
const char *gt_rate_name(gt_rate_t r);
/* "bandwidth", "compute", "-" (as DB rows and the tools spell it). */
const char *gt_bound_name(gt_bound_t b);
/* The bound whose gt_bound_name is s; false when s names none. */
bool gt_bound_parse(const char *s, gt_bound_t *out);

/* The rate class problem p runs at: its A type, and for f32 its compute type. */
gt_rate_t gt_roof_rate_of(const gt_problem_t *p);

/* The floor of `flops` FLOPs and `bytes` bytes at `tflops` TFLOP/s and `gbps` GB/s:
 * max(flops / peak, bytes / bandwidth), bound by whichever side is longer (bandwidth on a tie).
 * Either rate <= 0 gives a floor of 0 with bound NONE. The one roofline model every tool uses. */
void gt_roof_floor_at(double flops, double bytes, double tflops, double gbps, gt_floor_t *out);
/* p's floor on roof (the rate of p's class). out->us is 0 and bound NONE when the roof lacks
 * that rate or the bandwidth. Returns whether a floor is known. */
bool gt_roof_floor(const gt_roof_t *roof, const gt_problem_t *p, gt_floor_t *out);

/* The share of the floor a time reaches, floor / time_us (1.0 = at the floor; above 1 when a
 * measurement beat the model, e.g. a warm cache); 0 when either is unknown. */
double gt_floor_share(const gt_floor_t *f, double time_us);

/* The roof of a GPU gemmtune knows by its datasheet, found by a substring of the device name and
 * the SM count (H100 SXM and PCIe differ only there); the fp8 rate is twice the bf16 one. Returns
 * false (out untouched) for any other device. */
bool gt_roof_datasheet(const char *device_name, int sm_count, gt_roof_t *out);

/* The same rate for every class, and a bandwidth: what a host's configured estimate gives. */
void gt_roof_uniform(gt_roof_t *out, double tflops, double gbps, const char *source);

#ifdef __cplusplus
}
#endif
#endif
