/* gemmtune verify: run a workload with the tuned DB deployed and prove, from a kernel trace, that
 * each tuned key's choice is what the GPU ran; then measure end to end with and without the DB.
 *
 * One traced run: the command runs with the preload shim (LD_PRELOAD, GEMMTUNE_DB, GEMMTUNE_STATS
 * for its per-key counters, GEMMTUNE_LOG for its explanations) and the CUPTI tracer
 * (CUDA_INJECTION64_PATH, GEMMTUNE_TRACE). The counters say which keys the workload issued and how
 * many calls the shim served; the trace says which kernels ran. For each cuBLASLt/cuBLAS row the
 * kernels it runs are found by calibration: a short child process (this binary, hidden mode
 * --calibrate-row) runs only that candidate under the tracer. The verdict logic is gt_engage.
 *
 * Then, unless --no-e2e, interleaved runs with the DB (shim loaded) and without it (shim not
 * loaded), neither traced, timed by wall clock or by the `gemmtune-metric:` lines the command
 * prints. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/gt_db.h"
#include "core/gt_fileio.h"
#include "gt_runtime_paths.h"
#include "verify/gt_engage.h"

static const char k_help[] =
    "Usage: gemmtune verify --db DB [options] -- CMD [ARGS...]\n\n"
    "Runs CMD once with the tuned DB deployed (libgemmtune_preload.so) and a CUPTI kernel trace\n"
    "(libgemmtune_trace.so through CUDA_INJECTION64_PATH), and reports for every key the\n"
    "workload issued:\n"
    "  engaged      every call ran the tuned choice and its kernels ran at least that often\n"
    "               (with CUDA graphs, every replay shows in the trace: runs >= hits)\n"
    "  partly       some calls did, or the kernels ran fewer times than the shim served\n"
    "  not engaged  a row exists but the tuned choice never ran, and why (a row tuned on\n"
    "               another product of this GPU's arch and SM count is refused: 'rows tuned on\n"
    "               NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA H200 (139 GiB): not\n"
    "               applied')\n"
    "  unverified   calls were served but what ran cannot be checked (no trace: CUPTI taken\n"
    "               by another tool, or libcupti missing)\n"
    "  near miss    no row for the key, but a row for the same shape differs in another field\n"
    "               (e.g. sm_count: 132 vs 114)\n"
    "  untuned      no row for the key (with the nearest row), informational\n"
    "and, for each DB row no call matched, 'not issued' with the nearest issued key. Then the\n"
    "share of GPU time in GEMM kernels and the Amdahl bound on the end-to-end gain from the\n"
    "rows' speedups as `tune` measured them, and (unless --no-e2e) end-to-end time with and\n"
    "without the DB; a measured gain above the bound is pointed out (the tuned keys gained more\n"
    "in this workload than in tune's cold, one-GEMM-at-a-time timing).\n\n"
    "  --db DB                the tuned DB to deploy (required)\n"
    "  --runs N               end-to-end runs with and without the DB, interleaved (default 5)\n"
    "  --warmup N             end-to-end warm-up pairs, discarded (default 1)\n"
    "  --no-e2e               skip the end-to-end runs\n"
    "  --timeout S            kill a run of CMD after S seconds (default: no limit)\n"
    "  --keep DIR             keep the logs, counters and traces in DIR (default: a temporary\n"
    "                         folder, removed at the end)\n"
    "  --lib PATH             the preload shim (default: next to gemmtune, or\n"
    "                         GEMMTUNE_PRELOAD_LIB)\n"
    "  --trace-lib PATH       the tracer (default: next to gemmtune, or GEMMTUNE_TRACE_LIB)\n"
    "  --format table|csv|json  the per-key report on stdout (csv/json: summary on stderr)\n"
    "End to end: a command that prints lines 'gemmtune-metric: NAME VALUE UNIT' is measured by\n"
    "the median of its first metric per run (a unit ending in /s is a rate: higher is better);\n"
    "otherwise by wall time. The speedup's interval pairs the quartiles of both sides.\n\n"
    "  --json FILE            also write everything as one JSON object (per-key verdicts,\n"
    "                         GPU time, the Amdahl bound, end to end) for `gemmtune report`\n\n"
    "Examples:\n"
    "  gemmtune verify --db tuned.db -- python3 serve.py --steps 20\n"
    "  gemmtune verify --db tuned.db --runs 9 --json verify.json -- ./bench_step\n"
    "  gemmtune verify --db tuned.db --no-e2e --keep out/ -- ./my_app   # engagement only\n\n"
    "The command's output goes to logs (printed on failure). Exit status: 0 when every tuned key\n"
    "the workload issued engaged and the command succeeded; 1 otherwise, including when\n"
    "verification was impossible (unverified is not a pass); 64 usage; 65 malformed DB; 66\n"
    "missing DB; 69 when the shim is not built; 74 the JSON cannot be written.\n";

enum {
  V_DB = 4000, V_RUNS, V_WARMUP, V_NOE2E, V_FORMAT, V_HELP, V_KEEP, V_LIB, V_TRACELIB, V_TIMEOUT,
  V_JSON
};

/* ---- running the command ------------------------------------------------------------------- */

typedef enum { RUN_TRACED, RUN_WITH, RUN_WITHOUT, RUN_CALIBRATE } run_mode_t;

typedef struct verify_ctx {
  const char *db_abs;
  const char *preload;   /* shim path */
  const char *tracelib;  /* tracer path, NULL when unavailable */
  const char *work;      /* work folder */
  double timeout_s;
} verify_ctx_t;

/* LD_PRELOAD without any gemmtune shim (or torch bridge) the user's environment may already carry, so "without
 * the DB" really is without it. */
static void preload_without_shim(char *out, size_t cap) {
  out[0] = '\0';
  const char *old = getenv("LD_PRELOAD");
  if (!old) return;
  char *copy = strdup(old);
  if (!copy) return;
  size_t o = 0;
  char *save = NULL;
  for (char *t = strtok_r(copy, ": ", &save); t; t = strtok_r(NULL, ": ", &save)) {
    if (strstr(t, "libgemmtune_preload") || strstr(t, "libgemmtune_torchmm")) continue;
    o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s", o ? ":" : "", t);
  }
  free(copy);
}

static void child_env(const verify_ctx_t *v, run_mode_t mode, const char *trace_path) {
  char pre[8192];
  preload_without_shim(pre, sizeof pre);
  unsetenv("GEMMTUNE_CAPTURE");
  unsetenv("GEMMTUNE_STATS");
  unsetenv("GEMMTUNE_TRACE");
  if (mode == RUN_TRACED || mode == RUN_WITH) {
    char with[8400];
    setenv("LD_PRELOAD", gt_runtime_preload_list(v->preload, pre, with, sizeof with), 1);
    setenv("GEMMTUNE_DB", v->db_abs, 1);
  } else {
    if (pre[0]) setenv("LD_PRELOAD", pre, 1);
    else unsetenv("LD_PRELOAD");
    unsetenv("GEMMTUNE_DB");
  }
  if (mode == RUN_TRACED) {
    char stats[4200];
    snprintf(stats, sizeof stats, "%s/stats-%%p.csv", v->work);
    setenv("GEMMTUNE_STATS", stats, 1);
    setenv("GEMMTUNE_LOG", "1", 1);
  } else {
    unsetenv("GEMMTUNE_LOG");
  }
  if ((mode == RUN_TRACED || mode == RUN_CALIBRATE) && v->tracelib && trace_path) {
    setenv("CUDA_INJECTION64_PATH", v->tracelib, 1);
    setenv("GEMMTUNE_TRACE", trace_path, 1);
  }
}

typedef struct run_result {
  int code;        /* exit status, 128+signal, 124 timeout, 127 not runnable */
  double wall_s;
  bool timed_out;
} run_result_t;

/* The running command's process group while it has one of its own (with --timeout), so an
 * interrupted verify does not leave it running. */
static volatile sig_atomic_t g_child_group;

static void on_interrupt(int sig) {
  if (g_child_group > 0) kill(-(pid_t)g_child_group, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Run argv with the mode's environment, stdin from /dev/null, stdout and stderr into log. */
static run_result_t run_cmd(const verify_ctx_t *v, char **argv, run_mode_t mode,
                            const char *trace_path, const char *log) {
  run_result_t r = {127, 0, false};
  bool own_group = v->timeout_s > 0; /* a timeout kills the command and everything it started */
  fflush(NULL);
  double t0 = gt_cli_now();
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "gemmtune verify: fork: %s\n", strerror(errno));
    return r;
  }
  if (pid == 0) {
    child_env(v, mode, trace_path);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in >= 0) dup2(in, 0);
    if (own_group) setpgid(0, 0);
    execvp(argv[0], argv);
    fprintf(stderr, "gemmtune verify: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  if (own_group) {
    setpgid(pid, pid);
    g_child_group = pid;
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
  }
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, v->timeout_s > 0 ? WNOHANG : 0);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (own_group && gt_cli_now() - t0 > v->timeout_s) {
      kill(-pid, SIGKILL);
      waitpid(pid, &st, 0);
      r.timed_out = true;
      break;
    }
    if (v->timeout_s > 0) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  g_child_group = 0;
  r.wall_s = gt_cli_now() - t0;
  r.code = r.timed_out ? 124 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

static void print_tail(const char *log, int lines) {
  FILE *f = fopen(log, "r");
  if (!f) return;
  char **ring = calloc((size_t)lines, sizeof *ring);
  char *line = NULL;
  size_t cap = 0;
  long n = 0;
  while (getline(&line, &cap, f) > 0) {
    free(ring[n % lines]);
    ring[n % lines] = strdup(line);
    n++;
  }
  fclose(f);
  free(line);
  for (long i = n > lines ? n - lines : 0; i < n; i++) fprintf(stderr, "  | %s", ring[i % lines]);
  for (int i = 0; i < lines; i++) free(ring[i]);
  free(ring);
}

/* ---- reading what the run left -------------------------------------------------------------- */

static bool has_prefix_suffix(const char *name, const char *pre, const char *suf) {
  size_t n = strlen(name), p = strlen(pre), s = strlen(suf);
  return n > p + s && strncmp(name, pre, p) == 0 && strcmp(name + n - s, suf) == 0;
}

/* Merge every work/<prefix>*.csv trace file. Returns the number of files read; a malformed file
 * makes the whole trace unverified. */
static int read_traces(const char *work, const char *prefix, gt_trace_t *out) {
  gt_trace_init(out);
  DIR *d = opendir(work);
  if (!d) return 0;
  int files = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!has_prefix_suffix(e->d_name, prefix, ".csv")) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", work, e->d_name);
    gt_trace_t t;
    if (gt_trace_read(path, &t) != GT_OK) {
      gt_trace_set_state(out, GT_TRACE_UNVERIFIED, "unreadable trace: %s", gt_err_msg());
      files++;
      continue;
    }
    gt_trace_merge(out, &t);
    gt_trace_free(&t);
    files++;
  }
  closedir(d);
  return files;
}

static int read_stats(const char *work, gt_shim_stats_t *out, char *why, size_t cap) {
  memset(out, 0, sizeof *out);
  DIR *d = opendir(work);
  if (!d) return 0;
  int files = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!has_prefix_suffix(e->d_name, "stats-", ".csv")) continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", work, e->d_name);
    gt_shim_stats_t s;
    if (gt_shim_stats_read(path, &s) != GT_OK) {
      snprintf(why, cap, "%s", gt_err_msg());
      closedir(d);
      gt_shim_stats_free(out);
      return -1;
    }
    gt_shim_stats_merge(out, &s);
    gt_shim_stats_free(&s);
    files++;
  }
  closedir(d);
  return files;
}

/* The shim's own explanation of a key that did not hit (GEMMTUNE_LOG lines "not used ENTRY DESC:
 * WHY" and "wait ENTRY DESC: WHY"), best effort. */
static void shim_note_for(const char *log, const gt_problem_t *key, char *out, size_t cap) {
  out[0] = '\0';
  char desc[300], pat[320];
  gt_problem_describe(key, desc, sizeof desc);
  snprintf(pat, sizeof pat, " %s: ", desc);
  FILE *f = fopen(log, "r");
  if (!f) return;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t n;
  while ((n = getline(&line, &lcap, f)) > 0) {
    if (strncmp(line, "gemmtune: not used ", 19) != 0 && strncmp(line, "gemmtune: wait ", 15) != 0)
      continue;
    char *p = strstr(line, pat);
    if (!p) continue;
    p += strlen(pat);
    size_t l = strlen(p);
    while (l && (p[l - 1] == '\n' || p[l - 1] == '\r')) p[--l] = '\0';
    char *tail = strstr(p, "; calling ");
    if (tail) *tail = '\0';
    snprintf(out, cap, "%s", p);
    if (strncmp(line, "gemmtune: not used ", 19) == 0) break; /* the stronger statement */
  }
  free(line);
  fclose(f);
}

/* ---- calibration ----------------------------------------------------------------------------- */

/* Hidden mode: run one candidate for KEY alone on the CUDA harness (the parent traces it). The
 * kernels a library runs for a configuration can change with its version, so the calibration
 * refuses to run with another version than the row's. */
static int calibrate_row(int argc, char **argv) {
  if (argc != 6) return gt_cli_usage_error("verify", "--calibrate-row PROVIDER INSTANCE KEY LIB");
  const char *prov = argv[2], *inst = argv[3], *keytext = argv[4], *rowlib = argv[5];
  const gt_harness_ops_t *h = gt_harness_for(GT_BACKEND_CUDA);
  if (!h) return fprintf(stderr, "gemmtune verify: this build has no CUDA harness\n"), EX_UNAVAILABLE_;
  gt_problem_t p;
  gt_problem_init(&p);
  gt_status_t s = gt_problem_parse_key(keytext, &p);
  if (s == GT_OK) s = h->available(0);
  const gt_provider_t *pr = s == GT_OK ? gt_provider_find(prov) : NULL;
  if (s == GT_OK && pr && gt_provider_ready(pr) == GT_OK &&
      !gt_provider_lib_applies(pr, rowlib, NULL, 0)) {
    fprintf(stderr, "gemmtune verify: the row was tuned with %s but this process loads %s: "
                    "run verify with the application's cuBLAS (LD_LIBRARY_PATH)\n", rowlib,
            gt_provider_lib_loaded(pr));
    return EX_UNAVAILABLE_;
  }
  gt_candidate_t c;
  if (s == GT_OK) s = gt_provider_candidate_from_name(prov, inst, &p, &c);
  gt_measure_opts_t mo;
  gt_measure_opts_init(&mo);
  mo.warm = true; /* the kernels are what matters, not cold timing: keep the buffers small */
  struct gt_bench *b = NULL;
  struct gt_loaded *l = NULL;
  if (s == GT_OK) s = h->open(&p, &mo, &b);
  if (s == GT_OK) s = h->load(b, &c, &l);
  double us = 0;
  for (int i = 0; i < 2 && s == GT_OK; i++) s = h->time(b, l, 8, &us);
  if (s != GT_OK) fprintf(stderr, "gemmtune verify: calibrating %s/%s: %s\n", prov, inst, gt_err_msg());
  else printf("calibrated %s/%s: %.3f us per call\n", prov, inst, us);
  if (l) h->unload(l);
  if (b) h->close(b);
  return s == GT_OK ? 0 : gt_status_exit_code(s);
}

typedef struct calib_cache {
  char provider[32], instance[GT_NAME_MAX], key[1024];
  gt_kset_t set;
  bool ok;
  char why[256];
} calib_cache_t;

static void calibrate_item(const verify_ctx_t *v, gt_engage_item_t *it, calib_cache_t *cache,
                           size_t *ncache, size_t cap) {
  const gt_db_row_t *row = it->row;
  if (gt_engage_expected_from_row(row, &it->expected)) {
    it->expected_known = true;
    return;
  }
  char key[1024];
  gt_problem_format_key(&row->key, key, sizeof key);
  calib_cache_t *c = NULL;
  for (size_t i = 0; i < *ncache && !c; i++)
    if (!strcmp(cache[i].provider, row->provider) && !strcmp(cache[i].instance, row->instance) &&
        !strcmp(cache[i].key, key))
      c = &cache[i];
  if (!c) {
    if (*ncache == cap) {
      snprintf(it->expected_why, sizeof it->expected_why, "too many rows to calibrate");
      return;
    }
    c = &cache[(*ncache)++];
    memset(c, 0, sizeof *c);
    snprintf(c->provider, sizeof c->provider, "%s", row->provider);
    snprintf(c->instance, sizeof c->instance, "%s", row->instance);
    snprintf(c->key, sizeof c->key, "%s", key);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char tpath[4400], log[4400];
    snprintf(tpath, sizeof tpath, "%s/calib-%zu.csv", v->work, *ncache);
    snprintf(log, sizeof log, "%s/calib-%zu.log", v->work, *ncache);
    char rowlib[64];
    snprintf(rowlib, sizeof rowlib, "%s", row->lib);
    char *argv[] = {exe, "verify", "--calibrate-row", c->provider, c->instance, c->key, rowlib,
                    NULL};
    verify_ctx_t cv = *v;
    if (cv.timeout_s <= 0 || cv.timeout_s > 120) cv.timeout_s = 120;
    run_result_t r = run_cmd(&cv, argv, RUN_CALIBRATE, tpath, log);
    gt_trace_t t;
    gt_trace_init(&t);
    if (r.code != 0) {
      FILE *f = fopen(log, "r");
      char last[200] = "";
      if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
          if (strstr(line, "gemmtune verify:")) snprintf(last, sizeof last, "%s", line);
        fclose(f);
      }
      size_t l = strlen(last);
      while (l && last[l - 1] == '\n') last[--l] = '\0';
      snprintf(c->why, sizeof c->why, "calibration run exited %d%s%s", r.code, last[0] ? ": " : "",
               last);
    } else if (access(tpath, R_OK) != 0) {
      snprintf(c->why, sizeof c->why, "calibration run wrote no trace");
    } else if (gt_trace_read(tpath, &t) != GT_OK) {
      snprintf(c->why, sizeof c->why, "calibration trace: %s", gt_err_msg());
    } else if (gt_engage_expected_from_trace(&t, c->provider, &c->set) != GT_OK) {
      snprintf(c->why, sizeof c->why, "%s", gt_err_msg());
    } else {
      c->ok = true;
    }
    gt_trace_free(&t);
  }
  if (!c->ok) {
    snprintf(it->expected_why, sizeof it->expected_why, "%s", c->why);
    return;
  }
  for (int i = 0; i < c->set.n; i++) gt_kset_add(&it->expected, c->set.names[i]);
  it->expected_known = true;
}

/* ---- end to end ------------------------------------------------------------------------------ */

typedef struct metric_pick {
  char name[64], unit[32];
  bool chosen;
} metric_pick_t;

/* The run's value of the chosen metric (median of its lines); NAN when it printed none. The
 * first metric seen in any run is the one chosen. */
static double run_metric(const char *log, metric_pick_t *m) {
  FILE *f = fopen(log, "r");
  if (!f) return NAN;
  double vals[4096];
  size_t n = 0;
  char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    char name[64], unit[32];
    double v;
    if (!gt_engage_parse_metric(line, name, sizeof name, &v, unit, sizeof unit)) continue;
    if (!m->chosen) {
      snprintf(m->name, sizeof m->name, "%s", name);
      snprintf(m->unit, sizeof m->unit, "%s", unit);
      m->chosen = true;
    }
    if (strcmp(name, m->name) == 0 && n < sizeof vals / sizeof vals[0]) vals[n++] = v;
  }
  free(line);
  fclose(f);
  return n ? gt_stats_median(vals, n) : NAN;
}

typedef struct e2e_out {
  bool ran, ok;
  bool by_metric;
  metric_pick_t metric;
  gt_e2e_t e;
  int failed_runs;
  char why[256];
} e2e_out_t;

static void run_e2e(const verify_ctx_t *v, char **cmd, int runs, int warmup, e2e_out_t *o) {
  memset(o, 0, sizeof *o);
  o->ran = true;
  int total = 2 * (runs + warmup);
  double *wall[2], *met[2];
  for (int s = 0; s < 2; s++) {
    wall[s] = calloc((size_t)runs + 1, sizeof **wall);
    met[s] = calloc((size_t)runs + 1, sizeof **met);
  }
  size_t n[2] = {0, 0};
  bool all_metric = true;
  double t0 = gt_cli_now();
  for (int i = 0; i < runs + warmup; i++) {
    /* ABBA order: neither side always runs first (caches, clocks, page cache warm up). */
    for (int j = 0; j < 2; j++) {
      int side = (i % 2 == 0) ? j : 1 - j; /* 0 = with the DB, 1 = without */
      char log[4400];
      snprintf(log, sizeof log, "%s/e2e-%d-%s.log", v->work, i, side == 0 ? "with" : "without");
      gt_cli_progress("verify", "end to end", (size_t)(2 * i + j + 1), (size_t)total,
                      gt_cli_now() - t0);
      run_result_t r = run_cmd(v, cmd, side == 0 ? RUN_WITH : RUN_WITHOUT, NULL, log);
      if (r.code != 0) {
        o->failed_runs++;
        gt_cli_progress_clear();
        fprintf(stderr, "gemmtune verify: end-to-end run %d %s the DB exited %d; its output:\n",
                i + 1, side == 0 ? "with" : "without", r.code);
        print_tail(log, 10);
        continue;
      }
      double m = run_metric(log, &o->metric);
      if (i < warmup) continue;
      wall[side][n[side]] = r.wall_s;
      met[side][n[side]] = m;
      if (!isfinite(m)) all_metric = false;
      n[side]++;
    }
  }
  gt_cli_progress_clear();
  o->by_metric = o->metric.chosen && all_metric;
  bool higher = o->by_metric && gt_engage_metric_higher_better(o->metric.unit);
  gt_status_t s = o->by_metric ? gt_engage_e2e(met[0], n[0], met[1], n[1], higher, &o->e)
                               : gt_engage_e2e(wall[0], n[0], wall[1], n[1], false, &o->e);
  o->ok = s == GT_OK;
  if (!o->ok) snprintf(o->why, sizeof o->why, "%s", gt_err_msg());
  for (int sd = 0; sd < 2; sd++) {
    free(wall[sd]);
    free(met[sd]);
  }
}

/* ---- report ---------------------------------------------------------------------------------- */

static void fmt_us(char *b, size_t n, double ns) {
  if (ns <= 0) snprintf(b, n, "-");
  else snprintf(b, n, "%.1f", ns / 1e3);
}

static void print_items_table(const gt_engage_report_t *rep, const gt_trace_t *trace) {
  for (size_t i = 0; i < rep->n; i++) {
    const gt_engage_item_t *it = &rep->items[i];
    char desc[300];
    gt_problem_describe(&it->key, desc, sizeof desc);
    char tag[32];
    snprintf(tag, sizeof tag, "[%s]", gt_engage_verdict_name(it->verdict));
    printf("%-14s %s", tag, desc);
    if (it->issued) printf("  via %s", it->entry[0] ? it->entry : "?");
    printf("\n");
    if (it->issued)
      printf("%-14s calls %" PRIu64 ", hits %" PRIu64 ", shim decision %s\n", "", it->calls,
             it->hits, gt_shim_decision_name(it->decision));
    if (it->row)
      printf("%-14s row: %s/%s (%s), %.3f us vs baseline %.3f us = %.3fx\n", "", it->row->provider,
             it->row->instance, it->row->lib, it->row->time_us, it->row->baseline_us,
             it->row->speedup);
    if (it->issued && it->row && it->expected_known) {
      for (int e = 0; e < it->expected.n; e++) {
        gt_trace_kernel_t sum;
        const gt_trace_kernel_t *k =
            trace ? gt_engage_trace_match(trace, it->expected.names[e], &sum) : NULL;
        if (k)
          printf("%-14s expected kernel %s: ran %" PRIu64 " times (%" PRIu64
                 " from graphs), %.1f us total\n",
                 "", it->expected.names[e], k->calls, k->graph_launches, (double)k->total_ns / 1e3);
        else
          printf("%-14s expected kernel %s: %s\n", "", it->expected.names[e],
                 rep->trace_ok ? "never ran" : "(no trace)");
      }
    }
    printf("%-14s %s\n\n", "", it->why);
  }
}

static void print_items_fmt(const gt_engage_report_t *rep, gt_fmt_t fmt) {
  static const char *const names[] = {"verdict", "calls", "hits", "kernel_runs", "gpu_us",
                                      "speedup", "entry", "key", "provider", "instance",
                                      "expected", "why"};
  static const bool num[] = {0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  gt_table_t t;
  gt_table_begin(&t, stdout, fmt, 12, names, num);
  for (size_t i = 0; i < rep->n; i++) {
    const gt_engage_item_t *it = &rep->items[i];
    char calls[32] = "-", hits[32] = "-", runs[32] = "-", gpu[32], sp[32] = "-", key[1024],
         exp[1200] = "";
    if (it->issued) {
      snprintf(calls, sizeof calls, "%" PRIu64, it->calls);
      snprintf(hits, sizeof hits, "%" PRIu64, it->hits);
    }
    if (it->kernel_runs) snprintf(runs, sizeof runs, "%" PRIu64, it->kernel_runs);
    fmt_us(gpu, sizeof gpu, it->gpu_ns);
    if (it->row) snprintf(sp, sizeof sp, "%.4g", it->row->speedup);
    gt_problem_format_key(&it->key, key, sizeof key);
    gt_kset_str(&it->expected, exp, sizeof exp);
    const char *cells[] = {gt_engage_verdict_name(it->verdict), calls, hits, runs, gpu, sp,
                           it->entry, key, it->row ? it->row->provider : "",
                           it->row ? it->row->instance : "", exp, it->why};
    gt_table_row(&t, cells);
  }
  gt_table_end(&t);
}

/* GEMM kernels the trace shows that no engaged key accounts for (the default path still running,
 * or GEMMs the DB has no row for), largest first. */
static void print_other_gemms(FILE *f, const gt_engage_report_t *rep, const gt_trace_t *trace) {
  const gt_trace_kernel_t *top[5] = {0};
  for (size_t k = 0; k < trace->n; k++) {
    const gt_trace_kernel_t *tk = &trace->k[k];
    if (!gt_engage_is_gemm_name(tk->name)) continue;
    bool expected = false;
    for (size_t i = 0; i < rep->n && !expected; i++)
      expected = rep->items[i].expected_known && gt_kset_matches(&rep->items[i].expected, tk->name);
    if (expected) continue;
    for (int j = 0; j < 5; j++) {
      if (!top[j] || tk->total_ns > top[j]->total_ns) {
        memmove(&top[j + 1], &top[j], (size_t)(4 - j) * sizeof top[0]);
        top[j] = tk;
        break;
      }
    }
  }
  if (!top[0]) return;
  fprintf(f, "GEMM kernels not from a tuned row (largest first):\n");
  for (int j = 0; j < 5 && top[j]; j++)
    fprintf(f, "  %5.1f%%  %8" PRIu64 " launches  %s\n",
            rep->total_ns > 0 ? 100.0 * (double)top[j]->total_ns / rep->total_ns : 0,
            top[j]->calls, top[j]->name);
}

static void rm_work(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

/* ---- the command, phase by phase ------------------------------------------------------------- */

typedef struct verify_args {
  const char *db_path, *keep, *lib, *tlib, *json;
  int runs, warmup;
  bool e2e;
  double timeout_s;
  gt_fmt_t fmt;
  char **cmd; /* CMD [ARGS...], NULL-terminated */
} verify_args_t;

/* Parse the options into a. Returns -1 to go on, else the exit status (--help: 0). */
static int parse_args(int argc, char **argv, verify_args_t *a) {
  static const struct option opts[] = {{"db", required_argument, 0, V_DB},
                                       {"runs", required_argument, 0, V_RUNS},
                                       {"warmup", required_argument, 0, V_WARMUP},
                                       {"no-e2e", no_argument, 0, V_NOE2E},
                                       {"format", required_argument, 0, V_FORMAT},
                                       {"help", no_argument, 0, V_HELP},
                                       {"keep", required_argument, 0, V_KEEP},
                                       {"lib", required_argument, 0, V_LIB},
                                       {"trace-lib", required_argument, 0, V_TRACELIB},
                                       {"timeout", required_argument, 0, V_TIMEOUT},
                                       {"json", required_argument, 0, V_JSON},
                                       {0, 0, 0, 0}};
  *a = (verify_args_t){.runs = 5, .warmup = 1, .e2e = true, .fmt = GT_FMT_TABLE};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
    char *end = NULL;
    switch (c) {
      case 'h':
      case V_HELP: printf("%s", k_help); return 0;
      case V_DB: a->db_path = optarg; break;
      case V_RUNS:
      case V_WARMUP: {
        long x = strtol(optarg, &end, 10);
        if (!*optarg || *end || x < (c == V_RUNS ? 1 : 0) || x > 1000)
          return gt_cli_usage_error("verify", "%s wants an integer %s, got '%s'",
                                    c == V_RUNS ? "--runs" : "--warmup",
                                    c == V_RUNS ? "1..1000" : "0..1000", optarg);
        if (c == V_RUNS) a->runs = (int)x;
        else a->warmup = (int)x;
        break;
      }
      case V_TIMEOUT:
        a->timeout_s = strtod(optarg, &end);
        if (!*optarg || *end || !(a->timeout_s > 0))
          return gt_cli_usage_error("verify", "--timeout wants seconds > 0, got '%s'", optarg);
        break;
      case V_NOE2E: a->e2e = false; break;
      case V_FORMAT:
        if (gt_cli_parse_format("verify", optarg, &a->fmt)) return EX_USAGE_;
        break;
      case V_KEEP: a->keep = optarg; break;
      case V_LIB: a->lib = optarg; break;
      case V_TRACELIB: a->tlib = optarg; break;
      case V_JSON: a->json = optarg; break;
      default: return gt_cli_usage_error("verify", "unknown option");
    }
  }
  if (!a->db_path)
    return gt_cli_usage_error("verify", "--db DB is required (the tuned DB to deploy)");
  if (optind >= argc)
    return gt_cli_usage_error("verify", "expected -- CMD [ARGS...] after the options");
  a->cmd = argv + optind;
  return -1;
}

/* The shim (required: false when it is missing, said on stderr) and the tracer (optional: NULL
 * in *tlib with the reason in unavail when it is missing or CUDA injection is taken). */
static bool find_libs(const char **lib, const char **tlib, char *libbuf, char *tlibbuf,
                      size_t bufcap, char *unavail, size_t ucap) {
  if (!*lib) *lib = gt_runtime_find_lib("libgemmtune_preload.so", "GEMMTUNE_PRELOAD_LIB", libbuf,
                                        bufcap);
  if (!*lib || access(*lib, R_OK) != 0) {
    fprintf(stderr, "gemmtune verify: cannot find libgemmtune_preload.so (built only with CUDA; "
                    "set GEMMTUNE_PRELOAD_LIB or --lib)\n");
    return false;
  }
  unavail[0] = '\0';
  if (!*tlib) *tlib = gt_runtime_find_lib("libgemmtune_trace.so", "GEMMTUNE_TRACE_LIB", tlibbuf,
                                          bufcap);
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  if (!*tlib || access(*tlib, R_OK) != 0) {
    snprintf(unavail, ucap,
             "libgemmtune_trace.so was not found (set GEMMTUNE_TRACE_LIB or --trace-lib)");
    *tlib = NULL;
  } else if (inj && *inj) {
    snprintf(unavail, ucap,
             "CUDA_INJECTION64_PATH is already set (%.400s): another tool injects into CUDA, so "
             "the tracer cannot",
             inj);
    *tlib = NULL;
  }
  return true;
}

/* The work folder: --keep DIR (emptied of an earlier run's counters and traces, which must not
 * pass for this run's) or a fresh temporary one. Returns 0 or the exit status. */
static int make_work(const char *keep, char *work, size_t cap) {
  if (!keep) {
    const char *tmp = getenv("TMPDIR");
    snprintf(work, cap, "%s/gemmtune-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(work)) {
      fprintf(stderr, "gemmtune verify: cannot create a temporary folder: %s\n", strerror(errno));
      return EX_IOERR_;
    }
    return 0;
  }
  if (mkdir(keep, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "gemmtune verify: cannot create %s: %s\n", keep, strerror(errno));
    return EX_IOERR_;
  }
  if (!realpath(keep, work)) snprintf(work, cap, "%s", keep);
  DIR *d = opendir(work);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (has_prefix_suffix(e->d_name, "stats-", ".csv") ||
          has_prefix_suffix(e->d_name, "trace-", ".csv") ||
          has_prefix_suffix(e->d_name, "calib-", ".csv")) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", work, e->d_name);
        unlink(p);
      }
    closedir(d);
  }
  return 0;
}

/* What the traced run left: the shim's counters and the kernel trace. */
typedef struct traced {
  run_result_t run;
  char log[4400];
  gt_shim_stats_t stats;
  bool stats_ok;
  char stats_why[600];
  gt_trace_t trace; /* state says whether it can be trusted, and why not */
} traced_t;

/* Run the command once with the shim and the tracer, and read back what it left. */
static void traced_run(const verify_ctx_t *v, const verify_args_t *a, const gt_db_t *db,
                       const char *trace_unavail, FILE *sf, traced_t *t) {
  memset(t, 0, sizeof *t);
  char cmdline[1024] = "";
  for (char **arg = a->cmd; *arg; arg++) {
    size_t l = strlen(cmdline);
    snprintf(cmdline + l, sizeof cmdline - l, "%s%s", l ? " " : "", *arg);
  }
  fprintf(sf, "verify: DB %s (%zu rows), command: %s\n", a->db_path, db->n, cmdline);
  char tpath[4400];
  snprintf(tpath, sizeof tpath, "%s/trace-%%p.csv", v->work);
  snprintf(t->log, sizeof t->log, "%s/traced.log", v->work);
  gt_cli_progress("verify", "traced run", 0, 0, 0);
  t->run = run_cmd(v, a->cmd, RUN_TRACED, v->tracelib ? tpath : NULL, t->log);
  gt_cli_progress_clear();
  if (t->run.code != 0) {
    if (t->run.timed_out)
      fprintf(stderr, "gemmtune verify: the command timed out after %.0f s in the traced run; "
                      "its output:\n", a->timeout_s);
    else
      fprintf(stderr, "gemmtune verify: the command exited %d in the traced run; its output:\n",
              t->run.code);
    print_tail(t->log, 20);
  }

  int nstats = read_stats(v->work, &t->stats, t->stats_why, sizeof t->stats_why);
  t->stats_ok = nstats > 0;
  if (nstats == 0)
    snprintf(t->stats_why, sizeof t->stats_why,
             "the shim wrote no GEMMTUNE_STATS file: the command never called cuBLAS through it, or "
             "the shim does not support GEMMTUNE_STATS");
  gt_trace_init(&t->trace);
  int ntrace = v->tracelib ? read_traces(v->work, "trace-", &t->trace) : 0;
  if (!v->tracelib)
    gt_trace_set_state(&t->trace, GT_TRACE_UNVERIFIED, "%s", trace_unavail);
  else if (ntrace == 0)
    gt_trace_set_state(&t->trace, GT_TRACE_UNVERIFIED, "%s",
                       "the tracer wrote no trace: the command never initialised CUDA, or the "
                       "driver could not load libgemmtune_trace.so");
}

static void print_traced(FILE *sf, const traced_t *t) {
  const gt_trace_t *trace = &t->trace;
  fprintf(sf, "traced run: exit %d in %.1f s; shim counters: %s; kernel trace: %s", t->run.code,
          t->run.wall_s, t->stats_ok ? "read" : "missing", gt_trace_state_name(trace->state));
  if (trace->state == GT_TRACE_OK)
    fprintf(sf, ", %" PRIu64 " kernel launches from %d process%s", trace->records, trace->files,
            trace->files == 1 ? "" : "es");
  else
    fprintf(sf, " (%s)", trace->reason);
  fprintf(sf, "\n");
  if (t->stats_ok)
    for (size_t i = 0; i < t->stats.nu; i++)
      fprintf(sf, "passed through without a key (the shim did not handle these calls): %" PRIu64
                  " calls of %s\n",
              t->stats.u[i].calls, t->stats.u[i].entry);
  if (trace->dropped)
    fprintf(stderr, "gemmtune verify: warning: CUPTI dropped %" PRIu64 " kernel records; counts "
                    "are lower bounds\n", trace->dropped);
}

/* Expected kernels for every issued key with a row that the shim served (calibrating the rows
 * whose provider picks its kernels at run time), and the shim's note for keys that missed. */
static void find_expected(const verify_ctx_t *v, const gt_db_t *db, const traced_t *t,
                          gt_engage_report_t *rep) {
  calib_cache_t *cache = calloc(db->n + 1, sizeof *cache);
  size_t ncache = 0;
  for (size_t i = 0; i < rep->n; i++) {
    gt_engage_item_t *it = &rep->items[i];
    if (!it->issued || !it->row) continue;
    if (it->hits < it->calls) shim_note_for(t->log, &it->key, it->shim_note, sizeof it->shim_note);
    if (it->hits == 0) continue;
    if (t->trace.state != GT_TRACE_OK) {
      snprintf(it->expected_why, sizeof it->expected_why, "not calibrated without a trace");
      continue;
    }
    if (!cache) {
      snprintf(it->expected_why, sizeof it->expected_why, "out of memory");
      continue;
    }
    gt_cli_progress("verify", "calibrate", ncache + 1, 0, 0);
    calibrate_item(v, it, cache, &ncache, db->n + 1);
  }
  gt_cli_progress_clear();
  for (size_t i = 0; i < ncache; i++) gt_kset_free(&cache[i].set);
  free(cache);
}

/* GPU time shares and the Amdahl bound on what the DB can gain. */
static void print_gpu_time(FILE *sf, const gt_engage_report_t *rep, const gt_trace_t *trace) {
  if (!rep->trace_ok || rep->total_ns <= 0) return;
  fprintf(sf, "GPU kernel time (traced run, DB in place): %.3f ms; GEMM kernels %.1f%%",
          rep->total_ns / 1e6, 100 * rep->gemm_share);
  if (rep->tuned_ns > 0)
    fprintf(sf, "; tuned keys %.1f%% (their rows' speedup %.3fx, weighted by GPU time)",
            100 * rep->tuned_ns / rep->total_ns, rep->tuned_speedup);
  fprintf(sf, "\n");
  if (rep->tuned_ns > 0)
    fprintf(sf, "Amdahl bound: the DB can make the GPU work at most %.3fx faster if each tuned "
                "key gains here what `tune` measured: 1 / (1 - %.3f x (1 - 1/%.3f)), where "
                "%.1f%% is the tuned keys' share of GPU time had they run the baseline\n",
            rep->amdahl_gain, rep->tuned_share_base, rep->tuned_speedup,
            100 * rep->tuned_share_base);
  else
    fprintf(sf, "Amdahl bound: no engaged key, so the DB gains nothing (1.000x)\n");
  if (rep->gemm_ceiling > 0)
    fprintf(sf, "Ceiling: even GEMMs that took no time would give at most %.2fx\n",
            rep->gemm_ceiling);
  print_other_gemms(sf, rep, trace);
}

/* End to end with and without the DB, against the Amdahl bound. */
static void print_e2e(FILE *sf, const e2e_out_t *eo, const gt_engage_report_t *rep) {
  if (!eo->ok) {
    fprintf(sf, "End to end: not measured: %s\n", eo->why);
    return;
  }
  const gt_e2e_t *e = &eo->e;
  const char *what = eo->by_metric ? eo->metric.name : "wall time";
  const char *unit = eo->by_metric ? eo->metric.unit : "s";
  fprintf(sf, "End to end (%zu runs each, interleaved, %s in %s%s):\n", e->n_with, what, unit,
          eo->by_metric ? " from 'gemmtune-metric:' lines" : "");
  fprintf(sf, "  with the DB:     %.6g  (quartiles %.6g .. %.6g)\n", e->med_with, e->q25_with,
          e->q75_with);
  fprintf(sf, "  without the DB:  %.6g  (quartiles %.6g .. %.6g)\n", e->med_without,
          e->q25_without, e->q75_without);
  fprintf(sf, "  speedup:         %.3fx  (%.3fx .. %.3fx from the quartiles)%s\n", e->speedup,
          e->speedup_lo, e->speedup_hi,
          e->significant ? (e->speedup > 1 ? ": faster" : ": slower") : ": within the noise");
  if (rep->amdahl_gain > 0 && rep->tuned_ns > 0) {
    fprintf(sf, "  (the Amdahl bound above is %.3fx)\n", rep->amdahl_gain);
    // A bound is only as good as its inputs: say so when the measurement beats it.
    const double lo = e->speedup_lo;
    if (e->significant && lo > rep->amdahl_gain)
      fprintf(sf, "  above the bound even at the low quartile (%.3fx > %.3fx): the tuned keys "
                  "gained more in this workload than `tune` measured them to (the bound "
                  "takes tune's cold, one-GEMM-at-a-time speedups and counts kernel time "
                  "only, not the time between kernels)\n",
              lo, rep->amdahl_gain);
  }
}

/* The verdict line and the exit status: the engagement verdict, failed by a failing command. */
static int print_outcome(FILE *sf, const gt_engage_report_t *rep, const traced_t *t,
                         const e2e_out_t *eo, double timeout_s) {
  int code = rep->pass ? 0 : 1;
  fprintf(sf, "\n%s\n", rep->summary);
  if (t->run.code != 0) {
    if (t->run.timed_out)
      fprintf(sf, "FAIL: the command timed out after %.0f s in the traced run\n", timeout_s);
    else
      fprintf(sf, "FAIL: the command itself exited %d in the traced run\n", t->run.code);
    code = 1;
  }
  if (eo->failed_runs) {
    fprintf(sf, "FAIL: %d end-to-end run%s of the command failed\n", eo->failed_runs,
            eo->failed_runs == 1 ? "" : "s");
    code = 1;
  }
  return code;
}

/* ---- the JSON record ---------------------------------------------------------------------------- */

static void js_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", (unsigned char)*s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

/* A number, or null when it is not finite (JSON has no NaN). */
static void js_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

static void json_items(FILE *f, const gt_engage_report_t *rep) {
  fprintf(f, "  \"items\": [");
  for (size_t i = 0; i < rep->n; i++) {
    const gt_engage_item_t *it = &rep->items[i];
    char key[1024], exp[1200] = "";
    gt_problem_format_key(&it->key, key, sizeof key);
    gt_kset_str(&it->expected, exp, sizeof exp);
    fprintf(f, "%s\n    {\"verdict\": ", i ? "," : "");
    js_str(f, gt_engage_verdict_name(it->verdict));
    fprintf(f, ", \"issued\": %s, \"calls\": %" PRIu64 ", \"hits\": %" PRIu64
               ", \"kernel_runs\": %" PRIu64 ", \"gpu_us\": ",
            it->issued ? "true" : "false", it->calls, it->hits, it->kernel_runs);
    js_num(f, it->gpu_ns / 1e3);
    fprintf(f, ", \"entry\": ");
    js_str(f, it->entry);
    fprintf(f, ", \"key\": ");
    js_str(f, key);
    fprintf(f, ", \"provider\": ");
    js_str(f, it->row ? it->row->provider : "");
    fprintf(f, ", \"instance\": ");
    js_str(f, it->row ? it->row->instance : "");
    fprintf(f, ", \"speedup\": ");
    js_num(f, it->row ? it->row->speedup : NAN);
    fprintf(f, ", \"expected\": ");
    js_str(f, exp);
    fprintf(f, ", \"why\": ");
    js_str(f, it->why);
    fputc('}', f);
  }
  fprintf(f, "%s],\n", rep->n ? "\n  " : "");
}

static void json_e2e(FILE *f, const e2e_out_t *eo) {
  fprintf(f, "  \"e2e\": {\"measured\": %s", eo->ok ? "true" : "false");
  if (!eo->ok) {
    fprintf(f, ", \"why\": ");
    js_str(f, eo->ran ? eo->why : "not run (--no-e2e)");
    fprintf(f, "},\n");
    return;
  }
  const gt_e2e_t *e = &eo->e;
  fprintf(f, ", \"by\": ");
  js_str(f, eo->by_metric ? eo->metric.name : "wall time");
  fprintf(f, ", \"unit\": ");
  js_str(f, eo->by_metric ? eo->metric.unit : "s");
  fprintf(f, ", \"runs\": %zu", e->n_with);
  const struct { const char *name; double v; } nums[] = {
      {"with", e->med_with},         {"without", e->med_without}, {"q25_with", e->q25_with},
      {"q75_with", e->q75_with},     {"q25_without", e->q25_without},
      {"q75_without", e->q75_without}, {"speedup", e->speedup},   {"speedup_lo", e->speedup_lo},
      {"speedup_hi", e->speedup_hi}};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    fprintf(f, ", \"%s\": ", nums[i].name);
    js_num(f, nums[i].v);
  }
  fprintf(f, ", \"significant\": %s, \"failed_runs\": %d},\n",
          e->significant ? "true" : "false", eo->failed_runs);
}

/* Everything verify established, as one JSON object in path (written atomically), for `gemmtune
 * report` and for scripts. Returns 0 or the exit status of a failed write. */
static int write_json(const char *path, const verify_args_t *a, const gt_engage_report_t *rep,
                      const traced_t *t, const e2e_out_t *eo, int code) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return fprintf(stderr, "gemmtune verify: out of memory\n"), EX_SOFTWARE_;
  fprintf(f, "{\n  \"format\": \"gemmtune-verify 1\",\n  \"db\": ");
  js_str(f, a->db_path);
  fprintf(f, ",\n  \"command\": [");
  for (char **arg = a->cmd; *arg; arg++) {
    if (arg != a->cmd) fputs(", ", f);
    js_str(f, *arg);
  }
  fprintf(f, "],\n  \"traced_run\": {\"exit\": %d, \"wall_s\": ", t->run.code);
  js_num(f, t->run.wall_s);
  fprintf(f, ", \"trace\": ");
  js_str(f, gt_trace_state_name(t->trace.state));
  fprintf(f, ", \"trace_reason\": ");
  js_str(f, t->trace.state == GT_TRACE_OK ? "" : t->trace.reason);
  fprintf(f, ", \"kernel_launches\": %" PRIu64 "},\n", t->trace.records);
  json_items(f, rep);
  fprintf(f, "  \"counts\": {");
  for (int v = 0; v < GT_ENGAGE__COUNT; v++) {
    fprintf(f, "%s", v ? ", " : "");
    js_str(f, gt_engage_verdict_name((gt_engage_verdict_t)v));
    fprintf(f, ": %zu", rep->count[v]);
  }
  fprintf(f, "},\n  \"gpu\": {\"trace_ok\": %s, \"total_ms\": ", rep->trace_ok ? "true" : "false");
  js_num(f, rep->total_ns / 1e6);
  const struct { const char *name; double v; } g[] = {
      {"gemm_share", rep->gemm_share},
      {"tuned_share", rep->total_ns > 0 ? rep->tuned_ns / rep->total_ns : 0},
      {"tuned_speedup", rep->tuned_speedup},
      {"tuned_share_base", rep->tuned_share_base},
      {"amdahl_bound", rep->tuned_ns > 0 ? rep->amdahl_gain : 1.0},
      {"gemm_ceiling", rep->gemm_ceiling}};
  for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
    fprintf(f, ", \"%s\": ", g[i].name);
    js_num(f, g[i].v);
  }
  fprintf(f, "},\n");
  json_e2e(f, eo);
  fprintf(f, "  \"pass\": %s,\n  \"exit\": %d,\n  \"summary\": ", code == 0 ? "true" : "false",
          code);
  js_str(f, rep->summary);
  fprintf(f, "\n}\n");
  fclose(f);
  gt_status_t s = gt_file_write_atomic(path, buf, len);
  free(buf);
  if (s != GT_OK) return fprintf(stderr, "gemmtune verify: %s\n", gt_err_msg()), EX_IOERR_;
  return 0;
}

/* Rows tuned on another product of this device's arch and SM count: the runtime refuses them,
 * so their keys cannot engage here, and the verdict says why. */
static void mark_refused(gt_engage_report_t *rep, const gt_db_device_t *here) {
  for (size_t i = 0; i < rep->n; i++) {
    gt_engage_item_t *it = &rep->items[i];
    if (it->row && gt_db_row_fit(it->row, here) == GT_DB_FIT_OTHER)
      gt_db_refusal_str(it->row, here, it->refused, sizeof it->refused);
  }
}

/* Traced run, verdicts, GPU time, end to end, outcome: everything after the set-up. */
static int verify_in(const verify_ctx_t *v, const verify_args_t *a, const gt_db_t *db,
                     const gt_db_device_t *here, const char *trace_unavail) {
  FILE *sf = a->fmt == GT_FMT_TABLE ? stdout : stderr;
  traced_t t;
  traced_run(v, a, db, trace_unavail, sf, &t);
  print_traced(sf, &t);
  gt_engage_report_t rep;
  gt_status_t s = gt_engage_build(db, t.stats_ok ? &t.stats : NULL, &rep);
  if (s != GT_OK) {
    gt_trace_free(&t.trace);
    gt_shim_stats_free(&t.stats);
    return gt_cli_fail("verify", s);
  }
  find_expected(v, db, &t, &rep);
  mark_refused(&rep, here);
  gt_engage_judge(db, &t.trace, t.stats_ok, t.stats_why, &rep);
  if (a->fmt == GT_FMT_TABLE) {
    printf("\n");
    print_items_table(&rep, &t.trace);
  } else {
    print_items_fmt(&rep, a->fmt);
  }
  print_gpu_time(sf, &rep, &t.trace);
  e2e_out_t eo;
  memset(&eo, 0, sizeof eo);
  if (a->e2e) {
    run_e2e(v, a->cmd, a->runs, a->warmup, &eo);
    print_e2e(sf, &eo, &rep);
  }
  int code = print_outcome(sf, &rep, &t, &eo, a->timeout_s);
  if (a->json) {
    int jc = write_json(a->json, a, &rep, &t, &eo, code);
    if (jc) code = jc;
    else fprintf(sf, "JSON: %s\n", a->json);
  }
  if (a->keep) fprintf(sf, "logs, counters and traces: %s\n", v->work);
  gt_engage_report_free(&rep);
  gt_trace_free(&t.trace);
  gt_shim_stats_free(&t.stats);
  return code;
}

/* The variables verify sets for its runs replace the user's; and the shim must reach CMD. */
static void warn_env(const verify_args_t *a, const char *db_abs) {
  gt_cli_env_replaced("verify", "GEMMTUNE_DB", db_abs, "verify sets it to --db in its runs "
                      "with the DB and clears it in those without");
  static const char *const set_per_run[] = {"GEMMTUNE_CAPTURE", "GEMMTUNE_STATS",
                                            "GEMMTUNE_TRACE", "GEMMTUNE_LOG"};
  for (size_t i = 0; i < sizeof set_per_run / sizeof set_per_run[0]; i++)
    gt_cli_env_replaced("verify", set_per_run[i], NULL, "verify sets or clears it for each run");
  gt_cli_preload_check("verify", a->lib, a->cmd);
}

int gt_cmd_verify(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--calibrate-row") == 0) return calibrate_row(argc, argv);
  verify_args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;

  if ((rc = gt_cli_need_file("verify", NULL, a.db_path)) != 0) return rc;
  gt_db_t db;
  gt_db_init(&db);
  gt_status_t s = gt_db_read(a.db_path, &db);
  if (s != GT_OK) return gt_cli_fail("verify", s);
  gt_cli_use_db_libs(&db); /* calibrate with the cuBLAS the rows were tuned with */
  /* The device the workload runs on (the default one): rows tuned on another product of its
   * arch and SM count are refused, here as by the shim. */
  gt_cli_search_t cs;
  gt_cli_search_init(&cs);
  gt_db_device_t here;
  memset(&here, 0, sizeof here);
  if (gt_cli_device_here("verify", &cs, &here) == 0) gt_cli_note_db_device("verify", &db, &here);
  char db_abs[4096];
  if (!realpath(a.db_path, db_abs)) snprintf(db_abs, sizeof db_abs, "%s", a.db_path);
  char libbuf[4096], tlibbuf[4096], trace_unavail[600], work[4096];
  if (!find_libs(&a.lib, &a.tlib, libbuf, tlibbuf, sizeof libbuf, trace_unavail,
                 sizeof trace_unavail)) {
    gt_db_free(&db);
    return EX_UNAVAILABLE_;
  }
  if ((rc = make_work(a.keep, work, sizeof work)) != 0) {
    gt_db_free(&db);
    return rc;
  }
  warn_env(&a, db_abs);
  verify_ctx_t v = {db_abs, a.lib, a.tlib, work, a.timeout_s};
  rc = verify_in(&v, &a, &db, &here, trace_unavail);
  if (!a.keep) rm_work(work);
  gt_db_free(&db);
  return rc;
}
