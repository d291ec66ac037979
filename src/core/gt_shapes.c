/* Shapes-file reader (see gt_shapes.h). Strict: a bad cell is an error naming file:line:column,
 * never a silently skipped row, since a dropped shape is a GEMM that is never tuned. */
#define _GNU_SOURCE
#include "gt_shapes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 48

enum col_kind { C_LABEL, C_TOKENS, C_OUT, C_IN, C_LAYOUT, C_BM, C_BN, C_BK, C_CALLS, C_TIME,
                C_SHARE, C_DTYPE, C_KEY };

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
      {"calls", C_CALLS}, {"time_us", C_TIME}, {"share", C_SHARE}, {"dtype", C_DTYPE}};
  snprintf(c->name, sizeof c->name, "%s", name);
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    if (strcmp(name, fixed[i].n) == 0) return c->kind = fixed[i].k, GT_OK;
  for (int i = 0; i < GT_KEY_NFIELDS; i++)
    if (strcmp(name, gt_key_field_names[i]) == 0) return c->kind = C_KEY, c->key_field = i, GT_OK;
  return GT_ERR_DATA;
}

static int split_csv(char *line, char **cells, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    if (n == max) return -1;
    cells[n++] = p;
    char *comma = strchr(p, ',');
    if (!comma) break;
    *comma = '\0';
    p = comma + 1;
  }
  for (int i = 0; i < n; i++) { /* trim spaces */
    while (*cells[i] == ' ' || *cells[i] == '\t') cells[i]++;
    char *e = cells[i] + strlen(cells[i]);
    while (e > cells[i] && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = '\0';
  }
  return n;
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
  if (!*v || *end || errno || x < 0)
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

gt_status_t gt_shapes_parse(const char *file, const char *text, const gt_problem_t *defaults,
                            gt_shapes_t *out, size_t *merged) {
  memset(out, 0, sizeof *out);
  snprintf(out->path, sizeof out->path, "%s", file);
  if (merged) *merged = 0;
  char *buf = strdup(text);
  if (!buf) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  col_t cols[MAX_COLS];
  int ncols = 0, lineno = 0;
  bool have[C_KEY + 1] = {0};
  bool have_key[GT_KEY_NFIELDS] = {0};
  gt_status_t st = GT_OK;
  char *save = NULL, *p = buf;
  size_t len = strlen(buf);
  if (len && buf[len - 1] != '\n') {
    /* A shapes file cut mid-line would silently drop or mangle its last shape. */
    int lines = 1;
    for (size_t i = 0; i < len; i++) lines += buf[i] == '\n';
    st = gt_err_set(GT_ERR_DATA, "%s:%d: truncated last line (no newline at end of file)", file,
                    lines);
    goto done;
  }
  (void)save;
  while (p && *p) {
    char *nl = strchr(p, '\n');
    *nl = '\0';
    char *line = p;
    p = nl + 1;
    lineno++;
    char *t = line;
    while (*t == ' ' || *t == '\t' || *t == '\r') t++;
    if (*t == '\0' || *t == '#') continue;
    char *cells[MAX_COLS];
    int n = split_csv(line, cells, MAX_COLS);
    if (n < 0) {
      st = gt_err_set(GT_ERR_DATA, "%s:%d: more than %d columns", file, lineno, MAX_COLS);
      goto done;
    }
    if (ncols == 0) { /* header */
      for (int i = 0; i < n; i++) {
        if (classify(cells[i], &cols[i]) != GT_OK) {
          st = gt_err_set(GT_ERR_DATA,
                          "%s:%d: unknown column '%s' (expected tokens,out_features,in_features; "
                          "layout,M,N,K; or key columns m,n,k,...)",
                          file, lineno, cells[i]);
          goto done;
        }
        for (int j = 0; j < i; j++)
          if (strcmp(cols[j].name, cols[i].name) == 0) {
            st = gt_err_set(GT_ERR_DATA, "%s:%d: column '%s' appears twice", file, lineno,
                            cells[i]);
            goto done;
          }
        have[cols[i].kind] = true;
        if (cols[i].kind == C_KEY) have_key[cols[i].key_field] = true;
      }
      ncols = n;
      bool linear = have[C_TOKENS] && have[C_OUT] && have[C_IN];
      bool rowmaj = have[C_LAYOUT] && have[C_BM] && have[C_BN] && have[C_BK];
      bool blas = have_key[9] && have_key[10] && have_key[11]; /* m, n, k */
      if (linear + rowmaj + blas != 1) {
        st = gt_err_set(GT_ERR_DATA,
                        "%s:%d: header must give exactly one shape view: "
                        "tokens,out_features,in_features | layout,M,N,K | m,n,k",
                        file, lineno);
        goto done;
      }
      continue;
    }
    if (n != ncols) {
      st = gt_err_set(GT_ERR_DATA, "%s:%d: %d columns, header has %d", file, lineno, n, ncols);
      goto done;
    }
    gt_shape_t sh;
    memset(&sh, 0, sizeof sh);
    sh.p = *defaults;
    sh.p.lda = sh.p.ldb = sh.p.ldc = 0;
    sh.p.stride_a = sh.p.stride_b = sh.p.stride_c = 0;
    sh.line = lineno;
    int64_t tokens = 0, out_f = 0, in_f = 0, M = 0, N = 0, K = 0;
    const char *layout = NULL;
    for (int i = 0; i < n && st == GT_OK; i++) {
      const char *v = cells[i], *cn = cols[i].name;
      switch (cols[i].kind) {
        case C_LABEL:
          if (*v) {
            size_t l = strlen(sh.label);
            snprintf(sh.label + l, sizeof sh.label - l, "%s%s", l ? "/" : "", v);
          }
          break;
        case C_TOKENS: st = cell_i64(file, lineno, cn, v, &tokens); break;
        case C_OUT: st = cell_i64(file, lineno, cn, v, &out_f); break;
        case C_IN: st = cell_i64(file, lineno, cn, v, &in_f); break;
        case C_BM: st = cell_i64(file, lineno, cn, v, &M); break;
        case C_BN: st = cell_i64(file, lineno, cn, v, &N); break;
        case C_BK: st = cell_i64(file, lineno, cn, v, &K); break;
        case C_LAYOUT: layout = v; break;
        case C_CALLS: {
          int64_t c = 0;
          st = cell_i64(file, lineno, cn, v, &c);
          sh.calls = (long)c;
          break;
        }
        case C_TIME: st = cell_f64(file, lineno, cn, v, &sh.time_us); break;
        case C_SHARE: st = cell_f64(file, lineno, cn, v, &sh.share); break;
        case C_DTYPE: {
          gt_dtype_t dt;
          if (gt_dtype_parse(v, &dt) != GT_OK) {
            char m[400];
            snprintf(m, sizeof m, "%s", gt_err_msg());
            st = gt_err_set(GT_ERR_DATA, "%s:%d: column 'dtype': %s", file, lineno, m);
          } else {
            sh.p.a_type = sh.p.b_type = sh.p.c_type = sh.p.d_type = dt;
            if (dt == GT_DT_F32) sh.p.compute = GT_COMPUTE_F32;
          }
          break;
        }
        case C_KEY:
          if (gt_problem_set_field(&sh.p, cn, v) != GT_OK) {
            char m[400];
            snprintf(m, sizeof m, "%s", gt_err_msg());
            st = gt_err_set(GT_ERR_DATA, "%s:%d: %s", file, lineno, m);
          }
          break;
      }
    }
    if (st != GT_OK) goto done;
    if (have[C_TOKENS]) {
      gt_problem_set_linear(&sh.p, tokens, out_f, in_f);
      snprintf(sh.view, sizeof sh.view,
               "linear tokens=%" PRId64 " out=%" PRId64 " in=%" PRId64 " -> TN m=%" PRId64
               " n=%" PRId64 " k=%" PRId64,
               tokens, out_f, in_f, sh.p.m, sh.p.n, sh.p.k);
    } else if (have[C_LAYOUT]) {
      if (gt_problem_set_rowmajor(&sh.p, layout, M, N, K) != GT_OK) {
        char m[400];
        snprintf(m, sizeof m, "%s", gt_err_msg());
        st = gt_err_set(GT_ERR_DATA, "%s:%d: column 'layout': %s", file, lineno, m);
        goto done;
      }
      snprintf(sh.view, sizeof sh.view,
               "row-major %s M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " -> %s m=%" PRId64
               " n=%" PRId64 " k=%" PRId64,
               layout, M, N, K, gt_problem_ops(&sh.p), sh.p.m, sh.p.n, sh.p.k);
    } else {
      snprintf(sh.view, sizeof sh.view, "blas %s m=%" PRId64 " n=%" PRId64 " k=%" PRId64,
               gt_problem_ops(&sh.p), sh.p.m, sh.p.n, sh.p.k);
    }
    /* Strides given as columns are facts of the call (0 = a broadcast operand); only strides
     * the file leaves out are filled with the tight values. */
    int64_t sa = sh.p.stride_a, sb = sh.p.stride_b, sc = sh.p.stride_c;
    gt_problem_fill_lds(&sh.p);
    if (have_key[16]) sh.p.stride_a = sa;
    if (have_key[17]) sh.p.stride_b = sb;
    if (have_key[18]) sh.p.stride_c = sc;
    if (gt_problem_validate(&sh.p) != GT_OK) {
      char m[400];
      snprintf(m, sizeof m, "%s", gt_err_msg());
      st = gt_err_set(GT_ERR_DATA, "%s:%d: %s", file, lineno, m);
      goto done;
    }
    bool dup = false;
    for (size_t i = 0; i < out->n; i++)
      if (gt_problem_equal(&out->v[i].p, &sh.p)) {
        out->v[i].calls += sh.calls;
        out->v[i].time_us += sh.time_us;
        out->v[i].share += sh.share;
        if (merged) (*merged)++;
        dup = true;
        break;
      }
    if (!dup && (st = push(out, &sh)) != GT_OK) goto done;
  }
  if (ncols == 0) st = gt_err_set(GT_ERR_DATA, "%s:%d: no header row (empty shapes file)", file,
                                  lineno ? lineno : 1);
  else if (out->n == 0) st = gt_err_set(GT_ERR_DATA, "%s:%d: no shapes after the header", file, lineno);
done:
  free(buf);
  if (st != GT_OK) gt_shapes_free(out);
  return st;
}

gt_status_t gt_shapes_read(const char *path, const gt_problem_t *defaults, gt_shapes_t *out,
                           size_t *merged) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return gt_err_set(GT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  char *text = NULL;
  size_t cap = 0, len = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 65536;
      char *t = realloc(text, cap);
      if (!t) {
        free(text);
        fclose(f);
        return gt_err_set(GT_ERR_NOMEM, "out of memory reading %s", path);
      }
      text = t;
    }
    size_t r = fread(text + len, 1, cap - len - 1, f);
    len += r;
    if (r == 0) break;
  }
  bool err = ferror(f);
  fclose(f);
  if (err) {
    free(text);
    return gt_err_set(GT_ERR_IO, "%s: read error", path);
  }
  text[len] = '\0';
  if (strlen(text) != len) {
    free(text);
    return gt_err_set(GT_ERR_DATA, "%s: contains a NUL byte: not a text CSV", path);
  }
  gt_status_t s = gt_shapes_parse(path, text, defaults, out, merged);
  free(text);
  return s;
}
