/* Comparing DBs and keys (see gt_db.h): gt_db_explain names the rows nearest to a missed key and
 * the fields that differ; gt_db_merge folds one DB into another, arbitrating duplicate keys only
 * between rows measured the same way and reporting every decision. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_db_internal.h"
#include "gt_fileio.h"

/* ---- explain ------------------------------------------------------------------------------ */

static double log_ratio(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return a == b ? 0.0 : 1e9; /* a bad query still ranks, last */
  return fabs(log((double)a / (double)b));
}

size_t gt_db_explain(const gt_db_t *db, const gt_problem_t *k, gt_db_near_t *out, size_t max) {
  size_t nout = 0;
  if (!db || !out || max == 0) return 0;
  for (size_t i = 0; i < db->n; i++) {
    const gt_problem_t *rk = &db->rows[i].key;
    int nf = __builtin_popcount(gt_problem_diff(k, rk));
    double d = log_ratio(k->m, rk->m) + log_ratio(k->n, rk->n) + log_ratio(k->k, rk->k);
    /* Insertion into the sorted top-max list; equal ranks keep row order (stable). */
    size_t pos = nout;
    while (pos > 0 && (out[pos - 1].nfields > nf ||
                       (out[pos - 1].nfields == nf && out[pos - 1].distance > d)))
      pos--;
    if (pos >= max) continue;
    size_t last = nout < max ? nout : max - 1;
    memmove(&out[pos + 1], &out[pos], (last - pos) * sizeof *out);
    out[pos].row = &db->rows[i];
    out[pos].nfields = nf;
    out[pos].distance = d;
    if (nout < max) nout++;
  }
  for (size_t i = 0; i < nout; i++)
    gt_problem_diff_str(k, &out[i].row->key, out[i].diff, sizeof out[i].diff);
  return nout;
}

/* ---- merge -------------------------------------------------------------------------------- */

static void report(gt_db_report_fn fn, void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report(gt_db_report_fn fn, void *ctx, const char *fmt, ...) {
  if (!fn) return;
  gt_textbuf_t b = {0};
  va_list ap;
  va_start(ap, fmt);
  gt_textbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  fn(ctx, b.oom || !b.p ? "(out of memory formatting a merge report line)" : b.p);
  gt_textbuf_free(&b);
}

/* "0.1.0" -> "0"; versions are compared as text before the first dot. */
static bool same_major(const char *a, const char *b) {
  size_t la = strcspn(a, "."), lb = strcspn(b, ".");
  return la == lb && strncmp(a, b, la) == 0;
}

/* One merge in progress: src is folded into out (a copy of dst), decisions are reported. */
typedef struct merge {
  const gt_db_t *src;
  gt_db_t out;
  const char *dn, *sn, *keep_name; /* names in reports: dst's, src's, the side kept on conflict */
  bool prefer_src;
  gt_db_report_fn fn;
  void *ctx;
  size_t added, replaced, kept, ties, nconf;
  gt_textbuf_t conf; /* what conflicted, for the strict error message */
} merge_t;

static gt_status_t merge_validators(merge_t *m) {
  size_t nkept = 0;
  for (size_t i = 0; i < m->src->nval; i++) {
    const gt_db_validator_t *v = &m->src->validators[i];
    const char *have = gt_db_get_validator(&m->out, v->name);
    gt_status_t s = GT_OK;
    if (gt_db_is_kept_name(v->name)) {
      /* A kept key is a fact of either run, never a conflict; counted, not listed. */
      if (!have || m->prefer_src) s = gt_db_set_validator(&m->out, v->name, v->value);
      nkept += !have;
      if (s != GT_OK) return s;
      continue;
    }
    if (!have) {
      report(m->fn, m->ctx, "validator %s=%s added from %s", v->name, v->value, m->sn);
      s = gt_db_set_validator(&m->out, v->name, v->value);
    } else if (strcmp(have, v->value) != 0) {
      bool major = strcmp(v->name, "gemmtune") == 0 && !same_major(have, v->value);
      if (major) {
        m->nconf++;
        gt_textbuf_printf(&m->conf, "%svalidator gemmtune (%s vs %s)", m->conf.len ? "; " : "",
                          have, v->value);
      }
      report(m->fn, m->ctx, "%svalidator %s: %s has %s, %s has %s%s; kept %s's",
             major ? "conflict: " : "", v->name, m->dn, have, m->sn, v->value,
             major ? " (major versions differ: rows may not be comparable)" : "", m->keep_name);
      if (m->prefer_src) s = gt_db_set_validator(&m->out, v->name, v->value);
    }
    if (s != GT_OK) return s;
  }
  if (nkept)
    report(m->fn, m->ctx, "%zu kept key%s (raced, today's path stayed) added from %s", nkept,
           nkept == 1 ? "" : "s", m->sn);
  return GT_OK;
}

/* Which of two rows for one key, measured the same way, is the better fact: the faster one
 * when it is faster by more than the rows' spreads together (*beyond true), else (a tie within
 * the spread) the one with the lower spread, then the lower time, then the one whose text sorts
 * first. The choice depends on the two rows only, so merging A into B keeps what merging B into
 * A keeps. True when b is chosen over a; *gain is slower/faster - 1 and *spread the combined
 * spread, both fractions. */
static bool pick_b(const gt_db_row_t *a, const gt_db_row_t *b, bool *beyond, double *gain,
                   double *spread) {
  const gt_db_row_t *fast = b->time_us < a->time_us ? b : a, *slow = fast == b ? a : b;
  *gain = slow->time_us / fast->time_us - 1;
  *spread = (a->spread_pct + b->spread_pct) / 100.0;
  *beyond = *gain > *spread;
  if (*beyond) return fast == b;
  if (a->spread_pct != b->spread_pct) return b->spread_pct < a->spread_pct;
  if (a->time_us != b->time_us) return b->time_us < a->time_us;
  gt_textbuf_t ta = {0}, tb = {0};
  /* Every result field, not only the names: two rows of one choice can still differ (the gate's
   * error, rounds, a device one left unrecorded, the floor), and stopping at the names would keep
   * whichever was dst. */
  gt_textbuf_printf(&ta, "%s,%s,%s,%s,%.17g,%.17g,%.17g,%d,%d,%d,%d,%s,%d,%.17g,%d,%.17g,%d,%.17g,"
                    "%.17g", a->provider, a->instance, a->lib, a->baseline, a->baseline_us,
                    a->error, a->error_bound, a->rounds, a->sm_clock_mhz, a->splitk_searched,
                    a->throttled, a->device, a->device_mem_gib, a->floor_us, (int)a->floor_bound,
                    a->floor_pct, (int)a->live, a->live_us, a->live_baseline_us);
  gt_textbuf_printf(&tb, "%s,%s,%s,%s,%.17g,%.17g,%.17g,%d,%d,%d,%d,%s,%d,%.17g,%d,%.17g,%d,%.17g,"
                    "%.17g", b->provider, b->instance, b->lib, b->baseline, b->baseline_us,
                    b->error, b->error_bound, b->rounds, b->sm_clock_mhz, b->splitk_searched,
                    b->throttled, b->device, b->device_mem_gib, b->floor_us, (int)b->floor_bound,
                    b->floor_pct, (int)b->live, b->live_us, b->live_baseline_us);
  bool r = ta.p && tb.p && strcmp(tb.p, ta.p) < 0;
  gt_textbuf_free(&ta);
  gt_textbuf_free(&tb);
  return r;
}

/* src's row r (key text `key`) against out's row d with the same key. */
static void merge_duplicate(merge_t *m, gt_db_row_t *d, const gt_db_row_t *r, const char *key) {
  bool same_dev = gt_db_rows_same_device(d, r);
  if (strcmp(d->timing, r->timing) == 0 && same_dev) {
    /* Measured the same way: the times are comparable, but only beyond what each measurement
     * itself scatters by; inside that, a "faster" row is noise, not a better fact. */
    bool beyond;
    double gain, spread;
    bool src_wins = pick_b(d, r, &beyond, &gain, &spread);
    const gt_db_row_t *w = src_wins ? r : d, *l = src_wins ? d : r;
    const char *wn = src_wins ? m->sn : m->dn, *ln = src_wins ? m->dn : m->sn;
    if (beyond)
      report(m->fn, m->ctx, "kept %s/%s %.9g us over %s/%s %.9g us for %s (%.2f%% faster, beyond "
             "the combined spread %.2f%%)", wn, w->instance, w->time_us, ln, l->instance,
             l->time_us, key, 100 * gain, 100 * spread);
    else
      report(m->fn, m->ctx, "tie within spread for %s: %s/%s %.9g us (spread %.2f%%) and %s/%s "
             "%.9g us (spread %.2f%%) differ by %.2f%%, within their combined spread %.2f%%; "
             "kept %s's (%s)", key, m->dn, d->instance, d->time_us, d->spread_pct, m->sn,
             r->instance, r->time_us, r->spread_pct, 100 * gain, 100 * spread, wn,
             w->spread_pct != l->spread_pct ? "the lower spread"
             : w->time_us != l->time_us     ? "the same spread, the lower time"
                                            : "the same spread and time, the first by name");
    if (!beyond) m->ties++;
    if (src_wins) {
      *d = *r;
      m->replaced++;
    } else {
      m->kept++;
    }
    return;
  }
  /* Timed differently (cold vs warm, graph vs host) or on different devices: neither time says
   * which is faster in the other's conditions, so keep one but leave both facts visible. */
  m->nconf++;
  gt_textbuf_printf(&m->conf, "%s%s", m->conf.len ? "; " : "", key);
  char dd[GT_DB_DEVICE_MAX + 48] = "", rd[GT_DB_DEVICE_MAX + 48] = "";
  if (!same_dev) {
    memcpy(dd, ", on ", 6);
    memcpy(rd, ", on ", 6);
    gt_db_row_device_str(d, dd + 5, sizeof dd - 5);
    gt_db_row_device_str(r, rd + 5, sizeof rd - 5);
  }
  report(m->fn, m->ctx,
         "conflict for %s: %s has %s %.9g us (timing %s%s), %s has %s %.9g us (timing %s%s): %s, "
         "not comparable; kept %s's row",
         key, m->dn, d->instance, d->time_us, d->timing, dd, m->sn, r->instance, r->time_us,
         r->timing, rd, same_dev ? "timed differently" : "measured on different devices",
         m->keep_name);
  if (m->prefer_src) *d = *r;
}

static gt_status_t merge_rows(merge_t *m) {
  gt_status_t s;
  for (size_t i = 0; i < m->src->n; i++) {
    const gt_db_row_t *r = &m->src->rows[i];
    char key[GT_DB_KEY_TEXT_MAX];
    gt_problem_format_key(&r->key, key, sizeof key);
    if ((s = gt_db_row_check(r)) != GT_OK)
      return gt_db_err_prefix(s, "%s: row %zu (%.400s): ", m->sn, i + 1, key);
    if ((s = gt_db_index_ready(&m->out)) != GT_OK) return s;
    uint64_t h = gt_problem_hash(&r->key);
    long j = gt_db_index_find(&m->out, &r->key, h);
    if (j < 0) {
      gt_db_index_append(&m->out, r, h);
      m->added++;
    } else {
      merge_duplicate(m, &m->out.rows[j], r, key);
    }
  }
  return GT_OK;
}

gt_status_t gt_db_merge(gt_db_t *dst, const gt_db_t *src, bool strict, bool prefer_src,
                        gt_db_report_fn fn, void *ctx) {
  merge_t m = {.src = src, .prefer_src = prefer_src, .fn = fn, .ctx = ctx};
  m.dn = dst->path[0] ? dst->path : "dst";
  m.sn = src->path[0] ? src->path : "src";
  m.keep_name = prefer_src ? m.sn : m.dn;
  gt_status_t s = gt_db_copy(&m.out, dst);
  if (s != GT_OK) return s;
  if ((s = merge_validators(&m)) == GT_OK && (s = merge_rows(&m)) == GT_OK) {
    gt_db_drop_kept_with_rows(&m.out); /* a key one input kept and the other tuned: the row */
    report(fn, ctx, "merged %s into %s: %zu added, %zu replaced, %zu kept, %zu ties within "
           "spread, %zu conflicts", m.sn, m.dn, m.added, m.replaced, m.kept, m.ties, m.nconf);
    if (strict && m.nconf)
      s = gt_err_set(GT_ERR_CONFLICT, "merge of %s into %s: %zu conflict%s, nothing merged: %s",
                     m.sn, m.dn, m.nconf, m.nconf == 1 ? "" : "s",
                     m.conf.oom || !m.conf.p ? "(list unavailable)" : m.conf.p);
  }
  gt_textbuf_free(&m.conf);
  if (s != GT_OK) {
    gt_db_free(&m.out);
    return s;
  }
  gt_db_free(dst);
  *dst = m.out;
  return GT_OK;
}
