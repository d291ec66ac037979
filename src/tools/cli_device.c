/* This machine's device as the tuned DB names it: the identity a row records (arch, SM count,
 * product name, memory) and the one-time notes a command prints about a DB's rows for it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "search/gt_isolate.h"

void gt_cli_db_device(const gt_device_info_t *dev, gt_db_device_t *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->arch, sizeof out->arch, "%s", dev->arch);
  out->sm_count = dev->sm_count;
  gt_db_device_name(dev->name, out->name, sizeof out->name);
  out->mem_gib = dev->mem_gib;
}

typedef struct here_msg {
  int rc;
  gt_db_device_t dev;
  char why[512];
} here_msg_t;

static int here_worker(gt_isolate_chan_t *ch, void *arg) {
  gt_cli_search_t cs = *(const gt_cli_search_t *)arg;
  here_msg_t m;
  memset(&m, 0, sizeof m);
  gt_device_info_t info;
  cs.quiet = true;
  m.rc = gt_cli_pick_backend("device", &cs, &info);
  if (m.rc == 0) gt_cli_db_device(&info, &m.dev);
  else snprintf(m.why, sizeof m.why, "%s", gt_err_msg());
  return gt_isolate_send(ch, &m, sizeof m) == GT_OK ? 0 : 1;
}

static bool on_here_msg(void *ctx, const void *msg, size_t len) {
  if (len != sizeof(here_msg_t)) return false;
  memcpy(ctx, msg, len);
  return true;
}

int gt_cli_device_here(const char *cmd, const gt_cli_search_t *cs, gt_db_device_t *out) {
  here_msg_t m;
  gt_isolate_end_t end;
  memset(&m, 0, sizeof m);
  gt_status_t s = gt_isolate_run(here_worker, (void *)cs, 0, on_here_msg, &m, &end);
  if (s != GT_OK || !end.answered) {
    fprintf(stderr, "gemmtune %s: device detection failed%s%s\n", cmd, s != GT_OK ? ": " : "",
            s != GT_OK ? gt_err_msg() : "");
    return EX_SOFTWARE_;
  }
  if (m.rc) {
    fprintf(stderr, "gemmtune %s: %s\n", cmd, m.why);
    return m.rc;
  }
  *out = m.dev;
  return 0;
}

size_t gt_cli_note_db_device(const char *cmd, const gt_db_t *db, const gt_db_device_t *here) {
  size_t refused = 0, unrecorded = 0;
  const gt_db_row_t *eg = NULL;
  for (size_t i = 0; i < db->n; i++) {
    gt_db_fit_t f = gt_db_row_fit(&db->rows[i], here);
    if (f == GT_DB_FIT_OTHER && !refused++) eg = &db->rows[i];
    unrecorded += f == GT_DB_FIT_UNRECORDED;
  }
  char msg[512];
  if (refused) {
    gt_db_refusal_str(eg, here, msg, sizeof msg);
    fprintf(stderr, "gemmtune %s: %s: %s (%zu of %zu rows)\n", cmd, db->path, msg, refused, db->n);
  }
  if (unrecorded)
    fprintf(stderr, "gemmtune %s: %s: %zu of %zu rows do not record the device they were tuned "
                    "on (a DB from before device identities): applied by arch and SM count, and "
                    "the product name where the file gives one; re-tune them to record it\n",
            cmd, db->path, unrecorded, db->n);
  return refused;
}
