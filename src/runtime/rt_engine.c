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
  /* a call of several keys (grouped batch): its time split by weight; NULL for one key (e) */
  gt_rt_entry_t **split;
  double *weight;
  int nsplit;
} gt_rt_ev_t;

/* A DB row's candidate, rebuilt and prepared once per engine (at the warm-up or on its key's
 * first decision); entries that hit it borrow the state. */
typedef struct gt_rt_prep {
  int state; /* 0 not prepared (yet), 1 prepared, -1 cannot run here (why) */
  const gt_provider_t *prov;
  void *pstate;
  size_t ws;
  char why[512];
} gt_rt_prep_t;

struct gt_rt {
  int device;
  char arch[GT_ARCH_MAX];
  int sm_count;
  gt_db_device_t here; /* the identity rows are checked against: arch, SMs, name, memory */
  const gt_db_t *db;
  char db_desc[512];
  gt_rt_line_fn warn;
  void *warn_ctx;

  pthread_mutex_t mu; /* inserts, decisions, workspace allocation, prepared rows */
  gt_rt_prep_t *prep; /* one per row of db, allocated at the first decision */
  bool warmed;        /* the rows for this device were prepared (outside capture) */
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

gt_status_t gt_rt_open_as(int device, const char *arch, int sm_count, const gt_db_device_t *here,
                          const gt_db_t *db, const char *db_desc, gt_rt_line_fn warn,
                          void *warn_ctx, gt_rt_t **out) {
  *out = NULL;
  gt_rt_t *rt = calloc(1, sizeof *rt);
  if (!rt) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  rt->device = device;
  snprintf(rt->arch, sizeof rt->arch, "%s", arch);
  rt->sm_count = sm_count;
  if (here) rt->here = *here;
  snprintf(rt->here.arch, sizeof rt->here.arch, "%s", rt->arch);
  rt->here.sm_count = sm_count;
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
  char arch[GT_ARCH_MAX];
  snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
  /* The product and its memory tell an H100 SXM from an H200 (both sm_90, 132 SMs). Unreadable,
   * they stay unknown, which refuses nothing (gt_db_row_fit). Read in relaxed capture mode: the
   * first call of a device may come under capture. */
  gt_db_device_t here;
  memset(&here, 0, sizeof here);
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  const bool switched = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
  if (!switched) (void)cudaGetLastError();
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    gt_db_device_name(prop.name, here.name, sizeof here.name);
    here.mem_gib = gt_db_mem_gib((uint64_t)prop.totalGlobalMem);
  } else {
    (void)cudaGetLastError();
  }
  if (switched) (void)cudaThreadExchangeStreamCaptureMode(&mode);
  return gt_rt_open_as(device, arch, sms, &here, db, db_desc, warn, warn_ctx, out);
}

static void release_entry(gt_rt_entry_t *e) {
  /* The tuned candidate's state belongs to its row (rt->prep), released with it. */
  if (e->fb_prov && e->fb_state && e->fb_prov->release) e->fb_prov->release(e->fb_state);
  free(e);
}

/* Forget a measurement's split (a grouped call's keys). */
static void ev_clear(gt_rt_ev_t *v) {
  free(v->split);
  free(v->weight);
  v->split = NULL;
  v->weight = NULL;
  v->nsplit = 0;
  v->e = NULL;
}

/* Release the prepared rows (under rt->mu, in the guard). */
static void prep_release_locked(gt_rt_t *rt) {
  if (rt->prep && rt->db)
    for (size_t i = 0; i < rt->db->n; i++) {
      gt_rt_prep_t *pr = &rt->prep[i];
      if (pr->state == 1 && pr->pstate && pr->prov->release) pr->prov->release(pr->pstate);
    }
  free(rt->prep);
  rt->prep = NULL;
  rt->warmed = false;
}

void gt_rt_reset(gt_rt_t *rt) {
  if (!rt) return;
  pthread_mutex_lock(&rt->mu);
  guard_t g;
  guard_enter(rt, &g);
  for (size_t i = 0; i < rt->nentries; i++) release_entry(rt->order[i]);
  prep_release_locked(rt);
  guard_leave(&g);
  rt->nentries = 0;
  for (size_t i = 0; i < GT_RT_SLOTS; i++) atomic_store(&rt->slots[i], NULL);
  pthread_mutex_unlock(&rt->mu);
  pthread_mutex_lock(&rt->tmu);
  for (int i = 0; i < GT_RT_EVENTS; i++) ev_clear(&rt->ev[i]);
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
                       k->stride_c, k->epilogue, k->beta_zero, k->sm_count,
                       /* fp8: a rowwise call must never find a tensorwise entry */
                       k->scale_a, k->scale_b, k->fast_accum, k->scale_d, k->amax_d};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) h = fnv(h, f[i]);
  for (const char *c = k->arch; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  return h;
}

/* Field-by-field equality of every key field (what gt_problem_equal decides through text, without
 * formatting 56 strings on each call). */
static bool key_equal(const gt_problem_t *a, const gt_problem_t *b) {
  return a->op == b->op && a->a_type == b->a_type && a->b_type == b->b_type &&
         a->c_type == b->c_type && a->d_type == b->d_type && a->compute == b->compute &&
         a->scale_type == b->scale_type && a->transa == b->transa && a->transb == b->transb &&
         a->m == b->m && a->n == b->n && a->k == b->k && a->lda == b->lda && a->ldb == b->ldb &&
         a->ldc == b->ldc && a->batch == b->batch && a->stride_a == b->stride_a &&
         a->stride_b == b->stride_b && a->stride_c == b->stride_c && a->epilogue == b->epilogue &&
         a->beta_zero == b->beta_zero && a->sm_count == b->sm_count &&
         a->scale_a == b->scale_a && a->scale_b == b->scale_b && a->fast_accum == b->fast_accum &&
         a->scale_d == b->scale_d && a->amax_d == b->amax_d && strcmp(a->arch, b->arch) == 0;
}

uint64_t gt_rt_marked_hash(const gt_problem_t *k, const char *not_tunable) {
  uint64_t h = gt_rt_key_hash(k);
  if (not_tunable)
    for (const char *c = not_tunable; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  return h;
}

static gt_rt_entry_t *probe(gt_rt_t *rt, const gt_problem_t *k, const char *why, uint64_t h,
                            size_t *free_slot) {
  size_t i = (size_t)h & (GT_RT_SLOTS - 1);
  for (size_t n = 0; n < GT_RT_SLOTS; n++, i = (i + 1) & (GT_RT_SLOTS - 1)) {
    gt_rt_entry_t *e = atomic_load_explicit(&rt->slots[i], memory_order_acquire);
    if (!e) {
      if (free_slot) *free_slot = i;
      return NULL;
    }
    if (e->hash == h && key_equal(&e->key, k) && strcmp(e->not_tunable, why) == 0) return e;
  }
  if (free_slot) *free_slot = SIZE_MAX;
  return NULL;
}

gt_rt_entry_t *gt_rt_entry_marked(gt_rt_t *rt, const gt_problem_t *k, const char *entry_point,
                                  const char *not_tunable) {
  char why[GT_RT_NOT_TUNABLE_MAX];
  /* Cut the way the entry stores it, so the probe compares like with like. */
  snprintf(why, sizeof why, "%s", not_tunable ? not_tunable : "");
  uint64_t h = gt_rt_marked_hash(k, why);
  gt_rt_entry_t *e = probe(rt, k, why, h, NULL);
  if (e) return e;
  pthread_mutex_lock(&rt->mu);
  size_t slot = SIZE_MAX;
  e = probe(rt, k, why, h, &slot); /* another thread may have inserted it meanwhile */
  if (!e && slot != SIZE_MAX && rt->nentries < GT_RT_MAX_ENTRIES) {
    e = calloc(1, sizeof *e);
    if (e) {
      e->key = *k;
      e->hash = h;
      e->entry_point = entry_point;
      memcpy(e->not_tunable, why, sizeof why);
      atomic_init(&e->state, GT_RT_NEW);
      rt->order[rt->nentries++] = e;
      /* Published last: a reader that sees the pointer sees a complete entry. */
      atomic_store_explicit(&rt->slots[slot], e, memory_order_release);
    }
  }
  pthread_mutex_unlock(&rt->mu);
  return e;
}

gt_rt_entry_t *gt_rt_entry(gt_rt_t *rt, const gt_problem_t *k, const char *entry_point) {
  return gt_rt_entry_marked(rt, k, entry_point, NULL);
}

void gt_rt_foreach(gt_rt_t *rt, void (*fn)(void *ctx, gt_rt_entry_t *e), void *ctx) {
  pthread_mutex_lock(&rt->mu);
  for (size_t i = 0; i < rt->nentries; i++) fn(ctx, rt->order[i]);
  pthread_mutex_unlock(&rt->mu);
}

/* ---- prepared rows -------------------------------------------------------------------------
 * A row's candidate is rebuilt (from_name) and prepared once per engine, into rt->prep. The
 * checks before that (provider, backend, library version) are host work and final. Rebuilding
 * and preparing may touch CUDA state (module loading, function attributes, library handles):
 * during a capture they run only when the provider says that is safe on this thread now, and a
 * failure there is not final (the row is tried again outside capture). */

static void prep_fail(gt_rt_prep_t *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void prep_fail(gt_rt_prep_t *pr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pr->why, sizeof pr->why, fmt, ap);
  va_end(ap);
  pr->state = -1;
}

/* Host-only checks of a row: false (pr failed, final) when it cannot run here at all. */
static bool row_applies(const gt_db_row_t *row, gt_rt_prep_t *pr, const gt_provider_t **out) {
  const gt_provider_t *prov = gt_provider_find(row->provider);
  if (!prov) {
    prep_fail(pr, "the row names provider '%s', which this build does not have", row->provider);
    return false;
  }
  if (gt_provider_ready(prov) != GT_OK) {
    prep_fail(pr, "provider %s is unavailable here: %s", prov->name, gt_err_msg());
    return false;
  }
  if (prov->backend != GT_BACKEND_CUDA) {
    prep_fail(pr, "provider %s runs on the host, not on this GPU", prov->name);
    return false;
  }
  /* cuBLASLt algorithm ids are not portable across library versions. */
  if (!gt_provider_lib_applies(prov, row->lib, NULL, 0)) {
    const char *have = gt_provider_lib_loaded(prov);
    prep_fail(pr, "the row was tuned with %s, this process has %s", row->lib,
              strcmp(have, "-") != 0 ? have : "none");
    return false;
  }
  *out = prov;
  return true;
}

/* Prepare row's candidate into pr (state 0 on entry). Under capture (capturing): only when the
 * provider allows it now, and a failure leaves pr at 0 with why. Returns true when it called
 * into the provider (from_name/prepare) during a capture. Under rt->mu, in the guard. */
static bool prepare_row(const gt_db_row_t *row, gt_rt_prep_t *pr, bool capturing) {
  const gt_provider_t *prov = NULL;
  if (!row_applies(row, pr, &prov)) return false;
  if (capturing && !(prov->capture_safe && prov->capture_safe())) {
    snprintf(pr->why, sizeof pr->why,
             "provider %s cannot prepare a candidate during CUDA graph capture on this thread "
             "(no call outside capture prepared it first)",
             prov->name);
    return false;
  }
  gt_candidate_t cand;
  gt_err_clear();
  gt_status_t s = gt_provider_candidate_from_name(row->provider, row->instance, &row->key, &cand);
  if (s != GT_OK) {
    snprintf(pr->why, sizeof pr->why, "instance %s cannot be rebuilt for this key: %s",
             row->instance, gt_err_msg());
    if (!capturing) pr->state = -1;
    return capturing;
  }
  void *st = NULL;
  size_t ws = 0;
  gt_err_clear();
  if (prov->prepare(&cand, &row->key, &st, &ws) != GT_OK) {
    snprintf(pr->why, sizeof pr->why, "preparing %s failed%s: %s", row->instance,
             capturing ? " during CUDA graph capture" : "", gt_err_msg());
    if (!capturing) pr->state = -1;
    return capturing;
  }
  pr->prov = prov;
  pr->pstate = st;
  pr->ws = ws;
  pr->state = 1;
  return capturing;
}

/* The prepared-row table, allocated on first need (NULL: out of memory). */
static gt_rt_prep_t *prep_table(gt_rt_t *rt) {
  if (!rt->prep && rt->db && rt->db->n) rt->prep = calloc(rt->db->n, sizeof *rt->prep);
  return rt->prep;
}

/* The rows a decision on this device could pick: the key's arch and SM count, and the product
 * identity where the row records one (a row of another product is never prepared). */
static bool row_for_device(const gt_rt_t *rt, const gt_db_row_t *row) {
  return strcmp(row->key.arch, rt->arch) == 0 && row->key.sm_count == rt->sm_count &&
         gt_rt_row_applies(row, &rt->here, NULL, 0);
}

/* The warm-up, at the first decision made outside capture: every row for this device prepared,
 * so a key first seen in a later capture has nothing left to prepare there. */
static void warm_locked(gt_rt_t *rt) {
  if (rt->warmed) return;
  rt->warmed = true;
  gt_rt_prep_t *prep = prep_table(rt);
  if (!prep) return;
  for (size_t i = 0; i < rt->db->n; i++)
    if (prep[i].state == 0 && row_for_device(rt, &rt->db->rows[i]))
      (void)prepare_row(&rt->db->rows[i], &prep[i], false);
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

/* Decide e against its row. A miss is final wherever it is decided (nothing to prepare); so is a
 * row that cannot run here; a row whose candidate could not be prepared during a capture leaves
 * e NEW. *in_capture: the provider was called during a capture. */
static gt_rt_state_t decide_locked(gt_rt_t *rt, gt_rt_entry_t *e, bool capturing,
                                   bool *in_capture) {
  *in_capture = false;
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
  gt_rt_prep_t *prep = prep_table(rt);
  if (!prep) {
    snprintf(e->why, sizeof e->why, "out of host memory preparing the tuned rows");
    return GT_RT_FAILED;
  }
  gt_rt_prep_t *pr = &prep[row - rt->db->rows];
  if (pr->state == 0) *in_capture = prepare_row(row, pr, capturing);
  if (pr->state < 0) {
    snprintf(e->why, sizeof e->why, "%s", pr->why);
    return GT_RT_FAILED;
  }
  if (pr->state == 0) {
    snprintf(e->why, sizeof e->why, "%s", pr->why);
    return GT_RT_NEW;
  }
  e->prov = pr->prov;
  e->pstate = pr->pstate;
  e->ws_needed = pr->ws;
  snprintf(e->why, sizeof e->why, "tuned row: %.3gx over %s (%.2f vs %.2f us, %s, error %.2g)",
           row->speedup, row->baseline[0] ? row->baseline : "the baseline", row->time_us,
           row->baseline_us, row->timing, row->error);
  return GT_RT_HIT;
}

/* After the provider ran during a capture: it promised not to touch the capture; if the capture
 * was invalidated all the same, say so loudly (the application's cudaStreamEndCapture will fail,
 * and the provider's capture_safe is wrong). */
static void check_capture_intact(gt_rt_t *rt, const gt_rt_entry_t *e, void *stream) {
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing((cudaStream_t)stream, &cs) != cudaSuccess) (void)cudaGetLastError();
  if (cs == cudaStreamCaptureStatusInvalidated)
    warnf(rt, "the CUDA graph capture of stream %p was invalidated while %s %s was prepared "
              "during it (please report this)",
          stream, e->provider, e->instance);
}

gt_rt_state_t gt_rt_decide(gt_rt_t *rt, gt_rt_entry_t *e, void *stream) {
  int st = atomic_load_explicit(&e->state, memory_order_acquire);
  if (st != GT_RT_NEW || e->not_tunable[0]) return (gt_rt_state_t)st;
  const bool capturing = gt_rt_stream_capturing(stream);
  bool in_capture = false;
  pthread_mutex_lock(&rt->mu);
  st = atomic_load_explicit(&e->state, memory_order_acquire);
  if (st == GT_RT_NEW) {
    guard_t g;
    guard_enter(rt, &g);
    if (!capturing) warm_locked(rt);
    st = decide_locked(rt, e, capturing, &in_capture);
    guard_leave(&g);
    if (st != GT_RT_NEW) atomic_store_explicit(&e->state, st, memory_order_release);
  }
  pthread_mutex_unlock(&rt->mu);
  if (in_capture) check_capture_intact(rt, e, stream);
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
typedef struct default_path {
  const gt_provider_t *prov;
  void *state;
  size_t ws;
  char name[GT_NAME_MAX];
} default_path_t;

/* The entry point whose default path stands for key's calls: cublasGemmEx, except for fp8 keys,
 * which only cublasLtMatmul takes (the application's own Lt call is their default). */
static gt_entry_t default_entry(const gt_problem_t *key) {
  return gt_dtype_is_fp8(key->a_type) || gt_dtype_is_fp8(key->b_type) ? GT_ENTRY_LTMATMUL
                                                                       : GT_ENTRY_GEMMEX;
}

/* Prepare the default path for key into d. *later: not tried because a capture is under way and
 * the provider cannot prepare during it on this thread (not final). The message is in
 * gt_err_msg. Under rt->mu, in the guard. */
static gt_status_t default_prepare(gt_rt_t *rt, const gt_problem_t *key, bool capturing,
                                   default_path_t *d, bool *later) {
  *later = false;
  char absent[300];
  const gt_provider_t *prov =
      gt_provider_baseline(GT_BACKEND_CUDA, default_entry(key), key, absent, sizeof absent);
  if (!prov) return gt_err_set(GT_ERR_UNSUPPORTED, "%s", absent);
  if (capturing && !(prov->capture_safe && prov->capture_safe())) {
    *later = true;
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "%s cannot prepare the default path during CUDA graph capture on this "
                      "thread (make one call outside capture first)",
                      prov->name);
  }
  gt_cand_list_t list = {0};
  gt_enum_opts_t o = {.max_candidates = 0, .exhaustive = false, .device = rt->device};
  gt_status_t s = prov->enumerate(key, &o, &list);
  const gt_candidate_t *pick = NULL;
  for (size_t i = 0; s == GT_OK && i < list.n; i++) {
    if (list.v[i].excluded) continue;
    if (!pick || (list.v[i].is_baseline && !pick->is_baseline)) pick = &list.v[i];
  }
  if (s == GT_OK && !pick) {
    const char *why = list.n ? list.v[0].reason : "no candidates";
    s = gt_err_set(GT_ERR_UNSUPPORTED, "%s cannot run this key: %s", prov->name, why);
  }
  if (s == GT_OK) s = prov->prepare(pick, key, &d->state, &d->ws);
  if (s == GT_OK) {
    d->prov = prov;
    snprintf(d->name, sizeof d->name, "%s", pick->name);
  }
  gt_cand_list_free(&list);
  return s;
}

static void prepare_default_locked(gt_rt_t *rt, gt_rt_entry_t *e, bool capturing) {
  default_path_t d = {0};
  bool later = false;
  gt_status_t s = default_prepare(rt, &e->key, capturing, &d, &later);
  if (later) {
    snprintf(e->fb_instance, sizeof e->fb_instance, "not prepared: %.150s", gt_err_msg());
    return; /* fb_ready stays 0: a later call prepares it */
  }
  if (s == GT_OK) {
    e->fb_prov = d.prov;
    e->fb_state = d.state;
    e->fb_ws = d.ws;
    snprintf(e->fb_instance, sizeof e->fb_instance, "%s", d.name);
  } else {
    snprintf(e->fb_instance, sizeof e->fb_instance, "unavailable: %.150s", gt_err_msg());
  }
  atomic_store(&e->fb_ready, s == GT_OK ? 1 : -1);
}

void gt_rt_prime_default(gt_rt_t *rt) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.m = p.n = p.k = 64;
  gt_problem_fill_lds(&p);
  snprintf(p.arch, sizeof p.arch, "%s", rt->arch);
  p.sm_count = rt->sm_count;
  default_path_t d = {0};
  bool later = false;
  pthread_mutex_lock(&rt->mu);
  guard_t g;
  guard_enter(rt, &g);
  gt_err_clear();
  if (default_prepare(rt, &p, false, &d, &later) == GT_OK && d.prov->release)
    d.prov->release(d.state); /* what stays is the provider's per-thread state (the handle) */
  gt_err_clear();
  guard_leave(&g);
  pthread_mutex_unlock(&rt->mu);
}

const char *gt_rt_default_provider(const gt_rt_entry_t *e) {
  if (e->fb_prov) return e->fb_prov->name;
  const gt_provider_t *p = gt_provider_baseline(GT_BACKEND_CUDA, default_entry(&e->key), &e->key, NULL, 0);
  return p ? p->name : "-";
}

gt_status_t gt_rt_run_default(gt_rt_t *rt, gt_rt_entry_t *e, gt_operands_t *ops, void *stream) {
  if (atomic_load(&e->fb_ready) == 0) {
    /* A first call under capture is prepared then too, when the provider can do so safely
     * (nothing enqueued, nothing allocated on the device): see default_prepare. */
    const bool capturing = gt_rt_stream_capturing(stream);
    pthread_mutex_lock(&rt->mu);
    if (atomic_load(&e->fb_ready) == 0) {
      guard_t g;
      guard_enter(rt, &g);
      prepare_default_locked(rt, e, capturing);
      guard_leave(&g);
    }
    pthread_mutex_unlock(&rt->mu);
  }
  int ready = atomic_load(&e->fb_ready);
  if (ready <= 0) return gt_err_set(GT_ERR_UNSUPPORTED, "default path %s", e->fb_instance);
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

/* One measured call's time to its entry (under tmu). The first measured call of each key is
 * dropped (one-time costs), kept only for a key never measured again. */
static void credit(gt_rt_entry_t *e, double us) {
  if (!e->first_timed_dropped) {
    e->first_timed_dropped = true;
    e->first_us = us;
  } else {
    e->time_us += us;
    e->timed_calls++;
  }
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
        const double us = (double)ms * 1000.0;
        if (v->split)
          for (int i = 0; i < v->nsplit; i++) credit(v->split[i], us * v->weight[i]);
        else
          credit(v->e, us);
      }
      (void)cudaGetLastError();
    }
    ev_clear(v);
    v->done = false;
    rt->ev_head = (rt->ev_head + 1) % GT_RT_EVENTS;
    rt->ev_count--;
  }
}

/* The keys of a grouped call into slot v, with their shares of its time (weights normalised);
 * false when they cannot be kept (out of memory: the call is then not measured). */
static bool ev_split(gt_rt_ev_t *v, gt_rt_entry_t *const *es, const double *weight, int n) {
  double total = 0;
  for (int i = 0; i < n; i++) total += weight[i] > 0 ? weight[i] : 0;
  v->split = malloc((size_t)n * sizeof *v->split);
  v->weight = malloc((size_t)n * sizeof *v->weight);
  if (!v->split || !v->weight || total <= 0) {
    ev_clear(v);
    return false;
  }
  for (int i = 0; i < n; i++) {
    v->split[i] = es[i];
    v->weight[i] = (weight[i] > 0 ? weight[i] : 0) / total;
  }
  v->nsplit = n;
  return true;
}

void gt_rt_time_begin_split(gt_rt_t *rt, gt_rt_entry_t *const *es, const double *weight, int n,
                            void *stream, gt_rt_timer_t *t) {
  t->slot = -1;
  /* Under capture an event record would become a graph node, and replays are not host calls. */
  if (n < 1 || !es[0] || gt_rt_stream_capturing(stream)) return;
  pthread_mutex_lock(&rt->tmu);
  if (rt->ev_state == 0) ev_create_locked(rt);
  if (rt->ev_state == 1) {
    /* Querying events is not illegal under another thread's global-mode capture only when this
     * thread is relaxed. */
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    bool exchanged = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
    ev_drain_locked(rt, false);
    if (exchanged) (void)cudaThreadExchangeStreamCaptureMode(&mode);
    int slot = (rt->ev_head + rt->ev_count) % GT_RT_EVENTS;
    gt_rt_ev_t *v = &rt->ev[slot];
    if (rt->ev_count < GT_RT_EVENTS && (n == 1 || ev_split(v, es, weight, n))) {
      if (cudaEventRecord(v->start, (cudaStream_t)stream) == cudaSuccess) {
        v->e = es[0];
        v->done = false;
        rt->ev_count++;
        t->slot = slot;
      } else {
        ev_clear(v);
        (void)cudaGetLastError();
      }
    }
  }
  pthread_mutex_unlock(&rt->tmu);
}

void gt_rt_time_begin(gt_rt_t *rt, gt_rt_entry_t *e, void *stream, gt_rt_timer_t *t) {
  gt_rt_time_begin_split(rt, &e, NULL, 1, stream, t);
}

void gt_rt_time_end(gt_rt_t *rt, gt_rt_timer_t *t, void *stream) {
  if (t->slot < 0) return;
  pthread_mutex_lock(&rt->tmu);
  gt_rt_ev_t *v = &rt->ev[t->slot];
  if (cudaEventRecord(v->stop, (cudaStream_t)stream) != cudaSuccess) {
    (void)cudaGetLastError();
    ev_clear(v); /* abandoned */
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
