/* Writing the shapes file of a captured workload (capture_csv.h). */
#include "capture_csv.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_db.h"

static char header[512];
static pthread_once_t header_once = PTHREAD_ONCE_INIT;

/* Built from gt_key_field_names so the columns can never drift from the key. */
static void build_header(void) {
  int len = snprintf(header, sizeof header, "calls,time_us,share");
  for (int i = 0; i < GT_KEY_NFIELDS; i++)
    len += snprintf(header + len, sizeof header - (size_t)len, ",%s", gt_key_field_names[i]);
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
  return strcmp(a->key, b->key);
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
    char line[1024];
    int w = snprintf(line, sizeof line, "%llu,%.3f,%.6f", (unsigned long long)r->calls, t,
                     total > 0 ? t / total : 0.0);
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
