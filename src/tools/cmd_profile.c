/* gemmtune profile (every candidate for one problem) and gemmtune baseline (today's path only).
 * Both run the search driver; profile gates and times every candidate in interleaved rounds,
 * baseline only the baseline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/gt_shapes.h"

static const char k_profile_help[] =
    "Usage: gemmtune profile PROBLEM [options]\n\n"
    "Gates and times every candidate of every ready provider for one problem: a line each with\n"
    "the median time, TFLOP/s, GB/s (fewest bytes over time), the gate's error, the disposition\n"
    "(passed / failed-gate / failed-run / excluded) and the full instance name. Then the best\n"
    "line, an 'Arguments:' line that replays the best candidate alone against the baseline, and\n"
    "the best/worst spread. Candidates are timed cold and interleaved, like tune's finalists.\n"
    "Each line gives the candidate's share of the problem's roofline floor (floor_pct); a\n"
    "Floor: line says the floor, what bounds it (bandwidth or compute, at which rates, from\n"
    "where) and the baseline's and the best's share, e.g. 'baseline 55% and best 91% of the\n"
    "bandwidth floor'. csv and json carry floor_us and floor_bound on every row.\n\n"
    "  --instance NAME        race only NAME against the baseline (what Arguments: prints)\n"
    "  --explain              also list excluded candidates with their reasons\n"
    "  --prune                search as tune does: the quick pass ranks, --finalists are gated\n"
    "                         and raced, the --search budget widens (or not); every candidate\n"
    "                         cut says why ('pruned ... 3.10x the best quick time') and a\n"
    "                         Search: line names the rule that stopped it\n"
    "  --format table|csv|json\n";

static const char k_profile_examples[] =
    "\nExamples:\n"
    "  gemmtune profile --linear 16,4096,4096                 # every candidate, one shape\n"
    "  gemmtune profile --cpu --linear 8,768,256 --rounds 5 --explain\n"
    "  gemmtune profile --linear 1,4096,4096 --providers cublas,kernels --budget 10\n"
    "  gemmtune profile --cpu --linear 64,256,512 --prune --finalists 2   # why each was cut\n\n"
    "Exit status: 0; 64 usage (an unknown provider too); 66 no baseline candidate; 69 no GPU\n"
    "with --backend cuda; 1 the baseline failed the gate.\n";

static const char k_baseline_examples[] =
    "\nExamples:\n"
    "  gemmtune baseline --linear 16,4096,4096\n"
    "  gemmtune baseline --cpu examples/small_cpu.csv --format csv\n\n"
    "Exit status: 0; 64 usage; 65 malformed shapes file; 66 missing file; 69 no GPU with\n"
    "--backend cuda.\n";

#define PROFILE_OPTS (GT_OPT_PROBLEM | GT_OPT_DEVICE | GT_OPT_CANDS | GT_OPT_TIMING | GT_OPT_RACE)
#define PROFILE_EXCEPT "estimate"
#define BASELINE_OPTS (GT_OPT_PROBLEM | GT_OPT_DEVICE | GT_OPT_TIMING)

static const char k_baseline_help[] =
    "Usage: gemmtune baseline (PROBLEM | SHAPES_FILE) [options]\n\n"
    "Times only the path applications use today (cuBLAS cublasGemmEx with the default\n"
    "algorithm on a GPU; the naive CPU loop on the host) on the same harness tune uses, and\n"
    "prints time, TFLOP/s, GB/s and the share of the roofline floor it reaches.\n\n"
    "  --format table|csv|json\n";

enum { P_FORMAT = 3000, P_HELP, P_INSTANCE, P_EXPLAIN, P_PRUNE };

/* What profile takes beyond the shared options (baseline takes none of them). */
typedef struct profile_args {
  const char *instance;
  bool explain, prune;
} profile_args_t;

static int parse_common(const char *cmd, int argc, char **argv, gt_cli_problem_t *cp,
                        gt_cli_search_t *cs, gt_fmt_t *fmt, profile_args_t *pa,
                        const char *help, const char *examples, unsigned mask,
                        const char *except) {
  static const struct option own[] = {{"instance", required_argument, 0, P_INSTANCE},
                                      {"explain", no_argument, 0, P_EXPLAIN},
                                      {"prune", no_argument, 0, P_PRUNE},
                                      {"format", required_argument, 0, P_FORMAT},
                                      {"help", no_argument, 0, P_HELP},
                                      {0, 0, 0, 0}};
  /* baseline has neither --instance nor --explain nor --prune */
  struct option *opts = gt_cli_options(pa ? own : own + 3, mask, except);
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'h' || c == P_HELP) {
      printf("%s", help);
      gt_cli_options_help(stdout, mask, except);
      printf("%s", examples);
      free(opts);
      return -2;
    }
    if (c == P_FORMAT) {
      if (gt_cli_parse_format(cmd, optarg, fmt)) return free(opts), EX_USAGE_;
    } else if (c == P_INSTANCE && pa) {
      pa->instance = optarg;
    } else if (c == P_EXPLAIN && pa) {
      pa->explain = true;
    } else if (c == P_PRUNE && pa) {
      pa->prune = true;
    } else if ((rc = gt_cli_problem_opt(cmd, cp, c, optarg)) != 0 ||
               (rc = gt_cli_search_opt(cmd, cs, c, optarg)) != 0) {
      if (rc < 0) return free(opts), EX_USAGE_;
    } else {
      free(opts);
      return gt_cli_usage_error(cmd, "unknown option");
    }
  }
  free(opts);
  return 0;
}

typedef struct {
  const char *label;
  double t0;
} progress_ctx_t;

static void on_phase(void *ctx, const char *phase, size_t done, size_t total) {
  progress_ctx_t *p = ctx;
  gt_cli_progress(p->label, phase, done, total, gt_cli_now() - p->t0);
}

static void fmt_num(char *b, size_t n, const char *f, double v) {
  if (v > 0 && isfinite(v)) snprintf(b, n, f, v);
  else snprintf(b, n, "-");
}

/* One line per candidate (excluded ones with --explain), with its share of the floor; csv and json
 * carry the floor itself on every row. Returns the best and worst passing times. */
static void print_candidates(const gt_search_result_t *r, gt_fmt_t fmt, bool explain,
                             double *best, double *worst) {
  const double fl = r->floor.flops, by = r->floor.bytes;
  static const char *const names[] = {"disposition", "time_us", "spread_pct", "tflops", "gbps",
                                      "floor_pct", "error", "provider", "instance", "note",
                                      "floor_us", "floor_bound"};
  static const bool num[] = {0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 0};
  gt_table_t t;
  gt_table_begin(&t, stdout, fmt, fmt == GT_FMT_TABLE ? 10 : 12, names, num);
  char fus[32] = "-";
  if (r->floor.us > 0) snprintf(fus, sizeof fus, "%.4g", r->floor.us);
  *best = INFINITY, *worst = 0;
  for (size_t i = 0; i < r->n; i++) {
    const gt_cand_result_t *c = &r->c[i];
    if ((c->disp == GT_DISP_EXCLUDED || c->disp == GT_DISP_UNSEARCHED) && !explain) continue;
    if (c->disp == GT_DISP_EXCLUDED && strncmp(c->why, "not selected", 12) == 0) continue;
    char tus[32], sp[32], tf[32], gb[32], fp[16], err[32];
    double us = c->time.n ? c->time.median : 0;
    fmt_num(tus, sizeof tus, "%.3f", us);
    fmt_num(sp, sizeof sp, "%.1f", c->time.n ? 100 * c->time.rel_spread + 1e-9 : 0);
    fmt_num(tf, sizeof tf, "%.4g", us > 0 ? fl / us / 1e6 : 0);
    fmt_num(gb, sizeof gb, "%.4g", us > 0 ? by / us / 1e3 : 0);
    gt_cli_floor_pct(fp, sizeof fp, gt_floor_share(&r->floor, us));
    if (c->gated) snprintf(err, sizeof err, "%.2e", c->gate.error);
    else snprintf(err, sizeof err, "-");
    char note[300];
    snprintf(note, sizeof note, "%s%s%s", c->cand.is_baseline ? "baseline" : "",
             c->cand.is_baseline && c->why[0] ? "; " : "", c->why);
    const char *cells[] = {gt_disp_name(c->disp), tus, sp, tf, gb, fp, err,
                           c->cand.provider->name, c->cand.name, note, fus,
                           gt_bound_name(r->floor.bound)};
    gt_table_row(&t, cells);
    if (c->disp == GT_DISP_PASSED && c->time.n) {
      if (us < *best) *best = us;
      if (us > *worst) *worst = us;
    }
  }
  gt_table_end(&t);
}

/* The lines after the table: the best and its replay, the spread, the floor, the search. */
static void print_summary(const gt_search_result_t *r, const gt_cli_problem_t *cp,
                          const gt_cli_search_t *cs, double best, double worst) {
  const double fl = r->floor.flops, by = r->floor.bytes;
  const gt_cand_result_t *b = &r->c[r->best], *base = &r->c[r->baseline];
  printf("Best: %s/%s %.3f us (%.2f TFLOP/s, %.1f GB/s), %.3fx the baseline %s %.3f us%s\n",
         b->cand.provider->name, b->cand.name, b->time.median, fl / b->time.median / 1e6,
         by / b->time.median / 1e3, base->time.median / b->time.median, base->cand.name,
         base->time.median, r->improved ? "" : " (not above the improvement threshold)");
  char key[1024];
  gt_problem_format_key(&cp->p, key, sizeof key);
  printf("Arguments: gemmtune profile --key '%s' --providers %s,%s --instance %s%s\n", key,
         b->cand.provider->name, base->cand.provider->name, b->cand.name,
         cs->so.measure.warm ? " --warm" : "");
  if (best < INFINITY && worst > 0)
    printf("Spread: worst passing candidate is %.2fx the best (%.3f us vs %.3f us)\n",
           worst / best, worst, best);
  if (r->floor.us > 0) {
    char bp[16], wp[16];
    gt_cli_floor_pct(bp, sizeof bp, gt_floor_share(&r->floor, base->time.median));
    gt_cli_floor_pct(wp, sizeof wp, gt_floor_share(&r->floor, b->time.median));
    printf("Floor: %.4g us, %s-bound (%.4g MB at %.4g GB/s; %.4g GFLOP at %.4g TFLOP/s %s; %s): "
           "baseline %s%% and best %s%% of the %s floor\n",
           r->floor.us, gt_bound_name(r->floor.bound), by / 1e6, r->floor.gbps, fl / 1e9,
           r->floor.tflops, gt_rate_name(r->floor.rate), cs->so.roof.source, bp, wp,
           gt_bound_name(r->floor.bound));
  } else {
    printf("Floor: not known for this device\n");
  }
  char search[512];
  gt_cli_search_text(r->stop, r->stop_why, r->widenings, r->n_widened, r->n_unsearched, search,
                     sizeof search);
  printf("S%s\n", search + 1);
}

int gt_cmd_profile(int argc, char **argv) {
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_cli_problem_init(&cp);
  gt_cli_search_init(&cs);
  gt_fmt_t fmt = GT_FMT_TABLE;
  profile_args_t pa = {0};
  int rc = parse_common("profile", argc, argv, &cp, &cs, &fmt, &pa, k_profile_help,
                        k_profile_examples, PROFILE_OPTS, PROFILE_EXCEPT);
  if (rc == -2) return 0;
  if (rc) return rc;
  if (optind < argc) return gt_cli_usage_error("profile", "unexpected argument '%s'", argv[optind]);
  gt_device_info_t dev;
  cs.quiet = fmt != GT_FMT_TABLE;
  if ((rc = gt_cli_pick_backend("profile", &cs, &dev)) != 0) return rc;
  if ((rc = gt_cli_problem_finish("profile", &cp, &dev)) != 0) return rc;
  gt_cli_backend_note("profile", &cs);
  cs.so.profile_all = !pa.prune;
  cs.so.only = pa.instance;
  progress_ctx_t pc = {"profile", gt_cli_now()};
  gt_search_events_t ev = {&pc, on_phase, NULL};
  gt_search_result_t r;
  gt_status_t s = gt_search_run(&cp.p, &cs.so, &ev, &r);
  gt_cli_progress_clear();
  if (fmt == GT_FMT_TABLE) {
    printf("problem: %s\n", cp.mapping);
    printf("device:  %s (%s, %d)  timing: %s, %d rounds x %d launches\n", dev.name, dev.arch,
           dev.sm_count, cs.so.measure.warm ? "warm" : "cold", r.rounds, r.launches);
    if (r.unavailable[0]) printf("unavailable: %s\n", r.unavailable);
    if (r.throttled)
      printf("THROTTLED: thermal or power clock events during the race (median SM clock %d MHz)\n",
             r.sm_clock_mhz);
    if (dev.busy_processes > 0)
      printf("warning: %d other process(es) were using the GPU; timings may be noisy\n",
             dev.busy_processes);
  }
  if (s != GT_OK) {
    fprintf(stderr, "gemmtune profile: %s\n", r.failure);
    gt_search_result_free(&r);
    return gt_status_exit_code(s);
  }
  double best, worst;
  print_candidates(&r, fmt, pa.explain, &best, &worst);
  if (fmt == GT_FMT_TABLE && r.best >= 0) print_summary(&r, &cp, &cs, best, worst);
  gt_search_result_free(&r);
  return 0;
}

int gt_cmd_baseline(int argc, char **argv) {
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_cli_problem_init(&cp);
  gt_cli_search_init(&cs);
  gt_fmt_t fmt = GT_FMT_TABLE;
  int rc = parse_common("baseline", argc, argv, &cp, &cs, &fmt, NULL, k_baseline_help,
                        k_baseline_examples, BASELINE_OPTS, NULL);
  if (rc == -2) return 0;
  if (rc) return rc;
  if (optind < argc) {
    if (cp.have_shape) return gt_cli_usage_error("baseline", "give a problem or a shapes file, not both");
    if (optind != argc - 1) return gt_cli_usage_error("baseline", "expected one shapes FILE");
    if ((rc = gt_cli_need_file("baseline", NULL, argv[optind])) != 0) return rc;
  }
  gt_device_info_t dev;
  cs.quiet = fmt != GT_FMT_TABLE;
  if ((rc = gt_cli_pick_backend("baseline", &cs, &dev)) != 0) return rc;
  gt_shapes_t sh = {0};
  if (optind < argc) {
    snprintf(cp.p.arch, sizeof cp.p.arch, "%s", dev.arch);
    cp.p.sm_count = dev.sm_count;
    gt_status_t s = gt_shapes_read(argv[optind], &cp.p, &sh, NULL);
    if (s != GT_OK) return gt_cli_fail("baseline", s);
  } else {
    if ((rc = gt_cli_problem_finish("baseline", &cp, &dev)) != 0) return rc;
    sh.v = calloc(1, sizeof *sh.v);
    sh.n = 1;
    sh.v[0].p = cp.p;
    snprintf(sh.v[0].view, sizeof sh.v[0].view, "%s", cp.mapping);
  }
  gt_cli_backend_note("baseline", &cs);
  cs.so.baseline_only = true;
  static const char *const names[] = {"label", "mapping", "baseline", "time_us", "spread_pct",
                                      "tflops", "gbps", "floor_us", "pct_of_floor"};
  static const bool num[] = {0, 0, 0, 1, 1, 1, 1, 1, 1};
  gt_table_t t;
  gt_table_begin(&t, stdout, fmt, 9, names, num);
  int worst = 0;
  for (size_t i = 0; i < sh.n; i++) {
    /* A row capture marked not tunable is no call a baseline stands for (its key only describes
     * it: a pointer-array batch, FP8 scaling...). */
    if (sh.v[i].not_tunable[0]) {
      fprintf(stderr, "gemmtune baseline: line %d skipped: not tunable: %s\n", sh.v[i].line,
              sh.v[i].not_tunable);
      continue;
    }
    progress_ctx_t pc = {"baseline", gt_cli_now()};
    gt_search_events_t ev = {&pc, on_phase, NULL};
    gt_search_result_t r;
    gt_search_opts_t so = cs.so;
    if (sh.v[i].entry != GT_ENTRY_DEFAULT) so.entry = sh.v[i].entry;
    if (sh.v[i].workspace) so.workspace = sh.v[i].workspace;
    gt_status_t s = gt_search_run(&sh.v[i].p, &so, &ev, &r);
    gt_cli_progress_clear();
    gt_floor_t f;
    gt_roof_floor(&dev.roof, &sh.v[i].p, &f);
    const double fl = f.flops, by = f.bytes;
    char tus[32] = "-", sp[32] = "-", tf[32] = "-", gb[32] = "-", fu[32] = "-", pct[32] = "-";
    if (f.us > 0) snprintf(fu, sizeof fu, "%.2f", f.us);
    const char *bname = "-";
    if (s == GT_OK && r.baseline >= 0) {
      const gt_cand_result_t *b = &r.c[r.baseline];
      bname = b->cand.name;
      snprintf(tus, sizeof tus, "%.3f", b->time.median);
      snprintf(sp, sizeof sp, "%.1f", 100 * b->time.rel_spread);
      snprintf(tf, sizeof tf, "%.2f", fl / b->time.median / 1e6);
      snprintf(gb, sizeof gb, "%.1f", by / b->time.median / 1e3);
      if (f.us > 0) snprintf(pct, sizeof pct, "%.1f", 100 * gt_floor_share(&f, b->time.median));
    } else {
      fprintf(stderr, "gemmtune baseline: line %d: %s\n", sh.v[i].line, r.failure);
      worst = gt_status_exit_code(s);
    }
    const char *cells[] = {sh.v[i].label[0] ? sh.v[i].label : "-", sh.v[i].view, bname, tus, sp,
                           tf, gb, fu, pct};
    gt_table_row(&t, cells);
    gt_search_result_free(&r);
  }
  gt_table_end(&t);
  gt_shapes_free(&sh);
  return worst;
}
