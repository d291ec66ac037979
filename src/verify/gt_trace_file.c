/* The kernel trace file: aggregation, text format and strict parser (see gt_trace_file.h). */
#define _GNU_SOURCE
#include "gt_trace_file.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_csv.h"

const char *gt_trace_state_name(gt_trace_state_t s) {
  switch (s) {
    case GT_TRACE_OK: return "ok";
    case GT_TRACE_UNVERIFIED: return "unverified";
    case GT_TRACE_INCOMPLETE: return "incomplete";
  }
  return "?";
}

void gt_trace_init(gt_trace_t *t) { memset(t, 0, sizeof *t); }

void gt_trace_free(gt_trace_t *t) {
  for (size_t i = 0; i < t->n; i++) free(t->k[i].name);
  free(t->k);
  free(t->slots);
  gt_trace_init(t);
}

static uint64_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Slot of name: its row's slot, or the empty slot where it would go. */
static size_t slot_of(const gt_trace_t *t, const char *name) {
  size_t mask = t->nslots - 1, i = (size_t)name_hash(name) & mask;
  while (t->slots[i] && strcmp(t->k[t->slots[i] - 1].name, name) != 0) i = (i + 1) & mask;
  return i;
}

/* Keep the table at most half full, so probes stay short. */
static gt_status_t index_grow(gt_trace_t *t) {
  if (t->nslots && 2 * (t->n + 1) <= t->nslots) return GT_OK;
  size_t ns = t->nslots ? 2 * t->nslots : 256;
  size_t *s = calloc(ns, sizeof *s);
  if (!s) return gt_err_set(GT_ERR_NOMEM, "trace: out of memory");
  free(t->slots);
  t->slots = s;
  t->nslots = ns;
  for (size_t r = 0; r < t->n; r++) t->slots[slot_of(t, t->k[r].name)] = r + 1;
  return GT_OK;
}

const gt_trace_kernel_t *gt_trace_find(const gt_trace_t *t, const char *name) {
  if (!t->nslots || !name) return NULL;
  size_t s = t->slots[slot_of(t, name)];
  return s ? &t->k[s - 1] : NULL;
}

/* The row for name, created empty when new. */
static gt_trace_kernel_t *row_for(gt_trace_t *t, const char *name) {
  if (t->nslots) {
    size_t s = t->slots[slot_of(t, name)];
    if (s) return &t->k[s - 1];
  }
  if (index_grow(t) != GT_OK) return NULL;
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    gt_trace_kernel_t *k = realloc(t->k, cap * sizeof *k);
    if (!k) return gt_err_set(GT_ERR_NOMEM, "trace: out of memory"), NULL;
    t->k = k;
    t->cap = cap;
  }
  gt_trace_kernel_t *r = &t->k[t->n];
  memset(r, 0, sizeof *r);
  r->name = strdup(name);
  if (!r->name) return gt_err_set(GT_ERR_NOMEM, "trace: out of memory"), NULL;
  r->min_ns = UINT64_MAX;
  t->slots[slot_of(t, name)] = ++t->n;
  return r;
}

gt_status_t gt_trace_add(gt_trace_t *t, const char *name, uint64_t start_ns, uint64_t end_ns,
                         uint32_t stream, bool from_graph) {
  gt_trace_kernel_t *r = row_for(t, name && *name ? name : "(unnamed)");
  if (!r) return GT_ERR_NOMEM;
  uint64_t d = end_ns > start_ns ? end_ns - start_ns : 0;
  r->calls++;
  r->total_ns += d;
  if (d < r->min_ns) r->min_ns = d;
  if (d > r->max_ns) r->max_ns = d;
  if (from_graph) r->graph_launches++;
  bool seen = false;
  uint32_t tracked = r->stream_count < GT_TRACE_MAX_STREAMS ? r->stream_count : GT_TRACE_MAX_STREAMS;
  for (uint32_t i = 0; i < tracked && !seen; i++) seen = r->streams[i] == stream;
  if (!seen && r->stream_count < GT_TRACE_MAX_STREAMS) r->streams[r->stream_count++] = stream;
  t->records++;
  t->total_ns += d;
  return GT_OK;
}

void gt_trace_set_state(gt_trace_t *t, gt_trace_state_t s, const char *fmt, ...) {
  t->state = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->reason, sizeof t->reason, fmt, ap);
  va_end(ap);
  for (char *p = t->reason; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
}

/* ---- format -------------------------------------------------------------------------------- */

static int cmp_rows(const void *a, const void *b) {
  const gt_trace_kernel_t *x = *(const gt_trace_kernel_t *const *)a;
  const gt_trace_kernel_t *y = *(const gt_trace_kernel_t *const *)b;
  if (x->total_ns != y->total_ns) return x->total_ns > y->total_ns ? -1 : 1;
  return strcmp(x->name, y->name);
}

typedef struct sbuf {
  char *p;
  size_t len, cap;
  bool failed;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf_t *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->failed = true;
      return;
    }
    if (b->p && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap <= b->len + (size_t)n) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->failed = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
}

static void sb_csv_cell(sbuf_t *b, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    sb_printf(b, "%s", s);
    return;
  }
  sb_printf(b, "\"");
  for (const char *p = s; *p; p++) {
    if (*p == '"') sb_printf(b, "\"\"");
    else if (*p == '\n' || *p == '\r') sb_printf(b, " ");
    else sb_printf(b, "%c", *p);
  }
  sb_printf(b, "\"");
}

char *gt_trace_format(const gt_trace_t *t, size_t *len) {
  sbuf_t b = {0};
  uint64_t total = 0;
  for (size_t i = 0; i < t->n; i++) total += t->k[i].total_ns;
  sb_printf(&b, "%s status=%s pid=%ld records=%" PRIu64 " dropped=%" PRIu64 " total_ns=%" PRIu64
                " reason=%s\n",
            GT_TRACE_FORMAT_LINE, gt_trace_state_name(t->state), t->pid, t->records, t->dropped,
            total, t->reason[0] ? t->reason : "-");
  sb_printf(&b, "%s\n", GT_TRACE_HEADER);
  const gt_trace_kernel_t **order = malloc((t->n ? t->n : 1) * sizeof *order);
  if (!order) {
    free(b.p);
    return NULL;
  }
  for (size_t i = 0; i < t->n; i++) order[i] = &t->k[i];
  qsort(order, t->n, sizeof *order, cmp_rows);
  for (size_t i = 0; i < t->n; i++) {
    const gt_trace_kernel_t *r = order[i];
    sb_csv_cell(&b, r->name);
    sb_printf(&b, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu32 ",%" PRIu64 "\n",
              r->calls, r->total_ns, r->calls ? r->min_ns : 0, r->max_ns, r->stream_count,
              r->graph_launches);
  }
  free(order);
  if (b.failed) {
    free(b.p);
    return NULL;
  }
  if (len) *len = b.len;
  return b.p;
}

/* ---- parse --------------------------------------------------------------------------------- */

bool gt_trace_parse_u64(const char *s, uint64_t *out) {
  if (!*s || *s == '-' || *s == '+' || *s == ' ') return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

static gt_status_t parse_status_line(const char *name, char *line, gt_trace_t *t,
                                     uint64_t *total) {
  size_t fl = strlen(GT_TRACE_FORMAT_LINE);
  if (strncmp(line, GT_TRACE_FORMAT_LINE, fl) != 0 || (line[fl] != ' ' && line[fl] != '\0'))
    return gt_err_set(GT_ERR_DATA, "%s:1: not a gemmtune trace (expected '%s ...', got '%.60s')",
                      name, GT_TRACE_FORMAT_LINE, line);
  char *p = line + fl;
  bool have_status = false, have_total = false;
  while (*p == ' ') p++;
  while (*p) {
    char *eq = strchr(p, '=');
    if (!eq) return gt_err_set(GT_ERR_DATA, "%s:1: expected name=value, got '%.40s'", name, p);
    *eq = '\0';
    char *v = eq + 1;
    if (strcmp(p, "reason") == 0) { /* free text to the end of the line */
      snprintf(t->reason, sizeof t->reason, "%s", strcmp(v, "-") ? v : "");
      break;
    }
    char *sp = strchr(v, ' ');
    if (sp) *sp = '\0';
    uint64_t x = 0;
    if (strcmp(p, "status") == 0) {
      if (strcmp(v, "ok") == 0) t->state = GT_TRACE_OK;
      else if (strcmp(v, "unverified") == 0) t->state = GT_TRACE_UNVERIFIED;
      else if (strcmp(v, "incomplete") == 0) t->state = GT_TRACE_INCOMPLETE;
      else return gt_err_set(GT_ERR_DATA, "%s:1: unknown status '%.30s'", name, v);
      have_status = true;
    } else if (strcmp(p, "pid") == 0 || strcmp(p, "records") == 0 || strcmp(p, "dropped") == 0 ||
               strcmp(p, "total_ns") == 0) {
      if (!gt_trace_parse_u64(v, &x))
        return gt_err_set(GT_ERR_DATA, "%s:1: field '%s': not a non-negative integer: '%.30s'",
                          name, p, v);
      if (p[0] == 'p' && x > (uint64_t)LONG_MAX)
        return gt_err_set(GT_ERR_DATA, "%s:1: field 'pid': %.30s is not a process id", name, v);
      if (p[0] == 'p') t->pid = (long)x;
      else if (p[0] == 'r') t->records = x;
      else if (p[0] == 'd') t->dropped = x;
      else *total = x, have_total = true;
    } /* other names: later versions may add facts; they are not errors */
    if (!sp) break;
    p = sp + 1;
    while (*p == ' ') p++;
  }
  if (!have_status) return gt_err_set(GT_ERR_DATA, "%s:1: no status= field", name);
  if (!have_total && t->state == GT_TRACE_OK)
    return gt_err_set(GT_ERR_DATA, "%s:1: no total_ns= field", name);
  return GT_OK;
}

/* One kernel row (line is modified in place); its total_ns is added to *sum. */
static gt_status_t parse_row(const char *name, int ln, char *line, gt_trace_t *out,
                             uint64_t *sum) {
  static const char *const cols[] = {"name", "calls", "total_ns", "min_ns", "max_ns",
                                     "stream_count", "graph_launches"};
  char *c[7];
  int n;
  if (gt_csv_split(line, c, NULL, 7, &n, 0) != GT_OK) {
    char why[256];
    snprintf(why, sizeof why, "%s", gt_err_msg());
    return gt_err_set(GT_ERR_DATA, "%s:%d: expected 7 columns, got a malformed line (%s)", name,
                      ln, why);
  }
  if (n != 7) return gt_err_set(GT_ERR_DATA, "%s:%d: expected 7 columns, got %d", name, ln, n);
  uint64_t v[7] = {0};
  for (int i = 1; i < 7; i++)
    if (!gt_trace_parse_u64(c[i], &v[i]))
      return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s': not a non-negative integer: '%.30s'",
                        name, ln, cols[i], c[i]);
  if (!*c[0]) return gt_err_set(GT_ERR_DATA, "%s:%d: column 'name' is empty", name, ln);
  if (v[1] == 0) return gt_err_set(GT_ERR_DATA, "%s:%d: column 'calls' is 0", name, ln);
  if (v[3] > v[4])
    return gt_err_set(GT_ERR_DATA, "%s:%d: min_ns %" PRIu64 " is above max_ns %" PRIu64, name, ln,
                      v[3], v[4]);
  if (v[6] > v[1])
    return gt_err_set(GT_ERR_DATA, "%s:%d: graph_launches %" PRIu64 " exceeds calls %" PRIu64,
                      name, ln, v[6], v[1]);
  if (gt_trace_find(out, c[0]))
    return gt_err_set(GT_ERR_DATA, "%s:%d: kernel '%.80s' is listed twice", name, ln, c[0]);
  gt_trace_kernel_t *r = row_for(out, c[0]);
  if (!r) return GT_ERR_NOMEM;
  r->calls = v[1], r->total_ns = v[2], r->min_ns = v[3], r->max_ns = v[4];
  r->stream_count = v[5] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[5];
  r->graph_launches = v[6];
  *sum += v[2];
  return GT_OK;
}

gt_status_t gt_trace_parse(const char *name, const char *text, gt_trace_t *out) {
  gt_trace_init(out);
  size_t len = strlen(text);
  if (len == 0) return gt_err_set(GT_ERR_DATA, "%s: empty file", name);
  if (text[len - 1] != '\n')
    return gt_err_set(GT_ERR_DATA, "%s: truncated (the last line has no newline)", name);
  char *buf = strdup(text);
  if (!buf) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  gt_status_t s = GT_OK;
  uint64_t total = 0, sum = 0;
  int ln = 0;
  char *next = buf;
  while (*next && s == GT_OK) {
    char *line = next, *nl = strchr(line, '\n');
    *nl = '\0'; /* every line ends in a newline: checked above */
    next = nl + 1;
    ln++;
    size_t l = strlen(line);
    if (l && line[l - 1] == '\r') line[--l] = '\0';
    if (ln == 1) {
      s = parse_status_line(name, line, out, &total);
      continue;
    }
    if (ln == 2) {
      if (strcmp(line, GT_TRACE_HEADER) != 0)
        s = gt_err_set(GT_ERR_DATA, "%s:2: expected the header '%s', got '%.80s'", name,
                       GT_TRACE_HEADER, line);
      continue;
    }
    if (!*line) {
      s = gt_err_set(GT_ERR_DATA, "%s:%d: empty line", name, ln);
      break;
    }
    s = parse_row(name, ln, line, out, &sum);
  }
  free(buf);
  if (s == GT_OK && ln < 2) s = gt_err_set(GT_ERR_DATA, "%s: no header line", name);
  if (s == GT_OK && out->state != GT_TRACE_OK && out->n)
    s = gt_err_set(GT_ERR_DATA, "%s: status=%s but kernels are listed", name,
                   gt_trace_state_name(out->state));
  if (s == GT_OK && out->state == GT_TRACE_OK && total != sum)
    s = gt_err_set(GT_ERR_DATA,
                   "%s:1: total_ns=%" PRIu64 " is not the sum of the rows' total_ns (%" PRIu64 ")",
                   name, total, sum);
  if (s != GT_OK) {
    gt_trace_free(out);
    return s;
  }
  out->total_ns = sum;
  out->files = 1;
  return GT_OK;
}

gt_status_t gt_trace_read(const char *path, gt_trace_t *out) {
  gt_trace_init(out);
  FILE *f = fopen(path, "rb");
  if (!f) return gt_err_set(GT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  char *text = NULL;
  size_t len = 0, cap = 0;
  char chunk[65536];
  size_t r;
  while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + r + 1 > cap) {
      cap = (len + r + 1) * 2;
      char *nt = realloc(text, cap);
      if (!nt) {
        free(text);
        fclose(f);
        return gt_err_set(GT_ERR_NOMEM, "out of memory reading %s", path);
      }
      text = nt;
    }
    memcpy(text + len, chunk, r);
    len += r;
  }
  bool err = ferror(f);
  fclose(f);
  if (err) {
    free(text);
    return gt_err_set(GT_ERR_IO, "cannot read %s", path);
  }
  if (!text) return gt_err_set(GT_ERR_DATA, "%s: empty file", path);
  text[len] = '\0';
  if (strlen(text) != len) {
    free(text);
    return gt_err_set(GT_ERR_DATA, "%s: contains a NUL byte", path);
  }
  gt_status_t s = gt_trace_parse(path, text, out);
  free(text);
  return s;
}

static int severity(gt_trace_state_t s) {
  return s == GT_TRACE_UNVERIFIED ? 2 : s == GT_TRACE_INCOMPLETE ? 1 : 0;
}

/* Merged counters saturate rather than wrap (traces of many processes, or a crafted file). */
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

gt_status_t gt_trace_merge(gt_trace_t *dst, const gt_trace_t *src) {
  for (size_t i = 0; i < src->n; i++) {
    const gt_trace_kernel_t *k = &src->k[i];
    gt_trace_kernel_t *r = row_for(dst, k->name);
    if (!r) return GT_ERR_NOMEM;
    r->calls = sat_add(r->calls, k->calls);
    r->total_ns = sat_add(r->total_ns, k->total_ns);
    if (k->calls && k->min_ns < r->min_ns) r->min_ns = k->min_ns;
    if (k->max_ns > r->max_ns) r->max_ns = k->max_ns;
    r->graph_launches = sat_add(r->graph_launches, k->graph_launches);
    r->stream_count += k->stream_count;
  }
  dst->records = sat_add(dst->records, src->records);
  dst->dropped = sat_add(dst->dropped, src->dropped);
  dst->total_ns = sat_add(dst->total_ns, src->total_ns);
  dst->files += src->files ? src->files : 1;
  dst->pid = dst->files > 1 ? 0 : src->pid;
  if (severity(src->state) > severity(dst->state)) {
    dst->state = src->state;
    snprintf(dst->reason, sizeof dst->reason, "%s", src->reason);
  }
  return GT_OK;
}
