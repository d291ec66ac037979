/* Own-kernel instance names: format from parameters, parse back (see gt_kernel_name.h). The token
 * order per family is fixed and the parser accepts only the canonical spelling, so a name and
 * its parameters are one-to-one; gen_instances.py writes names the same way and
 * tests/test_kernel_names.c holds the two to each other. */
#include "gt_kernel_name.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/gt_name.h"
#include "kernels/gt_kernel_arch.h"

static const char *const k_family[GT_KFAM__COUNT] = {
    [GT_KFAM_DECODE] = "decode",
    [GT_KFAM_DECODETC] = "decodetc",
    [GT_KFAM_TC] = "tc",
    [GT_KFAM_WG] = "wg",
    [GT_KFAM_WGF8] = "wgf8",
    [GT_KFAM_DTF8] = "dtf8",
};

/* Every own-kernel symbol starts "gt_<arch token>_"; the tokens are the architecture table's. */
#define K_PREFIX "gt"
/* The last token of an epilogue twin's name (gen_instances.py's EPI_TOKEN). */
#define K_EPI_TOKEN "e"

const char *gt_kfamily_name(gt_kfamily_t f) {
  return (int)f >= 0 && f < GT_KFAM__COUNT ? k_family[f] : "?";
}

bool gt_kfamily_is_fp8(gt_kfamily_t f) { return f == GT_KFAM_WGF8 || f == GT_KFAM_DTF8; }

bool gt_kparams_f8_promotes(const gt_kparams_t *p) {
  if (p->family == GT_KFAM_DTF8) return true;
  if (p->family != GT_KFAM_WGF8) return false;
  /* gt_wg.cuh's wg_shape: swapped tiles (gen_instances.py's wg_swapped) hold BM / CW weight
   * rows as wgmma's N, R = that / 2 fp32 registers; the others BM / 64 / CW m64 blocks of
   * BN / 2 each. gt_f8_promo.cuh's f8_promo: NP = 2 partials up to 32 of them, else 1, and
   * acc + partials within 128. */
  const int bm = p->tile_m, bn = p->tile_n, cw = p->consumers > 0 ? p->consumers : 1;
  const bool sw = bn == 64 || ((bn == 8 || bn == 16 || bn == 32) && bm % 64 != 0);
  const int acc = sw ? bm / cw / 2 : bm / 64 / cw * (bn / 2);
  const int np = acc <= 32 ? 2 : 1;
  return acc * (1 + np) <= 128;
}

/* Only the two types the mma.sync/bf16x2 paths take; any other type has no own instance. */
static bool dtype_ok(gt_dtype_t t) { return t == GT_DT_BF16 || t == GT_DT_F16; }

static bool trans_ok(gt_trans_t t) { return t == GT_TRANS_N || t == GT_TRANS_T; }

/* wgf8's element types and their name tokens (CUTLASS's short fp8 spellings: a kernel name in
 * a trace stays readable; gt_dtype_name's are f8e4m3fn and f8e5m2). */
static const struct {
  gt_dtype_t t;
  const char *tok;
} k_f8_types[] = {{GT_DT_F8E4M3FN, "e4m3"}, {GT_DT_F8E5M2, "e5m2"}};
static const gt_dtype_t k_f8_out[] = {GT_DT_BF16, GT_DT_F16, GT_DT_F32};

static const char *f8_tok(gt_dtype_t t) {
  for (size_t i = 0; i < sizeof k_f8_types / sizeof k_f8_types[0]; i++)
    if (k_f8_types[i].t == t) return k_f8_types[i].tok;
  return NULL;
}
static bool f8_out_ok(gt_dtype_t t) {
  for (size_t i = 0; i < sizeof k_f8_out / sizeof k_f8_out[0]; i++)
    if (k_f8_out[i] == t) return true;
  return false;
}

/* The element-type tokens of p's family: one (dtype), or the fp8 families' three (A, B, D). */
static bool format_types(const gt_kparams_t *p, char *buf, int cap) {
  if (!gt_kfamily_is_fp8(p->family))
    return dtype_ok(p->dtype) && p->b_dtype == 0 && p->d_dtype == 0 &&
           gt_name_append(buf, cap, "%s", gt_dtype_name(p->dtype));
  const char *a = f8_tok(p->dtype), *b = f8_tok(p->b_dtype);
  return a && b && f8_out_ok(p->d_dtype) && gt_name_append(buf, cap, "%s", a) &&
         gt_name_append(buf, cap, "%s", b) &&
         gt_name_append(buf, cap, "%s", gt_dtype_name(p->d_dtype));
}

/* The name without the epilogue twin's token. */
static bool format_plain(const gt_kparams_t *p, char *buf, int cap) {
  if (cap <= 0) return false;
  buf[0] = '\0';
  if ((int)p->family < 0 || p->family >= GT_KFAM__COUNT || !trans_ok(p->transa) ||
      !trans_ok(p->transb))
    return false;
  const char lay[3] = {p->transa == GT_TRANS_T ? 't' : 'n', p->transb == GT_TRANS_T ? 't' : 'n',
                       '\0'};
  const bool wgl = p->family == GT_KFAM_WG || p->family == GT_KFAM_WGF8; /* wg's grammar */
  const bool dtc = p->family == GT_KFAM_DECODETC || p->family == GT_KFAM_DTF8; /* decodetc's */
  if (!wgl && !dtc && p->family != GT_KFAM_DECODE && p->prefetch != 0)
    return false; /* no token carries it */
  if (!wgl && (p->cluster_m != 0 || p->consumers != 0 || p->cluster_n != 0)) return false;
  if (p->persistent != 0 &&
      (!wgl || p->persistent != 1 || p->splitk != 1 || p->cluster_m != 1 || p->cluster_n != 0))
    return false; /* g1 is wg's and wgf8's, without a split or multicast */
  /* A cluster is at most 8 CTAs (portable): token multicast x split (wg) or x weight multicast. */
  if (p->cluster_m > 1 && (p->cluster_m * p->splitk > 8 ||
                           (p->cluster_n > 1 && p->cluster_m * p->cluster_n > 8)))
    return false;
  /* Weight multicast (x2, x4): no split, K-major weights. */
  if (p->cluster_n != 0 &&
      ((p->cluster_n != 2 && p->cluster_n != 4) || p->splitk != 1 || p->transa != GT_TRANS_T ||
       p->tile_m % p->cluster_n || (p->tile_m / p->cluster_n) % 8))
    return false;
  const gt_karch_t *arch = gt_kparams_arch(p);
  if (!arch) return false;
  bool ok = gt_name_append(buf, cap, "%s", K_PREFIX) &&
            gt_name_append(buf, cap, "%s", arch->token) &&
            gt_name_append(buf, cap, "%s", k_family[p->family]) && format_types(p, buf, cap) &&
            gt_name_append(buf, cap, "%s", lay);
  if (!ok) return false;
  switch (p->family) {
  case GT_KFAM_DECODE:
    if (p->tile_n < 1 || p->tile_m < 1 || p->warps_k < 1 || p->unroll < 1 || p->splitk < 1 ||
        p->vec < 1)
      return false;
    /* prefetch: 1 the body's pre-wait prefetch (no token), 0 none (p0, 16-byte loads only:
     * narrower ones never prefetch, so their p0 would name the same kernel twice). */
    if (p->prefetch != 1 && (p->prefetch != 0 || p->vec != 8)) return false;
    return gt_name_append(buf, cap, "n%d", p->tile_n) && gt_name_append(buf, cap, "r%d", p->tile_m) &&
           gt_name_append(buf, cap, "w%d", p->warps_k) && gt_name_append(buf, cap, "u%d", p->unroll) &&
           gt_name_append(buf, cap, "ks%d", p->splitk) && gt_name_append(buf, cap, "v%d", p->vec) &&
           (p->prefetch == 1 || gt_name_append(buf, cap, "p0"));
  case GT_KFAM_DTF8:
    /* TN, 16 one-byte elements per load, no split across CTAs; otherwise decodetc's tokens. */
    if (p->transa != GT_TRANS_T || p->transb != GT_TRANS_N || p->vec != 16 || p->splitk != 1)
      return false;
    /* fall through */
  case GT_KFAM_DECODETC:
    if (p->tile_n < 1 || p->tile_m < 1 || p->warps_m < 1 || p->warps_k < 1 || p->unroll < 1 ||
        p->stages < 1 || p->splitk < 1 || p->vec < 1 || p->prefetch < 0)
      return false;
    /* The pre-wait prefetch token is written only when there is one (p0 has no spelling). */
    return gt_name_append(buf, cap, "n%d", p->tile_n) && gt_name_append(buf, cap, "m%d", p->tile_m) &&
           gt_name_append(buf, cap, "w%dx%d", p->warps_m, p->warps_k) &&
           gt_name_append(buf, cap, "u%d", p->unroll) && gt_name_append(buf, cap, "s%d", p->stages) &&
           gt_name_append(buf, cap, "ks%d", p->splitk) && gt_name_append(buf, cap, "v%d", p->vec) &&
           (p->prefetch == 0 || gt_name_append(buf, cap, "p%d", p->prefetch));
  case GT_KFAM_TC:
    if (p->tile_m < 1 || p->tile_n < 1 || p->tile_k < 1 || p->warps_m < 1 || p->warps_n < 1 ||
        p->stages < 1 || p->splitk < 1 || p->vec < 1)
      return false;
    return gt_name_append(buf, cap, "t%dx%dx%d", p->tile_m, p->tile_n, p->tile_k) &&
           gt_name_append(buf, cap, "w%dx%d", p->warps_m, p->warps_n) &&
           gt_name_append(buf, cap, "s%d", p->stages) && gt_name_append(buf, cap, "ks%d", p->splitk) &&
           gt_name_append(buf, cap, "a%d", p->vec);
  case GT_KFAM_WG:
    /* The element width is implied: TMA strides are 16-byte multiples. */
    if (p->tile_m < 1 || p->tile_n < 1 || p->tile_k < 1 || p->stages < 1 || p->splitk < 1 ||
        p->prefetch < 1 || p->vec != 8 || p->cluster_m < 1 || p->consumers < 1 ||
        p->tile_n % (8 * p->cluster_m))
      return false;
    /* The optional tokens are written only when not at their default (c1, w1 and g0 have no
     * spelling). */
    return gt_name_append(buf, cap, "t%dx%dx%d", p->tile_m, p->tile_n, p->tile_k) &&
           gt_name_append(buf, cap, "s%d", p->stages) && gt_name_append(buf, cap, "ks%d", p->splitk) &&
           gt_name_append(buf, cap, "p%d", p->prefetch) &&
           (p->cluster_m == 1 || gt_name_append(buf, cap, "c%d", p->cluster_m)) &&
           (p->cluster_n == 0 || gt_name_append(buf, cap, "x%d", p->cluster_n)) &&
           (p->consumers == 1 || gt_name_append(buf, cap, "w%d", p->consumers)) &&
           (p->persistent == 0 || gt_name_append(buf, cap, "g%d", p->persistent));
  case GT_KFAM_WGF8:
    /* TN only (fp8 wgmma reads K-major operands), 1-byte elements in 16-byte TMA strides; token
     * multicast (c) without a split. */
    if (p->transa != GT_TRANS_T || p->transb != GT_TRANS_N || p->tile_m < 1 || p->tile_n < 1 ||
        p->tile_k < 1 || p->stages < 1 || p->splitk < 1 || p->prefetch < 1 || p->vec != 16 ||
        p->cluster_m < 1 || p->consumers < 1 || (p->cluster_m > 1 && p->splitk != 1) ||
        p->tile_n % (8 * p->cluster_m))
      return false;
    return gt_name_append(buf, cap, "t%dx%dx%d", p->tile_m, p->tile_n, p->tile_k) &&
           gt_name_append(buf, cap, "s%d", p->stages) && gt_name_append(buf, cap, "ks%d", p->splitk) &&
           gt_name_append(buf, cap, "p%d", p->prefetch) &&
           (p->cluster_m == 1 || gt_name_append(buf, cap, "c%d", p->cluster_m)) &&
           (p->cluster_n == 0 || gt_name_append(buf, cap, "x%d", p->cluster_n)) &&
           (p->consumers == 1 || gt_name_append(buf, cap, "w%d", p->consumers)) &&
           (p->persistent == 0 || gt_name_append(buf, cap, "g%d", p->persistent));
  default:
    return false;
  }
}

bool gt_kernel_name_format(const gt_kparams_t *p, char *buf, int cap) {
  return format_plain(p, buf, cap) &&
         (!p->epilogue || gt_name_append(buf, cap, "%s", K_EPI_TOKEN));
}

/* Parse token `tok` as `tag` + exactly `want` integers of lo..65536 joined by 'x' (lo 0 only for
 * a token that spells a parameter's "none": decode's p0). */
static gt_status_t want_param_from(const char *name, const char *tok, const char *tag, int want,
                                   int lo, int *out) {
  int64_t v[4];
  int got = gt_name_param(tok, tag, v, 4);
  if (got != want)
    return gt_err_set(GT_ERR_DATA, "instance '%s': token '%s' is not '%s' with %d value%s", name,
                      tok, tag, want, want == 1 ? "" : "s ('x'-joined)");
  for (int i = 0; i < want; i++) {
    if (v[i] < lo || v[i] > 65536)
      return gt_err_set(GT_ERR_DATA, "instance '%s': token '%s': value out of range", name, tok);
    out[i] = (int)v[i];
  }
  return GT_OK;
}

/* The same with positive integers. */
static gt_status_t want_param(const char *name, const char *tok, const char *tag, int want,
                              int *out) {
  return want_param_from(name, tok, tag, want, 1, out);
}

/* The t<BM>x<BN>x<BK> tile token of the tc and wg families. */
static gt_status_t want_tile(const char *name, const char *tok, gt_kparams_t *out) {
  int w[3];
  gt_status_t s = want_param(name, tok, "t", 3, w);
  if (s != GT_OK) return s;
  out->tile_m = w[0];
  out->tile_n = w[1];
  out->tile_k = w[2];
  return GT_OK;
}

/* The architecture tokens of the table, comma-separated, for messages. */
static const char *arch_tokens(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < gt_karch_count && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", gt_karchs[i].token);
  return buf;
}

/* Whether name starts "gt_<token>_" for an architecture of the table; *arch receives its row. */
static bool own_prefix(const char *name, int *arch) {
  const size_t np = strlen(K_PREFIX "_");
  if (!name || strncmp(name, K_PREFIX "_", np) != 0) return false;
  for (size_t i = 0; i < gt_karch_count; i++) {
    const size_t nt = strlen(gt_karchs[i].token);
    if (strncmp(name + np, gt_karchs[i].token, nt) == 0 && name[np + nt] == '_') {
      *arch = (int)i;
      return true;
    }
  }
  return false;
}

/* The element types of a name whose family is already in out: one token (all four operands),
 * or an fp8 family's three (A, B, D). The family's own tokens follow the layout, so for those the
 * two extra type tokens are dropped from t and the rest read at the same positions as wg's
 * (wgf8) or decodetc's (dtf8). */
static gt_status_t parse_types(const char *name, gt_name_tokens_t *t, gt_kparams_t *out) {
  if (gt_kfamily_is_fp8(out->family)) {
    int found = 0;
    for (size_t i = 0; i < sizeof k_f8_types / sizeof k_f8_types[0]; i++) {
      if (strcmp(t->tok[3], k_f8_types[i].tok) == 0) out->dtype = k_f8_types[i].t, found |= 1;
      if (strcmp(t->tok[4], k_f8_types[i].tok) == 0) out->b_dtype = k_f8_types[i].t, found |= 2;
    }
    for (size_t i = 0; i < sizeof k_f8_out / sizeof k_f8_out[0]; i++)
      if (strcmp(t->tok[5], gt_dtype_name(k_f8_out[i])) == 0) out->d_dtype = k_f8_out[i], found |= 4;
    if (found != 7)
      return gt_err_set(GT_ERR_DATA,
                        "instance '%s': element types '%s_%s_%s' (%s takes A and B e4m3 or "
                        "e5m2, D bf16, f16 or f32)",
                        name, t->tok[3], t->tok[4], t->tok[5], k_family[out->family]);
    for (int i = 3; i + 2 < t->n; i++) memcpy(t->tok[i], t->tok[i + 2], sizeof t->tok[i]);
    t->n -= 2;
  } else {
    int dt = -1;
    for (int i = 0; i < GT_DT__COUNT; i++)
      if (dtype_ok((gt_dtype_t)i) && strcmp(t->tok[3], gt_dtype_name((gt_dtype_t)i)) == 0) dt = i;
    if (dt < 0)
      return gt_err_set(GT_ERR_DATA,
                        "instance '%s': element type '%s' (own kernels take bf16, f16)", name,
                        t->tok[3]);
    out->dtype = (gt_dtype_t)dt;
  }

  return GT_OK;
}

gt_status_t gt_kernel_name_parse(const char *name, gt_kparams_t *out) {
  gt_name_tokens_t t;
  memset(out, 0, sizeof *out);
  int arch = -1;
  if (!own_prefix(name, &arch)) {
    char toks[128];
    return gt_err_set(GT_ERR_NOT_FOUND,
                      "'%s' is not an own-kernel instance name (gt_<arch>_..., arch one of %s)",
                      name ? name : "(null)", arch_tokens(toks, sizeof toks));
  }
  out->arch = arch;
  gt_status_t s = gt_name_split(name, &t);
  if (s != GT_OK) return s;
  /* An epilogue twin: the plain name and one last token, exactly "e" (any other spelling, a
   * repeat or another position fails below as a token of the family's grammar or as not
   * canonical). */
  if (t.n > 5 && strcmp(t.tok[t.n - 1], K_EPI_TOKEN) == 0) {
    out->epilogue = true;
    t.n--;
  }
  int fam = -1;
  for (int f = 0; f < GT_KFAM__COUNT; f++)
    if (t.n > 2 && strcmp(t.tok[2], k_family[f]) == 0) fam = f;
  if (fam < 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "instance '%s': unknown kernel family '%s'", name,
                      t.n > 2 ? t.tok[2] : "");
  out->family = (gt_kfamily_t)fam;

  static const int k_ntok[GT_KFAM__COUNT] = {[GT_KFAM_DECODE] = 11, [GT_KFAM_DECODETC] = 12,
                                             [GT_KFAM_TC] = 10, [GT_KFAM_WG] = 9,
                                             [GT_KFAM_WGF8] = 11, [GT_KFAM_DTF8] = 14};
  /* Optional trailing tokens, each left out of a name when at its default (set in the switch
   * below): decode p0 (no pre-wait prefetch); decodetc p<KB> (pre-wait prefetch); wg c<CM>
   * (token multicast), then x<CN> (weight multicast), then w<CW> (consumer warpgroups), then
   * g1 (persistent CTAs); wgf8 the same.
   * They are matched by tag; the canonical-form check at the end rejects any other order, a
   * repeat or a spelled default. */
  static const struct {
    int n;
    struct {
      const char *tag;
      size_t off;
      int zero_ok; /* 1: the token spells 0 too (decode's p0: no prefetch); else 1 and up */
    } tok[4];
  } k_opt[GT_KFAM__COUNT] = {
      [GT_KFAM_DECODE] = {1, {{"p", offsetof(gt_kparams_t, prefetch), 1}}},
      [GT_KFAM_DECODETC] = {1, {{"p", offsetof(gt_kparams_t, prefetch)}}},
      [GT_KFAM_WG] = {4, {{"c", offsetof(gt_kparams_t, cluster_m)},
                          {"x", offsetof(gt_kparams_t, cluster_n)},
                          {"w", offsetof(gt_kparams_t, consumers)},
                          {"g", offsetof(gt_kparams_t, persistent)}}},
      [GT_KFAM_WGF8] = {4, {{"c", offsetof(gt_kparams_t, cluster_m)},
                            {"x", offsetof(gt_kparams_t, cluster_n)},
                            {"w", offsetof(gt_kparams_t, consumers)},
                            {"g", offsetof(gt_kparams_t, persistent)}}},
      [GT_KFAM_DTF8] = {1, {{"p", offsetof(gt_kparams_t, prefetch)}}}};
  const int extra = t.n - k_ntok[fam];
  if (extra < 0 || extra > k_opt[fam].n)
    return gt_err_set(GT_ERR_DATA, "instance '%s': %d tokens, family %s has %d%s", name, t.n,
                      k_family[fam], k_ntok[fam],
                      k_opt[fam].n == 1 ? " (or one more, optional)"
                      : k_opt[fam].n == 2 ? " (or up to two more, optional)"
                      : k_opt[fam].n == 3 ? " (or up to three more, optional)"
                      : k_opt[fam].n    ? " (or up to four more, optional)"
                                          : "");

  if ((s = parse_types(name, &t, out)) != GT_OK) return s;

  if (!gt_layout_parse(t.tok[4], &out->transa, &out->transb))
    return gt_err_set(GT_ERR_DATA, "instance '%s': layout '%s' is not tn, nn, nt or tt", name,
                      t.tok[4]);

  int w[3] = {0, 0, 0};  /* written by want_param on success */
  switch (out->family) {
  case GT_KFAM_DECODE:
    if ((s = want_param(name, t.tok[5], "n", 1, &out->tile_n)) ||
        (s = want_param(name, t.tok[6], "r", 1, &out->tile_m)) ||
        (s = want_param(name, t.tok[7], "w", 1, &out->warps_k)) ||
        (s = want_param(name, t.tok[8], "u", 1, &out->unroll)) ||
        (s = want_param(name, t.tok[9], "ks", 1, &out->splitk)) ||
        (s = want_param(name, t.tok[10], "v", 1, &out->vec)))
      return s;
    out->prefetch = 1; /* no token: the pre-wait prefetch */
    break;
  case GT_KFAM_DECODETC:
  case GT_KFAM_DTF8:
    if ((s = want_param(name, t.tok[5], "n", 1, &out->tile_n)) ||
        (s = want_param(name, t.tok[6], "m", 1, &out->tile_m)) ||
        (s = want_param(name, t.tok[7], "w", 2, w)) ||
        (s = want_param(name, t.tok[8], "u", 1, &out->unroll)) ||
        (s = want_param(name, t.tok[9], "s", 1, &out->stages)) ||
        (s = want_param(name, t.tok[10], "ks", 1, &out->splitk)) ||
        (s = want_param(name, t.tok[11], "v", 1, &out->vec)))
      return s;
    out->warps_m = w[0];
    out->warps_k = w[1];
    break;
  case GT_KFAM_TC:
    if ((s = want_tile(name, t.tok[5], out))) return s;
    if ((s = want_param(name, t.tok[6], "w", 2, w))) return s;
    out->warps_m = w[0];
    out->warps_n = w[1];
    if ((s = want_param(name, t.tok[7], "s", 1, &out->stages)) ||
        (s = want_param(name, t.tok[8], "ks", 1, &out->splitk)) ||
        (s = want_param(name, t.tok[9], "a", 1, &out->vec)))
      return s;
    break;
  case GT_KFAM_WG:
  case GT_KFAM_WGF8:
    if ((s = want_tile(name, t.tok[5], out))) return s;
    if ((s = want_param(name, t.tok[6], "s", 1, &out->stages)) ||
        (s = want_param(name, t.tok[7], "ks", 1, &out->splitk)) ||
        (s = want_param(name, t.tok[8], "p", 1, &out->prefetch)))
      return s;
    out->cluster_m = 1;
    out->consumers = 1;
    out->vec = out->family == GT_KFAM_WGF8 ? 16 : 8;
    break;
  default:
    return gt_err_set(GT_ERR_INTERNAL, "instance '%s': family without a grammar", name);
  }
  /* The fp8 families' two extra type tokens were dropped above. */
  for (int i = k_ntok[fam] - (gt_kfamily_is_fp8((gt_kfamily_t)fam) ? 2 : 0); i < t.n; i++) {
    int o = 0;
    while (o < k_opt[fam].n && t.tok[i][0] != k_opt[fam].tok[o].tag[0]) o++;
    if (o == k_opt[fam].n)
      return gt_err_set(GT_ERR_DATA, "instance '%s': token '%s' is not an optional token of %s",
                        name, t.tok[i], k_family[fam]);
    int *dst = (int *)((char *)out + k_opt[fam].tok[o].off);
    if ((s = want_param_from(name, t.tok[i], k_opt[fam].tok[o].tag, 1,
                             k_opt[fam].tok[o].zero_ok ? 0 : 1, dst)))
      return s;
  }

  /* One spelling per parameter set: "n08" or "w1x08" parse to the same values but are not the
   * name the generator writes, and would make two DB keys for one kernel. */
  char canon[192];
  if (!gt_kernel_name_format(out, canon, sizeof canon))
    return gt_err_set(GT_ERR_DATA,
                      "instance '%s': its parameters are not a valid %s instance (no name the "
                      "generator writes has them)",
                      name, k_family[fam]);
  if (strcmp(canon, name) != 0)
    return gt_err_set(GT_ERR_DATA, "instance '%s' is not in canonical form (expected '%s')", name,
                      canon);
  return GT_OK;
}

bool gt_kparams_uses_reduce(const gt_kparams_t *p) {
  return p->splitk > 1 && p->family != GT_KFAM_WG && p->family != GT_KFAM_WGF8 &&
         p->family != GT_KFAM_DTF8;
}

int gt_kernel_reduce_symbol(const gt_kparams_t *kp, char *buf, int cap) {
  const gt_karch_t *arch = gt_kparams_arch(kp);
  if (!arch) {
    if (cap > 0) buf[0] = '\0';
    return -1;
  }
  return snprintf(buf, cap > 0 ? (size_t)cap : 0, K_PREFIX "_%s_splitk_reduce_%s", arch->token,
                  gt_dtype_name(kp->dtype));
}

/* Length of name's gt_<arch>_ prefix (through its second '_'), 0 when it has none. */
static size_t arch_prefix_len(const char *name) {
  const char *u1 = strchr(name, '_');
  const char *u2 = u1 ? strchr(u1 + 1, '_') : NULL;
  return u2 && u2 > u1 + 1 ? (size_t)(u2 - name) + 1 : 0;
}

bool gt_kernel_name_is_own(const char *kernel) {
  if (!kernel) return false;
  size_t n = arch_prefix_len(kernel);
  if (n == 0) return false;
  /* The prefixes are those of the generated instances, so a family built for another
   * architecture is recognised as soon as the generator writes it. */
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const char *in = gt_kinstances[i].name;
    if (arch_prefix_len(in) == n && strncmp(in, kernel, n) == 0) return true;
  }
  return false;
}

int gt_kernel_symbols(const char *instance, char (*sym)[GT_KERNEL_SYMBOL_MAX], int max) {
  if (!instance || !gt_kernel_name_is_own(instance)) return -1;
  int n = 0;
  if (n < max) snprintf(sym[n++], GT_KERNEL_SYMBOL_MAX, "%s", instance);
  gt_kparams_t kp;
  if (n < max && gt_kernel_name_parse(instance, &kp) == GT_OK && gt_kparams_uses_reduce(&kp))
    gt_kernel_reduce_symbol(&kp, sym[n++], GT_KERNEL_SYMBOL_MAX);
  return n;
}

bool gt_kparams_equal(const gt_kparams_t *a, const gt_kparams_t *b) {
  return a->family == b->family && a->arch == b->arch && a->dtype == b->dtype &&
         a->transa == b->transa && a->transb == b->transb && a->tile_m == b->tile_m &&
         a->tile_n == b->tile_n && a->tile_k == b->tile_k && a->warps_m == b->warps_m &&
         a->warps_n == b->warps_n && a->warps_k == b->warps_k && a->unroll == b->unroll &&
         a->stages == b->stages && a->vec == b->vec && a->splitk == b->splitk &&
         a->prefetch == b->prefetch && a->cluster_m == b->cluster_m &&
         a->cluster_n == b->cluster_n &&
         a->consumers == b->consumers && a->persistent == b->persistent &&
         a->epilogue == b->epilogue &&
         a->b_dtype == b->b_dtype && a->d_dtype == b->d_dtype;
}

int gt_kinstance_find(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < gt_kinstance_count; i++)
    if (strcmp(gt_kinstances[i].name, name) == 0) return (int)i;
  return -1;
}

int gt_kinstance_counterpart(int idx) {
  if (idx < 0 || (size_t)idx >= gt_kinstance_count) return -1;
  gt_kparams_t kp = gt_kinstances[idx].params;
  kp.epilogue = !kp.epilogue;
  for (size_t i = 0; i < gt_kinstance_count; i++)
    if (gt_kparams_equal(&gt_kinstances[i].params, &kp)) return (int)i;
  return -1;
}
