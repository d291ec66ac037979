/* The runtime's per-device engine: decision cache, workspaces, capture timing (rt_engine.h). */
#define _GNU_SOURCE
#include "rt_engine.h"
#include "rt_devices.h"

#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Open addressing, never shrinking: a workload issues tens to hundreds of distinct GEMM keys.
 * Past GT_RT_MAX_ENTRIES new keys pass through untracked rather than slow every call. */
#define GT_RT_SLOTS 4096
#define GT_RT_MAX_ENTRIES 3072
#define GT_RT_MAX_WS 128
#define GT_RT_EVENTS 1024
/* Smallest workspace allocated: most tuned cuBLASLt configs ask for a few MiB at most, so one
 * allocation per stream usually serves every key. */
#define GT_RT_WS_MIN ((size_t)4 << 20)

typedef struct gt_rt_ws {
  uintptr_t stream;
  uintptr_t thread; /* nonzero for cudaStreamPerThread: that handle names one stream per thread */
  void *ptr;
  size_t size;
} gt_rt_ws_t;

typedef struct gt_rt_ev {
  cudaEvent_t start, stop;
  gt_rt_entry_t *e; /* NULL: the measurement was abandoned */
  bool done;        /* stop recorded */
} gt_rt_ev_t;

struct gt_rt {
  int device;
  char arch[GT_ARCH_MAX];
  int sm_count;
  gt_db_device_t here; /* the identity rows are checked against: arch, SMs, name, memory */
  const gt_db_t *db;
  char db_desc[512];
  gt_rt_line_fn warn;
  void *warn_ctx;

  pthread_mutex_t mu; /* inserts, decisions, workspace allocation */
  _Atomic(gt_rt_entry_t *) slots[GT_RT_SLOTS];
  gt_rt_entry_t *order[GT_RT_MAX_ENTRIES];
  size_t nentries;

  gt_rt_ws_t ws[GT_RT_MAX_WS];
  _Atomic int nws; /* slots [0, nws) are published and immutable */

  pthread_mutex_t tmu; /* capture timing */
  int ev_state;        /* 0 not created, 1 ready, -1 creation failed */
  gt_rt_ev_t ev[GT_RT_EVENTS];
  int ev_head, ev_count;
};

static void warnf(gt_rt_t *rt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(gt_rt_t *rt, const char *fmt, ...) {
  if (!rt->warn) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  rt->warn(rt->warn_ctx, line);
}

/* ---- slow-path guard ----------------------------------------------------------------------- */

/* Allocation and prepare run with this thread in relaxed capture mode (so they cannot invalidate
 * another thread's global-mode capture) and with the engine's device current; both are restored. */
typedef struct guard {
  enum cudaStreamCaptureMode mode;
  int prev;
  bool switched;
} guard_t;

static void guard_enter(const gt_rt_t *rt, guard_t *g) {
  g->mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&g->mode) != cudaSuccess) {
    (void)cudaGetLastError();
    g->mode = (enum cudaStreamCaptureMode)-1;
  }
  g->switched = false;
  if (cudaGetDevice(&g->prev) == cudaSuccess && g->prev != rt->device) {
    if (cudaSetDevice(rt->device) == cudaSuccess) g->switched = true;
  }
  (void)cudaGetLastError();
}

static void guard_leave(guard_t *g) {
  if (g->switched) (void)cudaSetDevice(g->prev);
  if ((int)g->mode != -1) (void)cudaThreadExchangeStreamCaptureMode(&g->mode);
  (void)cudaGetLastError();
}

bool gt_rt_stream_capturing(void *stream) {
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing((cudaStream_t)stream, &st) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  return st != cudaStreamCaptureStatusNone;
}

/* ---- open / close -------------------------------------------------------------------------- */

/* Rows measured on another GPU can never match here (the key holds arch and SM count), rows tuned
 * on another product of this arch and SM count are refused, and a DB with no row for this device
 * serves nothing. Say each once, rather than leaving every miss to be explained separately. */
static void report_other_devices(gt_rt_t *rt) {
  gt_rt_devices_report(rt->db, &rt->here, rt->device, rt->db_desc, rt->warn, rt->warn_ctx, NULL);
}

gt_status_t gt_rt_open(int device, const gt_db_t *db, const char *db_desc, gt_rt_line_fn warn,
                       void *warn_ctx, gt_rt_t **out) {
  *out = NULL;
  int major = 0, minor = 0, sms = 0;
  cudaError_t e1 = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaError_t e2 = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  cudaError_t e3 = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e1 != cudaSuccess || e2 != cudaSuccess || e3 != cudaSuccess) {
    cudaError_t e = e1 != cudaSuccess ? e1 : e2 != cudaSuccess ? e2 : e3;
    (void)cudaGetLastError();
    return gt_err_set(GT_ERR_DEVICE, "device %d: cannot read its attributes: %s", device,
                      cudaGetErrorString(e));
  }
  gt_rt_t *rt = calloc(1, sizeof *rt);
  if (!rt) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  rt->device = device;
  snprintf(rt->arch, sizeof rt->arch, "sm_%d%d", major, minor);
  rt->sm_count = sms;
  /* The product and its memory tell an H100 SXM from an H200 (both sm_90, 132 SMs). Unreadable,
   * they stay unknown, which refuses nothing (gt_db_row_fit). */
  snprintf(rt->here.arch, sizeof rt->here.arch, "%s", rt->arch);
  rt->here.sm_count = sms;
  struct cudaDeviceProp prop;
  guard_t g; /* relaxed capture mode: the first call of a device may come under capture */
  guard_enter(rt, &g);
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    gt_db_device_name(prop.name, rt->here.name, sizeof rt->here.name);
    rt->here.mem_gib = gt_db_mem_gib((uint64_t)prop.totalGlobalMem);
  }
  guard_leave(&g);
  rt->db = db;
  snprintf(rt->db_desc, sizeof rt->db_desc, "%s", db_desc ? db_desc : "no tuned DB");
  rt->warn = warn;
  rt->warn_ctx = warn_ctx;
  pthread_mutex_init(&rt->mu, NULL);
  pthread_mutex_init(&rt->tmu, NULL);

  report_other_devices(rt);
  *out = rt;
  return GT_OK;
}

static void release_entry(gt_rt_entry_t *e) {
  if (e->prov && e->pstate && e->prov->release) e->prov->release(e->pstate);
  if (e->fb_prov && e->fb_state && e->fb_prov->release) e->fb_prov->release(e->fb_state);
  free(e);
}

void gt_rt_reset(gt_rt_t *rt) {
  if (!rt) return;
  pthread_mutex_lock(&rt->mu);
  guard_t g;
  guard_enter(rt, &g);
  for (size_t i = 0; i < rt->nentries; i++) release_entry(rt->order[i]);
  guard_leave(&g);
  rt->nentries = 0;
  for (size_t i = 0; i < GT_RT_SLOTS; i++) atomic_store(&rt->slots[i], NULL);
  pthread_mutex_unlock(&rt->mu);
  pthread_mutex_lock(&rt->tmu);
  for (int i = 0; i < GT_RT_EVENTS; i++) rt->ev[i].e = NULL;
  rt->ev_head = rt->ev_count = 0;
  pthread_mutex_unlock(&rt->tmu);
}

void gt_rt_close(gt_rt_t *rt) {
  if (!rt) return;
  gt_rt_reset(rt);
  guard_t g;
  guard_enter(rt, &g);
  int nws = atomic_load(&rt->nws);
  for (int i = 0; i < nws; i++) (void)cudaFree(rt->ws[i].ptr);
  if (rt->ev_state == 1)
    for (int i = 0; i < GT_RT_EVENTS; i++) {
      (void)cudaEventDestroy(rt->ev[i].start);
      (void)cudaEventDestroy(rt->ev[i].stop);
    }
  guard_leave(&g);
  pthread_mutex_destroy(&rt->mu);
  pthread_mutex_destroy(&rt->tmu);
  free(rt);
}

void gt_rt_rebind(gt_rt_t *rt, const gt_db_t *db, const char *db_desc) {
  gt_rt_reset(rt);
  pthread_mutex_lock(&rt->mu);
  rt->db = db;
  snprintf(rt->db_desc, sizeof rt->db_desc, "%s", db_desc ? db_desc : "no tuned DB");
  pthread_mutex_unlock(&rt->mu);
  report_other_devices(rt);
}

int gt_rt_device(const gt_rt_t *rt) { return rt->device; }
const char *gt_rt_arch(const gt_rt_t *rt) { return rt->arch; }
int gt_rt_sm_count(const gt_rt_t *rt) { return rt->sm_count; }

/* ---- the key table ------------------------------------------------------------------------- */

static uint64_t fnv(uint64_t h, int64_t v) {
  for (int i = 0; i < 8; i++) h = (h ^ (uint64_t)((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h;
}

uint64_t gt_rt_key_hash(const gt_problem_t *k) {
  uint64_t h = 1469598103934665603ull;
  const int64_t f[] = {k->op,     k->a_type,   k->b_type,   k->c_type,  k->d_type, k->compute,
                       k->scale_type, k->transa, k->transb, k->m,       k->n,      k->k,
                       k->lda,    k->ldb,      k->ldc,      k->batch,   k->stride_a, k->stride_b,
                       k->stride_c, k->epilogue, k->beta_zero, k->sm_count};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) h = fnv(h, f[i]);
  for (const char *c = k->arch; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  return h;
}

/* Field-by-field equality of every key field (what gt_problem_equal decides through text, without
 * formatting 46 strings on each call). */
static bool key_equal(const gt_problem_t *a, const gt_problem_t *b) {
  return a->op == b->op && a->a_type == b->a_type && a->b_type == b->b_type &&
         a->c_type == b->c_type && a->d_type == b->d_type && a->compute == b->compute &&
         a->scale_type == b->scale_type && a->transa == b->transa && a->transb == b->transb &&
         a->m == b->m && a->n == b->n && a->k == b->k && a->lda == b->lda && a->ldb == b->ldb &&
         a->ldc == b->ldc && a->batch == b->batch && a->stride_a == b->stride_a &&
         a->stride_b == b->stride_b && a->stride_c == b->stride_c && a->epilogue == b->epilogue &&
         a->beta_zero == b->beta_zero && a->sm_count == b->sm_count &&
         strcmp(a->arch, b->arch) == 0;
}

static gt_rt_entry_t *probe(gt_rt_t *rt, const gt_problem_t *k, uint64_t h, size_t *free_slot) {
  size_t i = (size_t)h & (GT_RT_SLOTS - 1);
  for (size_t n = 0; n < GT_RT_SLOTS; n++, i = (i + 1) & (GT_RT_SLOTS - 1)) {
    gt_rt_entry_t *e = atomic_load_explicit(&rt->slots[i], memory_order_acquire);
    if (!e) {
      if (free_slot) *free_slot = i;
      return NULL;
    }
    if (e->hash == h && key_equal(&e->key, k)) return e;
  }
  if (free_slot) *free_slot = SIZE_MAX;
  return NULL;
}

gt_rt_entry_t *gt_rt_entry(gt_rt_t *rt, const gt_problem_t *k, const char *entry_point) {
  uint64_t h = gt_rt_key_hash(k);
  gt_rt_entry_t *e = probe(rt, k, h, NULL);
  if (e) return e;
  pthread_mutex_lock(&rt->mu);
  size_t slot = SIZE_MAX;
  e = probe(rt, k, h, &slot); /* another thread may have inserted it meanwhile */
  if (!e && slot != SIZE_MAX && rt->nentries < GT_RT_MAX_ENTRIES) {
    e = calloc(1, sizeof *e);
    if (e) {
      e->key = *k;
      e->hash = h;
      e->entry_point = entry_point;
      atomic_init(&e->state, GT_RT_NEW);
      rt->order[rt->nentries++] = e;
      /* Published last: a reader that sees the pointer sees a complete entry. */
      atomic_store_explicit(&rt->slots[slot], e, memory_order_release);
    }
  }
  pthread_mutex_unlock(&rt->mu);
  return e;
}

void gt_rt_foreach(gt_rt_t *rt, void (*fn)(void *ctx, gt_rt_entry_t *e), void *ctx) {
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < rt->nentries; i++) fn(ctx, rt->order[i]);
  pthread_mutex_unlock(&rt->mu);
}

/* ---- decisions ----------------------------------------------------------------------------- */

static void explain_miss(gt_rt_t *rt, gt_rt_entry_t *e) {
  if (!rt->db || rt->db->n == 0) {
    snprintf(e->why, sizeof e->why, "no tuned rows loaded (%s)", rt->db_desc);
    return;
  }
  gt_db_near_t near[1];
  size_t n = gt_db_explain(rt->db, &e->key, near, 1);
  if (n == 0) {
    snprintf(e->why, sizeof e->why, "no row for this key (%s)", rt->db_desc);
    return;
  }
  char d[200];
  gt_problem_describe(&near[0].row->key, d, sizeof d);
  snprintf(e->why, sizeof e->why,
           "no row for this key; nearest row (%s, %s %s) differs in %d field%s: %s", d,
           near[0].row->provider, near[0].row->instance, near[0].nfields,
           near[0].nfields == 1 ? "" : "s", near[0].diff);
}

static gt_rt_state_t decide_locked(gt_rt_t *rt, gt_rt_entry_t *e) {
  const gt_db_row_t *row = rt->db ? gt_db_lookup(rt->db, &e->key) : NULL;
  if (!row) {
    explain_miss(rt, e);
    return GT_RT_MISS;
  }
  /* Tuned on another product of this arch and SM count: another device's measurement, no row
   * for this device. A miss (said once per process at open, per key only with logging), not a
   * failure: nothing here is broken, the DB is for another GPU. */
  if (!gt_rt_row_applies(row, &rt->here, e->why, sizeof e->why)) return GT_RT_MISS;
  snprintf(e->provider, sizeof e->provider, "%s", row->provider);
  snprintf(e->instance, sizeof e->instance, "%s", row->instance);
  const gt_provider_t *prov = gt_provider_find(row->provider);
  if (!prov) {
    snprintf(e->why, sizeof e->why, "the row names provider '%s', which this build does not have",
             row->provider);
    return GT_RT_FAILED;
  }
  if (gt_provider_ready(prov) != GT_OK) {
    snprintf(e->why, sizeof e->why, "provider %s is unavailable here: %s", prov->name,
             gt_err_msg());
    return GT_RT_FAILED;
  }
  if (prov->backend != GT_BACKEND_CUDA) {
    snprintf(e->why, sizeof e->why, "provider %s runs on the host, not on this GPU", prov->name);
    return GT_RT_FAILED;
  }
  /* cuBLASLt algorithm ids are not portable across library versions. */
  if (!gt_provider_lib_applies(prov, row->lib, NULL, 0)) {
    const char *have = gt_provider_lib_loaded(prov);
    snprintf(e->why, sizeof e->why, "the row was tuned with %s, this process has %s", row->lib,
             strcmp(have, "-") != 0 ? have : "none");
    return GT_RT_FAILED;
  }
  gt_candidate_t cand;
  gt_err_clear();
  if (gt_provider_candidate_from_name(row->provider, row->instance, &e->key, &cand) != GT_OK) {
    snprintf(e->why, sizeof e->why, "instance %s cannot be rebuilt for this key: %s",
             row->instance, gt_err_msg());
    return GT_RT_FAILED;
  }
  void *st = NULL;
  size_t ws = 0;
  gt_err_clear();
  if (prov->prepare(&cand, &e->key, &st, &ws) != GT_OK) {
    snprintf(e->why, sizeof e->why, "preparing %s failed: %s", row->instance, gt_err_msg());
    return GT_RT_FAILED;
  }
  e->prov = prov;
  e->pstate = st;
  e->ws_needed = ws;
  snprintf(e->why, sizeof e->why, "tuned row: %.3gx over %s (%.2f vs %.2f us, %s, error %.2g)",
           row->speedup, row->baseline[0] ? row->baseline : "the baseline", row->time_us,
           row->baseline_us, row->timing, row->error);
  return GT_RT_HIT;
}

gt_rt_state_t gt_rt_decide(gt_rt_t *rt, gt_rt_entry_t *e, void *stream) {
  int st = atomic_load_explicit(&e->state, memory_order_acquire);
  if (st != GT_RT_NEW) return (gt_rt_state_t)st;
  /* A miss needs nothing prepared, but only a decision made outside capture is final; keeping
   * one rule keeps the state machine simple. */
  if (gt_rt_stream_capturing(stream)) return GT_RT_NEW;
  pthread_mutex_lock(&rt->mu);
  st = atomic_load_explicit(&e->state, memory_order_acquire);
  if (st == GT_RT_NEW) {
    guard_t g;
    guard_enter(rt, &g);
    st = decide_locked(rt, e);
    guard_leave(&g);
    atomic_store_explicit(&e->state, st, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  return (gt_rt_state_t)st;
}

/* ---- workspaces ---------------------------------------------------------------------------- */

static void ws_ident(void *stream, uintptr_t *s, uintptr_t *t) {
  *s = (uintptr_t)stream;
  *t = stream == (void *)cudaStreamPerThread ? (uintptr_t)pthread_self() : 0;
}

static void *ws_find(gt_rt_t *rt, uintptr_t s, uintptr_t t, size_t need) {
  int n = atomic_load_explicit(&rt->nws, memory_order_acquire);
  for (int i = n - 1; i >= 0; i--)
    if (rt->ws[i].stream == s && rt->ws[i].thread == t && rt->ws[i].size >= need)
      return rt->ws[i].ptr;
  return NULL;
}

gt_status_t gt_rt_workspace(gt_rt_t *rt, void *stream, size_t need, void **ws) {
  *ws = NULL;
  if (need == 0) return GT_OK;
  uintptr_t s, t;
  ws_ident(stream, &s, &t);
  if ((*ws = ws_find(rt, s, t, need))) return GT_OK;
  /* Also during graph capture: cudaMalloc is not a stream operation, and with this thread in
   * relaxed capture mode (the guard) it cannot invalidate any capture; the graph keeps the
   * address, which is never freed while the engine is open. Frameworks capture on a stream of
   * their own (torch.cuda.graph does), so this is the first call on that stream. */
  gt_status_t status = GT_OK;
  pthread_mutex_lock(&rt->mu);
  if (!(*ws = ws_find(rt, s, t, need))) {
    int n = atomic_load(&rt->nws);
    if (n >= GT_RT_MAX_WS) {
      status = gt_err_set(GT_ERR_UNSUPPORTED, "workspace table full (%d streams)", n);
    } else {
      /* A smaller workspace this stream had stays allocated: graphs captured with it still
       * reference it. */
      size_t size = need < GT_RT_WS_MIN ? GT_RT_WS_MIN : need;
      size = (size + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
      guard_t g;
      guard_enter(rt, &g);
      void *p = NULL;
      cudaError_t err = cudaMalloc(&p, size);
      guard_leave(&g);
      if (err != cudaSuccess) {
        status = gt_err_set(GT_ERR_NOMEM, "workspace of %zu bytes on device %d: %s", size,
                            rt->device, cudaGetErrorString(err));
      } else {
        rt->ws[n] = (gt_rt_ws_t){.stream = s, .thread = t, .ptr = p, .size = size};
        atomic_store_explicit(&rt->nws, n + 1, memory_order_release);
        *ws = p;
      }
    }
  }
  pthread_mutex_unlock(&rt->mu);
  return status;
}

/* ---- running ------------------------------------------------------------------------------- */

static gt_status_t with_workspace(gt_rt_t *rt, size_t need, gt_operands_t *ops, void *stream) {
  if (need == 0 || (ops->workspace && ops->ws_size >= need)) return GT_OK;
  void *ws;
  gt_status_t s = gt_rt_workspace(rt, stream, need, &ws);
  if (s != GT_OK) return s;
  ops->workspace = ws;
  ops->ws_size = need;
  return GT_OK;
}

gt_status_t gt_rt_run_hit(gt_rt_t *rt, gt_rt_entry_t *e, gt_operands_t *ops, void *stream) {
  if (atomic_load_explicit(&e->state, memory_order_acquire) != GT_RT_HIT)
    return gt_err_set(GT_ERR_USAGE, "entry is not a hit");
  gt_status_t s = with_workspace(rt, e->ws_needed, ops, stream);
  if (s != GT_OK) return s;
  s = e->prov->run(e->pstate, ops, stream);
  if (s != GT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    pthread_mutex_lock(&rt->mu);
    if (atomic_load(&e->state) == GT_RT_HIT) {
      /* The prepared state stays allocated: another thread may be inside run() with it. */
      snprintf(e->why, sizeof e->why, "%s %s failed at launch: %s", e->provider, e->instance, msg);
      atomic_store_explicit(&e->state, GT_RT_FAILED, memory_order_release);
      atomic_store(&e->logged, 0); /* the new decision deserves its own line */
    }
    pthread_mutex_unlock(&rt->mu);
    return gt_err_set(s, "%s", msg);
  }
  return GT_OK;
}

/* The default path is what a cublasGemmEx call runs today: the provider the table names the
 * baseline for GemmEx calls, with its baseline candidate. */
static void prepare_default_locked(gt_rt_t *rt, gt_rt_entry_t *e) {
  char absent[300];
  const gt_provider_t *prov =
      gt_provider_baseline(GT_BACKEND_CUDA, GT_ENTRY_GEMMEX, &e->key, absent, sizeof absent);
  if (!prov) {
    snprintf(e->fb_instance, sizeof e->fb_instance, "-");
    gt_err_set(GT_ERR_UNSUPPORTED, "%s", absent);
    atomic_store(&e->fb_ready, -1);
    return;
  }
  gt_status_t s = GT_OK;
  gt_cand_list_t list = {0};
  gt_enum_opts_t o = {.max_candidates = 0, .exhaustive = false, .device = rt->device};
  if (s == GT_OK) s = prov->enumerate(&e->key, &o, &list);
  const gt_candidate_t *pick = NULL;
  for (size_t i = 0; s == GT_OK && i < list.n; i++) {
    if (list.v[i].excluded) continue;
    if (!pick || (list.v[i].is_baseline && !pick->is_baseline)) pick = &list.v[i];
  }
  if (s == GT_OK && !pick) {
    const char *why = list.n ? list.v[0].reason : "no candidates";
    s = gt_err_set(GT_ERR_UNSUPPORTED, "%s cannot run this key: %s", prov->name, why);
  }
  void *st = NULL;
  size_t ws = 0;
  if (s == GT_OK) s = prov->prepare(pick, &e->key, &st, &ws);
  if (s == GT_OK) {
    e->fb_prov = prov;
    e->fb_state = st;
    e->fb_ws = ws;
    snprintf(e->fb_instance, sizeof e->fb_instance, "%s", pick->name);
  }
  gt_cand_list_free(&list);
  atomic_store(&e->fb_ready, s == GT_OK ? 1 : -1);
}

const char *gt_rt_default_provider(const gt_rt_entry_t *e) {
  if (e->fb_prov) return e->fb_prov->name;
  const gt_provider_t *p = gt_provider_baseline(GT_BACKEND_CUDA, GT_ENTRY_GEMMEX, &e->key, NULL, 0);
  return p ? p->name : "-";
}

gt_status_t gt_rt_run_default(gt_rt_t *rt, gt_rt_entry_t *e, gt_operands_t *ops, void *stream) {
  if (atomic_load(&e->fb_ready) == 0) {
    if (gt_rt_stream_capturing(stream))
      return gt_err_set(GT_ERR_UNSUPPORTED,
                        "the first call of a key must be made outside CUDA graph capture");
    pthread_mutex_lock(&rt->mu);
    if (atomic_load(&e->fb_ready) == 0) {
      guard_t g;
      guard_enter(rt, &g);
      prepare_default_locked(rt, e);
      guard_leave(&g);
      if (atomic_load(&e->fb_ready) < 0)
        snprintf(e->fb_instance, sizeof e->fb_instance, "unavailable: %.150s", gt_err_msg());
    }
    pthread_mutex_unlock(&rt->mu);
  }
  if (atomic_load(&e->fb_ready) < 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "default path %s", e->fb_instance);
  gt_status_t s = with_workspace(rt, e->fb_ws, ops, stream);
  if (s != GT_OK) return s;
  return e->fb_prov->run(e->fb_state, ops, stream);
}

/* ---- capture timing ------------------------------------------------------------------------ */

static void ev_create_locked(gt_rt_t *rt) {
  guard_t g;
  guard_enter(rt, &g);
  int i;
  for (i = 0; i < GT_RT_EVENTS; i++) {
    if (cudaEventCreate(&rt->ev[i].start) != cudaSuccess) break;
    if (cudaEventCreate(&rt->ev[i].stop) != cudaSuccess) {
      (void)cudaEventDestroy(rt->ev[i].start);
      break;
    }
  }
  if (i < GT_RT_EVENTS) {
    for (int j = 0; j < i; j++) {
      (void)cudaEventDestroy(rt->ev[j].start);
      (void)cudaEventDestroy(rt->ev[j].stop);
    }
    rt->ev_state = -1;
    warnf(rt, "capture: cannot create CUDA events on device %d; GEMM times will be 0",
          rt->device);
  } else {
    rt->ev_state = 1;
  }
  guard_leave(&g);
}

/* Credit finished measurements, oldest first, without waiting (sync = wait for each). */
static void ev_drain_locked(gt_rt_t *rt, bool sync) {
  while (rt->ev_count > 0) {
    gt_rt_ev_t *v = &rt->ev[rt->ev_head];
    if (!v->done) break;
    if (v->e) {
      cudaError_t q = sync ? cudaEventSynchronize(v->stop) : cudaEventQuery(v->stop);
      if (q == cudaErrorNotReady) break;
      float ms = 0;
      if (q == cudaSuccess && cudaEventElapsedTime(&ms, v->start, v->stop) == cudaSuccess) {
        if (!v->e->first_timed_dropped) {
          v->e->first_timed_dropped = true;
          v->e->first_us = (double)ms * 1000.0;
        } else {
          v->e->time_us += (double)ms * 1000.0;
          v->e->timed_calls++;
        }
      }
      (void)cudaGetLastError();
    }
    v->e = NULL;
    v->done = false;
    rt->ev_head = (rt->ev_head + 1) % GT_RT_EVENTS;
    rt->ev_count--;
  }
}

void gt_rt_time_begin(gt_rt_t *rt, gt_rt_entry_t *e, void *stream, gt_rt_timer_t *t) {
  t->slot = -1;
  /* Under capture an event record would become a graph node, and replays are not host calls. */
  if (!e || gt_rt_stream_capturing(stream)) return;
  pthread_mutex_lock(&rt->tmu);
  if (rt->ev_state == 0) ev_create_locked(rt);
  if (rt->ev_state == 1) {
    /* Querying events is not illegal under another thread's global-mode capture only when this
     * thread is relaxed. */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    bool exchanged = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    ev_drain_locked(rt, false);
    if (exchanged) (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (rt->ev_count < GT_RT_EVENTS) {
      int slot = (rt->ev_head + rt->ev_count) % GT_RT_EVENTS;
      if (cudaEventRecord(rt->ev[slot].start, (cudaStream_t)stream) == cudaSuccess) {
        rt->ev[slot].e = e;
        rt->ev[slot].done = false;
        rt->ev_count++;
        t->slot = slot;
      } else {
        (void)cudaGetLastError();
      }
    }
  }
  pthread_mutex_unlock(&rt->tmu);
}

void gt_rt_time_end(gt_rt_t *rt, gt_rt_timer_t *t, void *stream) {
  if (t->slot < 0) return;
  pthread_mutex_lock(&rt->tmu);
  gt_rt_ev_t *v = &rt->ev[t->slot];
  if (cudaEventRecord(v->stop, (cudaStream_t)stream) != cudaSuccess) {
    (void)cudaGetLastError();
    v->e = NULL;
  }
  v->done = true;
  pthread_mutex_unlock(&rt->tmu);
  t->slot = -1;
}

void gt_rt_time_flush(gt_rt_t *rt) {
  pthread_mutex_lock(&rt->tmu);
  if (rt->ev_state == 1) ev_drain_locked(rt, true);
  pthread_mutex_unlock(&rt->tmu);
}
