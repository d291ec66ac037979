/* Order statistics of timing samples and the improvement decision (see gt_stats.h). */
#include "gt_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorted copy of v, or NULL when n == 0 or allocation fails. Samples are few (tens to hundreds),
 * so a copy per call keeps the callers' arrays untouched at no measurable cost. */
static double *sorted_copy(const double *v, size_t n) {
  if (n == 0) return NULL;
  double *s = malloc(n * sizeof *s);
  if (!s) return NULL;
  memcpy(s, v, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_double);
  return s;
}

/* Linear interpolation between order statistics (the "R-7" definition, as numpy's default). */
static double quantile_sorted(const double *s, size_t n, double q) {
  if (q <= 0) return s[0];
  if (q >= 1) return s[n - 1];
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)floor(pos);
  double frac = pos - (double)lo;
  if (lo + 1 >= n) return s[n - 1];
  return s[lo] + frac * (s[lo + 1] - s[lo]);
}

double gt_stats_quantile(const double *v, size_t n, double q) {
  double *s = sorted_copy(v, n);
  if (!s) return NAN;
  double r = quantile_sorted(s, n, q);
  free(s);
  return r;
}

double gt_stats_median(const double *v, size_t n) { return gt_stats_quantile(v, n, 0.5); }

double gt_stats_mad_sigma(const double *v, size_t n) {
  if (n == 0) return NAN;
  double med = gt_stats_median(v, n);
  double *dev = malloc(n * sizeof *dev);
  if (!dev) return NAN;
  for (size_t i = 0; i < n; i++) dev[i] = fabs(v[i] - med);
  double mad = gt_stats_median(dev, n);
  free(dev);
  /* 1.4826 = 1 / Phi^-1(3/4): makes the MAD estimate sigma for normally distributed samples. */
  return 1.4826 * mad;
}

double gt_stats_rel_spread(const double *v, size_t n) {
  if (n < 2) return 0.0;
  double med = gt_stats_median(v, n);
  if (!(med > 0)) return 0.0; /* times are positive; a zero median has no meaningful ratio */
  return gt_stats_mad_sigma(v, n) / med;
}

double gt_stats_min(const double *v, size_t n) {
  if (n == 0) return NAN;
  double m = v[0];
  for (size_t i = 1; i < n; i++)
    if (v[i] < m) m = v[i];
  return m;
}

double gt_stats_mean(const double *v, size_t n) {
  if (n == 0) return NAN;
  double s = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  return s / (double)n;
}

void gt_stats_summarise(const double *v, size_t n, gt_summary_t *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  double *s = sorted_copy(v, n);
  if (!s) {
    out->median = out->p10 = out->p90 = out->min = out->max = NAN;
    return;
  }
  out->median = quantile_sorted(s, n, 0.5);
  out->p10 = quantile_sorted(s, n, 0.10);
  out->p90 = quantile_sorted(s, n, 0.90);
  out->min = s[0];
  out->max = s[n - 1];
  free(s);
  out->rel_spread = gt_stats_rel_spread(v, n);
}

/* "Faster by more than t" is read as a speedup: base/cand > 1 + t. That is the same quantity a DB
 * row records (speedup = baseline_us / time_us), so a row's speedup column always exceeds
 * 1 + threshold. A noise floor larger than min_improvement raises the bar: a win the baseline's
 * own round-to-round spread could produce is not a win. */
bool gt_stats_improves(double cand_us, double base_us, double min_improvement, double noise,
                       double *threshold) {
  double t = min_improvement > 0 ? min_improvement : 0;
  if (noise > t) t = noise; /* NaN noise compares false: ignored */
  if (threshold) *threshold = t;
  if (!(cand_us > 0) || !(base_us > 0) || !isfinite(cand_us) || !isfinite(base_us)) return false;
  return base_us / cand_us > 1.0 + t;
}
