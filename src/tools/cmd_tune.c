/* gemmtune tune: the loop over a shapes file. For each shape: baseline, prune, gate, interleaved
 * re-time, improvement decision; winners go into the DB, which is rewritten atomically after
 * every improved shape so an interrupted run loses nothing it finished.
 *
 * On a GPU each shape runs in a forked worker process: a candidate that faults (a sticky CUDA
 * error poisons the whole context) or hangs kills only the worker. The supervisor knows which
 * candidate was running from the worker's announcements, records it as failed and restarts the
 * shape without it. The supervisor itself never initialises CUDA, so forking stays legal. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/gt_db.h"
#include "core/gt_shapes.h"
#include "gt_version.h"

static const char k_help[] =
    "Usage: gemmtune tune SHAPES -o DB [options]\n\n"
    "For each shape in SHAPES (see 'gemmtune shapes --help' for the formats): measure the\n"
    "baseline (today's path), enumerate every ready provider's candidates, rank them with a\n"
    "quick prune pass (ranking only), gate the best on fresh inputs against an fp64 reference,\n"
    "re-time the survivors and the baseline in interleaved cold rounds, and write a row only\n"
    "when the winner beats the baseline by max(--min-improvement, the baseline's noise).\n"
    "A row slower than its baseline is never written. An existing DB is read first (strictly:\n"
    "a malformed one stops the run untouched) and updated atomically after each improved shape.\n\n"
    "  -o, --output DB        the tuned DB to create or update (required)\n"
    "  --resume               skip shapes an interrupted run already finished (DB.journal)\n"
    "  --shard I/N            tune only shapes whose key hash is I modulo N (merge shards after)\n"
    "  --isolate / --no-isolate  run each shape in a worker process (default: on for CUDA)\n"
    "  --shape-timeout S      kill a worker silent for S seconds (default 120)\n"
    "  --format table|csv|json  per-shape results on stdout\n\n"
    "Defaults for rows that don't state them:\n"
    "  --dtype T, --compute C, --beta 0|1 (see 'gemmtune profile --help')\n\n";

enum { T_OUT = 'o', T_FORMAT = 3000, T_HELP, T_RESUME, T_SHARD, T_ISOLATE, T_NOISOLATE, T_STIMEOUT };

typedef struct shape_outcome {
  int status;      /* gt_status_t of the shape */
  bool improved;
  char base_name[192];
  double base_us;
  char best_prov[32], best_name[192];
  double best_us, threshold, noise;
  size_t n_active, n_excluded, n_failed_gate, n_failed_run;
  char failure[400];
  double elapsed_s, estimate_s;
  int throttled, sm_clock_mhz; /* clock-event (thermal/power) seen in a round; median SM clock */
  char faulted[1024]; /* candidates that killed a worker, comma separated */
} shape_outcome_t;

/* ---- worker side ------------------------------------------------------------------------- */
typedef struct {
  int fd; /* pipe to the supervisor, -1 in-process */
  const char *label;
  double t0;
} worker_ctx_t;

static void wr(int fd, const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w, n -= (size_t)w;
  }
}

static void w_phase(void *ctx, const char *phase, size_t done, size_t total) {
  worker_ctx_t *w = ctx;
  if (w->fd < 0) {
    gt_cli_progress(w->label, phase, done, total, gt_cli_now() - w->t0);
    return;
  }
  char b[128];
  snprintf(b, sizeof b, "P\t%s\t%zu\t%zu\n", phase, done, total);
  wr(w->fd, b);
}

static void w_cand(void *ctx, const gt_candidate_t *c) {
  worker_ctx_t *w = ctx;
  if (w->fd < 0) return;
  char b[256];
  snprintf(b, sizeof b, "C\t%s\n", c->name);
  wr(w->fd, b);
}

static void outcome_from(const gt_search_result_t *r, gt_status_t s, shape_outcome_t *o) {
  memset(o, 0, sizeof *o);
  o->status = s;
  o->improved = r->improved;
  o->threshold = r->threshold;
  o->noise = r->noise;
  o->n_active = r->n_active;
  o->n_excluded = r->n_excluded;
  o->elapsed_s = r->elapsed_s;
  o->estimate_s = r->estimate_s;
  o->throttled = r->throttled;
  o->sm_clock_mhz = r->sm_clock_mhz;
  snprintf(o->failure, sizeof o->failure, "%s", r->failure);
  for (size_t i = 0; i < r->n; i++) {
    if (r->c[i].disp == GT_DISP_FAILED_GATE) o->n_failed_gate++;
    if (r->c[i].disp == GT_DISP_FAILED_RUN) o->n_failed_run++;
  }
  if (r->baseline >= 0) {
    snprintf(o->base_name, sizeof o->base_name, "%s", r->c[r->baseline].cand.name);
    o->base_us = r->c[r->baseline].time.median;
  }
  if (r->best >= 0) {
    snprintf(o->best_prov, sizeof o->best_prov, "%s", r->c[r->best].cand.provider->name);
    snprintf(o->best_name, sizeof o->best_name, "%s", r->c[r->best].cand.name);
    o->best_us = r->c[r->best].time.median;
  }
}

/* Serialise an outcome as one tab-separated line (strings have no tabs/newlines). */
static void outcome_line(const shape_outcome_t *o, char *b, size_t n) {
  char fail[400];
  snprintf(fail, sizeof fail, "%s", o->failure[0] ? o->failure : "-");
  for (char *p = fail; *p; p++)
    if (*p == '\t' || *p == '\n') *p = ' ';
  snprintf(b, n, "R\t%d\t%d/%d/%d\t%s\t%.17g\t%s\t%s\t%.17g\t%.17g\t%.17g\t%zu\t%zu\t%zu\t%zu\t%.17g/%.17g\t%s\n",
           o->status, o->improved, o->throttled, o->sm_clock_mhz, o->base_name[0] ? o->base_name : "-", o->base_us,
           o->best_prov[0] ? o->best_prov : "-", o->best_name[0] ? o->best_name : "-", o->best_us,
           o->threshold, o->noise, o->n_active, o->n_excluded, o->n_failed_gate, o->n_failed_run,
           o->elapsed_s, o->estimate_s, fail);
}

static bool outcome_parse(char *line, shape_outcome_t *o) {
  char *f[17];
  int n = 0;
  for (char *save = NULL, *t = strtok_r(line, "\t\n", &save); t && n < 17;
       t = strtok_r(NULL, "\t\n", &save))
    f[n++] = t;
  if (n != 16 || strcmp(f[0], "R")) return false;
  memset(o, 0, sizeof *o);
  o->status = atoi(f[1]);
  int improved = 0;
  if (sscanf(f[2], "%d/%d/%d", &improved, &o->throttled, &o->sm_clock_mhz) != 3) return false;
  o->improved = improved != 0;
  snprintf(o->base_name, sizeof o->base_name, "%s", f[3]);
  o->base_us = strtod(f[4], NULL);
  snprintf(o->best_prov, sizeof o->best_prov, "%s", f[5]);
  snprintf(o->best_name, sizeof o->best_name, "%s", f[6]);
  o->best_us = strtod(f[7], NULL);
  o->threshold = strtod(f[8], NULL);
  o->noise = strtod(f[9], NULL);
  o->n_active = strtoul(f[10], NULL, 10);
  o->n_excluded = strtoul(f[11], NULL, 10);
  o->n_failed_gate = strtoul(f[12], NULL, 10);
  o->n_failed_run = strtoul(f[13], NULL, 10);
  char *sl;
  o->elapsed_s = strtod(f[14], &sl);
  if (*sl == '/') o->estimate_s = strtod(sl + 1, NULL);
  snprintf(o->failure, sizeof o->failure, "%s", strcmp(f[15], "-") ? f[15] : "");
  return true;
}

/* Run one shape in this process; the row (when improved) goes to *row. */
static gt_status_t run_shape(const gt_shape_t *sh, const gt_search_opts_t *so, int fd,
                             shape_outcome_t *o, gt_db_row_t *row, bool *have_row) {
  worker_ctx_t w = {fd, sh->label[0] ? sh->label : "tune", gt_cli_now()};
  gt_search_events_t ev = {&w, w_phase, w_cand};
  gt_search_result_t r;
  gt_status_t s = gt_search_run(&sh->p, so, &ev, &r);
  if (fd < 0) gt_cli_progress_clear();
  outcome_from(&r, s, o);
  *have_row = s == GT_OK && r.improved;
  if (*have_row) *row = r.row;
  gt_search_result_free(&r);
  return s;
}

/* ---- supervisor side ---------------------------------------------------------------------- */
static gt_status_t run_shape_isolated(const gt_shape_t *sh, gt_search_opts_t so,
                                      const char *tmpdb, double timeout_s, const char *label,
                                      shape_outcome_t *o, gt_db_row_t *row, bool *have_row) {
  char exclude[4096] = "";
  if (so.exclude) snprintf(exclude, sizeof exclude, "%s", so.exclude);
  *have_row = false;
  for (int attempt = 0; attempt < 8; attempt++) {
    so.exclude = exclude;
    int pfd[2];
    if (pipe(pfd)) return gt_err_set(GT_ERR_IO, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return gt_err_set(GT_ERR_IO, "fork: %s", strerror(errno));
    if (pid == 0) { /* worker */
      close(pfd[0]);
      shape_outcome_t wo;
      gt_db_row_t wrow;
      bool hr = false;
      gt_status_t s = run_shape(sh, &so, pfd[1], &wo, &wrow, &hr);
      if (s == GT_ERR_DEVICE && strstr(wo.failure, "faulted")) _exit(3); /* context poisoned */
      if (hr) {
        gt_db_t one;
        gt_db_init(&one);
        if (gt_db_put(&one, &wrow) != GT_OK || gt_db_write(&one, tmpdb) != GT_OK) {
          wo.status = GT_ERR_IO;
          snprintf(wo.failure, sizeof wo.failure, "worker could not hand over its row: %s",
                   gt_err_msg());
          wo.improved = false;
        }
        gt_db_free(&one);
      }
      char line[2048];
      outcome_line(&wo, line, sizeof line);
      wr(pfd[1], line);
      close(pfd[1]);
      _exit(0);
    }
    close(pfd[1]);
    char buf[8192];
    size_t len = 0;
    char last_cand[192] = "";
    bool got = false;
    bool timed_out = false;
    double t0 = gt_cli_now(), last = t0;
    for (;;) {
      struct pollfd p = {pfd[0], POLLIN, 0};
      int pr = poll(&p, 1, 500);
      if (pr < 0 && errno == EINTR) continue;
      if (pr == 0) {
        if (gt_cli_now() - last > timeout_s) {
          kill(pid, SIGKILL);
          timed_out = true;
          break;
        }
        continue;
      }
      ssize_t n = read(pfd[0], buf + len, sizeof buf - 1 - len);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      last = gt_cli_now();
      len += (size_t)n;
      buf[len] = '\0';
      char *nl;
      while ((nl = strchr(buf, '\n'))) {
        *nl = '\0';
        if (buf[0] == 'C' && buf[1] == '\t') snprintf(last_cand, sizeof last_cand, "%s", buf + 2);
        else if (buf[0] == 'P' && buf[1] == '\t') {
          char ph[32];
          size_t d = 0, t = 0;
          if (sscanf(buf + 2, "%31[^\t]\t%zu\t%zu", ph, &d, &t) == 3)
            gt_cli_progress(label, ph, d, t, gt_cli_now() - t0);
        } else if (buf[0] == 'R' && buf[1] == '\t') {
          *nl = '\n';
          nl[1] = '\0';
          got = outcome_parse(buf, o);
          break;
        }
        memmove(buf, nl + 1, len - (size_t)(nl + 1 - buf) + 1);
        len = strlen(buf);
      }
      if (got) break;
      if (len >= sizeof buf - 1) len = 0; /* a line longer than the buffer: drop it */
    }
    close(pfd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    gt_cli_progress_clear();
    if (got) {
      if (o->improved) {
        gt_db_t one;
        gt_db_init(&one);
        gt_status_t s = gt_db_read(tmpdb, &one);
        if (s == GT_OK && one.n == 1) *row = one.rows[0], *have_row = true;
        else {
          o->improved = false;
          o->status = GT_ERR_IO;
          snprintf(o->failure, sizeof o->failure, "row from worker unreadable: %s", gt_err_msg());
        }
        gt_db_free(&one);
        unlink(tmpdb);
      }
      size_t fl = strlen(exclude);
      snprintf(o->faulted, sizeof o->faulted, "%s", fl ? exclude : "");
      return o->status;
    }
    /* The worker died or hung: blame the candidate it announced last, retry without it. */
    const char *why = timed_out ? "hung" : WIFSIGNALED(st) ? "crashed" : "faulted";
    if (!last_cand[0]) {
      memset(o, 0, sizeof *o);
      o->status = GT_ERR_DEVICE;
      snprintf(o->failure, sizeof o->failure, "worker %s before running any candidate", why);
      return GT_ERR_DEVICE;
    }
    fprintf(stderr, "gemmtune tune: %s: candidate %s %s; recorded as failed, retrying the shape "
                    "without it\n", label, last_cand, why);
    size_t el = strlen(exclude);
    snprintf(exclude + el, sizeof exclude - el, "%s%s", el ? "," : "", last_cand);
  }
  memset(o, 0, sizeof *o);
  o->status = GT_ERR_DEVICE;
  snprintf(o->failure, sizeof o->failure, "too many worker failures (excluded: %s)", exclude);
  return GT_ERR_DEVICE;
}

/* Detect the device in a short-lived child so the supervisor never initialises CUDA. */
static int pick_backend_forked(gt_cli_search_t *cs, gt_device_info_t *dev) {
  int pfd[2];
  if (pipe(pfd)) return gt_cli_pick_backend("tune", cs, dev);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    int rc = gt_cli_pick_backend("tune", cs, dev);
    int be = cs->so.backend;
    if (write(pfd[1], &rc, sizeof rc) < 0 || write(pfd[1], &be, sizeof be) < 0 ||
        write(pfd[1], dev, sizeof *dev) < 0)
      _exit(1);
    _exit(0);
  }
  close(pfd[1]);
  int rc = 70, be = 0;
  ssize_t a = read(pfd[0], &rc, sizeof rc), b = read(pfd[0], &be, sizeof be),
          c = read(pfd[0], dev, sizeof *dev);
  close(pfd[0]);
  waitpid(pid, NULL, 0);
  if (a != sizeof rc || b != sizeof be || c != (ssize_t)sizeof *dev) {
    fprintf(stderr, "gemmtune tune: device detection failed\n");
    return 70;
  }
  cs->so.backend = (gt_backend_t)be;
  if (cs->so.backend == GT_BACKEND_CUDA && !cs->settle_given) cs->so.settle_s = 0.3;
  return rc;
}

/* ---- journal ------------------------------------------------------------------------------ */
static char **journal_read(const char *path, size_t *n) {
  *n = 0;
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  char **keys = NULL;
  size_t cap = 0;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t len;
  while ((len = getline(&line, &lcap, f)) > 0) {
    if (line[len - 1] != '\n') break; /* torn last line: that shape was not finished */
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = '\0';
    if (*n == cap) keys = realloc(keys, (cap = cap ? cap * 2 : 64) * sizeof *keys);
    keys[(*n)++] = strdup(line);
  }
  free(line);
  fclose(f);
  return keys;
}

int gt_cmd_tune(int argc, char **argv) {
  static const struct option own[] = {{"output", required_argument, 0, T_OUT},
                                      {"format", required_argument, 0, T_FORMAT},
                                      {"help", no_argument, 0, T_HELP},
                                      {"resume", no_argument, 0, T_RESUME},
                                      {"shard", required_argument, 0, T_SHARD},
                                      {"isolate", no_argument, 0, T_ISOLATE},
                                      {"no-isolate", no_argument, 0, T_NOISOLATE},
                                      {"shape-timeout", required_argument, 0, T_STIMEOUT},
                                      {0, 0, 0, 0}};
  struct option *opts = gt_cli_merge_options(own, gt_cli_problem_options, gt_cli_search_options);
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_cli_problem_init(&cp);
  gt_cli_search_init(&cs);
  gt_fmt_t fmt = GT_FMT_TABLE;
  const char *out = NULL;
  bool resume = false;
  int isolate = -1, shard_i = 0, shard_n = 1;
  double shape_timeout = 120;
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
    switch (c) {
      case 'h':
      case T_HELP:
        printf("%s%s", k_help, gt_cli_search_help);
        free(opts);
        return 0;
      case T_OUT: out = optarg; break;
      case T_FORMAT:
        if (gt_cli_parse_format("tune", optarg, &fmt)) return free(opts), EX_USAGE_;
        break;
      case T_RESUME: resume = true; break;
      case T_ISOLATE: isolate = 1; break;
      case T_NOISOLATE: isolate = 0; break;
      case T_STIMEOUT:
        shape_timeout = atof(optarg);
        if (shape_timeout <= 0) return free(opts), gt_cli_usage_error("tune", "--shape-timeout wants seconds > 0");
        break;
      case T_SHARD:
        if (sscanf(optarg, "%d/%d", &shard_i, &shard_n) != 2 || shard_n < 1 || shard_i < 0 ||
            shard_i >= shard_n)
          return free(opts), gt_cli_usage_error("tune", "--shard wants I/N with 0 <= I < N, got '%s'", optarg);
        break;
      default:
        if ((rc = gt_cli_problem_opt("tune", &cp, c, optarg)) != 0 ||
            (rc = gt_cli_search_opt("tune", &cs, c, optarg)) != 0) {
          if (rc < 0) return free(opts), EX_USAGE_;
        } else {
          free(opts);
          return gt_cli_usage_error("tune", "unknown option");
        }
    }
  }
  free(opts);
  if (optind != argc - 1) return gt_cli_usage_error("tune", "expected one SHAPES file");
  if (!out) return gt_cli_usage_error("tune", "-o DB is required (the tuned DB to write)");
  const char *shapes_path = argv[optind];

  /* Inputs first, all of them strictly: nothing is written unless every input is sound. */
  gt_device_info_t dev;
  cs.quiet = fmt != GT_FMT_TABLE;
  if ((rc = pick_backend_forked(&cs, &dev)) != 0) return rc;
  snprintf(cp.p.arch, sizeof cp.p.arch, "%s", dev.arch);
  cp.p.sm_count = dev.sm_count;
  gt_shapes_t sh;
  size_t merged = 0;
  gt_status_t s = gt_shapes_read(shapes_path, &cp.p, &sh, &merged);
  if (s != GT_OK) return gt_cli_fail("tune", s);
  gt_db_t db;
  gt_db_init(&db);
  struct stat stt;
  if (stat(out, &stt) == 0) {
    s = gt_db_read(out, &db);
    if (s != GT_OK) {
      gt_shapes_free(&sh);
      fprintf(stderr, "gemmtune tune: refusing to update %s: %s\n", out, gt_err_msg());
      return gt_status_exit_code(s);
    }
  }
  char journal[1024], tmpdb[1100];
  snprintf(journal, sizeof journal, "%s.journal", out);
  snprintf(tmpdb, sizeof tmpdb, "%s.worker-%d.db", out, (int)getpid());
  size_t ndone = 0;
  char **done = NULL;
  if (resume) done = journal_read(journal, &ndone);
  else if (access(journal, F_OK) == 0 && fmt == GT_FMT_TABLE)
    fprintf(stderr, "gemmtune tune: %s exists from an interrupted run; starting over "
                    "(--resume would continue it)\n", journal);
  FILE *jf = fopen(journal, resume ? "a" : "w");
  if (!jf) {
    gt_shapes_free(&sh);
    gt_db_free(&db);
    fprintf(stderr, "gemmtune tune: cannot write journal %s: %s\n", journal, strerror(errno));
    return EX_IOERR_;
  }

  char now[32];
  time_t tt = time(NULL);
  strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
  gt_db_set_validator(&db, "gemmtune", GT_VERSION);
  gt_db_set_validator(&db, "device", dev.name);
  gt_db_set_validator(&db, "updated", now);

  if (isolate < 0) isolate = cs.so.backend == GT_BACKEND_CUDA;
  if (fmt == GT_FMT_TABLE) {
    printf("device: %s (%s, %d %s); %zu shapes from %s%s; timing %s, %d rounds, min improvement "
           "%.1f%%%s\n",
           dev.name, dev.arch, dev.sm_count, strcmp(dev.arch, "cpu") ? "SMs" : "cores", sh.n,
           shapes_path, merged ? " (duplicates merged)" : "", cs.so.measure.warm ? "warm" : "cold",
           cs.so.rounds, 100 * cs.so.min_improvement, isolate ? "; one worker process per shape" : "");
    if (dev.busy_processes > 0)
      fprintf(stderr, "gemmtune tune: warning: %d other process(es) are using the GPU; timings "
                      "will be noisy\n", dev.busy_processes);
  }
  static const char *const names[] = {"shape", "label", "mapping", "baseline_us", "best_us",
                                      "speedup", "outcome", "winner", "note"};
  static const bool num[] = {1, 0, 0, 1, 1, 1, 0, 0, 0};
  gt_table_t t;
  gt_table_begin(&t, stdout, fmt, 9, names, num);
  size_t n_tuned = 0, n_improved = 0, n_unchanged = 0, n_failed = 0, n_skipped = 0, n_resumed = 0;
  double t_start = gt_cli_now(), est_total = 0;
  int exit_code = 0;
  char failures[4096] = "";
  if (fmt == GT_FMT_TABLE)
    printf("%5s  %-24s  %11s  %11s  %7s  %-9s  %s\n", "shape", "label / mapping", "baseline_us",
           "best_us", "speedup", "outcome", "winner");
  for (size_t i = 0; i < sh.n; i++) {
    const gt_shape_t *x = &sh.v[i];
    if (shard_n > 1 && gt_problem_hash(&x->p) % (uint64_t)shard_n != (uint64_t)shard_i) {
      n_skipped++;
      continue;
    }
    char key[1024];
    gt_problem_format_key(&x->p, key, sizeof key);
    bool was_done = false;
    for (size_t d = 0; d < ndone; d++)
      if (strcmp(done[d], key) == 0) was_done = true;
    if (was_done) {
      n_resumed++;
      continue;
    }
    char label[160];
    snprintf(label, sizeof label, "[%zu/%zu] %s", i + 1, sh.n, x->label[0] ? x->label : x->view);
    shape_outcome_t o;
    gt_db_row_t row;
    bool have_row = false;
    if (isolate)
      s = run_shape_isolated(x, cs.so, tmpdb, shape_timeout, label, &o, &row, &have_row);
    else
      s = run_shape(x, &cs.so, -1, &o, &row, &have_row);
    n_tuned++;
    const char *outcome;
    char note[512] = "";
    if (s != GT_OK) {
      outcome = "failed";
      n_failed++;
      snprintf(note, sizeof note, "%s", o.failure);
      size_t fl = strlen(failures);
      snprintf(failures + fl, sizeof failures - fl, "  line %d (%s): %s\n", x->line,
               x->label[0] ? x->label : x->view, o.failure);
      exit_code = 1;
    } else if (cs.so.estimate_only) {
      outcome = "estimate";
      est_total += o.estimate_s;
      snprintf(note, sizeof note, "prune pass of %zu candidates: about %.1f s", o.n_active,
               o.estimate_s);
    } else if (have_row) {
      outcome = "improved";
      n_improved++;
      gt_status_t ps = gt_db_put(&db, &row);
      if (ps == GT_OK) ps = gt_db_write(&db, out);
      if (ps != GT_OK) {
        fprintf(stderr, "gemmtune tune: cannot write %s: %s\n", out, gt_err_msg());
        exit_code = gt_status_exit_code(ps);
        break;
      }
    } else {
      outcome = "unchanged";
      n_unchanged++;
      if (o.best_us > 0 && strcmp(o.best_name, o.base_name))
        snprintf(note, sizeof note, "best %s %.3f us did not beat the baseline by %.1f%%",
                 o.best_name, o.best_us, 100 * o.threshold);
      else
        snprintf(note, sizeof note, "the baseline was fastest");
    }
    if (o.throttled) {
      size_t nl = strlen(note);
      snprintf(note + nl, sizeof note - nl, "%sTHROTTLED: thermal/power clock events in the race "
               "(median SM clock %d MHz)", nl ? "; " : "", o.sm_clock_mhz);
    }
    if (o.n_failed_gate || o.n_failed_run) {
      size_t nl = strlen(note);
      snprintf(note + nl, sizeof note - nl, "%s%zu failed the gate, %zu failed to run%s%s",
               nl ? "; " : "", o.n_failed_gate, o.n_failed_run, o.faulted[0] ? " (faulted: " : "",
               o.faulted[0] ? o.faulted : "");
      if (o.faulted[0]) strncat(note, ")", sizeof note - strlen(note) - 1);
    }
    char idx[16], bus[32], best[32], sp[32], winner[256];
    snprintf(idx, sizeof idx, "%zu", i + 1);
    snprintf(bus, sizeof bus, o.base_us > 0 ? "%.3f" : "-", o.base_us);
    snprintf(best, sizeof best, o.best_us > 0 ? "%.3f" : "-", o.best_us);
    snprintf(sp, sizeof sp, o.best_us > 0 ? "%.3f" : "-",
             have_row ? row.speedup : o.base_us > 0 && o.best_us > 0 ? o.base_us / o.best_us : 0);
    snprintf(winner, sizeof winner, "%s%s%s", have_row ? row.provider : "",
             have_row ? "/" : "", have_row ? row.instance : "-");
    if (fmt == GT_FMT_TABLE) {
      printf("%5s  %-24.24s  %11s  %11s  %7s  %-9s  %s\n", idx, x->label[0] ? x->label : x->view,
             bus, best, sp, outcome, winner);
      printf("%5s  %s%s%s\n", "", x->view, note[0] ? "  | " : "", note);
      fflush(stdout);
    } else {
      const char *cells[] = {idx, x->label, x->view, bus, best, sp, outcome, winner, note};
      gt_table_row(&t, cells);
    }
    /* Journal after the DB write: a shape is 'done' only once its row is safely on disk. */
    fprintf(jf, "%s\t%s\t%s\n", key, outcome, winner);
    fflush(jf);
    fsync(fileno(jf));
  }
  bool completed = exit_code == 0 || exit_code == 1;
  fclose(jf);
  if (cs.so.estimate_only) unlink(journal);
  if (fmt != GT_FMT_TABLE) gt_table_end(&t);
  /* A DB with no rows is still written: 'no shape improved' is a result, and the file says for
   * which device and version it was established. */
  if (exit_code == 0 || exit_code == 1) {
    if (db.n == 0 && !cs.so.estimate_only && n_tuned) {
      gt_status_t ws = gt_db_write(&db, out);
      if (ws != GT_OK) {
        fprintf(stderr, "gemmtune tune: cannot write %s: %s\n", out, gt_err_msg());
        exit_code = gt_status_exit_code(ws);
      }
    }
  }
  double wall = gt_cli_now() - t_start;
  FILE *sf = fmt == GT_FMT_TABLE ? stdout : stderr;
  fprintf(sf, "\nSummary: %zu shapes tuned in %.1f s: %zu improved, %zu unchanged, %zu failed",
          n_tuned, wall, n_improved, n_unchanged, n_failed);
  if (n_resumed) fprintf(sf, ", %zu already done (--resume)", n_resumed);
  if (n_skipped) fprintf(sf, ", %zu in other shards", n_skipped);
  fprintf(sf, "\n");
  if (n_failed) fprintf(sf, "Failed:\n%s", failures);
  if (cs.so.estimate_only)
    fprintf(sf, "Estimate: about %.0f s of prune passes (plus gate and %d re-time rounds per "
                "shape); nothing was written\n", est_total, cs.so.rounds);
  else
    fprintf(sf, "DB: %s (%zu rows)\n", out, db.n);
  if (completed) unlink(journal);
  for (size_t d = 0; d < ndone; d++) free(done[d]);
  free(done);
  gt_shapes_free(&sh);
  gt_db_free(&db);
  return exit_code;
}
