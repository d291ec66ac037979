/* The problem options every command takes (--linear, --rowmajor, --blas, --key, --ldc, ...),
 * through getopt_long and gt_cli_problem_opt as the commands parse them, then
 * gt_cli_problem_finish: a problem that comes out is valid and sizes without overflow. The input
 * is the argument vector, one argument per line. */
#include "fuzz_common.h"
#include "tools/cli.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  fuzz_quiet_stderr();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  char *argv[34];
  int argc = 0;
  argv[argc++] = "fuzz";
  for (char *save = NULL, *a = strtok_r(text, "\n", &save); a && argc < 33;
       a = strtok_r(NULL, "\n", &save))
    argv[argc++] = a;
  argv[argc] = NULL;
  gt_cli_problem_t cp;
  gt_cli_problem_init(&cp);
  optind = 0; /* glibc: 0 re-initialises getopt completely */
  opterr = 0;
  static struct option *opts;
  if (!opts) opts = gt_cli_options(NULL, GT_OPT_PROBLEM, NULL);
  int c, bad = 0;
  while (!bad && (c = getopt_long(argc, argv, "", opts, NULL)) != -1)
    if (gt_cli_problem_opt("fuzz", &cp, c, optarg) != 1) bad = 1;
  if (!bad && gt_cli_problem_finish("fuzz", &cp, NULL) == 0) {
    FUZZ_CHECK(gt_problem_validate(&cp.p) == GT_OK);
    FUZZ_CHECK(gt_problem_operand_elems(&cp.p, 'A') > 0);
    FUZZ_CHECK(gt_problem_operand_elems(&cp.p, 'B') > 0);
    FUZZ_CHECK(gt_problem_operand_elems(&cp.p, 'C') > 0);
  }
  free(text);
  return 0;
}
