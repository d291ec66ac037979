/* The growable candidate list every provider's enumerate() appends to (see gt_provider.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_provider.h"

gt_status_t gt_cand_list_push(gt_cand_list_t *l, const gt_candidate_t *c) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    gt_candidate_t *v = realloc(l->v, cap * sizeof *v);
    if (!v) return gt_err_set(GT_ERR_NOMEM, "candidate list: cannot grow to %zu entries", cap);
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = *c;
  return GT_OK;
}

gt_status_t gt_cand_list_exclude(gt_cand_list_t *l, const struct gt_provider *prov,
                                 const char *name, const char *fmt, ...) {
  gt_candidate_t c;
  /* Zeroed so the blob of an excluded candidate compares equal across enumerations. */
  memset(&c, 0, sizeof c);
  c.provider = prov;
  snprintf(c.name, sizeof c.name, "%s", name);
  c.excluded = true;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c.reason, sizeof c.reason, fmt, ap);
  va_end(ap);
  return gt_cand_list_push(l, &c);
}

void gt_cand_list_free(gt_cand_list_t *l) {
  free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

size_t gt_cand_list_count_active(const gt_cand_list_t *l) {
  size_t k = 0;
  for (size_t i = 0; i < l->n; i++) k += !l->v[i].excluded;
  return k;
}
