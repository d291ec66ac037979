/* The search driver (see gt_search.h). */
#define _GNU_SOURCE
#include "gt_search.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/gt_hindex.h"

static const char *const k_disp[GT_DISP__COUNT] = {
    [GT_DISP_PASSED] = "passed",       [GT_DISP_FAILED_GATE] = "failed-gate",
    [GT_DISP_FAILED_RUN] = "failed-run", [GT_DISP_EXCLUDED] = "excluded",
    [GT_DISP_PRUNED] = "pruned",       [GT_DISP_BUDGET] = "not-reached",
    [GT_DISP_UNSEARCHED] = "not-searched",
};

const char *gt_disp_name(gt_disp_t d) { return (unsigned)d < GT_DISP__COUNT ? k_disp[d] : "?"; }

static const char *const k_stop[GT_STOP__COUNT] = {
    [GT_STOP_NONE] = "-",          [GT_STOP_QUICK] = "quick space",
    [GT_STOP_FULL] = "full space", [GT_STOP_FLOOR] = "floor",
    [GT_STOP_NO_GAIN] = "no-gain", [GT_STOP_EXHAUSTED] = "space exhausted",
    [GT_STOP_BUDGET] = "budget",
};

const char *gt_stop_name(gt_stop_t s) { return (unsigned)s < GT_STOP__COUNT ? k_stop[s] : "?"; }

static const char *const k_modes[] = {[GT_SEARCH_FLOOR] = "floor", [GT_SEARCH_QUICK] = "quick",
                                      [GT_SEARCH_FULL] = "full"};

const char *gt_search_mode_name(gt_search_mode_t m) {
  return (unsigned)m < sizeof k_modes / sizeof k_modes[0] ? k_modes[m] : "?";
}

bool gt_search_mode_parse(const char *s, gt_search_mode_t *out) {
  for (size_t m = 0; m < sizeof k_modes / sizeof k_modes[0]; m++)
    if (s && strcmp(s, k_modes[m]) == 0) return *out = (gt_search_mode_t)m, true;
  return false;
}

void gt_search_opts_init(gt_search_opts_t *o, gt_backend_t backend) {
  memset(o, 0, sizeof *o);
  gt_measure_opts_init(&o->measure);
  o->backend = backend;
  o->min_improvement = 0.03;
  o->finalists = 6;
  o->rounds = 15;
  o->settle_s = backend == GT_BACKEND_CUDA ? 0.3 : 0.0;
  o->entry = GT_ENTRY_DEFAULT;
  o->prune_fraction = 0.25;
  o->mode = GT_SEARCH_FLOOR;
  /* Floors use datasheet rates, which no kernel sustains (on the H200 the best streams reach
   * 92-96% of 4.8 TB/s): within 10% is at the ceiling. */
  o->floor_threshold = 0.10;
  o->widen_gain = 0.02;
  o->widen_patience = 3;
  o->widen_step = 32;
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

/* One search in progress: what each phase reads and what it leaves for the next. */
typedef struct search {
  const gt_problem_t *p;
  const gt_search_opts_t *o;
  const gt_search_events_t *ev;
  gt_search_result_t *out;
  const gt_harness_ops_t *h;
  double t0;
  /* The provider that stands for today's path (gt_provider_baseline), or NULL with why. */
  const gt_provider_t *base_prov;
  char base_why[256];
  /* What became of the baseline provider at enumeration, for the no-baseline message. */
  bool base_listed;       /* it took part (in --providers, ready) */
  char base_enum_err[256]; /* its enumerate() failed: the message */
  struct gt_bench *b;
  int quick_launches; /* launches per quick-pass sample (and the estimate's) */
  bool quick_full;    /* a quick sample is a careful one (prune_fraction >= 1) */
  size_t to_prune;
  bool budget_hit;    /* --budget ended a pass: a candidate was marked not reached */
  /* The race: fin[0] is the baseline; loaded[j] is fin[j] loaded into b; dead[j] when it failed
   * while re-timing. */
  gt_cand_result_t **fin;
  struct gt_loaded **loaded;
  bool *dead;
  size_t nfin, fin_cap;
} search_t;

/* The shape could not be searched: say why in out->failure (and return s). */
static gt_status_t shape_failed(search_t *S, gt_status_t s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gt_status_t shape_failed(search_t *S, gt_status_t s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(S->out->failure, sizeof S->out->failure, fmt, ap);
  va_end(ap);
  S->out->status = s;
  return s;
}

/* Whether candidate c is the baseline: marked so by the provider that stands for today's path
 * (another provider's is_baseline candidate is raced like any other). */
static bool is_base(const search_t *S, const gt_candidate_t *c) {
  return c->is_baseline && S->base_prov && c->provider == S->base_prov;
}

static void note_unavailable(search_t *S, size_t *ulen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note_unavailable(search_t *S, size_t *ulen, const char *fmt, ...) {
  gt_search_result_t *out = S->out;
  if (*ulen >= sizeof out->unavailable) return;
  if (*ulen) *ulen += (size_t)snprintf(out->unavailable + *ulen, sizeof out->unavailable - *ulen, "; ");
  if (*ulen >= sizeof out->unavailable) return;
  va_list ap;
  va_start(ap, fmt);
  *ulen += (size_t)vsnprintf(out->unavailable + *ulen, sizeof out->unavailable - *ulen, fmt, ap);
  va_end(ap);
}

/* ---- enumerate: every selected, ready provider of the backend lists its candidates ---------- */
/* Whether the search runs over the full space from the start (one pass, no widening). */
static bool full_space(const gt_search_opts_t *o) {
  return o->exhaustive || o->mode == GT_SEARCH_FULL;
}

/* Every selected, ready provider's candidates for the problem into list, from its full space when
 * `exhaustive`. With `notes` (the first listing) the providers that are not ready, or fail to
 * enumerate, are noted in out->unavailable, and the baseline provider's part in it recorded. */
static void list_providers(search_t *S, gt_cand_list_t *list, bool exhaustive, bool notes) {
  const gt_search_opts_t *o = S->o;
  gt_enum_opts_t eo = {.max_candidates = o->max_candidates, .exhaustive = exhaustive,
                       .device = o->measure.device, .entry = o->entry,
                       .workspace = o->workspace};
  size_t ulen = 0;
  for (size_t i = 0; i < gt_provider_count(); i++) {
    const gt_provider_t *prov = gt_provider_at(i);
    if (prov->backend != o->backend) continue;
    if (o->providers && *o->providers && !gt_search_name_in_list(o->providers, prov->name)) continue;
    if (gt_provider_ready(prov) != GT_OK) {
      if (notes) note_unavailable(S, &ulen, "%s: %s", prov->name, gt_err_msg());
      continue;
    }
    if (notes && prov == S->base_prov) S->base_listed = true;
    gt_err_clear();
    gt_status_t s = prov->enumerate(S->p, &eo, list);
    if (s != GT_OK && notes) {
      if (prov == S->base_prov)
        snprintf(S->base_enum_err, sizeof S->base_enum_err, "%s", gt_err_msg());
      note_unavailable(S, &ulen, "%s: enumerate failed: %s", prov->name, gt_err_msg());
    }
  }
}

static void interleave_providers(gt_cand_list_t *list);

static gt_status_t enumerate(search_t *S, gt_cand_list_t *list) {
  const gt_search_opts_t *o = S->o;
  phase(S->ev, "enumerate", 0, 0);
  S->base_prov =
      gt_provider_baseline(o->backend, o->entry, S->p, S->base_why, sizeof S->base_why);
  list_providers(S, list, full_space(o), true);
  /* One pass over the full space is pruned in list order, and --budget ends it wherever it has
   * got to: in provider order a budget would spend itself on the first provider's thousands of
   * configurations and never reach the others. Interleaved as the widenings are, any prefix
   * samples every provider in proportion to its size. */
  if (full_space(o)) interleave_providers(list);
  S->out->c = calloc(list->n ? list->n : 1, sizeof *S->out->c);
  if (!S->out->c) {
    gt_cand_list_free(list);
    return S->out->status = gt_err_set(GT_ERR_NOMEM, "out of memory");
  }
  return GT_OK;
}

/* Give each listed candidate its starting disposition and find the baseline among them. */
static void classify(search_t *S, gt_cand_list_t *list) {
  const gt_search_opts_t *o = S->o;
  gt_search_result_t *out = S->out;
  out->n = list->n;
  for (size_t i = 0; i < list->n; i++) {
    gt_cand_result_t *r = &out->c[i];
    r->cand = list->v[i];
    if (r->cand.excluded) {
      r->disp = GT_DISP_EXCLUDED;
      snprintf(r->why, sizeof r->why, "%s", r->cand.reason);
      out->n_excluded++;
    } else if (!is_base(S, &r->cand) &&
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
      if (is_base(S, &r->cand) && out->baseline < 0) out->baseline = (int)i;
    }
  }
  gt_cand_list_free(list);
}

/* There is no baseline to race against: say why, in the baseline provider's own words. */
static gt_status_t no_baseline(search_t *S) {
  const char *pre = "no baseline candidate for this problem";
  if (!S->base_prov) return gt_err_set(GT_ERR_NOT_FOUND, "%s: %s", pre, S->base_why);
  char who[160];
  snprintf(who, sizeof who, "%s (today's path for %s calls)", S->base_prov->name,
           gt_entry_name(S->o->entry));
  if (!S->base_listed)
    return gt_err_set(GT_ERR_NOT_FOUND, "%s: %s is not among --providers %s", pre, who,
                      S->o->providers);
  if (S->base_enum_err[0])
    return gt_err_set(GT_ERR_NOT_FOUND, "%s: %s could not list its candidates: %s", pre, who,
                      S->base_enum_err);
  /* The provider's own reason: its baseline candidate's exclusion, else its first one's. */
  const gt_cand_result_t *ex = NULL, *faulted = NULL;
  for (size_t i = 0; i < S->out->n; i++) {
    const gt_cand_result_t *r = &S->out->c[i];
    if (r->cand.provider != S->base_prov) continue;
    if (r->cand.is_baseline && r->disp == GT_DISP_FAILED_RUN && !faulted) faulted = r;
    if (r->disp == GT_DISP_EXCLUDED && r->cand.excluded &&
        (!ex || (r->cand.is_baseline && !ex->cand.is_baseline)))
      ex = r;
  }
  if (faulted)
    return gt_err_set(GT_ERR_NOT_FOUND, "%s: %s, from %s, %s", pre, faulted->cand.name, who,
                      faulted->why);
  if (ex)
    return gt_err_set(GT_ERR_NOT_FOUND, "%s: %s excludes %s: %s", pre, who, ex->cand.name,
                      ex->cand.reason);
  return gt_err_set(GT_ERR_NOT_FOUND, "%s: %s lists no baseline candidate for it", pre, who);
}

/* ---- baseline: open the bench, load, gate and time today's path ---------------------------- */
static gt_status_t measure_baseline(search_t *S) {
  const gt_harness_ops_t *h = S->h;
  gt_search_result_t *out = S->out;
  gt_status_t s = h->open(S->p, &S->o->measure, &S->b);
  if (s != GT_OK) {
    S->b = NULL;
    return shape_failed(S, s, "cannot prepare buffers: %s", gt_err_msg());
  }
  gt_cand_result_t *base = &out->c[out->baseline];
  struct gt_loaded *bl = NULL;
  phase(S->ev, "baseline", 0, 1);
  announce(S->ev, &base->cand);
  s = h->load(S->b, &base->cand, &bl);
  if (s != GT_OK) {
    fail_run(base, s);
    return shape_failed(S, s, "baseline %s failed to load: %s", base->cand.name, base->why);
  }
  S->fin[0] = base;
  S->loaded[0] = bl;
  S->nfin = 1;
  /* An estimate needs the baseline's time, not its answer: the fp64 reference of a large GEMM
   * takes longer than the estimate itself. */
  if (!S->o->estimate_only && !gate_one(h, S->b, bl, base))
    return shape_failed(S, GT_ERR_GATE, "baseline %s %s: %s", base->cand.name,
                        gt_disp_name(base->disp), base->why);
  base->timing = timing_of(h, S->b, bl);
  base->disp = GT_DISP_PASSED;
  double base_quick = 0;
  s = h->time(S->b, bl, 0, &base_quick); /* sizes the sample (auto launches) */
  if (s != GT_OK) {
    fail_run(base, s);
    return shape_failed(S, s, "baseline %s failed to time: %s", base->cand.name, base->why);
  }
  base->prune_us = base_quick;
  out->launches = h->launches ? h->launches(S->b) : 1;
  /* A quick sample is a fraction of a careful one (a quarter by default): enough to rank, not
   * to report. */
  double share = S->o->prune_fraction > 0 ? S->o->prune_fraction : 0.25;
  S->quick_full = share >= 1;
  int quick = S->quick_full ? out->launches : (int)(out->launches * share);
  S->quick_launches = quick > 0 ? quick : 1;
  S->to_prune = out->n_active - 1;
  /* Load + first (discarded) run + one sample, with a fixed overhead per candidate. */
  double per_cand_s = (2.0 + S->quick_launches) * base_quick * 1e-6 +
                      (S->o->backend == GT_BACKEND_CUDA ? 0.004 : 0.0005);
  out->estimate_s = (double)S->to_prune * per_cand_s;
  if (S->o->budget_s > 0 && out->estimate_s > S->o->budget_s) out->estimate_s = S->o->budget_s;
  return GT_OK;
}

/* ---- prune: one short sample each, ranking only --------------------------------------------- */
/* Whether --budget is spent: the candidate is then marked not reached. The budget counts from the
 * start of the search (enumeration and the baseline included), so a shape never spends more than
 * it before the gate. */
static bool budget_spent(search_t *S, gt_cand_result_t *r) {
  const double budget = S->o->budget_s;
  if (budget <= 0 || now_s() - S->t0 <= budget) return false;
  r->disp = GT_DISP_BUDGET;
  snprintf(r->why, sizeof r->why, "prune pass stopped at --budget %.1f s", budget);
  S->budget_hit = true;
  return true;
}

/* The quick pass over candidates [from, to) still to be ranked (disposition pruned), reported as
 * phase `name` with `total` of them. */
static gt_status_t prune_range(search_t *S, size_t from, size_t to, const char *name,
                               size_t total) {
  const gt_search_opts_t *o = S->o;
  const gt_harness_ops_t *h = S->h;
  gt_search_result_t *out = S->out;
  /* profile times every candidate with a careful sample (it reports them all); 0 = that. */
  int launches = o->profile_all || S->quick_full ? 0 : S->quick_launches;
  /* The budget is checked before each candidate, again once it is loaded (loading compiles or
   * checks a configuration, the dearest step on a GPU), and it sizes each quick sample: at the
   * baseline's speed a sample never runs past the budget's end. */
  const gt_cand_result_t *base = &out->c[out->baseline];
  const double base_s = base->prune_us > 0 ? base->prune_us * 1e-6 : 0;
  size_t done = 0;
  for (size_t i = from; i < to; i++) {
    gt_cand_result_t *r = &out->c[i];
    if ((int)i == out->baseline || r->disp != GT_DISP_PRUNED) continue;
    if (budget_spent(S, r)) continue;
    phase(S->ev, name, ++done, total);
    announce(S->ev, &r->cand);
    struct gt_loaded *l = NULL;
    gt_err_clear();
    gt_status_t s = h->load(S->b, &r->cand, &l);
    if (s == GT_OK && budget_spent(S, r)) {
      h->unload(l);
      continue;
    }
    int n = launches;
    if (s == GT_OK && o->budget_s > 0 && base_s > 0 && n > 1) {
      double left = o->budget_s - (now_s() - S->t0);
      if (left < n * base_s) n = left > base_s ? (int)(left / base_s) : 1;
    }
    if (s == GT_OK) s = h->time(S->b, l, n, &r->prune_us);
    if (s != GT_OK) fail_run(r, s);
    if (l) h->unload(l);
    /* A sticky fault poisons this process's context: nothing after it can be trusted. */
    if (s == GT_ERR_DEVICE && strncmp(gt_err_msg(), "device fault", 12) == 0)
      return shape_failed(S, s, "candidate %s faulted: %s", r->cand.name, r->why);
  }
  return GT_OK;
}

/* ---- the budget: how far past the quick pass a shape's search goes ---------------------------- */
/* The best quick-pass time of everything ranked so far, the baseline's included (0: none). */
static double best_quick(const search_t *S) {
  double best = 0;
  for (size_t i = 0; i < S->out->n; i++) {
    const double us = S->out->c[i].prune_us;
    if (us > 0 && (best == 0 || us < best)) best = us;
  }
  return best;
}

static void set_stop(search_t *S, gt_stop_t stop, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_stop(search_t *S, gt_stop_t stop, const char *fmt, ...) {
  S->out->stop = stop;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(S->out->stop_why, sizeof S->out->stop_why, fmt, ap);
  va_end(ap);
}

/* The floor rule: the baseline is within floor_threshold of the floor, so no candidate can gain
 * what a wider search would cost. Stops the search (and says so) when it holds. Only the
 * baseline's time is trusted here: it passed the gate, while a quick time below the floor is
 * more often a wrong candidate (one that skips work) than a fast one. */
static bool at_floor(search_t *S) {
  const gt_search_result_t *out = S->out;
  const double thr = S->o->floor_threshold;
  const double share = gt_floor_share(&out->floor, out->c[out->baseline].prune_us);
  if (thr < 0 || share <= 0 || share < 1 - thr) return false;
  set_stop(S, GT_STOP_FLOOR, "baseline at %.0f%% of the %s floor (%.4g us; the rule: within "
           "%.0f%%)", 100 * share, gt_bound_name(out->floor.bound), out->floor.us, 100 * thr);
  return true;
}

typedef struct name_set {
  const gt_search_result_t *out;
  const char *name;
} name_set_t;

static bool same_name(void *ctx, size_t i) {
  const name_set_t *q = ctx;
  return strcmp(q->out->c[i].cand.name, q->name) == 0;
}

static uint64_t name_hash(const char *name) { return gt_hindex_hash_bytes(name, strlen(name)); }

/* The order in which the full space is widened into: each provider keeps its own order (a
 * provider lists its full space so that any prefix samples it evenly), and the providers are
 * interleaved by relative position, so every widening takes from each in proportion to its
 * size. key[i] is candidate i's position within its provider, as a fraction. */
typedef struct pool_item {
  double key;
  size_t idx;
} pool_item_t;

static int cmp_pool(const void *a, const void *b) {
  const pool_item_t *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

enum { POOL_MAX_PROVIDERS = 64 };

/* The slot of provider p among the *np seen so far (added when new; the last slot when full). */
static size_t provider_slot(const gt_provider_t **seen, size_t *np, const gt_provider_t *p) {
  size_t i = 0;
  while (i < *np && seen[i] != p) i++;
  if (i == *np && *np < POOL_MAX_PROVIDERS) seen[(*np)++] = p;
  return i < POOL_MAX_PROVIDERS ? i : POOL_MAX_PROVIDERS - 1;
}

static void pool_order(const gt_cand_list_t *l, const bool *take, pool_item_t *items, size_t *n) {
  const gt_provider_t *seen[POOL_MAX_PROVIDERS];
  size_t count[POOL_MAX_PROVIDERS] = {0}, rank[POOL_MAX_PROVIDERS] = {0}, np = 0;
  for (size_t i = 0; i < l->n; i++)
    if (take[i]) count[provider_slot(seen, &np, l->v[i].provider)]++;
  *n = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (!take[i]) continue;
    const size_t k = provider_slot(seen, &np, l->v[i].provider);
    items[(*n)++] = (pool_item_t){((double)rank[k]++ + 0.5) / (double)count[k], i};
  }
  qsort(items, *n, sizeof *items, cmp_pool);
}

/* Reorder list into pool order (each provider's own order kept, providers interleaved). On
 * allocation failure the list keeps its order: only the budget's sampling is affected. */
static void interleave_providers(gt_cand_list_t *list) {
  if (list->n < 2) return;
  bool *take = malloc(list->n * sizeof *take);
  pool_item_t *items = malloc(list->n * sizeof *items);
  gt_candidate_t *v = malloc(list->n * sizeof *v);
  if (take && items && v) {
    for (size_t i = 0; i < list->n; i++) take[i] = true;
    size_t n;
    pool_order(list, take, items, &n);
    for (size_t k = 0; k < n; k++) v[k] = list->v[items[k].idx];
    memcpy(list->v, v, n * sizeof *v);
  }
  free(take);
  free(items);
  free(v);
}

/* Append the full space's candidates the quick pass did not list, in widening order, as not
 * searched (yet). Candidates a provider excludes there are counted, not kept: the quick space
 * already explains its own, and the full space of a library holds tens of thousands. */
static gt_status_t add_full_space(search_t *S) {
  gt_search_result_t *out = S->out;
  gt_cand_list_t list = {0};
  phase(S->ev, "enumerate full space", 0, 0);
  list_providers(S, &list, true, false);
  gt_hindex_t seen = {0};
  gt_status_t s = GT_OK;
  for (size_t i = 0; i < out->n && s == GT_OK; i++)
    s = gt_hindex_add(&seen, name_hash(out->c[i].cand.name), i);
  bool *take = calloc(list.n + 1, sizeof *take);
  pool_item_t *items = calloc(list.n + 1, sizeof *items);
  size_t add = 0;
  for (size_t i = 0; i < list.n && s == GT_OK && take; i++) {
    name_set_t q = {out, list.v[i].name};
    if (gt_hindex_find(&seen, name_hash(list.v[i].name), same_name, &q) >= 0) continue;
    if (list.v[i].excluded) out->n_excluded++;
    else take[i] = true, add++;
  }
  gt_cand_result_t *c = NULL;
  if (s == GT_OK && (!take || !items || !(c = realloc(out->c, (out->n + add + 1) * sizeof *c))))
    s = gt_err_set(GT_ERR_NOMEM, "out of memory");
  if (s == GT_OK) {
    out->c = c;
    S->fin[0] = &out->c[out->baseline]; /* the race so far holds the baseline alone */
    size_t npool;
    pool_order(&list, take, items, &npool);
    for (size_t k = 0; k < npool; k++) {
      gt_cand_result_t *r = &out->c[out->n++];
      memset(r, 0, sizeof *r);
      r->cand = list.v[items[k].idx];
      r->disp = GT_DISP_UNSEARCHED;
      /* One that killed an earlier worker of this shape is not run again (classify's rule). */
      if (gt_search_name_in_list(S->o->exclude, r->cand.name)) {
        r->disp = GT_DISP_FAILED_RUN;
        snprintf(r->why, sizeof r->why, "faulted or hung in an earlier attempt; not run again");
      }
    }
  }
  free(take);
  free(items);
  gt_hindex_free(&seen);
  gt_cand_list_free(&list);
  return s == GT_OK ? GT_OK : shape_failed(S, s, "full space: %s", gt_err_msg());
}

/* Widening w: the next widen_step x 2^(w-1) candidates of the full space, from index *next, made
 * rankable and raced in the quick pass. Returns how many it raced. */
static size_t widen_step(search_t *S, int w, size_t *next, gt_status_t *st) {
  gt_search_result_t *out = S->out;
  const size_t step = S->o->widen_step > 0 ? (size_t)S->o->widen_step : 32;
  size_t want = w - 1 < 40 ? step << (w - 1) : (size_t)-1 / 2;
  size_t from = *next, took = 0;
  while (*next < out->n && took < want) {
    gt_cand_result_t *r = &out->c[(*next)++];
    if (r->disp != GT_DISP_UNSEARCHED) continue;
    r->disp = GT_DISP_PRUNED;
    out->n_active++;
    took++;
  }
  char name[32];
  snprintf(name, sizeof name, "widen %d", w);
  *st = prune_range(S, from, *next, name, took);
  return took;
}

/* Widen into the full space until a rule stops the search; the candidates no widening reached
 * stay not searched, with the rule that stopped it. */
static gt_status_t widen(search_t *S) {
  const gt_search_opts_t *o = S->o;
  gt_search_result_t *out = S->out;
  size_t next = out->n;
  gt_status_t s = add_full_space(S);
  if (s != GT_OK) return s;
  const int patience = o->widen_patience > 0 ? o->widen_patience : 3;
  int nogain = 0;
  char gains[128] = "";
  for (int w = 1;; w++) {
    if (next >= out->n) {
      if (out->widenings == 0)
        set_stop(S, GT_STOP_EXHAUSTED, "the full space holds nothing the quick pass did not race");
      else
        set_stop(S, GT_STOP_EXHAUSTED, "all %zu candidates of the full space beyond the quick "
                 "pass raced in %d widenings", out->n_widened, out->widenings);
      break;
    }
    const double before = out->best_quick_us;
    const size_t took = widen_step(S, w, &next, &s);
    if (s != GT_OK) return s;
    if (took == 0) continue; /* only faulted ones were left: the loop ends at the space's end */
    out->n_widened += took;
    out->widenings = w;
    out->best_quick_us = best_quick(S);
    const double gain = before > 0 && out->best_quick_us > 0 ? before / out->best_quick_us - 1 : 0;
    if (gain >= o->widen_gain) {
      nogain = 0, gains[0] = '\0';
    } else {
      nogain++;
      size_t gl = strlen(gains);
      snprintf(gains + gl, sizeof gains - gl, "%s%.1f%%", gl ? ", " : "", 100 * gain);
    }
    if (S->budget_hit) {
      set_stop(S, GT_STOP_BUDGET, "--budget %.1f s spent in widening %d", o->budget_s, w);
      break;
    }
    if (nogain >= patience) {
      set_stop(S, GT_STOP_NO_GAIN, "%d widenings in a row gained under %.0f%% (%s)", patience,
               100 * o->widen_gain, gains);
      break;
    }
  }
  for (size_t i = next; i < out->n; i++)
    if (out->c[i].disp == GT_DISP_UNSEARCHED) {
      out->n_unsearched++;
      snprintf(out->c[i].why, sizeof out->c[i].why, "the search stopped (%s) after widening %d",
               gt_stop_name(out->stop), out->widenings);
    }
  return GT_OK;
}

/* After the quick pass: one pass was asked for, --budget is spent, the floor rule holds, or the
 * search widens. Sets out->stop. */
static gt_status_t search_budget(search_t *S) {
  const gt_search_opts_t *o = S->o;
  gt_search_result_t *out = S->out;
  out->best_quick_us = best_quick(S);
  const bool one_pass = o->profile_all || o->baseline_only || (o->only && *o->only) ||
                        full_space(o) || o->mode != GT_SEARCH_FLOOR;
  if (S->budget_hit) {
    set_stop(S, GT_STOP_BUDGET, "--budget %.1f s spent in the quick pass", o->budget_s);
    return GT_OK;
  }
  if (one_pass) {
    if (full_space(o)) set_stop(S, GT_STOP_FULL, "the full space, in one pass");
    else set_stop(S, GT_STOP_QUICK, "the default space, in one pass");
    return GT_OK;
  }
  if (at_floor(S)) return GT_OK;
  return widen(S);
}

/* Why each candidate the quick pass ranked out was cut: its quick time against the best one
 * (named: it may be one the gate rejected later). */
static void note_prune_reasons(search_t *S) {
  gt_search_result_t *out = S->out;
  const gt_cand_result_t *best = NULL;
  for (size_t i = 0; i < out->n; i++)
    if (out->c[i].prune_us > 0 && (!best || out->c[i].prune_us < best->prune_us)) best = &out->c[i];
  if (!best) return;
  for (size_t i = 0; i < out->n; i++) {
    gt_cand_result_t *r = &out->c[i];
    if ((int)i == out->baseline || r->disp != GT_DISP_PRUNED || r->prune_us <= 0 || r->why[0])
      continue;
    snprintf(r->why, sizeof r->why, "%.2fx the best quick time (%.3f us vs %.3f us, %.80s)%s",
             r->prune_us / best->prune_us, r->prune_us, best->prune_us, best->cand.name,
             r->gated && r->gate.passed ? "; passed the gate, behind the finalists" : "");
  }
}

/* ---- gate finalists: walk the ranking until `finalists` have passed the gate ---------------- */
static void gate_finalists(search_t *S) {
  const gt_search_opts_t *o = S->o;
  const gt_harness_ops_t *h = S->h;
  gt_search_result_t *out = S->out;
  gt_cand_result_t **rank = malloc((out->n + 1) * sizeof *rank);
  if (!rank) return; /* the race goes on with the baseline alone */
  size_t nrank = 0;
  for (size_t i = 0; i < out->n; i++)
    if ((int)i != out->baseline && out->c[i].disp == GT_DISP_PRUNED && out->c[i].prune_us > 0)
      rank[nrank++] = &out->c[i];
  qsort(rank, nrank, sizeof *rank, cmp_prune);
  size_t want = o->profile_all ? nrank : (size_t)(o->finalists > 0 ? o->finalists : 6);
  /* A wrong candidate never takes a finalist's place, and it is never timed into the result.
   * With gate_all the walk goes on past the finalists, so every ranked candidate has a verdict
   * (those past the finalists stay "pruned", with their gate result). */
  size_t passed = 0;
  for (size_t i = 0; i < nrank && (passed < want || o->gate_all); i++) {
    gt_cand_result_t *r = rank[i];
    phase(S->ev, "gate", i + 1, nrank);
    announce(S->ev, &r->cand);
    struct gt_loaded *l = NULL;
    gt_err_clear();
    gt_status_t s = h->load(S->b, &r->cand, &l);
    if (s != GT_OK) {
      fail_run(r, s);
      continue;
    }
    if (!gate_one(h, S->b, l, r) || passed >= want) {
      h->unload(l);
      continue;
    }
    r->timing = timing_of(h, S->b, l);
    r->disp = GT_DISP_PASSED;
    S->fin[S->nfin] = r;
    S->loaded[S->nfin++] = l;
    passed++;
  }
  free(rank);
}

/* ---- settle: bring the GPU to the clock a sustained workload holds -------------------------- */
/* A large GEMM drives the GPU into its power limit within milliseconds, and the SM clock it then
 * holds depends on what ran just before (the prune pass heats, a fresh process does not).
 * Running the baseline for settle_s, then on while the SM clock is still moving (it falls for a
 * second or two as a cold GPU reaches its power limit), up to 10x settle_s, makes the race start
 * from the same plateau in every process, which is what a real workload sees. */
static void settle(search_t *S) {
  const gt_harness_ops_t *h = S->h;
  double settle_s = S->o->settle_s;
  if (settle_s <= 0) return;
  phase(S->ev, "settle", 0, 0);
  double ts = now_s(), us;
  int clk[3] = {0, 0, 0}, nclk = 0;
  for (;;) {
    if (h->time(S->b, S->loaded[0], 0, &us) != GT_OK) break;
    double el = now_s() - ts;
    gt_telemetry_t t;
    bool have = h->telemetry && h->telemetry(S->b, &t) == GT_OK && t.valid && t.sm_clock_mhz > 0;
    if (have) {
      clk[0] = clk[1], clk[1] = clk[2], clk[2] = t.sm_clock_mhz;
      nclk++;
    }
    if (el < settle_s) continue;
    if (!have || el >= 10 * settle_s) break;
    int lo = clk[0], hi = clk[0];
    for (int i = 1; i < 3; i++) lo = clk[i] < lo ? clk[i] : lo, hi = clk[i] > hi ? clk[i] : hi;
    if (nclk >= 3 && hi - lo <= 15) break; /* stable within one or two clock steps */
  }
}

/* ---- race: the baseline and the finalists re-timed in interleaved rounds -------------------- */
static gt_status_t race(search_t *S) {
  const gt_harness_ops_t *h = S->h;
  gt_search_result_t *out = S->out;
  int rounds = S->o->rounds > 0 ? S->o->rounds : 15;
  size_t nfin = S->nfin;
  out->rounds = rounds;
  double *samples = calloc((size_t)rounds * nfin, sizeof *samples);
  double *clocks = calloc((size_t)rounds, sizeof *clocks);
  if (!samples || !clocks) {
    free(samples);
    free(clocks);
    return shape_failed(S, gt_err_set(GT_ERR_NOMEM, "out of memory"), "out of memory");
  }
  size_t nclocks = 0;
  for (int rd = 0; rd < rounds; rd++) {
    phase(S->ev, "race", (size_t)rd + 1, (size_t)rounds);
    for (size_t j = 0; j < nfin; j++) {
      size_t idx = (j + (size_t)rd) % nfin; /* rotate the order every round */
      if (S->dead[idx]) continue;
      announce(S->ev, &S->fin[idx]->cand);
      double us = 0;
      gt_err_clear();
      gt_status_t s = h->time(S->b, S->loaded[idx], 0, &us);
      if (s != GT_OK) {
        fail_run(S->fin[idx], s);
        S->dead[idx] = true;
        continue;
      }
      samples[idx * (size_t)rounds + (size_t)rd] = us;
    }
    gt_telemetry_t t;
    if (h->telemetry && h->telemetry(S->b, &t) == GT_OK && t.valid) {
      clocks[nclocks++] = t.sm_clock_mhz;
      if (t.throttled) out->throttled = true;
    }
  }
  if (nclocks) out->sm_clock_mhz = (int)lround(gt_stats_median(clocks, nclocks));
  for (size_t j = 0; j < nfin; j++)
    if (!S->dead[j]) gt_stats_summarise(&samples[j * (size_t)rounds], (size_t)rounds, &S->fin[j]->time);
  free(samples);
  free(clocks);
  return GT_OK;
}

/* ---- decide: the fastest finalist, and whether it beats the baseline by the threshold ------- */
static void fill_row(search_t *S, const gt_cand_result_t *w) {
  const gt_cand_result_t *base = S->fin[0];
  gt_search_result_t *out = S->out;
  gt_db_row_t *row = &out->row;
  memset(row, 0, sizeof *row);
  row->key = *S->p;
  snprintf(row->provider, sizeof row->provider, "%s", w->cand.provider->name);
  const char *lib = w->cand.provider->lib_version ? w->cand.provider->lib_version() : NULL;
  snprintf(row->lib, sizeof row->lib, "%s", lib && *lib ? lib : "-");
  snprintf(row->instance, sizeof row->instance, "%s", w->cand.name);
  row->time_us = w->time.median;
  row->baseline_us = base->time.median;
  row->speedup = base->time.median / w->time.median;
  row->error = w->gate.error;
  row->error_bound = w->gate.bound;
  snprintf(row->timing, sizeof row->timing, "%s-%s", S->o->measure.warm ? "warm" : "cold",
           w->timing ? w->timing : "host");
  row->rounds = out->rounds;
  row->spread_pct = 100.0 * w->time.rel_spread;
  row->sm_clock_mhz = out->sm_clock_mhz;
  row->throttled = out->throttled;
  for (size_t i = 0; i < out->n; i++)
    if (out->c[i].cand.splitk) row->splitk_searched = true;
  snprintf(row->baseline, sizeof row->baseline, "%s", base->cand.name);
  if (out->floor.us > 0) {
    row->floor_us = out->floor.us;
    row->floor_bound = out->floor.bound;
    row->floor_pct = 100 * out->floor.us / w->time.median;
  }
}

static gt_status_t decide(search_t *S) {
  gt_search_result_t *out = S->out;
  const gt_cand_result_t *base = S->fin[0];
  if (S->dead[0])
    return shape_failed(S, GT_ERR_DEVICE, "baseline failed while re-timing: %s", base->why);
  out->noise = base->time.rel_spread;
  int best = out->baseline;
  for (size_t j = 1; j < S->nfin; j++)
    if (!S->dead[j] && S->fin[j]->time.median < out->c[best].time.median)
      best = (int)(S->fin[j] - out->c);
  out->best = best;
  const gt_cand_result_t *w = &out->c[best];
  /* The threshold is reported even when the baseline won, so a caller can say what it took. */
  bool beats = gt_stats_improves(w->time.median, base->time.median, S->o->min_improvement,
                                 out->noise, &out->threshold);
  out->improved = best != out->baseline && beats;
  if (out->improved) fill_row(S, w);
  return GT_OK;
}

/* Unload whatever is still loaded and close the bench (the finalists stay listed in fin). */
static void release(search_t *S) {
  for (size_t j = 0; j < S->nfin; j++) {
    if (S->loaded[j]) S->h->unload(S->loaded[j]);
    S->loaded[j] = NULL;
  }
  if (S->b) S->h->close(S->b);
  S->b = NULL;
}

/* The phases after enumeration, in order; each returns an error when the shape cannot go on. */
/* The race's arrays, room for every candidate: grown when the full space has been added. */
static gt_status_t race_arrays(search_t *S) {
  const size_t n = S->out->n + 1;
  if (n <= S->fin_cap) return GT_OK;
  gt_cand_result_t **fin = realloc(S->fin, n * sizeof *fin);
  if (fin) S->fin = fin;
  struct gt_loaded **loaded = realloc(S->loaded, n * sizeof *loaded);
  if (loaded) S->loaded = loaded;
  bool *dead = realloc(S->dead, n * sizeof *dead);
  if (dead) S->dead = dead;
  if (!fin || !loaded || !dead)
    return shape_failed(S, gt_err_set(GT_ERR_NOMEM, "out of memory"), "out of memory");
  for (size_t j = S->fin_cap; j < n; j++) S->loaded[j] = NULL, S->dead[j] = false;
  S->fin_cap = n;
  return GT_OK;
}

static gt_status_t search_phases(search_t *S) {
  gt_status_t s = race_arrays(S);
  if (s != GT_OK) return s;
  s = measure_baseline(S);
  if (s != GT_OK || S->o->estimate_only) return s;
  if ((s = prune_range(S, 0, S->out->n, "prune", S->to_prune)) != GT_OK) return s;
  if ((s = search_budget(S)) != GT_OK) return s;
  if ((s = race_arrays(S)) != GT_OK) return s;
  gate_finalists(S);
  note_prune_reasons(S);
  settle(S);
  if ((s = race(S)) != GT_OK) return s;
  release(S);
  return decide(S);
}

gt_status_t gt_search_run(const gt_problem_t *p, const gt_search_opts_t *o,
                          const gt_search_events_t *ev, gt_search_result_t *out) {
  search_t S = {.p = p, .o = o, .ev = ev, .out = out, .t0 = now_s()};
  memset(out, 0, sizeof *out);
  out->problem = *p;
  out->baseline = out->best = -1;
  gt_roof_floor(&o->roof, p, &out->floor);
  S.h = gt_harness_for(o->backend);
  if (!S.h) {
    out->status = gt_err_set(GT_ERR_UNSUPPORTED, "this build has no %s harness",
                             o->backend == GT_BACKEND_CUDA ? "CUDA" : "host");
    snprintf(out->failure, sizeof out->failure, "%s", gt_err_msg());
    return out->status;
  }
  gt_cand_list_t list = {0};
  gt_status_t s = enumerate(&S, &list);
  if (s != GT_OK) return s;
  classify(&S, &list);
  if (out->baseline < 0) {
    out->status = no_baseline(&S);
    snprintf(out->failure, sizeof out->failure, "%s", gt_err_msg());
    return out->status;
  }
  s = search_phases(&S);
  release(&S);
  free(S.fin);
  free(S.loaded);
  free(S.dead);
  out->elapsed_s = now_s() - S.t0;
  return s;
}
