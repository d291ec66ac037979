/* Shapes-file reader (see gt_shapes.h). Strict: a bad cell is an error naming file:line:column,
 * never a silently skipped row, since a dropped shape is a GEMM that is never tuned. */
#define _GNU_SOURCE
#include "gt_shapes.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_csv.h"
#include "gt_fileio.h"
#include "gt_hindex.h"

#define MAX_COLS 48

enum col_kind { C_LABEL, C_TOKENS, C_OUT, C_IN, C_LAYOUT, C_BM, C_BN, C_BK, C_CALLS, C_TIME,
                C_SHARE, C_DTYPE, C_ENTRY, C_WORKSPACE, C_NOT_TUNABLE, C_KEY };

typedef struct {
  enum col_kind kind;
  int key_field; /* for C_KEY */
  char name[48];
} col_t;

static gt_status_t classify(const char *name, col_t *c) {
  static const struct { const char *n; enum col_kind k; } fixed[] = {
      {"model", C_LABEL}, {"proj", C_LABEL},  {"label", C_LABEL},        {"name", C_LABEL},
      {"tokens", C_TOKENS}, {"out_features", C_OUT}, {"in_features", C_IN},
      {"layout", C_LAYOUT}, {"M", C_BM}, {"N", C_BN}, {"K", C_BK},
      {"calls", C_CALLS}, {"time_us", C_TIME}, {"share", C_SHARE}, {"dtype", C_DTYPE},
      {"entry", C_ENTRY}, {"workspace", C_WORKSPACE}, {"not_tunable", C_NOT_TUNABLE}};
  snprintf(c->name, sizeof c->name, "%s", name);
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (strcmp(name, fixed[i].n) == 0) return c->kind = fixed[i].k, GT_OK;
  for (int i = 0; i < GT_KEY_NFIELDS; i++)
    if (strcmp(name, gt_key_field_names[i]) == 0) return c->kind = C_KEY, c->key_field = i, GT_OK;
  return GT_ERR_DATA;
}

static gt_status_t cell_i64(const char *file, int line, const char *col, const char *v,
                            int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno)
    return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s': not an integer: '%s'", file, line, col, v);
  if (x <= 0)
    return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s': must be > 0 (got %lld)", file, line, col,
                      x);
  *out = x;
  return GT_OK;
}

static gt_status_t cell_f64(const char *file, int line, const char *col, const char *v,
                            double *out) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  /* nan and inf parse as numbers, but no time or share is either, and a NaN would poison every
   * sum and sort the rows land in. */
  if (!*v || *end || errno || !isfinite(x) || x < 0)
    return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s': not a non-negative number: '%s'", file,
                      line, col, v);
  *out = x;
  return GT_OK;
}

static gt_status_t push(gt_shapes_t *s, const gt_shape_t *sh) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 32;
    gt_shape_t *v = realloc(s->v, cap * sizeof *v);
    if (!v) return gt_err_set(GT_ERR_NOMEM, "out of memory reading shapes");
    s->v = v, s->cap = cap;
  }
  s->v[s->n++] = *sh;
  return GT_OK;
}

void gt_shapes_free(gt_shapes_t *s) {
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* ---- the parser, one phase per function ---------------------------------------------------- */

/* Where the parser is: the file, the line, and the header once it has been read. */
typedef struct reader {
  const char *file;
  int lineno;
  const gt_problem_t *defaults;
  col_t cols[MAX_COLS];
  int ncols; /* 0 until the header row */
  bool have[C_KEY + 1];
  bool have_key[GT_KEY_NFIELDS];
  gt_hindex_t index; /* the shapes read so far, by key: duplicates fold in O(1) */
} reader_t;

/* The cells of one row that describe its shape before the mapping to BLAS terms. */
typedef struct dims {
  int64_t tokens, out_f, in_f, M, N, K;
  const char *layout;
} dims_t;

/* Re-issue the current message (a problem or dtype parser's) as malformed data at file:line. */
static gt_status_t restate(const reader_t *rd, const char *what) {
  char m[400];
  snprintf(m, sizeof m, "%s", gt_err_msg());
  return gt_err_set(GT_ERR_DATA, "%s:%d: %s%s", rd->file, rd->lineno, what, m);
}

/* A shapes file cut mid-line would silently drop or mangle its last shape. */
static gt_status_t check_complete(const char *file, const char *text) {
  size_t len = strlen(text);
  if (!len || text[len - 1] == '\n') return GT_OK;
  int lines = 1;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  return gt_err_set(GT_ERR_DATA, "%s:%d: truncated last line (no newline at end of file)", file,
                    lines);
}

/* The header row: every column known and given once, exactly one shape view. */
static gt_status_t read_header(reader_t *rd, char **cells, int n) {
  for (int i = 0; i < n; i++) {
    if (classify(cells[i], &rd->cols[i]) != GT_OK)
      return gt_err_set(GT_ERR_DATA,
                        "%s:%d: unknown column '%s' (expected tokens,out_features,in_features; "
                        "layout,M,N,K; or key columns m,n,k,...)",
                        rd->file, rd->lineno, cells[i]);
    for (int j = 0; j < i; j++)
      if (strcmp(rd->cols[j].name, rd->cols[i].name) == 0)
        return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s' appears twice", rd->file, rd->lineno,
                          cells[i]);
    rd->have[rd->cols[i].kind] = true;
    if (rd->cols[i].kind == C_KEY) rd->have_key[rd->cols[i].key_field] = true;
  }
  rd->ncols = n;
  bool linear = rd->have[C_TOKENS] && rd->have[C_OUT] && rd->have[C_IN];
  bool rowmaj = rd->have[C_LAYOUT] && rd->have[C_BM] && rd->have[C_BN] && rd->have[C_BK];
  bool blas = rd->have_key[9] && rd->have_key[10] && rd->have_key[11]; /* m, n, k */
  if (linear + rowmaj + blas != 1)
    return gt_err_set(GT_ERR_DATA,
                      "%s:%d: header must give exactly one shape view: "
                      "tokens,out_features,in_features | layout,M,N,K | m,n,k",
                      rd->file, rd->lineno);
  return GT_OK;
}

/* A row whose cell count differs from the header's. A layout code holds a comma, so an unquoted
 * one reads as two cells: say so, with the code as this row wrote it. */
static gt_status_t count_mismatch(const reader_t *rd, char **cells, int n) {
  int li = -1;
  for (int i = 0; i < rd->ncols; i++)
    if (rd->cols[i].kind == C_LAYOUT) li = i;
  if (li < 0 || n < rd->ncols)
    return gt_err_set(GT_ERR_DATA, "%s:%d: %d columns, header has %d", rd->file, rd->lineno, n,
                      rd->ncols);
  bool two = n == rd->ncols + 1 && li + 1 < n; /* the code split in two: show this row's */
  return gt_err_set(GT_ERR_DATA,
                    "%s:%d: %d columns, header has %d: a layout code holds a comma, write it "
                    "quoted (\"%s,%s\")",
                    rd->file, rd->lineno, n, rd->ncols, two ? cells[li] : "mk",
                    two ? cells[li + 1] : "nk");
}

/* One cell into the shape (key fields, counters, labels) or into its dimensions. */
static gt_status_t read_cell(const reader_t *rd, const col_t *col, const char *v, gt_shape_t *sh,
                             dims_t *d) {
  const char *file = rd->file, *cn = col->name;
  int line = rd->lineno;
  switch (col->kind) {
    case C_LABEL:
      if (*v) {
        size_t l = strlen(sh->label);
        snprintf(sh->label + l, sizeof sh->label - l, "%s%s", l ? "/" : "", v);
      }
      return GT_OK;
    case C_TOKENS: return cell_i64(file, line, cn, v, &d->tokens);
    case C_OUT: return cell_i64(file, line, cn, v, &d->out_f);
    case C_IN: return cell_i64(file, line, cn, v, &d->in_f);
    case C_BM: return cell_i64(file, line, cn, v, &d->M);
    case C_BN: return cell_i64(file, line, cn, v, &d->N);
    case C_BK: return cell_i64(file, line, cn, v, &d->K);
    case C_LAYOUT: d->layout = v; return GT_OK;
    case C_CALLS: {
      int64_t c = 0;
      gt_status_t st = cell_i64(file, line, cn, v, &c);
      sh->calls = (long)c;
      return st;
    }
    case C_ENTRY:
      if (gt_entry_parse(v, &sh->entry) != GT_OK) return restate(rd, "column 'entry': ");
      return GT_OK;
    case C_WORKSPACE: {
      char *end;
      errno = 0;
      unsigned long long w = strtoull(v, &end, 10);
      if (!*v || *end || errno || *v == '-')
        return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s': not a byte count: '%s'", file, line,
                          cn, v);
      sh->workspace = (uint64_t)w;
      return GT_OK;
    }
    case C_NOT_TUNABLE:
      /* "-" or empty: tunable; anything else is the reason it is not. */
      if (strlen(v) >= sizeof sh->not_tunable)
        return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s': longer than %zu characters", file,
                          line, cn, sizeof sh->not_tunable - 1);
      snprintf(sh->not_tunable, sizeof sh->not_tunable, "%s", strcmp(v, "-") ? v : "");
      return GT_OK;
    case C_TIME: return cell_f64(file, line, cn, v, &sh->time_us);
    case C_SHARE: return cell_f64(file, line, cn, v, &sh->share);
    case C_DTYPE: {
      gt_dtype_t dt;
      if (gt_dtype_parse(v, &dt) != GT_OK) return restate(rd, "column 'dtype': ");
      sh->p.a_type = sh->p.b_type = sh->p.c_type = sh->p.d_type = dt;
      if (dt == GT_DT_F32) sh->p.compute = GT_COMPUTE_F32;
      return GT_OK;
    }
    case C_KEY:
      if (gt_problem_set_field(&sh->p, cn, v) != GT_OK) return restate(rd, "");
      return GT_OK;
  }
  return GT_OK;
}

/* Map the row's view (nn.Linear, row-major, BLAS) to the key and record the mapping applied. */
static gt_status_t apply_view(const reader_t *rd, const dims_t *d, gt_shape_t *sh) {
  if (rd->have[C_TOKENS]) {
    gt_problem_set_linear(&sh->p, d->tokens, d->out_f, d->in_f);
    snprintf(sh->view, sizeof sh->view,
             "linear tokens=%" PRId64 " out=%" PRId64 " in=%" PRId64 " -> TN m=%" PRId64
             " n=%" PRId64 " k=%" PRId64,
             d->tokens, d->out_f, d->in_f, sh->p.m, sh->p.n, sh->p.k);
  } else if (rd->have[C_LAYOUT]) {
    if (gt_problem_set_rowmajor(&sh->p, d->layout, d->M, d->N, d->K) != GT_OK)
      return restate(rd, "column 'layout': ");
    snprintf(sh->view, sizeof sh->view,
             "row-major %s M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " -> %s m=%" PRId64
             " n=%" PRId64 " k=%" PRId64,
             d->layout, d->M, d->N, d->K, gt_problem_ops(&sh->p), sh->p.m, sh->p.n, sh->p.k);
  } else if (sh->p.op == GT_OP_GROUPED_MM) {
    /* torch's own terms first (gt_grouped_key.h), then the BLAS key they map to. */
    snprintf(sh->view, sizeof sh->view,
             "grouped_mm groups=%" PRId64 " rows<=%" PRId64 " N=%" PRId64 " K=%" PRId64
             " -> %s m=%" PRId64 " n=%" PRId64 " k=%" PRId64,
             sh->p.batch, sh->p.n, sh->p.m, sh->p.k, gt_problem_ops(&sh->p), sh->p.m, sh->p.n,
             sh->p.k);
  } else {
    snprintf(sh->view, sizeof sh->view, "blas %s m=%" PRId64 " n=%" PRId64 " k=%" PRId64,
             gt_problem_ops(&sh->p), sh->p.m, sh->p.n, sh->p.k);
  }
  /* Strides given as columns are facts of the call (0 = a broadcast operand); only strides
   * the file leaves out are filled with the tight values. */
  int64_t sa = sh->p.stride_a, sb = sh->p.stride_b, sc = sh->p.stride_c;
  gt_problem_fill_lds(&sh->p);
  if (rd->have_key[16]) sh->p.stride_a = sa;
  if (rd->have_key[17]) sh->p.stride_b = sb;
  if (rd->have_key[18]) sh->p.stride_c = sc;
  if (gt_problem_validate(&sh->p) != GT_OK) return restate(rd, "");
  return GT_OK;
}

/* A data row into a shape. */
static gt_status_t read_row(const reader_t *rd, char **cells, int n, gt_shape_t *sh) {
  if (n != rd->ncols) return count_mismatch(rd, cells, n);
  memset(sh, 0, sizeof *sh);
  sh->p = *rd->defaults;
  sh->p.lda = sh->p.ldb = sh->p.ldc = 0;
  sh->p.stride_a = sh->p.stride_b = sh->p.stride_c = 0;
  sh->line = rd->lineno;
  dims_t d = {0};
  for (int i = 0; i < n; i++) {
    gt_status_t st = read_cell(rd, &rd->cols[i], cells[i], sh, &d);
    if (st != GT_OK) return st;
  }
  return apply_view(rd, &d, sh);
}

typedef struct same_ctx {
  const gt_shapes_t *out;
  const gt_shape_t *sh;
} same_ctx_t;

/* One shape per key and mark: the calls of a key that could be tuned and those of the same key
 * that could not (a pointer-array batch that looks like a packed one) are told apart. */
static bool same_key(void *ctx, size_t i) {
  const same_ctx_t *c = ctx;
  return gt_problem_equal(&c->out->v[i].p, &c->sh->p) &&
         strcmp(c->out->v[i].not_tunable, c->sh->not_tunable) == 0;
}

/* Fold sh's counters into the earlier row dst of the same key. Sums that do not fit are an error
 * on this line rather than a wrapped count or an infinite time. */
static gt_status_t fold_shape(const reader_t *rd, gt_shape_t *dst, const gt_shape_t *sh) {
  long calls;
  if (__builtin_add_overflow(dst->calls, sh->calls, &calls))
    return gt_err_set(GT_ERR_DATA,
                      "%s:%d: column 'calls': the sum over rows of the same key (line %d) "
                      "overflows",
                      rd->file, rd->lineno, dst->line);
  double t = dst->time_us + sh->time_us, sh_sum = dst->share + sh->share;
  if (!isfinite(t) || !isfinite(sh_sum))
    return gt_err_set(GT_ERR_DATA,
                      "%s:%d: column '%s': the sum over rows of the same key (line %d) is not "
                      "finite",
                      rd->file, rd->lineno, isfinite(t) ? "share" : "time_us", dst->line);
  dst->calls = calls;
  dst->time_us = t;
  dst->share = sh_sum;
  /* The same key through two entry points: the first stated one decides the baseline; the
   * largest workspace any call offered is what the application can give a candidate. */
  if (dst->entry == GT_ENTRY_DEFAULT) dst->entry = sh->entry;
  if (sh->workspace > dst->workspace) dst->workspace = sh->workspace;
  return GT_OK;
}

/* Add a shape, or fold it into an earlier row of the same key (calls and time summed). The
 * index keeps this linear in the rows: the shim's exit path reads capture files through here. */
static gt_status_t add_shape(reader_t *rd, gt_shapes_t *out, const gt_shape_t *sh,
                             size_t *merged) {
  uint64_t h = gt_problem_hash(&sh->p);
  same_ctx_t c = {out, sh};
  long i = gt_hindex_find(&rd->index, h, same_key, &c);
  if (i >= 0) {
    gt_status_t st = fold_shape(rd, &out->v[i], sh);
    if (st == GT_OK && merged) (*merged)++;
    return st;
  }
  gt_status_t st = push(out, sh);
  if (st == GT_OK) st = gt_hindex_add(&rd->index, h, out->n - 1);
  return st;
}

/* One line: skipped when blank or a comment, else the header or a row. */
static gt_status_t read_line(reader_t *rd, char *line, gt_shapes_t *out, size_t *merged) {
  const char *t = line;
  while (*t == ' ' || *t == '\t' || *t == '\r') t++;
  if (*t == '\0' || *t == '#') return GT_OK;
  char *cells[MAX_COLS];
  int n;
  /* Hand-written files put blanks after commas; trimming them is the one leniency here. */
  if (gt_csv_split(line, cells, NULL, MAX_COLS, &n, GT_CSV_TRIM) != GT_OK)
    return restate(rd, "");
  if (n > MAX_COLS)
    return gt_err_set(GT_ERR_DATA, "%s:%d: more than %d columns", rd->file, rd->lineno, MAX_COLS);
  if (rd->ncols == 0) return read_header(rd, cells, n);
  gt_shape_t sh;
  gt_status_t st = read_row(rd, cells, n, &sh);
  return st == GT_OK ? add_shape(rd, out, &sh, merged) : st;
}

gt_status_t gt_shapes_parse(const char *file, const char *text, const gt_problem_t *defaults,
                            gt_shapes_t *out, size_t *merged) {
  memset(out, 0, sizeof *out);
  snprintf(out->path, sizeof out->path, "%s", file);
  if (merged) *merged = 0;
  gt_status_t st = check_complete(file, text);
  char *buf = st == GT_OK ? strdup(text) : NULL;
  if (st == GT_OK && !buf) st = gt_err_set(GT_ERR_NOMEM, "out of memory");
  if (st != GT_OK) {
    gt_shapes_free(out);
    return st;
  }
  reader_t rd = {.file = file, .defaults = defaults};
  for (char *p = buf; *p && st == GT_OK;) {
    char *nl = strchr(p, '\n'); /* every line ends in one: check_complete */
    *nl = '\0';
    rd.lineno++;
    st = read_line(&rd, p, out, merged);
    p = nl + 1;
  }
  if (st == GT_OK && rd.ncols == 0)
    st = gt_err_set(GT_ERR_DATA, "%s:%d: no header row (empty shapes file)", file,
                    rd.lineno ? rd.lineno : 1);
  else if (st == GT_OK && out->n == 0)
    st = gt_err_set(GT_ERR_DATA, "%s:%d: no shapes after the header", file, rd.lineno);
  free(buf);
  gt_hindex_free(&rd.index);
  if (st != GT_OK) gt_shapes_free(out);
  return st;
}

gt_status_t gt_shapes_read(const char *path, const gt_problem_t *defaults, gt_shapes_t *out,
                           size_t *merged) {
  memset(out, 0, sizeof *out);
  char *text;
  size_t len;
  gt_status_t s = gt_file_read(path, GT_FILE_MAX_CLI, 0, &text, &len);
  if (s != GT_OK) return s;
  if (strlen(text) != len) {
    free(text);
    return gt_err_set(GT_ERR_DATA, "%s: contains a NUL byte: not a text CSV", path);
  }
  s = gt_shapes_parse(path, text, defaults, out, merged);
  free(text);
  return s;
}
