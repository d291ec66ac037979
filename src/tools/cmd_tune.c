/* gemmtune tune: the loop over a shapes file. For each shape: baseline, prune, gate, interleaved
 * re-time, improvement decision, and the winner's live confirmation (the runtime's dispatch
 * against the unmodified entry point, live_replay.h; core/gt_live.h decides from it); confirmed
 * winners go into the DB, which is rewritten atomically after every improved shape so an
 * interrupted run loses nothing it finished.
 *
 * On a GPU each shape runs in a worker process (search/gt_isolate): a candidate that faults (a
 * sticky CUDA error poisons the whole context) or hangs kills only the worker. The supervisor
 * knows which candidate was running from the worker's announcements, records it as failed and
 * restarts the shape without it. The supervisor itself never initialises CUDA, so forking stays
 * legal. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/gt_db.h"
#include "core/gt_filelock.h"
#include "core/gt_shapes.h"
#include "core/gt_shard.h"
#include "search/gt_isolate.h"
#include "gt_version.h"
#include "live_replay.h"
#include "tune_grouped.h"
#include "tune_retire.h"

static const char k_help[] =
    "Usage: gemmtune tune SHAPES -o DB [options]\n\n"
    "For each shape in SHAPES (see 'gemmtune shapes --help' for the formats): measure the\n"
    "baseline (today's path), enumerate every ready provider's candidates, rank them with a\n"
    "quick prune pass (ranking only), gate the best on fresh inputs against an fp64 reference,\n"
    "re-time the survivors and the baseline in interleaved cold rounds, and write a row only\n"
    "when the winner beats the baseline by max(--min-improvement, the baseline's noise).\n"
    "A row slower than its baseline is never written. An existing DB is read first (strictly:\n"
    "a malformed one stops the run untouched) and updated atomically after each improved shape.\n"
    "Rows record the device they were measured on (product name and memory, beyond arch and\n"
    "SM count). A key the DB already has a row for on this device whose choice races again and\n"
    "no longer wins (no candidate beats the baseline by the threshold, or the choice now fails\n"
    "the gate) has its row removed: outcome 'retired', and 'retired: KEY: WHY' in the summary.\n"
    "A choice the race did not reach (another --providers set, --budget) keeps its row.\n"
    "Before a winner is written it is confirmed live, through the path an application takes:\n"
    "the runtime engine's dispatch (what the preload shim runs on a DB hit) serves it on the\n"
    "caller's stream, against the unmodified entry point the key was issued through\n"
    "(cublasGemmEx with its default algorithm for a GemmEx key; the application's\n"
    "cublasLtMatmul with cuBLASLt's heuristic algorithm, the key's epilogue and bias for a\n"
    "cuBLASLt key), each captured as one CUDA graph of many calls over operand sets rotated past\n"
    "3x the L2 cache, each timed in three warmed stretches of its own, interleaved, in the\n"
    "shape's worker process. The row records the live times and speedup next to the\n"
    "harness's (DB columns live, live_us, live_baseline_us, live_speedup). A winner whose live\n"
    "gain is under the race's threshold is not written:\n"
    "outcome 'unconfirmed', and the key's kept line gives the live numbers; one the runtime\n"
    "fails to run is not written either.\n"
    "Where the confirmation cannot run (host providers, a build without CUDA, a row the runtime\n"
    "does not serve) the row is written on the harness's numbers, recorded 'skipped', and the\n"
    "note says why. The table's live column, csv/json's live columns and the summary carry the\n"
    "live speedup.\n"
    "How much of the space a shape gets follows its roofline floor (see --search): a shape\n"
    "whose baseline is within --floor-threshold of the floor gets the quick race only; others\n"
    "widen into the full space until three widenings in a row each gain under 2%. Each shape's\n"
    "third line gives its floor, the baseline's and the winner's share of it and the rule that\n"
    "stopped its search ('floor 7.0 us: baseline 55% and winner 91% of the bandwidth floor |\n"
    "search: quick pass + 3 widenings (...); stopped: no-gain: ...'); csv and json carry the\n"
    "same in columns, DB rows the floor and the winner's share, the summary the tuned geomean.\n"
    "A shapes file from `gemmtune capture` names the cuBLAS the application loaded; tune loads\n"
    "that one too (cuBLASLt rows apply only to the version they were tuned with) and says so.\n"
    "Its rows marked not_tunable (GEMMs the workload ran that cannot be tuned: pointer-array or\n"
    "grouped batches, FP8 scaling, device pointer mode...) are listed as skipped with the reason.\n"
    "Its grouped_mm keys (torch._grouped_mm: the experts of a Mixture-of-Experts layer) have\n"
    "torch's own function as their baseline, which only a process with torch runs: after the\n"
    "other shapes, tune races them in one (python3 -m gemmtune.grouped; GEMMTUNE_PYTHON names\n"
    "the interpreter), torch's path against every own grouped kernel instance, gated against\n"
    "torch's output and an fp32 product, and puts the rows won into the DB like any other.\n"
    "Progress goes to stderr: a live line on a terminal, otherwise a line per shape and one\n"
    "every GEMMTUNE_PROGRESS_S seconds (default 10), each with the whole run's ETA.\n\n"
    "  -o, --output DB        the tuned DB to create or update (required)\n"
    "  --resume               skip shapes an interrupted run already finished (its DB.journal.PID files)\n"
    "  --shard I/N            tune shard I of N: the shapes are split into N shards of about\n"
    "                         equal estimated cost, from the shapes file and the device's\n"
    "                         roofline alone, so every process computes the same split; the\n"
    "                         DB is DB.shard-I-of-N.db (-o parts/tuned.db, shard 1 of 4:\n"
    "                         parts/tuned.shard-1-of-4.db, its folder made), written even when\n"
    "                         the shard is empty; merge the shards into one DB after\n"
    "  --shard auto           I and N from the launcher that started this process, printed at\n"
    "                         start: torchrun (RANK, WORLD_SIZE), mpirun (OMPI_COMM_WORLD_RANK,\n"
    "                         _SIZE), MPICH (PMI_RANK, PMI_SIZE), srun (SLURM_PROCID,\n"
    "                         SLURM_NTASKS), a Slurm array (SLURM_ARRAY_TASK_ID, _COUNT, _MIN,\n"
    "                         times the tasks inside each); the CUDA device is the local rank\n"
    "                         (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,\n"
    "                         SLURM_LOCALID), 0 when CUDA_VISIBLE_DEVICES lists one device,\n"
    "                         the local rank modulo the count when it lists several; --device\n"
    "                         overrides\n"
    "  --shard N              with --estimate: print the plan for N shards and stop\n"
    "  --isolate / --no-isolate  run each shape in a worker process (default: on for CUDA)\n"
    "  --shape-timeout S      kill a worker silent for S seconds (default 120)\n"
    "  --no-grouped           list grouped_mm keys without racing them (no torch process)\n"
    "  --no-calibration       do not time the reference shapes: by default the baseline of the\n"
    "                         cheapest memory-bound and compute-bound shape (on the host the\n"
    "                         cheapest shape), the same in every shard of the file, is timed\n"
    "                         before and after the shapes and recorded in the DB's\n"
    "                         #calibration lines, so merge can name a slow or throttled GPU\n"
    "                         (two short baselines in a worker; docs/scale-out.md)\n"
    "  --no-live-confirm      write winners on the harness's numbers alone, without the live\n"
    "                         confirmation (rows record live 'off'; the summary says so)\n"
    "  --format table|csv|json  per-shape results on stdout\n";

static const char k_examples[] =
    "\nExamples:\n"
    "  gemmtune tune examples/small_cpu.csv -o tuned.db\n"
    "  gemmtune tune shapes.csv -o tuned.db --estimate          # what a full run would cost\n"
    "  gemmtune tune shapes.csv -o tuned.db --budget 3 --finalists 4 --rounds 9\n"
    "  gemmtune tune shapes.csv -o tuned.db --shard 1/4   # writes tuned.shard-1-of-4.db\n"
    "  mpirun -np 8 gemmtune tune shapes.csv -o parts/tuned.db --shard auto && \\\n"
    "    gemmtune merge parts -o tuned.db   # one GPU per rank, then one DB for every rank\n"
    "  gemmtune tune shapes.csv -o tuned.db --estimate --shard 8   # the 8-way plan\n"
    "  gemmtune tune shapes.csv -o tuned.db --resume             # continue a killed run\n"
    "  gemmtune tune shapes.csv -o tuned.db --search full        # every shape, the whole space\n"
    "  gemmtune tune shapes.csv -o tuned.db --floor-threshold 5  # quick race within 5% of it\n"
    "  (Slurm arrays, srun, torchrun, GNU parallel and deploying: docs/scale-out.md)\n\n"
    "Exit status: 0 every shape tuned (improved or not); 1 a shape failed; 64 usage (an unknown\n"
    "provider too); 65 malformed shapes file or DB; 66 missing shapes file; 69 no GPU with\n"
    "--backend cuda; 74 the DB cannot be written.\n";

#define TUNE_OPTS (GT_OPT_TYPES | GT_OPT_DEVICE | GT_OPT_CANDS | GT_OPT_TIMING | GT_OPT_RACE)

enum { T_OUT = 'o', T_FORMAT = 3000, T_HELP, T_RESUME, T_SHARD, T_ISOLATE, T_NOISOLATE, T_STIMEOUT,
       T_NOCALIB, T_NOGROUPED, T_NOLIVE };

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
  double race_s;      /* --estimate: the re-time rounds (and settle) at the baseline's speed */
  size_t n_budget;    /* candidates the prune pass did not reach within --budget */
  int throttled, sm_clock_mhz; /* clock-event (thermal/power) seen in a round; median SM clock */
  char faulted[1024]; /* candidates that killed a worker, comma separated */
  gt_tune_prev_t prev; /* the DB's row for the key before this race, and how its choice did */
  /* The floor and the budget it gave the shape (gt_search_result_t says what each means). */
  gt_floor_t floor;
  int stop;           /* gt_stop_t */
  char stop_why[256];
  int widenings;
  size_t n_widened, n_unsearched;
  /* The winner's live confirmation (when the race improved): the replay through the runtime's
   * dispatch against the unmodified entry point, made in the worker (live_replay.h); OFF with
   * --no-live-confirm. The supervisor decides from it whether the row is written. */
  gt_live_result_t live;
  bool raced_winner; /* the race improved: a winner was up for confirmation (live says how) */
} shape_outcome_t;

/* What a worker sends its supervisor (gt_isolate messages). Both sides are the same binary, one
 * forked from the other, so the structs travel as they are. */
enum { MSG_PROGRESS = 1, MSG_RESULT };
typedef struct progress_msg {
  int kind; /* MSG_PROGRESS */
  char phase[32];
  size_t done, total;
} progress_msg_t;
typedef struct result_msg {
  int kind; /* MSG_RESULT */
  shape_outcome_t o;
  bool have_row;
  gt_db_row_t row; /* the improved shape's row, when have_row */
} result_msg_t;

/* ---- worker side ------------------------------------------------------------------------- */
typedef struct {
  gt_isolate_chan_t *ch; /* to the supervisor; NULL in-process */
  const char *label;
  double t0;
} worker_ctx_t;

static void w_phase(void *ctx, const char *phase, size_t done, size_t total) {
  worker_ctx_t *w = ctx;
  if (!w->ch) {
    gt_cli_progress(w->label, phase, done, total, gt_cli_now() - w->t0);
    return;
  }
  progress_msg_t m = {MSG_PROGRESS, "", done, total};
  snprintf(m.phase, sizeof m.phase, "%s", phase);
  gt_isolate_send(w->ch, &m, sizeof m);
}

/* The supervisor blames a crash or a hang on the candidate announced last. */
static void w_cand(void *ctx, const gt_candidate_t *c) {
  worker_ctx_t *w = ctx;
  gt_isolate_announce(w->ch, c->name);
}

static void outcome_from(const gt_search_result_t *r, gt_status_t s, const gt_search_opts_t *so,
                         shape_outcome_t *o) {
  const int so_rounds = so->rounds > 0 ? so->rounds : 15;
  const int so_finalists = so->finalists > 0 ? so->finalists : 6;
  const double so_settle = so->settle_s > 0 ? so->settle_s : 0;
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
  o->floor = r->floor;
  o->stop = r->stop;
  snprintf(o->stop_why, sizeof o->stop_why, "%s", r->stop_why);
  o->widenings = r->widenings;
  o->n_widened = r->n_widened;
  o->n_unsearched = r->n_unsearched;
  for (size_t i = 0; i < r->n; i++) {
    if (r->c[i].disp == GT_DISP_FAILED_GATE) o->n_failed_gate++;
    if (r->c[i].disp == GT_DISP_FAILED_RUN) o->n_failed_run++;
    if (r->c[i].disp == GT_DISP_BUDGET) o->n_budget++;
  }
  if (r->baseline >= 0) {
    snprintf(o->base_name, sizeof o->base_name, "%s", r->c[r->baseline].cand.name);
    o->base_us = r->c[r->baseline].time.median;
  }
  if (r->baseline >= 0 && r->estimate_s > 0) {
    /* The race re-times the finalists and the baseline, each a careful sample per round; at the
     * baseline's speed that is rounds x (finalists + 1) x launches of it. */
    const double us = r->c[r->baseline].prune_us;
    size_t fin = r->n_active > 1 ? r->n_active - 1 : 0;
    if (fin > (size_t)so_finalists) fin = (size_t)so_finalists;
    o->race_s = (double)so_rounds * (double)(fin + 1) * r->launches * us * 1e-6 + so_settle;
  }
  if (r->best >= 0) {
    snprintf(o->best_prov, sizeof o->best_prov, "%s", r->c[r->best].cand.provider->name);
    snprintf(o->best_name, sizeof o->best_name, "%s", r->c[r->best].cand.name);
    o->best_us = r->c[r->best].time.median;
  }
}

/* The improved shape's winner through the path an application takes (live_replay.h), in this
 * process: the worker that raced it, so a fault here costs only the worker. A crash or a hang is
 * blamed on the winner (announced first), and the supervisor races the shape again without it. */
static void confirm_live(worker_ctx_t *w, const gt_db_row_t *row, const gt_search_opts_t *so,
                         bool live_confirm, gt_live_result_t *out) {
  if (!live_confirm) {
    memset(out, 0, sizeof *out);
    out->outcome = GT_LIVE_OUT_OFF;
    return;
  }
  gt_isolate_announce(w->ch, row->instance);
  w_phase(w, "live confirmation", 0, 1);
  gt_live_replay_row(row, so->measure.device, so->rounds, out);
}

/* Run one shape in this process (ch NULL) or in a worker; the row (when improved) goes to *row,
 * its live confirmation (live_confirm: else OFF) to o->live. prev is the DB's row for the key:
 * o->prev says how its choice did in this race. */
static gt_status_t run_shape(const gt_shape_t *sh, const gt_search_opts_t *so, const char *label,
                             gt_isolate_chan_t *ch, const gt_tune_prev_t *prev, bool live_confirm,
                             shape_outcome_t *o, gt_db_row_t *row, bool *have_row) {
  worker_ctx_t w = {ch, label, gt_cli_now()};
  gt_search_events_t ev = {&w, w_phase, w_cand};
  gt_search_result_t r;
  /* The baseline is what the shape's own entry point runs (capture records it). */
  gt_search_opts_t sso = *so;
  if (sh->entry != GT_ENTRY_DEFAULT) sso.entry = sh->entry;
  if (sh->workspace) sso.workspace = sh->workspace;
  gt_status_t s = gt_search_run(&sh->p, &sso, &ev, &r);
  if (!ch) gt_cli_progress_clear();
  outcome_from(&r, s, &sso, o);
  o->prev = *prev;
  gt_tune_prev_observe(&r, &o->prev);
  *have_row = s == GT_OK && r.improved;
  if (*have_row) *row = r.row;
  gt_search_result_free(&r);
  if (*have_row) {
    o->raced_winner = true;
    confirm_live(&w, row, &sso, live_confirm, &o->live);
  }
  if (!ch) gt_cli_progress_clear();
  return s;
}

typedef struct shape_job {
  const gt_shape_t *sh;
  const gt_search_opts_t *so;
  const gt_tune_prev_t *prev;
  bool live_confirm;
} shape_job_t;

static int shape_worker(gt_isolate_chan_t *ch, void *arg) {
  const shape_job_t *job = arg;
  result_msg_t m;
  memset(&m, 0, sizeof m);
  m.kind = MSG_RESULT;
  gt_status_t s = run_shape(job->sh, job->so, "tune", ch, job->prev, job->live_confirm, &m.o,
                            &m.row, &m.have_row);
  /* A sticky fault poisoned this context: no answer, so the supervisor blames the candidate it
   * announced last and retries without it. */
  if (s == GT_ERR_DEVICE && strstr(m.o.failure, "faulted")) return 3;
  return gt_isolate_send(ch, &m, sizeof m) == GT_OK ? 0 : 1;
}

/* ---- supervisor side ---------------------------------------------------------------------- */
typedef struct shape_watch {
  const char *label;
  double t0;
  result_msg_t result;
} shape_watch_t;

static bool on_shape_msg(void *ctx, const void *msg, size_t len) {
  shape_watch_t *w = ctx;
  int kind = 0;
  if (len >= sizeof kind) memcpy(&kind, msg, sizeof kind);
  if (kind == MSG_PROGRESS && len == sizeof(progress_msg_t)) {
    progress_msg_t m;
    memcpy(&m, msg, sizeof m);
    m.phase[sizeof m.phase - 1] = '\0';
    gt_cli_progress(w->label, m.phase, m.done, m.total, gt_cli_now() - w->t0);
  } else if (kind == MSG_RESULT && len == sizeof(result_msg_t)) {
    memcpy(&w->result, msg, sizeof w->result);
    return true;
  }
  return false;
}

/* Run one shape in a worker process, again without each candidate that crashed or hung it. */
static gt_status_t run_shape_isolated(const gt_shape_t *sh, gt_search_opts_t so, double timeout_s,
                                      const char *label, const gt_tune_prev_t *prev,
                                      bool live_confirm, shape_outcome_t *o, gt_db_row_t *row,
                                      bool *have_row) {
  char exclude[4096] = "";
  if (so.exclude) snprintf(exclude, sizeof exclude, "%s", so.exclude);
  *have_row = false;
  for (int attempt = 0; attempt < 8; attempt++) {
    so.exclude = exclude;
    shape_job_t job = {sh, &so, prev, live_confirm};
    shape_watch_t w = {label, gt_cli_now(), {0}};
    gt_isolate_end_t end;
    gt_status_t s = gt_isolate_run(shape_worker, &job, timeout_s, on_shape_msg, &w, &end);
    if (s != GT_OK) return s;
    gt_cli_progress_clear();
    if (end.answered) {
      *o = w.result.o;
      *have_row = w.result.have_row;
      if (*have_row) *row = w.result.row;
      snprintf(o->faulted, sizeof o->faulted, "%s", exclude);
      return o->status;
    }
    /* The worker died or hung: blame the candidate it announced last, retry without it. */
    const char *why = end.how == GT_ISOLATE_SILENT     ? "hung"
                      : end.how == GT_ISOLATE_SIGNALED ? "crashed"
                                                       : "faulted";
    if (!end.last[0]) {
      memset(o, 0, sizeof *o);
      o->status = GT_ERR_DEVICE;
      snprintf(o->failure, sizeof o->failure, "worker %s before running any candidate", why);
      return GT_ERR_DEVICE;
    }
    fprintf(stderr, "gemmtune tune: %s: candidate %s %s; recorded as failed, retrying the shape "
                    "without it\n", label, end.last, why);
    size_t el = strlen(exclude);
    snprintf(exclude + el, sizeof exclude - el, "%s%s", el ? "," : "", end.last);
  }
  memset(o, 0, sizeof *o);
  o->status = GT_ERR_DEVICE;
  snprintf(o->failure, sizeof o->failure, "too many worker failures (excluded: %s)", exclude);
  return GT_ERR_DEVICE;
}

/* Device detection, run in a short-lived worker so the supervisor never initialises CUDA. */
typedef struct backend_msg {
  int rc, backend;
  gt_device_info_t dev;
  char note[400]; /* why auto fell back to the host */
} backend_msg_t;

static int backend_worker(gt_isolate_chan_t *ch, void *arg) {
  gt_cli_search_t *cs = arg;
  backend_msg_t m;
  memset(&m, 0, sizeof m);
  m.rc = gt_cli_pick_backend("tune", cs, &m.dev);
  m.backend = cs->so.backend;
  snprintf(m.note, sizeof m.note, "%s", cs->note);
  return gt_isolate_send(ch, &m, sizeof m) == GT_OK ? 0 : 1;
}

static bool on_backend_msg(void *ctx, const void *msg, size_t len) {
  if (len != sizeof(backend_msg_t)) return false;
  memcpy(ctx, msg, len);
  return true;
}

static int pick_backend_forked(gt_cli_search_t *cs, gt_device_info_t *dev) {
  backend_msg_t m;
  gt_isolate_end_t end;
  /* No silence limit: detection has no candidate to blame, and it is quick or nothing is. */
  if (gt_isolate_run(backend_worker, cs, 0, on_backend_msg, &m, &end) != GT_OK)
    return gt_cli_pick_backend("tune", cs, dev);
  if (!end.answered) {
    fprintf(stderr, "gemmtune tune: device detection failed\n");
    return 70;
  }
  *dev = m.dev;
  cs->so.backend = (gt_backend_t)m.backend;
  cs->so.roof = m.dev.roof; /* the floors the search is budgeted by */
  snprintf(cs->note, sizeof cs->note, "%s", m.note);
  if (cs->so.backend == GT_BACKEND_CUDA && !cs->settle_given) cs->so.settle_s = 0.3;
  return m.rc;
}

/* ---- journal ------------------------------------------------------------------------------ */
/* The keys a journal lists as finished, appended to *keys (*n of them, capacity *cap). A torn
 * last line is a shape that was not finished. */
static void journal_read(FILE *f, char ***keys, size_t *n, size_t *cap) {
  char *line = NULL;
  size_t lcap = 0;
  ssize_t len;
  while ((len = getline(&line, &lcap, f)) > 0) {
    if (line[len - 1] != '\n') break;
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = '\0';
    if (*n == *cap) {
      size_t nc = *cap ? *cap * 2 : 64;
      char **nk = realloc(*keys, nc * sizeof *nk);
      if (!nk) break;
      *keys = nk, *cap = nc;
    }
    if (!((*keys)[*n] = strdup(line))) break;
    (*n)++;
  }
  free(line);
}

/* ---- the run ------------------------------------------------------------------------------ */
/* A shape's first line: index, label, baseline and best times, the harness's speedup, the live
 * one (or what the live confirmation did), the outcome, the winner written. */
#define TUNE_LINE "%5s  %-24.24s  %11s  %11s  %7s  %7s  %-11s  %s\n"

/* What the live confirmation did with a winner, for the summary. */
enum { TL_CONFIRMED = 0, TL_UNCONFIRMED, TL_FAILED, TL_SKIPPED, TL_OFF, TL__COUNT };

/* Everything one `tune` invocation reads, writes and counts. */
typedef struct tune_run {
  /* options */
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_fmt_t fmt;
  const char *out, *shapes_path;
  bool resume;
  int isolate, shard_i, shard_n;
  bool sharded;                     /* --shard I/N or auto: this run tunes one shard */
  bool shard_auto, shard_plan_only; /* --shard auto; --shard N (the plan alone) */
  int *plan;                        /* shape -> shard, when sharded or plan_only */
  char out_shard[1024];             /* the shard's DB path */
  double shape_timeout;
  bool no_calib;                    /* --no-calibration */
  bool no_grouped;                  /* --no-grouped: list grouped_mm keys, do not race them */
  bool no_live;                     /* --no-live-confirm */
  gt_tune_calib_t calib;            /* the reference shapes, timed before and after the shapes */
  /* inputs */
  gt_device_info_t dev;
  gt_db_device_t here; /* dev as rows record it */
  gt_shapes_t sh;
  size_t merged;
  gt_db_t db;
  char journal[1024]; /* this run's own journal, OUT.journal.PID, created at its first entry */
  FILE *jf;           /* open (and locked, which marks the run live) once created */
  char **done;
  size_t ndone, done_cap;
  char **stale;       /* journals of dead runs: read by --resume, removed when this run completes */
  size_t nstale;
  /* results */
  gt_table_t t;
  size_t n_tuned, n_improved, n_unchanged, n_failed, n_skipped, n_resumed, n_retired;
  size_t n_unconfirmed; /* winners the live confirmation did not confirm: not written */
  /* the live confirmation of the winners (count_live) */
  size_t live_n[TL__COUNT];
  char live_skip_why[GT_LIVE_WHY_MAX]; /* the first skipped winner's reason */
  double live_log, live_log_harness;   /* sums of log(speedup) over the live-timed winners */
  size_t live_timed;
  char retired[4096]; /* "  retired: KEY: why" lines for the summary */
  /* keys raced and kept on today's path: written as the DB's kept lines (gt_db_set_kept) */
  struct tune_kept {
    gt_problem_t key;
    char note[160];
  } *kept;
  size_t nkept, kept_cap;
  size_t n_untunable; /* marked rows (not_tunable): GEMMs the workload ran that cannot be tuned */
  double t_start, est_total, est_race;
  size_t n_ours; /* shapes this run tunes (its shard, less those --resume skips) */
  size_t n_stop[GT_STOP__COUNT]; /* shapes by the rule that stopped their search */
  int widenings;                 /* widenings over all shapes */
  double log_speedup;            /* sum of log(the row's claim) over searched shapes (its
                                    confirmed live speedup where it has one; unchanged: 0) */
  size_t n_speedup;
  int exit_code;
  char failures[4096];
} tune_run_t;

/* The most shards a run is split into: far more than the GPUs of any job, few enough that a
 * plan's per-shard table stays small. */
#define GT_TUNE_MAX_SHARDS 4096

/* --shard I/N, auto or N. Returns -1 when it parsed, else the exit code. */
static int parse_shard(tune_run_t *r, const char *arg) {
  char tail;
  r->sharded = r->shard_auto = r->shard_plan_only = false; /* the last --shard counts */
  if (strcmp(arg, "auto") == 0) {
    r->sharded = r->shard_auto = true;
    return -1;
  }
  if (sscanf(arg, "%d/%d%c", &r->shard_i, &r->shard_n, &tail) == 2 && r->shard_n >= 1 &&
      r->shard_n <= GT_TUNE_MAX_SHARDS && r->shard_i >= 0 && r->shard_i < r->shard_n) {
    r->sharded = true;
    return -1;
  }
  if (sscanf(arg, "%d%c", &r->shard_n, &tail) == 1 && r->shard_n >= 1 &&
      r->shard_n <= GT_TUNE_MAX_SHARDS) {
    r->shard_i = 0;
    r->shard_plan_only = true;
    return -1;
  }
  r->shard_n = 1;
  return gt_cli_usage_error("tune", "--shard wants I/N with 0 <= I < N <= %d, auto, or N "
                                    "(with --estimate), got '%s'", GT_TUNE_MAX_SHARDS, arg);
}

static const char *env_get(const char *name) { return getenv(name); }

/* --shard auto: the rank and world size from the launcher, and the GPU from the local rank
 * (gt_shard_device: counted within CUDA_VISIBLE_DEVICES) unless --device chose it or the run
 * is on the host. Says what it read. Returns -1 or the exit code. */
static int shard_from_launcher(tune_run_t *r) {
  gt_shard_env_t e;
  gt_status_t s = gt_shard_env_read(env_get, &e);
  if (s != GT_OK) return gt_cli_usage_error("tune", "--shard auto: %s", gt_err_msg());
  if (e.size > GT_TUNE_MAX_SHARDS)
    return gt_cli_usage_error("tune", "--shard auto: %d ranks (%s), more than %d shards",
                              e.size, e.vars, GT_TUNE_MAX_SHARDS);
  r->shard_i = e.rank, r->shard_n = e.size;
  char dev[512] = "";
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  int listed = 0, d = gt_shard_device(e.local_rank, cvd, &listed);
  /* --device chose it, or the run is on the host: no GPU to pick. */
  if (r->cs.device_given || strcmp(r->cs.backend_name, "host") == 0) d = -1;
  if (d >= 0) {
    r->cs.so.measure.device = d;
    snprintf(dev, sizeof dev, "; CUDA device %d (local rank %d%s%s)", d, e.local_rank,
             listed ? ", CUDA_VISIBLE_DEVICES=" : "", listed ? cvd : "");
  }
  fprintf(stderr, "gemmtune tune: shard %d of %d from %s (%s)%s\n", e.rank, e.size, e.source,
          e.vars, dev);
  /* Ranks timing on one GPU slow each other down: their winners are still right, their times
   * are not the device's. (One device listed is each rank's own under srun --gpus-per-task=1,
   * or one shared by all: which, the variable does not say.) */
  if (d >= 0 && listed > 1 && e.local_rank >= listed)
    fprintf(stderr, "gemmtune tune: warning: local rank %d shares CUDA device %d with local "
                    "rank %d (CUDA_VISIBLE_DEVICES lists %d): their timings disturb each other\n",
            e.local_rank, d, e.local_rank % listed, listed);
  return -1;
}

/* The DB a shard writes: DB with .shard-I-of-N before its extension, so shards given one -o
 * never overwrite each other (tuned.db -> tuned.shard-1-of-4.db), and its folder, made with
 * its parents when missing unless only estimating (every rank may be first; an existing one is
 * fine). Returns -1, or
 * the exit code of a usage error. */
static int shard_out_path(tune_run_t *r) {
  size_t len = strlen(r->out);
  if (len == 0 || r->out[len - 1] == '/')
    return gt_cli_usage_error("tune", "--shard: -o wants a DB file name, the shards' names are "
                                      "made from it (-o parts/tuned.db), got '%s'", r->out);
  const char *slash = strrchr(r->out, '/'), *dot = strrchr(r->out, '.');
  size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - r->out) : len;
  int n = snprintf(r->out_shard, sizeof r->out_shard, "%.*s.shard-%d-of-%d%s", (int)stem,
                   r->out, r->shard_i, r->shard_n, r->out + stem);
  if (n < 0 || (size_t)n >= sizeof r->out_shard)
    return gt_cli_usage_error("tune", "--shard: -o '%.64s...' is too long", r->out);
  size_t dir_len = slash ? (size_t)(slash - r->out) : 0;
  r->out = r->out_shard;
  for (size_t i = 1; i <= dir_len && !r->cs.so.estimate_only; i++) {
    if (i < dir_len && r->out_shard[i] != '/') continue;
    char dir[sizeof r->out_shard];
    snprintf(dir, sizeof dir, "%.*s", (int)i, r->out_shard);
    (void)mkdir(dir, 0777); /* a failure shows when the DB is written, naming the path */
  }
  return -1;
}

/* Parse the command line into r. Returns -1 to go on, else the exit code (help, usage error). */
static int parse_args(int argc, char **argv, tune_run_t *r) {
  static const struct option own[] = {{"output", required_argument, 0, T_OUT},
                                      {"format", required_argument, 0, T_FORMAT},
                                      {"help", no_argument, 0, T_HELP},
                                      {"resume", no_argument, 0, T_RESUME},
                                      {"shard", required_argument, 0, T_SHARD},
                                      {"isolate", no_argument, 0, T_ISOLATE},
                                      {"no-isolate", no_argument, 0, T_NOISOLATE},
                                      {"shape-timeout", required_argument, 0, T_STIMEOUT},
                                      {"no-calibration", no_argument, 0, T_NOCALIB},
                                      {"no-grouped", no_argument, 0, T_NOGROUPED},
                                      {"no-live-confirm", no_argument, 0, T_NOLIVE},
                                      {0, 0, 0, 0}};
  struct option *opts = gt_cli_options(own, TUNE_OPTS, NULL);
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
    switch (c) {
      case 'h':
      case T_HELP:
        printf("%s", k_help);
        gt_cli_options_help(stdout, TUNE_OPTS, NULL);
        printf("%s", k_examples);
        free(opts);
        return 0;
      case T_OUT: r->out = optarg; break;
      case T_FORMAT:
        if (gt_cli_parse_format("tune", optarg, &r->fmt)) return free(opts), EX_USAGE_;
        break;
      case T_RESUME: r->resume = true; break;
      case T_ISOLATE: r->isolate = 1; break;
      case T_NOISOLATE: r->isolate = 0; break;
      case T_NOCALIB: r->no_calib = true; break;
      case T_NOGROUPED: r->no_grouped = true; break;
      case T_NOLIVE: r->no_live = true; break;
      case T_STIMEOUT:
        r->shape_timeout = atof(optarg);
        if (r->shape_timeout <= 0) return free(opts), gt_cli_usage_error("tune", "--shape-timeout wants seconds > 0");
        break;
      case T_SHARD:
        if ((rc = parse_shard(r, optarg)) >= 0) return free(opts), rc;
        break;
      default:
        if ((rc = gt_cli_problem_opt("tune", &r->cp, c, optarg)) != 0 ||
            (rc = gt_cli_search_opt("tune", &r->cs, c, optarg)) != 0) {
          if (rc < 0) return free(opts), EX_USAGE_;
        } else {
          free(opts);
          return gt_cli_usage_error("tune", "unknown option");
        }
    }
  }
  free(opts);
  if (optind != argc - 1) return gt_cli_usage_error("tune", "expected one SHAPES file");
  if (!r->out) return gt_cli_usage_error("tune", "-o DB is required (the tuned DB to write)");
  r->shapes_path = argv[optind];
  if (r->shard_plan_only && !r->cs.so.estimate_only)
    return gt_cli_usage_error("tune", "--shard N (no I/) prints a plan: it needs --estimate; "
                                      "a process tuning one shard gives --shard I/N or auto");
  if (r->shard_auto && (rc = shard_from_launcher(r)) >= 0) return rc;
  if (r->sharded && (rc = shard_out_path(r)) >= 0) return rc;
  return -1;
}

/* The shard plan over the shapes file (core/gt_shard.h: by estimated cost on this device's
 * roofline, the same in every process of the job), printed with --estimate. */
static int make_plan(tune_run_t *r) {
  size_t n = r->sh.n;
  double *cost = calloc(n ? n : 1, sizeof *cost);
  uint64_t *hash = calloc(n ? n : 1, sizeof *hash);
  double *load = calloc((size_t)r->shard_n, sizeof *load);
  r->plan = calloc(n ? n : 1, sizeof *r->plan);
  if (!cost || !hash || !load || !r->plan) {
    free(cost), free(hash), free(load);
    fprintf(stderr, "gemmtune tune: out of memory\n");
    return EX_SOFTWARE_;
  }
  for (size_t i = 0; i < n; i++) {
    /* A marked row costs nothing: it is only reported. */
    cost[i] = r->sh.v[i].not_tunable[0]
                  ? 0.0
                  : gt_shard_cost(&r->sh.v[i].p, r->dev.peak_tflops, r->dev.peak_gbps);
    hash[i] = gt_problem_hash(&r->sh.v[i].p);
  }
  gt_shard_plan(cost, hash, n, r->shard_n, r->plan, load);
  if (r->cs.so.estimate_only) {
    double total = 0, max = 0;
    for (int s = 0; s < r->shard_n; s++) total += load[s], max = load[s] > max ? load[s] : max;
    printf("shard plan: %zu shapes over %d shards by estimated cost (units of one ~2 ms sample; "
           "largest %.2f, mean %.2f, %.3fx the mean)\n",
           n, r->shard_n, max, total / r->shard_n, total > 0 ? max * r->shard_n / total : 1.0);
    for (int s = 0; s < r->shard_n; s++) {
      size_t k = 0;
      for (size_t i = 0; i < n; i++) k += r->plan[i] == s;
      printf("  shard %d: %zu shapes, cost %.2f\n", s, k, load[s]);
    }
  }
  free(cost), free(hash), free(load);
  if (r->shard_plan_only) {
    free(r->plan);
    return 0;
  }
  return -1;
}

/* On a GPU, tune with the cuBLAS the captured application loaded (the shapes file names it),
 * and record it in the DB so verify and check load it too. */
static void use_app_libs(tune_run_t *r) {
  if (r->cs.so.backend != GT_BACKEND_CUDA) return;
  gt_cli_libs_t used;
  gt_cli_use_captured_libs("tune", r->shapes_path, &used);
  gt_cli_set_lib_validators(&r->db, &used);
}

/* ---- journal files and DB updates ---------------------------------------------------------
 * Several runs may tune into one DB at once (shards, disjoint shapes files): every update of the
 * DB takes the lock on its directory (gt_file_lock_dir), re-reads the file, puts the row into
 * what is on disk now and writes that back, so no run's rows replace another's. Each run has its
 * own journal, OUT.journal.PID, created at its first finished shape (a run killed before one
 * leaves none) and locked for as long as the run lives: a journal nobody holds belongs to a
 * dead run, which --resume continues and a fresh run replaces. The lock is a POSIX record lock
 * (fcntl), which belongs to the process and is not inherited by the shape workers it forks, so a
 * killed run's journal reads as dead even while a worker of it finishes. Journals are created,
 * scanned and removed only under the directory lock. */
#define TUNE_LOCK_TIMEOUT_S 60.0

/* Take (type F_WRLCK) or probe for (F_RDLCK) the record lock on the whole journal fd. */
static bool journal_lock(int fd, short type) {
  struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  return fcntl(fd, F_SETLK, &l) == 0;
}

/* Whether name is one of OUT's journals: "BASE.journal" (older runs) or "BASE.journal.PID". */
static bool is_journal_name(const char *name, const char *base) {
  size_t bl = strlen(base);
  if (strncmp(name, base, bl) != 0 || strncmp(name + bl, ".journal", 8) != 0) return false;
  const char *t = name + bl + 8;
  if (!*t) return true;
  if (*t++ != '.' || !*t) return false;
  for (; *t; t++)
    if (*t < '0' || *t > '9') return false;
  return true;
}

static void stale_add(tune_run_t *r, const char *path) {
  char **ns = realloc(r->stale, (r->nstale + 1) * sizeof *ns);
  if (!ns) return;
  r->stale = ns;
  if ((r->stale[r->nstale] = strdup(path))) r->nstale++;
}

/* Under the directory lock: find the journals of dead runs (no flock holder). With --resume
 * their finished keys are read; without, they are removed (this run starts over). Journals of
 * live runs are left alone: they belong to runs that are still going. */
static void journal_scan_locked(tune_run_t *r) {
  char dir[1024];
  if (!gt_file_dirname(r->out, dir, sizeof dir)) return;
  const char *slash = strrchr(r->out, '/');
  const char *base = slash ? slash + 1 : r->out;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  size_t removed = 0;
  while ((e = readdir(d))) {
    if (!is_journal_name(e->d_name, base)) continue;
    char path[2048];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !journal_lock(fd, F_RDLCK)) {
      close(fd); /* not a plain file, or a live run's */
      continue;
    }
    if (r->resume) {
      FILE *f = fdopen(fd, "r");
      if (f) {
        journal_read(f, &r->done, &r->ndone, &r->done_cap);
        fclose(f);
      } else {
        close(fd);
      }
      stale_add(r, path);
    } else {
      close(fd);
      if (unlink(path) == 0) removed++;
    }
  }
  closedir(d);
  if (removed && r->fmt == GT_FMT_TABLE)
    fprintf(stderr, "gemmtune tune: %s has a journal of an interrupted run; starting over "
                    "(--resume would continue it)\n", r->out);
}

/* The journals of earlier runs, before anything is tuned. */
static int journal_start(tune_run_t *r) {
  /* The writer refuses a symlink at the DB (gt_fileio.h); say so before any shape is tuned. */
  struct stat lst;
  if (lstat(r->out, &lst) == 0 && S_ISLNK(lst.st_mode)) {
    fprintf(stderr, "gemmtune tune: %s is a symbolic link; not replaced (give the file it points "
                    "at by its own name)\n", r->out);
    return EX_IOERR_;
  }
  snprintf(r->journal, sizeof r->journal, "%s.journal.%ld", r->out, (long)getpid());
  int lfd;
  gt_status_t s = gt_file_lock_dir(r->out, gt_file_lock_timeout_s(TUNE_LOCK_TIMEOUT_S), &lfd);
  if (s != GT_OK) return gt_cli_fail("tune", s);
  journal_scan_locked(r);
  gt_file_remove_stale_temps(r->out); /* a killed run's half-written DB copy */
  gt_file_unlock_dir(lfd);
  return -1;
}

/* Create this run's journal (under the directory lock, so no scan can take it for a dead one
 * between its creation and its flock). O_NOFOLLOW: a link planted at the name is not followed;
 * a leftover of a dead run with this pid is taken over (its entries are as true as ours). */
static gt_status_t journal_create(tune_run_t *r) {
  int lfd;
  gt_status_t s = gt_file_lock_dir(r->out, gt_file_lock_timeout_s(TUNE_LOCK_TIMEOUT_S), &lfd);
  if (s != GT_OK) return s;
  int fd = open(r->journal, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0666);
  struct stat st;
  if (fd < 0) {
    s = gt_err_set(GT_ERR_IO, "cannot write journal %s: %s", r->journal, strerror(errno));
  } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !journal_lock(fd, F_WRLCK)) {
    s = gt_err_set(GT_ERR_IO, "cannot write journal %s: not a file of this run", r->journal);
  } else if (!(r->jf = fdopen(fd, "a"))) {
    s = gt_err_set(GT_ERR_IO, "cannot write journal %s: %s", r->journal, strerror(errno));
  }
  if (s != GT_OK && fd >= 0 && !r->jf) close(fd);
  gt_file_unlock_dir(lfd);
  return s;
}

/* One finished shape into the journal, on disk before the next shape starts. */
static void journal_append(tune_run_t *r, const char *key, const char *outcome,
                           const char *winner) {
  if (!r->jf && journal_create(r) != GT_OK) {
    fprintf(stderr, "gemmtune tune: %s (--resume cannot skip this shape)\n", gt_err_msg());
    return;
  }
  fprintf(r->jf, "%s\t%s\t%s\n", key, outcome, winner);
  fflush(r->jf);
  fsync(fileno(r->jf));
}

/* Close this run's journal; the file stays for --resume until journal_remove. */
static void journal_close(tune_run_t *r) {
  if (r->jf) fclose(r->jf);
  r->jf = NULL;
}

/* The run completed: its journal and the dead runs' journals it continued are done with. */
static void journal_remove(tune_run_t *r) {
  journal_close(r);
  unlink(r->journal);
  for (size_t i = 0; i < r->nstale; i++) {
    unlink(r->stale[i]);
    free(r->stale[i]);
  }
  free(r->stale);
  r->stale = NULL;
  r->nstale = 0;
}

/* Remove the row for key from now (the DB as on disk, under the lock) if it is still the choice
 * prev names, for this device; another run may have replaced it since this one read the DB. */
static gt_status_t retire_locked(gt_db_t *now, const gt_problem_t *key, const gt_tune_prev_t *prev,
                                 const gt_db_device_t *here, bool *removed) {
  const gt_db_row_t *old = gt_db_lookup(now, key);
  /* The same choice with other recorded times is a newer row (another run re-tuned the key while
   * this one raced): evidence this race has not seen, so it stays. */
  if (!old || strcmp(old->provider, prev->provider) != 0 ||
      strcmp(old->instance, prev->instance) != 0 || old->time_us != prev->row_us ||
      old->baseline_us != prev->row_base_us || gt_db_row_fit(old, here) == GT_DB_FIT_OTHER)
    return GT_OK;
  gt_status_t s = gt_db_remove(now, key);
  if (s == GT_OK && removed) *removed = true;
  return s;
}

/* Put row (may be NULL: only the validators) into the DB as it is on disk now, under the
 * directory lock, and write it back; r->db becomes that DB. With retire, the row for retire's key
 * is removed instead, if it is still the choice this run raced (another run may have replaced it
 * since: then it stays, and *removed says false). A DB someone made unreadable since the run
 * started is refused, never overwritten (GT_ERR_DATA); r->db is then unchanged. */
static gt_status_t db_update(tune_run_t *r, const gt_db_row_t *row, const gt_problem_t *retire_key,
                             const gt_tune_prev_t *retire, bool *removed) {
  if (removed) *removed = false;
  int lfd;
  gt_status_t s = gt_file_lock_dir(r->out, gt_file_lock_timeout_s(TUNE_LOCK_TIMEOUT_S), &lfd);
  if (s != GT_OK) return s;
  gt_db_t now;
  s = gt_db_read(r->out, &now);
  if (s == GT_ERR_NOT_FOUND) {
    gt_db_init(&now);
    s = GT_OK;
  }
  if (s == GT_OK) {
    char when[32];
    time_t tt = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
    /* This run's validators (version, device, the application's libraries, its calibration)
     * over the file's; another run's calibration describes another GPU. */
    gt_calib_strip(&now);
    for (size_t v = 0; v < r->db.nval && s == GT_OK; v++)
      s = gt_db_set_validator(&now, r->db.validators[v].name, r->db.validators[v].value);
    if (s == GT_OK) s = gt_db_set_validator(&now, "gemmtune", GT_VERSION);
    if (s == GT_OK) s = gt_db_set_validator(&now, "device", r->dev.name);
    if (s == GT_OK) s = gt_db_set_validator(&now, "updated", when);
    if (s == GT_OK && row) s = gt_db_put(&now, row);
    if (s == GT_OK && retire) s = retire_locked(&now, retire_key, retire, &r->here, removed);
    for (size_t k = 0; k < r->nkept && s == GT_OK; k++)
      s = gt_db_set_kept(&now, &r->kept[k].key, r->kept[k].note);
    if (s == GT_OK) gt_db_drop_kept_with_rows(&now); /* a row (this run's or another's) wins */
  }
  if (s == GT_OK) s = gt_db_write(&now, r->out);
  gt_file_unlock_dir(lfd);
  if (s == GT_OK) {
    gt_db_free(&r->db);
    r->db = now;
  } else {
    gt_db_free(&now);
  }
  return s;
}

/* db_update, and on failure the message every caller prints and the run's exit code: false when
 * the DB could not be written (the run stops). */
static bool db_write(tune_run_t *r, const gt_db_row_t *row, const gt_problem_t *retire_key,
                     const gt_tune_prev_t *retire, bool *removed) {
  gt_status_t s = db_update(r, row, retire_key, retire, removed);
  if (s == GT_OK) return true;
  fprintf(stderr, "gemmtune tune: cannot write %s: %s\n", r->out, gt_err_msg());
  r->exit_code = gt_status_exit_code(s);
  return false;
}

/* Read every input strictly (device, shapes, the existing DB, the journal) before anything is
 * written. Returns -1 to go on, else the exit code; on an error nothing is left open. */
static int open_inputs(tune_run_t *r) {
  int rc;
  r->cs.quiet = r->fmt != GT_FMT_TABLE;
  if ((rc = gt_cli_need_file("tune", NULL, r->shapes_path)) != 0) return rc;
  if ((rc = pick_backend_forked(&r->cs, &r->dev)) != 0) return rc;
  gt_cli_db_device(&r->dev, &r->here);
  snprintf(r->cp.p.arch, sizeof r->cp.p.arch, "%s", r->dev.arch);
  r->cp.p.sm_count = r->dev.sm_count;
  gt_status_t s = gt_shapes_read(r->shapes_path, &r->cp.p, &r->sh, &r->merged);
  if (s != GT_OK) return gt_cli_fail("tune", s);
  if ((r->sharded || r->shard_plan_only) && (rc = make_plan(r)) >= 0) return gt_shapes_free(&r->sh), rc;
  gt_cli_backend_note("tune", &r->cs);
  gt_db_init(&r->db);
  struct stat stt;
  if (stat(r->out, &stt) == 0) {
    s = gt_db_read(r->out, &r->db);
    if (s != GT_OK) {
      gt_shapes_free(&r->sh);
      fprintf(stderr, "gemmtune tune: refusing to update %s: %s\n", r->out, gt_err_msg());
      return gt_status_exit_code(s);
    }
    gt_calib_strip(&r->db); /* an earlier run's: this one measures its own */
  }
  if ((rc = journal_start(r)) >= 0) {
    gt_shapes_free(&r->sh);
    gt_db_free(&r->db);
    return rc;
  }
  char now[32];
  time_t tt = time(NULL);
  strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime(&tt));
  gt_db_set_validator(&r->db, "gemmtune", GT_VERSION);
  gt_db_set_validator(&r->db, "device", r->dev.name);
  gt_db_set_validator(&r->db, "updated", now);
  use_app_libs(r);
  if (!r->no_calib && !r->cs.so.estimate_only)
    gt_tune_calib_plan(&r->calib, &r->sh, &r->dev, &r->cs.so, r->shard_i,
                       r->sharded ? r->shard_n : 0);
  return -1;
}

/* Time the references in phase and put them into the DB's validators (written with the next
 * update). */
static void calibrate(tune_run_t *r, int phase) {
  if (gt_tune_calib_measure(&r->calib, &r->cs.so, r->isolate, r->shape_timeout, phase) &&
      gt_calib_store(&r->db, &r->calib.c) != GT_OK)
    fprintf(stderr, "gemmtune tune: %s\n", gt_err_msg());
}

static void print_header(tune_run_t *r) {
  const gt_device_info_t *dev = &r->dev;
  if (r->fmt == GT_FMT_TABLE) {
    printf("device: %s (%s, %d %s); %zu shapes from %s%s; timing %s, %d rounds, min improvement "
           "%.1f%%%s; %s\n",
           dev->name, dev->arch, dev->sm_count, strcmp(dev->arch, "cpu") ? "SMs" : "cores",
           r->sh.n, r->shapes_path, r->merged ? " (duplicates merged)" : "",
           r->cs.so.measure.warm ? "warm" : "cold", r->cs.so.rounds,
           100 * r->cs.so.min_improvement, r->isolate ? "; one worker process per shape" : "",
           r->no_live ? "live confirmation off (--no-live-confirm)"
           : r->cs.so.backend == GT_BACKEND_CUDA
               ? "winners confirmed live before they are written"
               : "no live confirmation on the host (no application call reaches it)");
    if (dev->busy_processes > 0)
      fprintf(stderr, "gemmtune tune: warning: %d other process(es) are using the GPU; timings "
                      "will be noisy\n", dev->busy_processes);
  }
  static const char *const names[] = {"shape", "label", "mapping", "baseline_us", "best_us",
                                      "speedup", "outcome", "winner", "note", "floor_us",
                                      "floor_bound", "baseline_floor_pct", "winner_floor_pct",
                                      "search_stop", "widenings", "search", "live",
                                      "live_us", "live_baseline_us", "live_speedup"};
  static const bool num[] = {1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1};
  gt_table_begin(&r->t, stdout, r->fmt, 20, names, num);
  if (r->fmt == GT_FMT_TABLE)
    printf(TUNE_LINE, "shape", "label / mapping", "baseline_us", "best_us", "speedup", "live",
           "outcome", "winner");
  fflush(stdout); /* the header before the first progress line, also through a pipe */
}

/* Whether shape x is left to this run: in its shard and not finished by an earlier one. */
static bool shape_is_ours(tune_run_t *r, const gt_shape_t *x, char *key, size_t cap) {
  if (r->sharded && r->plan[x - r->sh.v] != r->shard_i) {
    r->n_skipped++;
    return false;
  }
  gt_problem_format_key(&x->p, key, cap);
  for (size_t d = 0; d < r->ndone; d++)
    if (strcmp(r->done[d], key) == 0) {
      r->n_resumed++;
      return false;
    }
  return true;
}

/* A race that wrote no row: when the DB's row for the key raced and lost, remove it (the DB is
 * rewritten at once) and say so in note ("retired: ..."), also for the summary; note is left
 * alone when nothing was retired or tried. unconfirmed: the race's winner, which was not
 * confirmed live (live_why: what the replay found); NULL when no candidate beat the baseline.
 * Returns 1 when retired, 0 when not, -1 when the DB could not be written (the run stops). */
static int retire_prev(tune_run_t *r, const gt_shape_t *x, const gt_tune_prev_t *prev,
                       const char *why, char *note, size_t cap);

static int retire_row(tune_run_t *r, const gt_shape_t *x, const shape_outcome_t *o,
                      const gt_db_row_t *unconfirmed, const char *live_why, char *note,
                      size_t cap) {
  char why[600];
  const bool retires =
      unconfirmed ? gt_tune_prev_retires_unconfirmed(&o->prev, unconfirmed->provider,
                                                     unconfirmed->instance, live_why, o->base_us,
                                                     o->threshold, why, sizeof why)
                  : gt_tune_prev_retires(&o->prev, o->base_us, o->best_us, o->threshold, why,
                                         sizeof why);
  if (!retires) return 0;
  return retire_prev(r, x, &o->prev, why, note, cap);
}

/* Remove the DB's row prev for x's key (the race disproved it, for why), count it for the summary
 * and say so in note. Returns 1 retired, 0 not (another run replaced the row meanwhile: note says
 * so), -1 when the DB could not be written (the run stops). */
static int retire_prev(tune_run_t *r, const gt_shape_t *x, const gt_tune_prev_t *prev,
                       const char *why, char *note, size_t cap) {
  bool removed = false;
  if (!db_write(r, NULL, &x->p, prev, &removed)) return -1;
  if (!removed) {
    snprintf(note, cap, "the DB's row %s/%s was not retired: another run replaced it meanwhile",
             prev->provider, prev->instance);
    return 0;
  }
  r->n_retired++;
  snprintf(note, cap, "retired: %s; its row is removed from the DB", why);
  char key[1024];
  gt_problem_format_key(&x->p, key, sizeof key);
  size_t l = strlen(r->retired);
  snprintf(r->retired + l, sizeof r->retired - l, "  retired: %s: %s\n", key, why);
  return 1;
}

/* Remember that the race kept key on today's path (for the DB's kept lines); out of memory
 * only loses the line, never the run. */
static void remember_kept(tune_run_t *r, const gt_problem_t *key, const char *note) {
  if (r->nkept == r->kept_cap) {
    size_t nc = r->kept_cap ? 2 * r->kept_cap : 16;
    struct tune_kept *k = realloc(r->kept, nc * sizeof *k);
    if (!k) return;
    r->kept = k;
    r->kept_cap = nc;
  }
  struct tune_kept *k = &r->kept[r->nkept++];
  k->key = *key;
  snprintf(k->note, sizeof k->note, "%s: %s", r->here.name, note);
}

/* The run's totals of the live confirmation: what happened to each winner, and the geomeans of
 * the confirmed rows' live and harness speedups (how far the harness's claim carried). */
static void count_live(tune_run_t *r, const shape_outcome_t *o, const gt_db_row_t *row,
                       bool written) {
  switch ((gt_live_outcome_t)o->live.outcome) {
    case GT_LIVE_OUT_OFF: r->live_n[TL_OFF]++; break;
    case GT_LIVE_OUT_SKIPPED:
      if (!r->live_n[TL_SKIPPED]++)
        snprintf(r->live_skip_why, sizeof r->live_skip_why, "%s", o->live.why);
      break;
    case GT_LIVE_OUT_FAILED: r->live_n[TL_FAILED]++; break;
    case GT_LIVE_OUT_DONE:
      r->live_n[written ? TL_CONFIRMED : TL_UNCONFIRMED]++;
      if (o->live.speedup > 0 && row->speedup > 0) {
        r->live_log += log(o->live.speedup);
        r->live_log_harness += log(row->speedup);
        r->live_timed++;
      }
      break;
    default: r->live_n[TL_FAILED]++; break;
  }
}

/* Count the shape's outcome, put an improved row into the DB (rewritten at once) when its live
 * confirmation allows (*have_row becomes false when it does not: the shape then reads as
 * unchanged), and say what happened in note. Returns the outcome word; NULL when the DB could not
 * be written (the run stops). */
static const char *record_outcome(tune_run_t *r, const gt_shape_t *x, gt_status_t s,
                                  const shape_outcome_t *o, const gt_db_row_t *row,
                                  bool *have_row, char *note, size_t cap) {
  const char *outcome;
  note[0] = '\0';
  if (s != GT_OK) {
    outcome = "failed";
    r->n_failed++;
    snprintf(note, cap, "%s", o->failure);
    size_t fl = strlen(r->failures);
    snprintf(r->failures + fl, sizeof r->failures - fl, "  line %d (%s): %s\n", x->line,
             x->label[0] ? x->label : x->view, o->failure);
    r->exit_code = 1;
  } else if (r->cs.so.estimate_only) {
    outcome = "estimate";
    r->est_total += o->estimate_s;
    r->est_race += o->race_s;
    snprintf(note, cap, "prune pass of %zu candidates: about %.1f s; re-time rounds about %.1f s",
             o->n_active, o->estimate_s, o->race_s);
  } else if (*have_row) {
    /* The winner beat the baseline in the harness; its live confirmation decides the row. */
    gt_live_state_t ls;
    char lnote[GT_LIVE_WHY_MAX + 200];
    const bool write = gt_live_decide(&o->live, row->speedup, o->threshold, &ls, lnote,
                                      sizeof lnote);
    count_live(r, o, row, write);
    if (write) {
      outcome = "improved";
      r->n_improved++;
      gt_db_row_t stamped = *row; /* the row records the device it was measured on */
      gt_db_row_set_device(&stamped, &r->here);
      gt_db_row_set_live(&stamped, ls, o->live.served_us, o->live.plain_us);
      if (!db_write(r, &stamped, NULL, NULL, NULL)) return NULL;
      snprintf(note, cap, "%s", lnote);
    } else {
      /* Not written: the key stays on today's path, and its kept line carries the live numbers
       * (first, so a cut line keeps them). */
      outcome = "unconfirmed";
      r->n_unconfirmed++;
      *have_row = false;
      snprintf(note, cap, "%s; best %s/%s", lnote, row->provider, row->instance);
      char rnote[700] = "";
      const char *lwhy = strncmp(lnote, "not written: ", 13) == 0 ? lnote + 13 : lnote;
      int rr = retire_row(r, x, o, row, lwhy, rnote, sizeof rnote);
      if (rr < 0) return NULL;
      if (rnote[0]) {
        size_t nl = strlen(note);
        snprintf(note + nl, cap - nl, "; %s", rnote);
      }
      remember_kept(r, &x->p, note);
    }
  } else {
    outcome = "unchanged";
    r->n_unchanged++;
    if (o->best_us > 0 && strcmp(o->best_name, o->base_name))
      snprintf(note, cap, "best %s %.3f us did not beat the baseline by %.1f%%", o->best_name,
               o->best_us, 100 * o->threshold);
    else
      snprintf(note, cap, "the baseline was fastest");
    int rr = retire_row(r, x, o, NULL, NULL, note, cap);
    if (rr < 0) return NULL;
    if (rr > 0) outcome = "retired";
    remember_kept(r, &x->p, note); /* written with the DB's next update (at the latest, the end) */
  }
  if (o->n_budget) {
    size_t nl = strlen(note);
    snprintf(note + nl, cap - nl, "%sprune pass stopped at --budget %.1f s: %zu of %zu candidates "
             "not reached", nl ? "; " : "", r->cs.so.budget_s, o->n_budget,
             o->n_active ? o->n_active - 1 : 0);
  }
  if (o->throttled) {
    size_t nl = strlen(note);
    snprintf(note + nl, cap - nl, "%sTHROTTLED: thermal/power clock events in the race "
             "(median SM clock %d MHz)", nl ? "; " : "", o->sm_clock_mhz);
  }
  if (o->n_failed_gate || o->n_failed_run) {
    size_t nl = strlen(note);
    snprintf(note + nl, cap - nl, "%s%zu failed the gate, %zu failed to run%s%s", nl ? "; " : "",
             o->n_failed_gate, o->n_failed_run, o->faulted[0] ? " (faulted: " : "",
             o->faulted[0] ? o->faulted : "");
    if (o->faulted[0]) strncat(note, ")", cap - strlen(note) - 1);
  }
  return outcome;
}

/* Whether the shape was searched (not an estimate, not a failure): its floor shares mean something. */
static bool s_searched(const shape_outcome_t *o) {
  return o->status == GT_OK && o->stop != GT_STOP_NONE && o->base_us > 0;
}

/* One shape's line(s) on stdout, then its journal entry. */
static void print_shape(tune_run_t *r, size_t i, const gt_shape_t *x, const char *key,
                        const shape_outcome_t *o, const gt_db_row_t *row, bool have_row,
                        const char *outcome, const char *note) {
  char idx[16], bus[32], best[32], sp[32], winner[256], lsp[32] = "-", lus[32] = "-",
      lbus[32] = "-";
  const char *lword = "-", *lcol = "-";
  snprintf(idx, sizeof idx, "%zu", i + 1);
  /* The live confirmation of the winner (have_row: it was written): its speedup when the replay
   * timed both paths, else what happened. */
  if (o->raced_winner) {
    switch ((gt_live_outcome_t)o->live.outcome) {
      case GT_LIVE_OUT_DONE:
        lword = have_row ? "confirmed" : "unconfirmed";
        snprintf(lsp, sizeof lsp, "%.3f", o->live.speedup);
        snprintf(lus, sizeof lus, "%.3f", o->live.served_us);
        snprintf(lbus, sizeof lbus, "%.3f", o->live.plain_us);
        lcol = lsp;
        break;
      case GT_LIVE_OUT_OFF: lword = lcol = "off"; break;
      case GT_LIVE_OUT_SKIPPED: lword = "skipped", lcol = "skip"; break;
      default: lword = "failed", lcol = "fail"; break;
    }
  }
  snprintf(bus, sizeof bus, o->base_us > 0 ? "%.3f" : "-", o->base_us);
  snprintf(best, sizeof best, o->best_us > 0 ? "%.3f" : "-", o->best_us);
  snprintf(sp, sizeof sp, o->best_us > 0 ? "%.3f" : "-",
           have_row ? row->speedup : o->base_us > 0 && o->best_us > 0 ? o->base_us / o->best_us : 0);
  snprintf(winner, sizeof winner, "%s%s%s", have_row ? row->provider : "", have_row ? "/" : "",
           have_row ? row->instance : "-");
  /* The floor: the baseline's share of it and, after tuning, the share of what now runs (the
   * winner, or the baseline kept). */
  char floor_txt[256], search_txt[512], fus[32] = "-", bpct[16], wpct[16], widen[16];
  const double now_us = have_row ? row->time_us : o->base_us;
  gt_cli_floor_text(&o->floor, o->base_us, have_row ? row->time_us : o->best_us, have_row,
                    floor_txt, sizeof floor_txt);
  gt_cli_search_text(o->stop, o->stop_why, o->widenings, o->n_widened, o->n_unsearched,
                     search_txt, sizeof search_txt);
  if (o->floor.us > 0) snprintf(fus, sizeof fus, "%.4g", o->floor.us);
  gt_cli_floor_pct(bpct, sizeof bpct, gt_floor_share(&o->floor, o->base_us));
  gt_cli_floor_pct(wpct, sizeof wpct, gt_floor_share(&o->floor, now_us));
  snprintf(widen, sizeof widen, "%d", o->widenings);
  const bool searched = s_searched(o);
  if (r->fmt == GT_FMT_TABLE) {
    printf(TUNE_LINE, idx, x->label[0] ? x->label : x->view, bus, best, sp, lcol, outcome,
           winner);
    printf("%5s  %s%s%s\n", "", x->view, note[0] ? "  | " : "", note);
    if (searched) printf("%5s  %s | %s\n", "", floor_txt, search_txt);
    fflush(stdout);
  } else {
    const char *cells[] = {idx, x->label, x->view, bus, best, sp, outcome, winner, note, fus,
                           gt_bound_name(o->floor.bound), searched ? bpct : "-",
                           searched ? wpct : "-", gt_stop_name((gt_stop_t)o->stop), widen,
                           searched ? search_txt : "-", lword, lus, lbus, lsp};
    gt_table_row(&r->t, cells);
  }
  /* Journal after the DB write: a shape is 'done' only once its row is safely on disk. */
  journal_append(r, key, outcome, winner);
}

/* A marked row (capture's not_tunable column): a GEMM the workload ran that gemmtune cannot tune
 * (pointer-array or grouped batches, FP8 scaling, device pointer mode, ...). It is listed with
 * its reason, so the run accounts for every captured row, and never raced or journaled. */
static void report_skipped(tune_run_t *r, size_t i, const gt_shape_t *x, const char *note);

static void report_untunable(tune_run_t *r, size_t i, const gt_shape_t *x) {
  char note[GT_SHAPE_REASON_MAX + 32];
  snprintf(note, sizeof note, "not tunable: %s", x->not_tunable);
  report_skipped(r, i, x, note);
}

/* A shape listed as skipped with note (counted with the marked rows). */
static void report_skipped(tune_run_t *r, size_t i, const gt_shape_t *x, const char *note) {
  r->n_untunable++;
  char idx[16];
  snprintf(idx, sizeof idx, "%zu", i + 1);
  if (r->fmt == GT_FMT_TABLE) {
    printf(TUNE_LINE, idx, x->label[0] ? x->label : x->view, "-", "-", "-", "-", "skipped", "-");
    printf("%5s  %s  | %s\n", "", x->view, note);
    fflush(stdout);
  } else {
    /* The floor and search columns stay empty: nothing was searched. */
    const char *cells[] = {idx, x->label, x->view, "-", "-", "-", "skipped", "-", note,
                           "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"};
    gt_table_row(&r->t, cells);
  }
}

/* A grouped_mm key (torch._grouped_mm, MoE experts) this run does not race: why (the race was
 * not asked for, or could not run). Counted with the marked rows: listed, never journaled. */
static void report_grouped(tune_run_t *r, size_t i, gt_shape_t x, const char *why) {
  char note[800];
  snprintf(note, sizeof note, "not tunable here: grouped_mm (baseline torch's own function, raced "
           "in torch): %s", why);
  report_skipped(r, i, &x, note);
}

/* One grouped key's outcome from the race: counted, its row put into the DB, printed as tune
 * prints any shape. Returns false when the DB cannot be written (the run stops). */
static bool record_grouped(tune_run_t *r, size_t i, const gt_shape_t *x,
                           const gt_tune_grouped_key_t *k, const gt_db_t *rows) {
  char note[700], bus[32], best[32], sp[32], idx[16];
  const char *outcome = k->outcome;
  snprintf(note, sizeof note, "%s", k->note);
  const gt_db_row_t *row = strcmp(outcome, "improved") == 0 ? gt_db_lookup(rows, &x->p) : NULL;
  if (strcmp(outcome, "improved") == 0 && !row) {
    outcome = "failed";
    snprintf(note, sizeof note, "the race reported a win but wrote no row for the key");
  }
  if (strcmp(outcome, "skipped") == 0) {
    snprintf(note, sizeof note, "not tunable here: grouped_mm: %s", k->note);
    report_skipped(r, i, x, note);
    return true;
  }
  r->n_tuned++;
  if (row) {
    r->n_improved++;
    gt_db_row_t stamped = *row;
    gt_db_row_set_device(&stamped, &r->here);
    if (!db_write(r, &stamped, NULL, NULL, NULL)) return false;
    r->log_speedup += gt_db_row_claim(row) > 0 ? log(gt_db_row_claim(row)) : 0;
    r->n_speedup++;
  } else if (strcmp(outcome, "unchanged") == 0) {
    r->n_unchanged++;
    r->n_speedup++;
    /* The DB's row for the key on this device (an earlier race's winner) no longer wins against
     * torch: it is retired, as a plain key's is, unless another run replaced it meanwhile. */
    gt_tune_prev_t prev;
    gt_tune_prev_find(&r->db, &x->p, &r->here, &prev);
    if (prev.provider[0]) {
      char why[800];
      snprintf(why, sizeof why, "its choice %s/%s no longer beats torch: %s", prev.provider,
               prev.instance, k->note);
      const int rt = retire_prev(r, x, &prev, why, note, sizeof note);
      if (rt < 0) return false;
      if (rt > 0) outcome = "retired";
    }
    remember_kept(r, &x->p, note);
  } else {
    outcome = "failed";
    r->n_failed++;
    if (!note[0]) snprintf(note, sizeof note, "the grouped race did not report this key");
    size_t fl = strlen(r->failures);
    snprintf(r->failures + fl, sizeof r->failures - fl, "  line %d (%s): %s\n", x->line,
             x->label[0] ? x->label : x->view, note);
    r->exit_code = 1;
  }
  snprintf(idx, sizeof idx, "%zu", i + 1);
  snprintf(bus, sizeof bus, k->base_us > 0 ? "%.3f" : "-", k->base_us);
  snprintf(best, sizeof best, k->best_us > 0 ? "%.3f" : "-", k->best_us);
  snprintf(sp, sizeof sp, k->base_us > 0 && k->best_us > 0 ? "%.3f" : "-",
           row ? row->speedup : k->best_us > 0 ? k->base_us / k->best_us : 0);
  const char *winner = row ? k->winner : "-";
  if (r->fmt == GT_FMT_TABLE) {
    /* The live column stays empty: the race already timed both paths in a torch process, in
     * CUDA graphs over rotated operands, the way the application runs them. */
    printf(TUNE_LINE, idx, x->label[0] ? x->label : x->view, bus, best, sp, "-", outcome, winner);
    printf("%5s  %s  | %s; baseline torch._grouped_mm\n", "", x->view, note[0] ? note : "-");
    fflush(stdout);
  } else {
    const char *cells[] = {idx, x->label, x->view, bus, best, sp, outcome, winner, note,
                           "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"};
    gt_table_row(&r->t, cells);
  }
  return true;
}

/* The run's grouped keys (shape indices idx[0..n)), raced in one torch process after the other
 * shapes. Where the race cannot run, each key is listed with the reason. */
static void tune_grouped(tune_run_t *r, const size_t *idx, size_t n) {
  if (n == 0) return;
  const char *skip = r->no_grouped ? "not raced (--no-grouped)"
                     : r->cs.so.estimate_only ? "not estimated (the race runs in torch)"
                     : r->cs.so.backend != GT_BACKEND_CUDA && !getenv("GEMMTUNE_TEST_PROVIDERS")
                         ? "not raced: this run is on the CPU providers (the race needs the GPU)"
                         : NULL;
  if (skip) {
    for (size_t j = 0; j < n; j++) report_grouped(r, idx[j], r->sh.v[idx[j]], skip);
    return;
  }
  int *lines = calloc(n, sizeof *lines);
  gt_tune_grouped_key_t *keys = calloc(n, sizeof *keys);
  if (!lines || !keys) {
    for (size_t j = 0; j < n; j++) report_grouped(r, idx[j], r->sh.v[idx[j]], "out of memory");
    free(lines);
    free(keys);
    return;
  }
  for (size_t j = 0; j < n; j++) lines[j] = r->sh.v[idx[j]].line;
  gt_tune_grouped_opts_t go = {.shapes_path = r->shapes_path, .lines = lines, .nlines = n,
                               .device = r->cs.so.measure.device, .rounds = r->cs.so.rounds,
                               .threshold_pct = 100 * r->cs.so.min_improvement,
                               .timeout_s = r->shape_timeout * (double)(n + 1)};
  if (r->fmt == GT_FMT_TABLE)
    fprintf(stderr, "gemmtune tune: %zu grouped_mm key%s: racing torch's path against the own "
            "grouped kernels in a torch process (python3 -m gemmtune.grouped)\n", n,
            n == 1 ? "" : "s");
  gt_db_t rows;
  char why[512];
  gt_status_t s = gt_tune_grouped_race(&go, keys, &rows, why, sizeof why);
  bool db_ok = true;
  for (size_t j = 0; j < n; j++) {
    const gt_shape_t *x = &r->sh.v[idx[j]];
    /* Where the race cannot run here (no torch, no GPU for it, no library) the keys are listed;
     * a race that ran and broke fails the keys it did not report. */
    if ((s != GT_OK && s != GT_ERR_IO) || !db_ok) {
      report_grouped(r, idx[j], *x, db_ok ? why : "not recorded: the DB could not be written");
      continue;
    }
    gt_tune_grouped_key_t k = keys[j];
    if (!k.outcome[0]) {
      snprintf(k.outcome, sizeof k.outcome, "failed");
      snprintf(k.note, sizeof k.note, "the grouped race did not reach this key%s%s",
               why[0] ? ": " : "", why);
    }
    db_ok = record_grouped(r, idx[j], x, &k, &rows);
  }
  gt_db_free(&rows);
  free(lines);
  free(keys);
}

/* The run's totals of what the budget did and of the tuned speedups (a shape left unchanged
 * counts 1.0: the baseline stays). */
static void count_search(tune_run_t *r, const shape_outcome_t *o, const gt_db_row_t *row,
                         bool have_row) {
  if (!s_searched(o)) return;
  r->n_stop[(unsigned)o->stop < GT_STOP__COUNT ? o->stop : GT_STOP_NONE]++;
  r->widenings += o->widenings;
  double claim = 0;
  if (have_row) {
    /* A written row whose live replay ran was confirmed (else it would not be written): it
     * claims the replay's speedup, as the DB's row records it. */
    gt_db_row_t c = *row;
    if (o->live.outcome == GT_LIVE_OUT_DONE)
      gt_db_row_set_live(&c, GT_LIVE_CONFIRMED, o->live.served_us, o->live.plain_us);
    claim = gt_db_row_claim(&c);
  }
  r->log_speedup += claim > 0 ? log(claim) : 0;
  r->n_speedup++;
}

/* Tune every shape left to this run, in file order; stops early only when the DB cannot be
 * written. */
static void tune_shapes(tune_run_t *r) {
  char key[1024];
  for (size_t i = 0; i < r->sh.n; i++)
    r->n_ours += !r->sh.v[i].not_tunable[0] && r->sh.v[i].p.op != GT_OP_GROUPED_MM &&
                 shape_is_ours(r, &r->sh.v[i], key, sizeof key);
  r->n_skipped = r->n_resumed = 0; /* counted again below, as each shape is reached */
  gt_cli_progress_run(r->t_start, -1);
  size_t *grouped = calloc(r->sh.n + 1, sizeof *grouped), ngrouped = 0;
  for (size_t i = 0; i < r->sh.n; i++) {
    const gt_shape_t *x = &r->sh.v[i];
    if (!shape_is_ours(r, x, key, sizeof key)) continue;
    if (x->not_tunable[0]) {
      report_untunable(r, i, x);
      continue;
    }
    if (x->p.op == GT_OP_GROUPED_MM) {
      if (grouped) grouped[ngrouped++] = i;
      else report_grouped(r, i, *x, "out of memory");
      continue;
    }
    /* The run's ETA: the shapes done so far, at their mean, for the shapes left. */
    if (r->n_tuned)
      gt_cli_progress_run(r->t_start, (gt_cli_now() - r->t_start) / (double)r->n_tuned *
                                          (double)r->n_ours);
    char label[160];
    snprintf(label, sizeof label, "[%zu/%zu] %s", i + 1, r->sh.n, x->label[0] ? x->label : x->view);
    shape_outcome_t o;
    gt_db_row_t row;
    bool have_row = false;
    gt_status_t s;
    gt_tune_prev_t prev; /* the DB's row for the key: a race it loses retires it */
    gt_tune_prev_find(&r->db, &x->p, &r->here, &prev);
    if (r->isolate)
      s = run_shape_isolated(x, r->cs.so, r->shape_timeout, label, &prev, !r->no_live, &o, &row,
                             &have_row);
    else
      s = run_shape(x, &r->cs.so, label, NULL, &prev, !r->no_live, &o, &row, &have_row);
    r->n_tuned++;
    char note[1536];
    const char *outcome = record_outcome(r, x, s, &o, &row, &have_row, note, sizeof note);
    if (!outcome) break;
    print_shape(r, i, x, key, &o, &row, have_row, outcome, note);
    count_search(r, &o, &row, have_row);
  }
  gt_cli_progress_run(0, 0);
  /* After the loop: a DB-write failure that stopped it leaves the keys listed, never raced. */
  if (r->exit_code > 1) {
    for (size_t j = 0; j < ngrouped; j++) report_grouped(r, grouped[j], r->sh.v[grouped[j]], "not raced: the run stopped");
  } else {
    tune_grouped(r, grouped, ngrouped);
  }
  free(grouped);
}

/* The summary's line about the winners' live confirmation (none when no shape had a winner):
 * what happened to them, and how far the harness's speedups carried into the live path. */
static void print_live_summary(const tune_run_t *r, FILE *sf) {
  size_t n = 0;
  for (int k = 0; k < TL__COUNT; k++) n += r->live_n[k];
  if (!n) return;
  static const char *const k_what[TL__COUNT] = {
      "confirmed", "not confirmed (kept, not written)", "failed in the runtime (not written)",
      "skipped (written on the harness's numbers)", "off (--no-live-confirm; written on the "
      "harness's numbers)"};
  fprintf(sf, "Live confirmation of %zu winner%s (the runtime's dispatch against the entry point, "
          "CUDA graphs):", n, n == 1 ? "" : "s");
  for (int k = 0, said = 0; k < TL__COUNT; k++)
    if (r->live_n[k]) fprintf(sf, "%s %zu %s", said++ ? "," : "", r->live_n[k], k_what[k]);
  fprintf(sf, "\n");
  if (r->live_n[TL_SKIPPED])
    fprintf(sf, "  skipped because: %s%s\n", r->live_skip_why,
            r->live_n[TL_SKIPPED] > 1 ? " (the first; each shape's note says its own)" : "");
  if (r->live_timed)
    fprintf(sf, "  live geomean %.4fx against the harness's %.4fx over the %zu winner%s timed "
            "live\n", exp(r->live_log / (double)r->live_timed),
            exp(r->live_log_harness / (double)r->live_timed), r->live_timed,
            r->live_timed == 1 ? "" : "s");
}

/* Write the DB when no row did (an empty DB is a result too), print the summary, clean up.
 * Returns the exit code. */
static int finish(tune_run_t *r) {
  bool completed = r->exit_code == 0 || r->exit_code == 1;
  journal_close(r);
  if (r->cs.so.estimate_only) journal_remove(r);
  if (r->fmt != GT_FMT_TABLE) gt_table_end(&r->t);
  /* The references again after the shapes: a GPU that slowed during the run shows. */
  bool calibrated = false;
  if (completed && r->calib.nref) {
    calibrate(r, GT_CALIB_AFTER);
    calibrated = true;
  }
  /* A DB with no rows is still written: 'no shape improved' is a result, and the file says for
   * which device and version it was established. A calibrated run writes its times after the
   * shapes in any case. */
  if (completed && (r->db.n == 0 || calibrated || r->nkept) && !r->cs.so.estimate_only &&
      (r->n_tuned || r->sharded || calibrated)) {
    db_write(r, NULL, NULL, NULL, NULL);
  }
  double wall = gt_cli_now() - r->t_start;
  FILE *sf = r->fmt == GT_FMT_TABLE ? stdout : stderr;
  fprintf(sf, "\nSummary: %zu shapes tuned in %.1f s: %zu improved, %zu unchanged, %zu failed",
          r->n_tuned, wall, r->n_improved, r->n_unchanged, r->n_failed);
  if (r->n_unconfirmed)
    fprintf(sf, ", %zu not confirmed live (not written)", r->n_unconfirmed);
  if (r->n_retired) fprintf(sf, ", %zu rows retired", r->n_retired);
  if (r->n_resumed) fprintf(sf, ", %zu already done (--resume)", r->n_resumed);
  if (r->n_untunable)
    fprintf(sf, ", %zu not tunable (skipped: the captured GEMM cannot be tuned, see its note)",
            r->n_untunable);
  if (r->n_skipped) fprintf(sf, ", %zu in other shards", r->n_skipped);
  fprintf(sf, "\n");
  print_live_summary(r, sf);
  if (r->n_speedup) {
    fprintf(sf, "Tuned geomean: %.4fx over %zu searched shapes (unchanged ones count 1.0; a row "
                "confirmed live counts its live speedup)\n",
            exp(r->log_speedup / (double)r->n_speedup), r->n_speedup);
    fprintf(sf, "Search stopped by:");
    for (int k = GT_STOP_QUICK, said = 0; k < GT_STOP__COUNT; k++)
      if (r->n_stop[k])
        fprintf(sf, "%s %s %zu", said++ ? "," : "", gt_stop_name((gt_stop_t)k), r->n_stop[k]);
    fprintf(sf, " (%d widenings in all)\n", r->widenings);
  }
  if (r->n_failed) fprintf(sf, "Failed:\n%s", r->failures);
  if (r->n_retired) fprintf(sf, "Retired (re-tuned, their choice no longer wins):\n%s", r->retired);
  if (r->cs.so.estimate_only)
    fprintf(sf, "Estimate: about %.0f s: %.0f s of prune passes and %.0f s of %d re-time rounds "
                "per shape, plus one fp64 reference per gated candidate%s; nothing was written\n",
            r->est_total + r->est_race, r->est_total, r->est_race, r->cs.so.rounds,
            r->cs.so.mode == GT_SEARCH_FLOOR && !r->cs.so.exhaustive
                ? " (the widenings of shapes far from their floor come on top)"
                : "");
  else
    fprintf(sf, "DB: %s (%zu rows)\n", r->out, r->db.n);
  if (completed) journal_remove(r);
  for (size_t d = 0; d < r->ndone; d++) free(r->done[d]);
  free(r->done);
  gt_shapes_free(&r->sh);
  gt_db_free(&r->db);
  free(r->plan);
  free(r->kept);
  return r->exit_code;
}

int gt_cmd_tune(int argc, char **argv) {
  tune_run_t r;
  memset(&r, 0, sizeof r);
  gt_cli_problem_init(&r.cp);
  gt_cli_search_init(&r.cs);
  r.fmt = GT_FMT_TABLE;
  r.isolate = -1;
  r.shard_n = 1;
  r.shape_timeout = 120;
  int rc = parse_args(argc, argv, &r);
  if (rc >= 0) return rc;
  if ((rc = open_inputs(&r)) >= 0) return rc;
  /* An estimate runs only the baselines, today's path: one process for the whole run spares a
   * worker's start and CUDA's initialisation per shape. */
  if (r.isolate < 0) r.isolate = r.cs.so.backend == GT_BACKEND_CUDA && !r.cs.so.estimate_only;
  print_header(&r);
  if (r.calib.nref) calibrate(&r, GT_CALIB_BEFORE);
  r.t_start = gt_cli_now();
  tune_shapes(&r);
  return finish(&r);
}
