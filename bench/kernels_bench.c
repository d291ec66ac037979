/* Own kernels against cublasGemmEx on decode shapes, raced the way `tune` races them: through the
 * search driver (gt_search_run) with the providers cublas (the baseline) and kernels, on the CUDA
 * harness (cold: input sets rotated through >= 3x L2; CUDA-graph replays). Every candidate gets
 * a quick time (one sample as long as a careful one: it only ranks) and a gate verdict against
 * the fp64 reference; the baseline and the best `--finalists` that passed are re-timed in
 * `--rounds` interleaved rounds (the order rotating every round) and compared by median.
 *
 *   kernels_bench [--shapes FILE] [--out DIR] [--rounds N] [--finalists N] [--filter TEXT]
 *                 [--tokens LIST] [--layout tn|nn|nt|tt] [--epilogue NAME]
 *                 [--dtype A[,B]] [--scale tensor|outer|block] [--out-dtype T] [--fast-accum]
 *
 * --dtype f8e4m3fn (or f8e4m3fn,f8e5m2 / f8e5m2,f8e4m3fn for the mixes) makes every shape an fp8
 * GEMM (A = the weights, B = the activations, D --out-dtype, bf16 by default) scaled as --scale
 * says: tensor (one factor per operand, torch._scaled_mm tensorwise: the default), outer (a factor
 * per row of W and per token: rowwise) or block (DeepSeek V3: 128x128 weight blocks, 1x128
 * activation blocks). Such keys are cublasLtMatmul calls: the baseline is the application's own
 * Lt fp8 call (cublaslt_heuristic_ws1048576), cuBLASLt's heuristic configurations race too, and
 * own fp8 instances join through the kernels provider once they exist (until then it lists one
 * exclusion saying so). The keys ask for full accumulation (torch._scaled_mm's default): the own
 * kernels promote their sums as cuBLASLt does; --fast-accum races use_fast_accum keys instead.
 *
 * --layout re-lays every shape out in that BLAS layout (same m = out, n = tokens, k = in; packed
 * leading dimensions) and races cuBLAS and the own instances of that layout: tn is the nn.Linear
 * call the shapes files describe, nn has the weights M-major (x @ W with W stored [in, out]),
 * nt and tt have the tokens N-major.
 *
 * --epilogue bias (or relu, bias_relu, gelu, bias_gelu; none is the default) gives every shape's
 * key that epilogue and races it as a cublasLtMatmul call (entry point cublasLtMatmul, providers
 * cublaslt and kernels): the baseline is cublaslt_heuristic_ws1048576, the application's own Lt
 * call with its bias epilogue (PyTorch's F.linear with a bias), and the own candidates are the
 * epilogue twins. cuBLASLt's heuristic configurations race too; the finalists are widened by
 * their number so --finalists own candidates are still re-timed. Then the cost of the fused
 * epilogue: the best twin and its plain instance, the plain one on the same shape without the
 * epilogue, each loaded in a bench of its own in this process and timed in --rounds interleaved
 * rounds (the order alternating) with the same launches per sample; the row prints both medians
 * and twin / plain, the summary their geomean.
 *
 * Prints per shape: cuBLAS us, best own us and its name, ratio (cuBLAS / own), achieved GB/s of
 * the best own kernel (fewest bytes: A, B, D once), and at the end the geomean of max(1, ratio)
 * (what a tuned dispatch that falls back to cuBLAS when it is faster gets) and of the raw ratio,
 * the same two per tokens value, the ceiling any kernel could give (each row's bytes at the
 * datasheet bandwidth, no launch or tail cost), and the issues' two absolute targets for the
 * run's element type (bf16/f16: 9 us rows and 4.3 TB/s; fp8: 1x4096x4096 in 6 us and 4.2 TB/s
 * on fp8 weights of 100 MB or more), with the floor of the time rows and, on a part other than
 * the H200, the bandwidth target scaled to its datasheet.
 *
 * --floor measures each row's read floor: the designs of bench/read_floor.cu, kernels that only
 * move the row's bytes (the weights, the activations, the bias, D; nothing computed, nothing
 * gated), loaded by name into a bench of their own with the baseline and the best own instance
 * and timed with them in --rounds interleaved rounds (the order rotating), same launches per
 * sample. The fastest design's median is the row's floor (the baseline's or the own instance's
 * where one of them moved the bytes faster than every design: such rows are listed): base / floor
 * bounds what any kernel reading the weights no faster than these streams can gain on the row,
 * and the summary prints the geomean of max(1, base / floor) (the measured ceiling of the tuned
 * geomean), own / floor, both per tokens value, and the floor's own rate on weights of 100 MB or
 * more against the bandwidth target.
 *
 * With --out (default $OUT when set) it writes kernels_bench.csv (one row per shape) and
 * kernels_bench_candidates.csv (every candidate that passed the gate, with its quick time and,
 * for the baseline and the finalists, its re-timed median); with --epilogue the baseline's
 * columns are named lt_* and the fused-cost columns are appended. */
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
#include "kernels/gt_kernel_name.h"
#include "providers/gt_provider.h"
#include "search/gt_search.h"
#include "read_floor.h"

typedef struct opts {
  const char *shapes, *out, *filter, *tokens, *layout;
  int rounds, finalists;
  gt_epilogue_t epilogue; /* --epilogue: GT_EPI_NONE races cublasGemmEx as before */
  bool fenced;            /* --fenced: gt_measure_opts_t.fenced */
  bool floor;             /* --floor: time the read-floor designs on every row */
  bool fp8;               /* --dtype names fp8 operands: keys are cublasLtMatmul fp8 calls */
  bool fast_accum;        /* --fast-accum: fp8 keys ask for fast accumulation (both sides) */
  gt_dtype_t a_type, b_type, d_type;
  gt_scale_mode_t scale_a, scale_b;
} opts_t;

/* Whether keys are raced as cublasLtMatmul calls (an epilogue, or fp8 operands). */
static bool lt_keys(const opts_t *o) { return o->epilogue != GT_EPI_NONE || o->fp8; }

/* The baseline's name in the table, the summary and the CSV header. */
static const char *base_label(const opts_t *o) { return lt_keys(o) ? "lt" : "cublas"; }

/* --dtype A[,B]: the operand types; fp8 when either is. */
static bool parse_dtypes(const char *v, opts_t *o) {
  char a[32], b[32] = "";
  if (sscanf(v, "%31[^,],%31s", a, b) < 1) return false;
  if (gt_dtype_parse(a, &o->a_type) != GT_OK) return false;
  o->b_type = o->a_type;
  if (b[0] && gt_dtype_parse(b, &o->b_type) != GT_OK) return false;
  o->fp8 = gt_dtype_is_fp8(o->a_type) || gt_dtype_is_fp8(o->b_type);
  return true;
}

/* --scale tensor|outer|block: how the fp8 operands are scaled (A = W, B = x). */
static bool parse_scale(const char *v, opts_t *o) {
  if (!strcmp(v, "tensor")) o->scale_a = o->scale_b = GT_SCALE_TENSOR;
  else if (!strcmp(v, "outer")) o->scale_a = o->scale_b = GT_SCALE_OUTER;
  else if (!strcmp(v, "block")) o->scale_a = GT_SCALE_BLK128X128, o->scale_b = GT_SCALE_BLK1X128;
  else return false;
  return true;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fprintf(f, "usage: kernels_bench [--shapes FILE] [--out DIR] [--rounds N] [--finalists N]"
             " [--filter TEXT] [--tokens 1,2,4] [--layout tn|nn|nt|tt]"
             " [--epilogue none|bias|relu|bias_relu|gelu|bias_gelu] [--fenced] [--floor]"
             " [--dtype A[,B]] [--scale tensor|outer|block] [--out-dtype T] [--fast-accum]\n");
}

static void help(void) {
  usage(stdout);
  printf("\nOwn kernels against the application's path on decode shapes, raced through the search\n"
         "driver on the CUDA harness (cold, CUDA-graph replays, interleaved re-timing).\n\n"
         "  --shapes FILE    shapes to race (default bench/decode_shapes.csv)\n"
         "  --out DIR        write kernels_bench.csv and kernels_bench_candidates.csv (default $OUT)\n"
         "  --rounds N       interleaved re-timing rounds (default 9)\n"
         "  --finalists N    own candidates re-timed against the baseline (default 4)\n"
         "  --filter TEXT    only shapes whose label contains TEXT\n"
         "  --tokens LIST    only these token counts\n"
         "  --layout L       re-lay every shape out as tn, nn, nt or tt\n"
         "  --epilogue E     give every key epilogue E and race it as a cublasLtMatmul call (the\n"
         "                   baseline is cublaslt_heuristic_ws1048576, the own candidates the\n"
         "                   epilogue twins), and time the fused epilogue's cost: the best twin\n"
         "                   against its plain instance on the same shape without it (none: the\n"
         "                   cublasGemmEx race, the default)\n"
         "  --dtype A[,B]    operand types (f8e4m3fn, f8e4m3fn,f8e5m2, f8e5m2,f8e4m3fn): fp8 keys\n"
         "                   race as cublasLtMatmul calls against the application's own Lt call\n"
         "  --scale S        fp8 scaling: tensor (default), outer (rowwise), block (128x128 W,\n"
         "                   1x128 x)\n"
         "  --out-dtype T    D's type for --dtype (default bf16)\n"
         "  --fast-accum     fp8 keys ask for fast accumulation (torch's use_fast_accum=True):\n"
         "                   the baseline's call sets CUBLASLT_MATMUL_DESC_FAST_ACCUM and the own\n"
         "                   kernels run without promotion. Default: cuBLASLt's and torch's full\n"
         "                   accumulation, which the own kernels match by promoting their sums\n"
         "                   every 128 elements of K (wgf8 tiles too wide to promote sit out)\n"
         "  --fenced         time every launch after a small plain kernel, as an application's\n"
         "                   norm or activation precedes its GEMM, so no launch overlaps the\n"
         "                   previous GEMM's tail (programmatic dependent launch); the separator's\n"
         "                   own time is subtracted\n"
         "  --floor          also time each row's read floor: kernels that only move its bytes\n"
         "                   (weights, activations, bias, D), with the baseline and the best own\n"
         "                   instance in interleaved rounds; the summary's measured ceiling is\n"
         "                   the geomean of max(1, baseline / floor)\n");
}

static bool tokens_selected(const char *list, int64_t n) {
  if (!list || !*list) return true;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ","))
    if (atoll(t) == n) return true;
  return false;
}

/* The cost of the fused epilogue on one shape (--epilogue): the best twin on the epilogue key and
 * its plain instance on the same key without the epilogue, timed in interleaved rounds. */
typedef struct fused_cost {
  bool ok;
  char plain[GT_NAME_MAX];
  gt_summary_t twin_t, plain_t;
} fused_cost_t;

/* --floor: the row's read floor and, timed with it in the same bench and rounds, the baseline
 * and the best own instance. */
typedef struct read_floor {
  bool ok;
  char name[GT_NAME_MAX]; /* the fastest design, or the baseline's or own instance's name when
                             that moved the bytes faster than every design */
  double floor_us, base_us, best_us; /* medians; best_us NaN without an own candidate */
  double design_us;                  /* the fastest design's median */
} read_floor_t;

/* The race of one shape, as the table and the CSV files report it. */
typedef struct shape_race {
  gt_search_result_t r;
  const gt_cand_result_t *base; /* cuBLAS, or with --epilogue the cublasLtMatmul call */
  const gt_cand_result_t *best; /* the fastest re-timed own candidate, NULL none */
  int own_raced;                /* own candidates that passed the gate and have a quick time */
  int own_gate_failed;          /* own candidates that failed to load, run or pass the gate
                                   before the race */
  fused_cost_t fused;           /* --epilogue only */
  read_floor_t floor;           /* --floor only */
} shape_race_t;

static bool passed_gate(const gt_cand_result_t *c) { return c->gated && c->gate.passed; }

static bool is_own(const gt_cand_result_t *c) {
  return c->cand.provider && strcmp(c->cand.provider->name, "kernels") == 0;
}

/* How many candidates besides its baseline call cuBLASLt lists for p (its heuristic's top
 * configurations): with --epilogue they race beside the own ones. */
static int lt_extra(const gt_problem_t *p) {
  const gt_provider_t *lt = gt_provider_find("cublaslt");
  if (!lt || gt_provider_ready(lt) != GT_OK) return 0;
  gt_cand_list_t l = {0};
  gt_enum_opts_t eo = {.entry = GT_ENTRY_LTMATMUL};
  int n = 0;
  if (lt->enumerate(p, &eo, &l) == GT_OK)
    for (size_t i = 0; i < l.n; i++) n += !l.v[i].excluded && !l.v[i].is_baseline;
  gt_cand_list_free(&l);
  gt_err_clear();
  return n;
}

/* Race p's candidates through the search driver. false (message printed) when the shape could
 * not be raced; sr->r is freed then. */
static bool race_shape(const gt_shape_t *sh, const gt_problem_t *p, const opts_t *o, size_t si,
                       shape_race_t *sr) {
  gt_search_opts_t so;
  gt_search_opts_init(&so, GT_BACKEND_CUDA);
  so.measure.seed = 1234567 + si;
  so.measure.fenced = o->fenced;
  so.providers = "cublas,kernels";
  so.rounds = o->rounds;
  so.finalists = o->finalists;
  if (lt_keys(o)) {
    /* The application's own cublasLtMatmul call (with the epilogue, or fp8) is the baseline
     * (cublaslt_heuristic_ws<1 MiB>, PyTorch's workspace when the shapes file does not say). */
    so.entry = GT_ENTRY_LTMATMUL;
    so.providers = "cublaslt,kernels";
    so.finalists = o->finalists + lt_extra(p);
  }
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
    if ((int)i == sr->r.baseline || c->disp == GT_DISP_EXCLUDED || !is_own(c)) continue;
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

/* ---- the cost of the fused epilogue (--epilogue) ---------------------------------------------- */

/* One side of the pair: a bench for problem p with the own instance `name` loaded and gated. */
typedef struct pair_side {
  struct gt_bench *b;
  struct gt_loaded *l;
} pair_side_t;

static bool side_open(const gt_harness_ops_t *h, const gt_provider_t *prov, const gt_problem_t *p,
                      const gt_measure_opts_t *mo, const char *name, pair_side_t *sd) {
  memset(sd, 0, sizeof *sd);
  gt_candidate_t c;
  gt_gate_t g;
  memset(&g, 0, sizeof g);
  if (h->open(p, mo, &sd->b) != GT_OK || prov->from_name(name, p, &c) != GT_OK ||
      h->load(sd->b, &c, &sd->l) != GT_OK || h->gate(sd->b, sd->l, &g) != GT_OK || !g.passed) {
    fprintf(stderr, "  fused cost: %s (epilogue %s): %s\n", name, gt_epilogue_name(p->epilogue),
            g.why[0] ? g.why : gt_err_msg());
    return false;
  }
  return true;
}

static void side_close(const gt_harness_ops_t *h, pair_side_t *sd) {
  if (sd->l) h->unload(sd->l);
  if (sd->b) h->close(sd->b);
}

/* Time the best twin on pe against its plain instance on pe without the epilogue: two benches
 * of this process (the same cold options and seed, each with its own rotating input sets), one
 * warm-up sample each, then o->rounds rounds of one sample each, the order alternating (twin
 * first in even rounds), every sample of the same launches (the twin's bench sizes them). */
static void time_fused_cost(const gt_problem_t *pe, const char *twin, const opts_t *o, size_t si,
                            fused_cost_t *out) {
  memset(out, 0, sizeof *out);
  const gt_harness_ops_t *h = gt_harness_for(GT_BACKEND_CUDA);
  const gt_provider_t *prov = gt_provider_find("kernels");
  const int ti = gt_kinstance_find(twin), pi = gt_kinstance_counterpart(ti);
  if (!h || !prov || pi < 0) return;
  snprintf(out->plain, sizeof out->plain, "%s", gt_kinstances[pi].name);
  gt_problem_t pn = *pe;
  pn.epilogue = GT_EPI_NONE;
  gt_measure_opts_t mo;
  gt_measure_opts_init(&mo);
  mo.seed = 7654321 + si;
  pair_side_t st = {0}, sp = {0};
  double *v = calloc(2 * (size_t)o->rounds, sizeof *v);
  const bool opened = v && side_open(h, prov, pe, &mo, twin, &st) &&
                      side_open(h, prov, &pn, &mo, out->plain, &sp);
  bool ok = opened;
  double us = 0;
  ok = ok && h->time(st.b, st.l, 0, &us) == GT_OK; /* sizes the launches */
  const int launches = ok ? h->launches(st.b) : 0;
  if (ok) h->set_launches(sp.b, launches);
  ok = ok && h->time(sp.b, sp.l, launches, &us) == GT_OK;
  for (int rd = 0; ok && rd < o->rounds; rd++)
    for (int j = 0; ok && j < 2; j++) {
      const bool tw = (j == 0) == (rd % 2 == 0);
      pair_side_t *sd = tw ? &st : &sp;
      ok = h->time(sd->b, sd->l, launches, &v[(tw ? 0 : o->rounds) + rd]) == GT_OK;
    }
  if (opened && !ok)
    fprintf(stderr, "  fused cost: %s vs %s: %s\n", twin, out->plain, gt_err_msg());
  if (ok) {
    gt_stats_summarise(v, (size_t)o->rounds, &out->twin_t);
    gt_stats_summarise(v + o->rounds, (size_t)o->rounds, &out->plain_t);
    out->ok = true;
  }
  side_close(h, &sp);
  side_close(h, &st);
  free(v);
}

/* ---- the read floor (--floor) ----------------------------------------------------------------- */

/* Time the read-floor designs on p with the race's baseline and best own instance in one bench
 * (its own rotating input sets, the race's cold options): a warm-up sample each (the baseline's
 * sizes the launches), then o->rounds rounds of one sample each, the order rotating by one every
 * round. The floor is the fastest design's median, or the baseline's or own instance's when
 * faster. A design or the own instance that fails to load or run is left out (its message
 * printed); the floor is not ok when the baseline or every design fails. */
static void time_floor(const gt_problem_t *p, const shape_race_t *sr, const opts_t *o, size_t si,
                       read_floor_t *out) {
  memset(out, 0, sizeof *out);
  out->floor_us = out->base_us = out->best_us = out->design_us = NAN;
  const gt_harness_ops_t *h = gt_harness_for(GT_BACKEND_CUDA);
  const int nd = gt_read_floor_count();
  enum { MAXC = 16 };
  if (!h || nd + 2 > MAXC) return;
  gt_measure_opts_t mo;
  gt_measure_opts_init(&mo);
  mo.seed = 2468013 + si;
  mo.fenced = o->fenced;
  struct gt_bench *b = NULL;
  struct gt_loaded *l[MAXC] = {0};
  const char *name[MAXC] = {0};
  double *v = calloc((size_t)MAXC * (size_t)o->rounds, sizeof *v);
  if (!v || h->open(p, &mo, &b) != GT_OK) {
    fprintf(stderr, "  floor: cannot open a bench: %s\n", gt_err_msg());
    free(v);
    return;
  }
  /* Slot 0 the baseline, 1 the best own instance (may stay empty), then the designs. */
  int nc = 0;
  const gt_candidate_t *fixed[2] = {&sr->base->cand, sr->best ? &sr->best->cand : NULL};
  for (int i = 0; i < 2; i++, nc++) {
    if (!fixed[i]) continue;
    name[nc] = fixed[i]->name;
    if (h->load(b, fixed[i], &l[nc]) != GT_OK) {
      fprintf(stderr, "  floor: %s: %s\n", fixed[i]->name, gt_err_msg());
      l[nc] = NULL;
    }
  }
  for (int d = 0; d < nd; d++, nc++) {
    gt_candidate_t c;
    name[nc] = gt_read_floor_name(d);
    if (gt_read_floor_provider.from_name(name[nc], p, &c) != GT_OK ||
        h->load(b, &c, &l[nc]) != GT_OK) {
      fprintf(stderr, "  floor: %s: %s\n", name[nc], gt_err_msg());
      l[nc] = NULL;
    }
  }
  double us = 0;
  bool ok = l[0] && h->time(b, l[0], 0, &us) == GT_OK; /* sizes the launches */
  if (l[0] && !ok) fprintf(stderr, "  floor: %s: %s\n", name[0], gt_err_msg());
  const int launches = ok ? h->launches(b) : 0;
  for (int i = 1; ok && i < nc; i++)
    if (l[i] && h->time(b, l[i], launches, &us) != GT_OK) {
      fprintf(stderr, "  floor: %s: %s\n", name[i], gt_err_msg());
      h->unload(l[i]);
      l[i] = NULL;
    }
  for (int rd = 0; ok && rd < o->rounds; rd++)
    for (int j = 0; ok && j < nc; j++) {
      const int i = (j + rd) % nc;
      if (!l[i]) continue;
      if (h->time(b, l[i], launches, &v[(size_t)i * o->rounds + rd]) != GT_OK) {
        fprintf(stderr, "  floor: %s: %s\n", name[i], gt_err_msg());
        ok = i != 0; /* a design or the own instance that fails is dropped; the baseline ends
                        the floor */
        h->unload(l[i]);
        l[i] = NULL;
      }
    }
  for (int i = 0; ok && i < nc; i++) {
    if (!l[i]) continue;
    gt_summary_t t;
    gt_stats_summarise(v + (size_t)i * o->rounds, (size_t)o->rounds, &t);
    if (i == 0) out->base_us = t.median;
    else if (i == 1) out->best_us = t.median;
    else if (!(t.median >= out->design_us)) {
      out->design_us = t.median;
      snprintf(out->name, sizeof out->name, "%s", name[i]);
    }
  }
  /* A GEMM that moves the bytes faster than every design proves the designs are not the floor:
   * the floor is then that GEMM's time (the row is counted in the summary). */
  out->floor_us = out->design_us;
  for (int i = 0; i < 2; i++) {
    const double t = i ? out->best_us : out->base_us;
    if (t > 0 && t < out->floor_us) {
      out->floor_us = t;
      snprintf(out->name, sizeof out->name, "%s", name[i]);
    }
  }
  out->ok = ok && out->base_us > 0 && out->design_us > 0;
  for (int i = 0; i < nc; i++)
    if (l[i]) h->unload(l[i]);
  h->close(b);
  free(v);
}

/* Geomeans and the issues' targets over the shapes raced so far. */
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
    double log_fceil, log_fown; /* --floor: base / floor clamped at 1, own / floor */
    int fn, fown_n;
  } by_tok[32];
  int n_tok;
  /* The issues' targets, H200 figures. bf16/f16: decode at 4096x4096 and 6144x4096 (tokens <=
   * 16) within 9 us, weights of 100 MB or more streamed at 4.3 TB/s or better. fp8 (A fp8): own
   * 1x4096x4096 within 6 us, fp8 weights of 100 MB or more at 4.2 TB/s or better. bw_met_dev
   * counts the bandwidth target scaled to this device's datasheet (the same fraction of it as of
   * the H200's 4800 GB/s), so a run on another part reads against its own memory. */
  bool f8;
  int t9_n, t9_met, bw_n, bw_met, bw_met_dev;
  double t9_worst, bw_lowest;
  char t9_where[96], bw_where[96];
  /* --epilogue: the fused epilogue's cost, geomean of twin / plain over the rows timed. */
  double log_fused;
  int fused_n;
  /* --floor: the measured ceiling (geomean of max(1, base / floor), both from the floor's
   * bench), own / floor, and the floor's own rate (the row's fewest bytes over its time) on
   * weights of 100 MB or more: how many reach the bandwidth target, the range, and the same at
   * tokens <= 8. */
  double log_fceil, log_fown;
  int f_n, fown_n, fbw_n, fbw_met, fbw_met_dev;
  int f_beaten;         /* rows where the baseline or the own instance beat every design */
  char f_beaten_where[256];
  double fbw_lo, fbw_hi, fbw8_lo, fbw8_hi;
} summary_t;

/* The targets of the run's element type (summary_t's comment), and the bandwidth target as the
 * same fraction of this device's datasheet as of the H200's. */
#define H200_GBPS 4800.0
static double t9_target(const summary_t *S) { return S->f8 ? 6.0 : 9.0; }
static double bw_target(const summary_t *S) { return S->f8 ? 4.2 : 4.3; }
static double bw_target_dev(const summary_t *S, const gt_device_info_t *dev) {
  return bw_target(S) * dev->peak_gbps / H200_GBPS;
}

/* The weight's own size, MB (its element type's bytes: 1 for fp8). */
static double weight_mb(const gt_problem_t *p) {
  return (double)p->m * p->k * (double)gt_dtype_size(p->a_type) / 1e6;
}

/* The row's slot in S->by_tok (added when new; -1 when the table is full). */
static int tok_slot(summary_t *S, long long tokens) {
  int ti = 0;
  while (ti < S->n_tok && S->by_tok[ti].tokens != tokens) ti++;
  if (ti == S->n_tok) {
    if (S->n_tok == (int)(sizeof S->by_tok / sizeof S->by_tok[0])) return -1;
    memset(&S->by_tok[S->n_tok++], 0, sizeof S->by_tok[0]);
    S->by_tok[ti].tokens = tokens;
  }
  return ti;
}

static void summary_add(summary_t *S, const gt_device_info_t *dev, const gt_shape_t *sh,
                        const gt_problem_t *p, double cu, double own_us) {
  const double ratio = cu / own_us, bytes = gt_problem_min_bytes(p);
  S->log_clamped += log(ratio > 1 ? ratio : 1);
  S->log_raw += log(ratio);
  S->counted++;
  const int ti = tok_slot(S, (long long)p->n);
  if (ti >= 0) {
    S->by_tok[ti].log_raw += log(ratio);
    S->by_tok[ti].log_clamped += log(ratio > 1 ? ratio : 1);
    S->by_tok[ti].n++;
  }
  S->f8 = gt_dtype_is_fp8(p->a_type);
  const double tbps = bytes / own_us / 1e6;
  const double floor_us = dev->peak_gbps > 0 ? bytes / (dev->peak_gbps * 1e3) : NAN;
  S->log_ceiling += log(cu / floor_us > 1 ? cu / floor_us : 1);
  const bool t9_row = S->f8 ? p->k == 4096 && p->m == 4096 && p->n == 1
                            : p->k == 4096 && (p->m == 4096 || p->m == 6144) && p->n <= 16;
  if (t9_row) {
    S->t9_n++;
    if (floor_us > S->t9_floor) S->t9_floor = floor_us;
    S->t9_met += own_us <= t9_target(S);
    if (own_us > S->t9_worst) {
      S->t9_worst = own_us;
      snprintf(S->t9_where, sizeof S->t9_where, "%s tokens=%lld", sh->label, (long long)p->n);
    }
  }
  if (weight_mb(p) >= 100) {
    S->bw_n++;
    S->bw_met += tbps >= bw_target(S);
    S->bw_met_dev += dev->peak_gbps > 0 && tbps >= bw_target_dev(S, dev);
    if (tbps < S->bw_lowest) {
      S->bw_lowest = tbps;
      snprintf(S->bw_where, sizeof S->bw_where, "%s tokens=%lld", sh->label, (long long)p->n);
    }
  }
}

/* --floor: one row's floor into the summary. */
static void summary_add_floor(summary_t *S, const gt_device_info_t *dev, const gt_problem_t *p,
                              const read_floor_t *f) {
  if (!f->ok) return;
  const double c = f->base_us / f->floor_us, own = f->best_us / f->floor_us;
  if (f->floor_us < f->design_us) {
    const size_t used = strlen(S->f_beaten_where);
    if (used + 40 < sizeof S->f_beaten_where)
      snprintf(S->f_beaten_where + used, sizeof S->f_beaten_where - used, "%s%lldx%lldx%lld %.3f",
               S->f_beaten ? ", " : "", (long long)p->n, (long long)p->m, (long long)p->k,
               f->floor_us / f->design_us);
    S->f_beaten++;
  }
  S->log_fceil += log(c > 1 ? c : 1);
  S->f_n++;
  if (own > 0) S->log_fown += log(own), S->fown_n++;
  const int ti = tok_slot(S, (long long)p->n);
  if (ti >= 0) {
    S->by_tok[ti].log_fceil += log(c > 1 ? c : 1);
    S->by_tok[ti].fn++;
    if (own > 0) S->by_tok[ti].log_fown += log(own), S->by_tok[ti].fown_n++;
  }
  if (weight_mb(p) < 100) return;
  const double tbps = gt_problem_min_bytes(p) / f->floor_us / 1e6;
  if (!S->fbw_n || tbps < S->fbw_lo) S->fbw_lo = tbps;
  if (!S->fbw_n || tbps > S->fbw_hi) S->fbw_hi = tbps;
  if (p->n <= 8) {
    if (!(S->fbw8_lo > 0) || tbps < S->fbw8_lo) S->fbw8_lo = tbps;
    if (tbps > S->fbw8_hi) S->fbw8_hi = tbps;
  }
  S->fbw_n++;
  S->fbw_met += tbps >= bw_target(S);
  S->fbw_met_dev += dev->peak_gbps > 0 && tbps >= bw_target_dev(S, dev);
}

static void summary_print(const summary_t *S, const gt_device_info_t *dev, const opts_t *o,
                          double wall_s) {
  const char *bl = base_label(o);
  printf("\n%d shapes in %.0f s\n", S->counted, wall_s);
  if (S->counted) {
    printf("geomean of max(1, %s/own) (tuned dispatch): %.3f\n", bl,
           exp(S->log_clamped / S->counted));
    printf("geomean of %s/own (best own alone):          %.3f\n", bl,
           exp(S->log_raw / S->counted));
    if (dev->peak_gbps > 0)
      printf("ceiling: geomean of max(1, %s/floor), floor = bytes at %.0f GB/s with no "
             "launch or tail: %.3f\n", bl, dev->peak_gbps, exp(S->log_ceiling / S->counted));
    for (int ti = 0; ti < S->n_tok; ti++)
      if (S->by_tok[ti].n)
        printf("tokens %4lld: geomean %s/own %.3f, tuned %.3f (%d rows)\n", S->by_tok[ti].tokens,
             bl, exp(S->by_tok[ti].log_raw / S->by_tok[ti].n),
             exp(S->by_tok[ti].log_clamped / S->by_tok[ti].n), S->by_tok[ti].n);
  }
  if (o->epilogue != GT_EPI_NONE)
    printf("fused %s epilogue: geomean of twin/plain (best twin against its plain instance "
           "without the epilogue, interleaved): %.3f (%d rows)\n",
           gt_epilogue_name(o->epilogue), S->fused_n ? exp(S->log_fused / S->fused_n) : NAN,
           S->fused_n);
  if (S->t9_n)
    printf("target own <= %.0f us at %s: %d of %d met (worst %.2f us, %s; the largest of these "
           "rows' floors: %.2f us)\n", t9_target(S),
           S->f8 ? "1x4096x4096" : "4096x4096/6144x4096, tokens <= 16", S->t9_met, S->t9_n,
           S->t9_worst, S->t9_where, S->t9_floor);
  if (S->f_n) {
    printf("measured floor (the fastest of %d read-only designs moving each row's bytes, timed "
           "with the baseline and the best own instance in interleaved rounds):\n",
           gt_read_floor_count());
    printf("  measured ceiling: geomean of max(1, %s/floor): %.3f (%d rows); own/floor: %.3f\n",
           bl, exp(S->log_fceil / S->f_n), S->f_n,
           S->fown_n ? exp(S->log_fown / S->fown_n) : NAN);
    printf("  rows where %s or own moved the bytes faster than every design (their time is the "
           "floor there): %d%s%s\n", bl, S->f_beaten, S->f_beaten ? " (tokens x out x in, "
           "time / fastest design): " : "", S->f_beaten_where);
    for (int ti = 0; ti < S->n_tok; ti++)
      if (S->by_tok[ti].fn)
        printf("  tokens %4lld: ceiling %.3f, own/floor %.3f (%d rows)\n", S->by_tok[ti].tokens,
               exp(S->by_tok[ti].log_fceil / S->by_tok[ti].fn),
               S->by_tok[ti].fown_n ? exp(S->by_tok[ti].log_fown / S->by_tok[ti].fown_n) : NAN,
               S->by_tok[ti].fn);
    if (S->fbw_n)
      printf("  the floor itself on %sweights >= 100 MB: %.2f-%.2f TB/s, %d of %d rows at the "
             "%.1f TB/s target%s", S->f8 ? "fp8 " : "", S->fbw_lo, S->fbw_hi, S->fbw_met,
             S->fbw_n, bw_target(S), S->fbw8_hi > 0 ? "" : "\n");
    if (S->fbw_n && S->fbw8_hi > 0)
      printf("; at tokens <= 8: %.2f-%.2f TB/s\n", S->fbw8_lo, S->fbw8_hi);
    if (S->fbw_n && dev->peak_gbps > 0 && fabs(dev->peak_gbps - H200_GBPS) > 1.0)
      printf("  the same fraction of this device's %.0f GB/s: >= %.2f TB/s, %d of %d rows\n",
             dev->peak_gbps, bw_target_dev(S, dev), S->fbw_met_dev, S->fbw_n);
  }
  if (S->bw_n) {
    printf("target >= %.1f TB/s on %sweights >= 100 MB: %d of %d met (lowest %.2f TB/s, %s)\n",
           bw_target(S), S->f8 ? "fp8 " : "", S->bw_met, S->bw_n, S->bw_lowest, S->bw_where);
    if (dev->peak_gbps > 0 && fabs(dev->peak_gbps - H200_GBPS) > 1.0)
      printf("  the same fraction of this device's %.0f GB/s (%.1f of the H200's %.0f): >= %.2f "
             "TB/s, %d of %d met\n", dev->peak_gbps, bw_target(S), H200_GBPS,
             bw_target_dev(S, dev), S->bw_met_dev, S->bw_n);
  }
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
    else if (!strcmp(a, "--fenced")) o->fenced = true;
    else if (!strcmp(a, "--floor")) o->floor = true;
    else if (!strcmp(a, "--epilogue") && v) {
      if (gt_epilogue_parse(v, &o->epilogue) != GT_OK) {
        fprintf(stderr, "kernels_bench: --epilogue '%s': expected none, bias, relu, bias_relu, "
                        "gelu or bias_gelu\n", v);
        return false;
      }
      i++;
    } else if (!strcmp(a, "--dtype") && v) {
      if (!parse_dtypes(v, o)) {
        fprintf(stderr, "kernels_bench: --dtype '%s': expected a type or two (f8e4m3fn, "
                        "f8e4m3fn,f8e5m2, bf16, ...)\n", v);
        return false;
      }
      i++;
    } else if (!strcmp(a, "--scale") && v) {
      if (!parse_scale(v, o)) {
        fprintf(stderr, "kernels_bench: --scale '%s': expected tensor, outer or block\n", v);
        return false;
      }
      i++;
    } else if (!strcmp(a, "--fast-accum")) {
      o->fast_accum = true;
    } else if (!strcmp(a, "--out-dtype") && v) {
      if (gt_dtype_parse(v, &o->d_type) != GT_OK) {
        fprintf(stderr, "kernels_bench: --out-dtype '%s': %s\n", v, gt_err_msg());
        return false;
      }
      i++;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      help();
      exit(0);
    } else {
      usage(stderr);
      return false;
    }
  }
  if (o->rounds < 1 || o->finalists < 1) {
    usage(stderr);
    return false;
  }
  if (o->fast_accum && !o->fp8) {
    fprintf(stderr, "kernels_bench: --fast-accum: only fp8 keys have it (give --dtype f8e4m3fn)\n");
    return false;
  }
  return true;
}

/* Open kernels_bench.csv and kernels_bench_candidates.csv under dir, headers written. */
static bool open_csvs(const char *dir, const opts_t *o, FILE **csv, FILE **ccsv) {
  char path[1024];
  snprintf(path, sizeof path, "%s/kernels_bench.csv", dir);
  *csv = fopen(path, "w");
  snprintf(path, sizeof path, "%s/kernels_bench_candidates.csv", dir);
  *ccsv = fopen(path, "w");
  if (!*csv || !*ccsv) {
    fprintf(stderr, "kernels_bench: cannot write under %s\n", dir);
    return false;
  }
  const char *bl = base_label(o);
  fprintf(*csv, "label,tokens,out,in,weight_mb,%s_us,%s_spread,best_us,best_spread,"
                "best_name,ratio,best_gbps,%s_gbps,own_raced,own_gate_failed%s%s%s\n", bl, bl, bl,
          o->epilogue != GT_EPI_NONE
              ? ",epilogue,twin_pair_us,twin_pair_spread,plain_pair_us,plain_pair_spread,"
                "plain_name,fused_cost"
              : "",
          o->floor ? ",floor_us,floor_name,floor_base_us,floor_best_us,floor_gbps,"
                     "floor_design_us" : "",
          o->fp8 ? ",fast_accum" : "");
  fprintf(*ccsv, "label,tokens,out,in,name,quick_us,median_us,spread,rounds\n");
  return true;
}

/* --epilogue: the fused epilogue's cost, twin / plain (NaN when it was not timed). */
static double fused_ratio(const fused_cost_t *f) {
  return f->ok ? f->twin_t.median / f->plain_t.median : NAN;
}

/* --epilogue: the fused cost's columns of the table line, before the instance name. */
static void print_fused(const fused_cost_t *f) {
  printf(" %9.2f %9.2f %6.3f |", f->ok ? f->twin_t.median : NAN, f->ok ? f->plain_t.median : NAN,
         fused_ratio(f));
}

/* --epilogue: the fused cost's columns of the CSV row. */
static void csv_fused(FILE *csv, const fused_cost_t *f, gt_epilogue_t e) {
  fprintf(csv, ",%s,%.3f,%.4f,%.3f,%.4f,%s,%.4f", gt_epilogue_name(e),
          f->ok ? f->twin_t.median : NAN, f->ok ? f->twin_t.rel_spread : NAN,
          f->ok ? f->plain_t.median : NAN, f->ok ? f->plain_t.rel_spread : NAN, f->plain,
          fused_ratio(f));
}

/* The table line, the summary and the CSV row of one raced shape. */
static void report_shape(const shape_race_t *sr, const gt_shape_t *sh, const gt_problem_t *p,
                         const gt_device_info_t *dev, const opts_t *o, summary_t *S, FILE *csv,
                         FILE *ccsv) {
  const gt_cand_result_t *best = sr->best;
  const double bytes = gt_problem_min_bytes(p);
  const double cu = sr->base->time.median;
  const double own_us = best ? best->time.median : NAN;
  const double ratio = best ? cu / own_us : NAN;
  printf("%-22s %6lld %6lld %6lld | %9.2f %9.2f %6.2f %8.0f |", sh->label,
         (long long)p->n, (long long)p->m, (long long)p->k, cu, own_us, ratio,
         best ? bytes / own_us / 1e3 : NAN);
  const bool epi = o->epilogue != GT_EPI_NONE;
  if (epi) print_fused(&sr->fused);
  printf(" %s\n", best ? best->cand.name : "(no own candidate)");
  fflush(stdout);
  if (best) summary_add(S, dev, sh, p, cu, own_us);
  if (epi && sr->fused.ok) S->log_fused += log(fused_ratio(&sr->fused)), S->fused_n++;
  const read_floor_t *f = &sr->floor;
  if (o->floor && f->ok) {
    printf("%-22s floor %.2f us (%s, %.0f GB/s): %s %.2f us, %s/floor %.3f; own %.2f us, "
           "own/floor %.3f\n", "", f->floor_us, f->name, bytes / f->floor_us / 1e3,
           base_label(o), f->base_us, base_label(o), f->base_us / f->floor_us, f->best_us,
           f->best_us / f->floor_us);
    summary_add_floor(S, dev, p, f);
  }
  if (!csv) return;
  fprintf(csv, "%s,%lld,%lld,%lld,%.1f,%.3f,%.4f,%.3f,%.4f,%s,%.4f,%.0f,%.0f,%d,%d", sh->label,
          (long long)p->n, (long long)p->m, (long long)p->k,
          weight_mb(p), cu,
          sr->base->time.rel_spread, own_us, best ? best->time.rel_spread : NAN,
          best ? best->cand.name : "", ratio, best ? bytes / own_us / 1e3 : NAN, bytes / cu / 1e3,
          sr->own_raced, sr->own_gate_failed);
  if (epi) csv_fused(csv, &sr->fused, o->epilogue);
  if (o->floor)
    fprintf(csv, ",%.3f,%s,%.3f,%.3f,%.0f,%.3f", f->ok ? f->floor_us : NAN,
            f->ok ? f->name : "", f->ok ? f->base_us : NAN, f->ok ? f->best_us : NAN,
            f->ok ? bytes / f->floor_us / 1e3 : NAN, f->ok ? f->design_us : NAN);
  if (o->fp8) fprintf(csv, ",%d", p->fast_accum ? 1 : 0);
  fputc('\n', csv);
  write_candidates(ccsv, sh, p, sr);
  fflush(csv);
  fflush(ccsv);
}

/* The device, layout and method lines and the table's header. */
static void print_header(const gt_device_info_t *dev, const opts_t *o) {
  printf("device: %s (%s, %d SMs, L2 %.0f MB, %.0f GB/s datasheet)\n", dev->name, dev->arch,
         dev->sm_count, dev->cache_bytes / 1e6, dev->peak_gbps);
  printf("layout: %s\n", o->layout ? o->layout : "as in the shapes file (tn: nn.Linear)");
  if (o->fp8)
    printf("dtype: %s x %s -> %s, scales %s / %s, %s, raced as cublasLtMatmul fp8 calls: lt = "
           "the application's own call (cublaslt_heuristic_ws1048576)\n",
           gt_dtype_name(o->a_type), gt_dtype_name(o->b_type), gt_dtype_name(o->d_type),
           gt_scale_mode_name(o->scale_a), gt_scale_mode_name(o->scale_b),
           o->fast_accum ? "fast accumulation" : "full accumulation (own kernels promote)");
  if (o->epilogue == GT_EPI_NONE) {
    printf("method: cold (rotated >= 3x L2), CUDA-graph replays, quick race then %d interleaved "
           "rounds of cublas + %d finalists, medians\n\n",
           o->rounds, o->finalists);
    printf("%-22s %6s %6s %6s | %9s %9s %6s %8s | %s\n", "shape", "tokens", "out", "in",
           o->fp8 ? "lt_us" : "cublas_us", "own_us", "ratio", "own_GB/s", "best own instance");
    return;
  }
  const char *e = gt_epilogue_name(o->epilogue);
  printf("epilogue: %s in every key, raced as cublasLtMatmul calls: lt = the application's own "
         "call (cublaslt_heuristic_ws1048576), own = the epilogue twins\n", e);
  printf("method: cold (rotated >= 3x L2), CUDA-graph replays, quick race then %d interleaved "
         "rounds of lt + cuBLASLt's heuristic configurations + %d own finalists, medians\n",
         o->rounds, o->finalists);
  printf("fused cost: the best twin (key with %s) and its plain instance (same key, no "
         "epilogue), two benches of this process, %d interleaved rounds, medians: twin/plain\n\n",
         e, o->rounds);
  printf("%-22s %6s %6s %6s | %9s %9s %6s %8s | %9s %9s %6s | %s\n", "shape", "tokens", "out",
         "in", "lt_us", "own_us", "ratio", "own_GB/s", "twin_us", "plain_us", "cost",
         "best own instance (twin)");
}

int main(int argc, char **argv) {
  opts_t o = {.shapes = "bench/decode_shapes.csv", .out = getenv("OUT"), .rounds = 9,
              .finalists = 4, .a_type = GT_DT_BF16, .b_type = GT_DT_BF16, .d_type = GT_DT_BF16,
              .scale_a = GT_SCALE_TENSOR, .scale_b = GT_SCALE_TENSOR};
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
  if (o.out && *o.out && !open_csvs(o.out, &o, &csv, &ccsv)) return 1;
  print_header(&dev, &o);
  summary_t S;
  memset(&S, 0, sizeof S);
  S.bw_lowest = INFINITY;
  const double t_start = now_s();
  for (size_t si = 0; si < shapes.n; si++) {
    const gt_shape_t *sh = &shapes.v[si];
    if (sh->not_tunable[0]) continue; /* a captured GEMM no candidate may serve */
    gt_problem_t pl = sh->p;
    if (o.layout) {
      pl.transa = lay_a;
      pl.transb = lay_b;
      pl.lda = pl.ldb = pl.ldc = 0;
      gt_problem_fill_lds(&pl);
    }
    if (o.epilogue != GT_EPI_NONE) pl.epilogue = o.epilogue;
    if (o.fp8 || o.a_type != GT_DT_BF16) {
      pl.a_type = o.a_type, pl.b_type = o.b_type;
      pl.c_type = pl.d_type = o.d_type;
      if (o.fp8) {
        pl.scale_a = gt_dtype_is_fp8(o.a_type) ? o.scale_a : GT_SCALE_NONE;
        pl.scale_b = gt_dtype_is_fp8(o.b_type) ? o.scale_b : GT_SCALE_NONE;
        pl.fast_accum = o.fast_accum;
      }
    }
    if (o.filter && !strstr(sh->label, o.filter)) continue;
    if (!tokens_selected(o.tokens, pl.n)) continue;
    shape_race_t sr;
    if (!race_shape(sh, &pl, &o, si, &sr)) continue;
    if (o.epilogue != GT_EPI_NONE && sr.best)
      time_fused_cost(&pl, sr.best->cand.name, &o, si, &sr.fused);
    if (o.floor) time_floor(&pl, &sr, &o, si, &sr.floor);
    report_shape(&sr, sh, &pl, &dev, &o, &S, csv, ccsv);
    gt_search_result_free(&sr.r);
  }
  summary_print(&S, &dev, &o, now_s() - t_start);
  if (csv) fclose(csv);
  if (ccsv) fclose(ccsv);
  gt_shapes_free(&shapes);
  return 0;
}
