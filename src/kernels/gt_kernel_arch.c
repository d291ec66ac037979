/* The architecture table's lookups and the device rule (see gt_kernel_arch.h). */
#include "gt_kernel_arch.h"

#include <stdio.h>
#include <string.h>

int gt_karch_find(const char *token) {
  if (!token) return -1;
  for (size_t i = 0; i < gt_karch_count; i++)
    if (strcmp(gt_karchs[i].token, token) == 0) return (int)i;
  return -1;
}

const gt_karch_t *gt_kparams_arch(const gt_kparams_t *p) {
  return p && p->arch >= 0 && (size_t)p->arch < gt_karch_count ? &gt_karchs[p->arch] : NULL;
}

bool gt_karch_runs_on(const gt_karch_t *a, int major, int minor, char *why, size_t cap) {
  if (!a) {
    if (cap) snprintf(why, cap, "no architecture in this build's table");
    return false;
  }
  bool ok = false;
  const char *reach = "";
  switch (a->compat) {
  case GT_KARCH_EXACT:
    ok = major == a->cc_major && minor == a->cc_minor;
    reach = " only";
    break;
  case GT_KARCH_FAMILY:
    ok = major == a->cc_major && minor >= a->cc_minor;
    reach = " and later minor versions";
    break;
  case GT_KARCH_FORWARD:
    ok = major > a->cc_major || (major == a->cc_major && minor >= a->cc_minor);
    reach = " and later";
    break;
  }
  if (!ok && cap)
    snprintf(why, cap, "built for %s (runs on compute capability %d.%d%s); device is sm_%d%d",
             a->target, a->cc_major, a->cc_minor, reach, major, minor);
  return ok;
}
