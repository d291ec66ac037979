/* What a runtime says about a tuned DB's rows for the device it opens, and which of those rows it
 * may apply there (plain C: the engine calls it with the device it reads from CUDA; CPU tests and
 * the shim's GEMMTUNE_TEST_DEVICE call it with a stated one).
 *
 * A row applies on a device when the key's arch and SM count match and the device identity the
 * row records (product name, memory size: core/gt_db.h) matches too. Rows tuned on another
 * product of the same arch and SM count (an H100 SXM for an H200) are refused with one line
 * naming both devices; rows that record no identity (a DB from before identities) are applied
 * with one line saying so; a DB with no row for the device at all gets one line naming the
 * devices its rows are for. Each distinct line is said once per process, however many devices or
 * rebinds repeat it: the host application's stderr is not ours to fill. */
#ifndef GT_RT_DEVICES_H
#define GT_RT_DEVICES_H

#include <stddef.h>

#include "core/gt_db.h"
#include "preload_db.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_rt_devices_count {
  size_t here;       /* rows that apply on the device (identity recorded and matching) */
  size_t unrecorded; /* rows that apply by arch and SM count only (no identity recorded) */
  size_t refused;    /* rows of another product with the same arch and SM count */
  size_t other_key;  /* rows for another arch or SM count (their key never matches here) */
} gt_rt_devices_count_t;

/* Count db's rows against the device `here` (CUDA ordinal `device`, -1 when there is none) and
 * warn (warn may be NULL) once per process for each distinct line:
 *   "GEMMTUNE_DB=a.db: rows tuned on NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA
 *    H200 (139 GiB): not applied (2 of 2 rows)"
 *   "GEMMTUNE_DB=a.db: no row is for device 0, NVIDIA H200 (139 GiB; sm_90, 132 SMs): its 2
 *    rows are for NVIDIA H100 80GB HBM3 (79 GiB; sm_90, 132 SMs); nothing is served"
 * db_desc names where the rows came from. A DB with no rows says nothing. out may be NULL. */
void gt_rt_devices_report(const gt_db_t *db, const gt_db_device_t *here, int device,
                          const char *db_desc, gt_rt_warn_fn warn, void *ctx,
                          gt_rt_devices_count_t *out);

/* Whether row may be applied on `here`; when not, why gets the refusal (gt_db_refusal_str). */
bool gt_rt_row_applies(const gt_db_row_t *row, const gt_db_device_t *here, char *why, size_t cap);

/* Tests without a GPU: when GEMMTUNE_TEST_DEVICE is "NAME;MEM_GIB;ARCH;SM_COUNT", report db
 * against that device as an engine opening it would (gt_rt_devices_report, device 0). Does
 * nothing when the variable is unset; one warning when it is malformed. */
void gt_rt_devices_test_hook(const gt_db_t *db, const char *db_desc, gt_rt_warn_fn warn,
                             void *ctx);

/* Forget the lines already said (tests). */
void gt_rt_devices_reset(void);

#ifdef __cplusplus
}
#endif
#endif
