/* What the preload shim tells the user: every stderr line goes through gt_preload_say, and at
 * exit one report gathers the engines' counters into the table of calls and hits per key
 * (GEMMTUNE_LOG), the capture file (GEMMTUNE_CAPTURE) and the stats file (GEMMTUNE_STATS). The
 * files may be shared by several processes of one workload: each adds its counts under a lock
 * and replaces the file atomically. src/runtime/README.md documents the formats. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture_csv.h"
#include "core/gt_fileio.h"
#include "core/gt_filelock.h"
#include "core/gt_graph_runs.h"
#include "core/gt_hindex.h"
#include "core/gt_shapes.h"
#include "preload_internal.h"

/* ---- messages ------------------------------------------------------------------------------ */

void gt_preload_say(const char *fmt, ...) {
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

void gt_preload_say_line(void *ctx, const char *line) {
  (void)ctx;
  gt_preload_say("%s", line);
}

/* ---- the counters table and the capture file ----------------------------------------------- */

typedef struct collect {
  int device;
  gt_rt_capture_rec_t *recs;
  size_t n, cap;
  gt_hindex_t index; /* recs by key: folding a large capture file stays linear at exit */
  uint64_t calls, hits;
} collect_t;

typedef struct rec_ctx {
  const collect_t *cl;
  const gt_problem_t *key;
  const char *not_tunable;
} rec_ctx_t;

/* One capture row per key and reason: a marked key never folds into a tunable one. */
static bool same_rec(void *ctx, size_t i) {
  const rec_ctx_t *c = ctx;
  return gt_problem_equal(&c->cl->recs[i].key, c->key) &&
         strcmp(c->cl->recs[i].not_tunable, c->not_tunable) == 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* The decision column of the exit table; a not-tunable key is never decided. */
static const char *state_name(const gt_rt_entry_t *e, int st) {
  if (e->not_tunable[0]) return "untunable";
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
    gt_preload_say("%6d %10" PRIu64 " %10" PRIu64 "  %-9s %-27s %s -> %s %s", cl->device, calls,
                   hits, state_name(e, st), e->entry_point, d, e->provider, e->instance);
  else if (e->not_tunable[0])
    gt_preload_say("%6d %10" PRIu64 " %10" PRIu64 "  %-9s %-27s %s: %s", cl->device, calls, hits,
                   state_name(e, st), e->entry_point, d, e->not_tunable);
  else
    gt_preload_say("%6d %10" PRIu64 " %10" PRIu64 "  %-9s %-27s %s", cl->device, calls, hits,
                   state_name(e, st), e->entry_point, d);
}

static void collect_entry(void *ctx, gt_rt_entry_t *e) {
  collect_t *cl = ctx;
  uint64_t calls = atomic_load(&e->calls);
  if (calls == 0) return;
  /* Calls that were not measured (under graph capture, or with every event in flight) are
   * credited the key's mean measured time; calls made under capture whose replays the tracer
   * counted are replaced by those replays and their kernels' time (gt_preload_graph_fold). */
  double mean = e->timed_calls ? e->time_us / (double)e->timed_calls
                : e->first_timed_dropped ? e->first_us : 0.0;
  const gt_graph_key_sum_t gs = {.captured = e->graph.captured, .runs = e->graph.runs,
                                 .ns = e->graph.ns};
  /* Every call made outside capture timed by its kernels (gt_preload_calls_fold): their kernel
   * time replaces the event pairs', which also hold the launch gaps of a host-bound caller. */
  const uint64_t eager = calls - (gs.captured <= calls ? gs.captured : 0);
  const uint64_t tagged = atomic_load(&e->eager.tagged);
  if (e->eager.ok && eager > 0 && tagged == eager)
    mean = (double)e->eager.ns / 1000.0 / (double)eager;
  double t;
  gt_graph_adjust(calls, mean, &gs, &calls, &t);
  if (calls == 0) return;
  gt_entry_t entry = GT_ENTRY_DEFAULT;
  if (e->entry_point && gt_entry_parse(e->entry_point, &entry) != GT_OK) entry = GT_ENTRY_DEFAULT;
  const uint64_t ws = atomic_load(&e->ws_max);
  rec_ctx_t rc = {cl, &e->key, e->not_tunable};
  long i = gt_hindex_find(&cl->index, e->hash, same_rec, &rc);
  if (i >= 0) {
    cl->recs[i].calls = sat_add(cl->recs[i].calls, calls);
    cl->recs[i].time_us += t;
    if (cl->recs[i].entry == GT_ENTRY_DEFAULT) cl->recs[i].entry = entry;
    if (ws > cl->recs[i].workspace) cl->recs[i].workspace = ws;
    return;
  }
  if (cl->n == cl->cap) {
    size_t cap = cl->cap ? 2 * cl->cap : 64;
    gt_rt_capture_rec_t *nr = realloc(cl->recs, cap * sizeof *nr);
    if (!nr) return;
    cl->recs = nr;
    cl->cap = cap;
  }
  if (gt_hindex_add(&cl->index, e->hash, cl->n) != GT_OK) return;
  gt_rt_capture_rec_t *r = &cl->recs[cl->n++];
  *r = (gt_rt_capture_rec_t){
      .key = e->key, .calls = calls, .time_us = t, .entry = entry, .workspace = ws};
  snprintf(r->not_tunable, sizeof r->not_tunable, "%s", e->not_tunable);
}

/* A path from the environment with "%p" replaced by the process id. False (and one warning)
 * when the result does not fit: a cut path names another file. */
static bool expand_path(const char *var, const char *tmpl, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = tmpl; *p; p++) {
    char pid[24];
    const char *piece = p;
    size_t pl = 1;
    if (p[0] == '%' && p[1] == 'p') {
      snprintf(pid, sizeof pid, "%ld", (long)getpid());
      piece = pid, pl = strlen(pid);
      p++;
    }
    if (o + pl >= cap) {
      gt_preload_say("%s: the path is longer than %zu characters; nothing written", var, cap - 1);
      return false;
    }
    memcpy(out + o, piece, pl);
    o += pl;
  }
  out[o] = '\0';
  return true;
}

/* Several processes of one workload (ranks, workers) may share an output path: each adds its
 * counts to what is there and replaces the file atomically, holding the lock on the file's
 * directory meanwhile (gt_file_lock_dir, the lock tune and merge take too). The wait is bounded:
 * a process that hangs holding the lock must not hang every other process's exit. False (and
 * one warning) when the lock cannot be had: the file is then left as it is. */
#define GT_PRELOAD_LOCK_WAIT_S 10.0
static bool lock_dir_of(const char *var, const char *path, int *lfd) {
  if (gt_file_lock_dir(path, GT_PRELOAD_LOCK_WAIT_S, lfd) == GT_OK) return true;
  gt_preload_say("%s: %s", var, gt_err_msg());
  return false;
}

/* The rows another process of the workload already wrote to path, added into cl. False (and
 * one warning) when what is at path is not ours to replace: not a regular file (a FIFO, a
 * device, a directory), too large, unreadable, or a file that is not a capture file. */
static bool capture_add_previous(collect_t *cl, const char *path) {
  char *text = NULL;
  size_t len = 0;
  gt_status_t s = gt_file_read(path, GT_FILE_MAX_HOST, GT_FILE_REGULAR_ONLY, &text, &len);
  if (s == GT_ERR_NOT_FOUND) return true;
  if (s != GT_OK) {
    gt_preload_say("capture: %s; nothing written", gt_err_msg());
    return false;
  }
  if (len == 0) {
    free(text);
    return true;
  }
  if (!gt_rt_capture_is_capture_text(text) || strlen(text) != len) {
    free(text);
    gt_preload_say("capture: %s exists and is not a capture file; not replaced", path);
    return false;
  }
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  gt_shapes_t prev;
  s = gt_shapes_parse(path, text, &defaults, &prev, NULL);
  free(text);
  if (s != GT_OK) {
    gt_preload_say("capture: %s exists but cannot be read (%s); replacing it", path,
                   gt_err_msg());
    return true;
  }
  for (size_t i = 0; i < prev.n; i++) {
    gt_rt_entry_t fake;
    memset(&fake, 0, sizeof fake);
    fake.key = prev.v[i].p;
    snprintf(fake.not_tunable, sizeof fake.not_tunable, "%s", prev.v[i].not_tunable);
    fake.hash = gt_rt_marked_hash(&fake.key, fake.not_tunable);
    atomic_store(&fake.calls, prev.v[i].calls > 0 ? (uint64_t)prev.v[i].calls : 0);
    fake.time_us = prev.v[i].time_us;
    fake.timed_calls = atomic_load(&fake.calls);
    fake.entry_point = gt_entry_name(prev.v[i].entry);
    atomic_store(&fake.ws_max, prev.v[i].workspace);
    if (fake.timed_calls == 0) continue;
    collect_entry(cl, &fake);
  }
  gt_shapes_free(&prev);
  return true;
}

/* What became of the calls made under graph capture, on stderr (capture mode): counted by their
 * replays, or once each as API calls, and why. */
static void say_replays(const gt_preload_graph_summary_t *gs) {
  if (gs->captured == 0) return;
  if (gs->counted)
    gt_preload_say("capture: %" PRIu64 " GEMM calls were made under CUDA graph capture; their "
                   "kernels ran %" PRIu64 " times in graph replays (counted through the kernel "
                   "tracer): the shapes file counts the replays%s%s",
                   gs->captured, gs->runs, gs->why[0] ? "; " : "", gs->why);
  else
    gt_preload_say("capture: %" PRIu64 " GEMM calls were made under CUDA graph capture and their "
                   "graph replays were not counted (%s): each counts once, as an API call, with "
                   "its key's mean time",
                   gs->captured, gs->why);
}

static void write_capture(collect_t *cl, const gt_preload_graph_summary_t *gs) {
  char path[4096];
  int lfd;
  if (!expand_path("GEMMTUNE_CAPTURE", gt_preload.capture_path, path, sizeof path)) return;
  if (!lock_dir_of("GEMMTUNE_CAPTURE", path, &lfd)) return;
  if (capture_add_previous(cl, path)) { /* else it said why: the file is not ours to replace */
    char libs[2048];
    size_t l = gt_preload_lib_lines(libs, sizeof libs); /* which cuBLAS it ran, for tune */
    gt_preload_graph_line(gs, libs + l, sizeof libs - l); /* how replays were counted */
    if (gt_rt_capture_write_with(path, libs, cl->recs, cl->n) != GT_OK)
      gt_preload_say("capture: cannot write %s: %s", path, gt_err_msg());
    else if (gt_preload.log)
      gt_preload_say("capture: wrote %zu keys to %s", cl->n, path);
  }
  gt_file_unlock_dir(lfd);
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

/* A key never decided was seen only under graph capture (its candidate could not be prepared
 * there), unless hits are off in this process (another cuBLAS), where nothing is decided and
 * every call is passed through. A key that cannot be tuned was passed through with its key. */
static const char *stats_decision(const gt_rt_entry_t *e, int st) {
  if (e->not_tunable[0]) return "pass";
  switch (st) {
    case GT_RT_HIT: return "hit";
    case GT_RT_MISS: return "miss";
    case GT_RT_FAILED: return "notused";
    default: return gt_preload.hits_allowed ? "deferred" : "pass";
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
                         .decision = stats_decision(e, st),
                         .provider = named ? e->provider : NULL,
                         .instance = named ? e->instance : NULL,
                         .entry = e->entry_point};
  stats_push(ctx, &r);
}

/* Called with gt_preload.mu held (the pass-through reasons). Rows of one entry point's unkeyed
 * calls and of identical keys on several devices are summed by the formatter. */
static void write_stats(stats_collect_t *sc) {
  const gt_preload_state_t *g = &gt_preload;
  for (int i = 0; i < g->nreasons; i++) {
    gt_rt_stats_rec_t r = {.calls = g->reasons[i].calls, .decision = "pass",
                           .entry = g->reasons[i].entry};
    stats_push(sc, &r);
  }
  /* Calls whose entry point is not known: reasons beyond the table, keys beyond its capacity. */
  uint64_t other = g->reasons_other + atomic_load(&gt_preload.untracked);
  if (other) {
    gt_rt_stats_rec_t r = {.calls = other, .decision = "pass", .entry = "-"};
    stats_push(sc, &r);
  }
  char path[4096];
  int lfd;
  if (!expand_path("GEMMTUNE_STATS", g->stats_path, path, sizeof path)) return;
  if (!lock_dir_of("GEMMTUNE_STATS", path, &lfd)) return;
  if (gt_rt_stats_write(path, sc->v, sc->n) != GT_OK)
    gt_preload_say("stats: not written: %s", gt_err_msg());
  else if (g->log)
    gt_preload_say("stats: wrote %s", path);
  gt_file_unlock_dir(lfd);
}

/* ---- the report ---------------------------------------------------------------------------- */

/* The pass-through lines of the table, and the stats file (both read the reasons under
 * gt_preload.mu). Returns the calls passed through. */
static uint64_t report_passed(stats_collect_t *sc) {
  gt_preload_state_t *g = &gt_preload;
  pthread_mutex_lock(&g->mu);
  uint64_t passed = 0;
  for (int i = 0; i < g->nreasons; i++) {
    passed += g->reasons[i].calls;
    if (g->log || g->capture)
      gt_preload_say("%10" PRIu64 " %s calls passed through%s: %s", g->reasons[i].calls,
                     g->reasons[i].entry, g->capture ? " (not recorded)" : "",
                     g->reasons[i].text);
  }
  passed += g->reasons_other;
  if (g->reasons_other && (g->log || g->capture))
    gt_preload_say("%10" PRIu64 " calls passed through for other reasons", g->reasons_other);
  if (g->stats) write_stats(sc);
  pthread_mutex_unlock(&g->mu);
  return passed;
}

void gt_preload_exit(void) {
  gt_preload_state_t *g = &gt_preload;
  if (atomic_exchange(&g->exit_done, 1)) return;
  /* A child forked after the parent's calls inherits its counters; only the parent reports. */
  if (getpid() != g->pid) return;
  int saved_depth = gt_preload_depth;
  gt_preload_depth = 1; /* nothing below may re-enter the interposers' logic */
  collect_t cl = {0};
  stats_collect_t sc = {0};
  gt_preload_graph_summary_t gs = {0};
  if (g->capture) {
    gt_preload_graph_fold(&gs);
    gt_preload_calls_fold(&gs);
  }
  if (g->log) {
    gt_preload_say("calls and hits per key (%s):", g->db_desc);
    gt_preload_say("%6s %10s %10s  %-9s %-27s %s", "device", "calls", "hits", "decision",
                   "entry point", "shape");
  }
  for (int d = 0; d < GT_PRELOAD_MAX_DEVICES; d++) {
    gt_rt_t *rt = atomic_load(&g->rt[d]);
    if (!rt) continue;
    cl.device = d;
    if (g->capture) gt_rt_time_flush(rt);
    if (g->log) gt_rt_foreach(rt, print_entry, &cl);
    if (g->capture) gt_rt_foreach(rt, collect_entry, &cl);
    if (g->stats) gt_rt_foreach(rt, stats_entry, &sc);
  }
  const uint64_t passed = report_passed(&sc);
  uint64_t untracked = atomic_load(&g->untracked);
  if (g->log) {
    if (untracked)
      gt_preload_say("%10" PRIu64 " calls of keys beyond the key table's capacity", untracked);
    /* API calls: a grouped call's keys each counted it once */
    uint64_t all = cl.calls + passed + untracked - atomic_load(&g->group_extra);
    gt_preload_say("total: %" PRIu64 " calls, %" PRIu64 " served by tuned candidates (%.1f%%)",
                   all, cl.hits, all ? 100.0 * (double)cl.hits / (double)all : 0.0);
  }
  if (g->capture) {
    say_replays(&gs);
    write_capture(&cl, &gs);
  }
  free(cl.recs);
  gt_hindex_free(&cl.index);
  free(sc.v);
  gt_preload_depth = saved_depth;
}
