/* libgemmtune_preload.so: deploys a tuned DB into an unmodified application. This header is the
 * shim's private interface between its files; nothing declared here is exported (preload.map lets
 * only the interposed entry points out, and the declarations are hidden besides).
 *
 * Loaded with LD_PRELOAD, the shim defines every cuBLAS GEMM entry point (cublasGemmEx,
 * cublasGemmStridedBatchedEx, cublasGemmBatchedEx, cublasGemmGroupedBatchedEx, cublasSgemm_v2,
 * cublasHgemm, cublasSgemmStridedBatched, cublasHgemmStridedBatched, the _64 variant of each, and
 * cublasLtMatmul; default visibility, no version node, no link to cuBLAS), so the application's
 * calls arrive here first. Each call's key is built with gt_cublas_key (the same key `tune`
 * writes); on a hit the tuned candidate runs on the caller's stream; on a miss, on anything the
 * key builder does not fully understand, and on any error, the real function is called with the
 * original arguments. Calls that can be keyed but not tuned (pointer-array or grouped batches,
 * FP8 scaling, ...) are recorded under their key with the reason, and always go to the real
 * function. The real functions are found in the copy of cuBLAS the process already loaded
 * (dlopen RTLD_NOLOAD + dlvsym), never in a second copy; an entry point that copy does not have
 * fails its (then impossible) call with one message and leaves the process alone.
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
 *   GEMMTUNE_TEST_DEVICE=sm_90:132  tests only: when no CUDA device is usable, key calls as if
 *                               from a device with that identity (nothing ever runs on it)
 * A variable that looks meant for gemmtune but is none of these (nor another known one,
 * core/gt_envvars.h) is named once, with the nearest known variable, at the first call.
 * Every message goes to stderr prefixed "gemmtune:". Nothing here aborts. src/runtime/README.md
 * documents the formats.
 *
 * The shim never trusts what it is handed: it queries no CUDA object the application passed
 * (streams included) before the call is understood, takes the device from the calling thread
 * (cuBLAS requires the handle's device to be current; cuBLASLt launches into the current
 * context), and under CUDA graph capture makes no call that could invalidate the capture.
 *
 * The files, one job each:
 *   preload_resolve.c  finding the real cuBLAS/cuBLASLt functions and the queries the shim needs
 *   preload_state.c    the process state: configured on the first call, one engine per device
 *   preload_ltdesc.c   reading a cublasLtMatmul call's descriptors into the key builder's terms
 *   preload_call.c     the path every keyed call takes: count, decide, run, log, or fall back
 *   preload_entry.c    the 32-bit cuBLAS entry points whose calls are tunable keys, and
 *                      cublasLtMatmul, over one skeleton (below: enter, try, leave)
 *   preload_entry64.c  their _64 twins
 *   preload_entry_batched.c  pointer-array and grouped batches: recorded, never tuned
 *   preload_graph.c    calls under CUDA graph capture: the nodes each added, counted in replays
 *   preload_report.c   what the shim says: stderr lines, and at exit the counters table and the
 *                      capture and stats files */
#ifndef GT_PRELOAD_INTERNAL_H
#define GT_PRELOAD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/gt_cublas_key.h"
#include "core/gt_db.h"
#include "rt_engine.h"

#define GT_PRELOAD_EXPORT __attribute__((visibility("default")))
#define GT_PRELOAD_MAX_DEVICES 64
#define GT_PRELOAD_MAX_REASONS 64

/* Hidden: calls between the shim's files bind inside the library (no PLT), and nothing of this
 * header can be preempted by, or leak into, the host process. */
#pragma GCC visibility push(hidden)

/* ---- messages (preload_report.c) ----------------------------------------------------------- */

/* One line to stderr, prefixed "gemmtune: ", written with one write() so that lines of several
 * threads or processes do not interleave. Longer lines are cut at 2 KiB. */
void gt_preload_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* gt_preload_say("%s", line), in the shape of a gt_rt_line_fn / gt_rt_warn_fn. */
void gt_preload_say_line(void *ctx, const char *line);

/* ---- the real functions (preload_resolve.c) ------------------------------------------------ */

enum { GT_PRELOAD_LIB_CUBLAS = 0, GT_PRELOAD_LIB_CUBLASLT = 1 };
/* The sonames the shim binds to ("libcublas.so.13", "libcublasLt.so.13"), by GT_PRELOAD_LIB_*;
 * they are also the version node of their symbols. */
extern const char *const gt_preload_lib_names[2];

/* The definition of sym in the already-loaded library lib (versioned first, then unversioned),
 * else the next definition in lookup order (RTLD_NEXT); NULL when there is none or it is self.
 * Never loads a library. */
void *gt_preload_real_symbol(int lib, const char *sym, void *self);
/* True when library lib is loaded in this process (RTLD_NOLOAD: never loads it). */
bool gt_preload_lib_loaded(int lib);
/* '#gemmtune-capture LIB=VERSION path=PATH' lines for the loaded cuBLAS and cuBLASLt, for the
 * capture file; returns the length written (0 when neither is loaded). */
size_t gt_preload_lib_lines(char *buf, size_t cap);
/* Fails an interposed call whose real function cannot be found (another cuBLAS, or one older
 * than the entry point: the application can only have found the symbol through the shim, with
 * dlsym): says so once per process and returns CUBLAS_STATUS_NOT_INITIALIZED. */
cublasStatus_t gt_preload_missing_real(const char *name);

typedef cublasStatus_t (*gt_preload_get_stream_fn)(cublasHandle_t, cudaStream_t *);
typedef cublasStatus_t (*gt_preload_get_pointer_mode_fn)(cublasHandle_t, cublasPointerMode_t *);
typedef cublasStatus_t (*gt_preload_get_math_mode_fn)(cublasHandle_t, cublasMath_t *);
typedef cublasStatus_t (*gt_preload_lt_desc_get_fn)(cublasLtMatmulDesc_t,
                                                    cublasLtMatmulDescAttributes_t, void *, size_t,
                                                    size_t *);
typedef cublasStatus_t (*gt_preload_lt_layout_get_fn)(cublasLtMatrixLayout_t,
                                                      cublasLtMatrixLayoutAttribute_t, void *,
                                                      size_t, size_t *);

/* The handle and descriptor queries the shim needs. A pointer is NULL until the library that
 * defines it is loaded. */
typedef struct gt_preload_api {
  gt_preload_get_stream_fn GetStream;
  gt_preload_get_pointer_mode_fn GetPointerMode;
  gt_preload_get_math_mode_fn GetMathMode;
  gt_preload_lt_desc_get_fn LtDescGet;
  gt_preload_lt_layout_get_fn LtLayoutGet;
  uintptr_t cublas_lo, cublas_hi; /* address range of libcublas's code, 0 when not found */
} gt_preload_api_t;

/* The queries, resolved once per process (pthread_once). A reader that finds a pointer it needs
 * still NULL calls gt_preload_api_refill, which resolves what is missing under a lock (rare: only
 * until the library is loaded; an application may load cuBLASLt first and cuBLAS later). Both
 * return an immutable snapshot of the process-wide table: a refill publishes a new snapshot
 * atomically and never writes one a reader may hold. */
const gt_preload_api_t *gt_preload_api(void);
const gt_preload_api_t *gt_preload_api_refill(void);

/* ---- process state (preload_state.c) ------------------------------------------------------- */

/* One pass-through reason: calls of one entry point that could not be keyed, for one reason. */
typedef struct gt_preload_reason {
  char text[200];
  const char *entry;
  uint64_t calls;
} gt_preload_reason_t;

/* The configuration is written once by the first interposed call (under pthread_once in
 * gt_preload_active) and only read afterwards; mu guards the engines' creation, the reasons and
 * the exit report; the rest is atomic. */
typedef struct gt_preload_state {
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
  _Atomic(gt_rt_t *) rt[GT_PRELOAD_MAX_DEVICES];
  bool rt_failed[GT_PRELOAD_MAX_DEVICES];
  bool exit_registered_late; /* registered after this library's CUDA runtime started */
  _Atomic int exit_done;
  gt_preload_reason_t reasons[GT_PRELOAD_MAX_REASONS];
  int nreasons;
  uint64_t reasons_other;
  _Atomic uint64_t untracked; /* calls of keys past the engine's table capacity */
  _Atomic uint64_t group_extra; /* a grouped call counts once per group: the counts beyond one
                                   per call, so the exit table's total counts API calls */
} gt_preload_state_t;

extern gt_preload_state_t gt_preload;

/* Depth of interposed calls on this thread: a call made while the shim is already inside one
 * (cuBLAS's own cublasLtMatmul, or a provider running a tuned candidate) goes straight through. */
extern _Thread_local int gt_preload_depth;

/* Reads the environment and loads the DBs on the first call of the process (not at library load:
 * processes the application spawns inherit LD_PRELOAD but never call cuBLAS, and stay silent).
 * True when the shim has anything to do; false means: only forward. */
bool gt_preload_active(void);
/* The engine of CUDA device dev, opened on its first call; NULL when dev is out of range or its
 * engine cannot be opened (said once; the device's calls are then passed through). */
gt_rt_t *gt_preload_engine(int dev);
/* Open the engine of device dev over db (preload_call.c): gt_rt_open, or with
 * GEMMTUNE_TEST_DEVICE and no usable CUDA device, gt_rt_open_as with that identity. */
gt_status_t gt_preload_open_engine(int dev, const gt_db_t *db, const char *db_desc,
                                   gt_rt_t **out);

/* ---- a cublasLtMatmul call's descriptors (preload_ltdesc.c) -------------------------------- */

/* Reads the matmul descriptor into *desc and the A, B, C, D layouts into lay[0..3] through the
 * real getters, before anything CUDA is touched. desc->ok false: a core attribute cannot be read
 * (or the getters are not resolved) and the call is not to be keyed; optional attributes that
 * cannot be read keep their defaults. */
void gt_preload_lt_read(cublasLtMatmulDesc_t compute_desc, cublasLtMatrixLayout_t a,
                        cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
                        cublasLtMatrixLayout_t d, gt_cublaslt_desc_t *desc,
                        gt_cublaslt_layout_t lay[4]);

/* ---- one call (preload_call.c) ------------------------------------------------------------- */

/* Dependencies of a capture kept from before a call: more than this and the call's nodes are
 * not told apart (it then counts as one API call). */
#define GT_PRELOAD_GRAPH_DEPS 32

/* A call on a capturing stream (capture mode): the capture's dependency set before it. */
typedef struct gt_preload_graph_mark {
  bool active;   /* the stream was capturing when the call began */
  bool overflow; /* the set was larger than before[] */
  gt_rt_entry_t *e;
  size_t nbefore;
  cudaGraphNode_t before[GT_PRELOAD_GRAPH_DEPS];
} gt_preload_graph_mark_t;

typedef struct gt_preload_call {
  const char *entry; /* the entry point, a string literal ("cublasGemmEx") */
  cudaStream_t stream;
  gt_rt_t *rt;
  gt_cublas_env_t env;
  gt_rt_entry_t *e;
  gt_rt_timer_t timer;
  gt_preload_graph_mark_t graph;
  bool tagged; /* the tracer credits this thread's launches to e (gt_preload_call_tag_begin) */
} gt_preload_call_t;

/* Counts one call of entry that could not be keyed, for reason why (said once per distinct
 * reason with GEMMTUNE_LOG). */
void gt_preload_note_unsupported(const char *entry, const char *why);

/* Starts c for a call on stream: the calling thread's device, its engine, the key environment.
 * False (the call is noted or the device's engine is unavailable): call the real function. c is
 * initialised either way, so gt_preload_call_end may follow. */
bool gt_preload_call_begin(gt_preload_call_t *c, const char *entry, cudaStream_t stream);
/* The same for the cublas<...> entry points: stream, pointer mode and math mode come from the
 * handle (an unreadable handle notes the call and returns false). */
bool gt_preload_call_begin_handle(gt_preload_call_t *c, const char *entry, cublasHandle_t handle);

/* Counts the call, decides its key and runs the tuned candidate on a hit. key_status is what
 * mapping the call to a key returned: anything but GT_OK notes the call as unsupported (with the
 * mapping's message). mark (may be NULL): a key that is not tunable (mark->why set) is counted
 * and timed under its key and reason, never decided. True: the candidate ran, the call is
 * complete. False: call the real function, then gt_preload_call_end. */
bool gt_preload_call_try(gt_preload_call_t *c, gt_status_t key_status, const gt_problem_t *key,
                         const gt_cublas_mark_t *mark, gt_operands_t *ops);
/* Records one call of several not-tunable keys (the groups of a grouped batch: keys[0..n) with
 * their marks), each counted, the call's time split by their FLOPs. The real function runs. */
void gt_preload_call_groups(gt_preload_call_t *c, const gt_problem_t *keys,
                            const gt_cublas_mark_t *marks, int n);
/* Ends the call's GPU-time measurement, if one was started (idempotent). */
void gt_preload_call_end(gt_preload_call_t *c);

/* ---- calls under CUDA graph capture (preload_graph.c) -------------------------------------- */

/* In capture mode, when c's stream is being captured: keep the capture's dependency set, so
 * gt_preload_graph_end can tell the nodes the call adds. Call right before the work is enqueued
 * (the real function or the tuned candidate); e is the entry the call counts under. */
void gt_preload_graph_begin(gt_preload_call_t *c, gt_rt_entry_t *e);
/* After the work was enqueued: the kernel nodes the call added, named by the kernel tracer's
 * node ids, kept for the exit report (a call whose nodes cannot be told is kept as such).
 * Idempotent; nothing when begin found no capture. */
void gt_preload_graph_end(gt_preload_call_t *c);

/* In capture mode, for a call outside stream capture (after gt_preload_graph_begin): tags the
 * thread so the kernel tracer credits the kernels the call launches to e. Nothing without the
 * tracer or under capture. gt_preload_call_end ends it. */
void gt_preload_call_tag_begin(gt_preload_call_t *c, gt_rt_entry_t *e);
/* Ends the tag gt_preload_call_tag_begin set (idempotent). */
void gt_preload_call_tag_end(gt_preload_call_t *c);

/* What the exit report says about the calls made under capture. */
typedef struct gt_preload_graph_summary {
  uint64_t captured;   /* calls made under capture */
  uint64_t identified; /* of them, counted by their replays */
  uint64_t runs;       /* their executions in graph replays */
  bool counted;        /* the tracer counted replays (identified calls are replaced by them) */
  char why[320];       /* why not, or why some calls were not identified; "" when all were */
  /* calls made outside capture: their kernels timed by the tracer (tagged of them), or not */
  uint64_t eager_tagged;
  bool eager_traced;
  char eager_why[320];
} gt_preload_graph_summary_t;

/* At exit, before the capture rows are collected: asks the tracer how often the kept calls'
 * nodes ran and fills each entry's graph counters (rt_engine.h) when it could say. */
void gt_preload_graph_fold(gt_preload_graph_summary_t *out);
/* At exit, after gt_preload_graph_fold: asks the tracer for the kernel time of the tagged calls
 * of each entry (the entries' eager counters) and says in out whether it could. */
void gt_preload_calls_fold(gt_preload_graph_summary_t *out);
/* The capture file's '#gemmtune-replays ...' and '#gemmtune-eager ...' lines for s (with their
 * newlines) into buf; returns their length, 0 when they do not fit. */
size_t gt_preload_graph_line(const gt_preload_graph_summary_t *s, char *buf, size_t cap);

/* ---- the entry-point skeleton (preload_entry*.c) --------------------------------------------
 * Every interposed entry point does the same, written once here:
 *
 *   GT_PRELOAD_REAL  find the real function (once), or fail the call when there is none
 *   enter            take the call on, or leave it to the real function untouched (already inside
 *                    an interposed call on this thread, nothing to do, a call cuBLAS makes itself)
 *   key, try         build the call's key, then gt_preload_call_try: count, decide, run on a hit
 *   leave            after the tuned candidate ran, or after the real function did: end the
 *                    timing, lower the depth, return the status
 *
 * so an entry point is its signature, its key builder and its one call of the real function. */

/* Declares `real`, the real `name` of library lib, resolved on the first call and kept (release
 * and acquire: another thread either resolves it again or sees the whole pointer). Without it the
 * call fails (there is nothing to fall back on). */
#define GT_PRELOAD_REAL(lib, type, name)                                    \
  static _Atomic(type) resolved;                                            \
  type real = atomic_load_explicit(&resolved, memory_order_acquire);        \
  if (!real) {                                                              \
    real = (type)gt_preload_real_symbol(lib, #name, (void *)(name));        \
    atomic_store_explicit(&resolved, real, memory_order_release);           \
  }                                                                         \
  if (!real) return gt_preload_missing_real(#name)

typedef struct shim_half { unsigned short x; } shim_half_t; /* __half is C++ only */

/* One interposed call as its entry point sees it. entered: the shim took the call on and raised
 * this thread's depth (leave lowers it); call is valid only then. */
typedef struct gt_preload_frame {
  bool entered;
  gt_preload_call_t call;
} gt_preload_frame_t;

/* True when the call is to be keyed: the shim took it on (entered) and the handle's stream and
 * modes were read. sizes_64: a _64 entry point. False: call the real function, then leave. */
static inline bool gt_preload_enter_handle(gt_preload_frame_t *f, const char *entry,
                                           cublasHandle_t handle, bool sizes_64) {
  f->entered = false;
  if (gt_preload_depth > 0 || !gt_preload_active()) return false;
  gt_preload_depth++;
  f->entered = true;
  if (!gt_preload_call_begin_handle(&f->call, entry, handle)) return false;
  f->call.env.sizes_64 = sizes_64;
  return true;
}

/* gt_preload_call_try with the operands of a cublas<...> call: D is C, no bias, no workspace. */
static inline bool gt_preload_try_blas(gt_preload_frame_t *f, gt_status_t key_status,
                                       const gt_problem_t *key, const gt_cublas_mark_t *mark,
                                       const void *A, const void *B, void *C, const void *alpha,
                                       const void *beta) {
  gt_operands_t ops = {.A = A, .B = B, .C = C, .D = C, .alpha = alpha, .beta = beta};
  return gt_preload_call_try(&f->call, key_status, key, mark, &ops);
}

/* Ends the call (status is the tuned candidate's CUBLAS_STATUS_SUCCESS or the real function's). */
static inline cublasStatus_t gt_preload_leave(gt_preload_frame_t *f, cublasStatus_t status) {
  if (f->entered) {
    gt_preload_call_end(&f->call);
    gt_preload_depth--;
  }
  return status;
}

/* ---- exit report (preload_report.c) -------------------------------------------------------- */

/* The report of a process: the counters table (GEMMTUNE_LOG), the capture file, the stats file.
 * Registered with atexit; runs once, only in the process that made the calls (not in a child
 * forked after them). */
void gt_preload_exit(void);

#pragma GCC visibility pop

#endif
