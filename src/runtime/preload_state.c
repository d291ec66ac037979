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

#include "core/gt_envvars.h"
#include "preload_db.h"
#include "preload_internal.h"
#include "rt_devices.h"

gt_preload_state_t gt_preload = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

_Thread_local int gt_preload_depth;

/* ---- fork ----------------------------------------------------------------------------------
 * A child forked while another thread of the parent held one of the shim's locks (the state's,
 * an engine's, the query table's) would wait on it forever: fork copies the lock, not the thread
 * that would release it. The parent's CUDA state does not survive a fork either, and only the
 * parent reports at exit. So a child forked after the shim started passes every call straight
 * to cuBLAS and never touches a lock or the state. A child forked before the shim's first call
 * (a launcher, a pool created early) starts the shim afresh as any process does. */
static _Atomic int g_started; /* shim_init has begun in this process */
static _Atomic int g_forked;  /* this process is a child forked after that */

static void after_fork_child(void) {
  if (atomic_load(&g_started)) atomic_store(&g_forked, 1);
}

__attribute__((constructor)) static void register_fork_handler(void) {
  (void)pthread_atfork(NULL, NULL, after_fork_child);
}

/* A path from the environment, or "" with one warning when it does not fit: a cut path would
 * name another file. */
static bool env_path(const char *var, char *out, size_t cap) {
  const char *v = getenv(var);
  out[0] = '\0';
  if (!v || !*v) return false;
  if (strlen(v) >= cap) {
    gt_preload_say("%s is %zu characters long (at most %zu are taken); ignored, nothing is "
                   "written there", var, strlen(v), cap - 1);
    return false;
  }
  memcpy(out, v, strlen(v) + 1);
  return true;
}

static bool env_flag(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
         strcasecmp(v, "no") != 0 && strcasecmp(v, "off") != 0;
}

/* A GEMMTUNE_* variable the shim does not know changes nothing, which looks exactly like a
 * working deployment: one line each, naming the variable it was probably meant to be. */
static void warn_unknown(void *ctx, const char *name, const gt_env_var_t *nearest) {
  (void)ctx;
  gt_preload_say("%s is not a gemmtune variable and is ignored; did you mean %s (%s)?", name,
                 nearest->name, nearest->what);
}

/* Loaded on the first interposed call, not at library load: processes the application spawns
 * (shells, compilers) inherit LD_PRELOAD but never call cuBLAS, and should stay silent; so the
 * check of the variables runs here too, once per process that uses the shim. */
static void shim_init(void) {
  gt_preload_state_t *g = &gt_preload;
  atomic_store(&g_started, 1);
  g->pid = getpid();
  (void)gt_env_check(environ, warn_unknown, NULL);
  g->log = env_flag("GEMMTUNE_LOG");
  g->capture = env_path("GEMMTUNE_CAPTURE", g->capture_path, sizeof g->capture_path);
  g->stats = env_path("GEMMTUNE_STATS", g->stats_path, sizeof g->stats_path);
  gt_db_init(&g->db);
  const char *paths = getenv("GEMMTUNE_DB");
  if (paths && *paths) {
    gt_rt_db_load_report_t rep;
    (void)gt_rt_db_load_list(paths, &g->db, gt_preload_say_line, NULL, &rep);
    snprintf(g->db_desc, sizeof g->db_desc, "GEMMTUNE_DB=%.500s: %zu rows", paths, g->db.n);
    if (g->log)
      gt_preload_say("loaded %zu tuned rows from %zu file%s (%zu skipped) in GEMMTUNE_DB",
                     g->db.n, rep.files_ok, rep.files_ok == 1 ? "" : "s", rep.files_bad);
    gt_rt_devices_test_hook(&g->db, g->db_desc, gt_preload_say_line, NULL); /* tests only */
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
  if (atomic_load_explicit(&g_forked, memory_order_relaxed)) return false;
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
    if (gt_preload_open_engine(dev, &g->db, g->db_desc, &rt) != GT_OK) {
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
