/* Own kernels against cublasGemmEx on decode shapes, raced the way `tune` races them: through the
 * search driver (gt_search_run) with the providers cublas (the baseline) and kernels, on the CUDA
 * harness (cold: input sets rotated through >= 3x L2; CUDA-graph replays). Every candidate gets
 * a quick time (one sample as long as a careful one: it only ranks) and a gate verdict against
 * the fp64 reference; the baseline and the best `--finalists` that passed are re-timed in
 * `--rounds` interleaved rounds (the order rotating every round) and compared by median.
 *
 *   kernels_bench [--shapes FILE] [--out DIR] [--rounds N] [--finalists N] [--filter TEXT]
 *                 [--tokens LIST] [--layout tn|nn|nt|tt]
 *
 * --layout re-lays every shape out in that BLAS layout (same m = out, n = tokens, k = in; packed
 * leading dimensions) and races cuBLAS and the own instances of that layout: tn is the nn.Linear
 * call the shapes files describe, nn has the weights M-major (x @ W with W stored [in, out]),
 * nt and tt have the tokens N-major.
 *
 * Prints per shape: cuBLAS us, best own us and its name, ratio (cuBLAS / own), achieved GB/s of
 * the best own kernel (fewest bytes: A, B, D once), and at the end the geomean of max(1, ratio)
 * (what a tuned dispatch that falls back to cuBLAS when it is faster gets) and of the raw ratio,
 * the same two per tokens value, the ceiling any kernel could give (each row's bytes at the
 * datasheet bandwidth, no launch or tail cost), and the two absolute targets with the
 * floor of the 9 us rows.
 * With --out (default $OUT when set) it writes kernels_bench.csv (one row per shape) and
 * kernels_bench_candidates.csv (every candidate that passed the gate, with its quick time and,
 * for the baseline and the finalists, its re-timed median). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/gt_problem.h"
#include "core/gt_shapes.h"
#include "core/gt_stats.h"
#include "harness/gt_harness.h"
#include "providers/gt_provider.h"
#include "search/gt_search.h"

typedef struct opts {
  const char *shapes, *out, *filter, *tokens, *layout;
  int rounds, finalists;
} opts_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(void) {
  fprintf(stderr, "usage: kernels_bench [--shapes FILE] [--out DIR] [--rounds N] [--finalists N]"
                  " [--filter TEXT] [--tokens 1,2,4] [--layout tn|nn|nt|tt]\n");
}

static bool tokens_selected(const char *list, int64_t n) {
  if (!list || !*list) return true;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
    if (atoll(t) == n) return true;
  return false;
}

/* The race of one shape, as the table and the CSV files report it. */
typedef struct shape_race {
  gt_search_result_t r;
  const gt_cand_result_t *base; /* cuBLAS */
  const gt_cand_result_t *best; /* the fastest re-timed own candidate, NULL none */
  int own_raced;                /* own candidates that passed the gate and have a quick time */
  int own_gate_failed;          /* own candidates that failed to load, run or pass the gate
                                   before the race */
} shape_race_t;

static bool passed_gate(const gt_cand_result_t *c) { return c->gated && c->gate.passed; }

/* Race p's candidates through the search driver. false (message printed) when the shape could
 * not be raced; sr->r is freed then. */
static bool race_shape(const gt_shape_t *sh, const gt_problem_t *p, const opts_t *o, size_t si,
                       shape_race_t *sr) {
  gt_search_opts_t so;
  gt_search_opts_init(&so, GT_BACKEND_CUDA);
  so.measure.seed = 1234567 + si;
  so.providers = "cublas,kernels";
  so.rounds = o->rounds;
  so.finalists = o->finalists;
  /* Every candidate's quick time is one careful sample and every candidate is gated, so the
   * candidates file lists each gated candidate with a time that is as good as any sample. */
  so.prune_fraction = 1;
  so.gate_all = true;
  /* Raced straight after the quick pass, without tune's settling run, as this benchmark's
   * earlier tables (bench/results/) were: decode shapes do not reach the power limit. */
  so.settle_s = 0;
  memset(sr, 0, sizeof *sr);
  gt_status_t s = gt_search_run(p, &so, NULL, &sr->r);
  if (sr->r.unavailable[0]) fprintf(stderr, "  unavailable: %s\n", sr->r.unavailable);
  if (s != GT_OK) {
    fprintf(stderr, "%s tokens=%lld: %s\n", sh->label, (long long)p->n, sr->r.failure);
    gt_search_result_free(&sr->r);
    return false;
  }
  sr->base = &sr->r.c[sr->r.baseline];
  for (size_t i = 0; i < sr->r.n; i++) {
    const gt_cand_result_t *c = &sr->r.c[i];
    if ((int)i == sr->r.baseline || c->disp == GT_DISP_EXCLUDED) continue;
    if (c->disp == GT_DISP_FAILED_GATE || (c->disp == GT_DISP_FAILED_RUN && !c->gated)) {
      fprintf(stderr, "  %s: %s: %s\n", c->cand.name, gt_disp_name(c->disp), c->why);
      sr->own_gate_failed++;
    }
    if (passed_gate(c) && c->prune_us > 0) sr->own_raced++;
    if (c->disp == GT_DISP_PASSED && c->time.n &&
        (!sr->best || c->time.median < sr->best->time.median))
      sr->best = c;
  }
  return true;
}

/* One line per candidate that passed the gate (the baseline first: the provider table lists
 * cublas before kernels): its quick time and, when it was re-timed, its median. */
static void write_candidates(FILE *ccsv, const gt_shape_t *sh, const gt_problem_t *p,
                             const shape_race_t *sr) {
  for (size_t i = 0; i < sr->r.n; i++) {
    const gt_cand_result_t *c = &sr->r.c[i];
    if (!passed_gate(c)) continue;
    fprintf(ccsv, "%s,%lld,%lld,%lld,%s,%.3f,%.3f,%.4f,%zu\n", sh->label, (long long)p->n,
            (long long)p->m, (long long)p->k, c->cand.name, c->prune_us,
            c->time.n ? c->time.median : NAN, c->time.n ? c->time.rel_spread : NAN, c->time.n);
  }
}

/* Geomeans and the targets over the shapes raced so far. */
typedef struct summary {
  double log_clamped, log_raw;
  /* What the targets can be at all: the geomean of max(1, cublas / floor), the floor being the
   * row's bytes moved at the datasheet bandwidth with no launch or tail cost. */
  double log_ceiling, t9_floor;
  int counted;
  /* The same geomeans per tokens value (the decode regime moves with it). */
  struct tok_geo {
    long long tokens;
    double log_raw, log_clamped;
    int n;
  } by_tok[32];
  int n_tok;
  /* The targets: decode at 4096x4096 and 6144x4096 (tokens <= 16) within 9 us; weights
   * of 100 MB or more streamed at 4.3 TB/s or better. */
  int t9_n, t9_met, bw_n, bw_met;
  double t9_worst, bw_lowest;
  char t9_where[96], bw_where[96];
} summary_t;

static void summary_add(summary_t *S, const gt_device_info_t *dev, const gt_shape_t *sh,
                        const gt_problem_t *p, double cu, double own_us) {
  const double ratio = cu / own_us, bytes = gt_problem_min_bytes(p);
  S->log_clamped += log(ratio > 1 ? ratio : 1);
  S->log_raw += log(ratio);
  S->counted++;
  int ti = 0;
  while (ti < S->n_tok && S->by_tok[ti].tokens != (long long)p->n) ti++;
  if (ti == S->n_tok && S->n_tok < (int)(sizeof S->by_tok / sizeof S->by_tok[0]))
    S->by_tok[S->n_tok++] = (struct tok_geo){(long long)p->n, 0, 0, 0};
  if (ti < S->n_tok) {
    S->by_tok[ti].log_raw += log(ratio);
    S->by_tok[ti].log_clamped += log(ratio > 1 ? ratio : 1);
    S->by_tok[ti].n++;
  }
  const double weight_mb = (double)p->m * p->k * 2 / 1e6, tbps = bytes / own_us / 1e6;
  const double floor_us = dev->peak_gbps > 0 ? bytes / (dev->peak_gbps * 1e3) : NAN;
  S->log_ceiling += log(cu / floor_us > 1 ? cu / floor_us : 1);
  if (p->k == 4096 && (p->m == 4096 || p->m == 6144) && p->n <= 16) {
    S->t9_n++;
    if (floor_us > S->t9_floor) S->t9_floor = floor_us;
    S->t9_met += own_us <= 9.0;
    if (own_us > S->t9_worst) {
      S->t9_worst = own_us;
      snprintf(S->t9_where, sizeof S->t9_where, "%s tokens=%lld", sh->label, (long long)p->n);
    }
  }
  if (weight_mb >= 100) {
    S->bw_n++;
    S->bw_met += tbps >= 4.3;
    if (tbps < S->bw_lowest) {
      S->bw_lowest = tbps;
      snprintf(S->bw_where, sizeof S->bw_where, "%s tokens=%lld", sh->label, (long long)p->n);
    }
  }
}

static void summary_print(const summary_t *S, const gt_device_info_t *dev, double wall_s) {
  printf("\n%d shapes in %.0f s\n", S->counted, wall_s);
  if (S->counted) {
    printf("geomean of max(1, cublas/own) (tuned dispatch): %.3f\n", exp(S->log_clamped / S->counted));
    printf("geomean of cublas/own (best own alone):          %.3f\n", exp(S->log_raw / S->counted));
    if (dev->peak_gbps > 0)
      printf("ceiling: geomean of max(1, cublas/floor), floor = bytes at %.0f GB/s with no "
             "launch or tail: %.3f\n", dev->peak_gbps, exp(S->log_ceiling / S->counted));
    for (int ti = 0; ti < S->n_tok; ti++)
      printf("tokens %4lld: geomean cublas/own %.3f, tuned %.3f (%d rows)\n", S->by_tok[ti].tokens,
             exp(S->by_tok[ti].log_raw / S->by_tok[ti].n),
             exp(S->by_tok[ti].log_clamped / S->by_tok[ti].n), S->by_tok[ti].n);
  }
  if (S->t9_n)
    printf("target own <= 9 us at 4096x4096/6144x4096, tokens <= 16: %d of %d met (worst %.2f us, "
           "%s; the largest of these rows' floors: %.2f us)\n", S->t9_met, S->t9_n, S->t9_worst,
           S->t9_where, S->t9_floor);
  if (S->bw_n)
    printf("target >= 4.3 TB/s on weights >= 100 MB: %d of %d met (lowest %.2f TB/s, %s)\n",
           S->bw_met, S->bw_n, S->bw_lowest, S->bw_where);
}

/* Parse argv into o; false on a usage error (usage printed). */
static bool parse_opts(int argc, char **argv, opts_t *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--shapes") && v) o->shapes = v, i++;
    else if (!strcmp(a, "--out") && v) o->out = v, i++;
    else if (!strcmp(a, "--rounds") && v) o->rounds = atoi(v), i++;
    else if (!strcmp(a, "--finalists") && v) o->finalists = atoi(v), i++;
    else if (!strcmp(a, "--filter") && v) o->filter = v, i++;
    else if (!strcmp(a, "--tokens") && v) o->tokens = v, i++;
    else if (!strcmp(a, "--layout") && v) o->layout = v, i++;
    else {
      usage();
      return false;
    }
  }
  if (o->rounds < 1 || o->finalists < 1) {
    usage();
    return false;
  }
  return true;
}

/* Open kernels_bench.csv and kernels_bench_candidates.csv under dir, headers written. */
static bool open_csvs(const char *dir, FILE **csv, FILE **ccsv) {
  char path[1024];
  snprintf(path, sizeof path, "%s/kernels_bench.csv", dir);
  *csv = fopen(path, "w");
  snprintf(path, sizeof path, "%s/kernels_bench_candidates.csv", dir);
  *ccsv = fopen(path, "w");
  if (!*csv || !*ccsv) {
    fprintf(stderr, "kernels_bench: cannot write under %s\n", dir);
    return false;
  }
  fprintf(*csv, "label,tokens,out,in,weight_mb,cublas_us,cublas_spread,best_us,best_spread,"
                "best_name,ratio,best_gbps,cublas_gbps,own_raced,own_gate_failed\n");
  fprintf(*ccsv, "label,tokens,out,in,name,quick_us,median_us,spread,rounds\n");
  return true;
}

/* The table line, the summary and the CSV row of one raced shape. */
static void report_shape(const shape_race_t *sr, const gt_shape_t *sh, const gt_problem_t *p,
                         const gt_device_info_t *dev, summary_t *S, FILE *csv, FILE *ccsv) {
  const gt_cand_result_t *best = sr->best;
  const double bytes = gt_problem_min_bytes(p);
  const double cu = sr->base->time.median;
  const double own_us = best ? best->time.median : NAN;
  const double ratio = best ? cu / own_us : NAN;
  printf("%-22s %6lld %6lld %6lld | %9.2f %9.2f %6.2f %8.0f | %s\n", sh->label,
         (long long)p->n, (long long)p->m, (long long)p->k, cu, own_us, ratio,
         best ? bytes / own_us / 1e3 : NAN, best ? best->cand.name : "(no own candidate)");
  fflush(stdout);
  if (best) summary_add(S, dev, sh, p, cu, own_us);
  if (!csv) return;
  fprintf(csv, "%s,%lld,%lld,%lld,%.1f,%.3f,%.4f,%.3f,%.4f,%s,%.4f,%.0f,%.0f,%d,%d\n", sh->label,
          (long long)p->n, (long long)p->m, (long long)p->k, (double)p->m * p->k * 2 / 1e6, cu,
          sr->base->time.rel_spread, own_us, best ? best->time.rel_spread : NAN,
          best ? best->cand.name : "", ratio, best ? bytes / own_us / 1e3 : NAN, bytes / cu / 1e3,
          sr->own_raced, sr->own_gate_failed);
  write_candidates(ccsv, sh, p, sr);
  fflush(csv);
  fflush(ccsv);
}

int main(int argc, char **argv) {
  opts_t o = {.shapes = "bench/decode_shapes.csv", .out = getenv("OUT"), .rounds = 9,
              .finalists = 4};
  if (!parse_opts(argc, argv, &o)) return 64;
  gt_trans_t lay_a = GT_TRANS_T, lay_b = GT_TRANS_N;
  if (o.layout && !gt_layout_parse(o.layout, &lay_a, &lay_b)) {
    fprintf(stderr, "kernels_bench: --layout '%s': expected tn, nn, nt or tt\n", o.layout);
    return 64;
  }
  const gt_harness_ops_t *h = gt_harness_for(GT_BACKEND_CUDA);
  if (!h || h->available(0) != GT_OK) {
    printf("skip: no usable CUDA device: %s\n", gt_err_msg());
    return 77;
  }
  gt_device_info_t dev;
  if (h->describe(0, &dev) != GT_OK) {
    fprintf(stderr, "describe: %s\n", gt_err_msg());
    return 1;
  }
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  defaults.compute = GT_COMPUTE_F32;
  defaults.scale_type = GT_DT_F32;
  snprintf(defaults.arch, sizeof defaults.arch, "%s", dev.arch);
  defaults.sm_count = dev.sm_count;
  gt_shapes_t shapes;
  if (gt_shapes_read(o.shapes, &defaults, &shapes, NULL) != GT_OK) {
    fprintf(stderr, "kernels_bench: %s\n", gt_err_msg());
    return 1;
  }
  FILE *csv = NULL, *ccsv = NULL;
  if (o.out && *o.out && !open_csvs(o.out, &csv, &ccsv)) return 1;
  printf("device: %s (%s, %d SMs, L2 %.0f MB, %.0f GB/s datasheet)\n", dev.name, dev.arch,
         dev.sm_count, dev.cache_bytes / 1e6, dev.peak_gbps);
  printf("layout: %s\n", o.layout ? o.layout : "as in the shapes file (tn: nn.Linear)");
  printf("method: cold (rotated >= 3x L2), CUDA-graph replays, quick race then %d interleaved "
         "rounds of cublas + %d finalists, medians\n\n",
         o.rounds, o.finalists);
  printf("%-22s %6s %6s %6s | %9s %9s %6s %8s | %s\n", "shape", "tokens", "out", "in",
         "cublas_us", "own_us", "ratio", "own_GB/s", "best own instance");
  summary_t S;
  memset(&S, 0, sizeof S);
  S.bw_lowest = INFINITY;
  const double t_start = now_s();
  for (size_t si = 0; si < shapes.n; si++) {
    const gt_shape_t *sh = &shapes.v[si];
    gt_problem_t pl = sh->p;
    if (o.layout) {
      pl.transa = lay_a;
      pl.transb = lay_b;
      pl.lda = pl.ldb = pl.ldc = 0;
      gt_problem_fill_lds(&pl);
    }
    if (o.filter && !strstr(sh->label, o.filter)) continue;
    if (!tokens_selected(o.tokens, pl.n)) continue;
    shape_race_t sr;
    if (!race_shape(sh, &pl, &o, si, &sr)) continue;
    report_shape(&sr, sh, &pl, &dev, &S, csv, ccsv);
    gt_search_result_free(&sr.r);
  }
  summary_print(&S, &dev, now_s() - t_start);
  if (csv) fclose(csv);
  if (ccsv) fclose(ccsv);
  gt_shapes_free(&shapes);
  return 0;
}
