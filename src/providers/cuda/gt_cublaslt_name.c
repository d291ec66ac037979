/* cuBLASLt configuration <-> instance name (see gt_cublaslt_name.h). Pure C, no CUDA. */
#include "gt_cublaslt_name.h"

#include <stdio.h>
#include <string.h>

#include "core/gt_name.h"

/* ---- tables ------------------------------------------------------------------------------- */

typedef struct dims {
  uint16_t a, b, c; /* rows x cols / k x count (0 = AUTO) / x x y x z */
  bool known;
} dims_t;

#define TILE_ROW(id, r, c) [id] = {r, c, 0, true},
static const dims_t k_tiles[] = {[0] = {0, 0, 0, false}, GT_CUBLASLT_TILES(TILE_ROW)};
#define STAGES_ROW(id, k, n) [id] = {k, n, 0, true},
#define STAGES_AUTO_ROW(id, k) [id] = {k, 0, 0, true},
static const dims_t k_stages[] = {[0] = {0, 0, 0, false}, GT_CUBLASLT_STAGES(STAGES_ROW)
                                      GT_CUBLASLT_STAGES_AUTO(STAGES_AUTO_ROW)};
#define CLUSTER_ROW(id, x, y, z) [id] = {x, y, z, true},
static const dims_t k_clusters[] = {[0] = {0, 0, 0, false}, GT_CUBLASLT_CLUSTERS(CLUSTER_ROW)};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const dims_t *lookup(const dims_t *t, size_t n, uint32_t id) {
  return id < n && t[id].known ? &t[id] : NULL;
}

bool gt_cublaslt_tile_dims(uint32_t id, int *rows, int *cols) {
  const dims_t *d = lookup(k_tiles, NELEM(k_tiles), id);
  if (!d) return false;
  *rows = d->a, *cols = d->b;
  return true;
}

bool gt_cublaslt_stages_dims(uint32_t id, int *k, int *count) {
  const dims_t *d = lookup(k_stages, NELEM(k_stages), id);
  if (!d) return false;
  *k = d->a, *count = d->b;
  return true;
}

bool gt_cublaslt_cluster_dims(uint32_t id, int *x, int *y, int *z) {
  const dims_t *d = lookup(k_clusters, NELEM(k_clusters), id);
  if (!d) return false;
  *x = d->a, *y = d->b, *z = d->c;
  return true;
}

static uint32_t find(const dims_t *t, size_t n, int a, int b, int c) {
  for (size_t i = 1; i < n; i++)
    if (t[i].known && t[i].a == a && t[i].b == b && t[i].c == c) return (uint32_t)i;
  return 0;
}

uint32_t gt_cublaslt_tile_id(int rows, int cols) {
  return find(k_tiles, NELEM(k_tiles), rows, cols, 0);
}
uint32_t gt_cublaslt_stages_id(int k, int count) {
  return find(k_stages, NELEM(k_stages), k, count, 0);
}
uint32_t gt_cublaslt_cluster_id(int x, int y, int z) {
  return find(k_clusters, NELEM(k_clusters), x, y, z);
}

/* ---- format ------------------------------------------------------------------------------- */

gt_status_t gt_cublaslt_name_format(const gt_cublaslt_config_t *c, char *buf, size_t cap) {
  if (c->algo_id < 0) return gt_err_set(GT_ERR_USAGE, "cuBLASLt algo id %d < 0", (int)c->algo_id);
  if (c->splitk < 1) return gt_err_set(GT_ERR_USAGE, "cuBLASLt split-K %d < 1", (int)c->splitk);
  if (c->reduction != 0 && c->reduction != 1 && c->reduction != 2 && c->reduction != 4)
    return gt_err_set(GT_ERR_USAGE, "cuBLASLt reduction scheme %u is not a single scheme",
                      (unsigned)c->reduction);
  if (c->swizzle > 1)
    return gt_err_set(GT_ERR_USAGE, "cuBLASLt CTA swizzling %u > 1", (unsigned)c->swizzle);
  if (cap == 0 || cap > 1u << 20) return gt_err_set(GT_ERR_USAGE, "name buffer size %zu", cap);

  char tile[24], stages[24], cluster[32];
  int a, b, z;
  if (c->tile_id == 0)
    snprintf(tile, sizeof tile, "tnone");
  else if (gt_cublaslt_tile_dims(c->tile_id, &a, &b))
    snprintf(tile, sizeof tile, "t%dx%d", a, b);
  else
    snprintf(tile, sizeof tile, "tid%u", (unsigned)c->tile_id);

  if (c->stages_id == 0)
    snprintf(stages, sizeof stages, "snone");
  else if (gt_cublaslt_stages_dims(c->stages_id, &a, &b))
    b ? snprintf(stages, sizeof stages, "s%dx%d", a, b)
      : snprintf(stages, sizeof stages, "s%dxauto", a);
  else
    snprintf(stages, sizeof stages, "sid%u", (unsigned)c->stages_id);

  int x, y;
  if (c->cluster_id == 0)
    snprintf(cluster, sizeof cluster, "clauto");
  else if (gt_cublaslt_cluster_dims(c->cluster_id, &x, &y, &z))
    z == 1 ? snprintf(cluster, sizeof cluster, "cl%dx%d", x, y)
           : snprintf(cluster, sizeof cluster, "cl%dx%dx%d", x, y, z);
  else
    snprintf(cluster, sizeof cluster, "clid%u", (unsigned)c->cluster_id);

  buf[0] = '\0';
  bool ok = gt_name_append(buf, (int)cap, GT_CUBLASLT_NAME_PREFIX) &&
            gt_name_append(buf, (int)cap, "a%d", (int)c->algo_id) &&
            gt_name_append(buf, (int)cap, "%s", tile) &&
            gt_name_append(buf, (int)cap, "%s", stages) &&
            gt_name_append(buf, (int)cap, "sk%d", (int)c->splitk) &&
            gt_name_append(buf, (int)cap, "r%u", (unsigned)c->reduction) &&
            gt_name_append(buf, (int)cap, "sw%u", (unsigned)c->swizzle) &&
            gt_name_append(buf, (int)cap, "co%u", (unsigned)c->custom) &&
            gt_name_append(buf, (int)cap, "%s", cluster);
  if (ok && c->inner_shape) ok = gt_name_append(buf, (int)cap, "is%u", (unsigned)c->inner_shape);
  if (!ok) return gt_err_set(GT_ERR_USAGE, "cuBLASLt name does not fit in %zu bytes", cap);
  return GT_OK;
}

/* ---- parse -------------------------------------------------------------------------------- */

/* A decimal number without sign or leading zeros, <= max. Advances *s past it. Names are keys in
 * a DB, so only the one spelling format produces is accepted. */
static bool parse_num(const char **s, uint64_t max, uint64_t *out) {
  const char *p = *s;
  if (*p < '0' || *p > '9') return false;
  if (*p == '0' && p[1] >= '0' && p[1] <= '9') return false;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (uint64_t)(*p - '0');
    if (v > max) return false;
    p++;
  }
  *s = p;
  *out = v;
  return true;
}

/* tok == tag + number (exactly). */
static bool parse_tagged(const char *tok, const char *tag, uint64_t max, uint64_t *out) {
  size_t tl = strlen(tag);
  if (strncmp(tok, tag, tl) != 0) return false;
  const char *p = tok + tl;
  return parse_num(&p, max, out) && *p == '\0';
}

/* "<n>x<n>[x<n>]" after a tag, with the count of numbers required in [minn, maxn]. A number
 * slot may be the word "auto" when allow_auto (returned as 0). */
static int parse_dims(const char *p, int maxn, bool allow_auto, uint64_t v[3]) {
  int n = 0;
  for (;;) {
    if (n == maxn) return -1;
    if (allow_auto && n > 0 && strncmp(p, "auto", 4) == 0) {
      v[n++] = 0;
      p += 4;
    } else {
      if (!parse_num(&p, 4096, &v[n])) return -1;
      if (v[n] == 0) return -1;
      n++;
    }
    if (*p == '\0') return n;
    if (*p != 'x') return -1;
    p++;
  }
}

static gt_status_t bad(const char *name, const char *tok, const char *what) {
  return gt_err_set(GT_ERR_DATA, "cuBLASLt name '%s': token '%s': %s", name, tok, what);
}

gt_status_t gt_cublaslt_name_parse(const char *name, gt_cublaslt_config_t *out) {
  static const char prefix[] = GT_CUBLASLT_NAME_PREFIX "_a";
  if (!name || strncmp(name, prefix, sizeof prefix - 1) != 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a cuBLASLt candidate name",
                      name ? name : "(null)");
  gt_name_tokens_t t;
  gt_status_t st = gt_name_split(name, &t);
  if (st != GT_OK) return st;
  if (t.n < 9 || t.n > 10)
    return gt_err_set(GT_ERR_DATA, "cuBLASLt name '%s': %d tokens, expected 9 or 10", name, t.n);

  gt_cublaslt_config_t c;
  memset(&c, 0, sizeof c);
  uint64_t v, d[3];
  const char *tok;

  tok = t.tok[1];
  if (!parse_tagged(tok, "a", INT32_MAX, &v)) return bad(name, tok, "expected a<algo id>");
  c.algo_id = (int32_t)v;

  tok = t.tok[2];
  if (strcmp(tok, "tnone") == 0) {
    c.tile_id = 0;
  } else if (strncmp(tok, "tid", 3) == 0) {
    if (!parse_tagged(tok, "tid", UINT32_MAX, &v) || v == 0) return bad(name, tok, "bad tile id");
    c.tile_id = (uint32_t)v;
  } else {
    if (tok[0] != 't' || parse_dims(tok + 1, 2, false, d) != 2)
      return bad(name, tok, "expected t<rows>x<cols>, tnone or tid<N>");
    c.tile_id = gt_cublaslt_tile_id((int)d[0], (int)d[1]);
    if (!c.tile_id) return bad(name, tok, "no cuBLASLt tile has these dimensions");
  }

  tok = t.tok[3];
  if (strcmp(tok, "snone") == 0) {
    c.stages_id = 0;
  } else if (strncmp(tok, "sid", 3) == 0) {
    if (!parse_tagged(tok, "sid", UINT32_MAX, &v) || v == 0)
      return bad(name, tok, "bad stages id");
    c.stages_id = (uint32_t)v;
  } else {
    if (tok[0] != 's' || parse_dims(tok + 1, 2, true, d) != 2)
      return bad(name, tok, "expected s<k>x<count>, s<k>xauto, snone or sid<N>");
    c.stages_id = gt_cublaslt_stages_id((int)d[0], (int)d[1]);
    if (!c.stages_id) return bad(name, tok, "no cuBLASLt stages value has these dimensions");
  }

  tok = t.tok[4];
  if (!parse_tagged(tok, "sk", INT32_MAX, &v) || v < 1) return bad(name, tok, "expected sk<N>, N >= 1");
  c.splitk = (int32_t)v;

  tok = t.tok[5];
  if (!parse_tagged(tok, "r", 4, &v) || v == 3) return bad(name, tok, "expected r0, r1, r2 or r4");
  c.reduction = (uint32_t)v;

  tok = t.tok[6];
  if (!parse_tagged(tok, "sw", 1, &v)) return bad(name, tok, "expected sw0 or sw1");
  c.swizzle = (uint32_t)v;

  tok = t.tok[7];
  if (!parse_tagged(tok, "co", UINT32_MAX, &v)) return bad(name, tok, "expected co<N>");
  c.custom = (uint32_t)v;

  tok = t.tok[8];
  if (strcmp(tok, "clauto") == 0) {
    c.cluster_id = 0;
  } else if (strncmp(tok, "clid", 4) == 0) {
    if (!parse_tagged(tok, "clid", UINT32_MAX, &v) || v == 0)
      return bad(name, tok, "bad cluster id");
    c.cluster_id = (uint32_t)v;
  } else {
    int n = strncmp(tok, "cl", 2) == 0 ? parse_dims(tok + 2, 3, false, d) : -1;
    if (n < 2) return bad(name, tok, "expected cl<x>x<y>[x<z>], clauto or clid<N>");
    if (n == 3 && d[2] == 1) return bad(name, tok, "z of 1 is written as cl<x>x<y>");
    c.cluster_id = gt_cublaslt_cluster_id((int)d[0], (int)d[1], n == 3 ? (int)d[2] : 1);
    if (!c.cluster_id) return bad(name, tok, "no cuBLASLt cluster shape has these dimensions");
  }

  if (t.n == 10) {
    tok = t.tok[9];
    if (!parse_tagged(tok, "is", UINT32_MAX, &v) || v == 0)
      return bad(name, tok, "expected is<N>, N >= 1 (or nothing for inner shape 0)");
    c.inner_shape = (uint32_t)v;
  }
  /* One config, one name: an id the tables know is spelled by its dimensions (clid2 is cl1x1),
   * and whatever else parses must be exactly what format writes back, or two DB rows could name
   * one config differently and a lookup by name would miss. */
  char canon[256];
  if (gt_cublaslt_name_format(&c, canon, sizeof canon) != GT_OK)
    return gt_err_set(GT_ERR_DATA, "cuBLASLt name '%s': not a valid configuration", name);
  if (strcmp(canon, name) != 0)
    return gt_err_set(GT_ERR_DATA, "cuBLASLt name '%s' is not the canonical spelling '%s'", name,
                      canon);
  *out = c;
  return GT_OK;
}
