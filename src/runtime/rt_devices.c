/* A tuned DB's rows against the device a runtime opens (rt_devices.h). */
#include "rt_devices.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- said once per process --------------------------------------------------------------- */

#define SAID_MAX 64
static pthread_mutex_t g_said_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_said[SAID_MAX];
static int g_nsaid;

static uint64_t line_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* True the first time this process asks about line (and after SAID_MAX distinct lines, always:
 * a repeat is better than a lost warning). */
static bool first_time(const char *line) {
  uint64_t h = line_hash(line);
  bool first = true;
  pthread_mutex_lock(&g_said_mu);
  for (int i = 0; i < g_nsaid && first; i++) first = g_said[i] != h;
  if (first && g_nsaid < SAID_MAX) g_said[g_nsaid++] = h;
  pthread_mutex_unlock(&g_said_mu);
  return first;
}

void gt_rt_devices_reset(void) {
  pthread_mutex_lock(&g_said_mu);
  g_nsaid = 0;
  pthread_mutex_unlock(&g_said_mu);
}

static void say(gt_rt_warn_fn warn, void *ctx, const char *line) {
  if (warn && first_time(line)) warn(ctx, line);
}

/* ---- the report ----------------------------------------------------------------------------- */

bool gt_rt_row_applies(const gt_db_row_t *row, const gt_db_device_t *here, char *why, size_t cap) {
  gt_db_fit_t f = gt_db_row_fit(row, here);
  if (f == GT_DB_FIT_HERE || f == GT_DB_FIT_UNRECORDED) return true;
  if (why && cap) {
    if (f == GT_DB_FIT_OTHER)
      gt_db_refusal_str(row, here, why, cap);
    else
      snprintf(why, cap, "the row is for %s with %d SMs; this device is %s with %d SMs",
               row->key.arch, row->key.sm_count, here->arch, here->sm_count);
  }
  return false;
}

void gt_rt_devices_report(const gt_db_t *db, const gt_db_device_t *here, int device,
                          const char *db_desc, gt_rt_warn_fn warn, void *ctx,
                          gt_rt_devices_count_t *out) {
  gt_rt_devices_count_t c = {0};
  const gt_db_row_t *refused_eg = NULL, *other_eg = NULL;
  for (size_t i = 0; db && i < db->n; i++) {
    switch (gt_db_row_fit(&db->rows[i], here)) {
      case GT_DB_FIT_HERE: c.here++; break;
      case GT_DB_FIT_UNRECORDED: c.unrecorded++; break;
      case GT_DB_FIT_OTHER:
        if (!c.refused++) refused_eg = &db->rows[i];
        break;
      case GT_DB_FIT_OTHER_KEY:
        if (!c.other_key++) other_eg = &db->rows[i];
        break;
    }
  }
  if (out) *out = c;
  if (!db || !db->n) return;
  const char *desc = db_desc && *db_desc ? db_desc : "tuned DB";
  char line[1536], msg[512], id[GT_DB_DEVICE_MAX + 40], dev[32] = "";
  if (device >= 0) snprintf(dev, sizeof dev, "device %d, ", device);
  gt_db_device_str(here, id, sizeof id);
  size_t il = strlen(id);
  bool paren = il && id[il - 1] == ')';
  if (paren) id[il - 1] = '\0';
  if (refused_eg) {
    gt_db_refusal_str(refused_eg, here, msg, sizeof msg);
    snprintf(line, sizeof line, "%s: %s (%zu of %zu rows)", desc, msg, c.refused, db->n);
    say(warn, ctx, line);
  }
  if (c.here + c.unrecorded == 0) {
    char devs[768];
    gt_db_devices_str(db, devs, sizeof devs);
    snprintf(line, sizeof line, "%s: no row is for %s%s%s%s, %d %s): its %zu row%s %s for %s; "
             "nothing is served", desc, dev, id, paren ? "; " : " (", here->arch, here->sm_count,
             strncmp(here->arch, "sm_", 3) == 0 ? "SMs" : "cores", db->n, db->n == 1 ? "" : "s",
             db->n == 1 ? "is" : "are", devs);
    say(warn, ctx, line);
    return;
  }
  if (other_eg) {
    snprintf(line, sizeof line, "%s: %zu of %zu tuned rows are for another device (e.g. %s with "
             "%d SMs); %s%s with %d SMs, so those rows cannot match here", desc, c.other_key,
             db->n, other_eg->key.arch, other_eg->key.sm_count, dev[0] ? dev : "this device is ",
             here->arch, here->sm_count);
    say(warn, ctx, line);
  }
  if (c.unrecorded) {
    snprintf(line, sizeof line, "%s: %zu row%s do%s not record the device %s tuned on (a DB from "
             "before device identities): applied here by arch and SM count, and the product "
             "name where the file gives one; re-tune to record it", desc, c.unrecorded,
             c.unrecorded == 1 ? "" : "s", c.unrecorded == 1 ? "es" : "",
             c.unrecorded == 1 ? "it was" : "they were");
    say(warn, ctx, line);
  }
}

void gt_rt_devices_test_hook(const gt_db_t *db, const char *db_desc, gt_rt_warn_fn warn,
                             void *ctx) {
  const char *v = getenv("GEMMTUNE_TEST_DEVICE");
  /* "ARCH:SMS" states no product, so there is nothing to report about identities. */
  if (!v || !*v || !strchr(v, ';')) return;
  gt_db_device_t here;
  memset(&here, 0, sizeof here);
  char name[GT_DB_DEVICE_MAX];
  int n = -1;
  if (sscanf(v, "%63[^;];%d;%15[^;];%d%n", name, &here.mem_gib, here.arch, &here.sm_count, &n) != 4 ||
      v[n] != '\0') {
    if (warn) warn(ctx, "GEMMTUNE_TEST_DEVICE wants NAME;MEM_GIB;ARCH;SM_COUNT; ignored");
    return;
  }
  gt_db_device_name(name, here.name, sizeof here.name);
  gt_rt_devices_report(db, &here, 0, db_desc, warn, ctx, NULL);
}
