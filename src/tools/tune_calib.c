/* A tune run's calibration (see cli.h and core/gt_calib.h): the reference shapes' baselines,
 * timed before the run's shapes and after them, in a worker process when the run isolates its
 * shapes (the supervisor never initialises CUDA). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "search/gt_calibrate.h"
#include "search/gt_isolate.h"

void gt_tune_calib_plan(gt_tune_calib_t *tc, const gt_shapes_t *sh, const gt_device_info_t *dev,
                        const gt_search_opts_t *so, int shard_i, int shard_n) {
  memset(tc, 0, sizeof *tc);
  const bool gpu = so->backend == GT_BACKEND_CUDA;
  size_t idx[GT_CALIB_MAX_REFS];
  tc->nref = gt_calib_pick(sh, dev->peak_tflops, dev->peak_gbps, gpu ? GT_CALIB_MAX_REFS : 1, idx);
  for (size_t i = 0; i < tc->nref; i++) {
    tc->ref[i] = &sh->v[idx[i]];
    gt_calib_ref_init(&tc->c.ref[i], &tc->ref[i]->p, "-"); /* named for messages; timed later */
  }
  char host[64] = "";
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  gt_calib_set_source(&tc->c, shard_i, shard_n, gpu ? so->measure.device : -1,
                      getenv("CUDA_VISIBLE_DEVICES"), host);
  tc->c.nrefs = (int)tc->nref;
}

/* What the worker measured, sent back whole (both sides are one binary). */
typedef struct calib_msg {
  gt_calib_ref_t ref[GT_CALIB_MAX_REFS];
  int status[GT_CALIB_MAX_REFS];
  char failure[GT_CALIB_MAX_REFS][256];
} calib_msg_t;

typedef struct calib_job {
  const gt_tune_calib_t *tc;
  const gt_search_opts_t *so;
  int phase;
} calib_job_t;

/* Time every reference, as its own shape's baseline would be (its entry point and workspace). */
static void calib_run(const calib_job_t *job, calib_msg_t *m) {
  for (size_t i = 0; i < job->tc->nref; i++) {
    const gt_shape_t *sh = job->tc->ref[i];
    gt_search_opts_t so = *job->so;
    if (sh->entry != GT_ENTRY_DEFAULT) so.entry = sh->entry;
    if (sh->workspace) so.workspace = sh->workspace;
    m->ref[i] = job->tc->c.ref[i];
    m->status[i] = gt_search_calibrate(&sh->p, &so, job->phase, &m->ref[i], m->failure[i],
                                       sizeof m->failure[i]);
  }
}

static int calib_worker(gt_isolate_chan_t *ch, void *arg) {
  calib_msg_t m;
  memset(&m, 0, sizeof m);
  calib_run(arg, &m);
  return gt_isolate_send(ch, &m, sizeof m) == GT_OK ? 0 : 1;
}

static bool on_calib_msg(void *ctx, const void *msg, size_t len) {
  if (len != sizeof(calib_msg_t)) return false;
  memcpy(ctx, msg, len);
  return true;
}

/* One reference's line: its time, and after the shapes the change since before. */
static void say_ref(const gt_calib_ref_t *r, int phase, char *buf, size_t cap) {
  size_t l = strlen(buf);
  snprintf(buf + l, cap - l, "%s%s %.6g us (spread %.2f%%", l ? "; " : "", r->shape, r->us[phase],
           r->spread_pct[phase]);
  l = strlen(buf);
  if (phase == GT_CALIB_AFTER && r->us[GT_CALIB_BEFORE] > 0)
    snprintf(buf + l, cap - l, ", %+.1f%% vs before", gt_calib_drift_pct(r, NULL));
  l = strlen(buf);
  snprintf(buf + l, cap - l, ")");
}

size_t gt_tune_calib_measure(gt_tune_calib_t *tc, const gt_search_opts_t *so, bool isolate,
                             double timeout_s, int phase) {
  if (!tc->nref) return 0;
  calib_job_t job = {tc, so, phase};
  calib_msg_t m;
  memset(&m, 0, sizeof m);
  const double t0 = gt_cli_now();
  gt_isolate_end_t end = {0};
  if (!isolate) {
    calib_run(&job, &m);
  } else if (gt_isolate_run(calib_worker, &job, timeout_s, on_calib_msg, &m, &end) != GT_OK ||
             !end.answered) {
    fprintf(stderr, "gemmtune tune: calibration %s the shapes: the worker %s; not recorded\n",
            phase == GT_CALIB_BEFORE ? "before" : "after", end.how == GT_ISOLATE_SILENT ? "hung"
                                                          : "ended without an answer");
    return 0;
  }
  char line[1024] = "";
  size_t done = 0;
  for (size_t i = 0; i < tc->nref; i++) {
    if (m.status[i] != GT_OK) {
      fprintf(stderr, "gemmtune tune: calibration: %s: %s; not recorded\n", tc->c.ref[i].shape,
              m.failure[i]);
      continue;
    }
    tc->c.ref[i] = m.ref[i];
    say_ref(&tc->c.ref[i], phase, line, sizeof line);
    done++;
  }
  if (done)
    fprintf(stderr, "gemmtune tune: calibration %s the shapes (the baseline of %zu reference "
            "shape%s, %.1f s): %s\n", phase == GT_CALIB_BEFORE ? "before" : "after", done,
            done == 1 ? "" : "s", gt_cli_now() - t0, line);
  for (size_t i = 0; phase == GT_CALIB_AFTER && i < tc->nref; i++) {
    double spread, d = gt_calib_drift_pct(&tc->c.ref[i], &spread);
    if (d > fmax(GT_CALIB_FLOOR_PCT, spread))
      fprintf(stderr, "gemmtune tune: warning: the reference %s ran %.1f%% slower after the "
              "shapes than before (spreads %.1f%%): the %s slowed during the run (throttled?); "
              "merge compares it with the other shards' times after their shapes\n",
              tc->c.ref[i].shape, d, spread, so->backend == GT_BACKEND_CUDA ? "GPU" : "host");
  }
  return done;
}
