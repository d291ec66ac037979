/* Instance-name token helpers (see gt_name.h). */
#include "gt_name.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gt_name_append(char *buf, int cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len && len + 1 < (size_t)cap) buf[len++] = '_', buf[len] = '\0';
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + len, (size_t)cap - len, fmt, ap);
  va_end(ap);
  return w >= 0 && len + (size_t)w < (size_t)cap;
}

gt_status_t gt_name_split(const char *name, gt_name_tokens_t *out) {
  out->n = 0;
  if (!name || !*name) return gt_err_set(GT_ERR_DATA, "empty instance name");
  const char *p = name;
  for (;;) {
    const char *e = strchr(p, '_');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 0) return gt_err_set(GT_ERR_DATA, "instance name '%s': empty token", name);
    if (len >= sizeof out->tok[0])
      return gt_err_set(GT_ERR_DATA, "instance name '%s': token too long", name);
    if (out->n == GT_NAME_MAX_TOKENS)
      return gt_err_set(GT_ERR_DATA, "instance name '%s': too many tokens", name);
    memcpy(out->tok[out->n], p, len);
    out->tok[out->n][len] = '\0';
    out->n++;
    if (!e) break;
    p = e + 1;
  }
  return GT_OK;
}

int gt_name_param(const char *tok, const char *tag, int64_t *vals, int max) {
  size_t tl = strlen(tag);
  if (strncmp(tok, tag, tl) != 0) return -1;
  const char *p = tok + tl;
  if (!isdigit((unsigned char)*p)) return -1;
  int n = 0;
  for (;;) {
    if (!isdigit((unsigned char)*p) || n == max) return -1;
    char *end;
    long long v = strtoll(p, &end, 10);
    vals[n++] = v;
    p = end;
    if (*p == '\0') return n;
    if (*p != 'x') return -1;
    p++;
  }
}
