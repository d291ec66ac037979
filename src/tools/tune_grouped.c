/* The grouped_mm keys of a tune run raced in a torch process (tune_grouped.h). The race is a
 * child process, `$GEMMTUNE_PYTHON -m gemmtune.grouped SHAPES --lines ... --lib
 * libgemmtune_grouped.so --db TMP/grouped.db --results TMP/results.tsv`, in its own process
 * group so a time limit stops all of it; its output goes to TMP/race.log, whose last line is the
 * reason when it cannot run. Nothing of it runs in tune's process: torch, the CUDA context it
 * makes and any fault stay in the child. */
#define _GNU_SOURCE
#include "tune_grouped.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gt_runtime_paths.h"

extern char **environ;

#define RACE_MODULE "gemmtune.grouped"
#define RACE_EXIT_NO_DEVICE 77
#define RACE_EXIT_NO_TORCH 3

bool gt_tune_grouped_parse_result(const char *line, gt_tune_grouped_key_t *k) {
  memset(k, 0, sizeof *k);
  char *end;
  long ln = strtol(line, &end, 10);
  if (end == line || *end != '\t' || ln <= 0 || ln > INT_MAX) return false;
  const char *f[5];
  const char *p = end + 1;
  for (int i = 0; i < 5; i++) {
    f[i] = p;
    const char *t = i < 4 ? strchr(p, '\t') : p + strcspn(p, "\r\n");
    if (!t) return false;
    p = t + 1;
  }
  size_t olen = (size_t)(strchr(f[0], '\t') - f[0]);
  if (olen == 0 || olen >= sizeof k->outcome) return false;
  memcpy(k->outcome, f[0], olen);
  if (strcmp(k->outcome, "improved") && strcmp(k->outcome, "unchanged") &&
      strcmp(k->outcome, "failed") && strcmp(k->outcome, "skipped")) {
    k->outcome[0] = '\0';
    return false;
  }
  k->line = (int)ln;
  k->base_us = strtod(f[1], NULL);
  k->best_us = strtod(f[2], NULL);
  snprintf(k->winner, sizeof k->winner, "%.*s", (int)(strchr(f[3], '\t') - f[3]), f[3]);
  snprintf(k->note, sizeof k->note, "%.*s", (int)strcspn(f[4], "\r\n"), f[4]);
  return true;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The directory that holds the `gemmtune` package: beside an installed binary
 * (site-packages/gemmtune/bin/gemmtune), else the source tree's python/ folder. "" when neither
 * (the interpreter may still import an installed package). */
static void package_parent(char *out, size_t cap) {
  out[0] = '\0';
  char exe[PATH_MAX], probe[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      snprintf(probe, sizeof probe, "%s/../grouped/race.py", exe);
      if (is_file(probe)) {
        snprintf(out, cap, "%s/../..", exe);
        return;
      }
    }
  }
#ifdef GT_SOURCE_PYTHON_DIR
  snprintf(probe, sizeof probe, "%s/gemmtune/grouped/race.py", GT_SOURCE_PYTHON_DIR);
  if (is_file(probe)) snprintf(out, cap, "%s", GT_SOURCE_PYTHON_DIR);
#endif
}

/* The log's last non-empty line (the child's reason), at most cap bytes. */
static void last_line(const char *path, char *out, size_t cap) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0]) snprintf(out, cap, "%s", line);
  }
  fclose(f);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Waits for the child until deadline; then stops its process group (TERM, then KILL). Returns
 * the exit status (128+signal for a signal) and sets *timed_out. */
static int wait_child(pid_t pid, double deadline, bool *timed_out) {
  *timed_out = false;
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return -1;
    if (!*timed_out && now_s() > deadline) {
      *timed_out = true;
      (void)kill(-pid, SIGTERM);
      deadline = now_s() + 5; /* then KILL */
    } else if (*timed_out && now_s() > deadline) {
      (void)kill(-pid, SIGKILL);
      deadline = now_s() + 3600;
    }
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  /* What the leader started and that outlived it (or ignored TERM) goes with it. */
  if (*timed_out) (void)kill(-pid, SIGKILL);
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* The temporary folder and everything in it (the race's DB writer leaves a temporary file when
 * it is stopped mid-write). */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char p[PATH_MAX + 256];
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        (void)unlink(p);
      }
    closedir(d);
  }
  (void)rmdir(dir);
}

/* The child's environment, built before fork (nothing may allocate between fork and exec: another
 * thread may hold the allocator's lock): this process's, with PYTHONPATH led by ppath (when set)
 * and PYTHONUNBUFFERED=1. The strings are the caller's to free with env_free. */
static char **child_env(const char *ppath) {
  size_t n = 0;
  while (environ && environ[n]) n++;
  char **env = calloc(n + 3, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  const char *old = getenv("PYTHONPATH");
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "PYTHONPATH=", 11) && strncmp(environ[i], "PYTHONUNBUFFERED=", 17))
      env[k++] = environ[i];
  char *pp = NULL, *ub = NULL;
  if (ppath[0]) {
    if (asprintf(&pp, "PYTHONPATH=%s%s%s", ppath, old && *old ? ":" : "", old && *old ? old : "") < 0)
      pp = NULL;
  } else if (old) {
    if (asprintf(&pp, "PYTHONPATH=%s", old) < 0) pp = NULL;
  }
  if (asprintf(&ub, "PYTHONUNBUFFERED=1") < 0) ub = NULL;
  if (pp) env[k++] = pp;
  if (ub) env[k++] = ub;
  env[k] = NULL;
  return env;
}

/* Frees what child_env allocated (the two strings it added, then the array). */
static void env_free(char **env) {
  if (!env) return;
  for (size_t i = 0; env[i]; i++)
    if (strncmp(env[i], "PYTHONPATH=", 11) == 0 || strncmp(env[i], "PYTHONUNBUFFERED=", 17) == 0)
      free(env[i]);
  free(env);
}

gt_status_t gt_tune_grouped_race(const gt_tune_grouped_opts_t *o, gt_tune_grouped_key_t *keys,
                                 gt_db_t *rows, char *why, size_t cap) {
  gt_db_init(rows);
  why[0] = '\0';
  for (size_t i = 0; i < o->nlines; i++) memset(&keys[i], 0, sizeof keys[i]), keys[i].line = o->lines[i];
  if (o->nlines == 0) return GT_OK;
  char lib[PATH_MAX];
  if (!gt_runtime_find_lib("libgemmtune_grouped.so", "GEMMTUNE_GROUPED_LIB", lib, sizeof lib)) {
    snprintf(why, cap, "no libgemmtune_grouped.so beside this gemmtune (a build without CUDA?)");
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s", why);
  }
  if (!is_file(lib)) {
    snprintf(why, cap, "no libgemmtune_grouped.so at %s (GEMMTUNE_GROUPED_LIB)", lib);
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s", why);
  }
  const char *py = getenv("GEMMTUNE_PYTHON");
  if (!py || !*py) py = "python3";
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/gemmtune-grouped.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    snprintf(why, cap, "cannot make a temporary folder %s: %s", dir, strerror(errno));
    return gt_err_set(GT_ERR_IO, "%s", why);
  }
  char db[PATH_MAX + 16], res[PATH_MAX + 16], logp[PATH_MAX + 16];
  snprintf(db, sizeof db, "%s/grouped.db", dir);
  snprintf(res, sizeof res, "%s/results.tsv", dir);
  snprintf(logp, sizeof logp, "%s/race.log", dir);
  /* --lines L1,L2,...: at most a few thousand keys, each a short number. */
  size_t llen = 16 * o->nlines + 1;
  char *lines = malloc(llen);
  if (!lines) {
    remove_dir(dir);
    return gt_err_set(GT_ERR_NOMEM, "out of memory");
  }
  size_t at = 0;
  for (size_t i = 0; i < o->nlines; i++)
    at += (size_t)snprintf(lines + at, llen - at, "%s%d", i ? "," : "", o->lines[i]);
  char dev[16], rounds[16], thr[32];
  snprintf(dev, sizeof dev, "%d", o->device);
  snprintf(rounds, sizeof rounds, "%d", o->rounds > 0 ? o->rounds : 15);
  snprintf(thr, sizeof thr, "%g", o->threshold_pct);
  char ppath[PATH_MAX + 8];
  package_parent(ppath, sizeof ppath);
  const char *argv[] = {py, "-m", RACE_MODULE, o->shapes_path, "--lines", lines, "--lib", lib,
                        "--db", db, "--results", res, "--device", dev, "--rounds", rounds,
                        "--threshold", thr, NULL};
  char **env = child_env(ppath);
  if (!env) {
    free(lines);
    remove_dir(dir);
    return gt_err_set(GT_ERR_NOMEM, "out of memory");
  }
  static const char k_exec_fail[] = "cannot run the interpreter GEMMTUNE_PYTHON names (or "
                                    "python3): exec failed\n";
  const pid_t parent = getpid();
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    env_free(env);
    free(lines);
    remove_dir(dir);
    snprintf(why, cap, "cannot start %s: %s", py, strerror(errno));
    return gt_err_set(GT_ERR_IO, "%s", why);
  }
  if (pid == 0) {
    /* Only async-signal-safe calls from here to exec. The race dies with tune (its own process
     * group keeps a terminal's Ctrl-C from reaching it, so tune's death must). */
    (void)setpgid(0, 0);
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
    if (nul >= 0) dup2(nul, 0);
    execvpe(py, (char *const *)argv, env);
    ssize_t w = write(2, k_exec_fail, sizeof k_exec_fail - 1);
    (void)w;
    _exit(127);
  }
  env_free(env);
  free(lines);
  (void)setpgid(pid, pid);
  bool timed_out;
  int rc = wait_child(pid, now_s() + (o->timeout_s > 0 ? o->timeout_s : 3600), &timed_out);
  /* What the race finished, whatever its end. */
  size_t nres = 0;
  FILE *rf = fopen(res, "r");
  if (rf) {
    char line[2048];
    gt_tune_grouped_key_t k;
    while (fgets(line, sizeof line, rf))
      if (gt_tune_grouped_parse_result(line, &k))
        for (size_t i = 0; i < o->nlines; i++)
          if (keys[i].line == k.line && !keys[i].outcome[0]) keys[i] = k, nres++;
    fclose(rf);
  }
  gt_status_t s = GT_OK;
  if (is_file(db)) {
    gt_db_t got;
    s = gt_db_read(db, &got);
    if (s == GT_OK) {
      gt_db_free(rows);
      *rows = got;
    } else {
      snprintf(why, cap, "the race's DB %s does not read: %s", db, gt_err_msg());
    }
  }
  char tail[400];
  last_line(logp, tail, sizeof tail);
  if (s == GT_OK && rc == 127 && strstr(tail, "exec failed"))
    snprintf(tail, sizeof tail, "cannot run %s: not found or not executable (GEMMTUNE_PYTHON "
             "names the interpreter)", py);
  if (s == GT_OK && timed_out) {
    snprintf(why, cap, "stopped at its time limit (%.0f s)", o->timeout_s);
  } else if (s == GT_OK && rc == RACE_EXIT_NO_DEVICE) {
    snprintf(why, cap, "%s", tail[0] ? tail : "torch sees no CUDA device");
    s = gt_err_set(GT_ERR_UNSUPPORTED, "%s", why);
  } else if (s == GT_OK && (rc == RACE_EXIT_NO_TORCH || rc == 127)) {
    snprintf(why, cap, "%s", tail[0] ? tail : "no interpreter with torch (GEMMTUNE_PYTHON)");
    s = gt_err_set(GT_ERR_UNSUPPORTED, "%s", why);
  } else if (s == GT_OK && (rc < 0 || rc > 1 || (rc == 1 && nres == 0))) {
    snprintf(why, cap, "%s -m %s exited %d: %s", py, RACE_MODULE, rc,
             tail[0] ? tail : "(no output)");
    s = gt_err_set(GT_ERR_IO, "%s", why);
  } else if (s == GT_OK && rc != 0 && nres < o->nlines) {
    /* It stopped part-way: the keys it never reported say why. */
    snprintf(why, cap, "%s -m %s exited %d: %s", py, RACE_MODULE, rc,
             tail[0] ? tail : "(no output)");
  }
  remove_dir(dir);
  return s;
}
