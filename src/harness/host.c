/* The host harness: gates and times host-backend candidates (cpu, reference, testonly) on malloc'ed
 * buffers with the monotonic clock.
 *
 * Inputs. Random decimals in [-1, 1) (integer element types: integers in [-16, 16]), or with
 * GT_INIT_INT small integers in [-3, 3]; never zero, so a candidate that skips an operand cannot
 * look right. Every value is drawn, stored in the operand's type and re-read, so the reference
 * sees exactly what the candidate sees. alpha and beta come from gt_harness_scalars (non-trivial,
 * so a candidate that ignores them fails).
 *
 * Cold timing. Timed launches rotate through at least two input sets whose total is at least
 * rotate_factor x the last-level cache (1 GiB at most: a set over half of that rotates alone), so
 * no candidate is timed on operands a previous launch left in cache. Only the first four sets are
 * drawn independently; later sets copy them: rotation is about addresses, not values, and drawing
 * a gigabyte of random numbers would dominate open().
 *
 * Gate. Every gate() draws fresh inputs from a new seed into separate buffers, poisons the whole
 * output, runs the candidate once, computes the fp64 reference (gt_reference_gemm) and compares
 * (gt_metric_compare). A candidate that cached an earlier answer, or wrote only part of D, fails.
 * gate() returns GT_OK only when the candidate passed; GT_ERR_GATE (verdict in *out) when it
 * did not; the run's own error when it failed to run. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/gt_db.h"
#include "core/gt_dtype.h"
#include "providers/gt_reference.h"
#include "gt_harness.h"

#define HOST_ROTATE_CAP ((size_t)1 << 30) /* total bytes of rotating sets, at most */
#define HOST_LLC_FALLBACK ((size_t)32 << 20)
#define HOST_DISTINCT_SETS 4
#define HOST_MAX_AUTO_LAUNCHES (1 << 20)

typedef struct host_set {
  void *A, *B, *C, *D;
} host_set_t;

struct gt_bench {
  gt_problem_t p;
  gt_measure_opts_t o;
  size_t a_elems, b_elems, c_elems; /* footprints (D has C's) */
  int nsets;
  host_set_t *sets;
  host_set_t gate;
  void *bias, *gate_bias; /* bias epilogues only */
  /* fp8 scale factors (f32, NULL where the key has none): the timed sets share one group, the
   * gate draws fresh ones each time, as it draws fresh operands. */
  float *scale[4], *gate_scale[4]; /* scale_a, scale_b, scale_d, amax_d */
  double *ref;            /* m*n*batch fp64 */
  double alpha_buf, beta_buf; /* 8-byte aligned storage for scalars of the scale type */
  int launches;
  int next_set;
  uint64_t gate_count;
};

struct gt_loaded {
  struct gt_bench *b;
  gt_candidate_t c;
  void *state;
  void *ws;
  size_t ws_size;
};

/* ---- utilities ------------------------------------------------------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static bool is_int_type(gt_dtype_t t) { return t == GT_DT_I8 || t == GT_DT_I32; }

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

/* Fill count elements of type t with non-zero random values (see the file comment). */
static void fill_random(void *buf, gt_dtype_t t, size_t count, gt_init_mode_t mode, uint64_t *rng) {
  const bool ints = mode == GT_INIT_INT || is_int_type(t);
  const int range = mode == GT_INIT_INT ? 3 : 16;
  for (size_t i = 0; i < count; i++) {
    for (;;) {
      uint64_t r = splitmix64(rng);
      double v;
      if (ints) {
        int x = (int)(r % (uint64_t)(2 * range)) - range; /* [-range, range-1] */
        v = x >= 0 ? x + 1 : x;                            /* skip 0: [-range, range] \ {0} */
      } else {
        v = (double)(r >> 11) * 0x1.0p-53 * 2.0 - 1.0; /* [-1, 1) */
      }
      gt_store_elem(buf, t, i, v);
      if (gt_load_elem(buf, t, i) != 0.0) break; /* tiny decimals can round to 0 in fp8 */
    }
  }
}

static size_t host_llc_bytes(void) {
  long c = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  c = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return c > 0 ? (size_t)c : HOST_LLC_FALLBACK;
}

static void set_free(host_set_t *s) {
  free(s->A), free(s->B), free(s->C), free(s->D);
  memset(s, 0, sizeof *s);
}

static gt_status_t set_alloc(const struct gt_bench *b, host_set_t *s) {
  const gt_problem_t *p = &b->p;
  memset(s, 0, sizeof *s);
  s->A = malloc(b->a_elems * gt_dtype_size(p->a_type));
  s->B = malloc(b->b_elems * gt_dtype_size(p->b_type));
  if (!p->beta_zero) s->C = malloc(b->c_elems * gt_dtype_size(p->c_type));
  s->D = malloc(b->c_elems * gt_dtype_size(p->d_type));
  if (!s->A || !s->B || (!p->beta_zero && !s->C) || !s->D) {
    set_free(s);
    return gt_err_set(GT_ERR_NOMEM, "host harness: cannot allocate an input set");
  }
  return GT_OK;
}

static void set_fill(const struct gt_bench *b, host_set_t *s, uint64_t *rng) {
  const gt_problem_t *p = &b->p;
  fill_random(s->A, p->a_type, b->a_elems, b->o.init, rng);
  fill_random(s->B, p->b_type, b->b_elems, b->o.init, rng);
  if (s->C) fill_random(s->C, p->c_type, b->c_elems, b->o.init, rng);
}

static void set_copy(const struct gt_bench *b, host_set_t *dst, const host_set_t *src) {
  const gt_problem_t *p = &b->p;
  memcpy(dst->A, src->A, b->a_elems * gt_dtype_size(p->a_type));
  memcpy(dst->B, src->B, b->b_elems * gt_dtype_size(p->b_type));
  if (dst->C) memcpy(dst->C, src->C, b->c_elems * gt_dtype_size(p->c_type));
}

static gt_operands_t set_operands(const struct gt_bench *b, const host_set_t *s, const void *bias,
                                  const struct gt_loaded *l) {
  gt_operands_t o;
  memset(&o, 0, sizeof o);
  o.A = s->A;
  o.B = s->B;
  /* With beta == 0, C is the output buffer, as cublasGemmEx passes it: C must not be read. */
  o.C = b->p.beta_zero ? s->D : s->C;
  o.D = s->D;
  o.bias = bias;
  o.alpha = &b->alpha_buf;
  o.beta = &b->beta_buf;
  float *const *sc = s == &b->gate ? b->gate_scale : b->scale;
  o.scale_a = sc[0];
  o.scale_b = sc[1];
  o.scale_d = sc[2];
  o.amax_d = sc[3];
  if (l) {
    o.workspace = l->ws;
    o.ws_size = l->ws_size;
  }
  return o;
}

/* ---- ops ------------------------------------------------------------------------------------- */

static gt_status_t host_available(int device) { return GT_OK; }

static void cpu_model_name(char *out, size_t cap) {
  snprintf(out, cap, "unknown cpu");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    char *c = strchr(line, ':');
    if (!c) continue;
    c++;
    while (*c == ' ' || *c == '\t') c++;
    c[strcspn(c, "\n")] = '\0';
    if (*c) snprintf(out, cap, "%s", c);
    break;
  }
  fclose(f);
}

static double env_double(const char *name, double dflt) {
  const char *e = getenv(name);
  if (!e || !*e) return dflt;
  char *end;
  double v = strtod(e, &end);
  return *end == '\0' && v > 0 ? v : dflt;
}

static gt_status_t host_describe(int device, gt_device_info_t *out) {
  memset(out, 0, sizeof *out);
  cpu_model_name(out->name, sizeof out->name);
  snprintf(out->arch, sizeof out->arch, "cpu");
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  out->sm_count = c > 0 ? (int)c : 1;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  out->mem_gib = pages > 0 && page > 0 ? gt_db_mem_gib((uint64_t)pages * (uint64_t)page) : 0;
  out->cache_bytes = host_llc_bytes();
  /* Rough defaults (2.5 GHz x 32 fp32 flop/cycle/core: two 8-wide FMA pipes; a DDR channel or
   * two); the roofline only sorts problems into compute- and memory-bound, so users with the
   * real numbers override them. */
  const bool configured = env_double("GEMMTUNE_CPU_PEAK_GFLOPS", -1) > 0 ||
                          env_double("GEMMTUNE_CPU_PEAK_GBPS", -1) > 0;
  double gflops = env_double("GEMMTUNE_CPU_PEAK_GFLOPS", out->sm_count * 2.5e9 * 32 / 1e9);
  out->peak_tflops = gflops / 1e3;
  out->peak_gbps = env_double("GEMMTUNE_CPU_PEAK_GBPS", 20.0);
  /* One rate for every type: the host providers compute in fp32 whatever they read. */
  char src[128];
  snprintf(src, sizeof src, "host %s: %.4g GFLOP/s, %.4g GB/s (GEMMTUNE_CPU_PEAK_GFLOPS, "
           "GEMMTUNE_CPU_PEAK_GBPS)", configured ? "as configured" : "estimate",
           gflops, out->peak_gbps);
  gt_roof_uniform(&out->roof, out->peak_tflops, out->peak_gbps, src);
  out->busy_processes = -1;
  return GT_OK;
}

static void host_close(struct gt_bench *b);

static gt_status_t host_open(const gt_problem_t *p, const gt_measure_opts_t *o,
                             struct gt_bench **out) {
  *out = NULL;
  gt_status_t s = gt_problem_validate(p);
  if (s != GT_OK) return s;
  struct gt_bench *b = calloc(1, sizeof *b);
  if (!b) return gt_err_set(GT_ERR_NOMEM, "host harness: no memory");
  b->p = *p;
  gt_measure_opts_resolve(o, &b->o);
  b->launches = b->o.launches > 0 ? b->o.launches : 0;

  b->a_elems = gt_problem_operand_elems(p, 'A');
  b->b_elems = gt_problem_operand_elems(p, 'B');
  b->c_elems = gt_problem_operand_elems(p, 'C');

  double alpha, beta;
  gt_harness_scalars(p, b->o.init, &alpha, &beta);
  gt_store_elem(&b->alpha_buf, p->scale_type, 0, alpha);
  gt_store_elem(&b->beta_buf, p->scale_type, 0, p->beta_zero ? 0.0 : beta);

  /* Validation bounds each operand's bytes; their sum and the fp64 reference are checked here,
   * so a set the machine cannot hold is refused, never sized from a wrapped value. */
  size_t set_bytes = 0, ref_bytes = 0, part;
  bool fits = !__builtin_mul_overflow(b->a_elems, gt_dtype_size(p->a_type), &part) &&
              !__builtin_add_overflow(set_bytes, part, &set_bytes) &&
              !__builtin_mul_overflow(b->b_elems, gt_dtype_size(p->b_type), &part) &&
              !__builtin_add_overflow(set_bytes, part, &set_bytes) &&
              !__builtin_mul_overflow(b->c_elems, gt_dtype_size(p->d_type), &part) &&
              !__builtin_add_overflow(set_bytes, part, &set_bytes) &&
              (p->beta_zero ||
               (!__builtin_mul_overflow(b->c_elems, gt_dtype_size(p->c_type), &part) &&
                !__builtin_add_overflow(set_bytes, part, &set_bytes))) &&
              !__builtin_mul_overflow((size_t)p->m, (size_t)p->n, &ref_bytes) &&
              !__builtin_mul_overflow(ref_bytes, (size_t)p->batch, &ref_bytes) &&
              !__builtin_mul_overflow(ref_bytes, sizeof(double), &ref_bytes);
  if (!fits || !b->a_elems || !b->b_elems || !b->c_elems || set_bytes == 0) {
    host_close(b);
    return gt_err_set(GT_ERR_NOMEM, "host harness: %s needs more memory than can be addressed",
                      gt_problem_ops(p));
  }
  size_t nsets = 1;
  if (!b->o.warm) {
    double want = b->o.rotate_factor * (double)host_llc_bytes();
    nsets = (size_t)ceil(want / (double)set_bytes);
    /* At least two sets, as the CUDA harness: with one, each launch re-reads what the last one
     * just left in cache. The cap still bounds host memory: a set over half of it rotates alone. */
    if (nsets < 2) nsets = 2;
    size_t cap = HOST_ROTATE_CAP / set_bytes;
    if (nsets > cap) nsets = cap;
    if (nsets < 1) nsets = 1;
  }
  b->nsets = (int)nsets;
  b->sets = calloc(nsets, sizeof *b->sets);
  b->ref = malloc(ref_bytes);
  if (!b->sets || !b->ref) {
    host_close(b);
    return gt_err_set(GT_ERR_NOMEM, "host harness: no memory for %zu input sets", nsets);
  }
  uint64_t rng = b->o.seed;
  for (size_t i = 0; i < nsets; i++) {
    if ((s = set_alloc(b, &b->sets[i])) != GT_OK) {
      host_close(b);
      return s;
    }
    if (i < HOST_DISTINCT_SETS)
      set_fill(b, &b->sets[i], &rng);
    else
      set_copy(b, &b->sets[i], &b->sets[i % HOST_DISTINCT_SETS]);
    /* Touch the outputs now so page faults are not timed into the first samples. */
    memset(b->sets[i].D, 0, b->c_elems * gt_dtype_size(p->d_type));
  }
  if ((s = set_alloc(b, &b->gate)) != GT_OK) {
    host_close(b);
    return s;
  }
  if (epi_has_bias(p->epilogue)) {
    gt_dtype_t bt = gt_reference_bias_type(p);
    b->bias = malloc((size_t)p->m * gt_dtype_size(bt));
    b->gate_bias = malloc((size_t)p->m * gt_dtype_size(bt));
    if (!b->bias || !b->gate_bias) {
      host_close(b);
      return gt_err_set(GT_ERR_NOMEM, "host harness: no memory for the bias");
    }
    fill_random(b->bias, bt, (size_t)p->m, b->o.init, &rng);
  }
  static const char k_which[4] = {'A', 'B', 'D', 'X'};
  for (int i = 0; i < 4; i++) {
    size_t n = gt_harness_scale_elems(p, k_which[i]);
    if (!n) continue;
    b->scale[i] = malloc(n * sizeof(float));
    b->gate_scale[i] = malloc(n * sizeof(float));
    if (!b->scale[i] || !b->gate_scale[i]) {
      host_close(b);
      return gt_err_set(GT_ERR_NOMEM, "host harness: no memory for the fp8 scales");
    }
    gt_harness_fill_scales(b->scale[i], n, &rng);
  }
  *out = b;
  return GT_OK;
}

static void host_unload(struct gt_loaded *l);

static gt_status_t host_run_once(struct gt_loaded *l, const gt_operands_t *ops) {
  gt_err_clear();
  gt_status_t s = l->c.provider->run(l->state, ops, NULL);
  if (s != GT_OK && !gt_err_msg()[0]) gt_err_set(s, "%s: run failed (%s)", l->c.name, gt_status_name(s));
  return s;
}

static gt_status_t host_load(struct gt_bench *b, const gt_candidate_t *c, struct gt_loaded **out) {
  *out = NULL;
  const gt_provider_t *pr = c->provider;
  if (!pr) return gt_err_set(GT_ERR_USAGE, "%s: candidate has no provider", c->name);
  if (pr->backend != GT_BACKEND_HOST)
    return gt_err_set(GT_ERR_USAGE, "%s: provider %s is not a host provider", c->name, pr->name);
  if (c->excluded) return gt_err_set(GT_ERR_USAGE, "%s is excluded: %s", c->name, c->reason);
  if (!pr->prepare || !pr->run)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: provider %s cannot run candidates", c->name, pr->name);
  gt_status_t s = gt_provider_ready(pr);
  if (s != GT_OK) return s;
  struct gt_loaded *l = calloc(1, sizeof *l);
  if (!l) return gt_err_set(GT_ERR_NOMEM, "host harness: no memory");
  l->b = b;
  l->c = *c;
  size_t ws = 0;
  if ((s = pr->prepare(c, &b->p, &l->state, &ws)) != GT_OK) {
    free(l);
    return s;
  }
  if (ws) {
    l->ws = malloc(ws);
    if (!l->ws) {
      host_unload(l);
      return gt_err_set(GT_ERR_NOMEM, "%s: cannot allocate %zu bytes of workspace", c->name, ws);
    }
    l->ws_size = ws;
  }
  /* The first run after a load pays for lazy initialisation and cold instruction caches: it is
   * run here and never timed or judged. */
  gt_operands_t ops = set_operands(b, &b->sets[0], b->bias, l);
  if ((s = host_run_once(l, &ops)) != GT_OK) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    host_unload(l);
    return gt_err_set(s, "%s", msg);
  }
  b->next_set = b->nsets > 1 ? 1 : 0;
  *out = l;
  return GT_OK;
}

/* The amax output of an fp8 key: max|D| before D's scale, as cuBLASLt writes it. It must be the
 * reference's maximum within the bound the elements are gated at (an amax off by a factor is a
 * wrong D scale for the next step of the application, however right D is). */
static void gate_amax(const struct gt_bench *b, gt_gate_t *out) {
  const gt_problem_t *p = &b->p;
  const size_t n = (size_t)p->m * (size_t)p->n * (size_t)p->batch;
  double want = 0;
  for (size_t i = 0; i < n; i++) want = fmax(want, fabs(b->ref[i]));
  if (p->scale_d) want /= (double)b->gate_scale[2][0];
  const double got = b->gate_scale[3][0], tol = gt_harness_amax_tol(p) * want + 1e-30;
  if (!(fabs(got - want) <= tol)) {
    out->passed = false;
    snprintf(out->why, sizeof out->why, "amax_d %.6g, expected %.6g (max|D| before its scale)",
             got, want);
  }
}

static gt_status_t host_gate(struct gt_bench *b, struct gt_loaded *l, gt_gate_t *out) {
  const gt_problem_t *p = &b->p;
  memset(out, 0, sizeof *out);
  out->bound = gt_metric_bound(p);
  /* A new seed per gate: derived from the bench seed so a failure reproduces with GEMMTUNE_SEED. */
  uint64_t rng = b->o.seed ^ (0xD1B54A32D192ED03ull * ++b->gate_count);
  splitmix64(&rng);
  set_fill(b, &b->gate, &rng);
  if (b->gate_bias) fill_random(b->gate_bias, gt_reference_bias_type(p), (size_t)p->m, b->o.init, &rng);
  static const char k_which[4] = {'A', 'B', 'D', 'X'};
  for (int i = 0; i < 4; i++)
    if (b->gate_scale[i]) gt_harness_fill_scales(b->gate_scale[i], gt_harness_scale_elems(p, k_which[i]), &rng);
  /* amax_d is an output: poisoned, so one the candidate never wrote fails. */
  if (b->gate_scale[3]) b->gate_scale[3][0] = NAN;
  gt_metric_poison(b->gate.D, p->d_type, b->c_elems);

  gt_operands_t ops = set_operands(b, &b->gate, b->gate_bias, l);
  double t0 = now_s();
  gt_status_t s = host_run_once(l, &ops);
  double dt = now_s() - t0;
  if (s != GT_OK) {
    snprintf(out->why, sizeof out->why, "run failed: %s", gt_err_msg());
    return s;
  }
  if (dt > b->o.timeout_s) {
    snprintf(out->why, sizeof out->why, "ran %.1f s (limit %.1f s)", dt, b->o.timeout_s);
    return gt_err_set(GT_ERR_TIMEOUT, "%s: %s", l->c.name, out->why);
  }
  /* The reference reads the gate inputs, not D; with beta == 0 it never reads C either. */
  if ((s = gt_reference_gemm(p, &ops, b->ref)) != GT_OK) {
    snprintf(out->why, sizeof out->why, "reference failed: %s", gt_err_msg());
    return s;
  }
  gt_metric_compare(p, b->gate.D, b->ref, out);
  if (out->passed && p->amax_d) gate_amax(b, out);
  if (!out->passed) return gt_err_set(GT_ERR_GATE, "%s: %s", l->c.name, out->why);
  return GT_OK;
}

static gt_status_t host_time(struct gt_bench *b, struct gt_loaded *l, int launches, double *us) {
  *us = NAN;
  int n = launches > 0 ? launches : b->launches;
  if (n <= 0) {
    /* Auto: calibrate on launches adding up to a tenth of the target (one launch alone is often
     * the slowest: cold caches, lazily faulted pages), then size the sample from their mean. */
    int cal = 0;
    double t0 = now_s(), el = 0;
    do {
      gt_operands_t ops = set_operands(b, &b->sets[b->next_set], b->bias, l);
      b->next_set = (b->next_set + 1) % b->nsets;
      gt_status_t s = host_run_once(l, &ops);
      if (s != GT_OK) return s;
      cal++;
      el = now_s() - t0;
      if (el > b->o.timeout_s)
        return gt_err_set(GT_ERR_TIMEOUT, "%s: one launch took %.1f s (limit %.1f s)", l->c.name,
                          el / cal, b->o.timeout_s);
    } while (el * 1e6 < b->o.sample_target_us / 10 && cal < 1000);
    double est = el * 1e6 / cal;
    double want = ceil(b->o.sample_target_us / (est > 0.05 ? est : 0.05));
    n = want > HOST_MAX_AUTO_LAUNCHES ? HOST_MAX_AUTO_LAUNCHES : want < 1 ? 1 : (int)want;
    b->launches = n;
  }
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    gt_operands_t ops = set_operands(b, &b->sets[b->next_set], b->bias, l);
    b->next_set = (b->next_set + 1) % b->nsets;
    gt_status_t s = host_run_once(l, &ops);
    if (s != GT_OK) return s;
    double el = now_s() - t0;
    if (el > b->o.timeout_s)
      return gt_err_set(GT_ERR_TIMEOUT, "%s: %d of %d launches took %.1f s (limit %.1f s)",
                        l->c.name, i + 1, n, el, b->o.timeout_s);
  }
  *us = (now_s() - t0) * 1e6 / n;
  return GT_OK;
}

static gt_status_t host_telemetry(struct gt_bench *b, gt_telemetry_t *out) {
  memset(out, 0, sizeof *out); /* valid = false: no clock/thermal source on the host path */
  return GT_OK;
}

static int host_launches(struct gt_bench *b) { return b->launches; }

static void host_set_launches(struct gt_bench *b, int launches) {
  b->launches = launches > 0 ? launches : 0;
}

static void host_unload(struct gt_loaded *l) {
  if (!l) return;
  if (l->state && l->c.provider->release) l->c.provider->release(l->state);
  free(l->ws);
  free(l);
}

static void host_close(struct gt_bench *b) {
  if (!b) return;
  if (b->sets)
    for (int i = 0; i < b->nsets; i++) set_free(&b->sets[i]);
  free(b->sets);
  set_free(&b->gate);
  free(b->bias);
  free(b->gate_bias);
  for (int i = 0; i < 4; i++) free(b->scale[i]), free(b->gate_scale[i]);
  free(b->ref);
  free(b);
}

const gt_harness_ops_t gt_harness_host = {
    .name = "host",
    .backend = GT_BACKEND_HOST,
    .available = host_available,
    .describe = host_describe,
    .open = host_open,
    .load = host_load,
    .gate = host_gate,
    .time = host_time,
    .telemetry = host_telemetry,
    .launches = host_launches,
    .set_launches = host_set_launches,
    .unload = host_unload,
    .close = host_close,
};
