/* The engagement verdict, the GPU-time summary and the end-to-end statistics of
 * `gemmtune verify` (see gt_engage.h). */
#define _GNU_SOURCE
#include "gt_engage.h"

#include <ctype.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/gt_stats.h"
#include "providers/cuda/gt_grouped_names.h"
#include "providers/gt_provider.h"

/* ---- kernel names ---------------------------------------------------------------------------- */

bool gt_engage_is_gemm_name(const char *name) { return gt_provider_owns_kernel(NULL, name); }

gt_status_t gt_kset_add(gt_kset_t *s, const char *name) {
  if (gt_kset_has(s, name)) return GT_OK;
  if (s->n == GT_KSET_MAX)
    return gt_err_set(GT_ERR_UNSUPPORTED, "more than %d kernels per call", GT_KSET_MAX);
  char *c = strdup(name);
  if (!c) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  s->names[s->n++] = c;
  return GT_OK;
}

bool gt_kset_matches(const gt_kset_t *s, const char *ran) {
  for (int i = 0; i < s->n; i++)
    if (gt_engage_kernel_match(s->names[i], ran)) return true;
  return false;
}

bool gt_kset_has(const gt_kset_t *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->names[i], name) == 0) return true;
  return false;
}

void gt_kset_free(gt_kset_t *s) {
  for (int i = 0; i < s->n; i++) free(s->names[i]);
  memset(s, 0, sizeof *s);
}

void gt_kset_str(const gt_kset_t *s, char *buf, size_t cap) {
  size_t o = 0;
  if (cap) buf[0] = '\0';
  for (int i = 0; i < s->n && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", s->names[i]);
}

bool gt_engage_kernel_match(const char *expected, const char *ran) {
  return gt_provider_same_kernel(expected, ran);
}

/* Launches and time of every traced kernel that matches `expected`. */
const gt_trace_kernel_t *gt_engage_trace_match(const gt_trace_t *t, const char *expected,
                                            gt_trace_kernel_t *sum) {
  const gt_trace_kernel_t *exact = gt_trace_find(t, expected);
  memset(sum, 0, sizeof *sum);
  bool any = false;
  for (size_t i = 0; i < t->n; i++)
    if (gt_engage_kernel_match(expected, t->k[i].name)) {
      sum->calls += t->k[i].calls;
      sum->total_ns += t->k[i].total_ns;
      sum->graph_launches += t->k[i].graph_launches;
      any = true;
    }
  if (!any) return exact;
  sum->name = (char *)expected;
  return sum;
}

bool gt_engage_expected_from_row(const gt_db_row_t *row, gt_kset_t *out) {
  memset(out, 0, sizeof *out);
  gt_row_kernels_t rk;
  if (!gt_provider_row_kernels(row->provider, row->instance, &row->key, &rk) || rk.any ||
      rk.n == 0)
    return false;
  for (int i = 0; i < rk.n; i++) gt_kset_add(out, rk.sym[i]);
  return true;
}

gt_status_t gt_engage_expected_from_trace(const gt_trace_t *t, const char *provider,
                                          gt_kset_t *out) {
  memset(out, 0, sizeof *out);
  if (t->state != GT_TRACE_OK)
    return gt_err_set(GT_ERR_UNSUPPORTED, "calibration trace %s: %s",
                      gt_trace_state_name(t->state), t->reason);
  uint64_t most = 0;
  for (size_t i = 0; i < t->n; i++)
    if (gt_provider_owns_kernel(provider, t->k[i].name) && t->k[i].calls > most)
      most = t->k[i].calls;
  if (most == 0)
    return gt_err_set(GT_ERR_NOT_FOUND,
                      "the calibration run launched no kernel that provider %s calls its own",
                      provider ? provider : "(none)");
  for (size_t i = 0; i < t->n; i++) {
    const gt_trace_kernel_t *k = &t->k[i];
    if (!gt_provider_owns_kernel(provider, k->name) || 2 * k->calls < most) continue;
    gt_status_t s = gt_kset_add(out, k->name);
    if (s != GT_OK) {
      gt_kset_free(out);
      return s;
    }
  }
  return GT_OK;
}

/* ---- build ------------------------------------------------------------------------------------ */

const char *gt_engage_verdict_name(gt_engage_verdict_t v) {
  static const char *const k[GT_ENGAGE__COUNT] = {"engaged",   "partly",  "not engaged",
                                                   "unverified", "near miss", "untuned",
                                                   "not issued"};
  return v >= 0 && v < GT_ENGAGE__COUNT ? k[v] : "?";
}

gt_status_t gt_engage_build(const gt_db_t *db, const gt_shim_stats_t *stats,
                            gt_engage_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  size_t ns = stats ? stats->n : 0, cap = ns + db->n;
  rep->items = calloc(cap ? cap : 1, sizeof *rep->items);
  if (!rep->items) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < ns; i++) {
    const gt_shim_key_t *k = &stats->v[i];
    gt_engage_item_t *it = &rep->items[rep->n++];
    it->key = k->key;
    it->issued = true;
    it->calls = k->calls;
    it->hits = k->hits;
    it->decision = k->decision;
    snprintf(it->entry, sizeof it->entry, "%s", k->entry);
    it->row = gt_db_lookup(db, &k->key);
  }
  for (size_t r = 0; r < db->n; r++) {
    bool issued = false;
    for (size_t i = 0; i < ns && !issued; i++) issued = gt_problem_equal(&stats->v[i].key, &db->rows[r].key);
    if (issued) continue;
    gt_engage_item_t *it = &rep->items[rep->n++];
    it->key = db->rows[r].key;
    it->row = &db->rows[r];
  }
  return GT_OK;
}

void gt_engage_report_free(gt_engage_report_t *rep) {
  for (size_t i = 0; i < rep->n; i++) gt_kset_free(&rep->items[i].expected);
  free(rep->items);
  memset(rep, 0, sizeof *rep);
}

/* ---- judge ------------------------------------------------------------------------------------ */

/* Key fields that make up the shape: a row differing only in others is the same GEMM keyed
 * differently (device, types, transposes, leading dimensions, epilogue, beta). */
static uint32_t shape_mask(void) {
  static const char *const shape[] = {"m", "n", "k", "batch", "stride_a", "stride_b", "stride_c"};
  uint32_t m = 0;
  for (int i = 0; i < GT_KEY_NFIELDS; i++)
    for (size_t j = 0; j < sizeof shape / sizeof shape[0]; j++)
      if (strcmp(gt_key_field_names[i], shape[j]) == 0) m |= 1u << i;
  return m;
}

/* Total hits of the items that expect kernel `name` (they share its launches). */
static uint64_t required_runs(const gt_engage_report_t *rep, const char *name) {
  uint64_t req = 0;
  for (size_t i = 0; i < rep->n; i++) {
    const gt_engage_item_t *it = &rep->items[i];
    if (it->issued && it->row && it->expected_known && gt_kset_has(&it->expected, name))
      req += it->hits;
  }
  return req;
}

static const char *decision_why(gt_shim_decision_t d) {
  switch (d) {
    case GT_SHIM_MISS:
      return "the shim found no row for this key although the DB has one (did the shim read this "
             "DB? GEMMTUNE_DB)";
    case GT_SHIM_PASS:
      return "the shim passed the key through without deciding it (cuBLASLt of another version "
             "in the process, or a call it does not handle)";
    case GT_SHIM_NOTUSED:
      return "the row exists but the shim could not use it (provider, library version, prepare "
             "or launch failed)";
    case GT_SHIM_DEFERRED:
      return "first issued during CUDA graph capture, where its tuned candidate could not be "
             "prepared, and never outside it: the graph holds the default path (make any cuBLAS "
             "GEMM call outside capture first: the shim then prepares every row)";
    case GT_SHIM_HIT:
    default: return "the shim decided hit but served none of the calls";
  }
}

/* Why some calls of a key that hit went to the default path. */
static const char *partial_why(gt_shim_decision_t d) {
  if (d == GT_SHIM_HIT)
    return "the default path ran them: issued during CUDA graph capture before the key was "
           "decided (the graph keeps the default path), or a tuned launch failed";
  return decision_why(d);
}

static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...) {
  size_t l = strlen(buf);
  if (l + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + l, cap - l, fmt, ap);
  va_end(ap);
}

static void judge_tuned(gt_engage_report_t *rep, gt_engage_item_t *it, const gt_trace_t *trace) {
  if (it->hits == 0) {
    it->verdict = GT_ENGAGE_NOT;
    snprintf(it->why, sizeof it->why, "0 of %" PRIu64 " calls ran the tuned choice: %s", it->calls,
             decision_why(it->decision));
    if (it->shim_note[0]) append(it->why, sizeof it->why, "; shim: %s", it->shim_note);
    return;
  }
  if (!rep->trace_ok) {
    it->verdict = GT_ENGAGE_UNVERIFIED;
    snprintf(it->why, sizeof it->why,
             "the shim served %" PRIu64 " of %" PRIu64 " calls, but what ran cannot be checked: %s",
             it->hits, it->calls, rep->trace_why);
    return;
  }
  if (!it->expected_known || it->expected.n == 0) {
    it->verdict = GT_ENGAGE_UNVERIFIED;
    snprintf(it->why, sizeof it->why,
             "the shim served %" PRIu64 " of %" PRIu64 " calls, but the row's kernels are unknown: %s",
             it->hits, it->calls, it->expected_why[0] ? it->expected_why : "not calibrated");
    return;
  }
  int missing = 0, shortn = 0;
  char detail[512] = "";
  it->kernel_runs = UINT64_MAX;
  for (int e = 0; e < it->expected.n; e++) {
    const char *name = it->expected.names[e];
    gt_trace_kernel_t sum;
    const gt_trace_kernel_t *k = gt_engage_trace_match(trace, name, &sum);
    uint64_t c = k ? k->calls : 0, req = required_runs(rep, name);
    if (c < it->kernel_runs) it->kernel_runs = c;
    if (c == 0) {
      missing++;
      append(detail, sizeof detail, "%s%s never ran", detail[0] ? "; " : "", name);
    } else if (c < req) {
      shortn++;
      append(detail, sizeof detail, "%s%s ran %" PRIu64 " times for %" PRIu64 " hits",
             detail[0] ? "; " : "", name, c, req);
    }
  }
  if (it->kernel_runs == UINT64_MAX) it->kernel_runs = 0;
  if (missing == it->expected.n) {
    it->verdict = GT_ENGAGE_NOT;
    snprintf(it->why, sizeof it->why,
             "the shim served %" PRIu64 " of %" PRIu64 " calls but the trace contradicts it: %s",
             it->hits, it->calls, detail);
  } else if (missing || shortn) {
    it->verdict = GT_ENGAGE_PARTLY;
    snprintf(it->why, sizeof it->why, "%" PRIu64 " of %" PRIu64 " calls hit, but %s", it->hits,
             it->calls, detail);
  } else if (it->hits < it->calls) {
    it->verdict = GT_ENGAGE_PARTLY;
    snprintf(it->why, sizeof it->why,
             "%" PRIu64 " of %" PRIu64 " calls hit (the others: %s); expected kernels ran %" PRIu64
             "+ times",
             it->hits, it->calls, partial_why(it->decision), it->kernel_runs);
    if (it->shim_note[0]) append(it->why, sizeof it->why, "; shim: %s", it->shim_note);
  } else {
    it->verdict = GT_ENGAGE_ENGAGED;
    snprintf(it->why, sizeof it->why,
             "%" PRIu64 " of %" PRIu64 " calls hit; expected kernels ran %" PRIu64 "+ times", it->hits,
             it->calls, it->kernel_runs);
  }
}

/* Launches of torch's own grouped GEMM path in the trace (its prepare_grouped_gemm_data and
 * CUTLASS ptr-array kernels: gt_grouped_is_torch_kernel), and the grouped_mm calls the shim did
 * not serve. */
static void torch_grouped(const gt_engage_report_t *rep, const gt_trace_t *trace, uint64_t *runs,
                          uint64_t *unserved) {
  *runs = *unserved = 0;
  for (size_t k = 0; trace && k < trace->n; k++)
    if (gt_grouped_is_torch_kernel(trace->k[k].name)) *runs += trace->k[k].calls;
  for (size_t i = 0; i < rep->n; i++)
    if (rep->items[i].issued && rep->items[i].key.op == GT_OP_GROUPED_MM)
      *unserved += rep->items[i].calls - rep->items[i].hits;
}

/* A grouped key is engaged only where torch's own grouped kernels are gone: its own kernel
 * replaces both the one-block prepare_grouped_gemm_data and the CUTLASS kernel. When every
 * grouped call of the workload hit, no launch of torch's path may remain (a replayed graph
 * repeats launches, so with calls left to torch the counts are not comparable, and only the
 * expected kernels decide). */
static void judge_torch_path(const gt_engage_report_t *rep, const gt_trace_t *trace,
                             gt_engage_item_t *it) {
  if (it->key.op != GT_OP_GROUPED_MM || !rep->trace_ok) return;
  if (it->verdict != GT_ENGAGE_ENGAGED && it->verdict != GT_ENGAGE_PARTLY) return;
  uint64_t runs, unserved;
  torch_grouped(rep, trace, &runs, &unserved);
  if (unserved == 0 && runs > 0) {
    it->verdict = GT_ENGAGE_PARTLY;
    append(it->why, sizeof it->why,
           "; but torch's own grouped path (prepare_grouped_gemm_data / CUTLASS) still ran %" PRIu64
           " times although every grouped call hit",
           runs);
  } else if (unserved == 0) {
    append(it->why, sizeof it->why, "; torch's prepare_grouped_gemm_data and CUTLASS kernel "
                                    "did not run");
  }
}

static void judge_untuned(const gt_db_t *db, gt_engage_item_t *it) {
  /* A key tune raced and kept on today's path: its calls rightly run the original, whatever
   * rows its siblings (the same shape with a bias, another scale) have. */
  const char *kept = gt_db_get_kept(db, &it->key);
  if (kept) {
    it->verdict = GT_ENGAGE_UNTUNED;
    snprintf(it->why, sizeof it->why, "no row: tune raced this key and kept today's path (%s)",
             kept);
    return;
  }
  gt_db_near_t near[3];
  size_t nn = gt_db_explain(db, &it->key, near, 3);
  if (nn == 0) {
    it->verdict = GT_ENGAGE_UNTUNED;
    snprintf(it->why, sizeof it->why, "no row for this key (the DB has no rows)");
    return;
  }
  /* A row for the same shape keyed differently is preferred over a closer row of another shape:
   * it is the mismatch that silently costs the whole gain. */
  uint32_t sm = shape_mask();
  for (size_t i = 0; i < nn; i++) {
    if ((gt_problem_diff(&it->key, &near[i].row->key) & sm) == 0) {
      it->verdict = GT_ENGAGE_NEAR_MISS;
      snprintf(it->why, sizeof it->why,
               "no row for this key; the row for the same shape differs in %s (%s)", near[i].diff,
               near[i].row->instance);
      return;
    }
  }
  it->verdict = GT_ENGAGE_UNTUNED;
  snprintf(it->why, sizeof it->why, "no row for this key; nearest row differs in %s",
           near[0].diff);
}

static void judge_not_issued(const gt_engage_report_t *rep, gt_engage_item_t *it) {
  it->verdict = GT_ENGAGE_NOT_ISSUED;
  const gt_engage_item_t *best = NULL;
  int best_n = GT_KEY_NFIELDS + 1;
  for (size_t i = 0; i < rep->n; i++) {
    const gt_engage_item_t *o = &rep->items[i];
    if (!o->issued) continue;
    int d = __builtin_popcount(gt_problem_diff(&it->key, &o->key));
    if (d < best_n) best_n = d, best = o;
  }
  if (!best) {
    snprintf(it->why, sizeof it->why, "no call of the workload matched this row");
    return;
  }
  char diff[512];
  gt_problem_diff_str(&it->key, &best->key, diff, sizeof diff);
  snprintf(it->why, sizeof it->why,
           "no call of the workload matched this row; the nearest issued key differs in %s", diff);
}

void gt_engage_judge(const gt_db_t *db, const gt_trace_t *trace, bool stats_ok,
                     const char *stats_why, gt_engage_report_t *rep) {
  memset(rep->count, 0, sizeof rep->count);
  rep->tuned_issued = 0;
  rep->trace_ok = trace && trace->state == GT_TRACE_OK;
  if (!trace)
    snprintf(rep->trace_why, sizeof rep->trace_why, "no kernel trace was written");
  else if (!rep->trace_ok)
    snprintf(rep->trace_why, sizeof rep->trace_why, "kernel trace %s: %s",
             gt_trace_state_name(trace->state), trace->reason[0] ? trace->reason : "no reason given");
  else
    rep->trace_why[0] = '\0';

  for (size_t i = 0; i < rep->n; i++) {
    gt_engage_item_t *it = &rep->items[i];
    it->gpu_ns = 0;
    it->kernel_runs = 0;
    if (!it->issued && !stats_ok) {
      it->verdict = GT_ENGAGE_NOT_ISSUED;
      snprintf(it->why, sizeof it->why,
               "unknown whether a call matched this row: the shim's counters are missing");
    } else if (!it->issued) {
      judge_not_issued(rep, it);
      if (it->refused[0]) append(it->why, sizeof it->why, "; on this device: %s", it->refused);
    } else if (!it->row) {
      judge_untuned(db, it);
    } else if (it->refused[0]) {
      /* The runtime refuses the row here: whatever ran, it was not this row's tuned choice. */
      rep->tuned_issued++;
      it->verdict = GT_ENGAGE_NOT;
      snprintf(it->why, sizeof it->why, "%" PRIu64 " calls; the row is not for this device: %s",
               it->calls, it->refused);
    } else {
      rep->tuned_issued++;
      judge_tuned(rep, it, trace);
      judge_torch_path(rep, trace, it);
    }
    rep->count[it->verdict]++;
  }

  /* GPU time: kernels of engaged keys are shared among the keys expecting them in proportion to
   * their hits; everything named like a GEMM, or expected by a row, counts as GEMM time. */
  rep->total_ns = rep->gemm_ns = rep->tuned_ns = 0;
  if (rep->trace_ok) {
    rep->total_ns = (double)trace->total_ns;
    for (size_t k = 0; k < trace->n; k++) {
      const gt_trace_kernel_t *tk = &trace->k[k];
      bool gemm = gt_engage_is_gemm_name(tk->name);
      for (size_t i = 0; i < rep->n && !gemm; i++)
        for (int e = 0; !gemm && rep->items[i].expected_known && e < rep->items[i].expected.n; e++)
          gemm = gt_engage_kernel_match(rep->items[i].expected.names[e], tk->name);
      if (gemm) rep->gemm_ns += (double)tk->total_ns;
    }
    for (size_t i = 0; i < rep->n; i++) {
      gt_engage_item_t *it = &rep->items[i];
      if (it->verdict != GT_ENGAGE_ENGAGED && it->verdict != GT_ENGAGE_PARTLY) continue;
      for (int e = 0; e < it->expected.n; e++) {
        gt_trace_kernel_t sum;
        const gt_trace_kernel_t *tk = gt_engage_trace_match(trace, it->expected.names[e], &sum);
        uint64_t req = required_runs(rep, it->expected.names[e]);
        if (tk && req) it->gpu_ns += (double)tk->total_ns * (double)it->hits / (double)req;
      }
    }
  }
  rep->gemm_share = rep->total_ns > 0 ? rep->gemm_ns / rep->total_ns : 0;
  double base = 0;
  for (size_t i = 0; i < rep->n; i++) {
    const gt_engage_item_t *it = &rep->items[i];
    if (it->gpu_ns <= 0 || !it->row || it->row->speedup <= 0) continue;
    rep->tuned_ns += it->gpu_ns;
    base += it->gpu_ns * it->row->speedup;
  }
  rep->tuned_speedup = rep->tuned_ns > 0 ? base / rep->tuned_ns : 0;
  double total_base = rep->total_ns + base - rep->tuned_ns; /* the same run without the DB */
  rep->tuned_share_base = total_base > 0 ? base / total_base : 0;
  rep->amdahl_gain = rep->total_ns > 0 && total_base > 0 ? total_base / rep->total_ns : 1.0;
  double gemm_base = rep->gemm_ns + base - rep->tuned_ns;
  rep->gemm_ceiling = total_base > gemm_base && total_base > 0 ? total_base / (total_base - gemm_base) : 0;

  /* ---- outcome ---- */
  size_t bad = rep->count[GT_ENGAGE_PARTLY] + rep->count[GT_ENGAGE_NOT] +
               rep->count[GT_ENGAGE_NEAR_MISS];
  size_t unv = rep->count[GT_ENGAGE_UNVERIFIED];
  size_t issued = 0;
  for (size_t i = 0; i < rep->n; i++) issued += rep->items[i].issued;
  const char *near_eg = "";
  for (size_t i = 0; i < rep->n && !near_eg[0]; i++)
    if (rep->items[i].verdict == GT_ENGAGE_NEAR_MISS) near_eg = rep->items[i].why;
  rep->pass = false;
  rep->unverified = false;
  if (!stats_ok) {
    rep->unverified = true;
    snprintf(rep->summary, sizeof rep->summary,
             "UNVERIFIED: the shim's counters are missing (%s), so nothing is known about the "
             "keys the workload issued",
             stats_why && *stats_why ? stats_why : "no stats file");
  } else if (issued == 0) {
    snprintf(rep->summary, sizeof rep->summary,
             "FAIL: the workload issued no cuBLAS GEMM the shim saw, so no DB row was used");
  } else if (rep->tuned_issued == 0) {
    if (rep->count[GT_ENGAGE_NEAR_MISS])
      snprintf(rep->summary, sizeof rep->summary,
               "FAIL: no DB row matched any of the %zu keys the workload issued; %zu near miss%s: "
               "%.300s",
               issued, rep->count[GT_ENGAGE_NEAR_MISS],
               rep->count[GT_ENGAGE_NEAR_MISS] == 1 ? "" : "es", near_eg);
    else
      snprintf(rep->summary, sizeof rep->summary,
               "FAIL: no DB row matched any of the %zu keys the workload issued", issued);
  } else if (bad) {
    snprintf(rep->summary, sizeof rep->summary,
             "FAIL: %zu of %zu tuned keys the workload issued engaged (%zu partly, %zu not "
             "engaged, %zu unverified)",
             rep->count[GT_ENGAGE_ENGAGED], rep->tuned_issued, rep->count[GT_ENGAGE_PARTLY],
             rep->count[GT_ENGAGE_NOT], unv);
    if (rep->count[GT_ENGAGE_NEAR_MISS])
      append(rep->summary, sizeof rep->summary, "; %zu near miss%s: %.200s",
             rep->count[GT_ENGAGE_NEAR_MISS], rep->count[GT_ENGAGE_NEAR_MISS] == 1 ? "" : "es",
             near_eg);
  } else if (unv) {
    rep->unverified = true;
    snprintf(rep->summary, sizeof rep->summary,
             "UNVERIFIED: %zu of %zu tuned keys served calls but what ran cannot be checked (%s); "
             "unverified is not a pass",
             unv, rep->tuned_issued, rep->trace_ok ? "expected kernels unknown" : rep->trace_why);
  } else {
    rep->pass = true;
    snprintf(rep->summary, sizeof rep->summary,
             "PASS: all %zu tuned keys the workload issued engaged (kernel identity checked in the "
             "trace)",
             rep->tuned_issued);
  }
}

/* ---- end to end ------------------------------------------------------------------------------- */

bool gt_engage_parse_metric(const char *line, char *name, size_t name_cap, double *value,
                            char *unit, size_t unit_cap) {
  static const char tag[] = "gemmtune-metric:";
  while (*line == ' ' || *line == '\t') line++;
  if (strncmp(line, tag, sizeof tag - 1) != 0) return false;
  const char *p = line + sizeof tag - 1;
  while (*p == ' ' || *p == '\t') p++;
  const char *n0 = p;
  while (*p && !isspace((unsigned char)*p)) p++;
  size_t nl = (size_t)(p - n0);
  if (nl == 0) return false;
  while (*p == ' ' || *p == '\t') p++;
  char *end;
  double v = strtod(p, &end);
  if (end == p || !isfinite(v)) return false;
  p = end;
  if (*p && !isspace((unsigned char)*p)) return false;
  while (*p == ' ' || *p == '\t') p++;
  const char *u0 = p;
  while (*p && !isspace((unsigned char)*p)) p++;
  size_t ul = (size_t)(p - u0);
  if (ul == 0) return false;
  if (name_cap) snprintf(name, name_cap, "%.*s", (int)nl, n0);
  if (unit_cap) snprintf(unit, unit_cap, "%.*s", (int)ul, u0);
  *value = v;
  return true;
}

bool gt_engage_metric_higher_better(const char *unit) {
  size_t l = strlen(unit);
  if (l >= 2 && strcmp(unit + l - 2, "/s") == 0) return true;
  if (l >= 4 && strcasecmp(unit + l - 4, "/sec") == 0) return true;
  return strcasecmp(unit, "hz") == 0 || strcasecmp(unit, "x") == 0;
}

gt_status_t gt_engage_e2e(const double *with, size_t n_with, const double *without,
                          size_t n_without, bool higher_better, gt_e2e_t *out) {
  memset(out, 0, sizeof *out);
  if (!n_with || !n_without)
    return gt_err_set(GT_ERR_USAGE, "end to end: no sample %s the DB", n_with ? "without" : "with");
  out->n_with = n_with;
  out->n_without = n_without;
  out->med_with = gt_stats_median(with, n_with);
  out->med_without = gt_stats_median(without, n_without);
  out->q25_with = gt_stats_quantile(with, n_with, 0.25);
  out->q75_with = gt_stats_quantile(with, n_with, 0.75);
  out->q25_without = gt_stats_quantile(without, n_without, 0.25);
  out->q75_without = gt_stats_quantile(without, n_without, 0.75);
  if (out->med_with <= 0 || out->med_without <= 0 || out->q25_with <= 0 || out->q25_without <= 0)
    return gt_err_set(GT_ERR_DATA, "end to end: a measurement is not positive");
  if (higher_better) {
    out->speedup = out->med_with / out->med_without;
    out->speedup_lo = out->q25_with / out->q75_without;
    out->speedup_hi = out->q75_with / out->q25_without;
  } else {
    out->speedup = out->med_without / out->med_with;
    out->speedup_lo = out->q25_without / out->q75_with;
    out->speedup_hi = out->q75_without / out->q25_with;
  }
  out->significant = out->speedup_lo > 1.0 || out->speedup_hi < 1.0;
  return GT_OK;
}
