/* Writing the tuned DB (see gt_db.h): rows formatted through the column table, sorted by key
 * text for stable diffs, parsed back before anything touches the disk, then written atomically;
 * and gt_db_put, the one way a row enters a DB in memory, under the same row check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_db_internal.h"
#include "gt_fileio.h"

typedef struct keyed {
  char *text;
  size_t idx;
} keyed_t;

static int keyed_cmp(const void *a, const void *b) {
  const keyed_t *x = a, *y = b;
  int c = strcmp(x->text, y->text);
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static void format_key_cells(gt_textbuf_t *b, const gt_db_row_t *r, int from, int to) {
  for (int i = from; i < to; i++) {
    char v[128];
    gt_problem_field_str(&r->key, i, v, sizeof v);
    gt_textbuf_printf(b, "%s%s", i ? "," : "", v);
  }
}

/* Result cells [from, to) of the column table, each preceded by a comma. */
static void format_result_cells(gt_textbuf_t *b, const gt_db_row_t *r, int from, int to) {
  for (int c = from; c < to; c++) {
    const void *p = (const char *)r + gt_db_result_cols[c].off;
    switch (gt_db_result_cols[c].kind) {
      case GT_DB_COL_STR: gt_textbuf_printf(b, ",%s", (const char *)p); break;
      case GT_DB_COL_OPTSTR: gt_textbuf_printf(b, ",%s", *(const char *)p ? (const char *)p : "-"); break;
      case GT_DB_COL_TIME: gt_textbuf_printf(b, ",%.9g", *(const double *)p); break;
      case GT_DB_COL_DBL: gt_textbuf_printf(b, ",%.6g", *(const double *)p); break;
      case GT_DB_COL_INT: gt_textbuf_printf(b, ",%d", *(const int *)p); break;
      case GT_DB_COL_BOOL: gt_textbuf_printf(b, ",%d", *(const bool *)p ? 1 : 0); break;
      case GT_DB_COL_BOUND: gt_textbuf_printf(b, ",%s", gt_bound_name(*(const gt_bound_t *)p)); break;
      case GT_DB_COL_LIVE:
        gt_textbuf_printf(b, ",%s", gt_live_state_name(*(const gt_live_state_t *)p));
        break;
    }
  }
}

/* The row in column order (gt_db_col_name): pre-fp8 key, first results, fp8 key, live results. */
static void format_row(gt_textbuf_t *b, const gt_db_row_t *r) {
  format_key_cells(b, r, 0, GT_KEY_NFIELDS_V2);
  format_result_cells(b, r, 0, GT_DB_NRESULT_V3);
  format_key_cells(b, r, GT_KEY_NFIELDS_V2, GT_KEY_NFIELDS);
  format_result_cells(b, r, GT_DB_NRESULT_V3, GT_DB_NRESULT);
  gt_textbuf_printf(b, "\n");
}

/* Build the file text (rows sorted by key text). */
static gt_status_t db_format(const gt_db_t *db, const char *path, gt_textbuf_t *b) {
  gt_status_t s = GT_OK;
  for (size_t i = 0; i < db->n; i++) {
    if ((s = gt_db_row_check(&db->rows[i])) != GT_OK) {
      char key[GT_DB_KEY_TEXT_MAX];
      gt_problem_format_key(&db->rows[i].key, key, sizeof key);
      return gt_db_err_prefix(GT_ERR_DATA, "%s: not written: row %zu (%.400s): ", path, i + 1, key);
    }
  }
  for (size_t i = 0; i < db->nval; i++) {
    char why[256];
    const gt_db_validator_t *v = &db->validators[i];
    if (!gt_db_validator_ok(v->name, v->value, why, sizeof why))
      return gt_err_set(GT_ERR_DATA, "%s: not written: %s", path, why);
  }

  keyed_t *keys = calloc(db->n ? db->n : 1, sizeof *keys);
  if (!keys) return gt_err_set(GT_ERR_NOMEM, "%s: out of memory sorting rows", path);
  for (size_t i = 0; i < db->n && s == GT_OK; i++) {
    keys[i].idx = i;
    if (!(keys[i].text = malloc(GT_DB_KEY_TEXT_MAX)))
      s = gt_err_set(GT_ERR_NOMEM, "%s: out of memory sorting rows", path);
    else
      gt_problem_format_key(&db->rows[i].key, keys[i].text, GT_DB_KEY_TEXT_MAX);
  }
  if (s == GT_OK) {
    qsort(keys, db->n, sizeof *keys, keyed_cmp);
    for (size_t i = 1; i < db->n && s == GT_OK; i++)
      if (strcmp(keys[i - 1].text, keys[i].text) == 0)
        s = gt_err_set(GT_ERR_DATA, "%s: not written: rows %zu and %zu have the same key %.400s",
                       path, keys[i - 1].idx + 1, keys[i].idx + 1, keys[i].text);
  }
  if (s == GT_OK) {
    gt_textbuf_printf(b, "%s\n", GT_DB_FORMAT_LINE);
    for (size_t i = 0; i < db->nval; i++)
      gt_textbuf_printf(b, "#%s=%s\n", db->validators[i].name, db->validators[i].value);
    gt_textbuf_printf(b, "%s\n", gt_db_header());
    for (size_t i = 0; i < db->n; i++) format_row(b, &db->rows[keys[i].idx]);
    if (b->oom) s = gt_err_set(GT_ERR_NOMEM, "%s: out of memory formatting the DB", path);
  }
  for (size_t i = 0; i < db->n; i++) free(keys[i].text);
  free(keys);
  return s;
}

gt_status_t gt_db_write(const gt_db_t *db, const char *path) {
  gt_textbuf_t b = {0};
  gt_status_t s = db_format(db, path, &b);
  if (s == GT_OK) {
    /* The reader is the contract: never put on disk a file it would reject. */
    gt_db_t back;
    s = gt_db_parse_buf(path, b.p, b.len, &back);
    if (s != GT_OK)
      s = gt_db_err_prefix(GT_ERR_INTERNAL, "%s: not written: the text would not read back: ", path);
    else if (back.n != db->n)
      s = gt_err_set(GT_ERR_INTERNAL, "%s: not written: %zu rows read back, %zu written", path,
                     back.n, db->n);
    gt_db_free(&back);
  }
  if (s == GT_OK) s = gt_file_write_atomic(path, b.p, b.len);
  free(b.p);
  return s;
}

/* ---- put ---------------------------------------------------------------------------------- */

void gt_db_row_set_live(gt_db_row_t *row, gt_live_state_t state, double served_us,
                        double plain_us) {
  row->live = state;
  const bool timed = state == GT_LIVE_CONFIRMED && served_us > 0 && plain_us > 0;
  row->live_us = timed ? served_us : 0;
  row->live_baseline_us = timed ? plain_us : 0;
  row->live_speedup = timed ? plain_us / served_us : 0;
}

double gt_db_row_claim(const gt_db_row_t *row) {
  return row->live == GT_LIVE_CONFIRMED && row->live_speedup > 0 ? row->live_speedup
                                                                 : row->speedup;
}

gt_status_t gt_db_put(gt_db_t *db, const gt_db_row_t *row) {
  gt_db_row_t r = *row;
  if (r.speedup == 0 && r.time_us > 0) r.speedup = r.baseline_us / r.time_us;
  gt_status_t s = gt_db_row_check(&r);
  if (s != GT_OK) {
    char key[GT_DB_KEY_TEXT_MAX];
    gt_problem_format_key(&r.key, key, sizeof key);
    return gt_db_err_prefix(s, "row %.400s: ", key);
  }
  if ((s = gt_db_index_ready(db)) != GT_OK) return s;
  uint64_t h = gt_problem_hash(&r.key);
  long i = gt_db_index_find(db, &r.key, h);
  if (i >= 0) db->rows[i] = r;
  else gt_db_index_append(db, &r, h);
  return GT_OK;
}
