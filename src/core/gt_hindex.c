/* The hash index (gt_hindex.h): linear probing over a power-of-two table. */
#include "gt_hindex.h"

#include <stdlib.h>

long gt_hindex_find(const gt_hindex_t *x, uint64_t h, bool (*same)(void *ctx, size_t i),
                    void *ctx) {
  if (!x->nslots) return -1;
  size_t mask = x->nslots - 1;
  for (size_t s = (size_t)h & mask;; s = (s + 1) & mask) {
    if (!x->slot[s]) return -1;
    if (x->hash[s] == h && same(ctx, x->slot[s] - 1)) return (long)(x->slot[s] - 1);
  }
}

static void place(size_t *slot, uint64_t *hash, size_t nslots, uint64_t h, size_t v) {
  size_t mask = nslots - 1, s = (size_t)h & mask;
  while (slot[s]) s = (s + 1) & mask;
  slot[s] = v;
  hash[s] = h;
}

gt_status_t gt_hindex_add(gt_hindex_t *x, uint64_t h, size_t i) {
  if (2 * (x->n + 1) > x->nslots) {
    size_t ns = x->nslots ? 2 * x->nslots : 64;
    size_t *slot = calloc(ns, sizeof *slot);
    uint64_t *hash = calloc(ns, sizeof *hash);
    if (!slot || !hash) {
      free(slot);
      free(hash);
      return gt_err_set(GT_ERR_NOMEM, "out of memory growing a hash index");
    }
    for (size_t s = 0; s < x->nslots; s++)
      if (x->slot[s]) place(slot, hash, ns, x->hash[s], x->slot[s]);
    free(x->slot);
    free(x->hash);
    x->slot = slot;
    x->hash = hash;
    x->nslots = ns;
  }
  place(x->slot, x->hash, x->nslots, h, i + 1);
  x->n++;
  return GT_OK;
}

void gt_hindex_free(gt_hindex_t *x) {
  free(x->slot);
  free(x->hash);
  x->slot = NULL;
  x->hash = NULL;
  x->nslots = x->n = 0;
}

uint64_t gt_hindex_hash_bytes(const void *p, size_t len) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
