/* The tuned DB in memory (see gt_db.h): its column table and header, init/free/copy, the keyed
 * lookup index, validators, and the error helpers the reader, writer and merge share
 * (gt_db_internal.h says which piece holds what).
 *
 * The file is the deployment artifact: the preload shim in someone else's process reads it and
 * acts on every row. So the reader accepts exactly what the writer produces and nothing looser,
 * the writer refuses to produce anything the reader would reject (it re-parses its own output
 * before touching the disk), and a row slower than its baseline cannot exist in either
 * direction: deploying it would make the application slower while the tuner reported a win. */
#include "gt_db_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- columns ------------------------------------------------------------------------------ */

#define ROW_MEMBER(f) offsetof(gt_db_row_t, f), sizeof(((gt_db_row_t *)0)->f)
const gt_db_col_t gt_db_result_cols[GT_DB_NRESULT] = {
    {"provider", GT_DB_COL_STR, ROW_MEMBER(provider)},
    {"lib", GT_DB_COL_STR, ROW_MEMBER(lib)},
    {"instance", GT_DB_COL_STR, ROW_MEMBER(instance)},
    {"time_us", GT_DB_COL_TIME, ROW_MEMBER(time_us)},
    {"baseline_us", GT_DB_COL_TIME, ROW_MEMBER(baseline_us)},
    {"speedup", GT_DB_COL_DBL, ROW_MEMBER(speedup)},
    {"error", GT_DB_COL_DBL, ROW_MEMBER(error)},
    {"error_bound", GT_DB_COL_DBL, ROW_MEMBER(error_bound)},
    {"timing", GT_DB_COL_STR, ROW_MEMBER(timing)},
    {"rounds", GT_DB_COL_INT, ROW_MEMBER(rounds)},
    {"spread_pct", GT_DB_COL_DBL, ROW_MEMBER(spread_pct)},
    {"sm_clock_mhz", GT_DB_COL_INT, ROW_MEMBER(sm_clock_mhz)},
    {"splitk_searched", GT_DB_COL_BOOL, ROW_MEMBER(splitk_searched)},
    {"throttled", GT_DB_COL_BOOL, ROW_MEMBER(throttled)},
    {"baseline", GT_DB_COL_STR, ROW_MEMBER(baseline)},
    /* Appended after the first files were written: a format-1 file is this table cut short
     * before 'device' (GT_DB_NCOLS_V1). New columns go at the end, with a format line of their
     * own for the files that lack them. */
    {"device", GT_DB_COL_OPTSTR, ROW_MEMBER(device)},
    {"device_mem_gib", GT_DB_COL_INT, ROW_MEMBER(device_mem_gib)},
    {"floor_us", GT_DB_COL_TIME, ROW_MEMBER(floor_us)},
    {"floor_bound", GT_DB_COL_BOUND, ROW_MEMBER(floor_bound)},
    {"floor_pct", GT_DB_COL_DBL, ROW_MEMBER(floor_pct)},
    /* Format 4: written after the fp8 key fields (a format-3 row ends before them). */
    {"live", GT_DB_COL_LIVE, ROW_MEMBER(live)},
    {"live_us", GT_DB_COL_TIME, ROW_MEMBER(live_us)},
    {"live_baseline_us", GT_DB_COL_TIME, ROW_MEMBER(live_baseline_us)},
    {"live_speedup", GT_DB_COL_DBL, ROW_MEMBER(live_speedup)},
};

/* Column c's place: [0, KEY_V2) the pre-fp8 key, [KEY_V2, NCOLS_V2) the first results,
 * [NCOLS_V2, NCOLS_V3) the fp8 key fields, [NCOLS_V3, NCOLS) the live results. */
int gt_db_col_key_field(int c) {
  if (c < GT_KEY_NFIELDS_V2) return c;
  if (c < GT_DB_NCOLS_V2) return -1;
  return c < GT_DB_NCOLS_V3 ? GT_KEY_NFIELDS_V2 + (c - GT_DB_NCOLS_V2) : -1;
}

int gt_db_col_result(int c) {
  if (c >= GT_KEY_NFIELDS_V2 && c < GT_DB_NCOLS_V2) return c - GT_KEY_NFIELDS_V2;
  if (c >= GT_DB_NCOLS_V3 && c < GT_DB_NCOLS) return GT_DB_NRESULT_V3 + (c - GT_DB_NCOLS_V3);
  return -1;
}

const char *gt_db_col_name(int c) {
  int f = gt_db_col_key_field(c), r = gt_db_col_result(c);
  return f >= 0 ? gt_key_field_names[f] : r >= 0 ? gt_db_result_cols[r].name : "?";
}

static char g_header[2048], g_header_v3[2048], g_header_v2[2048], g_header_v1[2048];
static pthread_once_t g_header_once = PTHREAD_ONCE_INIT;

static void header_join(char *out, size_t cap, int ncols) {
  size_t len = 0;
  for (int c = 0; c < ncols; c++)
    len += (size_t)snprintf(out + len, cap - len, "%s%s", c ? "," : "", gt_db_col_name(c));
}

static void header_build(void) {
  header_join(g_header, sizeof g_header, GT_DB_NCOLS);
  header_join(g_header_v3, sizeof g_header_v3, GT_DB_NCOLS_V3);
  header_join(g_header_v2, sizeof g_header_v2, GT_DB_NCOLS_V2);
  header_join(g_header_v1, sizeof g_header_v1, GT_DB_NCOLS_V1);
}

const char *gt_db_header_v3(void) {
  pthread_once(&g_header_once, header_build);
  return g_header_v3;
}

const char *gt_db_header_v2(void) {
  pthread_once(&g_header_once, header_build);
  return g_header_v2;
}

const char *gt_db_header(void) {
  pthread_once(&g_header_once, header_build);
  return g_header;
}

const char *gt_db_header_v1(void) {
  pthread_once(&g_header_once, header_build);
  return g_header_v1;
}

/* ---- init / free / copy ------------------------------------------------------------------- */

void gt_db_init(gt_db_t *db) { memset(db, 0, sizeof *db); }

void gt_db_free(gt_db_t *db) {
  free(db->rows);
  free(db->validators);
  free(db->slots);
  free(db->hashes);
  gt_db_init(db);
}

static void *dup_array(const void *p, size_t n, size_t size) {
  if (!n) return NULL;
  void *q = malloc(n * size);
  if (q) memcpy(q, p, n * size);
  return q;
}

gt_status_t gt_db_copy(gt_db_t *dst, const gt_db_t *src) {
  gt_db_init(dst);
  dst->rows = dup_array(src->rows, src->n, sizeof *src->rows);
  dst->validators = dup_array(src->validators, src->nval, sizeof *src->validators);
  if ((src->n && !dst->rows) || (src->nval && !dst->validators)) {
    gt_db_free(dst);
    return gt_err_set(GT_ERR_NOMEM, "out of memory copying a DB of %zu rows", src->n);
  }
  dst->n = dst->cap = src->n;
  dst->nval = dst->capval = src->nval;
  memcpy(dst->path, src->path, sizeof dst->path);
  /* The index is rebuilt lazily (by the first put or lookup-through-put) rather than copied:
   * src's index may not cover rows appended to it by hand. */
  return GT_OK;
}

/* ---- the lookup index --------------------------------------------------------------------- */

/* Open addressing, linear probing, load <= 1/2. Slots hold row index + 1 (0 = empty); the
 * per-row hash is kept so probing compares 64-bit hashes and formats keys only on a match. */

/* Room for `need` rows and as many hashes. The hash array has its own capacity because rows
 * may have been grown by a caller appending by hand. */
static gt_status_t rows_reserve(gt_db_t *db, size_t need) {
  if (need > db->cap) {
    size_t ncap = db->cap ? db->cap : 16;
    while (ncap < need) ncap *= 2;
    gt_db_row_t *r = realloc(db->rows, ncap * sizeof *r);
    if (!r) return gt_err_set(GT_ERR_NOMEM, "out of memory growing the DB to %zu rows", ncap);
    db->rows = r;
    db->cap = ncap;
  }
  if (db->hashes_cap < db->cap) {
    uint64_t *h = realloc(db->hashes, db->cap * sizeof *h);
    if (!h) return gt_err_set(GT_ERR_NOMEM, "out of memory indexing %zu rows", db->cap);
    db->hashes = h;
    db->hashes_cap = db->cap;
  }
  return GT_OK;
}

static void index_place(gt_db_t *db, size_t i) {
  size_t mask = db->nslots - 1;
  for (size_t s = (size_t)db->hashes[i] & mask;; s = (s + 1) & mask)
    if (!db->slots[s]) {
      db->slots[s] = i + 1;
      return;
    }
}

/* Rebuild the index over all rows, sized for at least `want` rows. */
static gt_status_t index_rebuild(gt_db_t *db, size_t want) {
  if (want < db->n) want = db->n;
  gt_status_t s = rows_reserve(db, want > 0 ? want : 1);
  if (s != GT_OK) return s;
  size_t ns = 32;
  while (ns < 2 * want) ns *= 2;
  size_t *slots = calloc(ns, sizeof *slots);
  if (!slots) return gt_err_set(GT_ERR_NOMEM, "out of memory indexing %zu rows", want);
  free(db->slots);
  db->slots = slots;
  db->nslots = ns;
  for (size_t i = 0; i < db->n; i++) {
    db->hashes[i] = gt_problem_hash(&db->rows[i].key);
    index_place(db, i);
  }
  db->nindexed = db->n;
  return GT_OK;
}

gt_status_t gt_db_index_ready(gt_db_t *db) {
  if (!db->slots || db->nindexed != db->n || 2 * (db->n + 1) > db->nslots)
    return index_rebuild(db, db->n < 8 ? 16 : 2 * db->n);
  return rows_reserve(db, db->n + 1);
}

long gt_db_index_find(const gt_db_t *db, const gt_problem_t *k, uint64_t h) {
  size_t mask = db->nslots - 1;
  for (size_t s = (size_t)h & mask; db->slots[s]; s = (s + 1) & mask) {
    size_t i = db->slots[s] - 1;
    if (db->hashes[i] == h && gt_problem_equal(&db->rows[i].key, k)) return (long)i;
  }
  return -1;
}

void gt_db_index_append(gt_db_t *db, const gt_db_row_t *r, uint64_t h) {
  size_t i = db->n++;
  db->rows[i] = *r;
  db->hashes[i] = h;
  index_place(db, i);
  db->nindexed = db->n;
}

const gt_db_row_t *gt_db_lookup(const gt_db_t *db, const gt_problem_t *k) {
  if (!db || db->n == 0) return NULL;
  if (db->slots && db->nindexed == db->n) {
    long i = gt_db_index_find(db, k, gt_problem_hash(k));
    return i < 0 ? NULL : &db->rows[i];
  }
  /* Rows were appended without gt_db_put: the index does not cover them. */
  for (size_t i = 0; i < db->n; i++)
    if (gt_problem_equal(&db->rows[i].key, k)) return &db->rows[i];
  return NULL;
}

gt_status_t gt_db_remove(gt_db_t *db, const gt_problem_t *k) {
  long at = -1;
  for (size_t i = 0; i < db->n && at < 0; i++)
    if (gt_problem_equal(&db->rows[i].key, k)) at = (long)i;
  if (at < 0) return gt_err_set(GT_ERR_NOT_FOUND, "no row for this key");
  memmove(&db->rows[at], &db->rows[at + 1], (db->n - (size_t)at - 1) * sizeof *db->rows);
  db->n--;
  /* Row indices moved. Without memory for a new index, lookups scan (no slots) until the next
   * put rebuilds it. */
  if (db->slots && index_rebuild(db, db->n < 8 ? 16 : 2 * db->n) != GT_OK) {
    gt_err_clear();
    free(db->slots);
    db->slots = NULL;
    db->nslots = db->nindexed = 0;
  }
  return GT_OK;
}

/* ---- validators --------------------------------------------------------------------------- */

long gt_db_validator_find(const gt_db_t *db, const char *name) {
  for (size_t i = 0; i < db->nval; i++)
    if (strcmp(db->validators[i].name, name) == 0) return (long)i;
  return -1;
}

const char *gt_db_get_validator(const gt_db_t *db, const char *name) {
  long i = gt_db_validator_find(db, name);
  return i < 0 ? NULL : db->validators[i].value;
}

gt_status_t gt_db_validator_store(gt_db_t *db, const char *name, const char *value) {
  long i = gt_db_validator_find(db, name);
  if (i < 0) {
    if (db->nval == db->capval) {
      size_t nc = db->capval ? 2 * db->capval : 8;
      gt_db_validator_t *v = realloc(db->validators, nc * sizeof *v);
      if (!v) return gt_err_set(GT_ERR_NOMEM, "out of memory adding validator '%s'", name);
      db->validators = v;
      db->capval = nc;
    }
    i = (long)db->nval++;
    snprintf(db->validators[i].name, sizeof db->validators[i].name, "%s", name);
  }
  snprintf(db->validators[i].value, sizeof db->validators[i].value, "%s", value);
  return GT_OK;
}

gt_status_t gt_db_set_validator(gt_db_t *db, const char *name, const char *value) {
  char why[256];
  if (!name || !value) return gt_err_set(GT_ERR_USAGE, "validator name and value are required");
  if (!gt_db_validator_ok(name, value, why, sizeof why)) return gt_err_set(GT_ERR_USAGE, "%s", why);
  return gt_db_validator_store(db, name, value);
}

/* ---- kept keys ---------------------------------------------------------------------------- */

void gt_db_kept_name(const gt_problem_t *key, char *name, size_t cap) {
  snprintf(name, cap, GT_DB_KEPT_PREFIX "%016" PRIx64, gt_problem_hash(key));
}

bool gt_db_is_kept_name(const char *name) {
  return name && strncmp(name, GT_DB_KEPT_PREFIX, strlen(GT_DB_KEPT_PREFIX)) == 0;
}

gt_status_t gt_db_set_kept(gt_db_t *db, const gt_problem_t *key, const char *note) {
  char name[48], value[sizeof(((gt_db_validator_t *)0)->value)];
  gt_db_kept_name(key, name, sizeof name);
  snprintf(value, sizeof value, "%s", note && note[0] ? note : "kept");
  for (char *c = value; *c; c++)
    if (*c == '\r' || *c == '\n') *c = ' ';
  return gt_db_set_validator(db, name, value);
}

const char *gt_db_get_kept(const gt_db_t *db, const gt_problem_t *key) {
  char name[48];
  gt_db_kept_name(key, name, sizeof name);
  return gt_db_get_validator(db, name);
}

size_t gt_db_drop_kept_with_rows(gt_db_t *db) {
  /* Each row's kept name once, looked up among the validators (order kept: files stay diffable). */
  size_t dropped = 0;
  char name[48];
  for (size_t i = 0; i < db->n; i++) {
    gt_db_kept_name(&db->rows[i].key, name, sizeof name);
    long v = gt_db_validator_find(db, name);
    if (v < 0) continue;
    memmove(&db->validators[v], &db->validators[v + 1],
            (db->nval - (size_t)v - 1) * sizeof db->validators[0]);
    db->nval--;
    dropped++;
  }
  return dropped;
}

/* ---- error messages ----------------------------------------------------------------------- */

gt_status_t gt_db_err_restatus(gt_status_t s) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", gt_err_msg());
  return gt_err_set(s, "%s", msg);
}

gt_status_t gt_db_err_prefix(gt_status_t s, const char *fmt, ...) {
  char msg[1024], pre[640];
  snprintf(msg, sizeof msg, "%s", gt_err_msg());
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  return gt_err_set(s, "%s%s", pre, msg);
}
