/* A hash index over an array the caller owns: open addressing from 64-bit hashes to element
 * indices, so "is this key already in the list?" costs O(1) instead of a scan of the list. The
 * readers that fold duplicate rows (shapes files, the shim's capture and stats merges, which run
 * in a host process's exit path) use it; the caller supplies the hash and the equality test.
 * `gt_hindex_t x = {0};` is an empty index. Pure C. */
#ifndef GT_HINDEX_H
#define GT_HINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_hindex {
  size_t *slot;   /* element index + 1, 0 = empty */
  uint64_t *hash; /* hash of the element in each slot */
  size_t nslots;  /* a power of two, or 0 before the first add */
  size_t n;       /* elements indexed */
} gt_hindex_t;

/* The index of an element with hash h for which same(ctx, index) is true, or -1. Only elements
 * whose hash equals h are passed to same. */
long gt_hindex_find(const gt_hindex_t *x, uint64_t h, bool (*same)(void *ctx, size_t i),
                    void *ctx);
/* Index element i under hash h (the table grows as needed; it stays at most half full).
 * GT_ERR_NOMEM, with the index unchanged, when it cannot grow. */
gt_status_t gt_hindex_add(gt_hindex_t *x, uint64_t h, size_t i);
/* Release the table and leave x empty. */
void gt_hindex_free(gt_hindex_t *x);

/* 64-bit FNV-1a of len bytes, for callers hashing text. */
uint64_t gt_hindex_hash_bytes(const void *p, size_t len);

#ifdef __cplusplus
}
#endif
#endif
