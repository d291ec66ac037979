/* The runtime's per-device engine, shared by libgemmtune (dispatch API) and the preload shim:
 * a key -> decision cache (which tuned candidate runs for a key, prepared once), the workspaces
 * tuned candidates run with, and the GPU-time measurement of `gemmtune capture`.
 *
 * Hot path (a key already decided): one lock-free hash-table probe, no allocation, no
 * synchronisation, nothing that is illegal under CUDA graph capture. Everything that allocates or
 * may synchronise (provider prepare, workspace allocation, event creation) happens on the slow
 * path with this thread's capture mode set to relaxed, so it cannot invalidate a global-mode
 * capture of this or another thread.
 *
 * Decisions under capture. A key may be first seen while its stream is being captured (serving
 * engines capture one graph per batch size at start-up): it is decided there and then, so the
 * graph records its tuned candidate. What deciding does during a capture:
 *   - the DB lookup, the provider and library checks: host work, always;
 *   - rebuilding and preparing the row's candidate (from_name, prepare): done ahead of time, at
 *     the first decision made outside capture, for every row that applies to this device (the
 *     warm-up), so a key first seen in a later capture finds its candidate ready and nothing is
 *     left to do inside the capture. When no call came outside capture first, the candidate is
 *     prepared during the capture only if its provider says that is safe on this thread now
 *     (gt_provider_t.capture_safe: no device allocation, synchronisation or stream operation);
 *   - otherwise, or when preparing fails during the capture, the key stays undecided and the
 *     call goes to the application's own function: the capture is never touched and its results
 *     never change; a later call outside capture decides the key.
 * No event is recorded and nothing is synchronised on a capturing stream; a workspace for a
 * stream first used under capture is allocated then (cudaMalloc in relaxed mode, as PyTorch's
 * allocator does). */
#ifndef GT_RT_ENGINE_H
#define GT_RT_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gt_db.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"
#include "providers/gt_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_RT_NOT_TUNABLE_MAX 160

typedef enum gt_rt_state {
  GT_RT_NEW = 0, /* not decided yet (also: seen under capture when its candidate could not be
                    prepared there, decided later; and every not-tunable entry) */
  GT_RT_HIT,     /* a tuned row applies and its candidate is prepared */
  GT_RT_MISS,    /* no row for this key: the default path runs */
  GT_RT_FAILED   /* a row exists but cannot run here (provider, library version, prepare or
                    launch failed): the default path runs, why says so */
} gt_rt_state_t;

/* One distinct key seen on one device. Entries live until the engine is closed; their address
 * is stable. */
typedef struct gt_rt_entry {
  gt_problem_t key;
  uint64_t hash;
  _Atomic int state;            /* gt_rt_state_t, published with release ordering */
  const char *entry_point;      /* the first entry point that issued the key ("cublasGemmEx") */
  /* "" for a tunable key. Otherwise why the calls of this key cannot be tuned (a pointer-array
   * batch, FP8 scaling...): part of the entry's identity, so such calls never share an entry with
   * a tunable key that looks the same; the entry is counted and timed, never decided. */
  char not_tunable[GT_RT_NOT_TUNABLE_MAX];
  /* HIT: the tuned candidate */
  const gt_provider_t *prov;
  void *pstate;
  size_t ws_needed;
  char provider[32];
  char instance[GT_NAME_MAX];
  char why[768];                /* hit: the row's numbers; miss: the nearest row; failed: why;
                                   new after a decision under capture: why it is not decided */
  /* default path of the dispatch API (the GemmEx baseline provider's candidate), on demand */
  _Atomic int fb_ready;         /* 0 not yet, 1 ready, -1 failed */
  const gt_provider_t *fb_prov;
  void *fb_state;
  size_t fb_ws;
  char fb_instance[GT_NAME_MAX];
  /* counters: every call, and the calls the tuned candidate served */
  _Atomic uint64_t calls;
  _Atomic uint64_t hits;
  _Atomic uint64_t ws_max;      /* largest workspace a call offered (cublasLtMatmul), bytes */
  _Atomic int logged;           /* decision line printed */
  _Atomic int deferred_logged;  /* "not decided under capture" line printed */
  /* capture mode: GPU time of calls measured with events (under the timing lock). The first
   * measured call of each key is dropped: it carries one-time costs (cuBLAS heuristics, module
   * loading) that the steady-state call does not. */
  double time_us;
  uint64_t timed_calls;
  bool first_timed_dropped;
  double first_us; /* the dropped measurement: used only when no other call was timed */
  /* capture mode, filled at exit by the preload shim (core/gt_graph_runs.h): calls made under
   * CUDA graph capture whose kernel nodes were identified, how often those ran in replays and
   * for how long. captured 0: every call counts once, as an API call. */
  struct {
    uint64_t captured, runs, ns;
  } graph;
  /* capture mode: calls made outside graph capture whose kernels the tracer timed (tagged), and
   * at exit their kernels' time (ns; ok when the tracer's answer was whole). */
  struct {
    _Atomic uint64_t tagged;
    _Atomic int registered;
    uint64_t ns;
    bool ok;
  } eager;
} gt_rt_entry_t;

/* Receives one complete line (no newline, no "gemmtune:" prefix). */
typedef void (*gt_rt_line_fn)(void *ctx, const char *line);

typedef struct gt_rt gt_rt_t;

/* Open the engine for CUDA device `device`, deciding keys against db (borrowed: it must outlive
 * the engine and not change while the engine is open; NULL = no rows). db_desc names where the
 * rows came from, for miss explanations ("GEMMTUNE_DB=a.csv:b.csv"). warn receives the engine's
 * warnings (rows for other devices, failures); may be NULL. Does not change the current device. */
gt_status_t gt_rt_open(int device, const gt_db_t *db, const char *db_desc, gt_rt_line_fn warn,
                       void *warn_ctx, gt_rt_t **out);
/* The same with the identity given (arch "sm_90", sm_count, and the product name and memory in
 * here, which may be NULL or hold an empty name: unknown, refusing nothing). gt_rt_open calls it
 * with what CUDA reports; the CPU tests of the preload shim (GEMMTUNE_TEST_DEVICE) with a stated
 * device the CUDA runtime cannot see, to key, count and decide calls against a DB without a GPU:
 * every CUDA query then fails and is treated as the careful answer (a stream is taken as
 * capturing), so nothing ever runs on it. */
gt_status_t gt_rt_open_as(int device, const char *arch, int sm_count, const gt_db_device_t *here,
                          const gt_db_t *db, const char *db_desc, gt_rt_line_fn warn,
                          void *warn_ctx, gt_rt_t **out);
/* Release prepared candidates, workspaces and events. Not concurrent with any other call on rt. */
void gt_rt_close(gt_rt_t *rt);
/* Forget every decision (prepared candidates are released; workspaces are kept, since captured
 * graphs may use them). Same concurrency rule as close. */
void gt_rt_reset(gt_rt_t *rt);
/* Reset, then decide against db from now on (and report its rows for other devices again). */
void gt_rt_rebind(gt_rt_t *rt, const gt_db_t *db, const char *db_desc);

int gt_rt_device(const gt_rt_t *rt);
const char *gt_rt_arch(const gt_rt_t *rt);
int gt_rt_sm_count(const gt_rt_t *rt);

/* Hash of a key's fields (not its text: this runs on every call). */
uint64_t gt_rt_key_hash(const gt_problem_t *k);
/* The hash of an entry: the key's, with the not-tunable reason mixed in (NULL or "" adds
 * nothing), the value of gt_rt_entry_t.hash. */
uint64_t gt_rt_marked_hash(const gt_problem_t *k, const char *not_tunable);

/* The entry for key k, created on first sight. entry_point is a string literal. NULL when the
 * table is full (the call then passes through untracked). Lock-free when the key exists. */
gt_rt_entry_t *gt_rt_entry(gt_rt_t *rt, const gt_problem_t *k, const char *entry_point);
/* The same for the calls of key k that cannot be tuned, for reason not_tunable (copied; NULL or
 * "" is gt_rt_entry): a separate entry per key and reason, never decided. */
gt_rt_entry_t *gt_rt_entry_marked(gt_rt_t *rt, const gt_problem_t *k, const char *entry_point,
                                  const char *not_tunable);

/* True when stream is being captured into a CUDA graph (or its state cannot be queried, which is
 * treated the same: do nothing that is illegal under capture). */
bool gt_rt_stream_capturing(void *stream);

/* Decide e if it is still NEW: look the key up in the DB, check the provider and the library
 * version the row depends on, take the row's prepared candidate (rebuilt and prepared now when
 * it is not yet). The first decision made outside capture first prepares every row that applies
 * to this device (see the file comment). On a capturing stream the decision is made as well,
 * except that a candidate not prepared yet is prepared only when its provider says that is safe
 * here; when it is not (or it fails), e stays NEW, e->why says why, and a later call outside
 * capture decides it. A not-tunable entry is never decided (stays NEW). Returns the state. */
gt_rt_state_t gt_rt_decide(gt_rt_t *rt, gt_rt_entry_t *e, void *stream);

/* A workspace of at least `need` bytes for running on `stream`: the engine's own, one per stream
 * (per thread for cudaStreamPerThread), never freed while the engine is open (a captured graph may
 * still use it). Allocated on first need, also while the stream is capturing (relaxed mode; the
 * stream itself is not queried). GT_ERR_NOMEM when the allocation fails, GT_ERR_UNSUPPORTED when
 * the table of streams is full. need 0 gives NULL. */
gt_status_t gt_rt_workspace(gt_rt_t *rt, void *stream, size_t need, void **ws);

/* Run the tuned candidate of a HIT entry with ops on stream; fills ops->workspace from the engine
 * unless the caller supplied one that is large enough. On a launch failure the entry becomes
 * FAILED (why says what failed) and the status is returned: the caller runs the default path. */
gt_status_t gt_rt_run_hit(gt_rt_t *rt, gt_rt_entry_t *e, gt_operands_t *ops, void *stream);

/* Dispatch API only: run the default path for e: the baseline candidate of the provider that
 * stands for cublasGemmEx calls (gt_provider_baseline), prepared on the key's first call. A first
 * call on a capturing stream prepares it only when the provider says that is safe on this thread
 * (a cuBLAS handle exists: gt_rt_prime_default); otherwise it fails (GT_ERR_UNSUPPORTED, nothing
 * enqueued, the capture untouched) and a later call prepares it. */
gt_status_t gt_rt_run_default(gt_rt_t *rt, gt_rt_entry_t *e, gt_operands_t *ops, void *stream);
/* Make the default path's per-thread resources (the baseline provider's cuBLAS handle) exist for
 * the calling thread, by preparing and releasing its candidate for a small key, so a first call of
 * a key made by this thread during a capture can be served. Call outside capture (the dispatch
 * API does it in gt_ctx_create). Failures are ignored: the default path then prepares lazily. */
void gt_rt_prime_default(gt_rt_t *rt);
/* The name of the provider e's default path runs: the prepared one, else the one standing for
 * cublasGemmEx calls here; "-" when none is available. */
const char *gt_rt_default_provider(const gt_rt_entry_t *e);

/* Capture mode: measure the GPU time of the default call made between begin and end. A timer
 * that could not start (capturing stream, events exhausted) is inert and end ignores it. */
typedef struct gt_rt_timer {
  int slot; /* -1 = inert */
} gt_rt_timer_t;
void gt_rt_time_begin(gt_rt_t *rt, gt_rt_entry_t *e, void *stream, gt_rt_timer_t *t);
/* The same for one call that computes several keys (a grouped batch): its time is split between
 * es[0..n) in proportion to weight[0..n) (their FLOPs). n 1 is gt_rt_time_begin. */
void gt_rt_time_begin_split(gt_rt_t *rt, gt_rt_entry_t *const *es, const double *weight, int n,
                            void *stream, gt_rt_timer_t *t);
void gt_rt_time_end(gt_rt_t *rt, gt_rt_timer_t *t, void *stream);
/* Wait for outstanding measurements and add them to their entries (exit path). */
void gt_rt_time_flush(gt_rt_t *rt);

/* Iterate entries (under the engine lock): calls fn for each, in first-seen order. */
void gt_rt_foreach(gt_rt_t *rt, void (*fn)(void *ctx, gt_rt_entry_t *e), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
