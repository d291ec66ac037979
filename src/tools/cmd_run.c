/* gemmtune run: deploy a tuned DB into a command. The command replaces this process with exactly
 * two variables changed: LD_PRELOAD gains the preload shim (in front of what it held) and
 * GEMMTUNE_DB names the DB. Nothing else is set, so what runs is the deployment a user would
 * write by hand, and the exit status is the command's own. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "core/gt_db.h"
#include "gt_runtime_paths.h"

static const char k_help[] =
    "Usage: gemmtune run --db DB [--lib PATH] -- CMD [ARGS...]\n\n"
    "Runs CMD with the tuned DB deployed: LD_PRELOAD gains libgemmtune_preload.so (ahead of\n"
    "whatever it held) and GEMMTUNE_DB is set to DB (an absolute path; DB may list several,\n"
    "a:b, the first listing a key wins). Nothing else in the environment changes: set\n"
    "GEMMTUNE_LOG=1 yourself to see every hit and miss. The DB is read first, strictly, so a\n"
    "malformed one stops here instead of being skipped inside the application.\n\n"
    "  --db DB                the tuned DB (required)\n"
    "  --lib PATH             the preload shim (default: found next to gemmtune, or\n"
    "                         GEMMTUNE_PRELOAD_LIB)\n\n"
    "Examples:\n"
    "  gemmtune run --db tuned.db -- python3 serve.py\n"
    "  GEMMTUNE_LOG=1 gemmtune run --db tuned.db -- ./my_app     # hits and misses on stderr\n\n"
    "Exit status: the command's own; 64 usage; 65 malformed DB; 66 missing DB; 69 the shim\n"
    "is not built (it needs CUDA); 127 CMD cannot be run.\n";

enum { R_DB = 6000, R_LIB, R_HELP };

/* Each ':'-separated DB, read strictly; its absolute paths, ':'-joined, into abs. Returns 0 or
 * the exit status. */
static int check_dbs(const char *list, char *abs, size_t cap) {
  char *copy = strdup(list);
  if (!copy) return EX_SOFTWARE_;
  size_t o = 0;
  int rc = 0;
  char *save = NULL;
  abs[0] = '\0';
  for (char *p = strtok_r(copy, ":", &save); p && !rc; p = strtok_r(NULL, ":", &save)) {
    if ((rc = gt_cli_need_file("run", NULL, p)) != 0) break;
    gt_db_t db;
    gt_db_init(&db);
    gt_status_t s = gt_db_read(p, &db);
    gt_db_free(&db);
    if (s != GT_OK) {
      rc = gt_cli_fail("run", s);
      break;
    }
    char real[4096];
    if (!realpath(p, real)) snprintf(real, sizeof real, "%s", p);
    o += (size_t)snprintf(abs + o, o < cap ? cap - o : 0, "%s%s", o ? ":" : "", real);
  }
  free(copy);
  if (!rc && o >= cap) rc = gt_cli_usage_error("run", "--db: the list of DBs is too long");
  return rc;
}

int gt_cmd_run(int argc, char **argv) {
  static const struct option opts[] = {{"db", required_argument, 0, R_DB},
                                       {"lib", required_argument, 0, R_LIB},
                                       {"help", no_argument, 0, R_HELP},
                                       {0, 0, 0, 0}};
  const char *db = NULL, *lib = NULL;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
    if (c == 'h' || c == R_HELP) return printf("%s", k_help), 0;
    if (c == R_DB) db = optarg;
    else if (c == R_LIB) lib = optarg;
    else return gt_cli_usage_error("run", "unknown option");
  }
  if (!db) return gt_cli_usage_error("run", "--db DB is required (the tuned DB to deploy)");
  if (optind >= argc) return gt_cli_usage_error("run", "expected -- CMD [ARGS...]");
  char dbs[8192];
  int rc = check_dbs(db, dbs, sizeof dbs);
  if (rc) return rc;
  char libbuf[4096];
  if (!lib) lib = gt_runtime_find_lib("libgemmtune_preload.so", "GEMMTUNE_PRELOAD_LIB", libbuf,
                                      sizeof libbuf);
  if (!lib || access(lib, R_OK) != 0) {
    fprintf(stderr, "gemmtune run: cannot find libgemmtune_preload.so (built only with CUDA; "
                    "set GEMMTUNE_PRELOAD_LIB or --lib)\n");
    return EX_UNAVAILABLE_;
  }
  char real[4096];
  if (realpath(lib, real)) lib = real;
  gt_cli_env_replaced("run", "GEMMTUNE_DB", dbs, "run sets it to the --db list");
  gt_cli_preload_check("run", lib, argv + optind);
  char pre[8192];
  setenv("LD_PRELOAD", gt_runtime_preload_list(lib, getenv("LD_PRELOAD"), pre, sizeof pre), 1);
  setenv("GEMMTUNE_DB", dbs, 1);
  fflush(NULL);
  execvp(argv[optind], argv + optind);
  fprintf(stderr, "gemmtune run: cannot run %s: %s\n", argv[optind], strerror(errno));
  return 127;
}
