/* The "cpu" provider: real CPU GEMM instances whose speed differs by shape, so the whole tuning
 * loop (baseline, race, gate, DB row, runtime dispatch) runs and means something without a GPU.
 *
 * Instances (f32, bf16 or f16 for all of A, B, C, D; f32 accumulation and scale):
 *   cpu_naive_<dt>                    textbook triple loop, one dot product per output, operands
 *                                     read in place: the baseline ("what an unoptimised
 *                                     application does")
 *   cpu_ikj_<dt>                      axpy order: D(:,j) += op(A)(:,p) * op(B)(p,j); vectorises
 *                                     along M when A is not transposed, strided when it is
 *   cpu_pack_<dt>                     op(A) rows and op(B) columns packed to contiguous fp32 once,
 *                                     then 2x2 blocks of dot products vectorised along K: good for
 *                                     transposed or bf16/f16 inputs and for long K, no cache
 *                                     blocking
 *   cpu_blk_<dt>_t<MC>x<NC>x<KC>_r<MR>x<NR>
 *                                     GotoBLAS-style: op(B) KCxNC and op(A) MCxKC blocks packed
 *                                     into fp32 micro-panels, an MRxNR register micro-kernel
 *   cpu_par_<dt>_th<T>_t<MC>x<NC>x<KC>_r<MR>x<NR>
 *                                     the blocked kernel on T threads, NC-wide column panels
 *                                     dealt round-robin (a thread pool started in prepare); a
 *                                     narrow N leaves threads idle
 *
 * Every instance implements the cuBLASLt epilogues (none, bias, relu, bias_relu, gelu, bias_gelu):
 * D = act(alpha*op(A)op(B) + beta*C + bias), bias a length-m vector of D's type broadcast along
 * columns and shared by every batch item, GELU the tanh approximation; computed in fp32 in the
 * store step, once per output element, after the accumulation is complete (so the blocked
 * instances apply it when a column panel is written, never per K block).
 *
 * Every scratch buffer is sized from the problem and allocated in prepare; run never allocates. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/gt_dtype.h"
#include "core/gt_name.h"
#include "gt_provider.h"
#include "gt_reference.h"

extern const gt_provider_t gt_provider_cpu;

typedef enum cpu_kind { CPU_NAIVE = 1, CPU_IKJ, CPU_PACK, CPU_BLK, CPU_PAR } cpu_kind_t;

/* Parameters of one instance; this is the candidate blob (zero-padded, so equal parameters give
 * equal blobs). */
typedef struct cpu_params {
  int32_t kind;
  int32_t dt; /* gt_dtype_t of A, B, C and D */
  int32_t mc, nc, kc, mr, nr, threads;
} cpu_params_t;

static const char *const k_kind_word[] = {
    [CPU_NAIVE] = "naive", [CPU_IKJ] = "ikj", [CPU_PACK] = "pack", [CPU_BLK] = "blk",
    [CPU_PAR] = "par"};

/* Register tiles with a micro-kernel below. With SSE2 (the x86-64 baseline) an 8x4 or 4x8 tile
 * keeps its 32 accumulators in 8 of the 16 vector registers; 4x4 is the small-shape tile. */
static const int k_tiles[][2] = {{8, 4}, {4, 8}, {4, 4}};

/* Cache-block limits accepted by from_name: beyond them scratch would be unreasonable. */
#define CPU_MAX_BLOCK 8192
#define CPU_MAX_THREADS 256

/* ---- element access ------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) float ld(const void *p, gt_dtype_t dt, size_t i) {
  switch (dt) {
    case GT_DT_F32: return ((const float *)p)[i];
    case GT_DT_BF16: {
      uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
      float f;
      memcpy(&f, &u, sizeof f);
      return f;
    }
    case GT_DT_F16: return gt_f16_to_f32(((const uint16_t *)p)[i]);
    default: return 0.0f;
  }
}

static inline __attribute__((always_inline)) void st(void *p, gt_dtype_t dt, size_t i, float v) {
  switch (dt) {
    case GT_DT_F32: ((float *)p)[i] = v; break;
    case GT_DT_BF16: ((uint16_t *)p)[i] = gt_f32_to_bf16(v); break;
    case GT_DT_F16: ((uint16_t *)p)[i] = gt_f32_to_f16(v); break;
    default: break;
  }
}

/* Offsets of op(A)(i,p) and op(B)(p,j) within one batch item. */
static inline size_t a_idx(const gt_problem_t *p, int64_t i, int64_t q) {
  return p->transa == GT_TRANS_N ? (size_t)(i + q * p->lda) : (size_t)(q + i * p->lda);
}
static inline size_t b_idx(const gt_problem_t *p, int64_t q, int64_t j) {
  return p->transb == GT_TRANS_N ? (size_t)(q + j * p->ldb) : (size_t)(j + q * p->ldb);
}

/* ---- support and names ---------------------------------------------------------------------- */

static bool cpu_type_ok(gt_dtype_t t) {
  return t == GT_DT_F32 || t == GT_DT_BF16 || t == GT_DT_F16;
}

/* The epilogues the store step implements (epi_apply): named one by one, so that an epilogue
 * added to the key later is refused here until it is implemented, not computed as none. */
static bool cpu_epilogue_ok(gt_epilogue_t e) {
  switch (e) {
    case GT_EPI_NONE:
    case GT_EPI_BIAS:
    case GT_EPI_RELU:
    case GT_EPI_BIAS_RELU:
    case GT_EPI_GELU:
    case GT_EPI_BIAS_GELU: return true;
    default: return false;
  }
}

/* True when cpu instances implement p; otherwise false with the reason in `why`. */
static bool cpu_supports(const gt_problem_t *p, char *why, size_t cap) {
  if (p->op != GT_OP_GEMM) return snprintf(why, cap, "operation not implemented by cpu instances"), false;
  if (!cpu_type_ok(p->a_type) || p->b_type != p->a_type || p->c_type != p->a_type ||
      p->d_type != p->a_type)
    return snprintf(why, cap,
                    "types a=%s b=%s c=%s d=%s not implemented by cpu instances (all four f32, "
                    "bf16 or f16)",
                    gt_dtype_name(p->a_type), gt_dtype_name(p->b_type), gt_dtype_name(p->c_type),
                    gt_dtype_name(p->d_type)),
           false;
  if (p->compute != GT_COMPUTE_F32)
    return snprintf(why, cap, "compute %s not implemented by cpu instances (f32 accumulation only)",
                    gt_compute_name(p->compute)),
           false;
  if (p->scale_type != GT_DT_F32)
    return snprintf(why, cap, "scale type %s not implemented by cpu instances (f32 only)",
                    gt_dtype_name(p->scale_type)),
           false;
  if (!cpu_epilogue_ok(p->epilogue))
    return snprintf(why, cap, "epilogue %s not implemented by cpu instances",
                    gt_epilogue_name(p->epilogue)),
           false;
  return true;
}

static bool cpu_format_name(const cpu_params_t *c, char *buf, int cap) {
  buf[0] = '\0';
  bool ok = gt_name_append(buf, cap, "cpu") && gt_name_append(buf, cap, "%s", k_kind_word[c->kind]) &&
            gt_name_append(buf, cap, "%s", gt_dtype_name((gt_dtype_t)c->dt));
  if (c->kind == CPU_PAR) ok = ok && gt_name_append(buf, cap, "th%d", c->threads);
  if (c->kind == CPU_BLK || c->kind == CPU_PAR)
    ok = ok && gt_name_append(buf, cap, "t%dx%dx%d", c->mc, c->nc, c->kc) &&
         gt_name_append(buf, cap, "r%dx%d", c->mr, c->nr);
  return ok;
}

static void cpu_make_candidate(const cpu_params_t *c, gt_candidate_t *out) {
  memset(out, 0, sizeof *out);
  out->provider = &gt_provider_cpu;
  cpu_format_name(c, out->name, sizeof out->name);
  out->is_baseline = c->kind == CPU_NAIVE;
  _Static_assert(sizeof(cpu_params_t) <= GT_CAND_BLOB, "cpu params must fit the blob");
  memcpy(out->blob, c, sizeof *c);
}

static int online_cores(void) {
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c > 0 ? (int)c : 1;
}

/* The instance set, in listing order (the baseline first). */
static int cpu_instances(gt_dtype_t dt, cpu_params_t *out, int cap) {
  int threads = online_cores();
  if (threads > 64) threads = 64;
  const cpu_params_t list[] = {
      {CPU_NAIVE, dt, 0, 0, 0, 0, 0, 0},
      {CPU_IKJ, dt, 0, 0, 0, 0, 0, 0},
      {CPU_PACK, dt, 0, 0, 0, 0, 0, 0},
      {CPU_BLK, dt, 64, 64, 256, 8, 4, 0},    /* balanced: square-ish shapes */
      {CPU_BLK, dt, 128, 32, 128, 4, 8, 0},   /* tall M, narrow N */
      {CPU_BLK, dt, 32, 128, 512, 4, 4, 0},   /* short M, long K */
      {CPU_PAR, dt, 64, 64, 256, 8, 4, threads},
  };
  int n = (int)(sizeof list / sizeof list[0]);
  if (n > cap) n = cap;
  memcpy(out, list, (size_t)n * sizeof *out);
  return n;
}

static gt_status_t cpu_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o,
                                 gt_cand_list_t *out) {
  cpu_params_t inst[16];
  gt_dtype_t dt = p->a_type;
  int n = cpu_instances(dt, inst, 16);
  char why[GT_REASON_MAX];
  bool ok = cpu_supports(p, why, sizeof why);
  int active = 0;
  for (int i = 0; i < n; i++) {
    gt_candidate_t c;
    cpu_make_candidate(&inst[i], &c);
    if (!ok) {
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "%s", why);
    } else if (inst[i].kind == CPU_PAR && inst[i].threads < 2) {
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "one online core: nothing to parallelise over");
    } else if (o && o->max_candidates > 0 && active >= o->max_candidates && !c.is_baseline) {
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "over the candidate cap (%d)", o->max_candidates);
    } else {
      active++;
    }
    gt_status_t s = gt_cand_list_push(out, &c);
    if (s != GT_OK) return s;
  }
  return GT_OK;
}

static bool tile_supported(int mr, int nr) {
  for (size_t i = 0; i < sizeof k_tiles / sizeof k_tiles[0]; i++)
    if (k_tiles[i][0] == mr && k_tiles[i][1] == nr) return true;
  return false;
}

static gt_status_t cpu_parse_name(const char *name, cpu_params_t *c) {
  gt_name_tokens_t t;
  memset(c, 0, sizeof *c);
  if (strncmp(name, "cpu_", 4) != 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a cpu instance", name);
  if (gt_name_split(name, &t) != GT_OK || t.n < 3)
    return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a cpu instance", name);
  for (int k = CPU_NAIVE; k <= CPU_PAR; k++)
    if (strcmp(t.tok[1], k_kind_word[k]) == 0) c->kind = k;
  if (!c->kind)
    return gt_err_set(GT_ERR_NOT_FOUND, "cpu instance '%s': unknown kind '%s'", name, t.tok[1]);
  gt_dtype_t dt;
  if (gt_dtype_parse(t.tok[2], &dt) != GT_OK || strcmp(gt_dtype_name(dt), t.tok[2]) != 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "cpu instance '%s': bad type token '%s'", name, t.tok[2]);
  c->dt = dt;
  int want = c->kind == CPU_BLK ? 5 : c->kind == CPU_PAR ? 6 : 3;
  if (t.n != want)
    return gt_err_set(GT_ERR_NOT_FOUND, "cpu instance '%s': %d tokens, a %s instance has %d", name,
                      t.n, k_kind_word[c->kind], want);
  int next = 3;
  int64_t v[3];
  if (c->kind == CPU_PAR) {
    if (gt_name_param(t.tok[next], "th", v, 1) != 1 || v[0] < 1 || v[0] > CPU_MAX_THREADS)
      return gt_err_set(GT_ERR_NOT_FOUND, "cpu instance '%s': bad thread token '%s'", name,
                        t.tok[next]);
    c->threads = (int32_t)v[0];
    next++;
  }
  if (c->kind == CPU_BLK || c->kind == CPU_PAR) {
    if (gt_name_param(t.tok[next], "t", v, 3) != 3)
      return gt_err_set(GT_ERR_NOT_FOUND, "cpu instance '%s': bad tile token '%s'", name,
                        t.tok[next]);
    for (int i = 0; i < 3; i++)
      if (v[i] < 1 || v[i] > CPU_MAX_BLOCK)
        return gt_err_set(GT_ERR_NOT_FOUND, "cpu instance '%s': block %lld out of range 1..%d",
                          name, (long long)v[i], CPU_MAX_BLOCK);
    c->mc = (int32_t)v[0], c->nc = (int32_t)v[1], c->kc = (int32_t)v[2];
    next++;
    if (gt_name_param(t.tok[next], "r", v, 2) != 2 || !tile_supported((int)v[0], (int)v[1]))
      return gt_err_set(GT_ERR_NOT_FOUND,
                        "cpu instance '%s': register tile '%s' has no micro-kernel (8x4, 4x8, 4x4)",
                        name, t.tok[next]);
    c->mr = (int32_t)v[0], c->nr = (int32_t)v[1];
    if (c->mc % c->mr || c->nc % c->nr)
      return gt_err_set(GT_ERR_NOT_FOUND,
                        "cpu instance '%s': cache block %dx%d is not a multiple of the register "
                        "tile %dx%d",
                        name, c->mc, c->nc, c->mr, c->nr);
  }
  /* Only the canonical spelling is a name ("t064x..." would not round-trip). */
  char canon[GT_NAME_MAX];
  if (!cpu_format_name(c, canon, sizeof canon) || strcmp(canon, name) != 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "cpu instance '%s' is not in canonical form ('%s')", name,
                      canon);
  return GT_OK;
}

static gt_status_t cpu_from_name(const char *name, const gt_problem_t *p, gt_candidate_t *out) {
  cpu_params_t c;
  gt_status_t s = cpu_parse_name(name, &c);
  if (s != GT_OK) return s;
  char why[GT_REASON_MAX];
  if (!cpu_supports(p, why, sizeof why))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
  if ((gt_dtype_t)c.dt != p->a_type)
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s is a %s instance, the problem is %s", name,
                      gt_dtype_name((gt_dtype_t)c.dt), gt_dtype_name(p->a_type));
  cpu_make_candidate(&c, out);
  return GT_OK;
}

/* ---- micro-kernels --------------------------------------------------------------------------
 * c (column-major, ld ldc) += a_panel (kc x MR, MR contiguous per k) * b_panel (kc x NR), with
 * only the top-left mr x nr of the tile stored (edge tiles are zero-padded in the panels). The
 * accumulator array is fully unrolled by the compiler into vector registers. */
#define GT_CPU_UKR(MR, NR)                                                                     \
  static void ukr_##MR##x##NR(int64_t kc, const float *restrict a, const float *restrict b,    \
                              float *restrict c, int64_t ldc, int mr, int nr) {                \
    float t[NR][MR];                                                                           \
    for (int j = 0; j < NR; j++)                                                               \
      for (int i = 0; i < MR; i++) t[j][i] = 0.0f;                                             \
    for (int64_t q = 0; q < kc; q++, a += MR, b += NR)                                         \
      for (int j = 0; j < NR; j++)                                                             \
        for (int i = 0; i < MR; i++) t[j][i] += a[i] * b[j];                                   \
    if (mr == MR && nr == NR) {                                                                \
      for (int j = 0; j < NR; j++)                                                             \
        for (int i = 0; i < MR; i++) c[j * ldc + i] += t[j][i];                                \
    } else {                                                                                   \
      for (int j = 0; j < nr; j++)                                                             \
        for (int i = 0; i < mr; i++) c[j * ldc + i] += t[j][i];                                \
    }                                                                                          \
  }
GT_CPU_UKR(8, 4)
GT_CPU_UKR(4, 8)
GT_CPU_UKR(4, 4)

typedef void (*ukr_fn)(int64_t, const float *restrict, const float *restrict, float *restrict,
                       int64_t, int, int);

static ukr_fn ukr_for(int mr, int nr) {
  if (mr == 8 && nr == 4) return ukr_8x4;
  if (mr == 4 && nr == 8) return ukr_4x8;
  return ukr_4x4;
}

/* ---- state ---------------------------------------------------------------------------------- */

struct cpu_state;

/* Scratch owned by one worker of a blocked instance. */
typedef struct cpu_scratch {
  float *ap;   /* MC x KC, MR-row micro-panels */
  float *bp;   /* KC x NC, NR-column micro-panels */
  float *cacc; /* m x NC fp32 sums of one column panel (ld m) */
} cpu_scratch_t;

/* A persistent pool: workers wait for a generation bump, run their share, report done. Threads
 * are started in prepare so that run() only signals. */
typedef struct cpu_pool {
  pthread_t *tid;
  int nworkers; /* threads started besides the caller */
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  unsigned gen;
  int pending;
  bool quit;
  struct cpu_state *st;
} cpu_pool_t;

typedef struct cpu_worker_arg {
  cpu_pool_t *pool;
  int id;
} cpu_worker_arg_t;

typedef struct cpu_state {
  cpu_params_t prm;
  gt_problem_t p;
  int mc, nc, kc; /* effective blocks (clipped to the problem) */
  int nthreads;
  cpu_scratch_t *scr; /* one per thread (blocked kinds) */
  float *buf0, *buf1; /* ikj: column sums; pack: packed op(A), op(B) */
  float *bias;        /* bias epilogues: the run's bias vector widened to fp32 (m) */
  cpu_pool_t pool;
  cpu_worker_arg_t *args;
  bool pool_started;
  /* The current run's operands (read by workers). */
  const gt_operands_t *ops;
  float alpha, beta;
} cpu_state_t;

/* ---- epilogue and write-out ----------------------------------------------------------------- */

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

/* GELU as cuBLASLt defines it (gt_reference_gelu: the tanh approximation), in fp32. */
static inline float gelu_f32(float x) {
  const float c = 0.7978845608028654f; /* sqrt(2/pi) */
  return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

/* act(v + bias) for epilogue e (bias ignored when e has none). */
static inline __attribute__((always_inline)) float epi_apply(gt_epilogue_t e, float v, float bias) {
  switch (e) {
    case GT_EPI_BIAS: return v + bias;
    case GT_EPI_RELU: return v > 0.0f ? v : 0.0f;
    case GT_EPI_BIAS_RELU: v += bias; return v > 0.0f ? v : 0.0f;
    case GT_EPI_GELU: return gelu_f32(v);
    case GT_EPI_BIAS_GELU: return gelu_f32(v + bias);
    default: return v;
  }
}

/* The store step every instance ends in, once per output element: D[di] = act(alpha * acc +
 * beta * C[di] + bias[i]), di the offset of D(i, j) of the current batch item. */
static inline __attribute__((always_inline)) void store_out(const cpu_state_t *s, gt_dtype_t dt,
                                                            gt_epilogue_t e, size_t di, int64_t i,
                                                            float acc) {
  float v = s->alpha * acc;
  if (!s->p.beta_zero) v += s->beta * ld(s->ops->C, dt, di);
  st(s->ops->D, dt, di, epi_apply(e, v, epi_has_bias(e) ? s->bias[i] : 0.0f));
}

/* fn(args..., E) with E the compile-time constant equal to the epilogue e. Every loop that ends
 * in store_out is an always_inline body called through this, so the compiler builds one copy
 * per epilogue with the epilogue's branch outside the loops: the none copy is the plain store. */
#define CPU_EPI_CALL(e, fn, ...)                                        \
  do {                                                                  \
    switch (e) {                                                        \
      case GT_EPI_BIAS: fn(__VA_ARGS__, GT_EPI_BIAS); break;            \
      case GT_EPI_RELU: fn(__VA_ARGS__, GT_EPI_RELU); break;            \
      case GT_EPI_BIAS_RELU: fn(__VA_ARGS__, GT_EPI_BIAS_RELU); break;  \
      case GT_EPI_GELU: fn(__VA_ARGS__, GT_EPI_GELU); break;            \
      case GT_EPI_BIAS_GELU: fn(__VA_ARGS__, GT_EPI_BIAS_GELU); break;  \
      default: fn(__VA_ARGS__, GT_EPI_NONE); break;                     \
    }                                                                   \
  } while (0)

static inline __attribute__((always_inline)) void write_cols_e(const cpu_state_t *s, int64_t b,
                                                               int64_t j0, int64_t cols,
                                                               const float *acc, gt_epilogue_t e) {
  const gt_problem_t *p = &s->p;
  const gt_dtype_t dt = (gt_dtype_t)s->prm.dt;
  const size_t oc = (size_t)(b * p->stride_c);
  for (int64_t j = 0; j < cols; j++)
    for (int64_t i = 0; i < p->m; i++)
      store_out(s, dt, e, oc + (size_t)(i + (j0 + j) * p->ldc), i, acc[j * p->m + i]);
}

/* D(:, j0:j0+cols) of batch item b from acc (fp32 sums, column-major with ld m) through the
 * store step. */
static void write_cols(const cpu_state_t *s, int64_t b, int64_t j0, int64_t cols,
                       const float *acc) {
  CPU_EPI_CALL(s->p.epilogue, write_cols_e, s, b, j0, cols, acc);
}

/* ---- naive ---------------------------------------------------------------------------------- */

static inline __attribute__((always_inline)) void naive_e(cpu_state_t *s, gt_epilogue_t e) {
  const gt_problem_t *p = &s->p;
  const gt_dtype_t dt = (gt_dtype_t)s->prm.dt;
  const gt_operands_t *o = s->ops;
  for (int64_t b = 0; b < p->batch; b++) {
    const size_t oa = (size_t)(b * p->stride_a), ob = (size_t)(b * p->stride_b),
                 oc = (size_t)(b * p->stride_c);
    for (int64_t j = 0; j < p->n; j++)
      for (int64_t i = 0; i < p->m; i++) {
        float acc = 0.0f;
        for (int64_t q = 0; q < p->k; q++)
          acc += ld(o->A, dt, oa + a_idx(p, i, q)) * ld(o->B, dt, ob + b_idx(p, q, j));
        store_out(s, dt, e, oc + (size_t)(i + j * p->ldc), i, acc);
      }
  }
}

static void run_naive(cpu_state_t *s) { CPU_EPI_CALL(s->p.epilogue, naive_e, s); }

/* ---- ikj ------------------------------------------------------------------------------------ */

static inline __attribute__((always_inline)) void ikj_col(const cpu_state_t *s, gt_dtype_t dt,
                                                          size_t oa, size_t ob, int64_t j,
                                                          float *restrict acc) {
  const gt_problem_t *p = &s->p;
  const void *A = s->ops->A, *B = s->ops->B;
  for (int64_t i = 0; i < p->m; i++) acc[i] = 0.0f;
  for (int64_t q = 0; q < p->k; q++) {
    const float bv = ld(B, dt, ob + b_idx(p, q, j));
    if (p->transa == GT_TRANS_N) {
      const size_t base = oa + (size_t)(q * p->lda);
      for (int64_t i = 0; i < p->m; i++) acc[i] += ld(A, dt, base + (size_t)i) * bv;
    } else {
      for (int64_t i = 0; i < p->m; i++)
        acc[i] += ld(A, dt, oa + (size_t)(q + i * p->lda)) * bv;
    }
  }
}

static void run_ikj(cpu_state_t *s) {
  const gt_problem_t *p = &s->p;
  const gt_dtype_t dt = (gt_dtype_t)s->prm.dt;
  for (int64_t b = 0; b < p->batch; b++) {
    const size_t oa = (size_t)(b * p->stride_a), ob = (size_t)(b * p->stride_b);
    for (int64_t j = 0; j < p->n; j++) {
      /* Specialised per type so the f32 and bf16 inner loops vectorise. */
      switch (dt) {
        case GT_DT_F32: ikj_col(s, GT_DT_F32, oa, ob, j, s->buf0); break;
        case GT_DT_BF16: ikj_col(s, GT_DT_BF16, oa, ob, j, s->buf0); break;
        default: ikj_col(s, GT_DT_F16, oa, ob, j, s->buf0); break;
      }
      write_cols(s, b, j, 1, s->buf0);
    }
  }
}

/* ---- pack (dot-product form on packed rows/columns) ---------------------------------------- */

/* Two rows of op(A) against two columns of op(B), each dot product kept as 4 lane sums so the
 * K loop vectorises without reassociating a single sum. Always inlined: it is the pack
 * instance's inner loop, and with one copy of that instance per epilogue the compiler would
 * otherwise call it (measured ~5% slower). */
static inline __attribute__((always_inline)) void dot2x2(const float *restrict a0, const float *restrict a1, const float *restrict b0,
                   const float *restrict b1, int64_t k, float out[2][2]) {
  float s00[4] = {0}, s01[4] = {0}, s10[4] = {0}, s11[4] = {0};
  int64_t q = 0;
  for (; q + 4 <= k; q += 4)
    for (int l = 0; l < 4; l++) {
      s00[l] += a0[q + l] * b0[q + l];
      s01[l] += a0[q + l] * b1[q + l];
      s10[l] += a1[q + l] * b0[q + l];
      s11[l] += a1[q + l] * b1[q + l];
    }
  float r00 = (s00[0] + s00[1]) + (s00[2] + s00[3]), r01 = (s01[0] + s01[1]) + (s01[2] + s01[3]);
  float r10 = (s10[0] + s10[1]) + (s10[2] + s10[3]), r11 = (s11[0] + s11[1]) + (s11[2] + s11[3]);
  for (; q < k; q++) {
    r00 += a0[q] * b0[q], r01 += a0[q] * b1[q];
    r10 += a1[q] * b0[q], r11 += a1[q] * b1[q];
  }
  out[0][0] = r00, out[0][1] = r01, out[1][0] = r10, out[1][1] = r11;
}

static float dot1(const float *restrict a, const float *restrict b, int64_t k) {
  float s[4] = {0};
  int64_t q = 0;
  for (; q + 4 <= k; q += 4)
    for (int l = 0; l < 4; l++) s[l] += a[q + l] * b[q + l];
  float r = (s[0] + s[1]) + (s[2] + s[3]);
  for (; q < k; q++) r += a[q] * b[q];
  return r;
}

static inline __attribute__((always_inline)) void pack_e(cpu_state_t *s, gt_epilogue_t e) {
  const gt_problem_t *p = &s->p;
  const gt_dtype_t dt = (gt_dtype_t)s->prm.dt;
  const gt_operands_t *o = s->ops;
  const int64_t m = p->m, n = p->n, k = p->k;
  float *ar = s->buf0, *bc = s->buf1; /* ar[i*k + q] = op(A)(i,q); bc[j*k + q] = op(B)(q,j) */
  for (int64_t b = 0; b < p->batch; b++) {
    const size_t oa = (size_t)(b * p->stride_a), ob = (size_t)(b * p->stride_b),
                 oc = (size_t)(b * p->stride_c);
    /* Read each operand in its storage order: a transposed A is already row-contiguous. */
    if (p->transa == GT_TRANS_T) {
      for (int64_t i = 0; i < m; i++)
        for (int64_t q = 0; q < k; q++) ar[i * k + q] = ld(o->A, dt, oa + (size_t)(q + i * p->lda));
    } else {
      for (int64_t q = 0; q < k; q++)
        for (int64_t i = 0; i < m; i++) ar[i * k + q] = ld(o->A, dt, oa + (size_t)(i + q * p->lda));
    }
    if (p->transb == GT_TRANS_N) {
      for (int64_t j = 0; j < n; j++)
        for (int64_t q = 0; q < k; q++) bc[j * k + q] = ld(o->B, dt, ob + (size_t)(q + j * p->ldb));
    } else {
      for (int64_t q = 0; q < k; q++)
        for (int64_t j = 0; j < n; j++) bc[j * k + q] = ld(o->B, dt, ob + (size_t)(j + q * p->ldb));
    }
    for (int64_t j = 0; j < n; j += 2) {
      for (int64_t i = 0; i < m; i += 2) {
        float r[2][2];
        if (i + 1 < m && j + 1 < n) {
          dot2x2(ar + i * k, ar + (i + 1) * k, bc + j * k, bc + (j + 1) * k, k, r);
        } else {
          r[0][0] = dot1(ar + i * k, bc + j * k, k);
          r[0][1] = j + 1 < n ? dot1(ar + i * k, bc + (j + 1) * k, k) : 0;
          r[1][0] = i + 1 < m ? dot1(ar + (i + 1) * k, bc + j * k, k) : 0;
          r[1][1] = 0;
        }
        for (int jj = 0; jj < 2 && j + jj < n; jj++)
          for (int ii = 0; ii < 2 && i + ii < m; ii++)
            store_out(s, dt, e, oc + (size_t)(i + ii + (j + jj) * p->ldc), i + ii, r[ii][jj]);
      }
    }
  }
}

static void run_pack(cpu_state_t *s) { CPU_EPI_CALL(s->p.epilogue, pack_e, s); }

/* ---- blocked (single- and multi-threaded) --------------------------------------------------- */

/* Pack op(A)[ic:ic+mc, pc:pc+kc] into MR-row micro-panels, zero-padding the last one. */
static void pack_a(const cpu_state_t *s, size_t oa, int64_t ic, int64_t mc, int64_t pc,
                   int64_t kc, float *restrict ap) {
  const gt_problem_t *p = &s->p;
  const gt_dtype_t dt = (gt_dtype_t)s->prm.dt;
  const int mr = s->prm.mr;
  for (int64_t i0 = 0; i0 < mc; i0 += mr) {
    float *dst = ap + i0 * kc;
    const int rows = (int)(mc - i0 < mr ? mc - i0 : mr);
    for (int64_t q = 0; q < kc; q++) {
      for (int ii = 0; ii < rows; ii++) dst[q * mr + ii] = ld(s->ops->A, dt, oa + a_idx(p, ic + i0 + ii, pc + q));
      for (int ii = rows; ii < mr; ii++) dst[q * mr + ii] = 0.0f;
    }
  }
}

/* Pack op(B)[pc:pc+kc, jc:jc+nc] into NR-column micro-panels, zero-padding the last one. */
static void pack_b(const cpu_state_t *s, size_t ob, int64_t pc, int64_t kc, int64_t jc,
                   int64_t nc, float *restrict bp) {
  const gt_problem_t *p = &s->p;
  const gt_dtype_t dt = (gt_dtype_t)s->prm.dt;
  const int nr = s->prm.nr;
  for (int64_t j0 = 0; j0 < nc; j0 += nr) {
    float *dst = bp + j0 * kc;
    const int cols = (int)(nc - j0 < nr ? nc - j0 : nr);
    for (int jj = 0; jj < cols; jj++)
      for (int64_t q = 0; q < kc; q++) dst[q * nr + jj] = ld(s->ops->B, dt, ob + b_idx(p, pc + q, jc + j0 + jj));
    for (int jj = cols; jj < nr; jj++)
      for (int64_t q = 0; q < kc; q++) dst[q * nr + jj] = 0.0f;
  }
}

/* One worker's share: column panels g = id, id + T, ... over all batch items. */
static void blk_worker(cpu_state_t *s, int id) {
  const gt_problem_t *p = &s->p;
  const int64_t m = p->m, n = p->n, k = p->k;
  const int mr = s->prm.mr, nr = s->prm.nr;
  const int64_t MC = s->mc, NC = s->nc, KC = s->kc;
  const ukr_fn ukr = ukr_for(mr, nr);
  cpu_scratch_t *w = &s->scr[id];
  const int64_t npanels = (n + NC - 1) / NC;
  for (int64_t g = id; g < npanels * p->batch; g += s->nthreads) {
    const int64_t b = g / npanels, jc = (g % npanels) * NC;
    const int64_t nc = n - jc < NC ? n - jc : NC;
    const size_t oa = (size_t)(b * p->stride_a), ob = (size_t)(b * p->stride_b);
    memset(w->cacc, 0, (size_t)m * (size_t)nc * sizeof(float));
    for (int64_t pc = 0; pc < k; pc += KC) {
      const int64_t kc = k - pc < KC ? k - pc : KC;
      pack_b(s, ob, pc, kc, jc, nc, w->bp);
      for (int64_t ic = 0; ic < m; ic += MC) {
        const int64_t mc = m - ic < MC ? m - ic : MC;
        pack_a(s, oa, ic, mc, pc, kc, w->ap);
        for (int64_t j0 = 0; j0 < nc; j0 += nr)
          for (int64_t i0 = 0; i0 < mc; i0 += mr)
            ukr(kc, w->ap + i0 * kc, w->bp + j0 * kc, w->cacc + j0 * m + ic + i0, m,
                (int)(mc - i0 < mr ? mc - i0 : mr), (int)(nc - j0 < nr ? nc - j0 : nr));
      }
    }
    write_cols(s, b, jc, nc, w->cacc);
  }
}

static void *pool_main(void *arg) {
  cpu_worker_arg_t *wa = arg;
  cpu_pool_t *pl = wa->pool;
  unsigned seen = 0;
  for (;;) {
    pthread_mutex_lock(&pl->mu);
    while (pl->gen == seen && !pl->quit) pthread_cond_wait(&pl->go, &pl->mu);
    if (pl->quit) {
      pthread_mutex_unlock(&pl->mu);
      return NULL;
    }
    seen = pl->gen;
    pthread_mutex_unlock(&pl->mu);
    blk_worker(pl->st, wa->id);
    pthread_mutex_lock(&pl->mu);
    if (--pl->pending == 0) pthread_cond_signal(&pl->done);
    pthread_mutex_unlock(&pl->mu);
  }
}

static void run_blk(cpu_state_t *s) {
  if (!s->pool_started) {
    blk_worker(s, 0);
    return;
  }
  cpu_pool_t *pl = &s->pool;
  pthread_mutex_lock(&pl->mu);
  pl->pending = pl->nworkers;
  pl->gen++;
  pthread_cond_broadcast(&pl->go);
  pthread_mutex_unlock(&pl->mu);
  blk_worker(s, 0);
  pthread_mutex_lock(&pl->mu);
  while (pl->pending > 0) pthread_cond_wait(&pl->done, &pl->mu);
  pthread_mutex_unlock(&pl->mu);
}

/* ---- prepare / run / release ---------------------------------------------------------------- */

static void cpu_release(void *state);

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static gt_status_t cpu_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                               size_t *ws_needed) {
  char why[GT_REASON_MAX];
  if (!cpu_supports(p, why, sizeof why)) return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", c->name, why);
  cpu_params_t prm;
  memcpy(&prm, c->blob, sizeof prm);
  if (prm.kind < CPU_NAIVE || prm.kind > CPU_PAR || (gt_dtype_t)prm.dt != p->a_type)
    return gt_err_set(GT_ERR_USAGE, "%s: candidate does not belong to this problem", c->name);
  if (p->m <= 0 || p->n <= 0 || p->k <= 0 || p->batch < 1)
    return gt_err_set(GT_ERR_USAGE, "%s: empty problem", c->name);
  cpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return gt_err_set(GT_ERR_NOMEM, "%s: no memory for state", c->name);
  /* A validated problem's operands fit in 64 bits as bytes of their own type; repacked as f32
   * they may not (an f8 operand takes four times its bytes), so these products are checked. */
  size_t mk, nk, mn_blk;
  if (__builtin_mul_overflow((size_t)p->m, (size_t)p->k, &mk) ||
      __builtin_mul_overflow(mk, sizeof(float), &mk) ||
      __builtin_mul_overflow((size_t)p->n, (size_t)p->k, &nk) ||
      __builtin_mul_overflow(nk, sizeof(float), &nk) ||
      __builtin_mul_overflow((size_t)p->m, (size_t)prm.nc + (size_t)prm.nr, &mn_blk) ||
      __builtin_mul_overflow(mn_blk, sizeof(float), &mn_blk)) {
    free(s);
    return gt_err_set(GT_ERR_NOMEM, "%s: the f32 working copies of this problem do not fit in "
                      "memory", c->name);
  }
  s->prm = prm;
  s->p = *p;
  s->nthreads = 1;
  gt_status_t st = GT_OK;
  const size_t m = (size_t)p->m;
  switch (prm.kind) {
    case CPU_NAIVE: break;
    case CPU_IKJ:
      if (!(s->buf0 = malloc(m * sizeof(float)))) st = GT_ERR_NOMEM;
      break;
    case CPU_PACK:
      s->buf0 = malloc(mk);
      s->buf1 = malloc(nk);
      if (!s->buf0 || !s->buf1) st = GT_ERR_NOMEM;
      break;
    case CPU_BLK:
    case CPU_PAR: {
      /* Blocks larger than the problem only waste scratch. */
      s->mc = (int)(p->m < prm.mc ? round_up(p->m, prm.mr) : prm.mc);
      s->nc = (int)(p->n < prm.nc ? round_up(p->n, prm.nr) : prm.nc);
      s->kc = (int)(p->k < prm.kc ? p->k : prm.kc);
      s->nthreads = prm.kind == CPU_PAR ? prm.threads : 1;
      s->scr = calloc((size_t)s->nthreads, sizeof *s->scr);
      if (!s->scr) {
        st = GT_ERR_NOMEM;
        break;
      }
      for (int t = 0; t < s->nthreads && st == GT_OK; t++) {
        s->scr[t].ap = malloc((size_t)s->mc * (size_t)s->kc * sizeof(float));
        s->scr[t].bp = malloc((size_t)s->kc * (size_t)s->nc * sizeof(float));
        s->scr[t].cacc = malloc(m * (size_t)s->nc * sizeof(float));
        if (!s->scr[t].ap || !s->scr[t].bp || !s->scr[t].cacc) st = GT_ERR_NOMEM;
      }
      if (st == GT_OK && s->nthreads > 1) {
        cpu_pool_t *pl = &s->pool;
        pl->st = s;
        pthread_mutex_init(&pl->mu, NULL);
        pthread_cond_init(&pl->go, NULL);
        pthread_cond_init(&pl->done, NULL);
        s->pool_started = true;
        pl->tid = calloc((size_t)s->nthreads, sizeof *pl->tid);
        s->args = calloc((size_t)s->nthreads, sizeof *s->args);
        if (!pl->tid || !s->args) {
          st = GT_ERR_NOMEM;
          break;
        }
        for (int t = 1; t < s->nthreads; t++) {
          s->args[t] = (cpu_worker_arg_t){pl, t};
          if (pthread_create(&pl->tid[t], NULL, pool_main, &s->args[t]) != 0) {
            cpu_release(s);
            return gt_err_set(GT_ERR_NOMEM, "%s: cannot start worker thread %d", c->name, t);
          }
          pl->nworkers++;
        }
      }
      break;
    }
  }
  if (st == GT_OK && epi_has_bias(p->epilogue) && !(s->bias = malloc(m * sizeof(float))))
    st = GT_ERR_NOMEM;
  if (st != GT_OK) {
    cpu_release(s);
    return gt_err_set(st, "%s: cannot allocate scratch for m=%lld n=%lld k=%lld", c->name,
                      (long long)p->m, (long long)p->n, (long long)p->k);
  }
  *state = s;
  if (ws_needed) *ws_needed = 0;
  return GT_OK;
}

static gt_status_t cpu_run(void *state, const gt_operands_t *ops, void *stream) {
  cpu_state_t *s = state;
  if (!s || !ops || !ops->A || !ops->B || !ops->D || !ops->alpha ||
      (!s->p.beta_zero && (!ops->C || !ops->beta)))
    return gt_err_set(GT_ERR_USAGE, "cpu run: missing operand");
  if (s->bias && !ops->bias)
    return gt_err_set(GT_ERR_USAGE, "cpu run: epilogue %s needs a bias vector",
                      gt_epilogue_name(s->p.epilogue));
  s->ops = ops;
  s->alpha = *(const float *)ops->alpha;
  s->beta = s->p.beta_zero ? 0.0f : *(const float *)ops->beta;
  /* Widened once per run, before any worker starts: the store step reads fp32. */
  if (s->bias) {
    const gt_dtype_t bt = gt_reference_bias_type(&s->p);
    for (int64_t i = 0; i < s->p.m; i++) s->bias[i] = ld(ops->bias, bt, (size_t)i);
  }
  switch (s->prm.kind) {
    case CPU_NAIVE: run_naive(s); break;
    case CPU_IKJ: run_ikj(s); break;
    case CPU_PACK: run_pack(s); break;
    default: run_blk(s); break;
  }
  s->ops = NULL;
  return GT_OK;
}

static void cpu_release(void *state) {
  cpu_state_t *s = state;
  if (!s) return;
  if (s->pool_started) {
    cpu_pool_t *pl = &s->pool;
    pthread_mutex_lock(&pl->mu);
    pl->quit = true;
    pthread_cond_broadcast(&pl->go);
    pthread_mutex_unlock(&pl->mu);
    for (int t = 1; t <= pl->nworkers; t++) pthread_join(pl->tid[t], NULL);
    pthread_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->go);
    pthread_cond_destroy(&pl->done);
    free(pl->tid);
    free(s->args);
  }
  if (s->scr)
    for (int t = 0; t < s->nthreads; t++) {
      free(s->scr[t].ap);
      free(s->scr[t].bp);
      free(s->scr[t].cacc);
    }
  free(s->scr);
  free(s->buf0);
  free(s->buf1);
  free(s->bias);
  free(s);
}

/* cpu_naive stands for an unoptimised host application's own loop. */
static bool cpu_baseline_for(gt_entry_t e, const gt_problem_t *p) {
  (void)p;
  return e == GT_ENTRY_DEFAULT || e == GT_ENTRY_HOST;
}

const gt_provider_t gt_provider_cpu = {
    .api_version = GT_PROVIDER_API_VERSION,
    .name = "cpu",
    .description = "tiled CPU GEMM instances (f32/bf16/f16, f32 accumulation, every epilogue); naive "
                   "is the baseline",
    .backend = GT_BACKEND_HOST,
    .init = NULL,
    .baseline_for = cpu_baseline_for,
    .lib_version = NULL,
    .enumerate = cpu_enumerate,
    .from_name = cpu_from_name,
    .prepare = cpu_prepare,
    .run = cpu_run,
    .release = cpu_release,
};
