/* The architectures own kernels are built for, and which devices can run them.
 *
 * Plain C with no CUDA dependency, like gt_kernel_name.h, so the rules are tested on any host.
 * The table is data: space.json's "archs" (name token, CUDA target, shared-memory limit), of
 * which gen_instances.py writes the entries some family builds for into generated/instances.c.
 * Every instance names its architecture (gt_kparams_t.arch, the row of gt_karchs[]); the name
 * token, the kernel symbols, the generator's shared-memory budget and the compile target of its
 * file follow from that row, and the provider asks gt_karch_runs_on whether a device can run it. */
#ifndef GT_KERNEL_ARCH_H
#define GT_KERNEL_ARCH_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/gt_kernel_name.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which devices a CUDA target's code runs on (CUDA's compatibility rules; the build embeds the
 * target's PTX next to its machine code, so the PTX's reach counts too). */
typedef enum gt_karch_compat {
  GT_KARCH_EXACT = 0, /* sm_XYa: arch-specific features (wgmma, setmaxnreg); compute capability
                         X.Y only, machine code and PTX alike */
  GT_KARCH_FAMILY,    /* sm_XYf: family-specific features; X.y for any y >= Y */
  GT_KARCH_FORWARD,   /* sm_XY: machine code on X.y (y >= Y), its PTX on any later capability */
} gt_karch_compat_t;

/* One architecture: a row of the generated table. */
typedef struct gt_karch {
  const char *token;      /* in instance names and kernel symbols: "sm90" (gt_sm90_...) */
  const char *target;     /* the CUDA target its files are compiled for: "sm_90a" */
  int cc_major, cc_minor; /* the compute capability the target names */
  gt_karch_compat_t compat;
  int max_smem; /* shared memory per block (opt-in, static included), bytes: the generator's
                   budget; the provider still checks the device's own limit */
} gt_karch_t;

/* The generated table (generated/instances.c): the architectures some family builds for, in
 * space.json's order. */
extern const gt_karch_t gt_karchs[];
extern const size_t gt_karch_count;

/* Row of the architecture whose name token is `token` ("sm90"), or -1. */
int gt_karch_find(const char *token);

/* The architecture an instance with these parameters targets, or NULL when p->arch is not a row
 * of the table. */
const gt_karch_t *gt_kparams_arch(const gt_kparams_t *p);

/* Whether code built for architecture a runs on a device of compute capability major.minor.
 * When it does not (or a is NULL), why receives a one-line reason naming a's target and the
 * device ("built for sm_90a (runs on compute capability 9.0 only); device is sm_100"). */
bool gt_karch_runs_on(const gt_karch_t *a, int major, int minor, char *why, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
