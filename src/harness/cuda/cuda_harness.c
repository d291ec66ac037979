/* The CUDA harness: gates and times CUDA-backend candidates (cublas, cublaslt, own kernels) on
 * device buffers, as DESIGN.md "Measuring honestly" describes.
 *
 * Inputs follow the host harness: random decimals in [-1, 1) (integer element types: integers in
 * [-16, 16]), or with GT_INIT_INT small integers in [-3, 3]; never zero. They are drawn on the
 * device by a counter-based hash (gt_cuk_fill_random), so a bench of gigabytes opens quickly.
 * alpha and beta come from gt_harness_scalars, the same values the host harness uses.
 *
 * Cold timing. Unless opts.warm, timed launches rotate through at least two input sets, totalling
 * at least rotate_factor x the L2 the device reports (cudaDevAttrL2CacheSize; 60 MB on an H200),
 * so no candidate is timed on operands the previous launch left in L2. Each set has its own output.
 * A sample is a CUDA graph of `launches` launches, launch i on set i % nsets; the count is
 * rounded up to whole rotations, so every replay starts on set 0 with every other set touched
 * since its last use. The graph is replayed once after instantiation (upload, first-run costs)
 * and then once per sample between two events. Capture can fail for a candidate (a call that is
 * not capturable); it is then timed as plain launches between events and its timing method
 * says "stream".
 *
 * beta != 0. cublasGemmEx, the entry point the shim serves, updates C in place, so timed launches
 * and the gate run in place (C == D) whenever C and D have one type: the gate copies fresh C into
 * D first. Outputs are poisoned only when beta == 0 or C is separate; in place, an element a
 * candidate never wrote still holds C and fails the error check instead.
 *
 * Gate. Every gate() draws fresh inputs from a new seed into buffers of its own, poisons D, runs
 * the candidate once, computes the fp64 reference on the device and compares there
 * (gt_cuk_compare applies gt_metric_acc_add's rules per element; the sums come back to
 * gt_metric_acc_finish, so host and device share one verdict).
 *
 * Hangs and faults. Every wait polls an event against opts.timeout_s; a candidate still running
 * then returns GT_ERR_TIMEOUT. A sticky CUDA error (illegal address, launch failure, ...) returns
 * GT_ERR_DEVICE with a message starting "device fault:". Both leave the context unusable
 * (gt_cuda_context_broken()): every later call fails fast and nothing more is freed. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/gt_db.h"
#include "core/gt_dtype.h"
#include "core/gt_stats.h"
#include "platform/gt_cudalib.h"
#include "gt_cuda_harness.h"

#define CUDA_ROTATE_CAP ((size_t)4 << 30)  /* total bytes of rotating sets beyond the first two */
#define CUDA_MAX_SETS 128                  /* beyond this, sets are smaller than a launch's noise */
#define CUDA_MAX_AUTO_LAUNCHES 1000
#define CUDA_REF_TIMEOUT_S 600.0           /* the fp64 reference of a 16k^3 GEMM takes minutes */

typedef struct dev_set {
  void *A, *B, *C, *D;
} dev_set_t;

struct gt_bench {
  gt_problem_t p;
  gt_measure_opts_t o;
  int device;
  cudaStream_t stream;
  cudaEvent_t ev0, ev1;
  size_t a_elems, b_elems, c_elems; /* footprints (D has C's) */
  bool inplace;                     /* beta != 0 and C, D of one type: C is D */
  bool bias;
  size_t set_bytes;
  int nsets;
  dev_set_t *sets;
  dev_set_t gate;
  void *bias_buf, *gate_bias;
  /* fp8 scale factors in device memory (NULL where the key has none): scale_a, scale_b,
   * scale_d, amax_d; the timed sets share one group, the gate draws fresh factors. The kernel
   * reads them when it runs, as cuBLASLt reads an application's. */
  float *scale[4], *gate_scale[4];
  double *ref;
  gt_cuk_acc_t *acc;
  unsigned char poison[8];
  double alpha_buf, beta_buf; /* 8-byte storage for scalars of the scale type */
  double alpha, beta;
  int launches;
  uint64_t gate_count;
  void *nvml;
  unsigned *fence_word;        /* fenced timing: the separator's counter */
  cudaGraphExec_t fence_exec;  /* fence_n separators alone, timed to be subtracted */
  int fence_n;
  double fence_us;             /* per separator, median of FENCE_SAMPLES replays */
};

struct gt_loaded {
  struct gt_bench *b;
  gt_candidate_t c;
  void *state;
  void *ws;
  size_t ws_size;
  cudaGraphExec_t exec;
  int graph_launches;
  bool capture_failed;
  const char *method;
  char capture_err[192];
};

/* ---- small pieces -------------------------------------------------------------------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static bool is_int_type(gt_dtype_t t) { return t == GT_DT_I8 || t == GT_DT_I32; }

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

static gt_status_t context_usable(void) {
  if (gt_cuda_context_broken())
    return gt_err_set(GT_ERR_DEVICE, "device fault: the CUDA context is unusable after an earlier "
                                     "fault or hang; start a new process");
  return GT_OK;
}

/* Wait for everything enqueued on b's stream so far, at most timeout_s. */
static gt_status_t wait_stream(struct gt_bench *b, double timeout_s, const char *what) {
  GT_CUDA_CHECK(cudaEventRecord(b->ev1, b->stream));
  double t0 = now_s();
  long sleep_ns = 2000;
  for (;;) {
    cudaError_t e = cudaEventQuery(b->ev1);
    if (e == cudaSuccess) return GT_OK;
    if (e != cudaErrorNotReady) return gt_cuda_err(e, what, __FILE__, __LINE__);
    if (now_s() - t0 > timeout_s) {
      /* The kernel keeps the GPU; nothing queued behind it will run, so the context is done. */
      gt_cuda_mark_context_broken();
      return gt_err_set(GT_ERR_TIMEOUT,
                        "%s: still running after %.1f s (timeout); the CUDA context is unusable",
                        what, timeout_s);
    }
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
    if (sleep_ns < 1000000) sleep_ns *= 2;
  }
}

static gt_status_t fill(struct gt_bench *b, void *buf, gt_dtype_t t, size_t count, uint64_t seed) {
  bool ints = b->o.init == GT_INIT_INT || is_int_type(t);
  int range = b->o.init == GT_INIT_INT ? 3 : 16;
  GT_CUDA_CHECK(gt_cuk_fill_random(buf, t, count, seed, ints, range, b->stream));
  return GT_OK;
}

gt_status_t gt_harness_fill_device(void *buf, gt_dtype_t t, size_t count, uint64_t seed) {
  GT_CUDA_CHECK(gt_cuk_fill_random(buf, t, count, seed, is_int_type(t), 16, 0));
  return GT_OK;
}

static gt_status_t dev_alloc(void **p, size_t bytes, const char *what) {
  cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
  if (e != cudaSuccess) {
    *p = NULL;
    if (e == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return gt_err_set(GT_ERR_NOMEM, "CUDA harness: cannot allocate %zu bytes for %s", bytes, what);
    }
    return gt_cuda_err(e, "cudaMalloc", __FILE__, __LINE__);
  }
  return GT_OK;
}

static void set_free(dev_set_t *s) {
  if (!gt_cuda_context_broken()) {
    cudaFree(s->A), cudaFree(s->B), cudaFree(s->C), cudaFree(s->D);
  }
  memset(s, 0, sizeof *s);
}

/* Allocate a set: A, B, D always; C when it is separate from D (with_c). */
static gt_status_t set_alloc(struct gt_bench *b, dev_set_t *s, bool with_c) {
  const gt_problem_t *p = &b->p;
  gt_status_t st;
  memset(s, 0, sizeof *s);
  if ((st = dev_alloc(&s->A, b->a_elems * gt_dtype_size(p->a_type), "A")) != GT_OK ||
      (st = dev_alloc(&s->B, b->b_elems * gt_dtype_size(p->b_type), "B")) != GT_OK ||
      (st = dev_alloc(&s->D, b->c_elems * gt_dtype_size(p->d_type), "D")) != GT_OK ||
      (with_c && (st = dev_alloc(&s->C, b->c_elems * gt_dtype_size(p->c_type), "C")) != GT_OK)) {
    set_free(s);
    return st;
  }
  return GT_OK;
}

static gt_operands_t operands(const struct gt_bench *b, const dev_set_t *s, const void *bias,
                              const struct gt_loaded *l) {
  gt_operands_t o;
  memset(&o, 0, sizeof o);
  o.A = s->A;
  o.B = s->B;
  o.D = s->D;
  /* beta == 0: C is the output buffer, as cublasGemmEx is called; it must not be read. */
  o.C = b->p.beta_zero || b->inplace ? s->D : s->C;
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

static gt_status_t run_once(struct gt_loaded *l, const gt_operands_t *ops) {
  gt_err_clear();
  if (l->b->o.fenced) GT_CUDA_CHECK(gt_cuk_fence(l->b->fence_word, l->b->stream));
  gt_status_t s = l->c.provider->run(l->state, ops, l->b->stream);
  if (s != GT_OK && !gt_err_msg()[0])
    gt_err_set(s, "%s: run failed (%s)", l->c.name, gt_status_name(s));
  return s;
}

static gt_cuk_gemm_t cuk_gemm(const struct gt_bench *b) {
  const gt_problem_t *p = &b->p;
  gt_cuk_gemm_t g;
  memset(&g, 0, sizeof g);
  g.a_type = p->a_type, g.b_type = p->b_type, g.c_type = p->c_type, g.d_type = p->d_type;
  g.bias_type = gt_cudalib_bias_type(p);
  g.transa = p->transa, g.transb = p->transb;
  g.epilogue = p->epilogue;
  g.beta_zero = p->beta_zero;
  g.m = p->m, g.n = p->n, g.k = p->k;
  g.lda = p->lda, g.ldb = p->ldb, g.ldc = p->ldc;
  g.batch = p->batch;
  g.stride_a = p->stride_a, g.stride_b = p->stride_b, g.stride_c = p->stride_c;
  g.alpha = b->alpha;
  g.beta = p->beta_zero ? 0.0 : b->beta;
  g.scale_a = p->scale_a, g.scale_b = p->scale_b;
  g.sa = b->gate_scale[0], g.sb = b->gate_scale[1], g.sd = b->gate_scale[2];
  return g;
}

/* ---- available / describe --------------------------------------------------------------------- */

static gt_status_t cuda_available(int device) {
  gt_status_t s = context_usable();
  if (s != GT_OK) return s;
  int n = 0;
  if ((s = gt_cuda_device_count(&n)) != GT_OK) return s;
  if (device < 0 || device >= n)
    return gt_err_set(GT_ERR_USAGE, "CUDA device %d does not exist (%d present)", device, n);
  return GT_OK;
}

/* Dense bf16/f16 tensor-core FLOP per clock per SM (fp32 accumulate), from datasheet peaks. */
static double flops_per_clock_sm(int major, int minor) {
  int cc = major * 10 + minor;
  if (cc >= 100) return 8192; /* B200: 2.25 PF / (148 SMs x 1.85 GHz) */
  if (cc >= 90) return 4096;  /* H100 SXM: 989 TF / (132 x 1.83 GHz) */
  if (cc >= 86) return 512;   /* A10, L40S, RTX 30/40: 4th/3rd-gen consumer tensor cores */
  if (cc >= 80) return 2048;  /* A100: 312 TF / (108 x 1.41 GHz) */
  if (cc >= 70) return 1024;  /* V100 */
  return 128;
}

/* FP32 FMA lanes per SM (each does 2 FLOP per clock): 128 on GA10x, Ada, Hopper and later,
 * 64 on A100, Turing and Volta. */
static double fp32_lanes_sm(int major, int minor) {
  int cc = major * 10 + minor;
  return cc >= 86 ? 128 : 64;
}

/* The device's roofline: the datasheet of a GPU gemmtune knows (H100, H200, A100), else its own
 * numbers, SMs x SM clock x the architecture's per-SM rate and the memory clock x bus width
 * (double data rate). fp8/i8 run at twice bf16, tf32 at half of it (the Hopper ratios). */
static void device_roof(const struct cudaDeviceProp *prop, int sms, int clock_khz, int mem_khz,
                        int bus_bits, gt_roof_t *roof) {
  if (gt_roof_datasheet(prop->name, sms, roof)) return;
  memset(roof, 0, sizeof *roof);
  const double hz = clock_khz * 1e3;
  const double tc16 = sms * flops_per_clock_sm(prop->major, prop->minor) * hz / 1e12;
  roof->tflops[GT_RATE_TC16] = tc16;
  roof->tflops[GT_RATE_TC8] = 2 * tc16;
  roof->tflops[GT_RATE_TF32] = tc16 / 2;
  roof->tflops[GT_RATE_F32] = sms * 2 * fp32_lanes_sm(prop->major, prop->minor) * hz / 1e12;
  roof->tflops[GT_RATE_F64] = roof->tflops[GT_RATE_F32] / 2;
  roof->gbps = 2.0 * (mem_khz * 1e3) * (bus_bits / 8.0) / 1e9;
  snprintf(roof->source, sizeof roof->source,
           "this device's numbers: %d SMs at %d MHz, %d-bit memory at %d MHz", sms,
           clock_khz / 1000, bus_bits, mem_khz / 1000);
}

static gt_status_t cuda_describe(int device, gt_device_info_t *out) {
  memset(out, 0, sizeof *out);
  gt_status_t s = cuda_available(device);
  if (s != GT_OK) return s;
  struct cudaDeviceProp prop;
  GT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int sms = 0, l2 = 0, clock_khz = 0, mem_khz = 0, bus_bits = 0;
  GT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  GT_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device) != cudaSuccess) clock_khz = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) mem_khz = 0;
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess)
    bus_bits = 0;
  cudaGetLastError();
  snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof out->name - 1, prop.name);
  snprintf(out->arch, sizeof out->arch, "sm_%d%d", prop.major, prop.minor);
  out->sm_count = sms;
  out->mem_gib = gt_db_mem_gib((uint64_t)prop.totalGlobalMem);
  out->cache_bytes = (size_t)(l2 > 0 ? l2 : 0);

  device_roof(&prop, sms, clock_khz, mem_khz, bus_bits, &out->roof);
  out->peak_tflops = out->roof.tflops[GT_RATE_TC16];
  out->peak_gbps = out->roof.gbps;

  void *h = NULL;
  out->busy_processes = gt_nvml_device(device, &h) == GT_OK ? gt_nvml_busy_processes(h) : -1;
  gt_err_clear();
  return GT_OK;
}

/* ---- open / close ------------------------------------------------------------------------------ */

static void cuda_close(struct gt_bench *b);

static gt_status_t scales_alloc(struct gt_bench *b, uint64_t seed);

static gt_status_t cuda_open(const gt_problem_t *p, const gt_measure_opts_t *o,
                             struct gt_bench **out) {
  *out = NULL;
  gt_status_t s = gt_problem_validate(p);
  if (s != GT_OK) return s;
  struct gt_bench *b = calloc(1, sizeof *b);
  if (!b) return gt_err_set(GT_ERR_NOMEM, "CUDA harness: no host memory");
  b->p = *p;
  gt_measure_opts_resolve(o, &b->o);
  b->device = b->o.device;
  b->launches = b->o.launches > 0 ? b->o.launches : 0;
  if ((s = cuda_available(b->device)) != GT_OK) {
    free(b);
    return s;
  }
  if (cudaSetDevice(b->device) != cudaSuccess) {
    int dev = b->device;
    free(b);
    return gt_err_set(GT_ERR_DEVICE, "cannot select CUDA device %d", dev);
  }

  b->a_elems = gt_problem_operand_elems(p, 'A');
  b->b_elems = gt_problem_operand_elems(p, 'B');
  b->c_elems = gt_problem_operand_elems(p, 'C');
  b->inplace = !p->beta_zero && p->c_type == p->d_type;
  b->bias = epi_has_bias(p->epilogue);
  const bool separate_c = !p->beta_zero && !b->inplace;

  gt_harness_scalars(p, b->o.init, &b->alpha, &b->beta);
  gt_store_elem(&b->alpha_buf, p->scale_type, 0, b->alpha);
  gt_store_elem(&b->beta_buf, p->scale_type, 0, p->beta_zero ? 0.0 : b->beta);
  /* What the scale type actually holds (f16 scales round). */
  b->alpha = gt_load_elem(&b->alpha_buf, p->scale_type, 0);
  b->beta = gt_load_elem(&b->beta_buf, p->scale_type, 0);

  /* Non-blocking: work other code leaves on the legacy default stream does not serialise with
   * (or get timed into) ours. */
  cudaError_t e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreate(&b->ev0);
  if (e == cudaSuccess) e = cudaEventCreate(&b->ev1);
  if (e != cudaSuccess) {
    s = gt_cuda_err(e, "creating the bench stream and events", __FILE__, __LINE__);
    cuda_close(b);
    return s;
  }

  /* How many sets make the rotation colder than L2. */
  b->set_bytes = b->a_elems * gt_dtype_size(p->a_type) + b->b_elems * gt_dtype_size(p->b_type) +
                 b->c_elems * gt_dtype_size(p->d_type) +
                 (separate_c ? b->c_elems * gt_dtype_size(p->c_type) : 0);
  size_t nsets = 1;
  if (!b->o.warm) {
    int l2 = 0;
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, b->device) != cudaSuccess) l2 = 0;
    double want = b->o.rotate_factor * (double)(l2 > 0 ? l2 : (50 << 20));
    nsets = (size_t)ceil(want / (double)b->set_bytes);
    /* Never fewer than two sets, whatever their size: with one, every launch re-reads what the
     * launch before it just streamed, and a kernel whose read order finds that launch's last
     * bytes still in L2 is timed faster than an application ever runs it (a model does not issue
     * the same weight twice in a row). Measured on an H200 with one and with two copies of a
     * 235 MB weight: an own decode kernel 6-8% faster with one, cuBLAS 1.5%. */
    if (nsets < 2) nsets = 2;
    size_t free_b = 0, total_b = 0;
    size_t half_free = (size_t)-1;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) half_free = free_b / 2;
    /* The cap bounds how far past two sets the L2 factor may take the rotation; half the free
     * memory bounds everything. */
    size_t cap = CUDA_ROTATE_CAP / b->set_bytes;
    if (cap < 2) cap = 2;
    if (nsets > cap) nsets = cap;
    if (nsets > half_free / b->set_bytes) nsets = half_free / b->set_bytes;
    if (nsets > CUDA_MAX_SETS) nsets = CUDA_MAX_SETS;
    if (nsets < 1) nsets = 1;
  }
  b->nsets = (int)nsets;
  b->sets = calloc(nsets, sizeof *b->sets);
  if (!b->sets) {
    cuda_close(b);
    return gt_err_set(GT_ERR_NOMEM, "CUDA harness: no host memory");
  }
  const size_t ref_bytes = (size_t)p->m * (size_t)p->n * (size_t)p->batch * sizeof(double);
  if ((s = set_alloc(b, &b->gate, !p->beta_zero)) != GT_OK ||
      (s = dev_alloc((void **)&b->ref, ref_bytes, "the fp64 reference")) != GT_OK ||
      (s = dev_alloc((void **)&b->acc, sizeof *b->acc, "the comparison sums")) != GT_OK ||
      (b->o.fenced &&
       (s = dev_alloc((void **)&b->fence_word, sizeof *b->fence_word, "the fence word")) != GT_OK)) {
    cuda_close(b);
    return s;
  }
  const gt_dtype_t bias_t = gt_cudalib_bias_type(p);
  if (b->bias && ((s = dev_alloc(&b->bias_buf, (size_t)p->m * gt_dtype_size(bias_t), "bias")) != GT_OK ||
                  (s = dev_alloc(&b->gate_bias, (size_t)p->m * gt_dtype_size(bias_t), "bias")) != GT_OK)) {
    cuda_close(b);
    return s;
  }
  uint64_t seed = mix64(b->o.seed);
  if ((s = scales_alloc(b, seed)) != GT_OK) {
    cuda_close(b);
    return s;
  }
  for (int i = 0; i < b->nsets; i++) {
    dev_set_t *st = &b->sets[i];
    if ((s = set_alloc(b, st, separate_c)) != GT_OK ||
        (s = fill(b, st->A, p->a_type, b->a_elems, mix64(seed + 4 * (uint64_t)i + 1))) != GT_OK ||
        (s = fill(b, st->B, p->b_type, b->b_elems, mix64(seed + 4 * (uint64_t)i + 2))) != GT_OK ||
        (s = fill(b, st->D, p->d_type, b->c_elems, mix64(seed + 4 * (uint64_t)i + 3))) != GT_OK ||
        (st->C && (s = fill(b, st->C, p->c_type, b->c_elems, mix64(seed + 4 * (uint64_t)i + 4))) != GT_OK)) {
      cuda_close(b);
      return s;
    }
  }
  if (b->bias && (s = fill(b, b->bias_buf, bias_t, (size_t)p->m, mix64(seed - 1))) != GT_OK) {
    cuda_close(b);
    return s;
  }
  gt_metric_poison(b->poison, p->d_type, 1);
  if ((s = wait_stream(b, CUDA_REF_TIMEOUT_S, "initialising input sets")) != GT_OK) {
    cuda_close(b);
    return s;
  }
  if (gt_nvml_device(b->device, &b->nvml) != GT_OK) b->nvml = NULL;
  gt_err_clear();
  *out = b;
  return GT_OK;
}

static void cuda_close(struct gt_bench *b) {
  if (!b) return;
  if (!gt_cuda_context_broken())
    for (int i = 0; i < 4; i++) cudaFree(b->scale[i]), cudaFree(b->gate_scale[i]);
  bool live = !gt_cuda_context_broken();
  if (live && b->stream) cudaStreamSynchronize(b->stream);
  if (b->sets)
    for (int i = 0; i < b->nsets; i++) set_free(&b->sets[i]);
  free(b->sets);
  set_free(&b->gate);
  if (live) {
    cudaFree(b->bias_buf);
    cudaFree(b->gate_bias);
    cudaFree(b->ref);
    cudaFree(b->acc);
    cudaFree(b->fence_word);
    if (b->fence_exec) cudaGraphExecDestroy(b->fence_exec);
    if (b->ev0) cudaEventDestroy(b->ev0);
    if (b->ev1) cudaEventDestroy(b->ev1);
    if (b->stream) cudaStreamDestroy(b->stream);
  }
  free(b);
}

/* ---- load / unload ------------------------------------------------------------------------------ */

static void cuda_unload(struct gt_loaded *l) {
  if (!l) return;
  bool live = !gt_cuda_context_broken();
  if (live && l->exec) cudaGraphExecDestroy(l->exec);
  if (l->state && l->c.provider->release) l->c.provider->release(l->state);
  if (live && l->ws) cudaFree(l->ws);
  free(l);
}

/* Find out now whether l's launches can be captured into a graph (one launch, captured and
 * thrown away), so its timing method is known from the moment it is loaded, before any sample. */
static gt_status_t probe_capture(struct gt_loaded *l) {
  struct gt_bench *b = l->b;
  cudaGraph_t graph = NULL;
  char why[192] = "";
  gt_status_t s = GT_OK;
  cudaError_t e = cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) {
    gt_operands_t ops = operands(b, &b->sets[0], b->bias_buf, l);
    s = run_once(l, &ops);
    if (s != GT_OK) snprintf(why, sizeof why, "%s", gt_err_msg());
    e = cudaStreamEndCapture(b->stream, &graph);
    if (s == GT_OK && e != cudaSuccess)
      snprintf(why, sizeof why, "cudaStreamEndCapture: %s", cudaGetErrorString(e));
  } else {
    snprintf(why, sizeof why, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
  }
  if (graph) cudaGraphDestroy(graph);
  if (s == GT_OK && e == cudaSuccess && graph) {
    l->method = "graph";
    return GT_OK;
  }
  cudaGetLastError(); /* capture errors are not sticky; clear them for the stream path */
  if (gt_cuda_context_broken()) return context_usable();
  l->capture_failed = true;
  l->method = "stream";
  snprintf(l->capture_err, sizeof l->capture_err, "%s", why[0] ? why : "capture failed");
  return GT_OK;
}

static gt_status_t cuda_load(struct gt_bench *b, const gt_candidate_t *c, struct gt_loaded **out) {
  *out = NULL;
  gt_status_t s = context_usable();
  if (s != GT_OK) return s;
  const gt_provider_t *pr = c->provider;
  if (!pr) return gt_err_set(GT_ERR_USAGE, "%s: candidate has no provider", c->name);
  if (pr->backend != GT_BACKEND_CUDA)
    return gt_err_set(GT_ERR_USAGE, "%s: provider %s is not a CUDA provider", c->name, pr->name);
  if (c->excluded) return gt_err_set(GT_ERR_USAGE, "%s is excluded: %s", c->name, c->reason);
  if (!pr->prepare || !pr->run)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: provider %s cannot run candidates", c->name, pr->name);
  if ((s = gt_provider_ready(pr)) != GT_OK) return s;
  GT_CUDA_CHECK(cudaSetDevice(b->device));
  struct gt_loaded *l = calloc(1, sizeof *l);
  if (!l) return gt_err_set(GT_ERR_NOMEM, "CUDA harness: no host memory");
  l->b = b;
  l->c = *c;
  l->method = "";
  size_t ws = 0;
  if ((s = pr->prepare(c, &b->p, &l->state, &ws)) != GT_OK) {
    free(l);
    return s;
  }
  if (ws) {
    if ((s = dev_alloc(&l->ws, ws, "the workspace")) != GT_OK) {
      cuda_unload(l);
      return s;
    }
    l->ws_size = ws;
  }
  /* The first run after a load pays for module loading, lazy initialisation and cold
   * instruction caches: it runs here, is waited for, and is never timed or judged. */
  gt_operands_t ops = operands(b, &b->sets[0], b->bias_buf, l);
  if ((s = run_once(l, &ops)) == GT_OK) s = wait_stream(b, b->o.timeout_s, c->name);
  if (s == GT_OK) s = probe_capture(l);
  if (s != GT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    cuda_unload(l);
    return gt_err_set(s, "%s", msg);
  }
  *out = l;
  return GT_OK;
}

/* ---- gate ---------------------------------------------------------------------------------------- */

static gt_status_t copy_acc(struct gt_bench *b, gt_cuk_acc_t *host) {
  gt_status_t s = wait_stream(b, CUDA_REF_TIMEOUT_S, "the fp64 reference");
  if (s != GT_OK) return s;
  GT_CUDA_CHECK(cudaMemcpy(host, b->acc, sizeof *host, cudaMemcpyDeviceToHost));
  return GT_OK;
}

/* Which of the four scale arrays (scale_a, scale_b, scale_d, amax_d) gt_harness_scale_elems
 * sizes. */
static const char k_scale_which[4] = {'A', 'B', 'D', 'X'};

/* Fresh factors into the device array dst (n of them) from the generator state *rng. */
static gt_status_t scales_fill(struct gt_bench *b, float *dst, size_t n, uint64_t *rng) {
  float *h = malloc(n * sizeof *h);
  if (!h) return gt_err_set(GT_ERR_NOMEM, "CUDA harness: no host memory for the fp8 scales");
  gt_harness_fill_scales(h, n, rng);
  cudaError_t e = cudaMemcpyAsync(dst, h, n * sizeof *h, cudaMemcpyHostToDevice, b->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(b->stream);
  free(h);
  return e == cudaSuccess ? GT_OK : gt_cuda_err(e, "copying the fp8 scales", __FILE__, __LINE__);
}

/* The fp8 scale arrays of an fp8 key (none otherwise). */
static gt_status_t scales_alloc(struct gt_bench *b, uint64_t seed) {
  gt_status_t s;
  uint64_t rng = seed ^ 0x5CA1EF0Bull;
  for (int i = 0; i < 4; i++) {
    size_t n = gt_harness_scale_elems(&b->p, k_scale_which[i]);
    if (!n) continue;
    if ((s = dev_alloc((void **)&b->scale[i], n * sizeof(float), "fp8 scales")) != GT_OK ||
        (s = dev_alloc((void **)&b->gate_scale[i], n * sizeof(float), "fp8 scales")) != GT_OK ||
        (s = scales_fill(b, b->scale[i], n, &rng)) != GT_OK)
      return s;
  }
  return GT_OK;
}

/* The amax output of an fp8 key: max|D| before D's scale, as cuBLASLt writes it, within the
 * bound D's elements are gated at (the host harness's rule). acc holds the reference's max. */
static gt_status_t gate_amax(struct gt_bench *b, const gt_cuk_acc_t *acc, gt_gate_t *out) {
  float got = 0.0f, sd = 1.0f;
  GT_CUDA_CHECK(cudaMemcpy(&got, b->gate_scale[3], sizeof got, cudaMemcpyDeviceToHost));
  if (b->p.scale_d) GT_CUDA_CHECK(cudaMemcpy(&sd, b->gate_scale[2], sizeof sd, cudaMemcpyDeviceToHost));
  double mx;
  memcpy(&mx, &acc->absmax_bits, sizeof mx);
  const double want = mx / (double)sd, tol = gt_harness_amax_tol(&b->p) * want + 1e-30;
  if (!(fabs((double)got - want) <= tol)) {
    out->passed = false;
    snprintf(out->why, sizeof out->why, "amax_d %.6g, expected %.6g (max|D| before its scale)",
             (double)got, want);
  }
  return GT_OK;
}

static gt_status_t cuda_gate(struct gt_bench *b, struct gt_loaded *l, gt_gate_t *out) {
  const gt_problem_t *p = &b->p;
  memset(out, 0, sizeof *out);
  out->bound = gt_metric_bound(p);
  gt_status_t s = context_usable();
  if (s != GT_OK) return s;
  GT_CUDA_CHECK(cudaSetDevice(b->device));

  /* A new seed per gate, derived from the bench seed so a failure reproduces with GEMMTUNE_SEED. */
  uint64_t seed = mix64(b->o.seed ^ (0xD1B54A32D192ED03ull * ++b->gate_count));
  const gt_dtype_t bias_t = gt_cudalib_bias_type(p);
  if ((s = fill(b, b->gate.A, p->a_type, b->a_elems, mix64(seed + 1))) != GT_OK ||
      (s = fill(b, b->gate.B, p->b_type, b->b_elems, mix64(seed + 2))) != GT_OK ||
      (b->gate.C && (s = fill(b, b->gate.C, p->c_type, b->c_elems, mix64(seed + 3))) != GT_OK) ||
      (b->bias && (s = fill(b, b->gate_bias, bias_t, (size_t)p->m, mix64(seed + 4))) != GT_OK))
    return s;
  uint64_t srng = mix64(seed + 5);
  for (int i = 0; i < 3; i++) /* amax_d (3) is an output */
    if (b->gate_scale[i] &&
        (s = scales_fill(b, b->gate_scale[i], gt_harness_scale_elems(p, k_scale_which[i]), &srng)) != GT_OK)
      return s;
  /* The amax output poisoned (all-ones bits: a NaN), so one the candidate never wrote fails. */
  if (b->gate_scale[3]) GT_CUDA_CHECK(cudaMemsetAsync(b->gate_scale[3], 0xFF, sizeof(float), b->stream));
  const size_t d_bytes = b->c_elems * gt_dtype_size(p->d_type);
  bool poisoned = !b->inplace;
  if (poisoned)
    GT_CUDA_CHECK(gt_cuk_fill_pattern(b->gate.D, gt_dtype_size(p->d_type), b->c_elems, b->poison,
                                      b->stream));
  else
    GT_CUDA_CHECK(cudaMemcpyAsync(b->gate.D, b->gate.C, d_bytes, cudaMemcpyDeviceToDevice, b->stream));

  gt_operands_t ops = operands(b, &b->gate, b->gate_bias, l);
  if ((s = run_once(l, &ops)) == GT_OK) s = wait_stream(b, b->o.timeout_s, l->c.name);
  if (s != GT_OK) {
    snprintf(out->why, sizeof out->why, "run failed: %s", gt_err_msg());
    return s;
  }

  gt_cuk_gemm_t g = cuk_gemm(b);
  gt_cuk_acc_t acc;
  GT_CUDA_CHECK(cudaMemsetAsync(b->acc, 0, sizeof *b->acc, b->stream));
  GT_CUDA_CHECK(gt_cuk_reference(&g, b->gate.A, b->gate.B, b->gate.C, b->gate_bias, b->ref,
                                 b->stream));
  const size_t nref = (size_t)p->m * (size_t)p->n * (size_t)p->batch;
  GT_CUDA_CHECK(gt_cuk_ref_stats(b->ref, nref, b->acc, b->stream));
  if ((s = copy_acc(b, &acc)) != GT_OK) {
    snprintf(out->why, sizeof out->why, "reference failed: %s", gt_err_msg());
    return s;
  }
  gt_metric_acc_t a;
  gt_metric_acc_init(&a, p);
  gt_metric_acc_set_ref_rms(&a, p, acc.finite_all ? sqrt(acc.ref2_all / (double)acc.finite_all) : 0.0);
  GT_CUDA_CHECK(gt_cuk_compare(&g, b->gate.D, b->ref, a.atol, a.rtol, b->poison, poisoned, b->acc,
                               b->stream));
  if ((s = copy_acc(b, &acc)) != GT_OK) {
    snprintf(out->why, sizeof out->why, "comparison failed: %s", gt_err_msg());
    return s;
  }
  a.diff2 = acc.diff2;
  a.ref2 = acc.ref2;
  a.mismatches = (int64_t)acc.mismatches;
  a.nonfinite = (int64_t)acc.nonfinite;
  a.unwritten = (int64_t)acc.unwritten;
  a.checked = (int64_t)acc.checked;
  gt_metric_acc_finish(&a, p, out);
  if (out->passed && p->amax_d && (s = gate_amax(b, &acc, out)) != GT_OK) return s;
  if (!out->passed) return gt_err_set(GT_ERR_GATE, "%s: %s", l->c.name, out->why);
  return GT_OK;
}

/* ---- timing ---------------------------------------------------------------------------------------- */

/* Whole rotations: every replay starts on set 0 with every other set touched since. */
static int round_launches(const struct gt_bench *b, int n) {
  if (n < 1) n = 1;
  if (b->nsets > 1) n = (n + b->nsets - 1) / b->nsets * b->nsets;
  return n;
}

static gt_status_t elapsed_us(struct gt_bench *b, double *us) {
  float ms = 0.f;
  GT_CUDA_CHECK(cudaEventElapsedTime(&ms, b->ev0, b->ev1));
  *us = (double)ms * 1e3;
  return GT_OK;
}

/* Capture n launches into a graph and instantiate it. A candidate whose launches cannot be
 * captured is not an error: it falls back to stream timing (l->capture_failed). */
static gt_status_t build_graph(struct gt_loaded *l, int n) {
  struct gt_bench *b = l->b;
  if (l->exec) {
    cudaGraphExecDestroy(l->exec);
    l->exec = NULL;
    l->graph_launches = 0;
  }
  cudaGraph_t graph = NULL;
  gt_status_t s = GT_OK;
  char why[192] = "";
  cudaError_t e = cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) {
    for (int i = 0; i < n && s == GT_OK; i++) {
      gt_operands_t ops = operands(b, &b->sets[i % b->nsets], b->bias_buf, l);
      s = run_once(l, &ops);
    }
    if (s != GT_OK) snprintf(why, sizeof why, "%s", gt_err_msg());
    e = cudaStreamEndCapture(b->stream, &graph);
    if (s == GT_OK && e != cudaSuccess)
      snprintf(why, sizeof why, "cudaStreamEndCapture: %s", cudaGetErrorString(e));
  } else {
    snprintf(why, sizeof why, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
  }
  if (s == GT_OK && e == cudaSuccess && graph) {
    e = cudaGraphInstantiate(&l->exec, graph, 0);
    if (e != cudaSuccess) {
      l->exec = NULL;
      snprintf(why, sizeof why, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
  }
  if (graph) cudaGraphDestroy(graph);
  if (!l->exec) {
    cudaGetLastError(); /* capture errors are not sticky; clear them for the stream path */
    if (gt_cuda_context_broken()) return context_usable();
    l->capture_failed = true;
    l->method = "stream";
    snprintf(l->capture_err, sizeof l->capture_err, "%s", why[0] ? why : "capture failed");
    return GT_OK;
  }
  /* First replay uploads the graph and warms what instantiation left cold: discarded. */
  GT_CUDA_CHECK(cudaGraphLaunch(l->exec, b->stream));
  if ((s = wait_stream(b, b->o.timeout_s, l->c.name)) != GT_OK) return s;
  l->graph_launches = n;
  l->method = "graph";
  return GT_OK;
}

/* Fenced timing: the separator's own time per launch, from a graph of n separators alone (built
 * once per n), the median of FENCE_SAMPLES replays. A separator between two GEMMs waits for the
 * first to finish and the second waits for it, so what it adds is about its own run plus one
 * dependent launch, which a chain of separators alone measures. */
#define FENCE_SAMPLES 5
static gt_status_t fence_cost(struct gt_bench *b, int n, double *us) {
  gt_status_t s;
  if (b->fence_exec && b->fence_n == n) {
    *us = b->fence_us;
    return GT_OK;
  }
  if (b->fence_exec) cudaGraphExecDestroy(b->fence_exec);
  b->fence_exec = NULL;
  cudaGraph_t graph = NULL;
  GT_CUDA_CHECK(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
  cudaError_t e = cudaSuccess;
  for (int i = 0; i < n && e == cudaSuccess; i++) e = gt_cuk_fence(b->fence_word, b->stream);
  cudaError_t e2 = cudaStreamEndCapture(b->stream, &graph);
  if (e == cudaSuccess) e = e2;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&b->fence_exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  if (e != cudaSuccess) {
    b->fence_exec = NULL;
    return gt_cuda_err(e, "capturing the fenced timing's separators", __FILE__, __LINE__);
  }
  double v[FENCE_SAMPLES];
  for (int r = -1; r < FENCE_SAMPLES; r++) { /* replay -1 uploads the graph: discarded */
    GT_CUDA_CHECK(cudaEventRecord(b->ev0, b->stream));
    GT_CUDA_CHECK(cudaGraphLaunch(b->fence_exec, b->stream));
    if ((s = wait_stream(b, b->o.timeout_s, "the fenced timing's separators")) != GT_OK) return s;
    double t = 0;
    if ((s = elapsed_us(b, &t)) != GT_OK) return s;
    if (r >= 0) v[r] = t / n;
  }
  b->fence_n = n;
  b->fence_us = gt_stats_median(v, FENCE_SAMPLES);
  *us = b->fence_us;
  return GT_OK;
}

/* One sample of n launches, stream method. */
static gt_status_t sample_stream(struct gt_loaded *l, int n, double *us) {
  struct gt_bench *b = l->b;
  gt_status_t s;
  GT_CUDA_CHECK(cudaEventRecord(b->ev0, b->stream));
  for (int i = 0; i < n; i++) {
    gt_operands_t ops = operands(b, &b->sets[i % b->nsets], b->bias_buf, l);
    if ((s = run_once(l, &ops)) != GT_OK) return s;
  }
  if ((s = wait_stream(b, b->o.timeout_s, l->c.name)) != GT_OK) return s;
  return elapsed_us(b, us);
}

static gt_status_t cuda_time(struct gt_bench *b, struct gt_loaded *l, int launches, double *us) {
  *us = NAN;
  gt_status_t s = context_usable();
  if (s != GT_OK) return s;
  GT_CUDA_CHECK(cudaSetDevice(b->device));
  int n = launches > 0 ? launches : b->launches;
  if (n <= 0) {
    /* Auto: one launch, timed by events, estimates how many fill sample_target_us. It runs as a
     * plain launch, so its launch overhead makes the estimate long and the count conservative. */
    double one = 0;
    if ((s = sample_stream(l, 1, &one)) != GT_OK) return s;
    double want = ceil(b->o.sample_target_us / (one > 0.5 ? one : 0.5));
    n = want > CUDA_MAX_AUTO_LAUNCHES ? CUDA_MAX_AUTO_LAUNCHES : want < 1 ? 1 : (int)want;
    n = round_launches(b, n);
    b->launches = n;
  }
  n = round_launches(b, n);
  if (!l->capture_failed && (!l->exec || l->graph_launches != n))
    if ((s = build_graph(l, n)) != GT_OK) return s;

  double total = 0;
  if (l->exec) {
    GT_CUDA_CHECK(cudaEventRecord(b->ev0, b->stream));
    GT_CUDA_CHECK(cudaGraphLaunch(l->exec, b->stream));
    if ((s = wait_stream(b, b->o.timeout_s, l->c.name)) != GT_OK) return s;
    if ((s = elapsed_us(b, &total)) != GT_OK) return s;
  } else {
    l->method = "stream";
    if ((s = sample_stream(l, n, &total)) != GT_OK) return s;
  }
  *us = total / n;
  if (b->o.fenced) {
    double f = 0;
    if ((s = fence_cost(b, n, &f)) != GT_OK) return s;
    /* Never below a tenth of the fenced time: the subtraction is an estimate, and a time of 0
     * would read as infinitely fast. */
    *us = *us - f > 0.1 * *us ? *us - f : 0.1 * *us;
  }
  return GT_OK;
}

/* ---- the rest -------------------------------------------------------------------------------------- */

static gt_status_t cuda_telemetry(struct gt_bench *b, gt_telemetry_t *out) {
  memset(out, 0, sizeof *out);
  if (!b->nvml) return GT_OK; /* valid = false: NVML missing or does not know this device */
  gt_status_t s = gt_nvml_telemetry(b->nvml, out);
  if (s != GT_OK) {
    memset(out, 0, sizeof *out);
    gt_err_clear();
  }
  return GT_OK;
}

static int cuda_launches(struct gt_bench *b) { return b->launches; }

static void cuda_set_launches(struct gt_bench *b, int launches) {
  b->launches = launches > 0 ? round_launches(b, launches) : 0;
}

/* Known from load() on (probe_capture); a capture that fails later, for a longer graph, turns
 * it to "stream". */
static const char *cuda_timing(struct gt_bench *b, struct gt_loaded *l) {
  const char *m = l && l->method[0] ? l->method : "graph";
  if (!b->o.fenced) return m;
  return strcmp(m, "stream") == 0 ? "stream-fenced" : "graph-fenced";
}

const char *gt_harness_cuda_timing_method(struct gt_loaded *l) { return l ? l->method : ""; }

const char *gt_harness_cuda_capture_error(struct gt_loaded *l) { return l ? l->capture_err : ""; }

void gt_harness_cuda_rotation(struct gt_bench *b, int *nsets, size_t *total_bytes) {
  *nsets = b->nsets;
  *total_bytes = b->set_bytes * (size_t)b->nsets;
}

const gt_harness_ops_t gt_harness_cuda = {
    .name = "cuda",
    .backend = GT_BACKEND_CUDA,
    .available = cuda_available,
    .describe = cuda_describe,
    .open = cuda_open,
    .load = cuda_load,
    .gate = cuda_gate,
    .time = cuda_time,
    .telemetry = cuda_telemetry,
    .launches = cuda_launches,
    .set_launches = cuda_set_launches,
    .unload = cuda_unload,
    .close = cuda_close,
    .timing = cuda_timing,
};
