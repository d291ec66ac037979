/* Graph replays counted per captured GEMM call (gt_graph_runs.h). */
#include "gt_graph_runs.h"

#include <stdlib.h>
#include <string.h>

/* Node ids are small consecutive integers: mixed, so the index's linear probing stays short. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

typedef struct find_ctx {
  const uint64_t *v;
  uint64_t want;
} find_ctx_t;

static bool same_id(void *ctx, size_t i) {
  const find_ctx_t *c = ctx;
  return c->v[i] == c->want;
}

static long find(const gt_hindex_t *x, const uint64_t *v, uint64_t id) {
  find_ctx_t c = {v, id};
  return gt_hindex_find(x, mix(id), same_id, &c);
}

/* Grow the parallel arrays p[0..k) of one table to hold one more element. */
static bool grow(uint64_t **p, int k, size_t *cap, size_t n) {
  if (n < *cap) return true;
  size_t nc = *cap ? 2 * *cap : 256;
  for (int i = 0; i < k; i++) {
    uint64_t *np = realloc(p[i], nc * sizeof *np);
    if (!np) return false; /* the arrays already grown keep their contents; cap stays */
    p[i] = np;
  }
  *cap = nc;
  return true;
}

void gt_graph_runs_init(gt_graph_runs_t *t) { memset(t, 0, sizeof *t); }

void gt_graph_runs_free(gt_graph_runs_t *t) {
  free(t->node);
  free(t->runs);
  free(t->ns);
  free(t->clone);
  free(t->orig);
  gt_hindex_free(&t->idx);
  gt_hindex_free(&t->cidx);
  gt_graph_runs_init(t);
}

gt_status_t gt_graph_runs_add_run(gt_graph_runs_t *t, uint64_t node, uint64_t ns) {
  long i = find(&t->idx, t->node, node);
  if (i >= 0) {
    t->runs[i]++;
    t->ns[i] = t->ns[i] > UINT64_MAX - ns ? UINT64_MAX : t->ns[i] + ns;
    return GT_OK;
  }
  uint64_t *arr[3] = {t->node, t->runs, t->ns};
  bool ok = grow(arr, 3, &t->cap, t->n);
  t->node = arr[0], t->runs = arr[1], t->ns = arr[2];
  if (!ok) return gt_err_set(GT_ERR_NOMEM, "out of memory counting graph node runs");
  if (gt_hindex_add(&t->idx, mix(node), t->n) != GT_OK) return GT_ERR_NOMEM;
  t->node[t->n] = node;
  t->runs[t->n] = 1;
  t->ns[t->n] = ns;
  t->n++;
  return GT_OK;
}

gt_status_t gt_graph_runs_add_clone(gt_graph_runs_t *t, uint64_t clone_id, uint64_t orig_id) {
  if (clone_id == orig_id || find(&t->cidx, t->clone, clone_id) >= 0) return GT_OK;
  uint64_t *arr[2] = {t->clone, t->orig};
  bool ok = grow(arr, 2, &t->ccap, t->nc);
  t->clone = arr[0], t->orig = arr[1];
  if (!ok) return gt_err_set(GT_ERR_NOMEM, "out of memory recording graph node clones");
  if (gt_hindex_add(&t->cidx, mix(clone_id), t->nc) != GT_OK) return GT_ERR_NOMEM;
  t->clone[t->nc] = clone_id;
  t->orig[t->nc] = orig_id;
  t->nc++;
  return GT_OK;
}

/* Indices of ids[] with a given value: an index over ids, and a chain through equal values so
 * repeated ids each get their count. */
typedef struct asked {
  gt_hindex_t idx; /* first position of each distinct id */
  size_t *next;    /* next position with the same id, or SIZE_MAX */
} asked_t;

static gt_status_t asked_build(asked_t *a, const uint64_t *ids, size_t n) {
  memset(a, 0, sizeof *a);
  a->next = malloc((n ? n : 1) * sizeof *a->next);
  if (!a->next) return gt_err_set(GT_ERR_NOMEM, "out of memory resolving graph nodes");
  for (size_t i = 0; i < n; i++) {
    a->next[i] = SIZE_MAX;
    long j = find(&a->idx, ids, ids[i]);
    if (j >= 0) {
      size_t k = (size_t)j;
      while (a->next[k] != SIZE_MAX) k = a->next[k];
      a->next[k] = i;
    } else if (gt_hindex_add(&a->idx, mix(ids[i]), i) != GT_OK) {
      free(a->next);
      gt_hindex_free(&a->idx);
      return GT_ERR_NOMEM;
    }
  }
  return GT_OK;
}

gt_status_t gt_graph_runs_resolve(const gt_graph_runs_t *t, const uint64_t *ids, size_t n,
                                  uint64_t *runs, uint64_t *ns) {
  for (size_t i = 0; i < n; i++) runs[i] = ns[i] = 0;
  if (n == 0) return GT_OK;
  asked_t a;
  gt_status_t s = asked_build(&a, ids, n);
  if (s != GT_OK) return s;
  /* Walk each executed node up its clone chain; every asked id met on the way owns its runs. */
  for (size_t r = 0; r < t->n; r++) {
    uint64_t cur = t->node[r];
    for (int depth = 0; depth <= GT_GRAPH_MAX_CLONE_DEPTH; depth++) {
      long j = find(&a.idx, ids, cur);
      for (size_t k = j >= 0 ? (size_t)j : SIZE_MAX; k != SIZE_MAX; k = a.next[k]) {
        runs[k] += t->runs[r];
        ns[k] = ns[k] > UINT64_MAX - t->ns[r] ? UINT64_MAX : ns[k] + t->ns[r];
      }
      long c = find(&t->cidx, t->clone, cur);
      if (c < 0) break;
      cur = t->orig[c];
    }
  }
  free(a.next);
  gt_hindex_free(&a.idx);
  return GT_OK;
}

void gt_graph_fold(const gt_graph_call_t *calls, size_t n, const uint64_t *runs,
                   const uint64_t *ns, gt_graph_key_sum_t *sums, size_t nkeys) {
  size_t at = 0; /* position of calls[i].ids[0] in the flattened answers */
  for (size_t i = 0; i < n; i++) {
    const gt_graph_call_t *c = &calls[i];
    const size_t first = at;
    at += c->nids;
    if (c->key >= nkeys) continue;
    gt_graph_key_sum_t *s = &sums[c->key];
    if (!c->identified || !runs || !ns) {
      s->unidentified++;
      continue;
    }
    s->captured++;
    if (c->nids == 0) continue; /* it added no kernel: it never runs */
    s->runs += runs[first];
    for (uint32_t k = 0; k < c->nids; k++)
      s->ns = s->ns > UINT64_MAX - ns[first + k] ? UINT64_MAX : s->ns + ns[first + k];
  }
}

void gt_graph_adjust(uint64_t calls, double eager_us_per_call, const gt_graph_key_sum_t *s,
                     uint64_t *calls_out, double *time_us_out) {
  uint64_t captured = s && s->captured <= calls ? s->captured : 0;
  uint64_t eager = calls - captured;
  uint64_t runs = s && captured ? s->runs : 0;
  *calls_out = eager > UINT64_MAX - runs ? UINT64_MAX : eager + runs;
  *time_us_out = eager_us_per_call * (double)eager + (captured ? (double)s->ns / 1000.0 : 0.0);
}
