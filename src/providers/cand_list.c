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

/* The bit reversal of i in `bits` bits. */
static size_t bit_reverse(size_t i, int bits) {
  size_t r = 0;
  for (int b = 0; b < bits; b++) r = (r << 1) | ((i >> b) & 1);
  return r;
}

gt_status_t gt_cand_list_spread(gt_cand_list_t *l, size_t from) {
  if (from >= l->n || l->n - from < 3) return GT_OK;
  const size_t m = l->n - from;
  int bits = 0;
  while (((size_t)1 << bits) < m) bits++;
  gt_candidate_t *v = malloc(m * sizeof *v);
  if (!v) return gt_err_set(GT_ERR_NOMEM, "candidate list: no memory to reorder %zu entries", m);
  /* Van der Corput order: position k of the result is entry bitreverse(k) of the range, skipping
   * the reversed indices past its end; every prefix then samples the range evenly. */
  size_t k = 0;
  for (size_t i = 0; i < ((size_t)1 << bits) && k < m; i++) {
    const size_t j = bit_reverse(i, bits);
    if (j < m) v[k++] = l->v[from + j];
  }
  memcpy(l->v + from, v, m * sizeof *v);
  free(v);
  return GT_OK;
}
