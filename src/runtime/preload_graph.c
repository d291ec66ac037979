/* Which CUDA graph nodes each GEMM call made under stream capture added, and at exit how many
 * times they ran in graph replays: so `gemmtune capture` counts a captured call once per replay.
 *
 * Before a call on a capturing stream the shim copies the capture's dependency set (the nodes
 * the next captured work will depend on); after it, it walks back from the new dependency set
 * through node dependencies until it meets the old set: the nodes passed are what the call
 * added, and its kernel nodes are named by their CUPTI ids, which the kernel tracer in the same
 * process (libgemmtune_trace.so, injected by `gemmtune capture`) provides. At exit the tracer
 * says how often every clone of each node ran (core/gt_graph_runs.h). Only capture-safe graph
 * queries are made, with this thread in relaxed capture mode; any doubt (no tracer, a capture
 * that ended inside the call, more nodes than the walk keeps) leaves the call counted once, as
 * an API call, and the capture file says that replays were not counted and why. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_graph_runs.h"
#include "preload_internal.h"

/* Nodes visited walking back from one call's new dependency set: a GEMM adds a handful. */
#define GRAPH_WALK_MAX 64

typedef int (*node_ids_fn)(void *const *nodes, int n, uint64_t *ids);
typedef int (*runs_fn)(const uint64_t *ids, int n, uint64_t *runs, uint64_t *ns, char *why,
                       size_t cap);
typedef int (*call_tag_fn)(uint64_t tag);
typedef int (*call_times_fn)(const uint64_t *tags, int n, uint64_t *ns, uint64_t *kernels,
                             char *why, size_t cap);

static struct {
  pthread_once_t once;
  node_ids_fn node_ids;
  runs_fn runs;
  char why[300]; /* why the tracer cannot count replays ("" when it can) */
  pthread_mutex_t mu; /* calls */
  gt_graph_call_t *calls;
  gt_rt_entry_t **entry; /* the entry of each call */
  size_t n, cap;
  bool nomem;
  /* calls outside capture whose kernels the tracer times (gemmtune_trace_call_*): the entries
   * tagged at least once, under mu */
  call_tag_fn call_tag;
  call_times_fn call_times;
  gt_rt_entry_t **tagged;
  size_t ntagged, captagged;
  bool tagged_nomem;
} g_graph = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

/* The tracer of this process, if CUDA_INJECTION64_PATH names one that exports the graph queries
 * (RTLD_NOLOAD: the driver loaded it; nothing is loaded here). */
static void find_tracer(void) {
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  if (!inj || !*inj) {
    snprintf(g_graph.why, sizeof g_graph.why,
             "no kernel tracer in the process (CUDA_INJECTION64_PATH is not set; gemmtune "
             "capture injects libgemmtune_trace.so)");
    return;
  }
  void *h = dlopen(inj, RTLD_NOW | RTLD_NOLOAD);
  if (h) {
    *(void **)&g_graph.node_ids = dlsym(h, "gemmtune_trace_graph_node_ids");
    *(void **)&g_graph.runs = dlsym(h, "gemmtune_trace_graph_runs");
    *(void **)&g_graph.call_tag = dlsym(h, "gemmtune_trace_call_tag");
    *(void **)&g_graph.call_times = dlsym(h, "gemmtune_trace_call_times");
    if (!g_graph.call_tag || !g_graph.call_times) g_graph.call_tag = NULL, g_graph.call_times = NULL;
  }
  if (!g_graph.node_ids || !g_graph.runs) {
    g_graph.node_ids = NULL, g_graph.runs = NULL;
    snprintf(g_graph.why, sizeof g_graph.why,
             "CUDA_INJECTION64_PATH=%.160s is not a loaded gemmtune kernel tracer", inj);
  }
}

/* Switch this thread to relaxed capture mode (queries of another thread's global capture must
 * not invalidate it); returns the previous mode, or -1 when it could not be switched. */
static int relax(void) {
  enum cudaStreamCaptureMode m = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&m) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return (int)m;
}

static void unrelax(int m) {
  if (m < 0) return;
  enum cudaStreamCaptureMode mode = (enum cudaStreamCaptureMode)m;
  (void)cudaThreadExchangeStreamCaptureMode(&mode);
}

/* The capture's current dependency set; false when the stream is not being captured (or its
 * state cannot be read). */
static bool capture_deps(cudaStream_t s, const cudaGraphNode_t **deps, size_t *n) {
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaGraphEdgeData *edges = NULL;
  *deps = NULL, *n = 0;
  if (cudaStreamGetCaptureInfo(s, &st, NULL, NULL, deps, &edges, n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return st == cudaStreamCaptureStatusActive;
}

void gt_preload_graph_begin(gt_preload_call_t *c, gt_rt_entry_t *e) {
  gt_preload_graph_mark_t *m = &c->graph;
  m->active = false;
  if (!gt_preload.capture || !e) return;
  int mode = relax();
  const cudaGraphNode_t *deps;
  size_t n;
  if (capture_deps(c->stream, &deps, &n)) {
    m->active = true;
    m->e = e;
    m->overflow = n > GT_PRELOAD_GRAPH_DEPS;
    m->nbefore = m->overflow ? 0 : n;
    for (size_t i = 0; i < m->nbefore; i++) m->before[i] = deps[i];
  }
  unrelax(mode);
}

static bool in_set(cudaGraphNode_t x, const cudaGraphNode_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == x) return true;
  return false;
}

/* The kernel nodes the call added, first in stream order first; false when they cannot be told
 * (the walk met more nodes than it keeps, or a query failed). */
static bool added_kernels(const gt_preload_graph_mark_t *m, const cudaGraphNode_t *after,
                          size_t nafter, cudaGraphNode_t *out, uint32_t *nout) {
  cudaGraphNode_t stack[GRAPH_WALK_MAX], seen[GRAPH_WALK_MAX];
  size_t ns = 0, nseen = 0;
  uint32_t nk = 0;
  for (size_t i = 0; i < nafter; i++) {
    if (in_set(after[i], m->before, m->nbefore)) continue;
    if (ns == GRAPH_WALK_MAX) return false;
    stack[ns++] = after[i];
  }
  while (ns) {
    cudaGraphNode_t x = stack[--ns];
    if (in_set(x, seen, nseen) || in_set(x, m->before, m->nbefore)) continue;
    if (nseen == GRAPH_WALK_MAX) return false;
    seen[nseen++] = x;
    enum cudaGraphNodeType t;
    if (cudaGraphNodeGetType(x, &t) != cudaSuccess) return false;
    if (t == cudaGraphNodeTypeKernel && nk < GT_GRAPH_CALL_MAX_NODES) out[nk++] = x;
    cudaGraphNode_t deps[16];
    cudaGraphEdgeData edges[16];
    size_t nd = 0;
    if (cudaGraphNodeGetDependencies(x, NULL, NULL, &nd) != cudaSuccess) return false;
    if (nd > 16) return false;
    if (nd && cudaGraphNodeGetDependencies(x, deps, edges, &nd) != cudaSuccess) return false;
    for (size_t i = 0; i < nd; i++) {
      if (ns == GRAPH_WALK_MAX) return false;
      stack[ns++] = deps[i];
    }
  }
  /* Found walking backwards: reverse into stream order. */
  for (uint32_t i = 0; i < nk / 2; i++) {
    cudaGraphNode_t t = out[i];
    out[i] = out[nk - 1 - i];
    out[nk - 1 - i] = t;
  }
  *nout = nk;
  return true;
}

static void keep_call(gt_rt_entry_t *e, const gt_graph_call_t *call) {
  pthread_mutex_lock(&g_graph.mu);
  if (g_graph.n == g_graph.cap) {
    size_t cap = g_graph.cap ? 2 * g_graph.cap : 256;
    gt_graph_call_t *nc = realloc(g_graph.calls, cap * sizeof *nc);
    if (nc) g_graph.calls = nc;
    gt_rt_entry_t **ne = nc ? realloc(g_graph.entry, cap * sizeof *ne) : NULL;
    if (ne) g_graph.entry = ne;
    if (!nc || !ne) {
      g_graph.nomem = true;
      pthread_mutex_unlock(&g_graph.mu);
      return;
    }
    g_graph.cap = cap;
  }
  g_graph.calls[g_graph.n] = *call;
  g_graph.entry[g_graph.n++] = e;
  pthread_mutex_unlock(&g_graph.mu);
}

void gt_preload_graph_end(gt_preload_call_t *c) {
  gt_preload_graph_mark_t *m = &c->graph;
  if (!m->active) return;
  m->active = false;
  pthread_once(&g_graph.once, find_tracer);
  gt_graph_call_t call;
  memset(&call, 0, sizeof call);
  int mode = relax();
  const cudaGraphNode_t *after;
  size_t nafter;
  cudaGraphNode_t kernels[GT_GRAPH_CALL_MAX_NODES];
  uint32_t nk = 0;
  if (!m->overflow && capture_deps(c->stream, &after, &nafter) &&
      added_kernels(m, after, nafter, kernels, &nk)) {
    call.identified = g_graph.node_ids &&
                      g_graph.node_ids((void *const *)kernels, (int)nk, call.ids) == 0;
    call.nids = call.identified ? nk : 0;
  }
  (void)cudaGetLastError();
  unrelax(mode);
  keep_call(m->e, &call);
}

/* ---- calls outside capture: their kernels' time from the tracer -------------------------- */

/* e into the list of tagged entries, once. */
static void register_tagged(gt_rt_entry_t *e) {
  if (atomic_exchange(&e->eager.registered, 1)) return;
  pthread_mutex_lock(&g_graph.mu);
  if (g_graph.ntagged == g_graph.captagged) {
    size_t cap = g_graph.captagged ? 2 * g_graph.captagged : 64;
    gt_rt_entry_t **nv = realloc(g_graph.tagged, cap * sizeof *nv);
    if (!nv) {
      g_graph.tagged_nomem = true;
      pthread_mutex_unlock(&g_graph.mu);
      return;
    }
    g_graph.tagged = nv;
    g_graph.captagged = cap;
  }
  g_graph.tagged[g_graph.ntagged++] = e;
  pthread_mutex_unlock(&g_graph.mu);
}

void gt_preload_call_tag_begin(gt_preload_call_t *c, gt_rt_entry_t *e) {
  c->tagged = false;
  if (!gt_preload.capture || !e || c->graph.active) return;
  pthread_once(&g_graph.once, find_tracer);
  if (!g_graph.call_tag || g_graph.call_tag((uint64_t)(uintptr_t)e) != 0) return;
  c->tagged = true;
  atomic_fetch_add_explicit(&e->eager.tagged, 1, memory_order_relaxed);
  register_tagged(e);
}

void gt_preload_call_tag_end(gt_preload_call_t *c) {
  if (!c->tagged) return;
  c->tagged = false;
  (void)g_graph.call_tag(0);
}

void gt_preload_calls_fold(gt_preload_graph_summary_t *out) {
  out->eager_traced = false;
  out->eager_tagged = 0;
  out->eager_why[0] = '\0';
  pthread_once(&g_graph.once, find_tracer);
  pthread_mutex_lock(&g_graph.mu);
  size_t n = g_graph.ntagged;
  if (!g_graph.call_times) {
    snprintf(out->eager_why, sizeof out->eager_why, "%s",
             g_graph.why[0] ? g_graph.why : "the kernel tracer does not time calls");
  } else if (g_graph.tagged_nomem) {
    snprintf(out->eager_why, sizeof out->eager_why, "out of host memory");
  } else if (n > (size_t)INT32_MAX) {
    snprintf(out->eager_why, sizeof out->eager_why, "too many keys");
  } else if (n) {
    uint64_t *tags = malloc(n * sizeof *tags), *ns = malloc(n * sizeof *ns);
    uint64_t *kn = malloc(n * sizeof *kn);
    if (!tags || !ns || !kn) {
      snprintf(out->eager_why, sizeof out->eager_why, "out of host memory");
    } else {
      for (size_t i = 0; i < n; i++) tags[i] = (uint64_t)(uintptr_t)g_graph.tagged[i];
      if (g_graph.call_times(tags, (int)n, ns, kn, out->eager_why, sizeof out->eager_why) == 0) {
        out->eager_traced = true;
        for (size_t i = 0; i < n; i++) {
          g_graph.tagged[i]->eager.ns = ns[i];
          g_graph.tagged[i]->eager.ok = true;
          out->eager_tagged += atomic_load(&g_graph.tagged[i]->eager.tagged);
        }
      } else if (!out->eager_why[0]) {
        snprintf(out->eager_why, sizeof out->eager_why, "the kernel tracer could not say");
      }
    }
    free(tags), free(ns), free(kn);
  }
  pthread_mutex_unlock(&g_graph.mu);
}

/* ---- at exit ------------------------------------------------------------------------------- */

typedef struct entry_ctx {
  gt_rt_entry_t *const *v;
  gt_rt_entry_t *want;
} entry_ctx_t;

static bool same_entry(void *ctx, size_t i) {
  const entry_ctx_t *c = ctx;
  return c->v[i] == c->want;
}

/* Distinct entries of the kept calls into uniq (calls[i].key set to the index). */
static size_t index_entries(gt_rt_entry_t **uniq, gt_hindex_t *x) {
  size_t nu = 0;
  for (size_t i = 0; i < g_graph.n; i++) {
    gt_rt_entry_t *e = g_graph.entry[i];
    entry_ctx_t c = {uniq, e};
    uint64_t h = gt_hindex_hash_bytes(&e, sizeof e);
    long j = gt_hindex_find(x, h, same_entry, &c);
    if (j < 0) {
      if (gt_hindex_add(x, h, nu) != GT_OK) return SIZE_MAX;
      uniq[nu] = e;
      j = (long)nu++;
    }
    g_graph.calls[i].key = (size_t)j;
  }
  return nu;
}

/* The tracer's runs for every identified call's nodes; NULL answers (and why) when replays
 * cannot be counted. */
static void ask_runs(uint64_t **runs, uint64_t **ns, char *why, size_t cap) {
  *runs = *ns = NULL;
  size_t nid = 0;
  for (size_t i = 0; i < g_graph.n; i++) nid += g_graph.calls[i].nids;
  uint64_t *ids = malloc((nid ? nid : 1) * sizeof *ids);
  uint64_t *r = malloc((nid ? nid : 1) * sizeof *r), *t = malloc((nid ? nid : 1) * sizeof *t);
  if (!ids || !r || !t || nid > (size_t)INT32_MAX) {
    snprintf(why, cap, "out of host memory counting graph replays");
    free(ids), free(r), free(t);
    return;
  }
  size_t k = 0;
  for (size_t i = 0; i < g_graph.n; i++)
    for (uint32_t j = 0; j < g_graph.calls[i].nids; j++) ids[k++] = g_graph.calls[i].ids[j];
  if (g_graph.runs(ids, (int)nid, r, t, why, cap) != 0) {
    if (!why[0]) snprintf(why, cap, "the kernel tracer could not count graph replays");
    free(ids), free(r), free(t);
    return;
  }
  free(ids);
  *runs = r, *ns = t;
}

void gt_preload_graph_fold(gt_preload_graph_summary_t *out) {
  memset(out, 0, sizeof *out);
  pthread_once(&g_graph.once, find_tracer);
  pthread_mutex_lock(&g_graph.mu);
  out->captured = g_graph.n;
  if (g_graph.n == 0) {
    pthread_mutex_unlock(&g_graph.mu);
    return;
  }
  if (!g_graph.runs) snprintf(out->why, sizeof out->why, "%s", g_graph.why);
  else if (g_graph.nomem) snprintf(out->why, sizeof out->why, "out of host memory");
  gt_rt_entry_t **uniq = malloc(g_graph.n * sizeof *uniq);
  gt_graph_key_sum_t *sums = calloc(g_graph.n, sizeof *sums);
  gt_hindex_t x = {0};
  size_t nu = uniq && sums ? index_entries(uniq, &x) : SIZE_MAX;
  if (nu == SIZE_MAX) {
    snprintf(out->why, sizeof out->why, "out of host memory counting graph replays");
  } else {
    uint64_t *runs = NULL, *ns = NULL;
    if (!out->why[0]) ask_runs(&runs, &ns, out->why, sizeof out->why);
    gt_graph_fold(g_graph.calls, g_graph.n, runs, ns, sums, nu);
    out->counted = runs != NULL;
    for (size_t i = 0; i < nu; i++) {
      uniq[i]->graph.captured = out->counted ? sums[i].captured : 0;
      uniq[i]->graph.runs = sums[i].runs;
      uniq[i]->graph.ns = sums[i].ns;
      out->identified += sums[i].captured;
      out->runs += sums[i].runs;
    }
    if (!out->counted) out->identified = 0;
    else if (out->identified < out->captured && !out->why[0])
      snprintf(out->why, sizeof out->why,
               "the kernel nodes of %" PRIu64 " captured calls could not be identified",
               out->captured - out->identified);
    free(runs);
    free(ns);
  }
  gt_hindex_free(&x);
  free(uniq);
  free(sums);
  pthread_mutex_unlock(&g_graph.mu);
}

size_t gt_preload_graph_line(const gt_preload_graph_summary_t *s, char *buf, size_t cap) {
  int n;
  if (s->captured == 0)
    n = snprintf(buf, cap, "#gemmtune-replays counted_by=none captured_calls=0\n");
  else if (s->counted)
    n = snprintf(buf, cap,
                 "#gemmtune-replays counted_by=cupti-graph-nodes captured_calls=%" PRIu64
                 " identified=%" PRIu64 " replays=%" PRIu64 "%s%s\n",
                 s->captured, s->identified, s->runs, s->why[0] ? " reason=" : "", s->why);
  else
    n = snprintf(buf, cap,
                 "#gemmtune-replays counted_by=api-calls captured_calls=%" PRIu64 " reason=%s\n",
                 s->captured, s->why);
  if (n < 0 || (size_t)n >= cap) return 0;
  for (int i = 0; i < n - 1; i++)
    if (buf[i] == '\n' || buf[i] == '\r') buf[i] = ' ';
  int m;
  if (s->eager_traced)
    m = snprintf(buf + n, cap - (size_t)n,
                 "#gemmtune-eager timed_by=cupti-kernels tagged_calls=%" PRIu64 "\n",
                 s->eager_tagged);
  else
    m = snprintf(buf + n, cap - (size_t)n, "#gemmtune-eager timed_by=events reason=%s\n",
                 s->eager_why[0] ? s->eager_why : "no call was timed by the kernel tracer");
  if (m < 0 || (size_t)m >= cap - (size_t)n) return 0;
  for (int i = n; i < n + m - 1; i++)
    if (buf[i] == '\n' || buf[i] == '\r') buf[i] = ' ';
  return (size_t)(n + m);
}
