/* gt_karch_probe: the own-kernel naming and architecture code (src/kernels/gt_kernel_name.c,
 * gt_kernel_arch.c) compiled against the table that the test-only space
 * tests/data/space_dummy_arch.json generates (tests/data/dummy_arch/instances.c), so
 * tests/cli/test_kernels_generated.sh can show that a second architecture is data: its names
 * parse, its kernels are named, and a device without it is refused, on any host.
 *
 *   gt_karch_probe list                 every architecture ("arch TOKEN TARGET cc MAJOR.MINOR
 *                                       max_smem BYTES"), then every instance ("NAME TARGET")
 *                                       after checking that it parses back to its table row and
 *                                       formats back to its name
 *   gt_karch_probe parse NAME [MAJOR.MINOR]
 *                                       "NAME: arch TOKEN (TARGET)", its reduce kernel's symbol
 *                                       when it launches one, and with a compute capability
 *                                       "runs on sm_XY" or "refused on sm_XY: REASON"
 *
 * Exit status: 0 ok, 1 refused on that device, 2 the name does not parse, 3 a table row does
 * not round-trip, 64 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gt_kernel_arch.h"
#include "kernels/gt_kernel_name.h"

static int usage(void) {
  fprintf(stderr, "usage: gt_karch_probe list | parse NAME [MAJOR.MINOR]\n");
  return 64;
}

/* Every table row parses back to its parameters and formats back to its name. */
static int list_table(void) {
  for (size_t i = 0; i < gt_karch_count; i++)
    printf("arch %s %s cc %d.%d max_smem %d\n", gt_karchs[i].token, gt_karchs[i].target,
           gt_karchs[i].cc_major, gt_karchs[i].cc_minor, gt_karchs[i].max_smem);
  for (size_t i = 0; i < gt_kinstance_count; i++) {
    const gt_kinstance_t *in = &gt_kinstances[i];
    gt_kparams_t kp;
    char buf[192];
    if (gt_kernel_name_parse(in->name, &kp) != GT_OK) {
      fprintf(stderr, "%s: %s\n", in->name, gt_err_msg());
      return 3;
    }
    if (!gt_kparams_equal(&kp, &in->params) || !gt_kernel_name_format(&kp, buf, sizeof buf) ||
        strcmp(buf, in->name) != 0) {
      fprintf(stderr, "%s: does not round-trip through its parameters\n", in->name);
      return 3;
    }
    printf("%s %s\n", in->name, gt_kparams_arch(&kp)->target);
  }
  return 0;
}

static int parse_one(const char *name, const char *cc) {
  int major = 0, minor = 0;
  char tail;
  if (cc && sscanf(cc, "%d.%d%c", &major, &minor, &tail) != 2) return usage();
  gt_kparams_t kp;
  if (gt_kernel_name_parse(name, &kp) != GT_OK) {
    printf("%s: %s\n", name, gt_err_msg());
    return 2;
  }
  const gt_karch_t *a = gt_kparams_arch(&kp);
  printf("%s: arch %s (%s)\n", name, a->token, a->target);
  if (gt_kparams_uses_reduce(&kp)) {
    char sym[96];
    gt_kernel_reduce_symbol(&kp, sym, sizeof sym);
    printf("%s: reduce %s\n", name, sym);
  }
  if (!cc) return 0;
  char why[160];
  if (!gt_karch_runs_on(a, major, minor, why, sizeof why)) {
    printf("%s: refused on sm_%d%d: %s\n", name, major, minor, why);
    return 1;
  }
  printf("%s: runs on sm_%d%d\n", name, major, minor);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "list") == 0) return list_table();
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "parse") == 0)
    return parse_one(argv[2], argc == 4 ? argv[3] : NULL);
  return usage();
}
