/* gemmtune list: the providers this build has, and the candidates each offers for a problem. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char k_help[] =
    "Usage: gemmtune list [PROBLEM] [options]\n\n"
    "Without a problem: every provider of this build, whether it is ready here, and why not.\n"
    "With a problem: each provider's candidates for it. --explain also lists the candidates a\n"
    "provider excluded, each with its one-line reason (alignment, shared memory, types...).\n\n"
    "  --explain              include excluded candidates and their reasons\n"
    "  --format table|csv|json\n";

static const char k_examples[] =
    "\nExamples:\n"
    "  gemmtune list                                   # providers, ready or why not\n"
    "  gemmtune list --linear 16,4096,4096 --explain   # candidates, excluded ones with reasons\n"
    "  gemmtune list --cpu --rowmajor mk,nk,8,64,32 --format json\n\n"
    "Exit status: 0; 64 usage (an unknown provider too); 69 --backend cuda without a GPU.\n";

#define LIST_OPTS (GT_OPT_PROBLEM | GT_OPT_DEVICE | GT_OPT_CANDS)

enum { L_EXPLAIN = 3000, L_FORMAT, L_HELP };

int gt_cmd_list(int argc, char **argv) {
  static const struct option own[] = {{"explain", no_argument, 0, L_EXPLAIN},
                                      {"format", required_argument, 0, L_FORMAT},
                                      {"help", no_argument, 0, L_HELP},
                                      {0, 0, 0, 0}};
  struct option *opts = gt_cli_options(own, LIST_OPTS, NULL);
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_cli_problem_init(&cp);
  gt_cli_search_init(&cs);
  bool explain = false;
  gt_fmt_t fmt = GT_FMT_TABLE;
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'h' || c == L_HELP) {
      printf("%s", k_help);
      gt_cli_options_help(stdout, LIST_OPTS, NULL);
      printf("%s", k_examples);
      free(opts);
      return 0;
    }
    if (c == L_EXPLAIN) explain = true;
    else if (c == L_FORMAT) {
      if (gt_cli_parse_format("list", optarg, &fmt)) return free(opts), EX_USAGE_;
    } else if ((rc = gt_cli_problem_opt("list", &cp, c, optarg)) != 0 ||
               (rc = gt_cli_search_opt("list", &cs, c, optarg)) != 0) {
      if (rc < 0) return free(opts), EX_USAGE_;
    } else {
      free(opts);
      return gt_cli_usage_error("list", "unknown option");
    }
  }
  free(opts);
  if (optind < argc) return gt_cli_usage_error("list", "unexpected argument '%s'", argv[optind]);

  if (!cp.have_shape) {
    static const char *const names[] = {"provider", "backend", "status", "lib", "description"};
    gt_table_t t;
    gt_table_begin(&t, stdout, fmt, 5, names, NULL);
    for (size_t i = 0; i < gt_provider_count(); i++) {
      const gt_provider_t *p = gt_provider_at(i);
      gt_err_clear();
      gt_status_t s = gt_provider_ready(p);
      char status[400];
      snprintf(status, sizeof status, "%s", s == GT_OK ? "ready" : gt_err_msg());
      if (s != GT_OK && strncmp(status, "unavailable", 11) != 0) {
        char tmp[400];
        snprintf(tmp, sizeof tmp, "unavailable: %s", status);
        snprintf(status, sizeof status, "%s", tmp);
      }
      const char *lib = s == GT_OK && p->lib_version ? p->lib_version() : "-";
      const char *cells[] = {p->name, p->backend == GT_BACKEND_CUDA ? "cuda" : "host", status,
                             lib ? lib : "-", p->description ? p->description : ""};
      gt_table_row(&t, cells);
    }
    gt_table_end(&t);
    return 0;
  }

  gt_device_info_t dev;
  cs.quiet = fmt != GT_FMT_TABLE;
  if ((rc = gt_cli_pick_backend("list", &cs, &dev)) != 0) return rc;
  if ((rc = gt_cli_problem_finish("list", &cp, &dev)) != 0) return rc;
  gt_cli_backend_note("list", &cs);
  if (fmt == GT_FMT_TABLE) printf("problem: %s\n", cp.mapping);
  gt_enum_opts_t eo = {.max_candidates = cs.so.max_candidates, .exhaustive = cs.so.exhaustive,
                       .device = cs.so.measure.device};
  static const char *const names[] = {"provider", "candidate", "status", "reason"};
  gt_table_t t;
  gt_table_begin(&t, stdout, fmt, 4, names, NULL);
  size_t active = 0, excluded = 0;
  for (size_t i = 0; i < gt_provider_count(); i++) {
    const gt_provider_t *p = gt_provider_at(i);
    if (p->backend != cs.so.backend) continue;
    if (cs.so.providers && *cs.so.providers && !gt_search_name_in_list(cs.so.providers, p->name))
      continue;
    gt_err_clear();
    if (gt_provider_ready(p) != GT_OK) {
      const char *cells[] = {p->name, "-", "unavailable", gt_err_msg()};
      gt_table_row(&t, cells);
      continue;
    }
    gt_cand_list_t l = {0};
    gt_err_clear();
    if (p->enumerate(&cp.p, &eo, &l) != GT_OK) {
      const char *cells[] = {p->name, "-", "error", gt_err_msg()};
      gt_table_row(&t, cells);
    }
    for (size_t j = 0; j < l.n; j++) {
      const gt_candidate_t *cand = &l.v[j];
      if (cand->excluded) {
        excluded++;
        if (!explain) continue;
      } else {
        active++;
      }
      const char *cells[] = {p->name, cand->name,
                             cand->excluded ? "excluded" : cand->is_baseline ? "baseline" : "candidate",
                             cand->excluded ? cand->reason : ""};
      gt_table_row(&t, cells);
    }
    gt_cand_list_free(&l);
  }
  gt_table_end(&t);
  if (fmt == GT_FMT_TABLE)
    printf("%zu candidates, %zu excluded%s\n", active, excluded,
           explain || !excluded ? "" : " (--explain lists them with reasons)");
  return 0;
}
