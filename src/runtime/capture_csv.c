/* Writing the shapes file of a captured workload (capture_csv.h). */
#include "capture_csv.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_fileio.h"
#include "core/gt_hindex.h"

static char header[640], header_v2[640], header_v1[640];
static pthread_once_t header_once = PTHREAD_ONCE_INIT;

/* Built from gt_key_field_names so the columns can never drift from the key. header_v2 is the
 * header files had before the fp8 key fields, header_v1 the one before the not_tunable column
 * (both are still capture files: the shapes reader takes columns by name, missing fp8 fields
 * at their defaults). */
static void build_header(void) {
  int len = snprintf(header, sizeof header, "calls,time_us,share,entry,workspace,not_tunable");
  int len2 = snprintf(header_v2, sizeof header_v2, "%s", header);
  int len1 = snprintf(header_v1, sizeof header_v1, "calls,time_us,share,entry,workspace");
  for (int i = 0; i < GT_KEY_NFIELDS; i++) {
    len += snprintf(header + len, sizeof header - (size_t)len, ",%s", gt_key_field_names[i]);
    if (i >= GT_KEY_NFIELDS_V2) continue;
    len2 += snprintf(header_v2 + len2, sizeof header_v2 - (size_t)len2, ",%s",
                     gt_key_field_names[i]);
    len1 += snprintf(header_v1 + len1, sizeof header_v1 - (size_t)len1, ",%s",
                     gt_key_field_names[i]);
  }
}

const char *gt_rt_capture_header(void) {
  pthread_once(&header_once, build_header);
  return header;
}

typedef struct sort_item {
  const gt_rt_capture_rec_t *rec;
  char key[512];
} sort_item_t;

static int cmp_items(const void *pa, const void *pb) {
  const sort_item_t *a = pa, *b = pb;
  if (a->rec->time_us != b->rec->time_us) return a->rec->time_us > b->rec->time_us ? -1 : 1;
  if (a->rec->calls != b->rec->calls) return a->rec->calls > b->rec->calls ? -1 : 1;
  int c = strcmp(a->key, b->key);
  return c ? c : strcmp(a->rec->not_tunable, b->rec->not_tunable);
}

/* The not_tunable cell: "-" for a tunable key, else the reason with the characters that would
 * break the row replaced. */
static void reason_cell(const char *why, char *out, size_t cap) {
  snprintf(out, cap, "%s", why && *why ? why : "-");
  for (char *c = out; *c; c++)
    if (*c == ',' || *c == '\n' || *c == '\r' || *c == '"') *c = ';';
}

typedef struct buf {
  char *p;
  size_t len, cap;
} buf_t;

static gt_status_t put(buf_t *b, const char *s) {
  size_t n = strlen(s);
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n + 1) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) return gt_err_set(GT_ERR_NOMEM, "out of memory formatting the shapes file");
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n + 1);
  b->len += n;
  return GT_OK;
}

gt_status_t gt_rt_capture_format(const gt_rt_capture_rec_t *recs, size_t n, char **text,
                                 size_t *len) {
  *text = NULL;
  *len = 0;
  sort_item_t *items = n ? calloc(n, sizeof *items) : NULL;
  if (n && !items) return gt_err_set(GT_ERR_NOMEM, "out of memory formatting the shapes file");
  double total = 0;
  for (size_t i = 0; i < n; i++) {
    items[i].rec = &recs[i];
    gt_problem_format_key(&recs[i].key, items[i].key, sizeof items[i].key);
    total += recs[i].time_us > 0 ? recs[i].time_us : 0;
  }
  /* Time share first: the rows worth tuning come first, as `shapes` prints them. */
  if (n) qsort(items, n, sizeof *items, cmp_items);

  buf_t b = {0};
  gt_status_t s = put(&b, gt_rt_capture_header());
  if (s == GT_OK) s = put(&b, "\n");
  for (size_t i = 0; s == GT_OK && i < n; i++) {
    const gt_rt_capture_rec_t *r = items[i].rec;
    double t = r->time_us > 0 ? r->time_us : 0;
    char line[1280], why[GT_RT_REASON_MAX];
    reason_cell(r->not_tunable, why, sizeof why);
    int w = snprintf(line, sizeof line, "%llu,%.3f,%.6f,%s,%llu,%s", (unsigned long long)r->calls,
                     t, total > 0 ? t / total : 0.0, gt_entry_name(r->entry),
                     (unsigned long long)r->workspace, why);
    for (int f = 0; f < GT_KEY_NFIELDS && w < (int)sizeof line; f++) {
      char v[64];
      gt_problem_field_str(&r->key, f, v, sizeof v);
      w += snprintf(line + w, sizeof line - (size_t)w, ",%s", v);
    }
    s = put(&b, line);
    if (s == GT_OK) s = put(&b, "\n");
  }
  free(items);
  if (s != GT_OK) {
    free(b.p);
    return s;
  }
  *text = b.p;
  *len = b.len;
  return GT_OK;
}

gt_status_t gt_rt_capture_write(const char *path, const gt_rt_capture_rec_t *recs, size_t n) {
  char *text;
  size_t len;
  gt_status_t s = gt_rt_capture_format(recs, n, &text, &len);
  if (s != GT_OK) return s;
  s = gt_file_write_atomic(path, text, len);
  free(text);
  return s;
}

gt_status_t gt_rt_capture_write_with(const char *path, const char *preamble,
                                     const gt_rt_capture_rec_t *recs, size_t n) {
  char *text;
  size_t len;
  gt_status_t s = gt_rt_capture_format(recs, n, &text, &len);
  if (s != GT_OK) return s;
  size_t plen = preamble ? strlen(preamble) : 0;
  char *all = malloc(plen + len + 1);
  if (!all) {
    free(text);
    return gt_err_set(GT_ERR_NOMEM, "out of memory writing the shapes file");
  }
  if (plen) memcpy(all, preamble, plen);
  memcpy(all + plen, text, len + 1);
  free(text);
  s = gt_file_write_atomic(path, all, plen + len);
  free(all);
  return s;
}

/* ---- GEMMTUNE_STATS ------------------------------------------------------------------------ */

static char stats_header[640];
static pthread_once_t stats_header_once = PTHREAD_ONCE_INIT;

static void build_stats_header(void) {
  int len = snprintf(stats_header, sizeof stats_header, "calls,hits,decision,provider,instance,entry");
  for (int i = 0; i < GT_KEY_NFIELDS; i++)
    len += snprintf(stats_header + len, sizeof stats_header - (size_t)len, ",%s",
                    gt_key_field_names[i]);
}

const char *gt_rt_stats_header(void) {
  pthread_once(&stats_header_once, build_stats_header);
  return stats_header;
}

/* One row: its counters and everything after them, which identifies it when files merge. */
typedef struct stat_line {
  uint64_t calls, hits;
  char *rest;
} stat_line_t;

typedef struct stat_set {
  stat_line_t *v;
  size_t n, cap;
  gt_hindex_t index; /* rows by their text after the counters: merging stays linear */
} stat_set_t;

typedef struct rest_ctx {
  const stat_set_t *s;
  const char *rest;
} rest_ctx_t;

static bool same_rest(void *ctx, size_t i) {
  const rest_ctx_t *c = ctx;
  return strcmp(c->s->v[i].rest, c->rest) == 0;
}

/* Counters saturate rather than wrap: a file another process left may hold any number. */
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Takes ownership of rest. */
static gt_status_t stat_add(stat_set_t *s, uint64_t calls, uint64_t hits, char *rest) {
  uint64_t h = gt_hindex_hash_bytes(rest, strlen(rest));
  rest_ctx_t c = {s, rest};
  long i = gt_hindex_find(&s->index, h, same_rest, &c);
  if (i >= 0) {
    s->v[i].calls = sat_add(s->v[i].calls, calls);
    s->v[i].hits = sat_add(s->v[i].hits, hits);
    free(rest);
    return GT_OK;
  }
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 32;
    stat_line_t *nv = realloc(s->v, cap * sizeof *nv);
    if (!nv) {
      free(rest);
      return gt_err_set(GT_ERR_NOMEM, "out of memory formatting the stats file");
    }
    s->v = nv;
    s->cap = cap;
  }
  if (gt_hindex_add(&s->index, h, s->n) != GT_OK) {
    free(rest);
    return GT_ERR_NOMEM;
  }
  s->v[s->n++] = (stat_line_t){calls, hits, rest};
  return GT_OK;
}

static void stat_free(stat_set_t *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i].rest);
  free(s->v);
  gt_hindex_free(&s->index);
}

static int cmp_stat(const void *pa, const void *pb) {
  const stat_line_t *a = pa, *b = pb;
  if (a->calls != b->calls) return a->calls > b->calls ? -1 : 1;
  return strcmp(a->rest, b->rest);
}

/* A name cell: "-" when empty; separators that would break the row become '_'. */
static int put_cell(char *buf, size_t cap, const char *s) {
  if (!s || !*s) s = "-";
  size_t o = 0;
  if (cap) buf[o++] = ',';
  for (; *s && o + 1 < cap; s++) buf[o++] = (*s == ',' || *s == '\n' || *s == '\r') ? '_' : *s;
  if (cap) buf[o < cap ? o : cap - 1] = '\0';
  return (int)o;
}

static char *stats_rest(const gt_rt_stats_rec_t *r) {
  size_t cap = 2048;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  size_t o = (size_t)snprintf(buf, cap, "%s", r->decision && *r->decision ? r->decision : "-");
  o += (size_t)put_cell(buf + o, cap - o, r->provider);
  o += (size_t)put_cell(buf + o, cap - o, r->instance);
  o += (size_t)put_cell(buf + o, cap - o, r->entry);
  for (int f = 0; f < GT_KEY_NFIELDS && o + 1 < cap; f++) {
    char v[64] = "-";
    if (r->keyed) gt_problem_field_str(&r->key, f, v, sizeof v);
    o += (size_t)snprintf(buf + o, cap - o, ",%s", v);
  }
  return buf;
}

/* Rows of an earlier file; anything that does not start with the exact header is ignored. */
static gt_status_t stats_take_prev(stat_set_t *set, const char *prev) {
  if (!gt_rt_stats_is_stats_text(prev)) return GT_OK;
  const char *p = strchr(prev, '\n');
  while (p && *++p) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len && p[len - 1] == '\r') len--;
    char *line = strndup(p, len);
    if (!line) return gt_err_set(GT_ERR_NOMEM, "out of memory reading the stats file");
    char *e1 = NULL, *e2 = NULL;
    unsigned long long calls = strtoull(line, &e1, 10), hits = 0;
    bool ok = e1 != line && *e1 == ',';
    if (ok) {
      hits = strtoull(e1 + 1, &e2, 10);
      ok = e2 != e1 + 1 && *e2 == ',' && e2[1];
    }
    if (ok) {
      char *rest = strdup(e2 + 1);
      free(line);
      if (!rest) return gt_err_set(GT_ERR_NOMEM, "out of memory reading the stats file");
      gt_status_t s = stat_add(set, calls, hits, rest);
      if (s != GT_OK) return s;
    } else {
      free(line); /* a torn or foreign line: its counts cannot be trusted */
    }
    p = end;
  }
  return GT_OK;
}

gt_status_t gt_rt_stats_format(const gt_rt_stats_rec_t *recs, size_t n, const char *prev,
                               char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  stat_set_t set = {0};
  gt_status_t s = stats_take_prev(&set, prev);
  for (size_t i = 0; s == GT_OK && i < n; i++) {
    char *rest = stats_rest(&recs[i]);
    s = rest ? stat_add(&set, recs[i].calls, recs[i].hits, rest)
             : gt_err_set(GT_ERR_NOMEM, "out of memory formatting the stats file");
  }
  if (s == GT_OK && set.n) qsort(set.v, set.n, sizeof *set.v, cmp_stat);
  buf_t b = {0};
  if (s == GT_OK) s = put(&b, gt_rt_stats_header());
  if (s == GT_OK) s = put(&b, "\n");
  for (size_t i = 0; s == GT_OK && i < set.n; i++) {
    char num[64];
    snprintf(num, sizeof num, "%llu,%llu,", (unsigned long long)set.v[i].calls,
             (unsigned long long)set.v[i].hits);
    s = put(&b, num);
    if (s == GT_OK) s = put(&b, set.v[i].rest);
    if (s == GT_OK) s = put(&b, "\n");
  }
  stat_free(&set);
  if (s != GT_OK) {
    free(b.p);
    return s;
  }
  *text = b.p;
  *len = b.len;
  return GT_OK;
}

gt_status_t gt_rt_stats_write(const char *path, const gt_rt_stats_rec_t *recs, size_t n) {
  /* What is at path is read only when it is a regular file of bounded size (a FIFO, a device or
   * /dev/zero named by mistake must not stall or swell the host), and replaced only when it is a
   * stats file or empty: any other file there is somebody else's. */
  char *prev = NULL;
  size_t plen = 0;
  gt_status_t s = gt_file_read(path, GT_FILE_MAX_HOST, GT_FILE_REGULAR_ONLY, &prev, &plen);
  if (s == GT_ERR_NOT_FOUND) {
    prev = NULL;
  } else if (s != GT_OK) {
    return s;
  } else if (plen && !gt_rt_stats_is_stats_text(prev)) {
    free(prev);
    return gt_err_set(GT_ERR_IO, "%s: exists and is not a stats file; not replaced", path);
  }
  char *text;
  size_t len;
  s = gt_rt_stats_format(recs, n, prev, &text, &len);
  free(prev);
  if (s != GT_OK) return s;
  s = gt_file_write_atomic(path, text, len);
  free(text);
  return s;
}

bool gt_rt_stats_is_stats_text(const char *text) {
  const char *h = gt_rt_stats_header();
  size_t hl = strlen(h);
  return text && strncmp(text, h, hl) == 0 && (text[hl] == '\n' || text[hl] == '\r');
}

static bool starts_with_line(const char *text, const char *h) {
  size_t hl = strlen(h);
  return strncmp(text, h, hl) == 0 && (text[hl] == '\n' || text[hl] == '\r');
}

bool gt_rt_capture_is_capture_text(const char *text) {
  (void)gt_rt_capture_header(); /* builds every header */
  /* The preamble capture writes before the header: "#gemmtune-capture ..." lines. */
  while (text && *text == '#') {
    text = strchr(text, '\n');
    if (text) text++;
  }
  return text && (starts_with_line(text, header) || starts_with_line(text, header_v2) ||
                  starts_with_line(text, header_v1));
}
