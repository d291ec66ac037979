/* gemmtune shapes: what a shapes file asks for, against this device's roofline. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "core/gt_shapes.h"

static const char k_help[] =
    "Usage: gemmtune shapes FILE [options]\n\n"
    "Reads a shapes file (nn.Linear view tokens,out_features,in_features; row-major\n"
    "layout,M,N,K with the layout code quoted, \"mk,nk\",16,4096,4096; or BLAS key columns as\n"
    "`gemmtune capture` writes) and prints for each shape\n"
    "the BLAS mapping applied, FLOPs, the fewest bytes it must move, arithmetic intensity\n"
    "(FLOP/byte), the regime on this device (compute-bound when the intensity exceeds the\n"
    "device's ridge point peak_flops/bandwidth, else memory-bound) and the roofline floor\n"
    "max(flops/peak, bytes/bandwidth): no kernel runs much faster than that.\n"
    "A row `gemmtune capture` marked not_tunable (a GEMM the workload ran that cannot be\n"
    "tuned) says why in the last column, tunable; `tune` skips it.\n\n"
    "  --format table|csv|json\n";

static const char k_examples[] =
    "\nExamples:\n"
    "  gemmtune shapes examples/small_cpu.csv\n"
    "  gemmtune shapes --cpu --format csv captured.csv      # the host's roofline, as CSV\n"
    "  printf 'layout,M,N,K\\n\"mk,nk\",16,4096,4096\\n' > rm.csv && gemmtune shapes rm.csv\n\n"
    "Exit status: 0; 64 usage; 65 malformed file (file:line and the column); 66 missing file.\n";

#define SHAPES_OPTS (GT_OPT_TYPES | GT_OPT_DEVICE)

enum { S_FORMAT = 3000, S_HELP };

/* The device line: the bf16/f16 peak and the bandwidth the floors use, the ridge point, the
 * other types' peaks where they differ, and where the figures come from. */
static void print_roof(const gt_device_info_t *dev) {
  const gt_roof_t *r = &dev->roof;
  const double t16 = r->tflops[GT_RATE_TC16];
  printf("device: %s (%s, %d %s), peak %.3g TFLOP/s, %.4g GB/s, ridge %.3g FLOP/byte\n",
         dev->name, dev->arch, dev->sm_count, strcmp(dev->arch, "cpu") ? "SMs" : "cores", t16,
         r->gbps, r->gbps > 0 ? t16 * 1e12 / (r->gbps * 1e9) : 0);
  bool same = true;
  for (int k = 0; k < GT_RATE__COUNT; k++) same = same && r->tflops[k] == t16;
  if (!same) {
    printf("peaks by type:");
    for (int k = 0; k < GT_RATE__COUNT; k++)
      printf("%s %s %.4g", k ? "," : "", gt_rate_name((gt_rate_t)k), r->tflops[k]);
    printf(" TFLOP/s\n");
  }
  printf("roofline from %s\n", r->source);
}

int gt_cmd_shapes(int argc, char **argv) {
  static const struct option own[] = {{"format", required_argument, 0, S_FORMAT},
                                      {"help", no_argument, 0, S_HELP},
                                      {0, 0, 0, 0}};
  struct option *opts = gt_cli_options(own, SHAPES_OPTS, NULL);
  gt_cli_problem_t cp;
  gt_cli_search_t cs;
  gt_cli_problem_init(&cp);
  gt_cli_search_init(&cs);
  gt_fmt_t fmt = GT_FMT_TABLE;
  int c, rc;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    if (c == 'h' || c == S_HELP) {
      printf("%s", k_help);
      gt_cli_options_help(stdout, SHAPES_OPTS, NULL);
      printf("%s", k_examples);
      free(opts);
      return 0;
    }
    if (c == S_FORMAT) {
      if (gt_cli_parse_format("shapes", optarg, &fmt)) return free(opts), EX_USAGE_;
    } else if ((rc = gt_cli_problem_opt("shapes", &cp, c, optarg)) != 0 ||
               (rc = gt_cli_search_opt("shapes", &cs, c, optarg)) != 0) {
      if (rc < 0) return free(opts), EX_USAGE_;
    } else {
      free(opts);
      return gt_cli_usage_error("shapes", "unknown option");
    }
  }
  free(opts);
  if (optind != argc - 1) return gt_cli_usage_error("shapes", "expected one shapes FILE");
  if ((rc = gt_cli_need_file("shapes", NULL, argv[optind])) != 0) return rc;
  gt_device_info_t dev;
  cs.quiet = fmt != GT_FMT_TABLE;
  if ((rc = gt_cli_pick_backend("shapes", &cs, &dev)) != 0) return rc;
  snprintf(cp.p.arch, sizeof cp.p.arch, "%s", dev.arch);
  cp.p.sm_count = dev.sm_count;
  gt_shapes_t sh;
  size_t merged = 0;
  gt_status_t s = gt_shapes_read(argv[optind], &cp.p, &sh, &merged);
  if (s != GT_OK) return gt_cli_fail("shapes", s);
  gt_cli_backend_note("shapes", &cs);
  if (fmt == GT_FMT_TABLE) print_roof(&dev);
  static const char *const names[] = {"line", "label", "mapping", "gflop", "mbytes", "flop_per_byte",
                                      "regime", "floor_us", "calls", "share", "tunable"};
  static const bool num[] = {1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 0};
  gt_table_t t;
  gt_table_begin(&t, stdout, fmt, 11, names, num);
  size_t untunable = 0;
  for (size_t i = 0; i < sh.n; i++) {
    const gt_shape_t *x = &sh.v[i];
    gt_floor_t f;
    gt_roof_floor(&dev.roof, &x->p, &f); /* the floor tune and profile report shares of */
    const double fl = f.flops, by = f.bytes, ai = fl / by;
    char line[16], gf[32], mb[32], ais[32], fus[32], calls[32], share[32];
    snprintf(line, sizeof line, "%d", x->line);
    snprintf(gf, sizeof gf, "%.3f", fl / 1e9);
    snprintf(mb, sizeof mb, "%.2f", by / 1e6);
    snprintf(ais, sizeof ais, "%.1f", ai);
    snprintf(fus, sizeof fus, f.us > 0 ? "%.2f" : "-", f.us);
    snprintf(calls, sizeof calls, "%ld", x->calls);
    snprintf(share, sizeof share, "%.4f", x->share);
    char tunable[GT_SHAPE_REASON_MAX + 8];
    snprintf(tunable, sizeof tunable, "%s%s", x->not_tunable[0] ? "no: " : "yes", x->not_tunable);
    untunable += x->not_tunable[0] != '\0';
    const char *cells[] = {line, x->label[0] ? x->label : "-", x->view, gf, mb, ais,
                           f.bound == GT_BOUND_COMPUTE  ? "compute"
                           : f.bound == GT_BOUND_BANDWIDTH ? "memory"
                                                           : "-",
                           fus, x->calls ? calls : "-",
                           x->calls ? share : "-", tunable};
    gt_table_row(&t, cells);
  }
  gt_table_end(&t);
  if (fmt == GT_FMT_TABLE && merged)
    printf("%zu duplicate rows merged into earlier identical keys\n", merged);
  if (fmt == GT_FMT_TABLE && untunable)
    printf("%zu of %zu rows are not tunable (marked by capture: GEMMs the workload ran that "
           "gemmtune cannot tune); `tune` skips them\n",
           untunable, sh.n);
  gt_shapes_free(&sh);
  return 0;
}
