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
#include <sys/file.h>
#include <unistd.h>

#include "capture_csv.h"
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
    gt_preload_say("%6d %10" PRIu64 " %10" PRIu64 "  %-9s %-27s %s -> %s %s", cl->device, calls,
                   hits, state_name(st), e->entry_point, d, e->provider, e->instance);
  else
    gt_preload_say("%6d %10" PRIu64 " %10" PRIu64 "  %-9s %-27s %s", cl->device, calls, hits,
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
  gt_entry_t entry = GT_ENTRY_DEFAULT;
  if (e->entry_point && gt_entry_parse(e->entry_point, &entry) != GT_OK) entry = GT_ENTRY_DEFAULT;
  const uint64_t ws = atomic_load(&e->ws_max);
  for (size_t i = 0; i < cl->n; i++)
    if (gt_rt_key_hash(&cl->recs[i].key) == e->hash &&
        gt_problem_equal(&cl->recs[i].key, &e->key)) {
      cl->recs[i].calls += calls;
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
  cl->recs[cl->n++] = (gt_rt_capture_rec_t){
      .key = e->key, .calls = calls, .time_us = t, .entry = entry, .workspace = ws};
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

/* The rows another process of the workload already wrote to path, added into cl. */
static void capture_add_previous(collect_t *cl, const char *path) {
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  gt_shapes_t prev;
  if (gt_shapes_read(path, &defaults, &prev, NULL) != GT_OK) {
    gt_preload_say("capture: %s exists but cannot be read (%s); replacing it", path,
                   gt_err_msg());
    return;
  }
  for (size_t i = 0; i < prev.n; i++) {
    gt_rt_entry_t fake;
    memset(&fake, 0, sizeof fake);
    fake.key = prev.v[i].p;
    fake.hash = gt_rt_key_hash(&fake.key);
    atomic_store(&fake.calls, prev.v[i].calls > 0 ? (uint64_t)prev.v[i].calls : 0);
    fake.time_us = prev.v[i].time_us;
    fake.timed_calls = atomic_load(&fake.calls);
    fake.entry_point = gt_entry_name(prev.v[i].entry);
    atomic_store(&fake.ws_max, prev.v[i].workspace);
    if (fake.timed_calls == 0) continue;
    collect_entry(cl, &fake);
  }
  gt_shapes_free(&prev);
}

static void write_capture(collect_t *cl) {
  char path[4096];
  expand_path(gt_preload.capture_path, path, sizeof path);
  int lfd = lock_dir_of(path);
  if (access(path, F_OK) == 0) capture_add_previous(cl, path);
  char libs[2048];
  gt_preload_lib_lines(libs, sizeof libs); /* which cuBLAS the application ran, for tune */
  if (gt_rt_capture_write_with(path, libs, cl->recs, cl->n) != GT_OK)
    gt_preload_say("capture: cannot write %s: %s", path, gt_err_msg());
  else if (gt_preload.log)
    gt_preload_say("capture: wrote %zu keys to %s", cl->n, path);
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
                         .decision = stats_decision(st),
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
  expand_path(g->stats_path, path, sizeof path);
  int lfd = lock_dir_of(path);
  if (gt_rt_stats_write(path, sc->v, sc->n) != GT_OK)
    gt_preload_say("stats: cannot write %s: %s", path, gt_err_msg());
  else if (g->log)
    gt_preload_say("stats: wrote %s", path);
  unlock_dir(lfd);
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
    uint64_t all = cl.calls + passed + untracked;
    gt_preload_say("total: %" PRIu64 " calls, %" PRIu64 " served by tuned candidates (%.1f%%)",
                   all, cl.hits, all ? 100.0 * (double)cl.hits / (double)all : 0.0);
  }
  if (g->capture) write_capture(&cl);
  free(cl.recs);
  free(sc.v);
  gt_preload_depth = saved_depth;
}
