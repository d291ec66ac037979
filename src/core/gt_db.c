/* The tuned DB (see gt_db.h): strict CSV reader, atomic writer, keyed lookup, miss explanation
 * and merge.
 *
 * The file is the deployment artifact: the preload shim in someone else's process reads it and
 * acts on every row. So the reader accepts exactly what the writer produces and nothing looser,
 * the writer refuses to produce anything the reader would reject (it re-parses its own output
 * before touching the disk), and a row slower than its baseline cannot exist in either
 * direction: deploying it would make the application slower while the tuner reported a win. */
#define _GNU_SOURCE
#include "gt_db.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- growable text buffer ----------------------------------------------------------------- */

typedef struct sb {
  char *p;
  size_t len, cap;
  bool oom; /* sticky: checked once at the end instead of after every append */
} sb_t;

static void sb_vprintf(sb_t *b, const char *fmt, va_list ap) {
  if (b->oom) return;
  for (;;) {
    va_list aq;
    va_copy(aq, ap);
    size_t room = b->cap - b->len;
    int w = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, aq);
    va_end(aq);
    if (w < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)w < room) {
      b->len += (size_t)w;
      return;
    }
    size_t ncap = b->cap ? b->cap * 2 : 4096;
    while (ncap < b->len + (size_t)w + 1) ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

static void sb_printf(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

/* ---- columns ------------------------------------------------------------------------------ */

/* The result columns after the key, as data: the reader, the writer and the header all walk
 * this one table, so a column cannot be added to one and forgotten in another. */
typedef enum col_kind {
  COL_STR,  /* char[size], non-empty, no ',' '"' CR LF, no surrounding whitespace */
  COL_TIME, /* double, printed %.9g: microseconds need more digits than ratios */
  COL_DBL,  /* double, printed %.6g */
  COL_INT,  /* int */
  COL_BOOL  /* bool, 0 or 1 */
} col_kind_t;

#define ROW_MEMBER(f) offsetof(gt_db_row_t, f), sizeof(((gt_db_row_t *)0)->f)
static const struct {
  const char *name;
  col_kind_t kind;
  size_t off, size;
} k_cols[GT_DB_NCOLS - GT_KEY_NFIELDS] = {
    {"provider", COL_STR, ROW_MEMBER(provider)},
    {"lib", COL_STR, ROW_MEMBER(lib)},
    {"instance", COL_STR, ROW_MEMBER(instance)},
    {"time_us", COL_TIME, ROW_MEMBER(time_us)},
    {"baseline_us", COL_TIME, ROW_MEMBER(baseline_us)},
    {"speedup", COL_DBL, ROW_MEMBER(speedup)},
    {"error", COL_DBL, ROW_MEMBER(error)},
    {"error_bound", COL_DBL, ROW_MEMBER(error_bound)},
    {"timing", COL_STR, ROW_MEMBER(timing)},
    {"rounds", COL_INT, ROW_MEMBER(rounds)},
    {"spread_pct", COL_DBL, ROW_MEMBER(spread_pct)},
    {"sm_clock_mhz", COL_INT, ROW_MEMBER(sm_clock_mhz)},
    {"splitk_searched", COL_BOOL, ROW_MEMBER(splitk_searched)},
    {"throttled", COL_BOOL, ROW_MEMBER(throttled)},
    {"baseline", COL_STR, ROW_MEMBER(baseline)},
};
#define NRESULT ((int)(sizeof k_cols / sizeof k_cols[0]))

static const char *col_name(int c) {
  return c < GT_KEY_NFIELDS ? gt_key_field_names[c] : k_cols[c - GT_KEY_NFIELDS].name;
}

static char g_header[2048];
static pthread_once_t g_header_once = PTHREAD_ONCE_INIT;

static void header_build(void) {
  size_t len = 0;
  for (int c = 0; c < GT_DB_NCOLS; c++)
    len += (size_t)snprintf(g_header + len, sizeof g_header - len, "%s%s", c ? "," : "",
                            col_name(c));
}

const char *gt_db_header(void) {
  pthread_once(&g_header_once, header_build);
  return g_header;
}

/* A speedup printed with %.6g and times with %.9g agree with baseline/time to about 5e-6. */
#define SPEEDUP_RTOL 1e-4
/* Key text: 23 fields, each name=value with values well under 64 chars. */
#define KEY_TEXT_MAX 1024

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

/* Make the index cover every row and leave room for one more. */
static gt_status_t index_ready(gt_db_t *db) {
  if (!db->slots || db->nindexed != db->n || 2 * (db->n + 1) > db->nslots)
    return index_rebuild(db, db->n < 8 ? 16 : 2 * db->n);
  return rows_reserve(db, db->n + 1);
}

/* Row index of key k (hash h), or -1. Requires a complete index. */
static long index_find(const gt_db_t *db, const gt_problem_t *k, uint64_t h) {
  size_t mask = db->nslots - 1;
  for (size_t s = (size_t)h & mask; db->slots[s]; s = (s + 1) & mask) {
    size_t i = db->slots[s] - 1;
    if (db->hashes[i] == h && gt_problem_equal(&db->rows[i].key, k)) return (long)i;
  }
  return -1;
}

/* Append a row whose key is known to be absent. Requires index_ready. */
static void index_append(gt_db_t *db, const gt_db_row_t *r, uint64_t h) {
  size_t i = db->n++;
  db->rows[i] = *r;
  db->hashes[i] = h;
  index_place(db, i);
  db->nindexed = db->n;
}

const gt_db_row_t *gt_db_lookup(const gt_db_t *db, const gt_problem_t *k) {
  if (!db || db->n == 0) return NULL;
  if (db->slots && db->nindexed == db->n) {
    long i = index_find(db, k, gt_problem_hash(k));
    return i < 0 ? NULL : &db->rows[i];
  }
  /* Rows were appended without gt_db_put: the index does not cover them. */
  for (size_t i = 0; i < db->n; i++)
    if (gt_problem_equal(&db->rows[i].key, k)) return &db->rows[i];
  return NULL;
}

/* ---- validators --------------------------------------------------------------------------- */

/* Names are identifiers so a validator line can never be mistaken for the format line or a
 * comment; values are free text on one line. Writes the reason into why on failure. */
static bool validator_ok(const char *name, const char *value, char *why, size_t cap) {
  size_t nl = strlen(name);
  if (nl == 0) return snprintf(why, cap, "validator name is empty"), false;
  if (nl >= sizeof((gt_db_validator_t *)0)->name)
    return snprintf(why, cap, "validator name '%.60s...' is too long (max %zu chars)", name,
                    sizeof((gt_db_validator_t *)0)->name - 1),
           false;
  for (size_t i = 0; i < nl; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!isalnum(c) && c != '_' && c != '-' && c != '.')
      return snprintf(why, cap, "validator name '%s': character '%c' (allowed: letters, digits, _ - .)",
                      name, c),
             false;
  }
  if (strlen(value) >= sizeof((gt_db_validator_t *)0)->value)
    return snprintf(why, cap, "validator '%s': value too long (max %zu chars)", name,
                    sizeof((gt_db_validator_t *)0)->value - 1),
           false;
  if (strpbrk(value, "\r\n"))
    return snprintf(why, cap, "validator '%s': value contains a line break", name), false;
  return true;
}

static long validator_find(const gt_db_t *db, const char *name) {
  for (size_t i = 0; i < db->nval; i++)
    if (strcmp(db->validators[i].name, name) == 0) return (long)i;
  return -1;
}

const char *gt_db_get_validator(const gt_db_t *db, const char *name) {
  long i = validator_find(db, name);
  return i < 0 ? NULL : db->validators[i].value;
}

static gt_status_t validator_store(gt_db_t *db, const char *name, const char *value) {
  long i = validator_find(db, name);
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
  if (!validator_ok(name, value, why, sizeof why)) return gt_err_set(GT_ERR_USAGE, "%s", why);
  return validator_store(db, name, value);
}

/* Keep the current message, change the status (a key parser may say GT_ERR_USAGE where, inside
 * a file, the problem is malformed data). */
static gt_status_t err_restatus(gt_status_t s) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", gt_err_msg());
  return gt_err_set(s, "%s", msg);
}

/* Re-issue the current message with a prefix ("db.csv:7: "). */
static gt_status_t err_prefix(gt_status_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static gt_status_t err_prefix(gt_status_t s, const char *fmt, ...) {
  char msg[1024], pre[640];
  snprintf(msg, sizeof msg, "%s", gt_err_msg());
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  return gt_err_set(s, "%s%s", pre, msg);
}

/* ---- row checks --------------------------------------------------------------------------- */

/* A cell the reader would accept: non-empty, one CSV field (no ',' and no '"' which other CSV
 * readers would treat as quoting), one line, no surrounding whitespace. */
static gt_status_t cell_check(const char *field, const char *v) {
  size_t len = strlen(v);
  if (len == 0) return gt_err_set(GT_ERR_DATA, "field '%s': empty", field);
  const char *bad = strpbrk(v, ",\"\r\n");
  if (bad)
    return gt_err_set(GT_ERR_DATA, "field '%s': contains %s in '%.80s'", field,
                      *bad == ',' ? "a comma" : *bad == '"' ? "a double quote" : "a line break", v);
  if (isspace((unsigned char)v[0]) || isspace((unsigned char)v[len - 1]))
    return gt_err_set(GT_ERR_DATA, "field '%s': leading or trailing whitespace in '%.80s'", field,
                      v);
  return GT_OK;
}

gt_status_t gt_db_row_check(const gt_db_row_t *r) {
  gt_status_t s = gt_problem_validate(&r->key);
  if (s != GT_OK) return err_restatus(GT_ERR_DATA);
  for (int i = 0; i < GT_KEY_NFIELDS; i++) {
    char v[128];
    gt_problem_field_str(&r->key, i, v, sizeof v);
    if ((s = cell_check(gt_key_field_names[i], v)) != GT_OK) return s;
  }
  for (int c = 0; c < NRESULT; c++) {
    const char *name = k_cols[c].name;
    const void *p = (const char *)r + k_cols[c].off;
    switch (k_cols[c].kind) {
      case COL_STR:
        if (strnlen(p, k_cols[c].size) == k_cols[c].size)
          return gt_err_set(GT_ERR_DATA, "field '%s': too long (max %zu chars)", name,
                            k_cols[c].size - 1);
        if ((s = cell_check(name, p)) != GT_OK) return s;
        break;
      case COL_TIME:
      case COL_DBL:
        if (!isfinite(*(const double *)p))
          return gt_err_set(GT_ERR_DATA, "field '%s': not finite (%g)", name, *(const double *)p);
        break;
      case COL_INT:
      case COL_BOOL:
        break;
    }
  }
  if (!(r->time_us > 0))
    return gt_err_set(GT_ERR_DATA, "field 'time_us': must be > 0 (got %.9g)", r->time_us);
  if (!(r->baseline_us > 0))
    return gt_err_set(GT_ERR_DATA, "field 'baseline_us': must be > 0 (got %.9g)", r->baseline_us);
  if (!(r->time_us < r->baseline_us))
    return gt_err_set(GT_ERR_DATA,
                      "field 'time_us': %.9g is not below baseline_us %.9g (a row slower than "
                      "its baseline is never kept)",
                      r->time_us, r->baseline_us);
  double want = r->baseline_us / r->time_us;
  if (!(fabs(r->speedup - want) <= SPEEDUP_RTOL * want))
    return gt_err_set(GT_ERR_DATA, "field 'speedup': %.6g does not match baseline_us/time_us = %.6g",
                      r->speedup, want);
  if (!(r->error >= 0))
    return gt_err_set(GT_ERR_DATA, "field 'error': must be >= 0 (got %.6g)", r->error);
  if (!(r->error_bound >= 0))
    return gt_err_set(GT_ERR_DATA, "field 'error_bound': must be >= 0 (got %.6g)", r->error_bound);
  if (!(r->error <= r->error_bound))
    return gt_err_set(GT_ERR_DATA,
                      "field 'error': %.6g exceeds error_bound %.6g (the row failed its gate)",
                      r->error, r->error_bound);
  if (r->rounds < 1)
    return gt_err_set(GT_ERR_DATA, "field 'rounds': must be >= 1 (got %d)", r->rounds);
  if (!(r->spread_pct >= 0))
    return gt_err_set(GT_ERR_DATA, "field 'spread_pct': must be >= 0 (got %.6g)", r->spread_pct);
  if (r->sm_clock_mhz < 0)
    return gt_err_set(GT_ERR_DATA, "field 'sm_clock_mhz': must be >= 0 (got %d)", r->sm_clock_mhz);
  return GT_OK;
}

/* ---- reader ------------------------------------------------------------------------------- */

static gt_status_t parse_double(const char *field, const char *v, double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (*end || end == v || errno == ERANGE || !isfinite(x))
    return gt_err_set(GT_ERR_DATA, "field '%s': not a number: '%.80s'", field, v);
  *out = x;
  return GT_OK;
}

static gt_status_t parse_int(const char *field, const char *v, int *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (*end || end == v || errno == ERANGE || x < INT_MIN || x > INT_MAX)
    return gt_err_set(GT_ERR_DATA, "field '%s': not an integer: '%.80s'", field, v);
  *out = (int)x;
  return GT_OK;
}

/* Parse one data row (line is modified in place). */
static gt_status_t parse_row(char *line, gt_db_row_t *r) {
  char *cell[GT_DB_NCOLS];
  int nc = 1;
  for (const char *q = line; *q; q++) nc += *q == ',';
  if (nc != GT_DB_NCOLS) {
    if (nc < GT_DB_NCOLS)
      return gt_err_set(GT_ERR_DATA, "%d columns, expected %d (missing '%s' onward)", nc,
                        GT_DB_NCOLS, col_name(nc));
    return gt_err_set(GT_ERR_DATA, "%d columns, expected %d (extra columns after '%s')", nc,
                      GT_DB_NCOLS, col_name(GT_DB_NCOLS - 1));
  }
  char *q = line;
  for (int c = 0; c < GT_DB_NCOLS; c++) {
    cell[c] = q;
    char *comma = strchr(q, ',');
    if (comma) *comma = '\0', q = comma + 1;
  }

  memset(r, 0, sizeof *r);
  gt_problem_init(&r->key);
  gt_status_t s;
  for (int c = 0; c < GT_DB_NCOLS; c++)
    if ((s = cell_check(col_name(c), cell[c])) != GT_OK) return s;

  for (int i = 0; i < GT_KEY_NFIELDS; i++) {
    if (gt_problem_set_field(&r->key, gt_key_field_names[i], cell[i]) != GT_OK)
      return err_restatus(GT_ERR_DATA);
    /* Aliases ("fp16") and spellings like "0016" parse, but the file is machine-written:
     * a non-canonical cell means it was edited by hand or by a different writer. */
    char canon[128];
    gt_problem_field_str(&r->key, i, canon, sizeof canon);
    if (strcmp(canon, cell[i]) != 0)
      return gt_err_set(GT_ERR_DATA, "field '%s': '%.80s' is not the canonical spelling '%s'",
                        gt_key_field_names[i], cell[i], canon);
  }
  if (gt_problem_validate(&r->key) != GT_OK) return err_restatus(GT_ERR_DATA);

  for (int c = 0; c < NRESULT; c++) {
    const char *name = k_cols[c].name, *v = cell[GT_KEY_NFIELDS + c];
    void *p = (char *)r + k_cols[c].off;
    switch (k_cols[c].kind) {
      case COL_STR:
        if (strlen(v) >= k_cols[c].size)
          return gt_err_set(GT_ERR_DATA, "field '%s': too long (%zu chars, max %zu)", name,
                            strlen(v), k_cols[c].size - 1);
        memcpy(p, v, strlen(v) + 1);
        break;
      case COL_TIME:
      case COL_DBL:
        if ((s = parse_double(name, v, p)) != GT_OK) return s;
        break;
      case COL_INT:
        if ((s = parse_int(name, v, p)) != GT_OK) return s;
        break;
      case COL_BOOL:
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
          return gt_err_set(GT_ERR_DATA, "field '%s': expected 0 or 1, got '%.80s'", name, v);
        *(bool *)p = v[0] == '1';
        break;
    }
  }
  return gt_db_row_check(r);
}

/* Explain a header row that is not exactly gt_db_header(), naming the first wrong column. */
static gt_status_t header_mismatch(char *line) {
  char *q = line;
  for (int c = 0;; c++) {
    char *comma = strchr(q, ',');
    if (comma) *comma = '\0';
    if (c >= GT_DB_NCOLS)
      return gt_err_set(GT_ERR_DATA, "header: unexpected extra column '%.60s' after '%s'", q,
                        col_name(GT_DB_NCOLS - 1));
    if (strcmp(q, col_name(c)) != 0)
      return gt_err_set(GT_ERR_DATA, "header column %d is '%.60s', expected '%s'", c + 1, q,
                        col_name(c));
    if (!comma) {
      if (c + 1 < GT_DB_NCOLS)
        return gt_err_set(GT_ERR_DATA, "header: missing column '%s' (and %d after it)",
                          col_name(c + 1), GT_DB_NCOLS - c - 2);
      return gt_err_set(GT_ERR_DATA, "header row differs from the expected one");
    }
    q = comma + 1;
  }
}

static int line_of(const char *text, const char *at) {
  int line = 1;
  for (const char *q = text; q < at; q++) line += *q == '\n';
  return line;
}

static gt_status_t parse_into(const char *name, const char *text, size_t len, gt_db_t *db) {
  if (len == 0)
    return gt_err_set(GT_ERR_DATA, "%s:1: empty file (expected '%s')", name, GT_DB_FORMAT_LINE);
  const char *nul = memchr(text, '\0', len);
  if (nul)
    return gt_err_set(GT_ERR_DATA, "%s:%d: NUL byte (not a text file)", name, line_of(text, nul));
  /* A writer killed mid-line leaves a row that may still parse (a time cut from 12.5 to 1);
   * only the final newline tells a complete file from a torn one. */
  if (text[len - 1] != '\n')
    return gt_err_set(GT_ERR_DATA, "%s:%d: truncated last line (no newline at end of file)", name,
                      line_of(text, text + len - 1));

  enum { WANT_FORMAT, WANT_HEADER, ROWS } state = WANT_FORMAT;
  int *row_line = NULL; /* source line of each row, for duplicate messages */
  size_t row_line_cap = 0;
  char *buf = NULL;
  size_t buf_cap = 0;
  gt_status_t s = GT_OK;
  int ln = 0;

  for (const char *p = text; p < text + len && s == GT_OK;) {
    const char *nl = memchr(p, '\n', (size_t)(text + len - p));
    if (!nl) nl = text + len; /* unreachable after the truncation check; kept for safety */
    size_t ll = (size_t)(nl - p);
    ln++;
    if (ll + 1 > buf_cap) {
      buf_cap = ll + 1 > 2 * buf_cap ? ll + 1 : 2 * buf_cap;
      char *nb = realloc(buf, buf_cap);
      if (!nb) {
        s = gt_err_set(GT_ERR_NOMEM, "%s:%d: out of memory", name, ln);
        break;
      }
      buf = nb;
    }
    memcpy(buf, p, ll);
    if (ll && buf[ll - 1] == '\r') ll--; /* CRLF from an editor or a checkout on Windows */
    buf[ll] = '\0';
    p = nl + 1;

    if (state == WANT_FORMAT) {
      if (strcmp(buf, GT_DB_FORMAT_LINE) == 0) {
        state = WANT_HEADER;
      } else if (strncmp(buf, "#gemmtune-db ", 13) == 0) {
        s = gt_err_set(GT_ERR_DATA, "%s:%d: unsupported DB format version '%.20s' (this build reads '%s')",
                       name, ln, buf + 13, GT_DB_FORMAT_LINE);
      } else {
        s = gt_err_set(GT_ERR_DATA, "%s:%d: not a gemmtune DB (expected '%s', got '%.60s')", name,
                       ln, GT_DB_FORMAT_LINE, buf);
      }
    } else if (state == WANT_HEADER) {
      if (buf[0] == '#') {
        char *eq = strchr(buf, '=');
        char why[256];
        if (!eq) {
          s = gt_err_set(GT_ERR_DATA, "%s:%d: validator line '%.60s': expected '#name=value'",
                         name, ln, buf);
          break;
        }
        *eq = '\0';
        if (!validator_ok(buf + 1, eq + 1, why, sizeof why))
          s = gt_err_set(GT_ERR_DATA, "%s:%d: %s", name, ln, why);
        else if (validator_find(db, buf + 1) >= 0)
          s = gt_err_set(GT_ERR_DATA, "%s:%d: validator '%s' given twice", name, ln, buf + 1);
        else if ((s = validator_store(db, buf + 1, eq + 1)) != GT_OK)
          s = err_prefix(s, "%s:%d: ", name, ln);
      } else if (strcmp(buf, gt_db_header()) == 0) {
        state = ROWS;
      } else if (buf[0] == '\0') {
        s = gt_err_set(GT_ERR_DATA, "%s:%d: empty line (expected a validator '#name=value' or the header row)",
                       name, ln);
      } else if (strncmp(buf, "op,", 3) != 0) {
        s = gt_err_set(GT_ERR_DATA, "%s:%d: missing header row (expected '%.40s...', got '%.60s')",
                       name, ln, gt_db_header(), buf);
      } else {
        s = err_prefix(header_mismatch(buf), "%s:%d: ", name, ln);
      }
    } else {
      if (buf[0] == '\0') {
        s = gt_err_set(GT_ERR_DATA, "%s:%d: empty line (expected a row)", name, ln);
        break;
      }
      if (buf[0] == '#') {
        s = gt_err_set(GT_ERR_DATA, "%s:%d: '#' line after the header (validators go before it)",
                       name, ln);
        break;
      }
      gt_db_row_t r;
      if ((s = parse_row(buf, &r)) != GT_OK) {
        s = err_prefix(GT_ERR_DATA, "%s:%d: ", name, ln);
        break;
      }
      if ((s = index_ready(db)) != GT_OK) break;
      uint64_t h = gt_problem_hash(&r.key);
      long dup = index_find(db, &r.key, h);
      if (dup >= 0) {
        s = gt_err_set(GT_ERR_DATA, "%s:%d: duplicate key (same as line %d)", name, ln,
                       row_line[dup]);
        break;
      }
      if (db->n == row_line_cap) {
        row_line_cap = row_line_cap ? 2 * row_line_cap : 64;
        int *nr = realloc(row_line, row_line_cap * sizeof *nr);
        if (!nr) {
          s = gt_err_set(GT_ERR_NOMEM, "%s:%d: out of memory", name, ln);
          break;
        }
        row_line = nr;
      }
      row_line[db->n] = ln;
      index_append(db, &r, h);
    }
  }
  if (s == GT_OK && state != ROWS)
    s = gt_err_set(GT_ERR_DATA, "%s:%d: missing header row (file ends after %s)", name, ln,
                   state == WANT_HEADER ? "the validator lines" : "the format line");
  free(buf);
  free(row_line);
  return s;
}

gt_status_t gt_db_parse_buf(const char *name, const char *text, size_t len, gt_db_t *out) {
  gt_db_t db;
  gt_db_init(&db);
  if (!name) name = "<db>";
  snprintf(db.path, sizeof db.path, "%s", name);
  gt_status_t s = parse_into(name, text ? text : "", text ? len : 0, &db);
  if (s != GT_OK) {
    gt_db_free(&db);
    gt_db_init(out);
    return s;
  }
  *out = db;
  return GT_OK;
}

gt_status_t gt_db_parse(const char *name, const char *text, gt_db_t *db) {
  return gt_db_parse_buf(name, text, text ? strlen(text) : 0, db);
}

gt_status_t gt_db_read(const char *path, gt_db_t *db) {
  gt_db_init(db);
  FILE *f = fopen(path, "rb");
  if (!f) return gt_err_set(GT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  /* Read by chunks rather than by file size, so pipes and /dev/stdin work too. */
  size_t len = 0, cap = 0;
  char *text = NULL;
  for (;;) {
    if (cap - len < 65536) {
      cap = cap ? 2 * cap : 65536;
      char *nt = realloc(text, cap);
      if (!nt) {
        free(text);
        fclose(f);
        return gt_err_set(GT_ERR_NOMEM, "%s: out of memory reading", path);
      }
      text = nt;
    }
    size_t got = fread(text + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int e = errno;
    free(text);
    fclose(f);
    return gt_err_set(GT_ERR_IO, "%s: cannot read: %s", path, strerror(e));
  }
  fclose(f);
  gt_status_t s = gt_db_parse_buf(path, text, len, db);
  free(text);
  return s;
}

/* ---- writer ------------------------------------------------------------------------------- */

typedef struct keyed {
  char *text;
  size_t idx;
} keyed_t;

static int keyed_cmp(const void *a, const void *b) {
  const keyed_t *x = a, *y = b;
  int c = strcmp(x->text, y->text);
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static void format_row(sb_t *b, const gt_db_row_t *r) {
  for (int i = 0; i < GT_KEY_NFIELDS; i++) {
    char v[128];
    gt_problem_field_str(&r->key, i, v, sizeof v);
    sb_printf(b, "%s%s", i ? "," : "", v);
  }
  for (int c = 0; c < NRESULT; c++) {
    const void *p = (const char *)r + k_cols[c].off;
    switch (k_cols[c].kind) {
      case COL_STR: sb_printf(b, ",%s", (const char *)p); break;
      case COL_TIME: sb_printf(b, ",%.9g", *(const double *)p); break;
      case COL_DBL: sb_printf(b, ",%.6g", *(const double *)p); break;
      case COL_INT: sb_printf(b, ",%d", *(const int *)p); break;
      case COL_BOOL: sb_printf(b, ",%d", *(const bool *)p ? 1 : 0); break;
    }
  }
  sb_printf(b, "\n");
}

/* Build the file text (rows sorted by key text). */
static gt_status_t db_format(const gt_db_t *db, const char *path, sb_t *b) {
  gt_status_t s = GT_OK;
  for (size_t i = 0; i < db->n; i++) {
    if ((s = gt_db_row_check(&db->rows[i])) != GT_OK) {
      char key[KEY_TEXT_MAX];
      gt_problem_format_key(&db->rows[i].key, key, sizeof key);
      return err_prefix(GT_ERR_DATA, "%s: not written: row %zu (%.400s): ", path, i + 1, key);
    }
  }
  for (size_t i = 0; i < db->nval; i++) {
    char why[256];
    const gt_db_validator_t *v = &db->validators[i];
    if (!validator_ok(v->name, v->value, why, sizeof why))
      return gt_err_set(GT_ERR_DATA, "%s: not written: %s", path, why);
  }

  keyed_t *keys = calloc(db->n ? db->n : 1, sizeof *keys);
  if (!keys) return gt_err_set(GT_ERR_NOMEM, "%s: out of memory sorting rows", path);
  for (size_t i = 0; i < db->n && s == GT_OK; i++) {
    keys[i].idx = i;
    if (!(keys[i].text = malloc(KEY_TEXT_MAX)))
      s = gt_err_set(GT_ERR_NOMEM, "%s: out of memory sorting rows", path);
    else
      gt_problem_format_key(&db->rows[i].key, keys[i].text, KEY_TEXT_MAX);
  }
  if (s == GT_OK) {
    qsort(keys, db->n, sizeof *keys, keyed_cmp);
    for (size_t i = 1; i < db->n && s == GT_OK; i++)
      if (strcmp(keys[i - 1].text, keys[i].text) == 0)
        s = gt_err_set(GT_ERR_DATA, "%s: not written: rows %zu and %zu have the same key %.400s",
                       path, keys[i - 1].idx + 1, keys[i].idx + 1, keys[i].text);
  }
  if (s == GT_OK) {
    sb_printf(b, "%s\n", GT_DB_FORMAT_LINE);
    for (size_t i = 0; i < db->nval; i++)
      sb_printf(b, "#%s=%s\n", db->validators[i].name, db->validators[i].value);
    sb_printf(b, "%s\n", gt_db_header());
    for (size_t i = 0; i < db->n; i++) format_row(b, &db->rows[keys[i].idx]);
    if (b->oom) s = gt_err_set(GT_ERR_NOMEM, "%s: out of memory formatting the DB", path);
  }
  for (size_t i = 0; i < db->n; i++) free(keys[i].text);
  free(keys);
  return s;
}

gt_status_t gt_db_write(const gt_db_t *db, const char *path) {
  sb_t b = {0};
  gt_status_t s = db_format(db, path, &b);
  if (s == GT_OK) {
    /* The reader is the contract: never put on disk a file it would reject. */
    gt_db_t back;
    s = gt_db_parse_buf(path, b.p, b.len, &back);
    if (s != GT_OK)
      s = err_prefix(GT_ERR_INTERNAL, "%s: not written: the text would not read back: ", path);
    else if (back.n != db->n)
      s = gt_err_set(GT_ERR_INTERNAL, "%s: not written: %zu rows read back, %zu written", path,
                     back.n, db->n);
    gt_db_free(&back);
  }
  if (s == GT_OK) s = gt_file_write_atomic(path, b.p, b.len);
  free(b.p);
  return s;
}

/* ---- atomic file write -------------------------------------------------------------------- */

static int open_temp(char *tmp, size_t cap, const char *target) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static _Atomic unsigned long counter;
  for (int attempt = 0; attempt < 100; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                 (uint64_t)(++counter * 0x9E3779B97F4A7C15ull);
    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 27; /* splitmix finaliser */
    char suffix[7];
    for (int i = 0; i < 6; i++) suffix[i] = alphabet[(x >> (i * 6)) % (sizeof alphabet - 1)];
    suffix[6] = '\0';
    if ((size_t)snprintf(tmp, cap, "%s.tmp.%s", target, suffix) >= cap) {
      errno = ENAMETOOLONG;
      return -1;
    }
    /* What mkstemp does, but with mode 0666 so the umask applies to a new file as it would to
     * any file the user creates (mkstemp's 0600 would make a deployed DB unreadable to others). */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

gt_status_t gt_file_write_atomic(const char *path, const char *data, size_t len) {
  if (!path || !*path) return gt_err_set(GT_ERR_USAGE, "no output path given");
  /* Replace what a symlink points at, not the link: deployments often link a stable name to a
   * versioned DB. */
  char target[PATH_MAX];
  struct stat st;
  bool linked = lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(path, target);
  if (!linked && (size_t)snprintf(target, sizeof target, "%s", path) >= sizeof target)
    return gt_err_set(GT_ERR_IO, "%s: path too long", path);
  bool have_mode = false;
  mode_t mode = 0;
  if (stat(target, &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return gt_err_set(GT_ERR_IO, "%s: exists and is not a regular file", path);
    have_mode = true;
    mode = st.st_mode & 07777;
  }

  char tmp[PATH_MAX + 16];
  int fd = open_temp(tmp, sizeof tmp, target);
  if (fd < 0)
    return gt_err_set(GT_ERR_IO, "%s: cannot create a temp file next to it: %s", path,
                      strerror(errno));
  const char *step = NULL;
  int err = 0;
  if (have_mode && fchmod(fd, mode) != 0) step = "chmod", err = errno;
  for (size_t off = 0; !step && off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) step = "write", err = w < 0 ? errno : EIO;
    else off += (size_t)w;
  }
  if (!step && fsync(fd) != 0) step = "fsync", err = errno;
  if (close(fd) != 0 && !step) step = "close", err = errno;
  if (!step && rename(tmp, target) != 0) step = "rename", err = errno;
  if (step) {
    unlink(tmp);
    return gt_err_set(GT_ERR_IO, "%s: not written (%s of %s failed: %s); the file is unchanged",
                      path, step, tmp, strerror(err));
  }

  /* The rename is durable only once the directory entry is. Some filesystems cannot fsync a
   * directory (EINVAL); there is nothing more to do on those. */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", target);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    int r = fsync(dfd);
    int e = errno;
    close(dfd);
    if (r != 0 && e != EINVAL && e != ENOTSUP)
      return gt_err_set(GT_ERR_IO, "%s: replaced, but syncing directory %s failed: %s", path, dir,
                        strerror(e));
  }
  return GT_OK;
}

/* ---- put / explain ------------------------------------------------------------------------ */

gt_status_t gt_db_put(gt_db_t *db, const gt_db_row_t *row) {
  gt_db_row_t r = *row;
  if (r.speedup == 0 && r.time_us > 0) r.speedup = r.baseline_us / r.time_us;
  gt_status_t s = gt_db_row_check(&r);
  if (s != GT_OK) {
    char key[KEY_TEXT_MAX];
    gt_problem_format_key(&r.key, key, sizeof key);
    return err_prefix(s, "row %.400s: ", key);
  }
  if ((s = index_ready(db)) != GT_OK) return s;
  uint64_t h = gt_problem_hash(&r.key);
  long i = index_find(db, &r.key, h);
  if (i >= 0) db->rows[i] = r;
  else index_append(db, &r, h);
  return GT_OK;
}

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
  sb_t b = {0};
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  fn(ctx, b.oom || !b.p ? "(out of memory formatting a merge report line)" : b.p);
  free(b.p);
}

/* "0.1.0" -> "0"; versions are compared as text before the first dot. */
static bool same_major(const char *a, const char *b) {
  size_t la = strcspn(a, "."), lb = strcspn(b, ".");
  return la == lb && strncmp(a, b, la) == 0;
}

gt_status_t gt_db_merge(gt_db_t *dst, const gt_db_t *src, bool strict, bool prefer_src,
                        gt_db_report_fn fn, void *ctx) {
  const char *dn = dst->path[0] ? dst->path : "dst";
  const char *sn = src->path[0] ? src->path : "src";
  const char *keep_name = prefer_src ? sn : dn;
  gt_db_t out;
  gt_status_t s = gt_db_copy(&out, dst);
  if (s != GT_OK) return s;
  size_t added = 0, replaced = 0, kept = 0, nconf = 0;
  sb_t conf = {0}; /* what conflicted, for the strict error message */

  for (size_t i = 0; i < src->nval; i++) {
    const gt_db_validator_t *v = &src->validators[i];
    const char *have = gt_db_get_validator(&out, v->name);
    if (!have) {
      report(fn, ctx, "validator %s=%s added from %s", v->name, v->value, sn);
      s = gt_db_set_validator(&out, v->name, v->value);
    } else if (strcmp(have, v->value) != 0) {
      bool major = strcmp(v->name, "gemmtune") == 0 && !same_major(have, v->value);
      if (major) {
        nconf++;
        sb_printf(&conf, "%svalidator gemmtune (%s vs %s)", conf.len ? "; " : "", have, v->value);
      }
      report(fn, ctx, "%svalidator %s: %s has %s, %s has %s%s; kept %s's", major ? "conflict: " : "",
             v->name, dn, have, sn, v->value,
             major ? " (major versions differ: rows may not be comparable)" : "", keep_name);
      if (prefer_src) s = gt_db_set_validator(&out, v->name, v->value);
    }
    if (s != GT_OK) goto done;
  }

  for (size_t i = 0; i < src->n; i++) {
    const gt_db_row_t *r = &src->rows[i];
    char key[KEY_TEXT_MAX];
    gt_problem_format_key(&r->key, key, sizeof key);
    if ((s = gt_db_row_check(r)) != GT_OK) {
      s = err_prefix(s, "%s: row %zu (%.400s): ", sn, i + 1, key);
      goto done;
    }
    if ((s = index_ready(&out)) != GT_OK) goto done;
    uint64_t h = gt_problem_hash(&r->key);
    long j = index_find(&out, &r->key, h);
    if (j < 0) {
      index_append(&out, r, h);
      added++;
      continue;
    }
    gt_db_row_t *d = &out.rows[j];
    if (strcmp(d->timing, r->timing) == 0) {
      /* Measured the same way: the times are comparable, the faster one is the better fact. */
      bool src_wins = r->time_us < d->time_us;
      const gt_db_row_t *w = src_wins ? r : d, *l = src_wins ? d : r;
      report(fn, ctx, "kept %s/%s %.9g us over %s/%s %.9g us for %s", src_wins ? sn : dn,
             w->instance, w->time_us, src_wins ? dn : sn, l->instance, l->time_us, key);
      if (src_wins) {
        *d = *r;
        replaced++;
      } else {
        kept++;
      }
    } else {
      /* Timed differently (cold vs warm, graph vs host): neither time says which is faster in
       * the other's conditions, so keep one but leave both facts visible. */
      nconf++;
      sb_printf(&conf, "%s%s", conf.len ? "; " : "", key);
      report(fn, ctx,
             "conflict for %s: %s has %s %.9g us (timing %s), %s has %s %.9g us (timing %s): "
             "timed differently, not comparable; kept %s's row",
             key, dn, d->instance, d->time_us, d->timing, sn, r->instance, r->time_us, r->timing,
             keep_name);
      if (prefer_src) *d = *r;
    }
  }
  report(fn, ctx, "merged %s into %s: %zu added, %zu replaced by faster rows, %zu kept, %zu conflicts",
         sn, dn, added, replaced, kept, nconf);
  if (strict && nconf)
    s = gt_err_set(GT_ERR_CONFLICT, "merge of %s into %s: %zu conflict%s, nothing merged: %s", sn,
                   dn, nconf, nconf == 1 ? "" : "s", conf.oom || !conf.p ? "(list unavailable)" : conf.p);

done:
  free(conf.p);
  if (s != GT_OK) {
    gt_db_free(&out);
    return s;
  }
  gt_db_free(dst);
  *dst = out;
  return GT_OK;
}
