/* gemmtune: the command-line front end. Each subcommand lives in its own cmd_*.c file; this
 * file only dispatches and prints the top-level help. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gt_version.h"

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *step;
  const char *summary;
} gt_subcommand_t;

static const gt_subcommand_t k_cmds[] = {
    {"capture", gt_cmd_capture, "1 scope", "run a command and record the GEMMs it issues as a shapes file"},
    {"shapes", gt_cmd_shapes, "1 scope", "show a shapes file: intensity, regime, roofline floor"},
    {"baseline", gt_cmd_baseline, "2 baseline", "time today's path (cublasGemmEx / naive CPU) for shapes"},
    {"list", gt_cmd_list, "3 search", "providers, and the candidates for a problem (--explain: excluded ones)"},
    {"profile", gt_cmd_profile, "3-4 search+gate", "gate and time every candidate for one problem"},
    {"tune", gt_cmd_tune, "2-5 loop", "baseline, prune, race, gate and write winners to a DB"},
    {"merge", gt_cmd_merge, "5 deploy", "merge tuned DBs (atomic; conflicts are reported)"},
    {"explain", gt_cmd_explain, "5-6 deploy/verify", "look keys up in a DB; for a miss, the nearest rows and differing fields"},
    {"check", gt_cmd_check, "6 verify", "replay each DB row on this device: exists, passes the gate, reproduces its time"},
    {"verify", gt_cmd_verify, "6 verify", "run a command with the DB and a kernel trace: did each tuned key engage"},
    {"run", gt_cmd_run, "5 deploy", "run a command with a DB deployed (LD_PRELOAD and GEMMTUNE_DB, nothing else)"},
    {"report", gt_cmd_report, "6 look", "one HTML page: roofline, speedups, engagement, Amdahl bound"},
};
#define NCMDS (sizeof k_cmds / sizeof k_cmds[0])

static void usage(FILE *f) {
  fprintf(f,
          "gemmtune %s: tune GEMMs for the shapes a workload issues, deploy the winners where the\n"
          "live path reads them, and prove they ran.\n\n"
          "Usage: gemmtune <command> [options]   (gemmtune <command> --help for each)\n\n"
          "Commands, in the order of the tuning loop:\n",
          GT_VERSION);
  for (size_t i = 0; i < NCMDS; i++)
    fprintf(f, "  %-9s %-18s %s\n", k_cmds[i].name, k_cmds[i].step, k_cmds[i].summary);
  fprintf(f,
          "\nOptions:\n  -h, --help     this help\n  -V, --version  print the version\n\n"
          "Examples:\n"
          "  gemmtune tune examples/small_cpu.csv -o tuned.db      # the loop on the bundled shapes\n"
          "  gemmtune capture -o shapes.csv -- python3 serve.py    # 1: what the workload issues\n"
          "  gemmtune tune shapes.csv -o tuned.db                  # 2-5: baseline, search, gate\n"
          "  gemmtune verify --db tuned.db --json v.json -- python3 serve.py   # 6: did it engage\n"
          "  gemmtune run --db tuned.db -- python3 serve.py        # deploy\n"
          "  gemmtune report tuned.db --verify v.json -o report.html\n\n"
          "Exit codes: 0 ok, 1 a check failed (gate, verify, a refused row, check with no row\n"
          "for this device), 64 usage, 65 malformed input,\n"
          "66 missing input, 69 unavailable (no GPU/library), 70 internal, 74 i/o.\n"
          "Manual: man gemmtune (after make install); each command's --help.\n");
}

/* Whether the command line asks for help (before any "--": what follows belongs to CMD). */
static bool asks_help(int argc, char **argv) {
  for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
  return false;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 64;
  }
  const char *c = argv[1];
  if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
    if (argc > 2 && strcmp(c, "help") == 0) {
      for (size_t i = 0; i < NCMDS; i++)
        if (!strcmp(argv[2], k_cmds[i].name)) {
          char *args[] = {argv[2], "--help", NULL};
          return k_cmds[i].fn(2, args);
        }
    }
    usage(stdout);
    return 0;
  }
  if (!strcmp(c, "-V") || !strcmp(c, "--version")) {
    printf("gemmtune %s\n", GT_VERSION);
    return 0;
  }
  for (size_t i = 0; i < NCMDS; i++)
    if (!strcmp(c, k_cmds[i].name)) {
      if (!asks_help(argc, argv)) gt_cli_env_warn(k_cmds[i].name);
      return k_cmds[i].fn(argc - 1, argv + 1);
    }
  fprintf(stderr, "gemmtune: unknown command '%s'\n\n", c);
  usage(stderr);
  return 64;
}
