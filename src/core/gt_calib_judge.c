/* Comparing the calibrations of a merge's inputs (see gt_calib.h): which input's GPU ran its
 * reference GEMMs off the others' pace, and keeping such an input's rows from deciding a key
 * another input also holds. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_calib.h"
#include "gt_fileio.h"
#include "gt_stats.h"

static void say(gt_calib_report_fn fn, void *ctx, bool warning, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(gt_calib_report_fn fn, void *ctx, bool warning, const char *fmt, ...) {
  if (!fn) return;
  gt_textbuf_t b = {0};
  va_list ap;
  va_start(ap, fmt);
  gt_textbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  fn(ctx, warning, b.oom || !b.p ? "calibration: (out of memory formatting a line)" : b.p);
  gt_textbuf_free(&b);
}

/* "parts/x.shard-3-of-8.db (shard 3 of 8, device 3, host node1)". */
static void input_name(const gt_db_t *db, const gt_calib_t *c, char *buf, size_t cap) {
  const char *path = db->path[0] ? db->path : "(input)";
  if (c->shard_n > 0)
    snprintf(buf, cap, "%s (shard %d of %d, device %s, host %s)", path, c->shard_i, c->shard_n,
             c->device, c->host);
  else
    snprintf(buf, cap, "%s (device %s, host %s)", path, c->device, c->host);
}

static const char *device_of(const gt_db_t *db) {
  const char *d = gt_db_get_validator(db, "device");
  return d ? d : "";
}

/* One judging in progress: the inputs, their calibrations and the verdicts being filled. */
typedef struct judge {
  const gt_db_t *dbs;
  size_t n;
  gt_calib_t *c;
  gt_calib_verdict_t *v;
  double *val, *spr; /* scratch, n entries: the measurements of one comparison */
} judge_t;

/* Where input j holds the reference r (same key hash and timing method) measured in phase p:
 * its index, or -1. */
static int ref_index(const gt_calib_t *c, const gt_calib_ref_t *r, int p) {
  for (int k = 0; k < c->nrefs; k++)
    if (c->ref[k].hash == r->hash && strcmp(c->ref[k].timing, r->timing) == 0 &&
        c->ref[k].us[p] > 0)
      return k;
  return -1;
}

/* Compare input i's reference k in phase p with every calibrated input of its device product
 * holding the same one; flag i when it is off by more than its threshold. */
static void compare_one(judge_t *J, size_t i, int k, int p) {
  const gt_calib_ref_t *r = &J->c[i].ref[k];
  const char *dev = device_of(&J->dbs[i]);
  size_t m = 0;
  double others_spread = 0;
  for (size_t j = 0; j < J->n; j++) {
    if (!J->v[j].calibrated || strcmp(device_of(&J->dbs[j]), dev) != 0) continue;
    int kj = ref_index(&J->c[j], r, p);
    if (kj < 0) continue;
    J->val[m] = J->c[j].ref[kj].us[p];
    J->spr[m] = J->c[j].ref[kj].spread_pct[p];
    if (j != i) others_spread = J->spr[m];
    m++;
  }
  if (m < 2) return;
  J->v[i].compared = true;
  /* Two measurements cannot say which GPU is off; the slower is the suspect (a GPU is slowed
   * by heat, power caps or a neighbour, rarely sped up), so the faster is the reference. With
   * more, the median. The combined spread is this input's plus the median input's. */
  double ref = m == 2 ? fmin(J->val[0], J->val[1]) : gt_stats_median(J->val, m);
  double med_spread = m == 2 ? others_spread : gt_stats_median(J->spr, m);
  double lo = gt_stats_min(J->spr, m), hi = lo;
  for (size_t q = 0; q < m; q++) hi = J->spr[q] > hi ? J->spr[q] : hi;
  double dev_pct = 100.0 * (r->us[p] - ref) / ref;
  double thr = fmax(GT_CALIB_FLOOR_PCT, r->spread_pct[p] + med_spread);
  if (fabs(dev_pct) > fabs(J->v[i].dev_pct)) J->v[i].dev_pct = dev_pct;
  if (fabs(dev_pct) <= thr || J->v[i].flagged) return;
  char who[320], than[96];
  input_name(&J->dbs[i], &J->c[i], who, sizeof who);
  const char *when = p == GT_CALIB_BEFORE ? "before" : "after";
  if (m == 2) snprintf(than, sizeof than, "than the other input's %s its shapes", when);
  else snprintf(than, sizeof than, "than the median of %zu inputs %s their shapes", m, when);
  const bool gpu = strcmp(J->c[i].device, "host") != 0;
  J->v[i].flagged = true;
  snprintf(J->v[i].why, sizeof J->v[i].why,
           "calibration: %s: its reference GEMM (%s) ran %.1f%% %s %s (spreads %.1f-%.1f%%, "
           "threshold %.1f%%): %s; its rows never win over another input's row for the same key",
           who, r->shape, fabs(dev_pct), dev_pct > 0 ? "slower" : "faster", than, lo, hi, thr,
           !gpu ? (dev_pct > 0 ? "a slow or busy host" : "a host at other clocks than the rest")
           : dev_pct > 0 ? "a slow or throttled GPU" : "a GPU at other clocks than the rest");
}

/* Say when one of input i's references ran slower after its shapes than before by more than the
 * two measurements' spreads: its GPU slowed down while it tuned. A note, not a verdict: every
 * GPU of a sweep warms up over its run, and one that slowed more than the others shows in the
 * comparison of the times after the shapes, which compare_one makes. */
static void drift_note(const judge_t *J, size_t i, gt_calib_report_fn fn, void *ctx) {
  const gt_calib_t *c = &J->c[i];
  for (int k = 0; k < c->nrefs; k++) {
    const gt_calib_ref_t *r = &c->ref[k];
    double spread, d = gt_calib_drift_pct(r, &spread);
    double thr = fmax(GT_CALIB_FLOOR_PCT, spread);
    if (!(d > thr)) continue;
    char who[320];
    input_name(&J->dbs[i], c, who, sizeof who);
    say(fn, ctx, false, "calibration: %s: its reference GEMM (%s) ran %.1f%% slower after its "
        "shapes than before them (spreads %.1f%% and %.1f%%): its %s slowed during the run",
        who, r->shape, d, r->spread_pct[GT_CALIB_BEFORE], r->spread_pct[GT_CALIB_AFTER],
        strcmp(c->device, "host") ? "GPU" : "host");
    return;
  }
}

/* Whether input i shares a device product with another calibrated input. */
static bool has_peer(const judge_t *J, size_t i) {
  for (size_t j = 0; j < J->n; j++)
    if (j != i && J->v[j].calibrated && strcmp(device_of(&J->dbs[j]), device_of(&J->dbs[i])) == 0)
      return true;
  return false;
}

/* One line per device product whose inputs were compared, and what was not compared. */
static void summarise(judge_t *J, size_t ncal, gt_calib_report_fn fn, void *ctx) {
  for (size_t i = 0; i < J->n; i++) {
    if (!J->v[i].compared) continue;
    bool first = true; /* the first compared input of its device product speaks for it */
    for (size_t j = 0; j < i && first; j++)
      first = !(J->v[j].compared && strcmp(device_of(&J->dbs[j]), device_of(&J->dbs[i])) == 0);
    if (!first) continue;
    size_t m = 0, flagged = 0;
    double worst = 0;
    for (size_t j = i; j < J->n; j++) {
      if (!J->v[j].compared || strcmp(device_of(&J->dbs[j]), device_of(&J->dbs[i])) != 0) continue;
      m++;
      if (J->v[j].flagged) flagged++;
      else if (fabs(J->v[j].dev_pct) > worst) worst = fabs(J->v[j].dev_pct);
    }
    const char *dev = device_of(&J->dbs[i])[0] ? device_of(&J->dbs[i]) : "an unnamed device";
    if (flagged == m)
      say(fn, ctx, false, "calibration: all %zu inputs on %s named above: their reference GEMMs "
          "disagree beyond their spreads, so none is preferred", m, dev);
    else if (flagged)
      say(fn, ctx, false, "calibration: %zu of %zu inputs on %s named above; the others' reference "
          "GEMMs agree within %.1f%%", flagged, m, dev, worst);
    else
      say(fn, ctx, false, "calibration: %zu inputs on %s agree: every reference GEMM within %.1f%% "
          "of the others' (threshold: their spreads, at least %.1f%%)", m, dev, worst,
          GT_CALIB_FLOOR_PCT);
  }
  for (size_t i = 0; i < J->n; i++)
    if (J->v[i].calibrated && !J->v[i].compared && has_peer(J, i))
      say(fn, ctx, false, "calibration: %s shares no reference shape with the other inputs of its "
          "device (another shapes file?): not compared", J->dbs[i].path);
  size_t bare = 0;
  for (size_t i = 0; i < J->n; i++) bare += !J->v[i].calibrated;
  if (ncal && bare)
    say(fn, ctx, false, "calibration: %zu input%s without calibration lines (an older gemmtune, "
        "tune --no-calibration, or a merged DB): not compared", bare, bare == 1 ? "" : "s");
}

void gt_calib_judge(const gt_db_t *dbs, size_t n, gt_calib_verdict_t *v, gt_calib_report_fn fn,
                    void *ctx) {
  if (n == 0) return;
  memset(v, 0, n * sizeof *v);
  judge_t J = {.dbs = dbs, .n = n, .v = v};
  J.c = calloc(n, sizeof *J.c);
  J.val = calloc(n, sizeof *J.val);
  J.spr = calloc(n, sizeof *J.spr);
  size_t ncal = 0;
  if (!J.c || !J.val || !J.spr) {
    say(fn, ctx, true, "calibration: out of memory: the inputs' GPUs were not compared");
    n = 0;
  }
  for (size_t i = 0; i < n; i++) {
    gt_status_t s = gt_calib_load(&dbs[i], &J.c[i]);
    if (s == GT_OK) v[i].calibrated = true, ncal++;
    else if (s != GT_ERR_NOT_FOUND)
      say(fn, ctx, true, "calibration: %s: %s: not compared", dbs[i].path, gt_err_msg());
  }
  for (size_t i = 0; i < n; i++)
    for (int k = 0; v[i].calibrated && k < J.c[i].nrefs; k++)
      for (int p = 0; p < GT_CALIB_NPHASES; p++)
        if (J.c[i].ref[k].us[p] > 0) compare_one(&J, i, k, p);
  for (size_t i = 0; i < n; i++)
    if (v[i].flagged) say(fn, ctx, true, "%s", v[i].why);
  for (size_t i = 0; i < n; i++)
    if (v[i].calibrated) drift_note(&J, i, fn, ctx);
  if (n) summarise(&J, ncal, fn, ctx);
  free(J.c);
  free(J.val);
  free(J.spr);
}

/* db without the rows an unflagged input also holds; each dropped row reported. */
static gt_status_t yield_one(gt_db_t *dbs, size_t n, const gt_calib_verdict_t *v, size_t i,
                             gt_calib_report_fn fn, void *ctx) {
  gt_db_t kept;
  gt_db_init(&kept);
  snprintf(kept.path, sizeof kept.path, "%s", dbs[i].path);
  gt_status_t s = GT_OK;
  size_t dropped = 0;
  for (size_t q = 0; q < dbs[i].nval && s == GT_OK; q++)
    s = gt_db_set_validator(&kept, dbs[i].validators[q].name, dbs[i].validators[q].value);
  for (size_t r = 0; r < dbs[i].n && s == GT_OK; r++) {
    const gt_db_row_t *row = &dbs[i].rows[r];
    const gt_db_row_t *other = NULL;
    size_t holder = n;
    for (size_t j = 0; j < n && holder == n; j++)
      if (j != i && !v[j].flagged && (other = gt_db_lookup(&dbs[j], &row->key))) holder = j;
    if (!other) {
      s = gt_db_put(&kept, row);
      continue;
    }
    char key[1024];
    gt_problem_format_key(&row->key, key, sizeof key);
    say(fn, ctx, false, "calibration: kept %s/%s %.9g us over %s/%s %.9g us for %s (%s is named "
        "above)", dbs[holder].path, other->instance, other->time_us, dbs[i].path, row->instance,
        row->time_us, key, dbs[i].path);
    dropped++;
  }
  if (s != GT_OK || dropped == 0) {
    gt_db_free(&kept);
    return s;
  }
  gt_db_free(&dbs[i]);
  dbs[i] = kept;
  return GT_OK;
}

gt_status_t gt_calib_yield(gt_db_t *dbs, size_t n, const gt_calib_verdict_t *v,
                           gt_calib_report_fn fn, void *ctx) {
  for (size_t i = 0; i < n; i++) gt_calib_strip(&dbs[i]);
  for (size_t i = 0; i < n; i++) {
    if (!v[i].flagged) continue;
    gt_status_t s = yield_one(dbs, n, v, i, fn, ctx);
    if (s != GT_OK) return s;
  }
  return GT_OK;
}
