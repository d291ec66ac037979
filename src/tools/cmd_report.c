/* gemmtune report: one HTML page to look at, from a tuned DB and, when given, the record of a
 * `verify --json` run and the shapes file the DB was tuned from. What it shows is gathered here
 * (gt_report.h); the page is drawn by report_html.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "core/gt_db.h"
#include "core/gt_fileio.h"
#include "core/gt_shapes.h"
#include "gt_report.h"
#include "gt_version.h"

static const char k_help[] =
    "Usage: gemmtune report DB [--verify VERIFY.json] [--shapes SHAPES] -o REPORT.html\n\n"
    "Writes one self-contained HTML page (inline SVG and CSS: no script, nothing fetched) about\n"
    "a tuned DB:\n"
    "  a roofline per dtype: each key's baseline and tuned FLOP/s against its arithmetic\n"
    "    intensity, under the device's compute and memory roofs;\n"
    "  the speedup per key with its spread, and a table of every row;\n"
    "  the engagement table of a `gemmtune verify --json` record (--verify);\n"
    "  the Amdahl bound against the measured end-to-end gain (--verify), or, from a shapes\n"
    "    file's shares of captured GEMM time (--shapes), the bound on GEMM time.\n"
    "The roofs of H100 and H200 (and A100) are known by the DB's device name; a CPU DB takes\n"
    "this host's estimates (GEMMTUNE_CPU_PEAK_GFLOPS, GEMMTUNE_CPU_PEAK_GBPS); --peak-tflops\n"
    "and --peak-gbps set them.\n\n"
    "  -o, --output FILE      the page to write (required; written atomically)\n"
    "  --verify FILE          a verify record (gemmtune verify ... --json FILE)\n"
    "  --shapes FILE          the shapes file: labels, captured calls and GEMM-time shares\n"
    "  --peak-tflops T        the dense compute roof, TFLOP/s, for every dtype shown\n"
    "  --peak-gbps B          the memory roof, GB/s\n\n"
    "Examples:\n"
    "  gemmtune report build-cpu/example-tuned.db -o report.html\n"
    "  gemmtune verify --db tuned.db --json verify.json -- python3 serve.py\n"
    "  gemmtune report tuned.db --verify verify.json --shapes shapes.csv -o report.html\n\n"
    "Exit status: 0; 64 usage; 65 malformed DB, shapes file or verify record; 66 missing\n"
    "input; 74 the page cannot be written.\n";

enum { RP_OUT = 'o', RP_VERIFY = 7000, RP_SHAPES, RP_PEAKT, RP_PEAKB, RP_HELP };

typedef struct report_args {
  const char *db, *out, *verify, *shapes;
  double peak_tflops, peak_gbps;
} report_args_t;

static int parse_args(int argc, char **argv, report_args_t *a) {
  static const struct option opts[] = {{"output", required_argument, 0, RP_OUT},
                                       {"verify", required_argument, 0, RP_VERIFY},
                                       {"shapes", required_argument, 0, RP_SHAPES},
                                       {"peak-tflops", required_argument, 0, RP_PEAKT},
                                       {"peak-gbps", required_argument, 0, RP_PEAKB},
                                       {"help", no_argument, 0, RP_HELP},
                                       {0, 0, 0, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
    char *end;
    switch (c) {
      case 'h':
      case RP_HELP: printf("%s", k_help); return 0;
      case RP_OUT: a->out = optarg; break;
      case RP_VERIFY: a->verify = optarg; break;
      case RP_SHAPES: a->shapes = optarg; break;
      case RP_PEAKT:
      case RP_PEAKB: {
        double v = strtod(optarg, &end);
        if (!*optarg || *end || !(v > 0))
          return gt_cli_usage_error("report", "%s wants a number > 0, got '%s'",
                                    c == RP_PEAKT ? "--peak-tflops" : "--peak-gbps", optarg);
        if (c == RP_PEAKT) a->peak_tflops = v;
        else a->peak_gbps = v;
        break;
      }
      default: return gt_cli_usage_error("report", "unknown option");
    }
  }
  if (optind != argc - 1) return gt_cli_usage_error("report", "expected one DB");
  if (!a->out) return gt_cli_usage_error("report", "-o REPORT.html is required");
  a->db = argv[optind];
  return -1;
}

/* ---- roofs -------------------------------------------------------------------------------------- */

/* The roofline a key belongs to: its input type, and for f32 how the products are made. */
static void key_dtype(const gt_problem_t *k, char *b, size_t n) {
  if (k->a_type == GT_DT_F32)
    snprintf(b, n, "f32 (%s)", k->compute == GT_COMPUTE_TF32 ? "tf32" : "f32");
  else
    snprintf(b, n, "%s", gt_dtype_name(k->a_type));
}

/* Fill every roof: the options, else the device table, else (a CPU DB) this host's estimates. */
static void fill_roofs(gt_report_t *r, const report_args_t *a) {
  gt_roof_t roof;
  bool known = gt_roof_datasheet(r->device, r->sm_count, &roof);
  gt_device_info_t host;
  bool cpu = !known && strcmp(r->arch, "cpu") == 0 && gt_harness_host.describe(0, &host) == GT_OK;
  if (known)
    snprintf(r->roof_source, sizeof r->roof_source, "%s", roof.source);
  else if (cpu)
    snprintf(r->roof_source, sizeof r->roof_source, "this host's estimates (%s; "
             "GEMMTUNE_CPU_PEAK_GFLOPS, GEMMTUNE_CPU_PEAK_GBPS)", host.name);
  else
    snprintf(r->roof_source, sizeof r->roof_source, "not known for this device: give "
             "--peak-tflops and --peak-gbps");
  if (cpu) roof = host.roof;
  for (size_t i = 0; i < r->nroofs; i++) {
    gt_report_roof_t *ro = &r->roofs[i];
    if (known || cpu) {
      ro->peak_flops = roof.tflops[ro->rate] * 1e12;
      ro->bw = roof.gbps * 1e9;
    }
    if (a->peak_tflops > 0) ro->peak_flops = a->peak_tflops * 1e12;
    if (a->peak_gbps > 0) ro->bw = a->peak_gbps * 1e9;
  }
  if (a->peak_tflops > 0 || a->peak_gbps > 0) {
    size_t l = strlen(r->roof_source);
    snprintf(r->roof_source + l, sizeof r->roof_source - l, ", as --peak-tflops/--peak-gbps set");
  }
}

/* ---- gathering ---------------------------------------------------------------------------------- */

static int add_keys(gt_report_t *r, const gt_db_t *db) {
  r->keys = calloc(db->n + 1, sizeof *r->keys);
  r->roofs = calloc(db->n + 1, sizeof *r->roofs);
  if (!r->keys || !r->roofs) return fprintf(stderr, "gemmtune report: out of memory\n"), EX_SOFTWARE_;
  for (size_t i = 0; i < db->n; i++) {
    const gt_db_row_t *row = &db->rows[i];
    gt_report_key_t *k = &r->keys[r->n++];
    snprintf(k->shape, sizeof k->shape, "%s m=%lld n=%lld k=%lld%s%s", gt_problem_ops(&row->key),
             (long long)row->key.m, (long long)row->key.n, (long long)row->key.k,
             row->key.batch > 1 ? " batched" : "",
             row->key.epilogue != GT_EPI_NONE ? " +epilogue" : "");
    key_dtype(&row->key, k->dtype, sizeof k->dtype);
    snprintf(k->provider, sizeof k->provider, "%s", row->provider);
    snprintf(k->instance, sizeof k->instance, "%s", row->instance);
    k->flops = gt_problem_flops(&row->key);
    k->bytes = gt_problem_min_bytes(&row->key);
    k->base_us = row->baseline_us;
    k->tuned_us = row->time_us;
    k->speedup = row->speedup;
    k->spread_pct = row->spread_pct;
    k->share = -1;
    size_t j = 0;
    while (j < r->nroofs && strcmp(r->roofs[j].dtype, k->dtype)) j++;
    if (j == r->nroofs) {
      snprintf(r->roofs[r->nroofs].dtype, sizeof r->roofs[0].dtype, "%s", k->dtype);
      r->roofs[r->nroofs++].rate = gt_roof_rate_of(&row->key);
    }
  }
  if (db->n) {
    snprintf(r->arch, sizeof r->arch, "%s", db->rows[0].key.arch);
    r->sm_count = db->rows[0].key.sm_count;
  }
  return 0;
}

/* Labels, calls and shares from the shapes file, read with the DB's device as the default. */
static int add_shapes(gt_report_t *r, const gt_db_t *db, const char *path) {
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  snprintf(defaults.arch, sizeof defaults.arch, "%s", r->arch);
  defaults.sm_count = r->sm_count;
  gt_shapes_t sh;
  gt_status_t s = gt_shapes_read(path, &defaults, &sh, NULL);
  if (s != GT_OK) return gt_cli_fail("report", s);
  r->have_shapes = true;
  snprintf(r->shapes_path, sizeof r->shapes_path, "%s", path);
  r->shapes_total = sh.n;
  double saved = 0, shared = 0; /* share-weighted time the tuned keys save, of the shares known */
  for (size_t i = 0; i < sh.n; i++) {
    shared += sh.v[i].share;
    const gt_db_row_t *row = gt_db_lookup(db, &sh.v[i].p);
    if (!row) continue;
    r->shapes_tuned++;
    gt_report_key_t *k = &r->keys[row - db->rows];
    snprintf(k->label, sizeof k->label, "%s", sh.v[i].label);
    if (sh.v[i].calls > 0) k->share = sh.v[i].share; /* written by capture: known */
    k->calls = sh.v[i].calls;
    saved += sh.v[i].share * (1 - 1 / row->speedup);
  }
  if (shared > 0) r->gemm_bound = 1 / (1 - saved / shared);
  gt_shapes_free(&sh);
  return 0;
}

/* The whole file as a NUL-terminated string (malloc'ed), NULL with errno on failure. */
static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, got;
  do {
    if (len + 4096 + 1 > cap) {
      char *nb = realloc(buf, cap = 2 * cap + 8192);
      if (!nb) return free(buf), fclose(f), errno = ENOMEM, NULL;
      buf = nb;
    }
    got = fread(buf + len, 1, 4096, f);
    len += got;
  } while (got > 0);
  bool bad = ferror(f);
  fclose(f);
  if (bad) return free(buf), errno = EIO, NULL;
  buf[len] = '\0';
  return buf;
}

static int read_verify(gt_report_t *r, gt_json_t *js, const char *path) {
  char *text = read_all(path);
  if (!text) return fprintf(stderr, "gemmtune report: %s: %s\n", path, strerror(errno)), EX_IOERR_;
  char err[200];
  bool ok = gt_json_parse(text, js, err, sizeof err);
  free(text);
  if (!ok) return fprintf(stderr, "gemmtune report: %s: %s\n", path, err), EX_DATAERR_;
  if (strncmp(gt_json_str(gt_json_get(js, "format")), "gemmtune-verify", 15) != 0)
    return fprintf(stderr, "gemmtune report: %s: not a `gemmtune verify --json` record (no "
                           "\"format\": \"gemmtune-verify 1\")\n", path), EX_DATAERR_;
  r->verify = js;
  snprintf(r->verify_path, sizeof r->verify_path, "%s", path);
  return 0;
}

/* Draw the page into memory, then write it atomically: a failed run leaves no half page. */
static int write_page(const gt_report_t *r, const char *out) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return fprintf(stderr, "gemmtune report: out of memory\n"), EX_SOFTWARE_;
  bool ok = gt_report_write_html(f, r);
  fclose(f);
  gt_status_t s = ok ? gt_file_write_atomic(out, buf, len) : GT_ERR_IO;
  free(buf);
  if (s != GT_OK) return gt_cli_fail("report", s);
  printf("report: %s (%zu keys, %zu roofline%s%s)\n", out, r->n, r->nroofs,
         r->nroofs == 1 ? "" : "s", r->verify ? ", engagement from the verify record" : "");
  return 0;
}

int gt_cmd_report(int argc, char **argv) {
  report_args_t a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  const char *inputs[] = {a.db, a.verify, a.shapes};
  for (int i = 0; i < 3; i++)
    if (inputs[i] && (rc = gt_cli_need_file("report", NULL, inputs[i])) != 0) return rc;
  gt_db_t db;
  gt_db_init(&db);
  gt_status_t s = gt_db_read(a.db, &db);
  if (s != GT_OK) return gt_cli_fail("report", s);
  gt_report_t r;
  memset(&r, 0, sizeof r);
  gt_json_t js = {0};
  snprintf(r.db_path, sizeof r.db_path, "%s", a.db);
  const char *dev = gt_db_get_validator(&db, "device");
  snprintf(r.device, sizeof r.device, "%s", dev ? dev : "unknown device");
  const char *ver = gt_db_get_validator(&db, "gemmtune");
  snprintf(r.version, sizeof r.version, "%s", ver ? ver : GT_VERSION);
  time_t now = time(NULL);
  strftime(r.generated, sizeof r.generated, "%Y-%m-%d %H:%M UTC", gmtime(&now));
  rc = add_keys(&r, &db);
  if (!rc && a.shapes) rc = add_shapes(&r, &db, a.shapes);
  if (!rc && a.verify) rc = read_verify(&r, &js, a.verify);
  if (!rc) {
    fill_roofs(&r, &a);
    rc = write_page(&r, a.out);
  }
  gt_json_free(&js);
  free(r.keys);
  free(r.roofs);
  gt_db_free(&db);
  return rc;
}
