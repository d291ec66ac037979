/* The measurement harness interface: how the search driver gates and times a candidate without
 * knowing where it runs. Two implementations: host (harness/host.c: malloc buffers, monotonic
 * clock) and CUDA (harness/cuda/: device buffers, CUDA-graph replays timed with events, NVML
 * telemetry, device fp64 reference). gt_harness_for(backend) picks one.
 *
 * A bench is opened per problem. It owns the input sets (random, never zeros; rotated so the
 * working set is >= 3x the last-level cache unless opts.warm), the output buffer (poisoned before
 * each checked run) and the reference. Candidates are loaded into a bench (provider prepare +
 * workspace), gated, timed in samples, and unloaded. */
#ifndef GT_HARNESS_H
#define GT_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/gt_metric.h"
#include "core/gt_problem.h"
#include "core/gt_roofline.h"
#include "providers/gt_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gt_init_mode {
  GT_INIT_RANDOM = 0, /* uniform decimals in [-1, 1) (scaled so outputs stay O(1)) */
  GT_INIT_INT         /* small integers in [-3, 3]: exact results for small K */
} gt_init_mode_t;

typedef struct gt_measure_opts {
  int device;            /* CUDA device ordinal */
  bool warm;             /* false: rotate input sets totalling >= rotate_factor x cache */
  double rotate_factor;  /* default 3 */
  gt_init_mode_t init;
  uint64_t seed;
  int launches;          /* launches per timing sample (graph length on CUDA); 0 = auto */
  double sample_target_us; /* auto launches aim a sample at about this long (default 2000) */
  double timeout_s;      /* a candidate running longer than this is failed (0 = default 10 s) */
  /* CUDA: every timed launch comes after a one-warp kernel launched plainly, as an application's
   * norm or activation kernel precedes its GEMM, so no launch overlaps the previous GEMM's tail
   * through programmatic dependent launch (back-to-back GEMMs of one candidate do overlap). The
   * separator's own time, timed alone in a graph of as many launches, is subtracted. Host: no
   * effect. */
  bool fenced;
} gt_measure_opts_t;

void gt_measure_opts_init(gt_measure_opts_t *o);
/* The options a bench runs with: *in (or the defaults when in is NULL) with every unset or
 * invalid field (rotate_factor, sample_target_us, timeout_s <= 0) replaced by its default. */
void gt_measure_opts_resolve(const gt_measure_opts_t *in, gt_measure_opts_t *out);

/* alpha and beta every harness runs p with, non-trivial so a candidate that ignores them fails:
 * 2 and -1 for integer data or GT_INIT_INT; otherwise 0.75 * 2^e with 2^e ~ 3/sqrt(k) (outputs
 * stay O(1) whatever K is, and the scale is exact in every type) and -0.5. *beta is the value used
 * when the problem reads C; callers store 0 when p->beta_zero. */
void gt_harness_scalars(const gt_problem_t *p, gt_init_mode_t init, double *alpha, double *beta);

/* Relative tolerance of an amax_d output against the reference's max|D|: the accumulation part
 * of the gate's bound (gt_metric_bound of the key with an f32 D), 4x: amax is taken from the
 * accumulators before D is rounded to its type, so D's own rounding does not enter. */
double gt_harness_amax_tol(const gt_problem_t *p);

/* f32 factors an fp8 key's scale of operand which needs: 'A' (scale_a), 'B' (scale_b), 'D'
 * (scale_d: 1 when set), 'X' (amax_d: 1 when set); 0 when the key has none. For A and B the
 * whole array of gt_scale_mode_shape, so a 128x128 array includes the padding of its K-block
 * stride that cuBLASLt steps over (the harness fills it too; no reader uses it). */
size_t gt_harness_scale_elems(const gt_problem_t *p, char which);
/* Fill n scale factors from the generator state *rng (advanced): positive, spread over
 * 2^-1.85 .. 2^1.85 but never within 2^+-0.35 of 1, and not powers of two, so a kernel that drops
 * a factor, or applies one to the wrong rows, columns or K blocks, is off by O(1) relative, far
 * beyond any fp8 bound. */
void gt_harness_fill_scales(float *buf, size_t n, uint64_t *rng);
/* Fill count elements of type t at device address buf with the values a bench's inputs get
 * (random and never zero: full-mantissa decimals in [-1, 1), integers in [-16, 16] \ {0} for
 * integer types; element i depends only on (seed, i)), enqueued on the legacy default stream: the
 * caller waits for it (once, after all its fills). For a caller that times calls on operands of its own (tune's live replay): data with the
 * entropy of real weights and activations, which a compute-bound call draws its power from.
 * CUDA builds only. */
gt_status_t gt_harness_fill_device(void *buf, gt_dtype_t t, size_t count, uint64_t seed);

/* What a device is: filled by describe(). */
typedef struct gt_device_info {
  char name[64];            /* "NVIDIA H200" or the CPU model */
  char arch[GT_ARCH_MAX];   /* "sm_90", "cpu" */
  int sm_count;             /* SMs or online cores */
  int mem_gib;              /* device memory (host: physical memory), whole GiB rounded down
                               (gt_db_mem_gib): with the name, the identity tuned rows record */
  double peak_tflops;       /* the bf16/f16 dense rate, roof.tflops[GT_RATE_TC16] */
  double peak_gbps;         /* memory bandwidth, GB/s, roof.gbps */
  gt_roof_t roof;           /* the roofline per type class: a GPU's datasheet when gemmtune
                               knows it, else its own SMs, clocks and memory bus; the host's
                               configured estimates (GEMMTUNE_CPU_PEAK_GFLOPS/GBPS) */
  size_t cache_bytes;       /* L2 (GPU) or LLC (host) */
  int busy_processes;       /* other processes using the GPU (-1 unknown) */
} gt_device_info_t;

/* Clock and throttle state around a round (CUDA: NVML; host: zeros, valid=false). */
typedef struct gt_telemetry {
  bool valid;
  int sm_clock_mhz;
  int temp_c;
  double power_w;
  unsigned long long event_reasons; /* NVML clocks-event reasons bitmask */
  bool throttled;                   /* thermal or power capping seen */
} gt_telemetry_t;

struct gt_bench;
struct gt_loaded;

typedef struct gt_harness_ops {
  const char *name;
  gt_backend_t backend;
  /* GT_OK when usable; otherwise the message says why (no GPU, driver missing). */
  gt_status_t (*available)(int device);
  gt_status_t (*describe)(int device, gt_device_info_t *out);
  gt_status_t (*open)(const gt_problem_t *p, const gt_measure_opts_t *o, struct gt_bench **out);
  /* Prepare candidate c for this bench (provider prepare + workspace). The first run after a
   * load is discarded by the harness (module load, JIT, lazy init). */
  gt_status_t (*load)(struct gt_bench *b, const gt_candidate_t *c, struct gt_loaded **out);
  /* Run on fresh random inputs into a poisoned output and compare with the reference. */
  gt_status_t (*gate)(struct gt_bench *b, struct gt_loaded *l, gt_gate_t *out);
  /* One timing sample: microseconds per launch over `launches` launches (0 = bench default),
   * rotating input sets unless warm. */
  gt_status_t (*time)(struct gt_bench *b, struct gt_loaded *l, int launches, double *us);
  /* (optional) telemetry now. */
  gt_status_t (*telemetry)(struct gt_bench *b, gt_telemetry_t *out);
  /* Launches per sample this bench chose (after auto-sizing from the baseline). */
  int (*launches)(struct gt_bench *b);
  void (*set_launches)(struct gt_bench *b, int launches);
  void (*unload)(struct gt_loaded *l);
  void (*close)(struct gt_bench *b);
  /* (optional) how l is timed: "graph" (CUDA-graph replays), "stream" (plain launches, when
   * capture failed) or "host". NULL member = "host" for the host backend, "graph" for CUDA. */
  const char *(*timing)(struct gt_bench *b, struct gt_loaded *l);
} gt_harness_ops_t;

/* The harness for a backend, or NULL when this build has none (CUDA not compiled in). */
const gt_harness_ops_t *gt_harness_for(gt_backend_t backend);

extern const gt_harness_ops_t gt_harness_host;
#ifdef GT_HAVE_CUDA
extern const gt_harness_ops_t gt_harness_cuda;
#endif

#ifdef __cplusplus
}
#endif
#endif
