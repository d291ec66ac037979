/* libgemmtune_trace.so: records every GPU kernel a process runs, for `gemmtune verify`.
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH, which calls InitializeInjection()
 * during cuInit. With GEMMTUNE_TRACE=path set (%p becomes the process id) it enables CUPTI
 * activity records of kind CONCURRENT_KERNEL (they include each kernel node of every CUDA-graph
 * replay, which no host-side hook can see), aggregates them per kernel name as buffers complete,
 * and at exit flushes CUPTI and writes the trace file (gt_trace_file.h). Without GEMMTUNE_TRACE it
 * does nothing.
 *
 * It runs inside someone else's process, so it never aborts and never fails the application:
 * when libcupti cannot be loaded, when another tool already holds CUPTI (Nsight Systems, Nsight
 * Compute, a profiler in the application) or when any CUPTI call fails, it writes a trace with
 * status=unverified and the reason, and leaves the process alone. It writes status=incomplete
 * when it starts and replaces that at exit, so a process that dies without exit handlers leaves
 * a file that says so instead of an empty success.
 *
 * libcupti is opened with dlopen, never linked: a process that already loaded one (PyTorch does)
 * must keep a single copy, and a machine without one must still get a trace file that says so.
 * The search order is the copy already loaded (RTLD_NOLOAD), the normal library search (which
 * includes this library's RUNPATH into the toolkit), the toolkit path it was built against, and
 * GEMMTUNE_CUPTI_LIB first when set.
 *
 * The subscriber slot is held for the life of the process: CUPTI allows one, and a tool that
 * starts later and takes over the activity buffers would silently empty the trace. Such a tool
 * gets CUPTI's own "multiple subscribers" error instead. Without GEMMTUNE_TRACE_CALLS the one
 * callback enabled is a resource callback for graph node clones (once per node at graph
 * instantiation, nothing per launch): with
 * it and the graph node id of each kernel record, the tracer counts how often the kernels each
 * captured node stands for ran in replays, which the preload shim asks for at exit
 * (gemmtune_trace_graph_node_ids, gemmtune_trace_graph_runs; core/gt_graph_runs.h) so that
 * `gemmtune capture` counts a graph-captured GEMM once per replay instead of once per API call.
 *
 * Calls' own kernel time, for `gemmtune capture` (GEMMTUNE_TRACE_CALLS=1): the shim tags the
 * calling thread with a key around each GEMM call it makes outside graph capture
 * (gemmtune_trace_call_tag); API callbacks of the runtime and driver domains note the
 * correlation id of every API call made while the thread is tagged, and the kernel record with
 * that id credits its duration to the tag. At exit the shim asks for each key's kernel time
 * (gemmtune_trace_call_times), which is what the key's calls ran on the GPU, without the launch
 * gaps an event pair around an eager call also measures. A tagged launch whose kernel record
 * never came (or came after 2^21 later launches had reused its slot) makes the answer a refusal,
 * and the shim keeps its event times. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cupti.h>

#include "core/gt_fileio.h"
#include "core/gt_graph_runs.h"
#include "verify/gt_trace_file.h"

#define TRACE_EXPORT __attribute__((visibility("default")))
#define BUF_SIZE (8u << 20)
#define BUF_ALIGN 8

#ifndef GT_TRACE_CUPTI_SONAME
#define GT_TRACE_CUPTI_SONAME "libcupti.so.13"
#endif
#ifndef GT_TRACE_CUPTI_PATH
#define GT_TRACE_CUPTI_PATH ""
#endif

typedef CUptiResult (*pfn_GetResultString)(CUptiResult, const char **);
typedef CUptiResult (*pfn_Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
typedef CUptiResult (*pfn_Subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                        CUpti_SubscriberParams *);
typedef CUptiResult (*pfn_RegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                             CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*pfn_ActivityEnable)(CUpti_ActivityKind);
typedef CUptiResult (*pfn_GetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*pfn_FlushAll)(uint32_t);
typedef CUptiResult (*pfn_GetNumDropped)(CUcontext, uint32_t, size_t *);
typedef CUptiResult (*pfn_EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                          CUpti_CallbackId);
typedef CUptiResult (*pfn_GetGraphNodeId)(CUgraphNode, uint64_t *);
typedef CUptiResult (*pfn_EnableDomain)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain);

/* Launches noted while a thread is tagged: slot corr % CALL_SLOTS. */
#define CALL_SLOTS (1u << 21)
typedef struct call_slot {
  uint32_t corr;   /* the API call's correlation id */
  uint32_t twin;   /* a driver launch made inside this runtime launch (or the reverse), 0 if none */
  uint32_t tag;    /* index + 1 into g.tags; 0: free or consumed */
  uint32_t launch; /* a kernel launch function: its kernel record must come */
} call_slot_t;
#define CALL_TAGS_MAX 4096
typedef struct call_tag {
  uint64_t tag, ns, kernels;
} call_tag_t;

static struct {
  pfn_GetResultString GetResultString;
  pfn_Subscribe Subscribe;
  pfn_Subscribe_v2 Subscribe_v2;
  pfn_RegisterCallbacks RegisterCallbacks;
  pfn_ActivityEnable ActivityEnable;
  pfn_GetNextRecord GetNextRecord;
  pfn_FlushAll FlushAll;
  pfn_GetNumDropped GetNumDropped;
  pfn_EnableCallback EnableCallback;
  pfn_GetGraphNodeId GetGraphNodeId;
  pfn_EnableDomain EnableDomain;
} g_cupti;

static struct {
  bool started;          /* InitializeInjection ran with GEMMTUNE_TRACE set */
  bool enabled;          /* CUPTI is delivering kernel records */
  char path_tpl[4096];   /* GEMMTUNE_TRACE as given */
  pid_t pid;             /* process that started the trace */
  pthread_mutex_t mu;    /* trace */
  gt_trace_t trace;
  int exit_done;
  /* Graph replays (the shim's capture asks, gemmtune_trace_graph_*): runs per executed node and
   * the clone each executable graph's node is of, under mu. graphs: the clone callback is on, so
   * the node ids of kernel records can be traced back to the captured nodes. */
  bool graphs;
  char graphs_why[GT_TRACE_REASON_MAX];
  gt_graph_runs_t nodes;
  bool nodes_nomem;
  /* Calls' kernel time (gemmtune_trace_call_*), under mu. calls: launch callbacks are on. */
  bool calls;
  char calls_why[GT_TRACE_REASON_MAX];
  call_slot_t *slots;
  call_tag_t tags[CALL_TAGS_MAX];
  uint32_t ntags;
  uint64_t calls_lost; /* tagged launches whose slot was reused before their kernel came */
  bool tags_full;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The calling thread's tag (gemmtune_trace_call_tag), and the runtime launch it is inside. */
static _Thread_local uint64_t t_tag;
static _Thread_local uint32_t t_rt_corr;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  char line[1024];
  int n = snprintf(line, sizeof line, "gemmtune-trace: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(2, line, (size_t)n);
  (void)w;
}

static const char *cupti_err(CUptiResult r) {
  const char *s = NULL;
  if (g_cupti.GetResultString && g_cupti.GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  static _Thread_local char b[32];
  snprintf(b, sizeof b, "CUptiResult %d", (int)r);
  return b;
}

/* ---- the file -------------------------------------------------------------------------------- */

/* The trace's path: GEMMTUNE_TRACE with "%p" replaced by the process id. False when it does not
 * fit (a cut path would name another file). */
static bool trace_path(char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = g.path_tpl; *p; p++) {
    char pid[24];
    const char *piece = p;
    size_t pl = 1;
    if (p[0] == '%' && p[1] == 'p') {
      snprintf(pid, sizeof pid, "%ld", (long)getpid());
      piece = pid, pl = strlen(pid);
      p++;
    }
    if (o + pl >= cap) return false;
    memcpy(out + o, piece, pl);
    o += pl;
  }
  out[o] = '\0';
  return true;
}

/* Write the trace with the atomic writer (core/gt_fileio.h): a temp file created exclusively
 * next to the target (never through a planted link), renamed over it, so a reader never sees
 * half a file; a symlink or a non-file at the target is refused. Called with g.mu held. */
static void write_trace_locked(void) {
  char path[4096];
  if (!trace_path(path, sizeof path)) {
    note("GEMMTUNE_TRACE is longer than %zu characters; no trace written", sizeof path - 1);
    return;
  }
  g.trace.pid = (long)getpid();
  size_t len = 0;
  char *text = gt_trace_format(&g.trace, &len);
  if (!text) {
    note("out of memory formatting the trace; %s not written", path);
    return;
  }
  if (gt_file_write_atomic(path, text, len) != GT_OK) note("cannot write the trace: %s", gt_err_msg());
  free(text);
}

static void set_unverified(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_unverified(const char *fmt, ...) {
  char reason[GT_TRACE_REASON_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&g.mu);
  gt_trace_set_state(&g.trace, GT_TRACE_UNVERIFIED, "%s", reason);
  write_trace_locked();
  pthread_mutex_unlock(&g.mu);
  note("kernel trace unavailable: %s", reason);
}

/* ---- calls' kernel time -------------------------------------------------------------------- */

/* A kernel record of correlation corr ran ns: credit its launch's tag, if a tagged launch made
 * it, and free the launch's slot (and its twin's). Called with g.mu held. */
static void credit_call(uint32_t corr, uint64_t ns) {
  call_slot_t *s = &g.slots[corr % CALL_SLOTS];
  if (s->corr != corr || s->tag == 0) return;
  call_tag_t *t = &g.tags[s->tag - 1];
  t->ns += ns;
  t->kernels++;
  s->tag = 0;
  if (s->twin) {
    call_slot_t *w = &g.slots[s->twin % CALL_SLOTS];
    if (w->corr == s->twin) w->tag = 0;
  }
}

/* The index + 1 of tag in g.tags, added if new; 0 when the table is full. g.mu held. */
static uint32_t tag_index(uint64_t tag) {
  for (uint32_t i = 0; i < g.ntags; i++)
    if (g.tags[i].tag == tag) return i + 1;
  if (g.ntags == CALL_TAGS_MAX) {
    g.tags_full = true;
    return 0;
  }
  g.tags[g.ntags] = (call_tag_t){.tag = tag};
  return ++g.ntags;
}

/* An API function was entered on a tagged thread: note its correlation id (a kernel record that
 * names it is the call's, whichever function launched it). launch: one of the kernel launch
 * functions, whose kernel record must come. twin: the runtime launch this driver launch is made
 * inside (0 otherwise), so that whichever of the two the kernel record names frees both. */
static void note_call(uint32_t corr, bool launch, uint32_t twin) {
  pthread_mutex_lock(&g.mu);
  call_slot_t *s = &g.slots[corr % CALL_SLOTS];
  if (s->tag && s->corr == corr) {
    /* The same call again: a driver function the runtime calls inside one of its own shares its
     * correlation id (cudaLaunchKernelExC -> cuLaunchKernelEx, as cuBLASLt's splitKreduce_kernel
     * is launched); the kernel record names that one id. */
    s->launch |= launch;
    pthread_mutex_unlock(&g.mu);
    return;
  }
  if (s->tag && s->launch) g.calls_lost++; /* an earlier tagged launch never saw its kernel */
  uint32_t ti = tag_index(t_tag);
  *s = (call_slot_t){.corr = corr, .twin = twin, .tag = ti, .launch = launch};
  if (twin && ti) {
    call_slot_t *w = &g.slots[twin % CALL_SLOTS];
    if (w->corr == twin) w->twin = corr;
  }
  pthread_mutex_unlock(&g.mu);
}

static bool is_runtime_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      return true;
    default:
      return false;
  }
}

static bool is_driver_launch(CUpti_CallbackId id) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      return true;
    default:
      return false;
  }
}

static const CUpti_CallbackId k_runtime_launch[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
static const CUpti_CallbackId k_driver_launch[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz};

/* The API callbacks of a tagged thread: every entry notes its id; a runtime launch's entry also
 * marks the thread as inside it (a driver launch it makes is its twin), its exit clears that.
 * Untagged threads return at once. */
static void on_api(CUpti_CallbackDomain d, CUpti_CallbackId id, const CUpti_CallbackData *cb) {
  if (!t_tag || !cb) return;
  bool rt = d == CUPTI_CB_DOMAIN_RUNTIME_API && is_runtime_launch(id);
  bool drv = d == CUPTI_CB_DOMAIN_DRIVER_API && is_driver_launch(id);
  if (cb->callbackSite == CUPTI_API_EXIT) {
    if (rt) t_rt_corr = 0;
    return;
  }
  note_call(cb->correlationId, rt || drv, drv ? t_rt_corr : 0);
  if (rt) t_rt_corr = cb->correlationId;
}

/* ---- CUPTI buffers ------------------------------------------------------------------------- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  void *p = NULL;
  if (posix_memalign(&p, BUF_ALIGN, BUF_SIZE) != 0) p = NULL;
  *buffer = p;
  *size = p ? BUF_SIZE : 0; /* CUPTI drops records (and counts them) when given no buffer */
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)size;
  if (!buffer) return;
  pthread_mutex_lock(&g.mu);
  CUpti_Activity *rec = NULL;
  bool nomem = false;
  while (valid && g_cupti.GetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    /* The fields read here sit at the same offsets in every kernel record version since 7. */
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    if (gt_trace_add(&g.trace, k->name, k->start, k->end, k->streamId, k->graphId != 0) != GT_OK)
      nomem = true;
    if (k->graphNodeId && g.graphs &&
        gt_graph_runs_add_run(&g.nodes, k->graphNodeId, k->end > k->start ? k->end - k->start : 0)
            != GT_OK)
      g.nodes_nomem = true;
    if (g.calls && k->graphId == 0)
      credit_call(k->correlationId, k->end > k->start ? k->end - k->start : 0);
  }
  size_t dropped = 0;
  if (g_cupti.GetNumDropped && g_cupti.GetNumDropped(ctx, stream, &dropped) == CUPTI_SUCCESS)
    g.trace.dropped += dropped;
  if (nomem) g.trace.dropped++;
  pthread_mutex_unlock(&g.mu);
  free(buffer);
}

static void trace_exit(void) {
  if (__atomic_exchange_n(&g.exit_done, 1, __ATOMIC_SEQ_CST)) return;
  /* A child forked without exec inherits this handler; only the process that traced writes. */
  if (getpid() != g.pid) return;
  if (g.enabled && g_cupti.FlushAll) {
    CUptiResult r = g_cupti.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS) {
      set_unverified("cuptiActivityFlushAll at exit: %s (kernel records may be missing)",
                     cupti_err(r));
      return;
    }
  }
  pthread_mutex_lock(&g.mu);
  if (g.trace.state == GT_TRACE_INCOMPLETE) gt_trace_set_state(&g.trace, GT_TRACE_OK, "%s", "");
  write_trace_locked();
  pthread_mutex_unlock(&g.mu);
}

/* The subscription's callback: API calls (calls' kernel time, on_api), and the resource callback
 * for a graph node being cloned (cuGraphInstantiate clones every node of the graph it
 * instantiates): which node of the captured graph each node of an executable graph stands for,
 * so a replay's kernel record (which names the executable graph's node) counts for the call that
 * captured the original. */
static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                 const void *data) {
  (void)ud;
  if (d == CUPTI_CB_DOMAIN_RUNTIME_API || d == CUPTI_CB_DOMAIN_DRIVER_API) {
    on_api(d, id, data);
    return;
  }
  if (d != CUPTI_CB_DOMAIN_RESOURCE || id != CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED || !data) return;
  const CUpti_ResourceData *rd = data;
  const CUpti_GraphData *gd = rd->resourceDescriptor;
  uint64_t clone = 0, orig = 0;
  if (!gd || !gd->node || !gd->originalNode ||
      g_cupti.GetGraphNodeId(gd->node, &clone) != CUPTI_SUCCESS ||
      g_cupti.GetGraphNodeId(gd->originalNode, &orig) != CUPTI_SUCCESS)
    return;
  pthread_mutex_lock(&g.mu);
  if (gt_graph_runs_add_clone(&g.nodes, clone, orig) != GT_OK) g.nodes_nomem = true;
  pthread_mutex_unlock(&g.mu);
}

/* ---- graph replays, asked by the preload shim in the same process -------------------------- */

/* The CUPTI ids of graph nodes nodes[0..n) (CUgraphNode handles of a graph being captured) into
 * ids. Returns 0, or -1 when graph replays are not being counted (ids untouched). Called by the
 * preload shim right after a captured call, from the capturing thread: only CUPTI's id lookup,
 * nothing that touches the stream. */
TRACE_EXPORT int gemmtune_trace_graph_node_ids(void *const *nodes, int n, uint64_t *ids) {
  if (!g.graphs || n < 0 || (n && (!nodes || !ids))) return -1;
  for (int i = 0; i < n; i++)
    if (g_cupti.GetGraphNodeId((CUgraphNode)nodes[i], &ids[i]) != CUPTI_SUCCESS) return -1;
  return 0;
}

/* Flushes CUPTI's buffers and takes g.mu (the caller releases it). False, with why[0..cap) when
 * why is given, when the kernel records are not whole: the flush failed, tracing failed, or CUPTI
 * dropped records. */
static bool flush_and_lock(char *why, size_t cap) {
  CUptiResult r = g_cupti.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&g.mu);
  const char *bad = r != CUPTI_SUCCESS ? "cuptiActivityFlushAll"
                    : g.trace.state == GT_TRACE_UNVERIFIED ? g.trace.reason
                    : g.trace.dropped ? "CUPTI dropped kernel records" : NULL;
  if (bad && why) {
    if (r != CUPTI_SUCCESS) snprintf(why, cap, "%s: %s", bad, cupti_err(r));
    else snprintf(why, cap, "%s", bad);
  }
  return bad == NULL;
}

/* For captured node ids[0..n): how many times every clone of each ran in graph replays and for
 * how many nanoseconds (gt_graph_runs_resolve), after flushing CUPTI's buffers. Returns 0, or -1
 * with why[0..cap) saying why replays cannot be counted (tracing off or failed, records dropped,
 * out of memory). Called by the shim at exit; safe before or after this tracer's own exit. */
TRACE_EXPORT int gemmtune_trace_graph_runs(const uint64_t *ids, int n, uint64_t *runs,
                                           uint64_t *ns, char *why, size_t cap) {
  if (why && cap) why[0] = '\0';
  if (!g.graphs) {
    if (why) snprintf(why, cap, "%s", g.graphs_why[0] ? g.graphs_why : "the tracer is not tracing");
    return -1;
  }
  if (n < 0 || (n && (!ids || !runs || !ns))) return -1;
  int rc = 0;
  if (!flush_and_lock(why, cap)) {
    rc = -1;
  } else if (g.nodes_nomem) {
    if (why) snprintf(why, cap, "out of memory counting graph nodes");
    rc = -1;
  } else if (gt_graph_runs_resolve(&g.nodes, ids, (size_t)n, runs, ns) != GT_OK) {
    if (why) snprintf(why, cap, "out of memory resolving graph nodes");
    rc = -1;
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* ---- calls' kernel time, asked by the preload shim in the same process ---------------------- */

/* Tags the calling thread: kernels launched until the next call (tag 0 ends it) are credited to
 * tag. Returns 0, or -1 when calls are not being timed (nothing is noted). Called by the shim
 * around each GEMM call it makes outside stream capture: a thread-local store. */
TRACE_EXPORT int gemmtune_trace_call_tag(uint64_t tag) {
  if (!g.calls) return -1;
  t_tag = tag;
  if (!tag) t_rt_corr = 0;
  return 0;
}

/* For tags[0..n): the kernel time (ns) and kernel count credited to each, after flushing CUPTI's
 * buffers. Returns 0, or -1 with why[0..cap) when the answer would not be whole (calls not timed,
 * records dropped, a tagged launch whose kernel never came, too many tags). Called by the shim at
 * exit. */
TRACE_EXPORT int gemmtune_trace_call_times(const uint64_t *tags, int n, uint64_t *ns,
                                           uint64_t *kernels, char *why, size_t cap) {
  if (why && cap) why[0] = '\0';
  if (!g.calls) {
    if (why) snprintf(why, cap, "%s", g.calls_why[0] ? g.calls_why : "calls are not being timed");
    return -1;
  }
  if (n < 0 || (n && (!tags || !ns || !kernels))) return -1;
  int rc = 0;
  bool whole = flush_and_lock(why, cap);
  uint64_t pending = 0;
  for (uint32_t i = 0; i < CALL_SLOTS; i++)
    if (g.slots[i].tag && g.slots[i].launch &&
        !(g.slots[i].twin && g.slots[i].twin < g.slots[i].corr))
      pending++;
  if (!whole) {
    rc = -1;
  } else if (g.tags_full) {
    if (why) snprintf(why, cap, "more than %d keys", CALL_TAGS_MAX);
    rc = -1;
  } else if (g.calls_lost || pending) {
    if (why)
      snprintf(why, cap, "kernel launches of GEMM calls without a kernel record: %llu",
               (unsigned long long)(g.calls_lost + pending));
    rc = -1;
  } else {
    for (int i = 0; i < n; i++) {
      ns[i] = kernels[i] = 0;
      for (uint32_t j = 0; j < g.ntags; j++)
        if (g.tags[j].tag == tags[i]) ns[i] = g.tags[j].ns, kernels[i] = g.tags[j].kernels;
    }
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* ---- loading CUPTI ------------------------------------------------------------------------- */

static void *open_cupti(char *why, size_t cap) {
  const char *env = getenv("GEMMTUNE_CUPTI_LIB");
  void *h = NULL;
  if (env && *env) {
    h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      snprintf(why, cap, "GEMMTUNE_CUPTI_LIB=%s cannot be loaded: %s", env, dlerror());
      return NULL;
    }
    return h;
  }
  h = dlopen(GT_TRACE_CUPTI_SONAME, RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen(GT_TRACE_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  const char *e = dlerror();
  snprintf(why, cap, "%s cannot be loaded (%s)", GT_TRACE_CUPTI_SONAME, e ? e : "not found");
  /* Where toolkits put it: the one this library was built against, then the usual places. */
  const char *home = getenv("CUDA_HOME");
  static const char *const sub[] = {"lib64", "lib", "extras/CUPTI/lib64",
                                    "targets/x86_64-linux/lib"};
  char path[1024];
  if (GT_TRACE_CUPTI_PATH[0] && (h = dlopen(GT_TRACE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL))) return h;
  for (int root = 0; root < 2; root++) {
    const char *r = root == 0 ? home : "/usr/local/cuda";
    if (!r || !*r) continue;
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
      snprintf(path, sizeof path, "%s/%s/%s", r, sub[i], GT_TRACE_CUPTI_SONAME);
      if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) return h;
    }
  }
  size_t l = strlen(why);
  snprintf(why + l, cap - l, ", nor in the toolkit (%s, CUDA_HOME, /usr/local/cuda); set "
           "GEMMTUNE_CUPTI_LIB", GT_TRACE_CUPTI_PATH[0] ? GT_TRACE_CUPTI_PATH : "not found at build");
  return NULL;
}

#define SYM(h, field, name, required)                                              \
  do {                                                                            \
    *(void **)&g_cupti.field = dlsym(h, name);                                    \
    if (!g_cupti.field && (required)) {                                           \
      set_unverified("%s has no %s (CUPTI too old?)", GT_TRACE_CUPTI_SONAME, name); \
      return;                                                                     \
    }                                                                             \
  } while (0)

/* Graph replays can be counted per captured node when CUPTI reports node clones and node ids;
 * otherwise the kernel trace itself is unaffected and the shim's capture says why replays were
 * not counted. */
static void enable_graph_counting(CUpti_SubscriberHandle sub) {
  if (!g_cupti.EnableCallback || !g_cupti.GetGraphNodeId) {
    snprintf(g.graphs_why, sizeof g.graphs_why,
             "%s has no cuptiEnableCallback or cuptiGetGraphNodeId", GT_TRACE_CUPTI_SONAME);
    return;
  }
  CUptiResult r = g_cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE,
                                         CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  if (r != CUPTI_SUCCESS) {
    snprintf(g.graphs_why, sizeof g.graphs_why,
             "cuptiEnableCallback(GRAPHNODE_CLONED): %s", cupti_err(r));
    return;
  }
  g.graphs = true;
}

/* Calls' kernel time (GEMMTUNE_TRACE_CALLS=1, set by `gemmtune capture`): the launch callbacks
 * of both API domains, and the slot table. Any failure leaves calls untimed with the reason (the
 * shim keeps its event times). */
static void enable_call_timing(CUpti_SubscriberHandle sub) {
  const char *on = getenv("GEMMTUNE_TRACE_CALLS");
  if (!on || strcmp(on, "1") != 0) {
    snprintf(g.calls_why, sizeof g.calls_why, "GEMMTUNE_TRACE_CALLS is not 1");
    return;
  }
  if (!g_cupti.EnableCallback) {
    snprintf(g.calls_why, sizeof g.calls_why, "%s has no cuptiEnableCallback", GT_TRACE_CUPTI_SONAME);
    return;
  }
  g.slots = calloc(CALL_SLOTS, sizeof *g.slots);
  if (!g.slots) {
    snprintf(g.calls_why, sizeof g.calls_why, "out of host memory for the launch table");
    return;
  }
  /* Every API function of both domains: a kernel is the call's whichever function launched it
   * (the launch functions are also enabled one by one where whole domains cannot be). */
  if (g_cupti.EnableDomain &&
      g_cupti.EnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
      g_cupti.EnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS) {
    g.calls = true;
    return;
  }
  for (size_t i = 0; i < sizeof k_runtime_launch / sizeof k_runtime_launch[0]; i++) {
    CUptiResult r = g_cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, k_runtime_launch[i]);
    if (r != CUPTI_SUCCESS) {
      snprintf(g.calls_why, sizeof g.calls_why, "cuptiEnableCallback(runtime launch %u): %s",
               (unsigned)k_runtime_launch[i], cupti_err(r));
      return;
    }
  }
  for (size_t i = 0; i < sizeof k_driver_launch / sizeof k_driver_launch[0]; i++) {
    CUptiResult r = g_cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, k_driver_launch[i]);
    if (r != CUPTI_SUCCESS) {
      snprintf(g.calls_why, sizeof g.calls_why, "cuptiEnableCallback(driver launch %u): %s",
               (unsigned)k_driver_launch[i], cupti_err(r));
      return;
    }
  }
  g.calls = true;
}

static void start_tracing(void) {
  char why[GT_TRACE_REASON_MAX] = "";
  void *h = open_cupti(why, sizeof why);
  if (!h) {
    set_unverified("%s", why);
    return;
  }
  SYM(h, GetResultString, "cuptiGetResultString", false);
  SYM(h, Subscribe, "cuptiSubscribe", true);
  SYM(h, Subscribe_v2, "cuptiSubscribe_v2", false);
  SYM(h, RegisterCallbacks, "cuptiActivityRegisterCallbacks", true);
  SYM(h, ActivityEnable, "cuptiActivityEnable", true);
  SYM(h, GetNextRecord, "cuptiActivityGetNextRecord", true);
  SYM(h, FlushAll, "cuptiActivityFlushAll", true);
  SYM(h, GetNumDropped, "cuptiActivityGetNumDroppedRecords", false);
  SYM(h, EnableCallback, "cuptiEnableCallback", false);
  SYM(h, GetGraphNodeId, "cuptiGetGraphNodeId", false);
  SYM(h, EnableDomain, "cuptiEnableDomain", false);

  CUpti_SubscriberHandle sub = NULL;
  CUptiResult r;
  char other[256] = "";
  if (g_cupti.Subscribe_v2) {
    CUpti_SubscriberParams sp;
    memset(&sp, 0, sizeof sp);
    sp.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    sp.subscriberName = "gemmtune verify";
    sp.oldSubscriberName = other;
    sp.oldSubscriberSize = sizeof other;
    r = g_cupti.Subscribe_v2(&sub, on_callback, NULL, &sp);
  } else {
    r = g_cupti.Subscribe(&sub, on_callback, NULL);
  }
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    set_unverified("CUPTI is already in use by another tool%s%s%s (Nsight Systems/Compute, a "
                   "debugger or a profiler in the application); kernels cannot be traced",
                   other[0] ? " (" : "", other, other[0] ? ")" : "");
    return;
  }
  if (r != CUPTI_SUCCESS) {
    set_unverified("cuptiSubscribe: %s", cupti_err(r));
    return;
  }
  r = g_cupti.RegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    set_unverified("cuptiActivityRegisterCallbacks: %s", cupti_err(r));
    return;
  }
  r = g_cupti.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    set_unverified("cuptiActivityEnable(CONCURRENT_KERNEL): %s", cupti_err(r));
    return;
  }
  g.enabled = true;
  enable_graph_counting(sub);
  enable_call_timing(sub);
}

/* Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this library.
 * Returns 1 in every case: a failure to trace must not become a failure to initialise CUDA. */
TRACE_EXPORT int InitializeInjection(void) {
  if (g.started) return 1; /* some drivers call it once per cuInit */
  const char *path = getenv("GEMMTUNE_TRACE");
  if (!path || !*path) return 1;
  g.started = true;
  g.pid = getpid();
  if (strlen(path) >= sizeof g.path_tpl) { /* a cut path would name another file */
    note("GEMMTUNE_TRACE is longer than %zu characters; not tracing", sizeof g.path_tpl - 1);
    return 1;
  }
  snprintf(g.path_tpl, sizeof g.path_tpl, "%s", path);
  gt_trace_init(&g.trace);
  pthread_mutex_lock(&g.mu);
  gt_trace_set_state(&g.trace, GT_TRACE_INCOMPLETE, "%s",
                     "the process ended without running its exit handlers (killed, or _exit); "
                     "its kernels were not recorded");
  write_trace_locked();
  pthread_mutex_unlock(&g.mu);
  start_tracing();
  if (g.enabled) atexit(trace_exit);
  return 1;
}
