/* gemmtune check: replay every row of a tuned DB on this machine. A row passes when its candidate
 * still exists, still passes the correctness gate, and still reproduces: re-timed interleaved
 * with the baseline (the search driver restricted to the row's instance), it still beats the
 * baseline and either its time or its speedup is what the row recorded, within the noise floor.
 * Rows measured on another device or with another library version are listed as not applicable,
 * with the differing fact, never skipped silently.
 *
 * With --live, a passing row is also replayed through the runtime's dispatch against the
 * unmodified entry point its key names (live_replay.h), as tune confirms its winners.
 *
 * Each row is replayed in a worker process (search/gt_isolate), as tune does: a candidate that
 * faults poisons only that worker's CUDA context, and the parent never initialises CUDA. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/gt_db.h"
#include "live_replay.h"
#include "search/gt_isolate.h"

static const char k_help[] =
    "Usage: gemmtune check DB [options]\n\n"
    "Replays each row of DB on this machine and reports, per row:\n"
    "  passes          the candidate exists, passes the gate, beats the baseline, and its time\n"
    "                  (or, when the whole machine runs faster or slower, its speedup) is what\n"
    "                  the row recorded, within the tolerance\n"
    "  not applicable  the row was measured on another device or library version; the fact\n"
    "                  that differs is named (e.g. sm_count: 114 vs 132 here, or 'rows tuned\n"
    "                  on NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA H200 (139 GiB):\n"
    "                  not applied' for another product of the same arch and SM count)\n"
    "  missing         the provider or the candidate no longer exists here\n"
    "  fails gate      the candidate's output is no longer within the row's error bound\n"
    "  slower          it still wins, but neither its time nor its speedup reproduces\n"
    "  no longer wins  the baseline is now as fast or faster\n"
    "  fails live      (--live) the runtime's dispatch failed to run the row's candidate\n"
    "The winner and the baseline are re-timed in interleaved rounds, cold or warm as the row\n"
    "was. The tolerance is the largest of --tolerance, the baseline's and the winner's measured\n"
    "spread now, and the spread the row recorded.\n\n"
    "With --live, each row that passes is also replayed the way an application meets it: the\n"
    "runtime engine (what the preload shim runs on a hit) serves the row on the caller's\n"
    "stream, against the unmodified entry point the key was issued through (the row's\n"
    "baseline: cublasGemmEx with its default algorithm for a GemmEx key; for a cuBLASLt key the\n"
    "application's cublasLtMatmul with the heuristic's algorithm, the key's epilogue and its\n"
    "bias vector), each captured as a CUDA graph of calls over rotated operand sets (at least\n"
    "3x the L2 cache), each timed in three warmed stretches of its own, interleaved.\n"
    "Epilogue rows (bias, relu, gelu) and rows with beta != 0 (C updated in place) are\n"
    "replayed too.\n"
    "The row's note gives both times and their ratio against the speedup the row recorded, and\n"
    "the live speedup tune confirmed when the row has one (csv/json: live_plain_us,\n"
    "live_served_us, live_speedup). A row the runtime fails to run live is 'fails live'; one\n"
    "that cannot be replayed here says why.\n\n"
    "  --tolerance P          percent (default 3)\n"
    "  --live                 also replay passing rows through the runtime's dispatch\n"
    "  --row-timeout S        give up on a row after S seconds (default 300)\n"
    "  --format table|csv|json\n";

static const char k_examples[] =
    "\nExamples:\n"
    "  gemmtune check tuned.db\n"
    "  gemmtune check --cpu build/example-tuned.db --rounds 5 --format csv\n\n"
    "Exit status: 0 when every row that applies here was replayed and passes; 1 when one does\n"
    "not, and when no row applies to this device at all (every row is listed with the reason,\n"
    "and a last line says that nothing was checked: a DB for another device, or an empty one,\n"
    "proves nothing here); 64 usage; 65 malformed DB; 66 missing DB.\n";

#define CHECK_OPTS (GT_OPT_DEVICE | GT_OPT_TIMING)
#define CHECK_EXCEPT "warm,init" /* a row is replayed cold or warm as it was timed */

enum { K_FORMAT = 3000, K_HELP, K_TOL, K_RTIMEOUT, K_LIVE };

typedef enum { CK_PASS = 0, CK_NA, CK_FAIL } ck_state_t;

/* What a replay reports about one row (one gt_isolate message). */
typedef struct check_out {
  int state;            /* ck_state_t */
  char verdict[24];
  char note[1024];
  double t_now, b_now;  /* medians now (us), 0 when not timed */
  double sp_now, tol;
  char dev[64];
  gt_live_result_t live; /* --live: the replay through the runtime's dispatch */
} check_out_t;

static void set_out(check_out_t *o, ck_state_t st, const char *verdict, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_out(check_out_t *o, ck_state_t st, const char *verdict, const char *fmt, ...) {
  o->state = st;
  snprintf(o->verdict, sizeof o->verdict, "%s", verdict);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->note, sizeof o->note, fmt, ap);
  va_end(ap);
}

static const gt_cand_result_t *find_cand(const gt_search_result_t *r, const char *name) {
  for (size_t i = 0; i < r->n; i++)
    if (!r->c[i].cand.is_baseline && strcmp(r->c[i].cand.name, name) == 0) return &r->c[i];
  return NULL;
}

/* Replay one row (runs in the child). */
static void check_row(const gt_db_row_t *row, gt_cli_search_t cs, double min_tol,
                      check_out_t *o) {
  memset(o, 0, sizeof *o);
  gt_device_info_t dev;
  cs.quiet = true;
  if (gt_cli_pick_backend("check", &cs, &dev) != 0) {
    set_out(o, CK_FAIL, "error", "no usable device: %s", gt_err_msg());
    return;
  }
  snprintf(o->dev, sizeof o->dev, "%s", dev.name);
  gt_db_device_t here;
  gt_cli_db_device(&dev, &here);
  /* Another product of the same arch and SM count (an H100 SXM for an H200): refused, as the
   * runtime refuses it. */
  if (gt_db_row_fit(row, &here) == GT_DB_FIT_OTHER) {
    char why[400];
    gt_db_refusal_str(row, &here, why, sizeof why);
    set_out(o, CK_NA, "not applicable", "%s", why);
    return;
  }
  /* Another device: the row's time says nothing about this one. */
  if (strcmp(row->key.arch, dev.arch) != 0 || row->key.sm_count != dev.sm_count) {
    if (strcmp(row->key.arch, dev.arch) != 0)
      set_out(o, CK_NA, "not applicable", "arch: %s vs %s here%s", row->key.arch, dev.arch,
              strcmp(row->key.arch, "cpu") == 0 ? " (--cpu replays host rows)" : "");
    else
      set_out(o, CK_NA, "not applicable", "sm_count: %d vs %d here", row->key.sm_count,
              dev.sm_count);
    return;
  }
  const gt_provider_t *prov = gt_provider_find(row->provider);
  if (!prov) {
    set_out(o, CK_FAIL, "missing", "no provider '%s' in this build", row->provider);
    return;
  }
  if (gt_provider_ready(prov) != GT_OK) {
    set_out(o, CK_FAIL, "missing", "provider %s is unavailable here: %s", row->provider,
            gt_err_msg());
    return;
  }
  /* Another library version: cuBLASLt algo ids are not portable across versions. */
  char libwhy[200];
  if (!gt_provider_lib_applies(prov, row->lib, libwhy, sizeof libwhy)) {
    set_out(o, CK_NA, "not applicable", "%s here", libwhy);
    return;
  }
  gt_candidate_t cand;
  if (gt_provider_candidate_from_name(row->provider, row->instance, &row->key, &cand) != GT_OK) {
    set_out(o, CK_FAIL, "missing", "%s", gt_err_msg());
    return;
  }
  /* A grouped_mm row's time is against torch's own function, which only a torch process runs: its
   * instance exists here (checked above), its time is not replayed. */
  if (row->key.op == GT_OP_GROUPED_MM) {
    set_out(o, CK_NA, "not applicable",
            "grouped_mm: its baseline is torch's own bf16bf16_grouped_mm; instance present, time "
            "replayed only in a torch process (tune's grouped race, python3 -m gemmtune.grouped)");
    return;
  }
  if (cand.excluded) {
    set_out(o, CK_FAIL, "missing", "the provider excludes it now: %s", cand.reason);
    return;
  }
  /* The row's baseline names the provider that stands for today's path. */
  gt_candidate_t bc;
  char provs[80] = "";
  if (gt_provider_candidate_from_name(NULL, row->baseline, &row->key, &bc) == GT_OK)
    snprintf(provs, sizeof provs, "%s,%s", row->provider, bc.provider->name);
  gt_search_opts_t so = cs.so;
  so.only = row->instance;
  so.providers = provs[0] ? provs : NULL;
  so.measure.warm = strncmp(row->timing, "warm", 4) == 0;
  so.finalists = 1;
  gt_search_result_t r;
  gt_status_t s = gt_search_run(&row->key, &so, NULL, &r);
  const gt_cand_result_t *w = s == GT_OK ? find_cand(&r, row->instance) : NULL;
  if (s == GT_OK && (!w || w->disp == GT_DISP_EXCLUDED)) {
    /* Not in the provider's default list: tune may have searched the full space. */
    gt_search_result_free(&r);
    so.exhaustive = true;
    s = gt_search_run(&row->key, &so, NULL, &r);
    w = s == GT_OK ? find_cand(&r, row->instance) : NULL;
  }
  if (s != GT_OK) {
    set_out(o, CK_FAIL, "error", "%s", r.failure);
    gt_search_result_free(&r);
    return;
  }
  if (!w) {
    set_out(o, CK_FAIL, "missing", "the provider no longer lists %s for this key", row->instance);
    gt_search_result_free(&r);
    return;
  }
  const gt_cand_result_t *b = &r.c[r.baseline];
  switch (w->disp) {
    case GT_DISP_PASSED: break;
    case GT_DISP_FAILED_GATE:
      set_out(o, CK_FAIL, "fails gate", "error %.3g over bound %.3g: %s", w->gate.error,
              w->gate.bound, w->why);
      gt_search_result_free(&r);
      return;
    default:
      set_out(o, CK_FAIL, w->disp == GT_DISP_EXCLUDED ? "missing" : "error", "%s: %s",
              gt_disp_name(w->disp), w->why);
      gt_search_result_free(&r);
      return;
  }
  if (!w->time.n || !b->time.n) {
    set_out(o, CK_FAIL, "error", "not re-timed: %s", w->why[0] ? w->why : b->why);
    gt_search_result_free(&r);
    return;
  }
  o->t_now = w->time.median;
  o->b_now = b->time.median;
  o->sp_now = o->b_now / o->t_now;
  o->tol = fmax(fmax(min_tol, r.noise), fmax(w->time.rel_spread, row->spread_pct / 100.0));
  double dt = o->t_now / row->time_us - 1, db = o->b_now / row->baseline_us - 1;
  bool time_ok = dt <= o->tol, speed_ok = o->sp_now >= row->speedup * (1 - o->tol);
  if (o->sp_now <= 1.0)
    set_out(o, CK_FAIL, "no longer wins", "%.3f us vs the baseline's %.3f us now (%.3fx; recorded "
            "%.3fx)", o->t_now, o->b_now, o->sp_now, row->speedup);
  else if (time_ok && speed_ok)
    set_out(o, CK_PASS, "passes", "time %+.1f%%, speedup %.3fx (recorded %.3fx), tolerance %.1f%%",
            100 * dt, o->sp_now, row->speedup, 100 * o->tol);
  else if (time_ok)
    set_out(o, CK_PASS, "passes", "time %+.1f%% reproduces; the baseline is %+.1f%% vs recorded, "
            "so the speedup is %.3fx (recorded %.3fx)", 100 * dt, 100 * db, o->sp_now,
            row->speedup);
  else if (speed_ok)
    set_out(o, CK_PASS, "passes", "speedup %.3fx reproduces (recorded %.3fx); both times moved "
            "(winner %+.1f%%, baseline %+.1f%%: clocks or load?)", o->sp_now, row->speedup,
            100 * dt, 100 * db);
  else
    set_out(o, CK_FAIL, "slower", "time %+.1f%% and speedup %.3fx vs recorded %.3fx, beyond the "
            "tolerance %.1f%%", 100 * dt, o->sp_now, row->speedup, 100 * o->tol);
  gt_search_result_free(&r);
}

/* --live after a passing replay: the row through the runtime's dispatch, said in the note. A row
 * the runtime fails to run is a failure: the application's calls would not get it. */
static void check_live(const gt_db_row_t *row, const gt_cli_search_t *cs, check_out_t *o) {
  if (o->state != CK_PASS) return;
  gt_live_replay_row(row, cs->so.measure.device, 0, &o->live);
  size_t l = strlen(o->note);
  char tuned[64] = "";
  if (row->live == GT_LIVE_CONFIRMED)
    snprintf(tuned, sizeof tuned, "; confirmed live at %.3fx when tuned", row->live_speedup);
  switch ((gt_live_outcome_t)o->live.outcome) {
    case GT_LIVE_OUT_DONE:
      snprintf(o->note + l, sizeof o->note - l,
               "; live: %.3f us served vs %.3f us %s, %.3fx (%.2f of the recorded %.3fx%s)",
               o->live.served_us, o->live.plain_us, o->live.plain_name, o->live.speedup,
               row->speedup > 0 ? o->live.speedup / row->speedup : 0.0, row->speedup, tuned);
      break;
    case GT_LIVE_OUT_FAILED:
      o->state = CK_FAIL;
      snprintf(o->verdict, sizeof o->verdict, "fails live");
      snprintf(o->note + l, sizeof o->note - l, "; live: the runtime failed to run it: %s",
               o->live.why);
      break;
    default:
      snprintf(o->note + l, sizeof o->note - l, "; live: not replayed: %s", o->live.why);
  }
}

/* The replay of one row, run in a worker (search/gt_isolate). */
typedef struct check_job {
  const gt_db_row_t *row;
  const gt_cli_search_t *cs;
  double min_tol;
  bool live;
} check_job_t;

static int check_worker(gt_isolate_chan_t *ch, void *arg) {
  const check_job_t *j = arg;
  check_out_t co;
  check_row(j->row, *j->cs, j->min_tol, &co);
  if (j->live) check_live(j->row, j->cs, &co);
  return gt_isolate_send(ch, &co, sizeof co) == GT_OK ? 0 : 1;
}

static bool on_check_msg(void *ctx, const void *msg, size_t len) {
  if (len != sizeof(check_out_t)) return false;
  memcpy(ctx, msg, len);
  return true;
}

/* Replay row in a worker; a replay that crashed, hung or exited without an answer becomes a
 * failed row saying which. GT_ERR_IO when no worker could be started. */
static gt_status_t replay_isolated(const gt_db_row_t *row, const gt_cli_search_t *cs,
                                   double min_tol, double row_timeout, bool live,
                                   check_out_t *o) {
  memset(o, 0, sizeof *o);
  check_job_t job = {row, cs, min_tol, live};
  gt_isolate_end_t end;
  /* The replay sends nothing until its answer, so the silence limit bounds the whole row. */
  gt_status_t s = gt_isolate_run(check_worker, &job, row_timeout, on_check_msg, o, &end);
  if (s != GT_OK || end.answered) return s;
  memset(o, 0, sizeof *o);
  o->state = CK_FAIL;
  snprintf(o->verdict, sizeof o->verdict, "%s", end.how == GT_ISOLATE_SILENT ? "hung" : "crashed");
  if (end.how == GT_ISOLATE_SILENT)
    snprintf(o->note, sizeof o->note, "no answer within %.0f s (--row-timeout)", row_timeout);
  else if (end.how == GT_ISOLATE_SIGNALED)
    snprintf(o->note, sizeof o->note, "the replay died of signal %d", end.signal);
  else
    snprintf(o->note, sizeof o->note, "the replay exited %d without a result", end.status);
  return GT_OK;
}

int gt_cmd_check(int argc, char **argv) {
  static const struct option own[] = {{"format", required_argument, 0, K_FORMAT},
                                      {"help", no_argument, 0, K_HELP},
                                      {"tolerance", required_argument, 0, K_TOL},
                                      {"live", no_argument, 0, K_LIVE},
                                      {"row-timeout", required_argument, 0, K_RTIMEOUT},
                                      {0, 0, 0, 0}};
  struct option *opts = gt_cli_options(own, CHECK_OPTS, CHECK_EXCEPT);
  gt_cli_search_t cs;
  gt_cli_search_init(&cs);
  gt_fmt_t fmt = GT_FMT_TABLE;
  double tol = 0.03, row_timeout = 300;
  bool live = false;
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    char *end = NULL;
    switch (c) {
      case 'h':
      case K_HELP:
        printf("%s", k_help);
        gt_cli_options_help(stdout, CHECK_OPTS, CHECK_EXCEPT);
        printf("%s", k_examples);
        free(opts);
        return 0;
      case K_FORMAT:
        if (gt_cli_parse_format("check", optarg, &fmt)) return free(opts), EX_USAGE_;
        break;
      case K_TOL:
        tol = strtod(optarg, &end) / 100.0;
        if (!*optarg || *end || !(tol >= 0))
          return free(opts), gt_cli_usage_error("check", "--tolerance wants a percentage >= 0, got '%s'", optarg);
        break;
      case K_LIVE:
        live = true;
        break;
      case K_RTIMEOUT:
        row_timeout = strtod(optarg, &end);
        if (!*optarg || *end || !(row_timeout > 0))
          return free(opts), gt_cli_usage_error("check", "--row-timeout wants seconds > 0, got '%s'", optarg);
        break;
      default:
        if ((rc = gt_cli_search_opt("check", &cs, c, optarg)) == 0) {
          free(opts);
          return gt_cli_usage_error("check", "unknown option");
        }
        if (rc < 0) return free(opts), EX_USAGE_;
    }
  }
  free(opts);
  if (optind != argc - 1) return gt_cli_usage_error("check", "expected one DB file");
  const char *path = argv[optind];
  if ((rc = gt_cli_need_file("check", NULL, path)) != 0) return rc;
  gt_db_t db;
  gt_db_init(&db);
  gt_status_t s = gt_db_read(path, &db);
  if (s != GT_OK) return gt_cli_fail("check", s);
  gt_cli_use_db_libs(&db); /* replay with the cuBLAS the rows were tuned with */

  static const char *const names[] = {"row", "verdict", "key", "provider", "instance",
                                      "recorded_us", "now_us", "baseline_now_us", "speedup_rec",
                                      "speedup_now", "note", "live_plain_us", "live_served_us",
                                      "live_speedup"};
  static const bool num[] = {1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1};
  gt_table_t t;
  gt_table_begin(&t, stdout, fmt, live ? 14 : 11, names, num);
  size_t npass = 0, nna = 0, nfail = 0;
  char devname[64] = "";
  double t0 = gt_cli_now();
  for (size_t i = 0; i < db.n; i++) {
    const gt_db_row_t *row = &db.rows[i];
    gt_cli_progress("check", "row", i + 1, db.n, gt_cli_now() - t0);
    check_out_t o;
    if (replay_isolated(row, &cs, tol, row_timeout, live, &o) != GT_OK) {
      gt_db_free(&db);
      return fprintf(stderr, "gemmtune check: %s\n", gt_err_msg()), EX_IOERR_;
    }
    if (o.dev[0]) snprintf(devname, sizeof devname, "%s", o.dev);
    if (o.state == CK_PASS) npass++;
    else if (o.state == CK_NA) nna++;
    else nfail++;
    char idx[16], desc[300], key[1024], rec[32], now[32] = "-", bnow[32] = "-", sprec[32],
                                                   spnow[32] = "-";
    snprintf(idx, sizeof idx, "%zu", i + 1);
    gt_problem_describe(&row->key, desc, sizeof desc);
    gt_problem_format_key(&row->key, key, sizeof key);
    snprintf(rec, sizeof rec, "%.3f", row->time_us);
    snprintf(sprec, sizeof sprec, "%.3f", row->speedup);
    char lp[32] = "-", ls[32] = "-", lsp[32] = "-";
    if (o.live.outcome == GT_LIVE_OUT_DONE) {
      snprintf(lp, sizeof lp, "%.3f", o.live.plain_us);
      snprintf(ls, sizeof ls, "%.3f", o.live.served_us);
      snprintf(lsp, sizeof lsp, "%.3f", o.live.speedup);
    }
    if (o.t_now > 0) {
      snprintf(now, sizeof now, "%.3f", o.t_now);
      snprintf(bnow, sizeof bnow, "%.3f", o.b_now);
      snprintf(spnow, sizeof spnow, "%.3f", o.sp_now);
    }
    if (fmt == GT_FMT_TABLE) {
      gt_cli_progress_clear();
      printf("%4s  %-15s %s  %s/%s\n", idx, o.verdict, desc, row->provider, row->instance);
      if (o.t_now > 0)
        printf("      %-15s %s us now vs %s us recorded; baseline %s us (recorded %.3f); speedup "
               "%sx (recorded %sx)\n",
               "", now, rec, bnow, row->baseline_us, spnow, sprec);
      printf("      %-15s %s\n", "", o.note);
      fflush(stdout);
    } else {
      const char *cells[] = {idx, o.verdict, key, row->provider, row->instance, rec, now, bnow,
                             sprec, spnow, o.note, lp, ls, lsp};
      gt_table_row(&t, cells);
    }
  }
  gt_cli_progress_clear();
  if (fmt != GT_FMT_TABLE) gt_table_end(&t);
  else free(t.rows);
  FILE *sf = fmt == GT_FMT_TABLE ? stdout : stderr;
  /* A DB none of whose rows applies here proves nothing about this machine: not a pass. */
  bool none = npass + nfail == 0;
  fprintf(sf, "%s%s: %zu rows on %s: %zu pass, %zu not applicable, %zu fail\n",
          fmt == GT_FMT_TABLE && db.n ? "\n" : "", nfail || none ? "FAIL" : "PASS", db.n,
          devname[0] ? devname : "this machine", npass, nna, nfail);
  if (none && db.n)
    fprintf(sf, "FAIL: no row of %s applies to this device (%s): all %zu rows were tuned on "
                "another device or library version (each is listed above with the fact that "
                "differs), so nothing was checked\n",
            path, devname[0] ? devname : "this machine", db.n);
  else if (none)
    fprintf(sf, "FAIL: %s has no rows, so nothing was checked\n", path);
  gt_db_free(&db);
  return nfail || none ? 1 : 0;
}
