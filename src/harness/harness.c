/* Harness selection by backend and the measurement defaults (see gt_harness.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gt_harness.h"

const gt_harness_ops_t *gt_harness_for(gt_backend_t backend) {
  switch (backend) {
    case GT_BACKEND_HOST: return &gt_harness_host;
#ifdef GT_HAVE_CUDA
    case GT_BACKEND_CUDA: return &gt_harness_cuda;
#endif
    default: return NULL;
  }
}

/* A seed that differs between runs (so repeated tuning sees different inputs) unless the user
 * pins one with GEMMTUNE_SEED to reproduce a failure. */
static uint64_t default_seed(void) {
  const char *e = getenv("GEMMTUNE_SEED");
  if (e && *e) {
    char *end;
    unsigned long long v = strtoull(e, &end, 0);
    if (*end == '\0') return (uint64_t)v;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
  /* splitmix64 finaliser: nearby clock values give unrelated seeds. */
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void gt_measure_opts_init(gt_measure_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->device = 0;
  o->warm = false;
  o->rotate_factor = 3.0;
  o->init = GT_INIT_RANDOM;
  o->seed = default_seed();
  o->launches = 0;
  o->sample_target_us = 2000.0;
  o->timeout_s = 10.0;
}

void gt_measure_opts_resolve(const gt_measure_opts_t *in, gt_measure_opts_t *out) {
  if (in)
    *out = *in;
  else
    gt_measure_opts_init(out);
  if (!(out->rotate_factor > 0)) out->rotate_factor = 3.0;
  if (!(out->sample_target_us > 0)) out->sample_target_us = 2000.0;
  if (!(out->timeout_s > 0)) out->timeout_s = 10.0;
}

static bool is_int_type(gt_dtype_t t) { return t == GT_DT_I8 || t == GT_DT_I32; }

size_t gt_harness_scale_elems(const gt_problem_t *p, char which) {
  int64_t d0 = 0, d1 = 0;
  switch (which) {
    case 'A': gt_scale_mode_shape(p->scale_a, 'A', p->m, p->n, p->k, &d0, &d1); break;
    case 'B': gt_scale_mode_shape(p->scale_b, 'B', p->m, p->n, p->k, &d0, &d1); break;
    case 'D': return p->scale_d ? 1 : 0;
    case 'X': return p->amax_d ? 1 : 0;
    default: return 0;
  }
  return (size_t)(d0 * d1);
}

double gt_harness_amax_tol(const gt_problem_t *p) {
  gt_problem_t q = *p;
  q.c_type = q.d_type = GT_DT_F32;
  q.scale_d = false; /* a D scale needs an fp8 D; it does not change the accumulation */
  return 4.0 * gt_metric_bound(&q);
}

void gt_harness_fill_scales(float *buf, size_t n, uint64_t *rng) {
  for (size_t i = 0; i < n; i++) {
    uint64_t z = (*rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double u = (double)(z >> 11) * 0x1.0p-53; /* [0, 1) */
    /* log2 of the factor in +-[0.35, 1.85): never within 25% of 1, so a factor dropped or
     * applied twice always moves the result by far more than any gate's bound. */
    double e = 3.0 * u - 1.5;
    e = e < 0 ? e - 0.35 : e + 0.35;
    buf[i] = (float)exp2(e);
    if (buf[i] == 2.0f || buf[i] == 0.5f) buf[i] *= 1.0625f;
  }
}

void gt_harness_scalars(const gt_problem_t *p, gt_init_mode_t init, double *alpha, double *beta) {
  if (init == GT_INIT_INT || is_int_type(p->a_type) || is_int_type(p->d_type) ||
      is_int_type(p->scale_type)) {
    *alpha = 2.0, *beta = -1.0;
  } else {
    *alpha = 0.75 * ldexp(1.0, (int)lround(log2(3.0 / sqrt((double)p->k))));
    *beta = -0.5;
  }
}
