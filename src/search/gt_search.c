/* The search driver (see gt_search.h). */
#define _GNU_SOURCE
#include "gt_search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static const char *const k_disp[GT_DISP__COUNT] = {
    [GT_DISP_PASSED] = "passed",       [GT_DISP_FAILED_GATE] = "failed-gate",
    [GT_DISP_FAILED_RUN] = "failed-run", [GT_DISP_EXCLUDED] = "excluded",
    [GT_DISP_PRUNED] = "pruned",       [GT_DISP_BUDGET] = "not-reached",
};

const char *gt_disp_name(gt_disp_t d) { return (unsigned)d < GT_DISP__COUNT ? k_disp[d] : "?"; }

void gt_search_opts_init(gt_search_opts_t *o, gt_backend_t backend) {
  memset(o, 0, sizeof *o);
  gt_measure_opts_init(&o->measure);
  o->backend = backend;
  o->min_improvement = 0.03;
  o->finalists = 6;
  o->rounds = 15;
  o->settle_s = backend == GT_BACKEND_CUDA ? 0.3 : 0.0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool gt_search_name_in_list(const char *list, const char *name) {
  if (!list || !*list) return false;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    if (l == n && strncmp(p, name, n) == 0) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

void gt_search_result_free(gt_search_result_t *r) {
  free(r->c);
  r->c = NULL;
  r->n = 0;
}

static void phase(const gt_search_events_t *ev, const char *name, size_t done, size_t total) {
  if (ev && ev->on_phase) ev->on_phase(ev->ctx, name, done, total);
}

static void announce(const gt_search_events_t *ev, const gt_candidate_t *c) {
  if (ev && ev->on_candidate) ev->on_candidate(ev->ctx, c);
}

static void fail_run(gt_cand_result_t *r, gt_status_t s) {
  r->disp = GT_DISP_FAILED_RUN;
  snprintf(r->why, sizeof r->why, "%s: %s", gt_status_str(s),
           gt_err_msg()[0] ? gt_err_msg() : "(no detail)");
}

/* Gate candidate r (already loaded as l). Returns true when it passed. */
static bool gate_one(const gt_harness_ops_t *h, struct gt_bench *b, struct gt_loaded *l,
                     gt_cand_result_t *r) {
  gt_err_clear();
  memset(&r->gate, 0, sizeof r->gate);
  gt_status_t s = h->gate(b, l, &r->gate);
  /* A harness may report a failed comparison either as GT_OK with passed=false or as
   * GT_ERR_GATE with the verdict filled in; anything else means the run itself failed. */
  if (s == GT_ERR_GATE) r->gate.passed = false;
  else if (s != GT_OK) {
    fail_run(r, s);
    return false;
  }
  r->gated = true;
  if (!r->gate.passed && !r->gate.why[0])
    snprintf(r->gate.why, sizeof r->gate.why, "%s", gt_err_msg());
  if (!r->gate.passed) {
    r->disp = GT_DISP_FAILED_GATE;
    snprintf(r->why, sizeof r->why, "%s (error %.3g, bound %.3g)", r->gate.why, r->gate.error,
             r->gate.bound);
    return false;
  }
  return true;
}

static const char *timing_of(const gt_harness_ops_t *h, struct gt_bench *b,
                             struct gt_loaded *l) {
  if (h->timing) return h->timing(b, l);
  return h->backend == GT_BACKEND_CUDA ? "graph" : "host";
}

static int cmp_prune(const void *a, const void *b) {
  const gt_cand_result_t *x = *(const gt_cand_result_t *const *)a;
  const gt_cand_result_t *y = *(const gt_cand_result_t *const *)b;
  return (x->prune_us > y->prune_us) - (x->prune_us < y->prune_us);
}

gt_status_t gt_search_run(const gt_problem_t *p, const gt_search_opts_t *o,
                          const gt_search_events_t *ev, gt_search_result_t *out) {
  double t0 = now_s();
  memset(out, 0, sizeof *out);
  out->problem = *p;
  out->baseline = out->best = -1;
  const gt_harness_ops_t *h = gt_harness_for(o->backend);
  if (!h) {
    out->status = gt_err_set(GT_ERR_UNSUPPORTED, "this build has no %s harness",
                             o->backend == GT_BACKEND_CUDA ? "CUDA" : "host");
    snprintf(out->failure, sizeof out->failure, "%s", gt_err_msg());
    return out->status;
  }

  /* ---- enumerate ---------------------------------------------------------------------- */
  phase(ev, "enumerate", 0, 0);
  gt_cand_list_t list = {0};
  gt_enum_opts_t eo = {.max_candidates = o->max_candidates, .exhaustive = o->exhaustive,
                       .device = o->measure.device};
  size_t ulen = 0;
  for (size_t i = 0; i < gt_provider_count(); i++) {
    const gt_provider_t *prov = gt_provider_at(i);
    if (prov->backend != o->backend) continue;
    if (o->providers && *o->providers && !gt_search_name_in_list(o->providers, prov->name)) continue;
    if (gt_provider_ready(prov) != GT_OK) {
      if (ulen < sizeof out->unavailable)
        ulen += (size_t)snprintf(out->unavailable + ulen, sizeof out->unavailable - ulen,
                                 "%s%s: %s", ulen ? "; " : "", prov->name, gt_err_msg());
      continue;
    }
    gt_err_clear();
    gt_status_t s = prov->enumerate(p, &eo, &list);
    if (s != GT_OK && ulen < sizeof out->unavailable)
      ulen += (size_t)snprintf(out->unavailable + ulen, sizeof out->unavailable - ulen,
                               "%s%s: enumerate failed: %s", ulen ? "; " : "", prov->name,
                               gt_err_msg());
  }
  out->c = calloc(list.n ? list.n : 1, sizeof *out->c);
  if (!out->c) {
    gt_cand_list_free(&list);
    out->status = gt_err_set(GT_ERR_NOMEM, "out of memory");
    return out->status;
  }
  out->n = list.n;
  for (size_t i = 0; i < list.n; i++) {
    gt_cand_result_t *r = &out->c[i];
    r->cand = list.v[i];
    if (r->cand.excluded) {
      r->disp = GT_DISP_EXCLUDED;
      snprintf(r->why, sizeof r->why, "%s", r->cand.reason);
      out->n_excluded++;
    } else if (!r->cand.is_baseline &&
               (o->baseline_only || (o->only && *o->only && strcmp(o->only, r->cand.name)))) {
      r->disp = GT_DISP_EXCLUDED;
      snprintf(r->why, sizeof r->why, "not selected (%s)",
               o->baseline_only ? "baseline only" : "--instance");
      out->n_excluded++;
    } else if (gt_search_name_in_list(o->exclude, r->cand.name)) {
      r->disp = GT_DISP_FAILED_RUN;
      snprintf(r->why, sizeof r->why, "faulted or hung in an earlier attempt; not run again");
    } else {
      r->disp = GT_DISP_PRUNED; /* until it proves otherwise */
      out->n_active++;
      if (r->cand.is_baseline && out->baseline < 0) out->baseline = (int)i;
    }
  }
  gt_cand_list_free(&list);
  if (out->baseline < 0) {
    out->status = gt_err_set(GT_ERR_NOT_FOUND,
                             "no baseline candidate for this problem (the provider that stands "
                             "for today's path is unavailable or excluded it)%s%s",
                             out->unavailable[0] ? ": " : "", out->unavailable);
    snprintf(out->failure, sizeof out->failure, "%s", gt_err_msg());
    return out->status;
  }

  /* ---- open the bench, measure the baseline ---------------------------------------------- */
  struct gt_bench *b = NULL;
  gt_status_t s = h->open(p, &o->measure, &b);
  if (s != GT_OK) {
    out->status = s;
    snprintf(out->failure, sizeof out->failure, "cannot prepare buffers: %s", gt_err_msg());
    return s;
  }
  gt_cand_result_t *base = &out->c[out->baseline];
  struct gt_loaded *bl = NULL;
  phase(ev, "baseline", 0, 1);
  announce(ev, &base->cand);
  s = h->load(b, &base->cand, &bl);
  if (s != GT_OK) {
    fail_run(base, s);
    out->status = s;
    snprintf(out->failure, sizeof out->failure, "baseline %s failed to load: %s",
             base->cand.name, base->why);
    h->close(b);
    return s;
  }
  if (!gate_one(h, b, bl, base)) {
    out->status = GT_ERR_GATE;
    snprintf(out->failure, sizeof out->failure, "baseline %s %s: %s", base->cand.name,
             gt_disp_name(base->disp), base->why);
    h->unload(bl);
    h->close(b);
    return out->status;
  }
  base->timing = timing_of(h, b, bl);
  base->disp = GT_DISP_PASSED;
  double base_quick = 0;
  s = h->time(b, bl, 0, &base_quick); /* sizes the sample (auto launches) */
  if (s != GT_OK) {
    fail_run(base, s);
    out->status = s;
    snprintf(out->failure, sizeof out->failure, "baseline %s failed to time: %s",
             base->cand.name, base->why);
    h->unload(bl);
    h->close(b);
    return s;
  }
  base->prune_us = base_quick;
  out->launches = h->launches ? h->launches(b) : 1;
  /* The quick pass uses a quarter of a careful sample: enough to rank, not to report. */
  int prune_launches = out->launches / 4 > 0 ? out->launches / 4 : 1;
  size_t to_prune = out->n_active - 1;
  /* Load + first (discarded) run + one sample, with a fixed overhead per candidate. */
  double per_cand_s = (2.0 + prune_launches) * base_quick * 1e-6 + (o->backend == GT_BACKEND_CUDA ? 0.004 : 0.0005);
  out->estimate_s = (double)to_prune * per_cand_s;
  if (o->budget_s > 0 && out->estimate_s > o->budget_s) out->estimate_s = o->budget_s;
  if (o->estimate_only) {
    h->unload(bl);
    h->close(b);
    out->elapsed_s = now_s() - t0;
    return GT_OK;
  }

  /* ---- prune: one short sample each, ranking only -------------------------------------- */
  size_t done = 0;
  for (size_t i = 0; i < out->n; i++) {
    gt_cand_result_t *r = &out->c[i];
    if ((int)i == out->baseline || r->disp != GT_DISP_PRUNED) continue;
    if (o->budget_s > 0 && now_s() - t0 > o->budget_s) {
      r->disp = GT_DISP_BUDGET;
      snprintf(r->why, sizeof r->why, "prune pass stopped at --budget %.1f s", o->budget_s);
      continue;
    }
    phase(ev, "prune", ++done, to_prune);
    announce(ev, &r->cand);
    struct gt_loaded *l = NULL;
    gt_err_clear();
    s = h->load(b, &r->cand, &l);
    if (s == GT_OK) s = h->time(b, l, o->profile_all ? 0 : prune_launches, &r->prune_us);
    if (s != GT_OK) fail_run(r, s);
    if (l) h->unload(l);
    if (s == GT_ERR_DEVICE && strncmp(gt_err_msg(), "device fault", 12) == 0) {
      /* A sticky fault poisons this process's context: nothing after it can be trusted. */
      out->status = s;
      snprintf(out->failure, sizeof out->failure, "candidate %s faulted: %s", r->cand.name,
               r->why);
      h->unload(bl);
      h->close(b);
      return s;
    }
  }

  /* ---- finalists: gate, then interleaved re-time against the baseline ------------------- */
  gt_cand_result_t **rank = malloc((out->n + 1) * sizeof *rank);
  struct gt_loaded **loaded = calloc(out->n + 1, sizeof *loaded);
  double *samples = NULL;
  size_t nrank = 0;
  for (size_t i = 0; i < out->n; i++)
    if ((int)i != out->baseline && out->c[i].disp == GT_DISP_PRUNED && out->c[i].prune_us > 0)
      rank[nrank++] = &out->c[i];
  qsort(rank, nrank, sizeof *rank, cmp_prune);
  size_t want = o->profile_all ? nrank : (size_t)(o->finalists > 0 ? o->finalists : 6);
  gt_cand_result_t **fin = malloc((out->n + 1) * sizeof *fin);
  size_t nfin = 0;
  fin[nfin] = base;
  loaded[nfin++] = bl;
  /* Walk the ranking until `want` finalists have passed the gate: a wrong candidate never takes
   * a finalist's place, and it is never timed into the result. */
  size_t passed = 0;
  for (size_t i = 0; i < nrank && passed < want; i++) {
    gt_cand_result_t *r = rank[i];
    phase(ev, "gate", i + 1, nrank);
    announce(ev, &r->cand);
    struct gt_loaded *l = NULL;
    gt_err_clear();
    s = h->load(b, &r->cand, &l);
    if (s != GT_OK) {
      fail_run(r, s);
      continue;
    }
    if (!gate_one(h, b, l, r)) {
      h->unload(l);
      continue;
    }
    r->timing = timing_of(h, b, l);
    r->disp = GT_DISP_PASSED;
    fin[nfin] = r;
    loaded[nfin++] = l;
    passed++;
  }
  /* Settle: a large GEMM drives the GPU into its power limit within milliseconds, and the SM
   * clock it then holds depends on what ran just before (the prune pass heats, a fresh process
   * does not). Running the baseline for a fixed time first makes the race start from the same
   * sustained state in every process, which is what a real workload sees. */
  if (o->settle_s > 0) {
    /* Settle for settle_s, then on while the SM clock is still moving (it falls for a second or
     * two as a cold GPU reaches its power limit), up to 10x settle_s: a process that starts
     * cold and one that has been racing for minutes then both race at the plateau. */
    phase(ev, "settle", 0, 0);
    double ts = now_s(), us;
    int clk[3] = {0, 0, 0}, nclk = 0;
    for (;;) {
      if (h->time(b, bl, 0, &us) != GT_OK) break;
      double el = now_s() - ts;
      gt_telemetry_t t;
      bool have = h->telemetry && h->telemetry(b, &t) == GT_OK && t.valid && t.sm_clock_mhz > 0;
      if (have) {
        clk[0] = clk[1], clk[1] = clk[2], clk[2] = t.sm_clock_mhz;
        nclk++;
      }
      if (el < o->settle_s) continue;
      if (!have || el >= 10 * o->settle_s) break;
      int lo = clk[0], hi = clk[0];
      for (int i = 1; i < 3; i++) lo = clk[i] < lo ? clk[i] : lo, hi = clk[i] > hi ? clk[i] : hi;
      if (nclk >= 3 && hi - lo <= 15) break; /* stable within one or two clock steps */
    }
  }
  int rounds = o->rounds > 0 ? o->rounds : 15;
  out->rounds = rounds;
  samples = calloc((size_t)rounds * nfin, sizeof *samples);
  int *clocks = calloc((size_t)rounds, sizeof *clocks);
  int nclocks = 0;
  bool *dead = calloc(nfin, sizeof *dead);
  for (int rd = 0; rd < rounds; rd++) {
    phase(ev, "race", (size_t)rd + 1, (size_t)rounds);
    for (size_t j = 0; j < nfin; j++) {
      size_t idx = (j + (size_t)rd) % nfin; /* rotate the order every round */
      if (dead[idx]) continue;
      announce(ev, &fin[idx]->cand);
      double us = 0;
      gt_err_clear();
      s = h->time(b, loaded[idx], 0, &us);
      if (s != GT_OK) {
        fail_run(fin[idx], s);
        dead[idx] = true;
        continue;
      }
      samples[idx * (size_t)rounds + (size_t)rd] = us;
    }
    if (h->telemetry) {
      gt_telemetry_t t;
      if (h->telemetry(b, &t) == GT_OK && t.valid) {
        clocks[nclocks++] = t.sm_clock_mhz;
        if (t.throttled) out->throttled = true;
      }
    }
  }
  if (nclocks) {
    double *c = malloc((size_t)nclocks * sizeof *c);
    for (int i = 0; i < nclocks; i++) c[i] = clocks[i];
    out->sm_clock_mhz = (int)lround(gt_stats_median(c, (size_t)nclocks));
    free(c);
  }
  for (size_t j = 0; j < nfin; j++) {
    if (dead[j]) continue;
    gt_stats_summarise(&samples[j * (size_t)rounds], (size_t)rounds, &fin[j]->time);
  }
  for (size_t j = 0; j < nfin; j++) h->unload(loaded[j]);
  h->close(b);

  /* ---- decide --------------------------------------------------------------------------- */
  if (dead[0]) {
    out->status = GT_ERR_DEVICE;
    snprintf(out->failure, sizeof out->failure, "baseline failed while re-timing: %s",
             base->why);
  } else {
    out->noise = base->time.rel_spread;
    int best = out->baseline;
    for (size_t j = 1; j < nfin; j++)
      if (!dead[j] && fin[j]->time.median < out->c[best].time.median)
        best = (int)(fin[j] - out->c);
    out->best = best;
    gt_cand_result_t *w = &out->c[best];
    out->improved = best != out->baseline &&
                    gt_stats_improves(w->time.median, base->time.median, o->min_improvement,
                                      out->noise, &out->threshold);
    if (best == out->baseline)
      gt_stats_improves(base->time.median, base->time.median, o->min_improvement, out->noise,
                        &out->threshold);
    if (out->improved) {
      gt_db_row_t *row = &out->row;
      memset(row, 0, sizeof *row);
      row->key = *p;
      snprintf(row->provider, sizeof row->provider, "%s", w->cand.provider->name);
      const char *lib = w->cand.provider->lib_version ? w->cand.provider->lib_version() : NULL;
      snprintf(row->lib, sizeof row->lib, "%s", lib && *lib ? lib : "-");
      snprintf(row->instance, sizeof row->instance, "%s", w->cand.name);
      row->time_us = w->time.median;
      row->baseline_us = base->time.median;
      row->speedup = base->time.median / w->time.median;
      row->error = w->gate.error;
      row->error_bound = w->gate.bound;
      snprintf(row->timing, sizeof row->timing, "%s-%s", o->measure.warm ? "warm" : "cold",
               w->timing ? w->timing : "host");
      row->rounds = rounds;
      row->spread_pct = 100.0 * w->time.rel_spread;
      row->sm_clock_mhz = out->sm_clock_mhz;
      row->throttled = out->throttled;
      for (size_t i = 0; i < out->n; i++)
        if (out->c[i].cand.splitk) row->splitk_searched = true;
      snprintf(row->baseline, sizeof row->baseline, "%s", base->cand.name);
    }
  }
  free(samples);
  free(clocks);
  free(dead);
  free(rank);
  free(fin);
  free(loaded);
  out->elapsed_s = now_s() - t0;
  return out->status;
}
