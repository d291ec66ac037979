/* The path every interposed call takes once the shim has taken it on, whatever its entry point:
 * find the calling thread's device and engine, count the call under its key (or under the reason
 * it has none), decide the key, run the tuned candidate on a hit, and say what was decided. A key
 * that cannot be tuned is counted and timed under its key and reason, never decided. Any step
 * that fails sends the call back to its real function. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload_internal.h"

/* ---- the test device ------------------------------------------------------------------------
 * GEMMTUNE_TEST_DEVICE, for the CPU tests of the shim with stand-in libraries: "ARCH:SMS"
 * ("sm_90:132") or, with the product identity, "NAME;MEM_GIB;ARCH;SMS" ("NVIDIA H200;139;sm_90;
 * 132"). When no CUDA device is usable, calls are keyed as if from device 0 with that identity,
 * and its engine is one that never runs anything (gt_rt_open_as: every CUDA query fails there and
 * is taken as the careful answer, streams as capturing). On a host with a device it changes
 * nothing. */
static pthread_once_t g_test_once = PTHREAD_ONCE_INIT;
static char g_test_arch[GT_ARCH_MAX];
static int g_test_sms = -1;
static gt_db_device_t g_test_here;

static void test_device_read(void) {
  const char *v = getenv("GEMMTUNE_TEST_DEVICE");
  if (!v || !*v) return;
  char arch[GT_ARCH_MAX] = "", name[GT_DB_DEVICE_MAX] = "";
  int sms = -1, gib = 0, n = -1;
  const char *colon = strchr(v, ':');
  if (strchr(v, ';')) {
    if (sscanf(v, "%63[^;];%d;%15[^;];%d%n", name, &gib, arch, &sms, &n) != 4 || v[n] != '\0')
      sms = -1;
  } else if (colon && (size_t)(colon - v) < sizeof arch && sscanf(colon + 1, "%d", &sms) == 1) {
    memcpy(arch, v, (size_t)(colon - v));
    arch[colon - v] = '\0';
  }
  if (sms < 0 || !arch[0]) {
    gt_preload_say("GEMMTUNE_TEST_DEVICE=%.60s: expected ARCH:SMS (sm_90:132) or "
                   "NAME;MEM_GIB;ARCH;SMS (NVIDIA H200;139;sm_90;132); ignored", v);
    return;
  }
  snprintf(g_test_arch, sizeof g_test_arch, "%s", arch);
  g_test_sms = sms;
  if (name[0]) gt_db_device_name(name, g_test_here.name, sizeof g_test_here.name);
  g_test_here.mem_gib = gib;
}

static bool test_device(void) {
  pthread_once(&g_test_once, test_device_read);
  return g_test_sms >= 0;
}

gt_status_t gt_preload_open_engine(int dev, const gt_db_t *db, const char *db_desc,
                                   gt_rt_t **out) {
  gt_status_t s = gt_rt_open(dev, db, db_desc, gt_preload_say_line, NULL, out);
  if (s != GT_OK && dev == 0 && test_device()) {
    gt_preload_say("GEMMTUNE_TEST_DEVICE: no usable CUDA device; keying calls as %s with %d SMs "
                   "(tests only: nothing runs on it)",
                   g_test_arch, g_test_sms);
    s = gt_rt_open_as(0, g_test_arch, g_test_sms, &g_test_here, db, db_desc, gt_preload_say_line,
                      NULL, out);
  }
  return s;
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
    return test_device() ? 0 : -1;
  }
  return dev;
}

void gt_preload_note_unsupported(const char *entry, const char *why) {
  gt_preload_state_t *g = &gt_preload;
  pthread_mutex_lock(&g->mu);
  int i;
  for (i = 0; i < g->nreasons; i++)
    if (strcmp(g->reasons[i].entry, entry) == 0 &&
        strncmp(g->reasons[i].text, why, sizeof g->reasons[i].text - 1) == 0)
      break;
  bool first = false;
  if (i < g->nreasons) {
    g->reasons[i].calls++;
  } else if (g->nreasons < GT_PRELOAD_MAX_REASONS) {
    gt_preload_reason_t *r = &g->reasons[g->nreasons++];
    snprintf(r->text, sizeof r->text, "%s", why);
    r->entry = entry;
    r->calls = 1;
    first = true;
  } else {
    g->reasons_other++;
  }
  pthread_mutex_unlock(&g->mu);
  if (first && g->log) gt_preload_say("pass %s: %s (passed through untouched)", entry, why);
}

bool gt_preload_call_begin(gt_preload_call_t *c, const char *entry, cudaStream_t stream) {
  memset(c, 0, sizeof *c);
  c->entry = entry;
  c->stream = stream;
  c->timer.slot = -1;
  int dev = current_device();
  if (dev < 0) {
    gt_preload_note_unsupported(
        entry, "the current device cannot be determined (no usable CUDA device?)");
    return false;
  }
  if (!(c->rt = gt_preload_engine(dev))) return false;
  snprintf(c->env.arch, sizeof c->env.arch, "%s", gt_rt_arch(c->rt));
  c->env.sm_count = gt_rt_sm_count(c->rt);
  return true;
}

bool gt_preload_call_begin_handle(gt_preload_call_t *c, const char *entry, cublasHandle_t handle) {
  memset(c, 0, sizeof *c);
  c->timer.slot = -1;
  const gt_preload_api_t *a = gt_preload_api();
  if (!a->GetStream || !a->GetPointerMode || !a->GetMathMode) a = gt_preload_api_refill();
  cudaStream_t stream = NULL;
  cublasPointerMode_t pm = CUBLAS_POINTER_MODE_HOST;
  cublasMath_t mm = CUBLAS_DEFAULT_MATH;
  if (!a->GetStream || !a->GetPointerMode || !a->GetMathMode ||
      a->GetStream(handle, &stream) != CUBLAS_STATUS_SUCCESS ||
      a->GetPointerMode(handle, &pm) != CUBLAS_STATUS_SUCCESS ||
      a->GetMathMode(handle, &mm) != CUBLAS_STATUS_SUCCESS) {
    gt_preload_note_unsupported(entry, "the handle's stream or modes cannot be read");
    return false;
  }
  if (!gt_preload_call_begin(c, entry, stream)) return false;
  c->env.pointer_mode = (int)pm;
  c->env.math_mode = (int)mm;
  return true;
}

/* The line of a key's decision, once per key: "wait" for a key first seen under capture whose
 * candidate could not be prepared there (with GEMMTUNE_LOG), "not used" for a row that cannot
 * run here (always), "hit" and "miss" (with GEMMTUNE_LOG). */
static void log_decision(gt_preload_call_t *c, gt_rt_entry_t *e, gt_rt_state_t st) {
  const bool log = gt_preload.log;
  if (st == GT_RT_NEW) {
    if (log && !atomic_exchange(&e->deferred_logged, 1)) {
      char d[256];
      gt_problem_describe(&e->key, d, sizeof d);
      gt_preload_say("wait %s %s: first seen during CUDA graph capture, not decided there: %s; "
                     "passed through until a call outside capture decides it",
                     c->entry, d, e->why);
    }
    return;
  }
  /* A row that exists but cannot be used is always reported: that is the silent failure this
   * tool exists to make loud. Hits and misses only with GEMMTUNE_LOG. */
  if (st != GT_RT_FAILED && !log) return;
  if (atomic_exchange(&e->logged, 1)) return;
  char d[256];
  gt_problem_describe(&e->key, d, sizeof d);
  if (st == GT_RT_HIT) {
    gt_preload_say("hit %s %s -> %s %s (%s)", c->entry, d, e->provider, e->instance, e->why);
  } else if (st == GT_RT_MISS) {
    char key[1024];
    gt_problem_format_key(&e->key, key, sizeof key);
    gt_preload_say("miss %s %s: %s [key %s]", c->entry, d, e->why, key);
  } else {
    gt_preload_say("not used %s %s: %s; calling %s instead", c->entry, d, e->why, c->entry);
  }
}

/* The largest workspace a call offered: what the application gives its calls is what the
 * baseline gets in `tune`. */
static void note_workspace(gt_rt_entry_t *e, const gt_operands_t *ops) {
  uint64_t ws = ops && ops->workspace ? (uint64_t)ops->ws_size : 0;
  uint64_t seen = atomic_load_explicit(&e->ws_max, memory_order_relaxed);
  while (ws > seen && !atomic_compare_exchange_weak_explicit(&e->ws_max, &seen, ws,
                                                             memory_order_relaxed,
                                                             memory_order_relaxed)) {
  }
}

/* The first call of a not-tunable key, with GEMMTUNE_LOG: why, and that it is recorded. The
 * text starts as the pass line of an unkeyed call does ("pass ENTRY: REASON"). */
static void log_marked(const gt_preload_call_t *c, gt_rt_entry_t *e) {
  if (!gt_preload.log || atomic_exchange(&e->logged, 1)) return;
  char d[256];
  gt_problem_describe(&e->key, d, sizeof d);
  gt_preload_say("pass %s: %s (not tunable; counted under its key %s%s, passed through "
                 "untouched)",
                 c->entry, e->not_tunable, d, gt_preload.capture ? " and recorded" : "");
}

/* A key that cannot be tuned: counted and timed under its key and reason, never decided. */
static void call_marked(gt_preload_call_t *c, const gt_problem_t *key, const char *why,
                        const gt_operands_t *ops) {
  gt_rt_entry_t *e = gt_rt_entry_marked(c->rt, key, c->entry, why);
  if (!e) {
    atomic_fetch_add(&gt_preload.untracked, 1);
    return;
  }
  c->e = e;
  atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
  note_workspace(e, ops);
  if (gt_preload.capture) gt_rt_time_begin(c->rt, e, c->stream, &c->timer);
  log_marked(c, e);
  gt_preload_graph_begin(c, e);
  gt_preload_call_tag_begin(c, e);
}

bool gt_preload_call_try(gt_preload_call_t *c, gt_status_t key_status, const gt_problem_t *key,
                         const gt_cublas_mark_t *mark, gt_operands_t *ops) {
  if (key_status != GT_OK) {
    gt_preload_note_unsupported(c->entry, gt_err_msg());
    return false;
  }
  if (mark && mark->why[0]) {
    call_marked(c, key, mark->why, ops);
    return false;
  }
  gt_rt_entry_t *e = gt_rt_entry(c->rt, key, c->entry);
  if (!e) {
    atomic_fetch_add(&gt_preload.untracked, 1);
    return false;
  }
  c->e = e;
  atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
  note_workspace(e, ops);
  if (gt_preload.capture) gt_rt_time_begin(c->rt, e, c->stream, &c->timer);
  /* The own grouped kernels use no cuBLAS: a process without the shim's cuBLASLt can still be
   * served its grouped calls (torch loads cuBLASLt only at its first matmul). */
  if (!gt_preload.hits_allowed && key->op != GT_OP_GROUPED_MM) {
    gt_preload_graph_begin(c, e);
    gt_preload_call_tag_begin(c, e);
    return false;
  }
  gt_rt_state_t st = gt_rt_decide(c->rt, e, c->stream);
  log_decision(c, e, st);
  /* After deciding: a decision may allocate, never enqueue; what the call enqueues follows. */
  gt_preload_graph_begin(c, e);
  gt_preload_call_tag_begin(c, e);
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
  } else if (gt_preload.log && !atomic_exchange(&e->deferred_logged, 1)) {
    char d[256];
    gt_problem_describe(&e->key, d, sizeof d);
    gt_preload_say("wait %s %s: tuned candidate not run for now: %s", c->entry, d, gt_err_msg());
  }
  return false;
}

void gt_preload_call_groups(gt_preload_call_t *c, const gt_problem_t *keys,
                            const gt_cublas_mark_t *marks, int n) {
  gt_rt_entry_t **es = malloc((size_t)n * sizeof *es);
  double *flops = malloc((size_t)n * sizeof *flops);
  if (!es || !flops) {
    free(es);
    free(flops);
    gt_preload_note_unsupported(c->entry, "out of host memory recording a grouped batch");
    return;
  }
  int kept = 0;
  for (int i = 0; i < n; i++) {
    gt_rt_entry_t *e = gt_rt_entry_marked(c->rt, &keys[i], c->entry, marks[i].why);
    if (!e) {
      atomic_fetch_add(&gt_preload.untracked, 1);
      continue;
    }
    atomic_fetch_add_explicit(&e->calls, 1, memory_order_relaxed);
    log_marked(c, e);
    es[kept] = e;
    flops[kept++] = gt_problem_flops(&keys[i]);
  }
  if (kept > 1) atomic_fetch_add(&gt_preload.group_extra, (uint64_t)(kept - 1));
  if (kept && gt_preload.capture)
    gt_rt_time_begin_split(c->rt, es, flops, kept, c->stream, &c->timer);
  free(es);
  free(flops);
}

void gt_preload_call_end(gt_preload_call_t *c) {
  if (c->rt) gt_rt_time_end(c->rt, &c->timer, c->stream);
  gt_preload_call_tag_end(c);
  gt_preload_graph_end(c);
}
