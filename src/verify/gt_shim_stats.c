/* The shim's counters file: strict reader and merge (see gt_shim_stats.h). */
#define _GNU_SOURCE
#include "gt_shim_stats.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_csv.h"
#include "gt_trace_file.h"

#define NCOLS (6 + GT_KEY_NFIELDS)

static const char *const k_decisions[GT_SHIM__COUNT] = {"hit", "miss", "pass", "notused",
                                                         "deferred"};

const char *gt_shim_decision_name(gt_shim_decision_t d) {
  return d >= 0 && d < GT_SHIM__COUNT ? k_decisions[d] : "?";
}

static char g_header[1024];
static pthread_once_t g_header_once = PTHREAD_ONCE_INIT;

static void header_build(void) {
  size_t o = (size_t)snprintf(g_header, sizeof g_header, "%s", GT_SHIM_STATS_LEAD);
  for (int i = 0; i < GT_KEY_NFIELDS && o < sizeof g_header; i++)
    o += (size_t)snprintf(g_header + o, sizeof g_header - o, ",%s", gt_key_field_names[i]);
}

const char *gt_shim_stats_header(void) {
  pthread_once(&g_header_once, header_build);
  return g_header;
}

void gt_shim_stats_free(gt_shim_stats_t *s) {
  free(s->v);
  free(s->u);
  memset(s, 0, sizeof *s);
}

/* Counters of rows that combine saturate rather than wrap: a wrapped sum could read as fewer
 * calls than hits, or as a key that was hardly called. */
static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static gt_status_t add_unkeyed(gt_shim_stats_t *s, const char *entry, uint64_t calls) {
  for (size_t i = 0; i < s->nu; i++)
    if (strcmp(s->u[i].entry, entry) == 0) {
      s->u[i].calls = sat_add(s->u[i].calls, calls);
      return GT_OK;
    }
  if (s->nu == s->capu) {
    size_t cap = s->capu ? 2 * s->capu : 8;
    gt_shim_unkeyed_t *u = realloc(s->u, cap * sizeof *u);
    if (!u) return gt_err_set(GT_ERR_NOMEM, "out of memory");
    s->u = u;
    s->capu = cap;
  }
  snprintf(s->u[s->nu].entry, sizeof s->u[s->nu].entry, "%s", entry);
  s->u[s->nu++].calls = calls;
  return GT_OK;
}

static gt_status_t push(gt_shim_stats_t *s, const gt_shim_key_t *k) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 32;
    gt_shim_key_t *v = realloc(s->v, cap * sizeof *v);
    if (!v) return gt_err_set(GT_ERR_NOMEM, "out of memory");
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = *k;
  return GT_OK;
}

static gt_shim_key_t *find(gt_shim_stats_t *s, const gt_problem_t *k) {
  for (size_t i = 0; i < s->n; i++)
    if (gt_problem_equal(&s->v[i].key, k)) return &s->v[i];
  return NULL;
}

static void copy_name(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", strcmp(src, "-") ? src : "");
}

/* *keyed is false for a row of calls without a key (every key column "-"). */
static gt_status_t parse_row(const char *name, int ln, char *line, gt_shim_key_t *out,
                             bool *keyed) {
  char *c[NCOLS];
  int n;
  if (gt_csv_split(line, c, NULL, NCOLS, &n, 0) != GT_OK) {
    char why[256];
    snprintf(why, sizeof why, "%s", gt_err_msg());
    return gt_err_set(GT_ERR_DATA, "%s:%d: %s", name, ln, why);
  }
  if (n != NCOLS)
    return gt_err_set(GT_ERR_DATA, "%s:%d: expected %d columns, got %d", name, ln, NCOLS, n);
  memset(out, 0, sizeof *out);
  if (!gt_trace_parse_u64(c[0], &out->calls))
    return gt_err_set(GT_ERR_DATA, "%s:%d: column 'calls': not a non-negative integer: '%.30s'",
                      name, ln, c[0]);
  if (!gt_trace_parse_u64(c[1], &out->hits))
    return gt_err_set(GT_ERR_DATA, "%s:%d: column 'hits': not a non-negative integer: '%.30s'",
                      name, ln, c[1]);
  if (out->hits > out->calls)
    return gt_err_set(GT_ERR_DATA, "%s:%d: hits %" PRIu64 " exceed calls %" PRIu64, name, ln,
                      out->hits, out->calls);
  int d;
  for (d = 0; d < GT_SHIM__COUNT; d++)
    if (strcmp(c[2], k_decisions[d]) == 0) break;
  if (d == GT_SHIM__COUNT)
    return gt_err_set(GT_ERR_DATA,
                      "%s:%d: column 'decision': unknown '%.30s' (known: hit miss pass notused "
                      "deferred)",
                      name, ln, c[2]);
  out->decision = (gt_shim_decision_t)d;
  if (strlen(c[3]) >= sizeof out->provider || strlen(c[4]) >= sizeof out->instance ||
      strlen(c[5]) >= sizeof out->entry)
    return gt_err_set(GT_ERR_DATA, "%s:%d: provider, instance or entry too long", name, ln);
  copy_name(out->provider, sizeof out->provider, c[3]);
  copy_name(out->instance, sizeof out->instance, c[4]);
  snprintf(out->entry, sizeof out->entry, "%s", c[5]);
  int dashes = 0;
  for (int i = 0; i < GT_KEY_NFIELDS; i++) dashes += strcmp(c[6 + i], "-") == 0;
  *keyed = dashes == 0;
  if (dashes == GT_KEY_NFIELDS) {
    if (out->decision != GT_SHIM_PASS || out->hits)
      return gt_err_set(GT_ERR_DATA,
                        "%s:%d: a row without a key must have decision 'pass' and 0 hits", name,
                        ln);
    return GT_OK;
  }
  gt_problem_init(&out->key);
  for (int i = 0; i < GT_KEY_NFIELDS; i++) {
    if (gt_problem_set_field(&out->key, gt_key_field_names[i], c[6 + i]) != GT_OK) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", gt_err_msg());
      return gt_err_set(GT_ERR_DATA, "%s:%d: column '%s': %s", name, ln, gt_key_field_names[i],
                        msg);
    }
  }
  if (gt_problem_validate(&out->key) != GT_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    return gt_err_set(GT_ERR_DATA, "%s:%d: invalid key: %s", name, ln, msg);
  }
  return GT_OK;
}

/* Which decision explains the calls that were not served, when rows disagree. */
static int explain_rank(gt_shim_decision_t d) {
  switch (d) {
    case GT_SHIM_NOTUSED: return 4;
    case GT_SHIM_DEFERRED: return 3;
    case GT_SHIM_PASS: return 2;
    case GT_SHIM_MISS: return 1;
    default: return 0;
  }
}

/* Add a key's counters, combining them with an earlier row of the same key. */
static gt_status_t add_key(gt_shim_stats_t *s, const gt_shim_key_t *k) {
  gt_shim_key_t *d = find(s, &k->key);
  if (!d) return push(s, k);
  d->calls = sat_add(d->calls, k->calls);
  d->hits = sat_add(d->hits, k->hits);
  if (explain_rank(k->decision) > explain_rank(d->decision)) d->decision = k->decision;
  if (!d->instance[0] && k->instance[0]) {
    snprintf(d->provider, sizeof d->provider, "%s", k->provider);
    snprintf(d->instance, sizeof d->instance, "%s", k->instance);
  }
  if (k->entry[0] && !strstr(d->entry, k->entry)) {
    size_t l = strlen(d->entry);
    snprintf(d->entry + l, sizeof d->entry - l, "%s%s", l ? "+" : "", k->entry);
  }
  return GT_OK;
}

gt_status_t gt_shim_stats_parse(const char *name, const char *text, gt_shim_stats_t *out) {
  memset(out, 0, sizeof *out);
  size_t len = strlen(text);
  if (len && text[len - 1] != '\n')
    return gt_err_set(GT_ERR_DATA, "%s: truncated (the last line has no newline)", name);
  char *buf = strdup(text);
  if (!buf) return gt_err_set(GT_ERR_NOMEM, "out of memory");
  gt_status_t s = GT_OK;
  bool header = false;
  int ln = 0;
  for (char *next = buf; *next && s == GT_OK;) {
    char *line = next, *nl = strchr(line, '\n');
    *nl = '\0';
    next = nl + 1;
    ln++;
    size_t l = strlen(line);
    if (l && line[l - 1] == '\r') line[--l] = '\0';
    if (line[0] == '#') continue;
    if (!header) {
      if (strcmp(line, gt_shim_stats_header()) != 0)
        s = gt_err_set(GT_ERR_DATA, "%s:%d: expected the header '%.60s...', got '%.60s'", name,
                       ln, gt_shim_stats_header(), line);
      header = true;
      continue;
    }
    if (!*line) {
      s = gt_err_set(GT_ERR_DATA, "%s:%d: empty line", name, ln);
      break;
    }
    gt_shim_key_t k;
    bool keyed = false;
    s = parse_row(name, ln, line, &k, &keyed);
    if (s != GT_OK) break;
    s = keyed ? add_key(out, &k) : add_unkeyed(out, k.entry, k.calls);
  }
  free(buf);
  if (s == GT_OK && !header) s = gt_err_set(GT_ERR_DATA, "%s: no header line", name);
  if (s != GT_OK) {
    gt_shim_stats_free(out);
    return s;
  }
  out->files = 1;
  return GT_OK;
}

gt_status_t gt_shim_stats_read(const char *path, gt_shim_stats_t *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return gt_err_set(GT_ERR_IO, "cannot open %s: %s", path, strerror(errno));
  char *text = NULL;
  size_t cap = 0;
  ssize_t n = getdelim(&text, &cap, '\0', f);
  bool err = ferror(f);
  fclose(f);
  if (err) {
    free(text);
    return gt_err_set(GT_ERR_IO, "cannot read %s", path);
  }
  if (n < 0) { /* empty file */
    free(text);
    return gt_err_set(GT_ERR_DATA, "%s: empty file", path);
  }
  if ((size_t)n != strlen(text)) {
    free(text);
    return gt_err_set(GT_ERR_DATA, "%s: contains a NUL byte", path);
  }
  gt_status_t s = gt_shim_stats_parse(path, text, out);
  free(text);
  return s;
}

gt_status_t gt_shim_stats_merge(gt_shim_stats_t *dst, const gt_shim_stats_t *src) {
  for (size_t i = 0; i < src->n; i++) {
    gt_status_t s = add_key(dst, &src->v[i]);
    if (s != GT_OK) return s;
  }
  for (size_t i = 0; i < src->nu; i++) {
    gt_status_t s = add_unkeyed(dst, src->u[i].entry, src->u[i].calls);
    if (s != GT_OK) return s;
  }
  dst->files += src->files ? src->files : 1;
  return GT_OK;
}
