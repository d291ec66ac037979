/* The device a tuned row was measured on (see gt_db.h): its identity as text, whether a row
 * applies to the device here, and the refusal every tool and the runtime print when it does not.
 *
 * The key's arch and sm_count cannot tell an H100 SXM from an H200 (both sm_90, 132 SMs), and a
 * row tuned on one is a claim about the other that nobody measured. So each row also records the
 * product name and the memory size, and a row whose recorded identity differs from the device
 * here is refused, loudly, by everything that would act on it. Rows of a format-1 file record at
 * most the name (the file's #device line): they apply by what they record, and whoever applies
 * them says so, because refusing them would switch off every DB written before identities. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_db_internal.h"

int gt_db_mem_gib(uint64_t bytes) {
  uint64_t g = bytes >> 30;
  return g > 1u << 30 ? 1 << 30 : (int)g;
}

void gt_db_device_name(const char *raw, char *out, size_t cap) {
  if (!cap) return;
  const char *p = raw ? raw : "";
  while (*p && isspace((unsigned char)*p)) p++;
  size_t n = 0;
  for (; *p && n + 1 < cap; p++) {
    unsigned char c = (unsigned char)*p;
    out[n++] = c == ',' || c == '"' || c < 0x20 || c == 0x7f ? ' ' : (char)c;
  }
  while (n && isspace((unsigned char)out[n - 1])) n--;
  out[n] = '\0';
  if (!n) snprintf(out, cap, "-");
}

void gt_db_row_set_device(gt_db_row_t *row, const gt_db_device_t *dev) {
  gt_db_device_name(dev->name, row->device, sizeof row->device);
  row->device_mem_gib = dev->mem_gib > 0 ? dev->mem_gib : 0;
}

static bool name_known(const char *name) { return name[0] && strcmp(name, "-") != 0; }

static bool mem_differs(int a, int b) { return a > 0 && b > 0 && abs(a - b) > 1; }

gt_db_fit_t gt_db_row_fit(const gt_db_row_t *row, const gt_db_device_t *here) {
  if (strcmp(row->key.arch, here->arch) != 0 || row->key.sm_count != here->sm_count)
    return GT_DB_FIT_OTHER_KEY;
  /* Nothing to compare against here (a runtime that could not read the name) is not held
   * against the row; the same unknown in the row is, as a warning. */
  if (!name_known(here->name)) return GT_DB_FIT_HERE;
  if (!name_known(row->device)) return GT_DB_FIT_UNRECORDED;
  if (strcmp(row->device, here->name) != 0 || mem_differs(row->device_mem_gib, here->mem_gib))
    return GT_DB_FIT_OTHER;
  return row->device_mem_gib > 0 || here->mem_gib <= 0 ? GT_DB_FIT_HERE : GT_DB_FIT_UNRECORDED;
}

bool gt_db_rows_same_device(const gt_db_row_t *a, const gt_db_row_t *b) {
  if (strcmp(a->key.arch, b->key.arch) != 0 || a->key.sm_count != b->key.sm_count) return false;
  if (name_known(a->device) && name_known(b->device) && strcmp(a->device, b->device) != 0)
    return false;
  return !mem_differs(a->device_mem_gib, b->device_mem_gib);
}

static int identity_str(const char *name, int mem_gib, char *buf, size_t cap) {
  if (!name_known(name)) return snprintf(buf, cap, "an unrecorded device");
  if (mem_gib <= 0) return snprintf(buf, cap, "%s (memory not recorded)", name);
  return snprintf(buf, cap, "%s (%d GiB)", name, mem_gib);
}

int gt_db_row_device_str(const gt_db_row_t *row, char *buf, size_t cap) {
  return identity_str(row->device, row->device_mem_gib, buf, cap);
}

int gt_db_device_str(const gt_db_device_t *dev, char *buf, size_t cap) {
  return identity_str(dev->name, dev->mem_gib, buf, cap);
}

int gt_db_refusal_str(const gt_db_row_t *row, const gt_db_device_t *here, char *buf, size_t cap) {
  char a[GT_DB_DEVICE_MAX + 40], b[GT_DB_DEVICE_MAX + 40];
  gt_db_row_device_str(row, a, sizeof a);
  gt_db_device_str(here, b, sizeof b);
  return snprintf(buf, cap, "rows tuned on %s; this device is %s: not applied", a, b);
}

static bool same_identity(const gt_db_row_t *q, const gt_db_row_t *r) {
  return strcmp(q->key.arch, r->key.arch) == 0 && q->key.sm_count == r->key.sm_count &&
         strcmp(q->device[0] ? q->device : "-", r->device[0] ? r->device : "-") == 0 &&
         q->device_mem_gib == r->device_mem_gib;
}

size_t gt_db_devices_str(const gt_db_t *db, char *buf, size_t cap) {
  /* Each row is compared with the distinct devices found so far (a DB holds one or a few), up
   * to a bound past which further devices are counted as "more" without being told apart. */
  enum { NAMED = 4, KEPT = 64 };
  const gt_db_row_t *seen[KEPT];
  size_t nseen = 0, more = 0, len = 0;
  if (cap) buf[0] = '\0';
  for (size_t i = 0; i < db->n; i++) {
    const gt_db_row_t *r = &db->rows[i];
    bool dup = false;
    for (size_t j = 0; j < nseen && !dup; j++) dup = same_identity(seen[j], r);
    if (dup) continue;
    if (nseen == KEPT) {
      more++;
      continue;
    }
    seen[nseen++] = r;
    if (nseen > NAMED) continue;
    char id[GT_DB_DEVICE_MAX + 40];
    gt_db_row_device_str(r, id, sizeof id);
    /* "NVIDIA H200 (139 GiB)" -> "NVIDIA H200 (139 GiB; sm_90, 132 SMs)" */
    size_t il = strlen(id);
    bool paren = il && id[il - 1] == ')';
    if (paren) id[il - 1] = '\0';
    const char *unit = strncmp(r->key.arch, "sm_", 3) == 0 ? "SMs" : "cores"; /* a GPU, or the host */
    if (len < cap)
      len += (size_t)snprintf(buf + len, cap - len, "%s%s%s%s, %d %s)", nseen > 1 ? ", " : "", id,
                              paren ? "; " : " (", r->key.arch, r->key.sm_count, unit);
  }
  size_t total = nseen + more;
  if (total > NAMED && len < cap) snprintf(buf + len, cap - len, " and %zu more", total - NAMED);
  return total;
}
