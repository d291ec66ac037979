/* Pieces every gemmtune subcommand shares: problem options, device/backend selection, the
 * table/csv/json writer, progress on a terminal, and the exit-code convention. */
#ifndef GT_CLI_H
#define GT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/gt_calib.h"
#include "core/gt_db.h"
#include "core/gt_problem.h"
#include "core/gt_shapes.h"
#include "search/gt_search.h"
#include "harness/gt_harness.h"

/* sysexits(3) values used by the CLI. */
enum { EX_OK_ = 0, EX_FAIL = 1, EX_USAGE_ = 64, EX_DATAERR_ = 65, EX_NOINPUT_ = 66,
       EX_UNAVAILABLE_ = 69, EX_SOFTWARE_ = 70, EX_IOERR_ = 74 };

typedef enum { GT_FMT_TABLE, GT_FMT_CSV, GT_FMT_JSON } gt_fmt_t;

/* Print "gemmtune <cmd>: <message>" on stderr and return the exit code for s. */
int gt_cli_fail(const char *cmd, gt_status_t s);
int gt_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- problem options: --linear/--rowmajor/--blas/--key and type flags --------------------- */
typedef struct gt_cli_problem {
  gt_problem_t p;
  bool have_shape;
  char mapping[200]; /* the mapping applied, printed by the tools */
  bool arch_given, sms_given, strides_given;
} gt_cli_problem_t;

void gt_cli_problem_init(gt_cli_problem_t *cp);
/* Handle one option id; returns 1 when it was a problem option, 0 if not, -1 on error (message
 * printed). */
int gt_cli_problem_opt(const char *cmd, gt_cli_problem_t *cp, int id, const char *arg);
/* Finish: require a shape, fill lds, fill arch/sm_count from the device unless given, validate. */
int gt_cli_problem_finish(const char *cmd, gt_cli_problem_t *cp, const gt_device_info_t *dev);

/* ---- measurement / search options --------------------------------------------------------- */
typedef struct gt_cli_search {
  gt_search_opts_t so;
  const char *backend_name; /* "auto", "cuda", "host" */
  bool quiet;
  bool settle_given;
  bool gpu_asked;           /* --backend cuda or --device N: a GPU was asked for */
  bool device_given;        /* --device N: a launcher's local rank does not pick the GPU */
  char note[400];           /* why auto fell back to the host (gt_cli_backend_note prints it) */
} gt_cli_search_t;
void gt_cli_search_init(gt_cli_search_t *cs);
int gt_cli_search_opt(const char *cmd, gt_cli_search_t *cs, int id, const char *arg);
/* Pick the backend (auto: CUDA when built and a device answers, else host), describe the device.
 * When auto falls back to the host, the reason is kept in cs->note, not printed: a command says
 * it (gt_cli_backend_note) once its inputs have been read, so a usage error or a missing file is
 * never preceded by a notice about the GPU. */
int gt_cli_pick_backend(const char *cmd, gt_cli_search_t *cs, gt_device_info_t *dev);
/* Print the fall-back notice kept by gt_cli_pick_backend, when it matters: a GPU was asked for,
 * or this build could have used one (a build without CUDA never could, so it says nothing). */
void gt_cli_backend_note(const char *cmd, const gt_cli_search_t *cs);

/* ---- the option sets of the commands ---------------------------------------------------------
 * The shared options (problem, device, candidates, measurement) live in one table; each command
 * takes the groups that apply to it, so its getopt table and its --help list the same options and
 * nothing that would be ignored. */
enum {
  GT_OPT_SHAPE = 1 << 0,   /* --linear --rowmajor --blas --ops --key */
  GT_OPT_TYPES = 1 << 1,   /* --dtype --a-type.. --compute --scale-type --beta --epilogue */
  GT_OPT_LAYOUT = 1 << 2,  /* --batch --lda --ldb --ldc */
  GT_OPT_KEYDEV = 1 << 3,  /* --arch --sm-count */
  GT_OPT_DEVICE = 1 << 4,  /* --backend --cpu --device */
  GT_OPT_CANDS = 1 << 5,   /* --providers --exhaustive --max-candidates */
  GT_OPT_TIMING = 1 << 6,  /* --warm --rounds --settle --init --seed */
  GT_OPT_RACE = 1 << 7,    /* --finalists --min-improvement --budget --estimate */
  GT_OPT_PROBLEM = GT_OPT_SHAPE | GT_OPT_TYPES | GT_OPT_LAYOUT | GT_OPT_KEYDEV,
};
/* The getopt table: own (may be NULL) then the shared options in groups `mask`, less the names
 * in `except` (comma separated, may be NULL). NULL-terminated; the caller frees it. */
struct option *gt_cli_options(const struct option *own, unsigned mask, const char *except);
/* Print the help lines of the same shared options, under a heading per group. */
void gt_cli_options_help(FILE *f, unsigned mask, const char *except);

/* Merge option tables (a NULL-terminated result the caller frees). */
struct option *gt_cli_merge_options(const struct option *a, const struct option *b,
                                    const struct option *c);

/* ---- inputs --------------------------------------------------------------------------------- */
/* 0 when path can be read; otherwise says so ("gemmtune CMD: PATH: No such file or directory")
 * and returns 66 (missing input, as the README's exit-code table says), before any reader runs. */
int gt_cli_need_file(const char *cmd, const char *what, const char *path);

/* ---- the application's cuBLAS (cli_libs.c) ------------------------------------------------------
 * `capture` writes '#gemmtune-capture cublaslt=VERSION path=PATH' lines (one per library the
 * application loaded) into the shapes file; `tune` loads the same copies in its workers through
 * GEMMTUNE_CUBLASLT_LIB / GEMMTUNE_CUBLAS_LIB (platform/gt_cudalib.c) and records their paths in
 * the DB's validators, from which `verify` and `check` load them again. */
#define GT_CLI_NLIBS 2 /* [0] cuBLASLt, [1] cuBLAS */
typedef struct gt_cli_lib {
  char version[48]; /* "cublaslt=130100", as a row's lib names it; "" none */
  char path[1024];
} gt_cli_lib_t;
typedef struct gt_cli_libs {
  gt_cli_lib_t v[GT_CLI_NLIBS];
} gt_cli_libs_t;
/* The libraries a shapes file says its application loaded; false when it names none. */
bool gt_cli_captured_libs(const char *shapes_path, gt_cli_libs_t *libs);
/* Make this process's workers load the libraries the shapes file names (unless the environment
 * already chooses), check in a worker what they load, and say so on stderr: which copy is used,
 * or a warning naming both versions when they differ. *used gets the libraries in use that match
 * the capture (empty when none). */
void gt_cli_use_captured_libs(const char *cmd, const char *shapes_path, gt_cli_libs_t *used);
/* Record the paths of `used` in the DB's validators (cublaslt-lib, cublas-lib). */
void gt_cli_set_lib_validators(gt_db_t *db, const gt_cli_libs_t *used);
/* Load the libraries a DB's validators name (when they exist here and the environment does not
 * choose), so a replay or a calibration runs the version the rows were tuned with. */
void gt_cli_use_db_libs(const gt_db_t *db);

/* ---- a tune run's calibration (tune_calib.c) ------------------------------------------------
 * Each run times the baselines of a few reference shapes that every process of its sweep picks
 * the same way (core/gt_calib.h), before its shapes and after them, and records them in its DB;
 * merge compares them across the inputs. */
typedef struct gt_tune_calib {
  size_t nref; /* 0: the run does not calibrate */
  const gt_shape_t *ref[GT_CALIB_MAX_REFS];
  gt_calib_t c;
} gt_tune_calib_t;
/* Choose the references of a run over sh on dev (one on the host backend, two on a GPU) and
 * note who measures: shard (shard_n 0: none) and the GPU of so. */
void gt_tune_calib_plan(gt_tune_calib_t *tc, const gt_shapes_t *sh, const gt_device_info_t *dev,
                        const gt_search_opts_t *so, int shard_i, int shard_n);
/* Time the references in phase GT_CALIB_BEFORE or _AFTER (in a worker process when isolate,
 * killed after timeout_s of silence) and say on stderr what they took; after the shapes, warn
 * when one ran slower than before by more than its spreads. Returns how many were measured; a
 * reference that failed is said and left out. */
size_t gt_tune_calib_measure(gt_tune_calib_t *tc, const gt_search_opts_t *so, bool isolate,
                             double timeout_s, int phase);

/* ---- output ----------------------------------------------------------------------------- */
int gt_cli_parse_format(const char *cmd, const char *arg, gt_fmt_t *out);

typedef struct gt_table {
  gt_fmt_t fmt;
  FILE *f;
  int ncols;
  const char *const *names;
  const bool *numeric; /* json: emit unquoted */
  char ***rows;
  int nrows, cap;
} gt_table_t;

void gt_table_begin(gt_table_t *t, FILE *f, gt_fmt_t fmt, int ncols, const char *const *names,
                    const bool *numeric);
/* Add a row of ncols strings (copied). */
void gt_table_row(gt_table_t *t, const char *const *cells);
/* Print everything (table: aligned columns; csv: header + rows; json: array of objects). */
void gt_table_end(gt_table_t *t);

/* Progress on stderr. On a terminal, one line redrawn in place: "label  phase 12/340  ETA 3s".
 * Elsewhere (a pipe, a batch job's log) a plain line, rate-limited: the first call for a new
 * label prints at once, later ones at most every GEMMTUNE_PROGRESS_S seconds (default 10; 0:
 * every event; negative: none), so a long shape is never silent and a short one costs one line. */
void gt_cli_progress(const char *label, const char *phase, size_t done, size_t total,
                     double elapsed_s);
void gt_cli_progress_clear(void);
/* The whole run, appended to every progress line until cleared with (0, 0): it started at t0
 * (gt_cli_now) and is estimated to take total_s seconds ("| run 1m05s, ETA 2m10s"); total_s < 0:
 * not known yet (only the time so far is shown). */
void gt_cli_progress_run(double t0, double total_s);
double gt_cli_now(void);

/* ---- this device, as the tuned DB names it (cli_device.c) ----------------------------------- */

/* The identity rows record and are checked against (core/gt_db.h): arch, SM count, product name
 * and memory of dev. */
void gt_cli_db_device(const gt_device_info_t *dev, gt_db_device_t *out);
/* This machine's device for cs (--cpu, --backend, --device; auto otherwise), detected in a
 * short-lived worker process so the caller never initialises CUDA. Returns 0, or the exit code
 * after saying why (a GPU asked for and not usable). Quiet: no fall-back notice. */
int gt_cli_device_here(const char *cmd, const gt_cli_search_t *cs, gt_db_device_t *out);
/* Say once on stderr, for a command that reads db on this device: how many rows are refused
 * (tuned on another product of the same arch and SM count, with gt_db_refusal_str), and how many
 * record no device identity (a format-1 DB, applied by what they record). Returns the number of
 * refused rows. */
size_t gt_cli_note_db_device(const char *cmd, const gt_db_t *db, const gt_db_device_t *here);

/* ---- the floor and the search budget (cli_floor.c) -------------------------------------------- */
/* A share of the floor as a percentage for humans: "91", "2.6" below 10%, "-" when unknown. */
void gt_cli_floor_pct(char *buf, size_t cap, double share);
/* "floor 12.35 us: baseline 55% and winner 91% of the bandwidth floor" (improved); "... baseline
 * 55% of the bandwidth floor, kept (best other 57%)"; "floor not known for this device". */
void gt_cli_floor_text(const gt_floor_t *f, double base_us, double best_us, bool improved,
                       char *buf, size_t cap);
/* What the budget did and the rule that stopped it (stop is a gt_stop_t, why its numbers):
 * "search: quick race only; stopped: floor: baseline at 97% of the bandwidth floor ...",
 * "search: quick pass + 3 widenings (+56 candidates, 192 not searched); stopped: no-gain: ...". */
void gt_cli_search_text(int stop, const char *why, int widenings, size_t n_widened,
                        size_t n_unsearched, char *buf, size_t cap);

/* ---- the environment (cli_env.c) ------------------------------------------------------------ */
/* Before a command runs: warn about every GEMMTUNE_* variable nobody reads, naming the nearest
 * known one (not for run and capture: the shim in their command says it), and, for the commands
 * that start no process with the shim, about shim variables (GEMMTUNE_DB, _CAPTURE, _STATS) set
 * while this process has no shim loaded. Prints nothing on the normal path. */
void gt_cli_env_warn(const char *cmd);
/* Whether libgemmtune_preload.so is loaded in this process. */
bool gt_cli_shim_loaded(void);
/* A note when the environment holds `name` with another value than the command will get (value;
 * NULL: the command gets it set or cleared per run), saying how (`how`). */
void gt_cli_env_replaced(const char *cmd, const char *name, const char *value, const char *how);
/* Before run, capture or verify start argv with lib in LD_PRELOAD: warn when the shim will not be
 * in effect there (lib's path holds a ':' or ' '; the program, or its script's interpreter, is
 * set-user-ID or statically linked; a launcher that drops the environment: sudo, su, doas, ssh,
 * docker/podman run, env -i). */
void gt_cli_preload_check(const char *cmd, const char *lib, char *const *argv);

/* Subcommands. */
int gt_cmd_list(int argc, char **argv);
int gt_cmd_shapes(int argc, char **argv);
int gt_cmd_profile(int argc, char **argv);
int gt_cmd_baseline(int argc, char **argv);
int gt_cmd_tune(int argc, char **argv);
int gt_cmd_merge(int argc, char **argv);
int gt_cmd_explain(int argc, char **argv);
int gt_cmd_capture(int argc, char **argv);
int gt_cmd_verify(int argc, char **argv);
int gt_cmd_check(int argc, char **argv);
int gt_cmd_run(int argc, char **argv);
int gt_cmd_report(int argc, char **argv);

#endif
