/* libgemmtune_preload.so: deploys a tuned DB into an unmodified application.
 *
 * Loaded with LD_PRELOAD, it defines cublasGemmEx, cublasGemmStridedBatchedEx, cublasSgemm_v2,
 * cublasHgemm and cublasLtMatmul (default visibility, no version node, no link to cuBLAS), so the
 * application's calls arrive here first. Each call's key is built with gt_cublas_key (the same key
 * `tune` writes); on a hit the tuned candidate runs on the caller's stream; on a miss, on anything
 * the key builder does not fully understand, and on any error, the real function is called with
 * the original arguments. The real functions are found in the copy of cuBLAS the process already
 * loaded (dlopen RTLD_NOLOAD + dlvsym), never in a second copy.
 *
 * Environment:
 *   GEMMTUNE_DB=path[:path...]  tuned DBs; the first file listing a key wins
 *   GEMMTUNE_LOG=1              one line per distinct key on its first hit/miss (a miss names the
 *                               nearest row and the fields that differ), and a table of calls and
 *                               hits per key at exit
 *   GEMMTUNE_CAPTURE=path       record every distinct key with its call count and GPU time and
 *                               write them at exit as a shapes file (capture_csv.h); "%p" in the
 *                               path is replaced by the process id
 *   GEMMTUNE_STATS=path         write calls, hits and the decision per key at exit as CSV
 *                               (capture_csv.h, gt_rt_stats_*); "%p" as above
 * Every message goes to stderr prefixed "gemmtune:". Nothing here aborts. src/runtime/README.md
 * documents the formats.
 *
 * The shim never trusts what it is handed: it queries no CUDA object the application passed
 * (streams included) before the call is understood, takes the device from the calling thread
 * (cuBLAS requires the handle's device to be current; cuBLASLt launches into the current
 * context), and under CUDA graph capture makes no call that could invalidate the capture. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "capture_csv.h"
#include "core/gt_cublas_key.h"
#include "core/gt_shapes.h"
#include "preload_db.h"
#include "rt_engine.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define MAX_DEVICES 64
#define MAX_REASONS 64

/* ---- messages ------------------------------------------------------------------------------ */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  /* One write per line, so lines from several threads or processes do not interleave. */
  char line[2048];
  int n = snprintf(line, sizeof line, "gemmtune: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
}

static void say_line(void *ctx, const char *line) {
  (void)ctx;
  say("%s", line);
}

/* ---- finding the real functions ------------------------------------------------------------ */

enum { LIB_CUBLAS = 0, LIB_CUBLASLT = 1 };
static const char *const k_lib_names[2] = {"libcublas.so.13", "libcublasLt.so.13"};

/* The library the application already loaded. RTLD_NOLOAD never maps a second copy: a process
 * that calls cublasGemmEx has libcublas loaded, so this only fails in odd setups, and then the
 * next definition in lookup order (RTLD_NEXT) is used. */
static void *real_symbol(int lib, const char *sym, void *self) {
  void *fn = NULL;
  void *h = dlopen(k_lib_names[lib], RTLD_NOW | RTLD_NOLOAD);
  if (h) {
    fn = dlvsym(h, sym, k_lib_names[lib]);
    if (!fn) fn = dlsym(h, sym);
    dlclose(h); /* drops the reference NOLOAD added; the library stays loaded */
  }
  if (!fn) fn = dlsym(RTLD_NEXT, sym);
  if (fn == self) fn = NULL; /* never call ourselves */
  return fn;
}

#define REAL(lib, type, name, self)                                                  \
  static _Atomic(type) real_##name;                                                  \
  type name##_real = atomic_load_explicit(&real_##name, memory_order_acquire);       \
  if (!name##_real) {                                                                \
    name##_real = (type)real_symbol(lib, #name, (void *)(self));                      \
    atomic_store_explicit(&real_##name, name##_real, memory_order_release);          \
  }

typedef cublasStatus_t (*pfn_GemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                     int, int, const void *, const void *, cudaDataType, int,
                                     const void *, cudaDataType, int, const void *, void *,
                                     cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_GemmStridedBatchedEx)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
    const void *, cudaDataType, int, long long int, const void *, cudaDataType, int,
    long long int, const void *, void *, cudaDataType, int, long long int, int,
    cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*pfn_Sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const float *, const float *, int, const float *,
                                    int, const float *, float *, int);
typedef struct shim_half { unsigned short x; } shim_half_t; /* __half is C++ only */
typedef cublasStatus_t (*pfn_Hgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                    int, int, const shim_half_t *, const shim_half_t *, int,
                                    const shim_half_t *, int, const shim_half_t *, shim_half_t *,
                                    int);
typedef cublasStatus_t (*pfn_LtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                       const void *, cublasLtMatrixLayout_t, const void *,
                                       cublasLtMatrixLayout_t, const void *, const void *,
                                       cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);
typedef cublasStatus_t (*pfn_GetStream)(cublasHandle_t, cudaStream_t *);
typedef cublasStatus_t (*pfn_GetPointerMode)(cublasHandle_t, cublasPointerMode_t *);
typedef cublasStatus_t (*pfn_GetMathMode)(cublasHandle_t, cublasMath_t *);
typedef cublasStatus_t (*pfn_LtDescGet)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                        void *, size_t, size_t *);
typedef cublasStatus_t (*pfn_LtLayoutGet)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t,
                                          void *, size_t, size_t *);

/* The handle queries the shim needs, resolved once. */
typedef struct shim_api {
  pfn_GetStream GetStream;
  pfn_GetPointerMode GetPointerMode;
  pfn_GetMathMode GetMathMode;
  pfn_LtDescGet LtDescGet;
  pfn_LtLayoutGet LtLayoutGet;
  uintptr_t cublas_lo, cublas_hi; /* address range of libcublas's code, 0 when not found */
} shim_api_t;

static shim_api_t g_api;
static pthread_once_t g_api_once = PTHREAD_ONCE_INIT;

typedef struct range_query {
  uintptr_t addr, lo, hi;
} range_query_t;

static int find_range(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  range_query_t *q = data;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (q->addr >= lo && q->addr < hi) {
    q->lo = lo;
    q->hi = hi;
    return 1;
  }
  return 0;
}

/* Fill whatever is still missing: an application may load cuBLASLt first and cuBLAS later. */
static void api_fill(void) {
  if (!g_api.GetStream)
    g_api.GetStream = (pfn_GetStream)real_symbol(LIB_CUBLAS, "cublasGetStream_v2", NULL);
  if (!g_api.GetPointerMode)
    g_api.GetPointerMode =
        (pfn_GetPointerMode)real_symbol(LIB_CUBLAS, "cublasGetPointerMode_v2", NULL);
  if (!g_api.GetMathMode)
    g_api.GetMathMode = (pfn_GetMathMode)real_symbol(LIB_CUBLAS, "cublasGetMathMode", NULL);
  if (!g_api.LtDescGet)
    g_api.LtDescGet =
        (pfn_LtDescGet)real_symbol(LIB_CUBLASLT, "cublasLtMatmulDescGetAttribute", NULL);
  if (!g_api.LtLayoutGet)
    g_api.LtLayoutGet =
        (pfn_LtLayoutGet)real_symbol(LIB_CUBLASLT, "cublasLtMatrixLayoutGetAttribute", NULL);
  /* cuBLAS calls cublasLtMatmul internally, also from entry points the shim does not define
   * (cublasGemmBatchedEx, the _64 forms...). Those calls are cuBLAS's business: knowing where
   * libcublas is mapped lets cublasLtMatmul recognise them by their return address. */
  if (g_api.GetStream && !g_api.cublas_hi) {
    range_query_t q = {.addr = (uintptr_t)g_api.GetStream};
    if (dl_iterate_phdr(find_range, &q)) {
      g_api.cublas_lo = q.lo;
      g_api.cublas_hi = q.hi;
    }
  }
}

static pthread_mutex_t g_api_mu = PTHREAD_MUTEX_INITIALIZER;

static void api_resolve(void) { api_fill(); }

/* The resolved queries. Readers of a pointer that is still NULL call api_refill (rare: only
 * until the library that defines it is loaded). */
static const shim_api_t *api(void) {
  pthread_once(&g_api_once, api_resolve);
  return &g_api;
}

static const shim_api_t *api_refill(void) {
  pthread_mutex_lock(&g_api_mu);
  api_fill();
  pthread_mutex_unlock(&g_api_mu);
  return &g_api;
}

static cublasStatus_t missing_real(const char *name) {
  static _Atomic int said;
  if (!atomic_exchange(&said, 1))
    say("cannot find the real %s in this process (is cuBLAS 13 loaded?); failing the call", name);
  return CUBLAS_STATUS_NOT_INITIALIZED;
}

/* ---- global state -------------------------------------------------------------------------- */

typedef struct reason {
  char text[200];
  const char *entry;
  uint64_t calls;
} reason_t;

static struct {
  pthread_once_t once;
  bool active; /* anything to do at all: DB rows, logging or capture */
  bool log;
  bool capture;
  bool stats;
  bool hits_allowed; /* the process has cuBLAS 13: tuned candidates use the same copy */
  char capture_path[4096];
  char stats_path[4096];
  gt_db_t db;
  char db_desc[600];
  pid_t pid;

  pthread_mutex_t mu; /* engines, reasons, exit */
  _Atomic(gt_rt_t *) rt[MAX_DEVICES];
  bool rt_failed[MAX_DEVICES];
  bool exit_registered_late; /* registered after this library's CUDA runtime started */
  _Atomic int exit_done;
  reason_t reasons[MAX_REASONS];
  int nreasons;
  uint64_t reasons_other;
  _Atomic uint64_t untracked; /* calls of keys past the engine's table capacity */
} g = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

/* Depth of interposed calls on this thread: a call made while the shim is already inside one
 * (cuBLAS's own cublasLtMatmul, or a provider running a tuned candidate) goes straight through. */
static _Thread_local int t_depth;

static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
         strcasecmp(v, "no") != 0 && strcasecmp(v, "off") != 0;
}

static void shim_exit(void);

/* Loaded on the first interposed call, not at library load: processes the application spawns
 * (shells, compilers) inherit LD_PRELOAD but never call cuBLAS, and should stay silent. */
static void shim_init(void) {
  g.pid = getpid();
  g.log = env_flag("GEMMTUNE_LOG");
  const char *cap = getenv("GEMMTUNE_CAPTURE");
  if (cap && *cap) {
    g.capture = true;
    snprintf(g.capture_path, sizeof g.capture_path, "%s", cap);
  }
  const char *stats = getenv("GEMMTUNE_STATS");
  if (stats && *stats) {
    g.stats = true;
    snprintf(g.stats_path, sizeof g.stats_path, "%s", stats);
  }
  gt_db_init(&g.db);
  const char *paths = getenv("GEMMTUNE_DB");
  if (paths && *paths) {
    gt_rt_db_load_report_t rep;
    (void)gt_rt_db_load_list(paths, &g.db, say_line, NULL, &rep);
    snprintf(g.db_desc, sizeof g.db_desc, "GEMMTUNE_DB=%.500s: %zu rows", paths, g.db.n);
    if (g.log)
      say("loaded %zu tuned rows from %zu file%s (%zu skipped) in GEMMTUNE_DB", g.db.n,
          rep.files_ok, rep.files_ok == 1 ? "" : "s", rep.files_bad);
  } else {
    snprintf(g.db_desc, sizeof g.db_desc, "GEMMTUNE_DB is not set");
  }
  g.active = g.db.n > 0 || g.log || g.capture || g.stats;
  /* Tuned candidates resolve cuBLASLt through gt_cudalib, which takes the copy already loaded.
   * A process built against another major version has none loaded, and loading ours next to
   * its own is exactly what the shim must never do: keys are still counted, nothing runs. */
  void *lt = dlopen(k_lib_names[LIB_CUBLASLT], RTLD_NOW | RTLD_NOLOAD);
  g.hits_allowed = lt != NULL;
  if (lt) dlclose(lt);
  if (!g.hits_allowed && g.db.n)
    say("%s is not loaded in this process (another cuBLAS version?): tuned rows are not used, "
        "every call goes to the application's cuBLAS",
        k_lib_names[LIB_CUBLASLT]);
  /* Report even when no call ever reaches a device (each later registration runs first; the
   * report runs once). */
  if (g.log || g.capture || g.stats) atexit(shim_exit);
}

static bool shim_active(void) {
  pthread_once(&g.once, shim_init);
  return g.active;
}

/* The engine of a device, created on its first call. Registering the exit report here, after
 * this library's CUDA runtime has initialised, makes it run before that runtime's own teardown
 * (atexit handlers run in reverse order), so outstanding GPU timings can still be read. */
static gt_rt_t *engine_for(int dev) {
  if (dev < 0 || dev >= MAX_DEVICES) return NULL;
  gt_rt_t *rt = atomic_load_explicit(&g.rt[dev], memory_order_acquire);
  if (rt) return rt;
  pthread_mutex_lock(&g.mu);
  rt = atomic_load(&g.rt[dev]);
  if (!rt && !g.rt_failed[dev]) {
    if (gt_rt_open(dev, &g.db, g.db_desc, say_line, NULL, &rt) != GT_OK) {
      say("device %d: %s; passing its calls through", dev, gt_err_msg());
      g.rt_failed[dev] = true;
      rt = NULL;
    } else {
      atomic_store_explicit(&g.rt[dev], rt, memory_order_release);
      if (!g.exit_registered_late) {
        g.exit_registered_late = true;
        atexit(shim_exit);
      }
    }
  }
  pthread_mutex_unlock(&g.mu);
  return rt;
}

/* The calling thread's device. Not the stream's: asking the runtime about a stream the
 * application passed means trusting it (a stand-in library's fake handle crashes the query), and
 * no stream query is needed: cuBLAS runs a handle only with its device current, and a cuBLASLt
 * call on a stream of another device fails in cuBLASLt itself. A pure thread-state query, legal
 * under any graph capture. */
static int current_device(void) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) {
    (void)cudaGetLastError();
    return -1;
  }
  return dev;
}

static void note_unsupported(const char *entry, const char *why) {
  pthread_mutex_lock(&g.mu);
  int i;
  for (i = 0; i < g.nreasons; i++)
    if (strcmp(g.reasons[i].entry, entry) == 0 &&
        strncmp(g.reasons[i].text, why, sizeof g.reasons[i].text - 1) == 0)
      break;
  bool first = false;
  if (i < g.nreasons) {
    g.reasons[i].calls++;
  } else if (g.nreasons < MAX_REASONS) {
    reason_t *r = &g.reasons[g.nreasons++];
    snprintf(r->text, sizeof r->text, "%s", why);
    r->entry = entry;
    r->calls = 1;
    first = true;
  } else {
    g.reasons_other++;
  }
  pthread_mutex_unlock(&g.mu);
  if (first && g.log) say("pass %s: %s (passed through untouched)", entry, why);
}

/* ---- one call ------------------------------------------------------------------------------ */

typedef struct shim_call {
  const char *entry;
  cudaStream_t stream;
  gt_rt_t *rt;
  gt_cublas_env_t env;
  gt_rt_entry_t *e;
  gt_rt_timer_t timer;
} shim_call_t;

static bool call_begin(shim_call_t *c, const char *entry, cudaStream_t stream) {
  memset(c, 0, sizeof *c);
  c->entry = entry;
  c->stream = stream;
  c->timer.slot = -1;
  int dev = current_device();
  if (dev < 0) {
    note_unsupported(entry, "the current device cannot be determined (no usable CUDA device?)");
    return false;
  }
  if (!(c->rt = engine_for(dev))) return false;
  snprintf(c->env.arch, sizeof c->env.arch, "%s", gt_rt_arch(c->rt));
  c->env.sm_count = gt_rt_sm_count(c->rt);
  return true;
}

/* For the cublas<...> entry points: stream, pointer mode and math mode come from the handle. */
static bool call_begin_handle(shim_call_t *c, const char *entry, cublasHandle_t handle) {
  memset(c, 0, sizeof *c);
  c->timer.slot = -1;
  const shim_api_t *a = api();
  if (!a->GetStream || !a->GetPointerMode || !a->GetMathMode) a = api_refill();
  cudaStream_t stream = NULL;
  cublasPointerMode_t pm = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t mm = CUBLAS_DEFAULT_MATH;
  if (!a->GetStream || !a->GetPointerMode || !a->GetMathMode ||
      a->GetStream(handle, &stream) != CUBLAS_STATUS_SUCCESS ||
      a->GetPointerMode(handle, &pm) != CUBLAS_STATUS_SUCCESS ||
      a->GetMathMode(handle, &mm) != CUBLAS_STATUS_SUCCESS) {
    note_unsupported(entry, "the handle's stream or modes cannot be read");
    return false;
  }
  if (!call_begin(c, entry, stream)) return false;
  c->env.pointer_mode = (int)pm;
  c->env.math_mode = (int)mm;
  return true;
}

static void log_decision(shim_call_t *c, gt_rt_entry_t *e, gt_rt_state_t st) {
  if (st == GT_RT_NEW) {
    if (g.log && !atomic_exchange(&e->deferred_logged, 1)) {
      char d[256];
      gt_problem_describe(&e->key, d, sizeof d);
      say("wait %s %s: first seen during CUDA graph capture; passed through until a call outside "
          "capture decides it",
          c->entry, d);
    }
    return;
  }
  /* A row that exists but cannot be used is always reported: that is the silent failure this
   * tool exists to make loud. Hits and misses only with GEMMTUNE_LOG. */
  if (st != GT_RT_FAILED && !g.log) return;
  if (atomic_exchange(&e->logged, 1)) return;
  char d[256];
  gt_problem_describe(&e->key, d, sizeof d);
  if (st == GT_RT_HIT) {
    say("hit %s %s -> %s %s (%s)", c->entry, d, e->provider, e->instance, e->why);
  } else if (st == GT_RT_MISS) {
    char key[1024];
    gt_problem_format_key(&e->key, key, sizeof key);
    say("miss %s %s: %s [key %s]", c->entry, d, e->why, key);
  } else {
    say("not used %s %s: %s; calling %s instead", c->entry, d, e->why, c->entry);
  }
}

/* Count the call, decide its key, and run the tuned candidate on a hit. key_status is what
 * mapping the call to a key returned: anything but GT_OK notes the call as unsupported (with the
 * mapping's message). Returns true when the candidate ran (the call is complete); false means:
 * call the real function. */
static bool call_try(shim_call_t *c, gt_status_t key_status, const gt_problem_t *key,
                     gt_operands_t *ops) {
  if (key_status != GT_OK) {
    note_unsupported(c->entry, gt_err_msg());
    return false;
  }
  gt_rt_entry_t *e = gt_rt_entry(c->rt, key, c->entry);
  if (!e) {
    atomic_fetch_add(&g.untracked, 1);
    return false;
  }
  c->e = e;
  atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
  if (g.capture) gt_rt_time_begin(c->rt, e, c->stream, &c->timer);
  if (!g.hits_allowed) return false;
  gt_rt_state_t st = gt_rt_decide(c->rt, e, c->stream);
  log_decision(c, e, st);
  if (st != GT_RT_HIT) return false;
  gt_err_clear();
  gt_status_t s = gt_rt_run_hit(c->rt, e, ops, c->stream);
  if (s == GT_OK) {
    atomic_fetch_add_explicit(&e->hits, 1, memory_order_relaxed);
    gt_rt_time_end(c->rt, &c->timer, c->stream);
    return true;
  }
  if (atomic_load(&e->state) == GT_RT_FAILED) {
    log_decision(c, e, GT_RT_FAILED);
  } else if (g.log && !atomic_exchange(&e->deferred_logged, 1)) {
    char d[256];
    gt_problem_describe(&e->key, d, sizeof d);
    say("wait %s %s: tuned candidate not run for now: %s", c->entry, d, gt_err_msg());
  }
  return false;
}

static void call_end(shim_call_t *c) {
  if (c->rt) gt_rt_time_end(c->rt, &c->timer, c->stream);
}

/* ---- the interposed entry points ----------------------------------------------------------- */

SHIM_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                        cublasOperation_t transb, int m, int n, int k,
                                        const void *alpha, const void *A, cudaDataType Atype,
                                        int lda, const void *B, cudaDataType Btype, int ldb,
                                        const void *beta, void *C, cudaDataType Ctype, int ldc,
                                        cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  REAL(LIB_CUBLAS, pfn_GemmEx, cublasGemmEx, cublasGemmEx);
  if (!cublasGemmEx_real) return missing_real("cublasGemmEx");
  if (t_depth > 0 || !shim_active())
    return cublasGemmEx_real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
                             beta, C, Ctype, ldc, computeType, algo);
  t_depth++;
  shim_call_t c;
  if (call_begin_handle(&c, "cublasGemmEx", handle)) {
    gt_problem_t key;
    const gt_status_t ks = gt_cublas_key_gemm_ex(&c.env, transa, transb, m, n, k, Atype, lda, Btype,
                                                 ldb, beta, Ctype, ldc, computeType, algo, &key);
    gt_operands_t ops = {.A = A, .B = B, .C = C, .D = C, .alpha = alpha, .beta = beta};
    if (call_try(&c, ks, &key, &ops)) {
      t_depth--;
      return CUBLAS_STATUS_SUCCESS;
    }
  }
  cublasStatus_t r = cublasGemmEx_real(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B,
                                       Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
  call_end(&c);
  t_depth--;
  return r;
}

SHIM_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType Atype, int lda, long long int strideA,
    const void *B, cudaDataType Btype, int ldb, long long int strideB, const void *beta, void *C,
    cudaDataType Ctype, int ldc, long long int strideC, int batchCount,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  REAL(LIB_CUBLAS, pfn_GemmStridedBatchedEx, cublasGemmStridedBatchedEx,
       cublasGemmStridedBatchedEx);
  if (!cublasGemmStridedBatchedEx_real) return missing_real("cublasGemmStridedBatchedEx");
  if (t_depth > 0 || !shim_active())
    return cublasGemmStridedBatchedEx_real(handle, transa, transb, m, n, k, alpha, A, Atype, lda,
                                           strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc,
                                           strideC, batchCount, computeType, algo);
  t_depth++;
  shim_call_t c;
  if (call_begin_handle(&c, "cublasGemmStridedBatchedEx", handle)) {
    gt_problem_t key;
    const gt_status_t ks = gt_cublas_key_gemm_strided_batched_ex(
        &c.env, transa, transb, m, n, k, Atype, lda, strideA, Btype, ldb, strideB, beta, Ctype, ldc,
        strideC, batchCount, computeType, algo, &key);
    gt_operands_t ops = {.A = A, .B = B, .C = C, .D = C, .alpha = alpha, .beta = beta};
    if (call_try(&c, ks, &key, &ops)) {
      t_depth--;
      return CUBLAS_STATUS_SUCCESS;
    }
  }
  cublasStatus_t r = cublasGemmStridedBatchedEx_real(
      handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,
      beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
  call_end(&c);
  t_depth--;
  return r;
}

SHIM_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const float *alpha, const float *A, int lda,
                                          const float *B, int ldb, const float *beta, float *C,
                                          int ldc) {
  REAL(LIB_CUBLAS, pfn_Sgemm, cublasSgemm_v2, cublasSgemm_v2);
  if (!cublasSgemm_v2_real) return missing_real("cublasSgemm_v2");
  if (t_depth > 0 || !shim_active())
    return cublasSgemm_v2_real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C,
                               ldc);
  t_depth++;
  shim_call_t c;
  if (call_begin_handle(&c, "cublasSgemm_v2", handle)) {
    gt_problem_t key;
    const gt_status_t ks =
        gt_cublas_key_sgemm(&c.env, transa, transb, m, n, k, lda, ldb, beta, ldc, &key);
    gt_operands_t ops = {.A = A, .B = B, .C = C, .D = C, .alpha = alpha, .beta = beta};
    if (call_try(&c, ks, &key, &ops)) {
      t_depth--;
      return CUBLAS_STATUS_SUCCESS;
    }
  }
  cublasStatus_t r =
      cublasSgemm_v2_real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  call_end(&c);
  t_depth--;
  return r;
}

SHIM_EXPORT cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                                       cublasOperation_t transb, int m, int n, int k,
                                       const shim_half_t *alpha, const shim_half_t *A, int lda,
                                       const shim_half_t *B, int ldb, const shim_half_t *beta,
                                       shim_half_t *C, int ldc) {
  REAL(LIB_CUBLAS, pfn_Hgemm, cublasHgemm, cublasHgemm);
  if (!cublasHgemm_real) return missing_real("cublasHgemm");
  if (t_depth > 0 || !shim_active())
    return cublasHgemm_real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  t_depth++;
  shim_call_t c;
  if (call_begin_handle(&c, "cublasHgemm", handle)) {
    gt_problem_t key;
    const gt_status_t ks = gt_cublas_key_hgemm(&c.env, transa, transb, m, n, k, lda, ldb,
                                               beta ? &beta->x : NULL, ldc, &key);
    gt_operands_t ops = {.A = A, .B = B, .C = C, .D = C, .alpha = alpha, .beta = beta};
    if (call_try(&c, ks, &key, &ops)) {
      t_depth--;
      return CUBLAS_STATUS_SUCCESS;
    }
  }
  cublasStatus_t r =
      cublasHgemm_real(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  call_end(&c);
  t_depth--;
  return r;
}

/* cuBLASLt descriptor attributes. A core attribute that cannot be read makes the call
 * unsupported; an optional one that the library does not know cannot have been set, so it is at
 * its default. */
static bool lt_get(cublasLtMatmulDesc_t d, int attr, void *buf, size_t size) {
  size_t w = 0;
  return g_api.LtDescGet(d, (cublasLtMatmulDescAttributes_t)attr, buf, size, &w) ==
             CUBLAS_STATUS_SUCCESS &&
         w == size;
}

static void lt_read_desc(cublasLtMatmulDesc_t d, gt_cublaslt_desc_t *o) {
  memset(o, 0, sizeof *o);
  o->bias_data_type = -1;
  o->fill_mode = GT_CUBLAS_FILL_MODE_FULL;
  if (!g_api.LtDescGet) return;
  o->ok = lt_get(d, GT_CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &o->compute_type, 4) &&
          lt_get(d, GT_CUBLASLT_MATMUL_DESC_SCALE_TYPE, &o->scale_type, 4) &&
          lt_get(d, GT_CUBLASLT_MATMUL_DESC_POINTER_MODE, &o->pointer_mode, 4) &&
          lt_get(d, GT_CUBLASLT_MATMUL_DESC_TRANSA, &o->transa, 4) &&
          lt_get(d, GT_CUBLASLT_MATMUL_DESC_TRANSB, &o->transb, 4) &&
          lt_get(d, GT_CUBLASLT_MATMUL_DESC_TRANSC, &o->transc, 4) &&
          lt_get(d, GT_CUBLASLT_MATMUL_DESC_EPILOGUE, &o->epilogue, 4) &&
          lt_get(d, GT_CUBLASLT_MATMUL_DESC_BIAS_POINTER, (void *)&o->bias, sizeof(void *));
  if (!o->ok) return;
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_FILL_MODE, &o->fill_mode, 4);
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &o->bias_data_type, 4);
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &o->bias_batch_stride, 8);
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, (void *)&o->aux, sizeof(void *));
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE,
               &o->alpha_vector_batch_stride, 8);
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &o->sm_count_target, 4);
  static const int ptr_attrs[8] = {
      GT_CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,          GT_CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
      GT_CUBLASLT_MATMUL_DESC_C_SCALE_POINTER,          GT_CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
      GT_CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,           GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER,
      GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, GT_CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER};
  for (int i = 0; i < 8; i++)
    (void)lt_get(d, ptr_attrs[i], (void *)&o->scale_ptr[i], sizeof(void *));
  static const int mode_attrs[6] = {
      GT_CUBLASLT_MATMUL_DESC_A_SCALE_MODE, GT_CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
      GT_CUBLASLT_MATMUL_DESC_C_SCALE_MODE, GT_CUBLASLT_MATMUL_DESC_D_SCALE_MODE,
      GT_CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, GT_CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE};
  for (int i = 0; i < 6; i++) (void)lt_get(d, mode_attrs[i], &o->scale_mode[i], 4);
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_FAST_ACCUM, &o->fast_accum, 1);
  (void)lt_get(d, GT_CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, (void *)&o->emulation_desc,
               sizeof(void *));
}

static bool lt_lget(cublasLtMatrixLayout_t l, int attr, void *buf, size_t size) {
  size_t w = 0;
  return g_api.LtLayoutGet(l, (cublasLtMatrixLayoutAttribute_t)attr, buf, size, &w) ==
             CUBLAS_STATUS_SUCCESS &&
         w == size;
}

static void lt_read_layout(cublasLtMatrixLayout_t l, gt_cublaslt_layout_t *o) {
  memset(o, 0, sizeof *o);
  o->batch_count = 1;
  if (!g_api.LtLayoutGet || !l) return;
  o->ok = lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_TYPE, &o->type, 4) &&
          lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_ORDER, &o->order, 4) &&
          lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_ROWS, &o->rows, 8) &&
          lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_COLS, &o->cols, 8) &&
          lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_LD, &o->ld, 8) &&
          lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &o->batch_count, 4) &&
          lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &o->batch_stride, 8) &&
          lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, &o->plane_offset, 8);
  (void)lt_lget(l, GT_CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &o->batch_mode, 4);
}

SHIM_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle,
                                          cublasLtMatmulDesc_t computeDesc, const void *alpha,
                                          const void *A, cublasLtMatrixLayout_t Adesc,
                                          const void *B, cublasLtMatrixLayout_t Bdesc,
                                          const void *beta, const void *C,
                                          cublasLtMatrixLayout_t Cdesc, void *D,
                                          cublasLtMatrixLayout_t Ddesc,
                                          const cublasLtMatmulAlgo_t *algo, void *workspace,
                                          size_t workspaceSizeInBytes, cudaStream_t stream) {
  REAL(LIB_CUBLASLT, pfn_LtMatmul, cublasLtMatmul, cublasLtMatmul);
  if (!cublasLtMatmul_real) return missing_real("cublasLtMatmul");
  uintptr_t caller = (uintptr_t)__builtin_return_address(0);
  bool from_cublas = false;
  if (t_depth == 0 && shim_active()) {
    const shim_api_t *a = api();
    if (!a->LtDescGet || !a->LtLayoutGet) a = api_refill();
    from_cublas = caller >= a->cublas_lo && caller < a->cublas_hi;
  }
  if (t_depth > 0 || from_cublas || !shim_active())
    return cublasLtMatmul_real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc,
                               D, Ddesc, algo, workspace, workspaceSizeInBytes, stream);
  t_depth++;
  shim_call_t c;
  memset(&c, 0, sizeof c);
  c.timer.slot = -1;
  /* The descriptors first: cuBLASLt itself validates them, and a call it cannot describe goes
   * through before the shim touches anything CUDA (the stream included). */
  gt_cublaslt_desc_t desc;
  gt_cublaslt_layout_t lay[4];
  lt_read_desc(computeDesc, &desc);
  lt_read_layout(Adesc, &lay[0]);
  lt_read_layout(Bdesc, &lay[1]);
  lt_read_layout(Cdesc, &lay[2]);
  lt_read_layout(Ddesc, &lay[3]);
  if (!desc.ok) {
    note_unsupported("cublasLtMatmul", "matmul descriptor unreadable");
  } else if (call_begin(&c, "cublasLtMatmul", stream)) {
    gt_problem_t key;
    /* The caller's algo is its own (heuristic) choice for this key; a tuned row replaces it. */
    const gt_status_t ks = gt_cublas_key_lt_matmul(&c.env, &desc, lay, beta, &key);
    gt_operands_t ops = {.A = A,
                         .B = B,
                         .C = C,
                         .D = D,
                         .bias = desc.bias,
                         .alpha = alpha,
                         .beta = beta,
                         .workspace = workspace,
                         .ws_size = workspace ? workspaceSizeInBytes : 0};
    if (call_try(&c, ks, &key, &ops)) {
      t_depth--;
      return CUBLAS_STATUS_SUCCESS;
    }
  }
  cublasStatus_t r = cublasLtMatmul_real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta,
                                         C, Cdesc, D, Ddesc, algo, workspace,
                                         workspaceSizeInBytes, stream);
  call_end(&c);
  t_depth--;
  return r;
}

/* ---- exit: the counters table and the capture file ----------------------------------------- */

typedef struct collect {
  int device;
  gt_rt_capture_rec_t *recs;
  size_t n, cap;
  uint64_t calls, hits;
} collect_t;

static const char *state_name(int st) {
  switch (st) {
    case GT_RT_HIT: return "hit";
    case GT_RT_MISS: return "miss";
    case GT_RT_FAILED: return "not used";
    default: return "undecided";
  }
}

static void print_entry(void *ctx, gt_rt_entry_t *e) {
  collect_t *cl = ctx;
  uint64_t calls = atomic_load(&e->calls), hits = atomic_load(&e->hits);
  cl->calls += calls;
  cl->hits += hits;
  char d[256];
  gt_problem_describe(&e->key, d, sizeof d);
  int st = atomic_load(&e->state);
  if (st == GT_RT_HIT || (st == GT_RT_FAILED && e->instance[0]))
    say("%6d %10" PRIu64 " %10" PRIu64 "  %-9s %-27s %s -> %s %s", cl->device, calls, hits,
        state_name(st), e->entry_point, d, e->provider, e->instance);
  else
    say("%6d %10" PRIu64 " %10" PRIu64 "  %-9s %-27s %s", cl->device, calls, hits,
        state_name(st), e->entry_point, d);
}

static void collect_entry(void *ctx, gt_rt_entry_t *e) {
  collect_t *cl = ctx;
  uint64_t calls = atomic_load(&e->calls);
  if (calls == 0) return;
  /* Calls that were not measured (under graph capture, or with every event in flight) are
   * credited the key's mean measured time. */
  double t = e->timed_calls ? e->time_us / (double)e->timed_calls * (double)calls
                            : e->first_timed_dropped ? e->first_us * (double)calls : 0.0;
  for (size_t i = 0; i < cl->n; i++)
    if (gt_rt_key_hash(&cl->recs[i].key) == e->hash &&
        gt_problem_equal(&cl->recs[i].key, &e->key)) {
      cl->recs[i].calls += calls;
      cl->recs[i].time_us += t;
      return;
    }
  if (cl->n == cl->cap) {
    size_t cap = cl->cap ? 2 * cl->cap : 64;
    gt_rt_capture_rec_t *nr = realloc(cl->recs, cap * sizeof *nr);
    if (!nr) return;
    cl->recs = nr;
    cl->cap = cap;
  }
  cl->recs[cl->n++] = (gt_rt_capture_rec_t){.key = e->key, .calls = calls, .time_us = t};
}

/* A path from the environment with "%p" replaced by the process id. */
static void expand_path(const char *tmpl, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = tmpl; *p && o + 1 < cap; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      o += (size_t)snprintf(out + o, cap - o, "%ld", (long)getpid());
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o < cap ? o : cap - 1] = '\0';
}

/* Several processes of one workload (ranks, workers) may share an output path: each adds its
 * counts to what is there and replaces the file atomically, holding a lock on the file's
 * directory meanwhile (a lock on the directory leaves no lock file behind). Returns the lock's
 * descriptor, -1 when the directory cannot be locked (the write then goes ahead unlocked). */
static int lock_dir_of(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  int lfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lfd >= 0) (void)flock(lfd, LOCK_EX);
  return lfd;
}

static void unlock_dir(int lfd) {
  if (lfd < 0) return;
  (void)flock(lfd, LOCK_UN);
  close(lfd);
}

static void write_capture(collect_t *cl) {
  char path[4096];
  expand_path(g.capture_path, path, sizeof path);
  int lfd = lock_dir_of(path);
  if (access(path, F_OK) == 0) {
    gt_problem_t defaults;
    gt_problem_init(&defaults);
    gt_shapes_t prev;
    if (gt_shapes_read(path, &defaults, &prev, NULL) == GT_OK) {
      for (size_t i = 0; i < prev.n; i++) {
        gt_rt_entry_t fake;
        memset(&fake, 0, sizeof fake);
        fake.key = prev.v[i].p;
        fake.hash = gt_rt_key_hash(&fake.key);
        atomic_store(&fake.calls, prev.v[i].calls > 0 ? (uint64_t)prev.v[i].calls : 0);
        fake.time_us = prev.v[i].time_us;
        fake.timed_calls = atomic_load(&fake.calls);
        if (fake.timed_calls == 0) continue;
        collect_entry(cl, &fake);
      }
      gt_shapes_free(&prev);
    } else {
      say("capture: %s exists but cannot be read (%s); replacing it", path, gt_err_msg());
    }
  }
  if (gt_rt_capture_write(path, cl->recs, cl->n) != GT_OK)
    say("capture: cannot write %s: %s", path, gt_err_msg());
  else if (g.log)
    say("capture: wrote %zu keys to %s", cl->n, path);
  unlock_dir(lfd);
}

/* ---- GEMMTUNE_STATS ------------------------------------------------------------------------ */

typedef struct stats_collect {
  gt_rt_stats_rec_t *v;
  size_t n, cap;
} stats_collect_t;

static void stats_push(stats_collect_t *sc, const gt_rt_stats_rec_t *r) {
  if (sc->n == sc->cap) {
    size_t cap = sc->cap ? 2 * sc->cap : 64;
    gt_rt_stats_rec_t *nv = realloc(sc->v, cap * sizeof *nv);
    if (!nv) return;
    sc->v = nv;
    sc->cap = cap;
  }
  sc->v[sc->n++] = *r;
}

/* A key never decided was seen only under graph capture, unless hits are off in this process
 * (another cuBLAS), where nothing is decided and every call is passed through. */
static const char *stats_decision(int st) {
  switch (st) {
    case GT_RT_HIT: return "hit";
    case GT_RT_MISS: return "miss";
    case GT_RT_FAILED: return "notused";
    default: return g.hits_allowed ? "deferred" : "pass";
  }
}

static void stats_entry(void *ctx, gt_rt_entry_t *e) {
  uint64_t calls = atomic_load(&e->calls);
  if (calls == 0) return;
  int st = atomic_load(&e->state);
  bool named = (st == GT_RT_HIT || st == GT_RT_FAILED) && e->provider[0];
  gt_rt_stats_rec_t r = {.keyed = true,
                         .key = e->key,
                         .calls = calls,
                         .hits = atomic_load(&e->hits),
                         .decision = stats_decision(st),
                         .provider = named ? e->provider : NULL,
                         .instance = named ? e->instance : NULL,
                         .entry = e->entry_point};
  stats_push(ctx, &r);
}

/* Called with g.mu held (the pass-through reasons). Rows of one entry point's unkeyed calls and of
 * identical keys on several devices are summed by the formatter. */
static void write_stats(stats_collect_t *sc) {
  for (int i = 0; i < g.nreasons; i++) {
    gt_rt_stats_rec_t r = {.calls = g.reasons[i].calls, .decision = "pass",
                           .entry = g.reasons[i].entry};
    stats_push(sc, &r);
  }
  /* Calls whose entry point is not known: reasons beyond the table, keys beyond its capacity. */
  uint64_t other = g.reasons_other + atomic_load(&g.untracked);
  if (other) {
    gt_rt_stats_rec_t r = {.calls = other, .decision = "pass", .entry = "-"};
    stats_push(sc, &r);
  }
  char path[4096];
  expand_path(g.stats_path, path, sizeof path);
  int lfd = lock_dir_of(path);
  if (gt_rt_stats_write(path, sc->v, sc->n) != GT_OK)
    say("stats: cannot write %s: %s", path, gt_err_msg());
  else if (g.log)
    say("stats: wrote %s", path);
  unlock_dir(lfd);
}

static void shim_exit(void) {
  if (atomic_exchange(&g.exit_done, 1)) return;
  /* A child forked after the parent's calls inherits its counters; only the parent reports. */
  if (getpid() != g.pid) return;
  int saved_depth = t_depth;
  t_depth = 1; /* nothing below may re-enter the interposers' logic */
  collect_t cl = {0};
  stats_collect_t sc = {0};
  if (g.log) {
    say("calls and hits per key (%s):", g.db_desc);
    say("%6s %10s %10s  %-9s %-27s %s", "device", "calls", "hits", "decision", "entry point",
        "shape");
  }
  for (int d = 0; d < MAX_DEVICES; d++) {
    gt_rt_t *rt = atomic_load(&g.rt[d]);
    if (!rt) continue;
    cl.device = d;
    if (g.capture) gt_rt_time_flush(rt);
    if (g.log) gt_rt_foreach(rt, print_entry, &cl);
    if (g.capture) gt_rt_foreach(rt, collect_entry, &cl);
    if (g.stats) gt_rt_foreach(rt, stats_entry, &sc);
  }
  pthread_mutex_lock(&g.mu);
  uint64_t passed = 0;
  for (int i = 0; i < g.nreasons; i++) {
    passed += g.reasons[i].calls;
    if (g.log || g.capture)
      say("%10" PRIu64 " %s calls passed through%s: %s", g.reasons[i].calls, g.reasons[i].entry,
          g.capture ? " (not recorded)" : "", g.reasons[i].text);
  }
  passed += g.reasons_other;
  if (g.reasons_other && (g.log || g.capture))
    say("%10" PRIu64 " calls passed through for other reasons", g.reasons_other);
  if (g.stats) write_stats(&sc);
  pthread_mutex_unlock(&g.mu);
  uint64_t untracked = atomic_load(&g.untracked);
  if (g.log) {
    if (untracked) say("%10" PRIu64 " calls of keys beyond the key table's capacity", untracked);
    uint64_t all = cl.calls + passed + untracked;
    say("total: %" PRIu64 " calls, %" PRIu64 " served by tuned candidates (%.1f%%)", all, cl.hits,
        all ? 100.0 * (double)cl.hits / (double)all : 0.0);
  }
  if (g.capture) write_capture(&cl);
  free(cl.recs);
  free(sc.v);
  t_depth = saved_depth;
}
