/* The report page (gt_report.h): one HTML file whose pictures are inline SVG, styled by inline
 * CSS, with no script and nothing to fetch, so it opens the same from a mail attachment, a CI
 * artifact or a laptop without a network. Every chart is drawn from numbers the page also prints
 * in a table, so nothing is only in a picture. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_problem.h"
#include "gt_report.h"

/* ---- text ------------------------------------------------------------------------------------- */

static void esc(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '&': fputs("&amp;", f); break;
      case '"': fputs("&quot;", f); break;
      default: fputc(*s, f);
    }
  }
}

/* 1.2 T, 340 G, 5.6 M: a rate or a count with an SI prefix. */
static void si(char *b, size_t n, double v) {
  static const char *const pre[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (fabs(v) >= 1000 && i < 6) v /= 1000, i++;
  snprintf(b, n, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, pre[i]);
}

static const char k_css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;"
    "max-width:1000px;color:#1d2330;background:#fff;padding:0 16px}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px "
    "solid #d7dce4;padding-bottom:4px}p.meta{color:#56607a;margin:0 0 12px}"
    "table{border-collapse:collapse;font-size:12.5px;margin:8px 0}"
    "th,td{border:1px solid #d7dce4;padding:3px 7px;text-align:left;vertical-align:top}"
    "th{background:#f1f3f7}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    ".v{font-weight:600;white-space:nowrap}.ok{color:#1b7a32}.warn{color:#b06500}"
    ".bad{color:#b3261e}.dim{color:#6b7388}code{font-size:12px;word-break:break-all}"
    "svg{display:block;margin:6px 0;background:#fbfcfe;border:1px solid #e3e7ee}"
    ".note{color:#56607a;font-size:12.5px}";

/* ---- axes ------------------------------------------------------------------------------------- */

typedef struct plot {
  double x0, x1, y0, y1;       /* data range (log10 when log) */
  bool logx, logy;
  int w, h, l, r, t, b;        /* canvas and margins, px */
} plot_t;

static double px(const plot_t *p, double x) {
  double v = p->logx ? log10(x) : x;
  return p->l + (v - p->x0) / (p->x1 - p->x0) * (p->w - p->l - p->r);
}

static double py(const plot_t *p, double y) {
  double v = p->logy ? log10(y) : y;
  return p->h - p->b - (v - p->y0) / (p->y1 - p->y0) * (p->h - p->t - p->b);
}

/* Decade grid lines and labels of a log-log plot. */
static void log_axes(FILE *f, const plot_t *p, const char *xunit, const char *yunit) {
  char lab[32];
  for (int e = (int)ceil(p->x0); e <= (int)floor(p->x1); e++) {
    double x = px(p, pow(10, e));
    si(lab, sizeof lab, pow(10, e));
    fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#e1e5ec'/>"
               "<text x='%.1f' y='%d' font-size='11' text-anchor='middle' fill='#56607a'>%s</text>",
            x, p->t, x, p->h - p->b, x, p->h - p->b + 15, lab);
  }
  for (int e = (int)ceil(p->y0); e <= (int)floor(p->y1); e++) {
    double y = py(p, pow(10, e));
    si(lab, sizeof lab, pow(10, e));
    fprintf(f, "<line x1='%d' y1='%.1f' x2='%d' y2='%.1f' stroke='#e1e5ec'/>"
               "<text x='%d' y='%.1f' font-size='11' text-anchor='end' fill='#56607a'>%s</text>",
            p->l, y, p->w - p->r, y, p->l - 5, y + 4, lab);
  }
  fprintf(f, "<text x='%d' y='%d' font-size='12' text-anchor='middle' fill='#1d2330'>%s</text>"
             "<text x='14' y='%d' font-size='12' text-anchor='middle' fill='#1d2330' "
             "transform='rotate(-90 14 %d)'>%s</text>",
          (p->l + p->w - p->r) / 2, p->h - 12, xunit, (p->t + p->h - p->b) / 2,
          (p->t + p->h - p->b) / 2, yunit);
}

/* A round tick step (1, 2 or 5 times a power of ten) giving about `want` ticks over span. */
static double nice_step(double span, int want) {
  double raw = span / want, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* Vertical grid lines with "1.5x" labels along a linear axis. */
static void gain_ticks(FILE *f, const plot_t *p) {
  double step = nice_step(p->x1 - p->x0, 8);
  for (double t = ceil(p->x0 / step) * step; t <= p->x1 + 1e-9; t += step)
    fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#e1e5ec'/><text x='%.1f' "
               "y='%d' font-size='11' text-anchor='middle' fill='#56607a'>%.4gx</text>",
            px(p, t), p->t, px(p, t), p->h - p->b, px(p, t), p->h - p->b + 15, t);
}

/* ---- roofline --------------------------------------------------------------------------------- */

/* The plot's range: every point of the dtype and the ridge, with a margin. */
static void roof_range(const gt_report_t *r, const gt_report_roof_t *roof, plot_t *p) {
  double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
  for (size_t i = 0; i < r->n; i++) {
    const gt_report_key_t *k = &r->keys[i];
    if (strcmp(k->dtype, roof->dtype)) continue;
    double ai = k->flops / k->bytes;
    double fb = k->flops / (k->base_us * 1e-6), ft = k->flops / (k->tuned_us * 1e-6);
    xmin = fmin(xmin, ai), xmax = fmax(xmax, ai);
    ymin = fmin(ymin, fmin(fb, ft)), ymax = fmax(ymax, fmax(fb, ft));
  }
  if (roof->peak_flops > 0 && roof->bw > 0) {
    double ridge = roof->peak_flops / roof->bw;
    xmin = fmin(xmin, ridge / 4), xmax = fmax(xmax, ridge * 4), ymax = fmax(ymax, roof->peak_flops);
  }
  *p = (plot_t){floor(log10(xmin / 2)), ceil(log10(xmax * 2)), floor(log10(ymin / 2)),
                ceil(log10(ymax * 1.5)), true, true, 760, 400, 64, 16, 16, 44};
}

static void roofline_svg(FILE *f, const gt_report_t *r, const gt_report_roof_t *roof) {
  plot_t p;
  roof_range(r, roof, &p);
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' role='img' "
             "aria-label='roofline %s'>", p.w, p.h, roof->dtype);
  log_axes(f, &p, "arithmetic intensity (FLOP per byte moved, at least)", "FLOP/s");
  if (roof->peak_flops > 0 && roof->bw > 0) {
    double ridge = roof->peak_flops / roof->bw, xa = pow(10, p.x0), xb = pow(10, p.x1);
    double ya = fmax(xa * roof->bw, pow(10, p.y0));
    fprintf(f, "<polyline fill='none' stroke='#c0392b' stroke-width='2' "
               "points='%.1f,%.1f %.1f,%.1f %.1f,%.1f'/>",
            px(&p, ya / roof->bw), py(&p, ya), px(&p, ridge), py(&p, roof->peak_flops), px(&p, xb),
            py(&p, roof->peak_flops));
    char a[32], b[32];
    si(a, sizeof a, roof->peak_flops);
    si(b, sizeof b, roof->bw);
    fprintf(f, "<text x='%.1f' y='%.1f' font-size='11' fill='#c0392b' text-anchor='end'>"
               "compute roof %sFLOP/s, memory roof %sB/s</text>",
            px(&p, xb) - 4, py(&p, roof->peak_flops) - 6, a, b);
  }
  for (size_t i = 0; i < r->n; i++) {
    const gt_report_key_t *k = &r->keys[i];
    if (strcmp(k->dtype, roof->dtype)) continue;
    double x = px(&p, k->flops / k->bytes);
    double yb = py(&p, k->flops / (k->base_us * 1e-6)), yt = py(&p, k->flops / (k->tuned_us * 1e-6));
    fprintf(f, "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#7d8aa5' stroke-width='1.2'/>"
               "<circle cx='%.1f' cy='%.1f' r='4' fill='#fff' stroke='#7d8aa5' stroke-width='1.5'>"
               "<title>#%zu baseline</title></circle>"
               "<circle cx='%.1f' cy='%.1f' r='4.5' fill='#1f6feb'><title>#%zu tuned</title></circle>"
               "<text x='%.1f' y='%.1f' font-size='10.5' fill='#1d2330'>%zu</text>",
            x, yb, x, yt, x, yb, i + 1, x, yt, i + 1, x + 6, yt - 5, i + 1);
  }
  fprintf(f, "<g font-size='11' fill='#1d2330'><circle cx='%d' cy='%d' r='4' fill='#fff' "
             "stroke='#7d8aa5' stroke-width='1.5'/><text x='%d' y='%d'>baseline</text>"
             "<circle cx='%d' cy='%d' r='4.5' fill='#1f6feb'/><text x='%d' y='%d'>tuned</text></g>",
          p.l + 14, p.t + 12, p.l + 22, p.t + 16, p.l + 90, p.t + 12, p.l + 98, p.t + 16);
  fputs("</svg>\n", f);
}

static void roofline_section(FILE *f, const gt_report_t *r) {
  fputs("<h2>Roofline</h2>\n<p class='note'>Each tuned key twice: its baseline (hollow) and its "
        "tuned choice (filled), at its arithmetic intensity, under the device's compute and "
        "memory roofs. A point near a roof has little left to gain.</p>\n", f);
  for (size_t i = 0; i < r->nroofs; i++) {
    fprintf(f, "<h3>");
    esc(f, r->roofs[i].dtype);
    fprintf(f, "</h3>\n");
    roofline_svg(f, r, &r->roofs[i]);
  }
  fprintf(f, "<p class='note'>Roofs: ");
  esc(f, r->roof_source);
  fputs(".</p>\n", f);
}

/* ---- speedups --------------------------------------------------------------------------------- */

static void speedup_svg(FILE *f, const gt_report_t *r) {
  double xmax = 1.1;
  for (size_t i = 0; i < r->n; i++)
    xmax = fmax(xmax, r->keys[i].speedup * (1 + r->keys[i].spread_pct / 100) * 1.08);
  int row = 22, h = 30 + (int)r->n * row + 26;
  plot_t p = {0, xmax, 0, 1, false, false, 760, h, 280, 70, 20, 26};
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' role='img' "
             "aria-label='speedup per key'>", p.w, p.h);
  gain_ticks(f, &p);
  for (size_t i = 0; i < r->n; i++) {
    const gt_report_key_t *k = &r->keys[i];
    double y = p.t + (double)i * row, sp = k->speedup, d = sp * k->spread_pct / 100;
    const char *col = sp >= 1.03 ? "#2e8b57" : "#9aa3b5";
    fprintf(f, "<text x='%d' y='%.1f' font-size='11.5' text-anchor='end' fill='#1d2330'>#%zu ",
            p.l - 6, y + 14, i + 1);
    esc(f, k->label[0] ? k->label : k->shape);
    fprintf(f, "</text><rect x='%.1f' y='%.1f' width='%.1f' height='14' fill='%s'><title>%.3fx "
               "(spread %.1f%%)</title></rect>"
               "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' stroke='#1d2330'/>"
               "<text x='%.1f' y='%.1f' font-size='11' fill='#1d2330'>%.3fx &#177;%.1f%%</text>",
            px(&p, 0), y + 3, px(&p, sp) - px(&p, 0), col, sp, k->spread_pct, px(&p, sp - d),
            y + 10, px(&p, sp + d), y + 10, px(&p, sp + d) + 5, y + 14, sp, k->spread_pct);
  }
  fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#c0392b' stroke-dasharray='4 3'/>"
             "</svg>\n", px(&p, 1), p.t - 4, px(&p, 1), h - p.b);
}

static void keys_table(FILE *f, const gt_report_t *r) {
  fputs("<table><tr><th>#</th><th>key</th><th>type</th><th>baseline us</th><th>tuned us</th>"
        "<th>speedup</th><th>spread</th><th>FLOP/B</th><th>share</th><th>winner</th></tr>\n", f);
  for (size_t i = 0; i < r->n; i++) {
    const gt_report_key_t *k = &r->keys[i];
    fprintf(f, "<tr><td class='n'>%zu</td><td>", i + 1);
    if (k->label[0]) esc(f, k->label), fputs("<br>", f);
    fputs("<code>", f);
    esc(f, k->shape);
    fputs("</code></td><td>", f);
    esc(f, k->dtype);
    fprintf(f, "</td><td class='n'>%.3f</td><td class='n'>%.3f</td><td class='n'>%.3fx</td>"
               "<td class='n'>%.1f%%</td><td class='n'>%.1f</td><td class='n'>",
            k->base_us, k->tuned_us, k->speedup, k->spread_pct, k->flops / k->bytes);
    if (k->share >= 0) fprintf(f, "%.1f%%", 100 * k->share);
    else fputs("-", f);
    fputs("</td><td><code>", f);
    esc(f, k->provider);
    fputs("/", f);
    esc(f, k->instance);
    fputs("</code></td></tr>\n", f);
  }
  fputs("</table>\n", f);
}

static void speedup_section(FILE *f, const gt_report_t *r) {
  fputs("<h2>Speedup per key</h2>\n<p class='note'>The tuned choice's median against the "
        "baseline's, as <code>tune</code> measured them (cold, interleaved rounds); the whisker is "
        "the winner's round-to-round spread. The dashed line is the baseline.</p>\n", f);
  if (r->n) speedup_svg(f, r);
  keys_table(f, r);
}

/* ---- engagement and end to end ----------------------------------------------------------------- */

static const char *verdict_class(const char *v) {
  if (!strcmp(v, "engaged")) return "ok";
  if (!strcmp(v, "partly") || !strcmp(v, "unverified")) return "warn";
  if (!strcmp(v, "not engaged") || !strcmp(v, "near miss")) return "bad";
  return "dim";
}

/* A key as the tables show it: "TN m=4096 n=16 k=4096 bf16", the full text as its tooltip. */
static void short_key(FILE *f, const char *text) {
  gt_problem_t k;
  gt_problem_init(&k);
  if (gt_problem_parse_key(text, &k) != GT_OK) {
    esc(f, text);
    return;
  }
  fputs("<span title='", f);
  esc(f, text);
  fprintf(f, "'>%s m=%lld n=%lld k=%lld %s%s%s</span>", gt_problem_ops(&k), (long long)k.m,
          (long long)k.n, (long long)k.k, gt_dtype_name(k.a_type),
          k.epilogue != GT_EPI_NONE ? " " : "", k.epilogue != GT_EPI_NONE ? gt_epilogue_name(k.epilogue) : "");
  if (k.sm_count) fprintf(f, " (%s, %d)", k.arch, k.sm_count);
}

static void engagement_section(FILE *f, const gt_report_t *r) {
  fputs("<h2>Engagement</h2>\n", f);
  const gt_json_t *items = gt_json_get(r->verify, "items");
  if (!r->verify || !items || items->type != GT_JSON_ARR) {
    fputs("<p class='note'>No verify record: <code>gemmtune verify --db DB --json verify.json -- "
          "CMD</code>, then <code>--verify verify.json</code>, shows which tuned keys the "
          "workload ran and whether their kernels are in the trace.</p>\n", f);
    return;
  }
  fputs("<p class='note'>From <code>", f);
  esc(f, r->verify_path);
  fputs("</code>: per key the workload issued, the calls the shim served from the DB and the "
        "launches of the row's kernels in the CUPTI trace.</p>\n<p><b>", f);
  esc(f, gt_json_str(gt_json_get(r->verify, "summary")));
  fputs("</b></p>\n<table><tr><th>verdict</th><th>calls</th><th>hits</th><th>kernel runs</th>"
        "<th>key</th><th>row</th><th>why</th></tr>\n", f);
  for (size_t i = 0; i < items->n; i++) {
    const gt_json_t *it = &items->items[i];
    const char *v = gt_json_str(gt_json_get(it, "verdict"));
    fprintf(f, "<tr><td class='v %s'>", verdict_class(v));
    esc(f, v);
    fprintf(f, "</td><td class='n'>%.0f</td><td class='n'>%.0f</td><td class='n'>%.0f</td><td>"
               "<code>", gt_json_num(gt_json_get(it, "calls"), 0),
            gt_json_num(gt_json_get(it, "hits"), 0), gt_json_num(gt_json_get(it, "kernel_runs"), 0));
    short_key(f, gt_json_str(gt_json_get(it, "key")));
    fputs("</code></td><td><code>", f);
    esc(f, gt_json_str(gt_json_get(it, "provider")));
    if (*gt_json_str(gt_json_get(it, "instance"))) fputs("/", f);
    esc(f, gt_json_str(gt_json_get(it, "instance")));
    fputs("</code></td><td>", f);
    esc(f, gt_json_str(gt_json_get(it, "why")));
    fputs("</td></tr>\n", f);
  }
  fputs("</table>\n", f);
}

/* One horizontal bar from 1.0x, with an optional interval. */
static void gain_bar(FILE *f, const plot_t *p, int y, const char *name, double v, double lo,
                     double hi, const char *col) {
  fprintf(f, "<text x='%d' y='%d' font-size='12' text-anchor='end' fill='#1d2330'>%s</text>",
          p->l - 8, y + 15, name);
  if (!(v > 0)) {
    fprintf(f, "<text x='%d' y='%d' font-size='12' fill='#6b7388'>not measured</text>", p->l + 6,
            y + 15);
    return;
  }
  double x1 = px(p, 1), xv = px(p, v);
  fprintf(f, "<rect x='%.1f' y='%d' width='%.1f' height='18' fill='%s'/>", fmin(x1, xv), y + 2,
          fabs(xv - x1), col);
  if (lo > 0 && hi > 0)
    fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#1d2330' stroke-width='1.5'/>",
            px(p, lo), y + 11, px(p, hi), y + 11);
  fprintf(f, "<text x='%.1f' y='%d' font-size='12' fill='#1d2330'>%.3fx</text>",
          px(p, fmax(v, hi > 0 ? hi : v)) + 6, y + 15, v);
}

static void amdahl_svg(FILE *f, double bound, double meas, double lo, double hi) {
  double xmin = fmin(0.95, lo > 0 ? lo * 0.98 : 0.95), xmax = fmax(bound, fmax(meas, hi)) * 1.03;
  if (xmax < 1.05) xmax = 1.05;
  plot_t p = {xmin, xmax, 0, 1, false, false, 760, 118, 250, 80, 10, 26};
  fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' role='img' "
             "aria-label='Amdahl bound and measured gain'>", p.w, p.h);
  gain_ticks(f, &p);
  gain_bar(f, &p, p.t + 4, "Amdahl bound", bound, 0, 0, "#7d8aa5");
  gain_bar(f, &p, p.t + 40, "measured end to end", meas, lo, hi, "#1f6feb");
  fprintf(f, "<line x1='%.1f' y1='%d' x2='%.1f' y2='%d' stroke='#c0392b' stroke-dasharray='4 3'/>"
             "</svg>\n", px(&p, 1), p.t, px(&p, 1), p.h - p.b);
}

static void amdahl_section(FILE *f, const gt_report_t *r) {
  fputs("<h2>Amdahl bound and the end-to-end gain</h2>\n", f);
  const gt_json_t *gpu = gt_json_get(r->verify, "gpu"), *e2e = gt_json_get(r->verify, "e2e");
  if (!gpu) {
    if (r->gemm_bound > 0)
      fprintf(f, "<p>From the shapes file's shares of captured GEMM time, the tuned keys can make "
                 "the GEMM time at most <b>%.3fx</b> faster (%zu of %zu shapes have a row). The "
                 "whole workload gains less: GEMMs are only part of it. <code>gemmtune verify "
                 "--json</code> measures that share and the end-to-end gain.</p>\n",
              r->gemm_bound, r->shapes_tuned, r->shapes_total);
    else
      fputs("<p class='note'>Needs a verify record (<code>--verify</code>): the GEMMs' share of "
            "GPU time and the end-to-end runs with and without the DB.</p>\n", f);
    return;
  }
  double bound = gt_json_num(gt_json_get(gpu, "amdahl_bound"), 0);
  bool meas = gt_json_true(gt_json_get(e2e, "measured"));
  double sp = meas ? gt_json_num(gt_json_get(e2e, "speedup"), 0) : 0;
  double lo = meas ? gt_json_num(gt_json_get(e2e, "speedup_lo"), 0) : 0;
  double hi = meas ? gt_json_num(gt_json_get(e2e, "speedup_hi"), 0) : 0;
  fprintf(f, "<p>GEMM kernels took <b>%.1f%%</b> of the traced run's GPU time; the engaged keys "
             "%.1f%%, at a speedup of %.3fx (their rows, weighted by GPU time). If each gains here "
             "what <code>tune</code> measured, the DB can make the GPU work at most <b>%.3fx</b> "
             "faster; GEMMs that took no time at all would give %.2fx.</p>\n",
          100 * gt_json_num(gt_json_get(gpu, "gemm_share"), 0),
          100 * gt_json_num(gt_json_get(gpu, "tuned_share"), 0),
          gt_json_num(gt_json_get(gpu, "tuned_speedup"), 0), bound,
          gt_json_num(gt_json_get(gpu, "gemm_ceiling"), 0));
  amdahl_svg(f, bound, sp, lo, hi);
  if (meas)
    fprintf(f, "<p class='note'>End to end: %.0f runs each, interleaved, by %s (%s): %.6g with "
               "the DB, %.6g without; the interval pairs the quartiles of both sides.</p>\n",
            gt_json_num(gt_json_get(e2e, "runs"), 0), gt_json_str(gt_json_get(e2e, "by")),
            gt_json_str(gt_json_get(e2e, "unit")), gt_json_num(gt_json_get(e2e, "with"), 0),
            gt_json_num(gt_json_get(e2e, "without"), 0));
  else
    fprintf(f, "<p class='note'>End to end not measured: %s.</p>\n",
            gt_json_str(gt_json_get(e2e, "why")));
}

/* ---- the page --------------------------------------------------------------------------------- */

bool gt_report_write_html(FILE *f, const gt_report_t *r) {
  fprintf(f, "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n<title>gemmtune "
             "report: ");
  esc(f, r->device);
  fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>gemmtune report</h1>\n<p class='meta'>",
          k_css);
  esc(f, r->device);
  fprintf(f, " (%s, %d %s) &middot; DB <code>", r->arch, r->sm_count,
          strcmp(r->arch, "cpu") ? "SMs" : "cores");
  esc(f, r->db_path);
  fprintf(f, "</code>, %zu rows &middot; gemmtune %s", r->n, r->version);
  if (r->have_shapes) {
    fprintf(f, " &middot; shapes <code>");
    esc(f, r->shapes_path);
    fprintf(f, "</code> (%zu of %zu with a row)", r->shapes_tuned, r->shapes_total);
  }
  fprintf(f, " &middot; %s</p>\n", r->generated);
  if (r->n == 0)
    fputs("<p><b>The DB has no rows</b>: no shape beat its baseline by the threshold, which is a "
          "result too.</p>\n", f);
  else
    roofline_section(f, r);
  speedup_section(f, r);
  engagement_section(f, r);
  amdahl_section(f, r);
  fputs("<p class='note'>Made by <code>gemmtune report</code>. Every number in a picture is also "
        "in a table or the text.</p>\n</body></html>\n", f);
  return !ferror(f);
}
