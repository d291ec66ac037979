/* A run's calibration (see gt_calib.h): which reference shapes it times, and the validator
 * lines that carry the times. Comparing the calibrations of a merge's inputs is
 * gt_calib_judge.c. */
#include "gt_calib.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- choosing the references ------------------------------------------------------------ */

typedef struct pick {
  double cost;
  uint64_t hash;
  size_t idx;
  bool found;
} pick_t;

/* Whether candidate (cost, hash, idx) beats the best so far: cheaper, then smaller hash, then
 * earlier line, so the choice never depends on anything but the shapes file. */
static void pick_offer(pick_t *best, double cost, uint64_t hash, size_t idx) {
  bool better = !best->found || cost < best->cost ||
                (cost == best->cost && (hash < best->hash || (hash == best->hash && idx < best->idx)));
  if (better) *best = (pick_t){cost, hash, idx, true};
}

size_t gt_calib_pick(const gt_shapes_t *sh, double peak_tflops, double peak_gbps, size_t max,
                     size_t *idx) {
  if (!sh || max == 0) return 0;
  const bool roofline = peak_tflops > 0 && peak_gbps > 0;
  /* FLOP per byte where the two roofs meet: below it a shape is memory-bound. */
  const double ridge = roofline ? peak_tflops * 1e12 / (peak_gbps * 1e9) : 0;
  pick_t mem = {0}, comp = {0}, any = {0};
  for (size_t i = 0; i < sh->n; i++) {
    const gt_problem_t *p = &sh->v[i].p;
    /* A reference is timed by this process's baseline: grouped_mm's is torch's own function. */
    if (p->op != GT_OP_GEMM) continue;
    const double flops = gt_problem_flops(p), bytes = gt_problem_min_bytes(p);
    const double cost = roofline ? fmax(flops / (peak_tflops * 1e12), bytes / (peak_gbps * 1e9))
                                 : flops + bytes;
    const uint64_t h = gt_problem_hash(p);
    pick_offer(&any, cost, h, i);
    if (roofline) pick_offer(bytes > 0 && flops / bytes >= ridge ? &comp : &mem, cost, h, i);
  }
  size_t n = 0;
  if (max == 1 || !roofline) {
    if (any.found) idx[n++] = any.idx;
    return n;
  }
  if (mem.found) idx[n++] = mem.idx;
  if (comp.found) idx[n++] = comp.idx;
  return n;
}

void gt_calib_ref_init(gt_calib_ref_t *r, const gt_problem_t *p, const char *timing) {
  memset(r, 0, sizeof *r);
  r->hash = gt_problem_hash(p);
  char batch[24] = "";
  if (p->batch > 1) snprintf(batch, sizeof batch, " batch %" PRId64, p->batch);
  snprintf(r->shape, sizeof r->shape, "%s %s %" PRId64 "x%" PRId64 "x%" PRId64 "%s",
           gt_dtype_name(p->a_type), gt_problem_ops(p), p->m, p->n, p->k, batch);
  snprintf(r->timing, sizeof r->timing, "%s", timing && *timing ? timing : "-");
}

/* The idx-th entry of a comma-separated list into out; false when the list has fewer. */
static bool list_entry(const char *list, int idx, char *out, size_t cap) {
  for (int i = 0; list && *list; i++) {
    size_t l = strcspn(list, ",");
    if (i == idx) return snprintf(out, cap, "%.*s", (int)l, list), true;
    list += l + (list[l] == ',');
  }
  return false;
}

void gt_calib_set_source(gt_calib_t *c, int shard_i, int shard_n, int ordinal,
                         const char *visible, const char *host) {
  c->shard_i = shard_n > 0 ? shard_i : 0;
  c->shard_n = shard_n > 0 ? shard_n : 0;
  /* Ordinal i under CUDA_VISIBLE_DEVICES is the list's i-th entry: the number (or UUID) that
   * nvidia-smi shows, which is what a person looks for on the machine. */
  if (ordinal < 0) snprintf(c->device, sizeof c->device, "host");
  else if (!list_entry(visible, ordinal, c->device, sizeof c->device) || !c->device[0])
    snprintf(c->device, sizeof c->device, "%d", ordinal);
  snprintf(c->host, sizeof c->host, "%s", host && *host ? host : "-");
  /* The lines are parsed at ',' and ')': keep them out of the free-text parts. */
  for (char *s = c->device; *s; s++)
    if (*s == ',' || *s == ')' || *s == ' ') *s = '_';
  for (char *s = c->host; *s; s++)
    if (*s == ',' || *s == ' ') *s = '_';
}

/* ---- the validator lines ---------------------------------------------------------------- */

static void ref_name(int i, char *buf, size_t cap) {
  snprintf(buf, cap, "%s-ref%d", GT_CALIB_VALIDATOR, i + 1);
}

void gt_calib_strip(gt_db_t *db) {
  size_t w = 0, pl = strlen(GT_CALIB_VALIDATOR);
  for (size_t i = 0; i < db->nval; i++) {
    const char *name = db->validators[i].name;
    bool ours = strncmp(name, GT_CALIB_VALIDATOR, pl) == 0 &&
                (name[pl] == '\0' || strncmp(name + pl, "-ref", 4) == 0);
    if (!ours) db->validators[w++] = db->validators[i];
  }
  db->nval = w;
}

gt_status_t gt_calib_store(gt_db_t *db, const gt_calib_t *c) {
  /* A validator value holds at most 159 characters: the shape and timing texts are cut so the
   * longest times the reader accepts still fit (150 at worst). */
  char src[160], val[256], name[48];
  gt_calib_strip(db);
  if (c->shard_n > 0)
    snprintf(src, sizeof src, "shard %d of %d, device %s, host %s", c->shard_i, c->shard_n,
             c->device, c->host);
  else
    snprintf(src, sizeof src, "no shard, device %s, host %s", c->device, c->host);
  gt_status_t s = gt_db_set_validator(db, GT_CALIB_VALIDATOR, src);
  int k = 0;
  for (int i = 0; i < c->nrefs && s == GT_OK; i++) {
    const gt_calib_ref_t *r = &c->ref[i];
    if (!(r->us[GT_CALIB_BEFORE] > 0)) continue;
    int len = snprintf(val, sizeof val, "ref %016" PRIx64 " (%.31s, %.15s), before %.6g us spread %.2f%%",
                       r->hash, r->shape, r->timing, r->us[GT_CALIB_BEFORE],
                       r->spread_pct[GT_CALIB_BEFORE]);
    if (r->us[GT_CALIB_AFTER] > 0 && len > 0 && (size_t)len < sizeof val)
      snprintf(val + len, sizeof val - (size_t)len, ", after %.6g us spread %.2f%%",
               r->us[GT_CALIB_AFTER], r->spread_pct[GT_CALIB_AFTER]);
    ref_name(k++, name, sizeof name);
    if (strlen(val) >= sizeof((gt_db_validator_t *)0)->value)
      return gt_err_set(GT_ERR_DATA, "calibration line %s does not fit a validator", name);
    s = gt_db_set_validator(db, name, val);
  }
  return s == GT_OK ? GT_OK : gt_err_set(s, "cannot store the calibration: %s", gt_err_msg());
}

static gt_status_t parse_source(const char *v, gt_calib_t *c) {
  int used = 0;
  if (sscanf(v, "shard %d of %d, %n", &c->shard_i, &c->shard_n, &used) == 2 && used > 0 &&
      c->shard_n > 0 && c->shard_i >= 0 && c->shard_i < c->shard_n) {
    v += used;
  } else if (strncmp(v, "no shard, ", 10) == 0) {
    c->shard_i = c->shard_n = 0;
    v += 10;
  } else {
    return gt_err_set(GT_ERR_DATA, "#%s: expected 'shard I of N, ...' or 'no shard, ...', got "
                      "'%.60s'", GT_CALIB_VALIDATOR, v);
  }
  if (sscanf(v, "device %47[^,], host %63s%n", c->device, c->host, &used) != 2 || v[used])
    return gt_err_set(GT_ERR_DATA, "#%s: expected '... device D, host H', got '%.60s'",
                      GT_CALIB_VALIDATOR, v);
  return GT_OK;
}

static gt_status_t parse_ref(const char *name, const char *v, gt_calib_ref_t *r) {
  char hex[17];
  int used = 0;
  memset(r, 0, sizeof *r);
  int got = sscanf(v, "ref %16[0-9a-f] (%47[^,], %23[^)]), before %lf us spread %lf%%%n", hex,
                   r->shape, r->timing, &r->us[GT_CALIB_BEFORE], &r->spread_pct[GT_CALIB_BEFORE],
                   &used);
  bool ok = got == 5 && used > 0 && strlen(hex) == 16;
  if (ok && v[used]) {
    int tail = 0;
    ok = sscanf(v + used, ", after %lf us spread %lf%%%n", &r->us[GT_CALIB_AFTER],
                &r->spread_pct[GT_CALIB_AFTER], &tail) == 2 && tail > 0 && !v[used + tail];
  }
  /* Times a run can take (a picosecond to a million seconds; 0 = not measured) and spreads up
   * to 10000%: anything else was not written by tune, and would not print back in a line. */
  for (int p = 0; ok && p < GT_CALIB_NPHASES; p++)
    ok = (r->us[p] == 0 || (r->us[p] >= 1e-6 && r->us[p] <= 1e12)) && r->spread_pct[p] >= 0 &&
         r->spread_pct[p] <= 1e4;
  ok = ok && r->us[GT_CALIB_BEFORE] > 0;
  if (!ok)
    return gt_err_set(GT_ERR_DATA, "#%s: expected 'ref HASH (SHAPE, TIMING), before T us spread "
                      "S%%[, after T us spread S%%]', got '%.80s'", name, v);
  r->hash = strtoull(hex, NULL, 16);
  return GT_OK;
}

gt_status_t gt_calib_load(const gt_db_t *db, gt_calib_t *c) {
  memset(c, 0, sizeof *c);
  const char *src = gt_db_get_validator(db, GT_CALIB_VALIDATOR);
  if (!src) return gt_err_set(GT_ERR_NOT_FOUND, "no calibration lines");
  gt_status_t s = parse_source(src, c);
  char name[48];
  for (int i = 0; i < GT_CALIB_MAX_REFS && s == GT_OK; i++) {
    ref_name(i, name, sizeof name);
    const char *v = gt_db_get_validator(db, name);
    if (!v) break;
    if ((s = parse_ref(name, v, &c->ref[i])) == GT_OK) c->nrefs++;
  }
  if (s != GT_OK) memset(c, 0, sizeof *c);
  return s;
}

double gt_calib_drift_pct(const gt_calib_ref_t *r, double *spread_pct) {
  if (spread_pct) *spread_pct = r->spread_pct[GT_CALIB_BEFORE] + r->spread_pct[GT_CALIB_AFTER];
  if (!(r->us[GT_CALIB_BEFORE] > 0) || !(r->us[GT_CALIB_AFTER] > 0)) return 0;
  return 100.0 * (r->us[GT_CALIB_AFTER] - r->us[GT_CALIB_BEFORE]) / r->us[GT_CALIB_BEFORE];
}
