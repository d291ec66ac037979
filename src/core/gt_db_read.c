/* Reading the tuned DB (see gt_db.h): what a file may contain (validator lines, cells, rows,
 * the header) and the strict parser. Every error names file:line and the field, and a failed
 * read leaves the caller an empty DB, never a partial one. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_csv.h"
#include "gt_db_internal.h"

/* ---- validators --------------------------------------------------------------------------- */

/* Names are identifiers so a validator line can never be mistaken for the format line or a
 * comment; values are free text on one line. Writes the reason into why on failure. */
bool gt_db_validator_ok(const char *name, const char *value, char *why, size_t cap) {
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

/* The floor columns: all unknown, or a floor, its bound and the winner's share of it. */
static gt_status_t floor_check(const gt_db_row_t *r) {
  if (!(r->floor_us >= 0))
    return gt_err_set(GT_ERR_DATA, "field 'floor_us': must be >= 0 (got %.9g)", r->floor_us);
  if (r->floor_us == 0) {
    if (r->floor_bound != GT_BOUND_NONE || r->floor_pct != 0)
      return gt_err_set(GT_ERR_DATA, "field 'floor_bound': '%s' (floor_pct %.6g) without a "
                        "floor (floor_us 0 means unknown: '-' and 0)",
                        gt_bound_name(r->floor_bound), r->floor_pct);
    return GT_OK;
  }
  if (r->floor_bound == GT_BOUND_NONE)
    return gt_err_set(GT_ERR_DATA, "field 'floor_bound': '-' with floor_us %.9g (expected "
                      "bandwidth or compute)", r->floor_us);
  double want = 100 * r->floor_us / r->time_us;
  if (!(fabs(r->floor_pct - want) <= GT_DB_SPEEDUP_RTOL * want))
    return gt_err_set(GT_ERR_DATA, "field 'floor_pct': %.6g does not match 100 * floor_us / "
                      "time_us = %.6g", r->floor_pct, want);
  return GT_OK;
}

/* The live columns: confirmed with its times (faster live than the entry point, as a row is
 * faster than its baseline), or another state with none. */
static gt_status_t live_check(const gt_db_row_t *r) {
  if (r->live != GT_LIVE_CONFIRMED) {
    if (r->live_us != 0 || r->live_baseline_us != 0 || r->live_speedup != 0)
      return gt_err_set(GT_ERR_DATA, "field 'live_us': times (%.9g, %.9g, %.6g) without a "
                        "confirmation (live '%s' records none: 0, 0, 0)", r->live_us,
                        r->live_baseline_us, r->live_speedup, gt_live_state_name(r->live));
    return GT_OK;
  }
  if (!(r->live_us > 0))
    return gt_err_set(GT_ERR_DATA, "field 'live_us': must be > 0 when confirmed (got %.9g)",
                      r->live_us);
  if (!(r->live_baseline_us > 0))
    return gt_err_set(GT_ERR_DATA, "field 'live_baseline_us': must be > 0 when confirmed (got "
                      "%.9g)", r->live_baseline_us);
  if (!(r->live_us < r->live_baseline_us))
    return gt_err_set(GT_ERR_DATA, "field 'live_us': %.9g is not below live_baseline_us %.9g (a "
                      "row slower live than its entry point is never kept)", r->live_us,
                      r->live_baseline_us);
  double want = r->live_baseline_us / r->live_us;
  if (!(fabs(r->live_speedup - want) <= GT_DB_SPEEDUP_RTOL * want))
    return gt_err_set(GT_ERR_DATA, "field 'live_speedup': %.6g does not match "
                      "live_baseline_us/live_us = %.6g", r->live_speedup, want);
  return GT_OK;
}

gt_status_t gt_db_row_check(const gt_db_row_t *r) {
  gt_status_t s = gt_problem_validate(&r->key);
  if (s != GT_OK) return gt_db_err_restatus(GT_ERR_DATA);
  for (int i = 0; i < GT_KEY_NFIELDS; i++) {
    char v[128];
    gt_problem_field_str(&r->key, i, v, sizeof v);
    if ((s = cell_check(gt_key_field_names[i], v)) != GT_OK) return s;
  }
  for (int c = 0; c < GT_DB_NRESULT; c++) {
    const char *name = gt_db_result_cols[c].name;
    const void *p = (const char *)r + gt_db_result_cols[c].off;
    switch (gt_db_result_cols[c].kind) {
      case GT_DB_COL_OPTSTR:
        if (!*(const char *)p) break; /* not recorded */
        /* fall through */
      case GT_DB_COL_STR:
        if (strnlen(p, gt_db_result_cols[c].size) == gt_db_result_cols[c].size)
          return gt_err_set(GT_ERR_DATA, "field '%s': too long (max %zu chars)", name,
                            gt_db_result_cols[c].size - 1);
        if ((s = cell_check(name, p)) != GT_OK) return s;
        break;
      case GT_DB_COL_TIME:
      case GT_DB_COL_DBL:
        if (!isfinite(*(const double *)p))
          return gt_err_set(GT_ERR_DATA, "field '%s': not finite (%g)", name, *(const double *)p);
        break;
      case GT_DB_COL_INT:
      case GT_DB_COL_BOOL:
        break;
      case GT_DB_COL_BOUND:
        if ((unsigned)*(const gt_bound_t *)p > GT_BOUND_COMPUTE)
          return gt_err_set(GT_ERR_DATA, "field '%s': not a bound (%d)", name,
                            (int)*(const gt_bound_t *)p);
        break;
      case GT_DB_COL_LIVE:
        if ((unsigned)*(const gt_live_state_t *)p >= GT_LIVE__COUNT)
          return gt_err_set(GT_ERR_DATA, "field '%s': not a live state (%d)", name,
                            (int)*(const gt_live_state_t *)p);
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
  if (!(fabs(r->speedup - want) <= GT_DB_SPEEDUP_RTOL * want))
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
  if (r->device_mem_gib < 0)
    return gt_err_set(GT_ERR_DATA, "field 'device_mem_gib': must be >= 0 (got %d)",
                      r->device_mem_gib);
  if ((s = floor_check(r)) != GT_OK) return s;
  return live_check(r);
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

/* Split a data row into exactly ncols cells (the file's header says how many), each one the
 * reader accepts (line is modified in place). The writer never quotes a cell, so a quoted one is
 * refused like any cell holding a '"': it was edited by hand or written by another tool, and the
 * shim must not guess. */
static gt_status_t split_row(char *line, char *cell[GT_DB_NCOLS], int ncols) {
  bool quoted[GT_DB_NCOLS];
  int nc;
  if (gt_csv_split(line, cell, quoted, ncols, &nc, 0) != GT_OK) {
    char why[256];
    snprintf(why, sizeof why, "%s", gt_err_msg());
    if (nc >= ncols)
      return gt_err_set(GT_ERR_DATA, "extra columns after '%s' (%s)", gt_db_col_name(ncols - 1),
                        why);
    return gt_err_set(GT_ERR_DATA, "field '%s': contains a double quote (%s)", gt_db_col_name(nc),
                      why);
  }
  if (nc != ncols) {
    if (nc < ncols)
      return gt_err_set(GT_ERR_DATA, "%d columns, expected %d (missing '%s' onward)", nc, ncols,
                        gt_db_col_name(nc));
    return gt_err_set(GT_ERR_DATA, "%d columns, expected %d (extra columns after '%s')", nc,
                      ncols, gt_db_col_name(ncols - 1));
  }
  gt_status_t s;
  for (int c = 0; c < ncols; c++) {
    if (quoted[c])
      return gt_err_set(GT_ERR_DATA, "field '%s': contains a double quote in '\"%.80s\"'",
                        gt_db_col_name(c), cell[c]);
    if ((s = cell_check(gt_db_col_name(c), cell[c])) != GT_OK) return s;
  }
  return GT_OK;
}

/* The key cells, in their canonical spelling only. */
static gt_status_t parse_key_cells(char *const cell[GT_DB_NCOLS], int ncols, gt_problem_t *key) {
  for (int c = 0; c < ncols; c++) {
    int i = gt_db_col_key_field(c);
    if (i < 0) continue;
    if (gt_problem_set_field(key, gt_key_field_names[i], cell[c]) != GT_OK)
      return gt_db_err_restatus(GT_ERR_DATA);
    /* Aliases ("fp16") and spellings like "0016" parse, but the file is machine-written:
     * a non-canonical cell means it was edited by hand or by a different writer. */
    char canon[128];
    gt_problem_field_str(key, i, canon, sizeof canon);
    if (strcmp(canon, cell[c]) != 0)
      return gt_err_set(GT_ERR_DATA, "field '%s': '%.80s' is not the canonical spelling '%s'",
                        gt_key_field_names[i], cell[c], canon);
  }
  if (gt_problem_validate(key) != GT_OK) return gt_db_err_restatus(GT_ERR_DATA);
  return GT_OK;
}

/* The result cells (a format-1 file has fewer, and its rows keep the zero defaults, an unknown
 * floor; a format-3 file has no live cells, so its rows record no confirmation), walked through
 * the column table. */
static gt_status_t parse_result_cells(char *const cell[GT_DB_NCOLS], int ncols, gt_db_row_t *r) {
  gt_status_t s;
  for (int cc = 0; cc < ncols; cc++) {
    int c = gt_db_col_result(cc);
    if (c < 0) continue;
    const gt_db_col_t *col = &gt_db_result_cols[c];
    const char *name = col->name, *v = cell[cc];
    void *p = (char *)r + col->off;
    switch (col->kind) {
      case GT_DB_COL_STR:
      case GT_DB_COL_OPTSTR:
        if (strlen(v) >= col->size)
          return gt_err_set(GT_ERR_DATA, "field '%s': too long (%zu chars, max %zu)", name,
                            strlen(v), col->size - 1);
        memcpy(p, v, strlen(v) + 1);
        break;
      case GT_DB_COL_TIME:
      case GT_DB_COL_DBL:
        if ((s = parse_double(name, v, p)) != GT_OK) return s;
        break;
      case GT_DB_COL_INT:
        if ((s = parse_int(name, v, p)) != GT_OK) return s;
        break;
      case GT_DB_COL_BOOL:
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
          return gt_err_set(GT_ERR_DATA, "field '%s': expected 0 or 1, got '%.80s'", name, v);
        *(bool *)p = v[0] == '1';
        break;
      case GT_DB_COL_BOUND:
        if (!gt_bound_parse(v, p))
          return gt_err_set(GT_ERR_DATA, "field '%s': expected bandwidth, compute or -, got "
                            "'%.80s'", name, v);
        break;
      case GT_DB_COL_LIVE:
        if (!gt_live_state_parse(v, p))
          return gt_err_set(GT_ERR_DATA, "field '%s': expected confirmed, off, skipped or -, "
                            "got '%.80s'", name, v);
        break;
    }
  }
  return GT_OK;
}

/* Columns of a row of a file of format `version`. */
static int ncols_of(int version) {
  return version == 1   ? GT_DB_NCOLS_V1
         : version == 2 ? GT_DB_NCOLS_V2
         : version == 3 ? GT_DB_NCOLS_V3
                        : GT_DB_NCOLS;
}

/* Parse one data row (line is modified in place) of a file of format `version`. A format-1 row
 * (v1_device non-NULL) has the first GT_DB_NCOLS_V1 columns only: the device is v1_device (the
 * file's #device line, or "-") with no memory, and the floor is unknown. A format-2 row has no
 * fp8 key fields: they keep their defaults (no scaling), which is what such a row tuned. A
 * format-3 row has no live columns: no confirmation recorded. */
static gt_status_t parse_row(char *line, gt_db_row_t *r, int version, const char *v1_device) {
  char *cell[GT_DB_NCOLS];
  const int ncols = ncols_of(version);
  gt_status_t s = split_row(line, cell, ncols);
  if (s != GT_OK) return s;
  memset(r, 0, sizeof *r);
  gt_problem_init(&r->key);
  if ((s = parse_key_cells(cell, ncols, &r->key)) != GT_OK) return s;
  if ((s = parse_result_cells(cell, ncols, r)) != GT_OK) return s;
  if (v1_device) snprintf(r->device, sizeof r->device, "%s", v1_device[0] ? v1_device : "-");
  return gt_db_row_check(r);
}

/* Explain a header row that is not exactly the expected one (ncols columns of gt_db_header()),
 * naming the first wrong column. */
static gt_status_t header_mismatch(char *line, int ncols) {
  char *cell[GT_DB_NCOLS + 1];
  bool quoted[GT_DB_NCOLS + 1];
  int n;
  if (gt_csv_split(line, cell, quoted, ncols + 1, &n, 0) != GT_OK)
    return gt_db_err_prefix(GT_ERR_DATA, "header: ");
  for (int c = 0; c < n; c++) {
    if (c >= ncols)
      return gt_err_set(GT_ERR_DATA, "header: unexpected extra column '%.60s' after '%s'%s",
                        cell[c], gt_db_col_name(ncols - 1),
                        ncols == GT_DB_NCOLS_V1   ? " (a format-1 file has no device columns)"
                        : ncols == GT_DB_NCOLS_V2 ? " (a format-2 file has no fp8 key columns)"
                        : ncols == GT_DB_NCOLS_V3 ? " (a format-3 file has no live columns)"
                                                  : "");
    if (strcmp(cell[c], gt_db_col_name(c)) != 0)
      return gt_err_set(GT_ERR_DATA, "header column %d is '%.60s', expected '%s'", c + 1, cell[c],
                        gt_db_col_name(c));
    if (quoted[c])
      return gt_err_set(GT_ERR_DATA, "header column %d is quoted ('\"%.60s\"'): write it as %s",
                        c + 1, cell[c], gt_db_col_name(c));
  }
  if (n < ncols)
    return gt_err_set(GT_ERR_DATA, "header: missing column '%s' (and %d after it)",
                      gt_db_col_name(n), ncols - n - 1);
  return gt_err_set(GT_ERR_DATA, "header row differs from the expected one");
}

static int line_of(const char *text, const char *at) {
  int line = 1;
  for (const char *q = text; q < at; q++) line += *q == '\n';
  return line;
}

/* What a file must be as a whole before any line is read: not empty, text, and ending in a
 * newline. A writer killed mid-line leaves a row that may still parse (a time cut from 12.5 to
 * 1); only the final newline tells a complete file from a torn one. */
static gt_status_t check_text(const char *name, const char *text, size_t len) {
  if (len == 0)
    return gt_err_set(GT_ERR_DATA, "%s:1: empty file (expected '%s')", name, GT_DB_FORMAT_LINE);
  const char *nul = memchr(text, '\0', len);
  if (nul)
    return gt_err_set(GT_ERR_DATA, "%s:%d: NUL byte (not a text file)", name, line_of(text, nul));
  if (text[len - 1] != '\n')
    return gt_err_set(GT_ERR_DATA, "%s:%d: truncated last line (no newline at end of file)", name,
                      line_of(text, text + len - 1));
  return GT_OK;
}

/* The reader's place in the file: the format line, then validators up to the header, then rows. */
typedef struct reader {
  const char *name;
  gt_db_t *db;
  enum { WANT_FORMAT, WANT_HEADER, ROWS } state;
  int version;          /* the file's format: 1 (no device or floor columns), 2 (no fp8 key
                           columns), 3 (no live columns) or 4 */
  bool v1;              /* a format-1 file */
  char v1_device[GT_DB_DEVICE_MAX]; /* its rows' device: the #device line, or "-" */
  int ln;
  int *row_line; /* source line of each row, for duplicate messages */
  size_t row_line_cap;
} reader_t;

static gt_status_t read_format_line(reader_t *rd, const char *line) {
  static const char *const k_lines[] = {GT_DB_FORMAT_LINE_V1, GT_DB_FORMAT_LINE_V2,
                                         GT_DB_FORMAT_LINE_V3, GT_DB_FORMAT_LINE};
  for (int v = 0; v < 4; v++)
    if (strcmp(line, k_lines[v]) == 0) {
      rd->version = v + 1;
      rd->v1 = rd->version == 1;
      rd->state = WANT_HEADER;
      return GT_OK;
    }
  if (strncmp(line, "#gemmtune-db ", 13) == 0)
    return gt_err_set(GT_ERR_DATA, "%s:%d: unsupported DB format version '%.20s' (this build reads '%s')",
                      rd->name, rd->ln, line + 13, GT_DB_FORMAT_LINE);
  return gt_err_set(GT_ERR_DATA, "%s:%d: not a gemmtune DB (expected '%s', got '%.60s')", rd->name,
                    rd->ln, GT_DB_FORMAT_LINE, line);
}

static gt_status_t read_validator_line(reader_t *rd, char *line) {
  char *eq = strchr(line, '=');
  char why[256];
  if (!eq)
    return gt_err_set(GT_ERR_DATA, "%s:%d: validator line '%.60s': expected '#name=value'",
                      rd->name, rd->ln, line);
  *eq = '\0';
  const char *vname = line + 1, *value = eq + 1;
  if (!gt_db_validator_ok(vname, value, why, sizeof why))
    return gt_err_set(GT_ERR_DATA, "%s:%d: %s", rd->name, rd->ln, why);
  if (gt_db_validator_find(rd->db, vname) >= 0)
    return gt_err_set(GT_ERR_DATA, "%s:%d: validator '%s' given twice", rd->name, rd->ln, vname);
  if (gt_db_validator_store(rd->db, vname, value) != GT_OK)
    return gt_db_err_prefix(GT_ERR_NOMEM, "%s:%d: ", rd->name, rd->ln);
  return GT_OK;
}

/* A line between the format line and the first row: a validator or the header. */
static gt_status_t read_preamble_line(reader_t *rd, char *line) {
  if (line[0] == '#') return read_validator_line(rd, line);
  const char *want = rd->version == 1   ? gt_db_header_v1()
                     : rd->version == 2 ? gt_db_header_v2()
                     : rd->version == 3 ? gt_db_header_v3()
                                        : gt_db_header();
  if (strcmp(line, want) == 0) {
    rd->state = ROWS;
    /* Format 1 recorded the device once, by name, for the whole file. */
    const char *dev = gt_db_get_validator(rd->db, "device");
    if (rd->v1) gt_db_device_name(dev ? dev : "", rd->v1_device, sizeof rd->v1_device);
    return GT_OK;
  }
  if (line[0] == '\0')
    return gt_err_set(GT_ERR_DATA, "%s:%d: empty line (expected a validator '#name=value' or the header row)",
                      rd->name, rd->ln);
  if (strncmp(line, "op,", 3) != 0)
    return gt_err_set(GT_ERR_DATA, "%s:%d: missing header row (expected '%.40s...', got '%.60s')",
                      rd->name, rd->ln, gt_db_header(), line);
  return gt_db_err_prefix(header_mismatch(line, ncols_of(rd->version)), "%s:%d: ", rd->name,
                          rd->ln);
}

static gt_status_t read_row_line(reader_t *rd, char *line) {
  if (line[0] == '\0')
    return gt_err_set(GT_ERR_DATA, "%s:%d: empty line (expected a row)", rd->name, rd->ln);
  if (line[0] == '#')
    return gt_err_set(GT_ERR_DATA, "%s:%d: '#' line after the header (validators go before it)",
                      rd->name, rd->ln);
  gt_db_row_t r;
  gt_status_t s;
  if (parse_row(line, &r, rd->version, rd->v1 ? rd->v1_device : NULL) != GT_OK)
    return gt_db_err_prefix(GT_ERR_DATA, "%s:%d: ", rd->name, rd->ln);
  if ((s = gt_db_index_ready(rd->db)) != GT_OK) return s;
  uint64_t h = gt_problem_hash(&r.key);
  long dup = gt_db_index_find(rd->db, &r.key, h);
  if (dup >= 0)
    return gt_err_set(GT_ERR_DATA, "%s:%d: duplicate key (same as line %d)", rd->name, rd->ln,
                      rd->row_line[dup]);
  if (rd->db->n == rd->row_line_cap) {
    size_t cap = rd->row_line_cap ? 2 * rd->row_line_cap : 64;
    int *nr = realloc(rd->row_line, cap * sizeof *nr);
    if (!nr) return gt_err_set(GT_ERR_NOMEM, "%s:%d: out of memory", rd->name, rd->ln);
    rd->row_line = nr;
    rd->row_line_cap = cap;
  }
  rd->row_line[rd->db->n] = rd->ln;
  gt_db_index_append(rd->db, &r, h);
  return GT_OK;
}

static gt_status_t parse_into(const char *name, const char *text, size_t len, gt_db_t *db) {
  gt_status_t s = check_text(name, text, len);
  if (s != GT_OK) return s;
  reader_t rd = {.name = name, .db = db, .state = WANT_FORMAT};
  char *buf = NULL; /* one line at a time, NUL-terminated, for the cell splitter */
  size_t buf_cap = 0;
  for (const char *p = text; p < text + len && s == GT_OK;) {
    const char *nl = memchr(p, '\n', (size_t)(text + len - p));
    if (!nl) nl = text + len; /* unreachable after check_text; kept for safety */
    size_t ll = (size_t)(nl - p);
    rd.ln++;
    if (ll + 1 > buf_cap) {
      buf_cap = ll + 1 > 2 * buf_cap ? ll + 1 : 2 * buf_cap;
      char *nb = realloc(buf, buf_cap);
      if (!nb) {
        s = gt_err_set(GT_ERR_NOMEM, "%s:%d: out of memory", name, rd.ln);
        break;
      }
      buf = nb;
    }
    memcpy(buf, p, ll);
    if (ll && buf[ll - 1] == '\r') ll--; /* CRLF from an editor or a checkout on Windows */
    buf[ll] = '\0';
    p = nl + 1;
    s = rd.state == WANT_FORMAT   ? read_format_line(&rd, buf)
        : rd.state == WANT_HEADER ? read_preamble_line(&rd, buf)
                                  : read_row_line(&rd, buf);
  }
  if (s == GT_OK && rd.state != ROWS)
    s = gt_err_set(GT_ERR_DATA, "%s:%d: missing header row (file ends after %s)", name, rd.ln,
                   rd.state == WANT_HEADER ? "the validator lines" : "the format line");
  free(buf);
  free(rd.row_line);
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
  char *text;
  size_t len;
  gt_status_t s = gt_file_read(path, GT_FILE_MAX_CLI, 0, &text, &len);
  if (s != GT_OK) return s;
  s = gt_db_parse_buf(path, text, len, db);
  free(text);
  return s;
}
