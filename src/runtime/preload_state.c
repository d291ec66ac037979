/* The preload shim's process state: what the environment asks for and the tuned rows, read on
 * the first interposed call, and one engine per device, opened on that device's first call. Both
 * are created lazily and once; the exit report is registered from here, at the two moments that
 * make it run before the CUDA runtime's teardown. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "preload_db.h"
#include "preload_internal.h"

gt_preload_state_t gt_preload = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

_Thread_local int gt_preload_depth;

static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
         strcasecmp(v, "no") != 0 && strcasecmp(v, "off") != 0;
}

/* Loaded on the first interposed call, not at library load: processes the application spawns
 * (shells, compilers) inherit LD_PRELOAD but never call cuBLAS, and should stay silent. */
static void shim_init(void) {
  gt_preload_state_t *g = &gt_preload;
  g->pid = getpid();
  g->log = env_flag("GEMMTUNE_LOG");
  const char *cap = getenv("GEMMTUNE_CAPTURE");
  if (cap && *cap) {
    g->capture = true;
    snprintf(g->capture_path, sizeof g->capture_path, "%s", cap);
  }
  const char *stats = getenv("GEMMTUNE_STATS");
  if (stats && *stats) {
    g->stats = true;
    snprintf(g->stats_path, sizeof g->stats_path, "%s", stats);
  }
  gt_db_init(&g->db);
  const char *paths = getenv("GEMMTUNE_DB");
  if (paths && *paths) {
    gt_rt_db_load_report_t rep;
    (void)gt_rt_db_load_list(paths, &g->db, gt_preload_say_line, NULL, &rep);
    snprintf(g->db_desc, sizeof g->db_desc, "GEMMTUNE_DB=%.500s: %zu rows", paths, g->db.n);
    if (g->log)
      gt_preload_say("loaded %zu tuned rows from %zu file%s (%zu skipped) in GEMMTUNE_DB",
                     g->db.n, rep.files_ok, rep.files_ok == 1 ? "" : "s", rep.files_bad);
  } else {
    snprintf(g->db_desc, sizeof g->db_desc, "GEMMTUNE_DB is not set");
  }
  g->active = g->db.n > 0 || g->log || g->capture || g->stats;
  /* Tuned candidates resolve cuBLASLt through gt_cudalib, which takes the copy already loaded.
   * A process built against another major version has none loaded, and loading ours next to
   * its own is exactly what the shim must never do: keys are still counted, nothing runs. */
  g->hits_allowed = gt_preload_lib_loaded(GT_PRELOAD_LIB_CUBLASLT);
  if (!g->hits_allowed && g->db.n)
    gt_preload_say("%s is not loaded in this process (another cuBLAS version?): tuned rows are "
                   "not used, every call goes to the application's cuBLAS",
                   gt_preload_lib_names[GT_PRELOAD_LIB_CUBLASLT]);
  /* Report even when no call ever reaches a device (each later registration runs first; the
   * report runs once). */
  if (g->log || g->capture || g->stats) atexit(gt_preload_exit);
}

bool gt_preload_active(void) {
  pthread_once(&gt_preload.once, shim_init);
  return gt_preload.active;
}

/* Registering the exit report here, after this library's CUDA runtime has initialised, makes it
 * run before that runtime's own teardown (atexit handlers run in reverse order), so outstanding
 * GPU timings can still be read. */
gt_rt_t *gt_preload_engine(int dev) {
  gt_preload_state_t *g = &gt_preload;
  if (dev < 0 || dev >= GT_PRELOAD_MAX_DEVICES) return NULL;
  gt_rt_t *rt = atomic_load_explicit(&g->rt[dev], memory_order_acquire);
  if (rt) return rt;
  pthread_mutex_lock(&g->mu);
  rt = atomic_load(&g->rt[dev]);
  if (!rt && !g->rt_failed[dev]) {
    if (gt_rt_open(dev, &g->db, g->db_desc, gt_preload_say_line, NULL, &rt) != GT_OK) {
      gt_preload_say("device %d: %s; passing its calls through", dev, gt_err_msg());
      g->rt_failed[dev] = true;
      rt = NULL;
    } else {
      atomic_store_explicit(&g->rt[dev], rt, memory_order_release);
      if (!g->exit_registered_late) {
        g->exit_registered_late = true;
        atexit(gt_preload_exit);
      }
    }
  }
  pthread_mutex_unlock(&g->mu);
  return rt;
}
