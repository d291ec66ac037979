/* Pieces every gemmtune subcommand shares: problem options, device/backend selection, the
 * table/csv/json writer, progress on a terminal, and the exit-code convention. */
#ifndef GT_CLI_H
#define GT_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/gt_problem.h"
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

/* Long options for the problem (to append to a command's table); ids start at 1000. */
extern const struct option gt_cli_problem_options[];
extern const char gt_cli_problem_help[];
void gt_cli_problem_init(gt_cli_problem_t *cp);
/* Handle one option id; returns 1 when it was a problem option, 0 if not, -1 on error (message
 * printed). */
int gt_cli_problem_opt(const char *cmd, gt_cli_problem_t *cp, int id, const char *arg);
/* Finish: require a shape, fill lds, fill arch/sm_count from the device unless given, validate. */
int gt_cli_problem_finish(const char *cmd, gt_cli_problem_t *cp, const gt_device_info_t *dev);

/* ---- measurement / search options --------------------------------------------------------- */
extern const struct option gt_cli_search_options[]; /* ids from 2000 */
extern const char gt_cli_search_help[];
typedef struct gt_cli_search {
  gt_search_opts_t so;
  const char *backend_name; /* "auto", "cuda", "host" */
  bool quiet;
  bool settle_given;
} gt_cli_search_t;
void gt_cli_search_init(gt_cli_search_t *cs);
int gt_cli_search_opt(const char *cmd, gt_cli_search_t *cs, int id, const char *arg);
/* Pick the backend (auto: CUDA when built and a device answers, else host), describe the device.
 * Prints why on stderr when auto falls back to the host. */
int gt_cli_pick_backend(const char *cmd, gt_cli_search_t *cs, gt_device_info_t *dev);

/* Merge option tables (a NULL-terminated result the caller frees). */
struct option *gt_cli_merge_options(const struct option *a, const struct option *b,
                                    const struct option *c);

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

/* Progress line on stderr, only when stderr is a terminal: "phase 12/340  ETA 3s". */
void gt_cli_progress(const char *label, const char *phase, size_t done, size_t total,
                     double elapsed_s);
void gt_cli_progress_clear(void);
double gt_cli_now(void);

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

#endif
