/* libgemmtune's dispatch API (include/gemmtune/gemmtune.h): a context per device, tuned DBs,
 * and gt_gemm, which runs a key's tuned candidate or, on a miss, cuBLAS's default. */
#define _GNU_SOURCE
#include "gemmtune/gemmtune.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload_db.h"
#include "rt_engine.h"

struct gt_ctx {
  int device;
  gt_db_t db;
  char db_desc[600];
  gt_rt_t *rt;
  bool log; /* GEMMTUNE_LOG: print each key's first decision, as the shim does */
  pthread_mutex_t mu; /* the last decision */
  bool have_last;
  gt_decision_t last;
};

static void warn_stderr(void *ctx, const char *line) {
  (void)ctx;
  fprintf(stderr, "gemmtune: %s\n", line);
}

gt_status_t gt_ctx_create(int device, gt_ctx_t **out) {
  if (!out) return gt_err_set(GT_ERR_USAGE, "gt_ctx_create: out is NULL");
  *out = NULL;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return gt_err_set(GT_ERR_DEVICE, "no CUDA device: %s", cudaGetErrorString(e));
  }
  if (device < 0 || device >= count)
    return gt_err_set(GT_ERR_DEVICE, "device %d does not exist (%d device%s)", device, count,
                      count == 1 ? "" : "s");
  gt_ctx_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  ctx->device = device;
  gt_db_init(&ctx->db);
  snprintf(ctx->db_desc, sizeof ctx->db_desc, "no tuned DB loaded");
  const char *lg = getenv("GEMMTUNE_LOG");
  ctx->log = lg && *lg && strcmp(lg, "0") != 0;
  pthread_mutex_init(&ctx->mu, NULL);
  gt_status_t s = gt_rt_open(device, &ctx->db, ctx->db_desc, ctx->log ? warn_stderr : NULL, NULL,
                             &ctx->rt);
  if (s != GT_OK) {
    pthread_mutex_destroy(&ctx->mu);
    free(ctx);
    return s;
  }
  /* The default path's per-thread handle exists from now on for this thread, so a key whose
   * first gt_gemm happens during a graph capture still runs there. */
  gt_rt_prime_default(ctx->rt);
  *out = ctx;
  return GT_OK;
}

gt_status_t gt_ctx_load_db(gt_ctx_t *ctx, const char *paths) {
  if (!ctx || !paths) return gt_err_set(GT_ERR_USAGE, "gt_ctx_load_db: NULL argument");
  gt_rt_db_load_report_t rep;
  gt_status_t s = gt_rt_db_load_list(paths, &ctx->db, ctx->log ? warn_stderr : NULL, NULL, &rep);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", gt_err_msg());
  /* Decisions made against the old rows may be wrong now: the engine re-decides lazily. */
  snprintf(ctx->db_desc, sizeof ctx->db_desc, "tuned DBs %.500s: %zu rows", paths, ctx->db.n);
  gt_rt_rebind(ctx->rt, &ctx->db, ctx->db_desc);
  pthread_mutex_lock(&ctx->mu);
  ctx->have_last = false;
  pthread_mutex_unlock(&ctx->mu);
  if (s != GT_OK) return gt_err_set(s, "%s", msg);
  return GT_OK;
}

size_t gt_ctx_db_rows(const gt_ctx_t *ctx) { return ctx ? ctx->db.n : 0; }

void gt_ctx_problem_init(const gt_ctx_t *ctx, gt_problem_t *p) {
  gt_problem_init(p);
  if (!ctx) return;
  snprintf(p->arch, sizeof p->arch, "%s", gt_rt_arch(ctx->rt));
  p->sm_count = gt_rt_sm_count(ctx->rt);
}

/* beta == 0 is part of the key; read it the way cuBLAS would. */
static gt_status_t beta_is_zero(gt_dtype_t scale, const void *beta, bool *zero) {
  switch (scale) {
    case GT_DT_F32: *zero = *(const float *)beta == 0.0f; return GT_OK;
    case GT_DT_F64: *zero = *(const double *)beta == 0.0; return GT_OK;
    case GT_DT_F16:
    case GT_DT_BF16: *zero = (*(const uint16_t *)beta & 0x7fffu) == 0; return GT_OK;
    case GT_DT_I32: *zero = *(const int32_t *)beta == 0; return GT_OK;
    default:
      return gt_err_set(GT_ERR_USAGE, "scale type %s is not a valid alpha/beta type",
                        gt_dtype_name(scale));
  }
}

static void record(gt_ctx_t *ctx, const gt_rt_entry_t *e, bool hit, const char *reason) {
  gt_decision_t d;
  memset(&d, 0, sizeof d);
  d.hit = hit;
  if (hit) {
    snprintf(d.provider, sizeof d.provider, "%s", e->provider);
    snprintf(d.instance, sizeof d.instance, "%s", e->instance);
  } else {
    snprintf(d.provider, sizeof d.provider, "%s", gt_rt_default_provider(e));
    snprintf(d.instance, sizeof d.instance, "%s", e->fb_instance);
  }
  snprintf(d.reason, sizeof d.reason, "%s", reason);
  gt_problem_format_key(&e->key, d.key, sizeof d.key);
  pthread_mutex_lock(&ctx->mu);
  ctx->last = d;
  ctx->have_last = true;
  pthread_mutex_unlock(&ctx->mu);
}

static void log_first(gt_ctx_t *ctx, gt_rt_entry_t *e, int st) {
  if (!ctx->log || atomic_exchange(&e->logged, 1)) return;
  char desc[256];
  gt_problem_describe(&e->key, desc, sizeof desc);
  if (st == GT_RT_HIT)
    fprintf(stderr, "gemmtune: hit gt_gemm %s -> %s %s (%s)\n", desc, e->provider, e->instance,
            e->why);
  else if (st == GT_RT_MISS)
    fprintf(stderr, "gemmtune: miss gt_gemm %s: %s\n", desc, e->why);
  else
    fprintf(stderr, "gemmtune: not used gt_gemm %s: %s; running cuBLAS\n", desc, e->why);
}

gt_status_t gt_gemm(gt_ctx_t *ctx, const gt_problem_t *p, const gt_gemm_args_t *args,
                    void *stream) {
  if (!ctx || !p || !args) return gt_err_set(GT_ERR_USAGE, "gt_gemm: NULL argument");
  if (!args->A || !args->B || !args->D || !args->alpha || !args->beta)
    return gt_err_set(GT_ERR_USAGE, "gt_gemm: A, B, D, alpha and beta are required");
  gt_problem_t key = *p;
  snprintf(key.arch, sizeof key.arch, "%s", gt_rt_arch(ctx->rt));
  key.sm_count = gt_rt_sm_count(ctx->rt);
  gt_status_t s = beta_is_zero(key.scale_type, args->beta, &key.beta_zero);
  if (s != GT_OK) return s;
  if (!key.beta_zero && !args->C)
    return gt_err_set(GT_ERR_USAGE, "gt_gemm: beta is not zero but C is NULL");
  if (key.batch == 1) key.stride_a = key.stride_b = key.stride_c = 0;
  if ((s = gt_problem_validate(&key)) != GT_OK) {
    char msg[400];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    return gt_err_set(GT_ERR_USAGE, "gt_gemm: %s", msg);
  }
  gt_rt_entry_t *e = gt_rt_entry(ctx->rt, &key, "gt_gemm");
  if (!e) return gt_err_set(GT_ERR_NOMEM, "gt_gemm: too many distinct keys on this context");
  atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);

  /* NEW: first seen during a capture and its candidate could not be prepared there (e->why);
   * the default path runs, and a later call outside capture decides the key. */
  gt_rt_state_t st = gt_rt_decide(ctx->rt, e, stream);
  if (st != GT_RT_NEW) log_first(ctx, e, st);
  gt_operands_t ops = {.A = args->A,
                       .B = args->B,
                       .C = args->C ? args->C : args->D,
                       .D = args->D,
                       .bias = args->bias,
                       .alpha = args->alpha,
                       .beta = args->beta,
                       .scale_a = args->scale_a,
                       .scale_b = args->scale_b,
                       .scale_d = args->scale_d,
                       .amax_d = args->amax_d};
  if (st == GT_RT_HIT) {
    gt_err_clear();
    s = gt_rt_run_hit(ctx->rt, e, &ops, stream);
    if (s == GT_OK) {
      atomic_fetch_add_explicit(&e->hits, 1, memory_order_relaxed);
      record(ctx, e, true, e->why);
      return GT_OK;
    }
    if (atomic_load(&e->state) == GT_RT_FAILED) log_first(ctx, e, GT_RT_FAILED);
    /* The tuned candidate did not run (launch failure, or its workspace could not be
     * allocated): the default path computes the same result. */
    ops.workspace = NULL;
    ops.ws_size = 0;
  }
  char reason[768];
  snprintf(reason, sizeof reason, "%s", e->why);
  if (st == GT_RT_HIT && atomic_load(&e->state) == GT_RT_HIT)
    snprintf(reason, sizeof reason, "tuned candidate not run for this call: %.600s", gt_err_msg());
  gt_err_clear();
  s = gt_rt_run_default(ctx->rt, e, &ops, stream);
  record(ctx, e, false, reason);
  return s;
}

gt_status_t gt_last_decision(gt_ctx_t *ctx, gt_decision_t *out) {
  if (!ctx || !out) return gt_err_set(GT_ERR_USAGE, "gt_last_decision: NULL argument");
  pthread_mutex_lock(&ctx->mu);
  bool have = ctx->have_last;
  if (have) *out = ctx->last;
  pthread_mutex_unlock(&ctx->mu);
  if (!have) return gt_err_set(GT_ERR_NOT_FOUND, "no gt_gemm call on this context yet");
  return GT_OK;
}

void gt_ctx_destroy(gt_ctx_t *ctx) {
  if (!ctx) return;
  gt_rt_close(ctx->rt);
  gt_db_free(&ctx->db);
  pthread_mutex_destroy(&ctx->mu);
  free(ctx);
}
