/* Order statistics and the improvement decision.
 *
 * Timings are summarised by the median and a robust spread (MAD scaled to sigma, as a fraction
 * of the median); the baseline's spread is the noise floor a winner must clear. */
#ifndef GT_STATS_H
#define GT_STATS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Quantile q in [0,1] of n values (linear interpolation between order statistics). The input is
 * not modified. n == 0 gives NaN. */
double gt_stats_quantile(const double *v, size_t n, double q);
double gt_stats_median(const double *v, size_t n);
/* Median absolute deviation * 1.4826 (a sigma estimate robust to outliers). */
double gt_stats_mad_sigma(const double *v, size_t n);
/* Robust relative spread: mad_sigma / median (0 when n < 2). */
double gt_stats_rel_spread(const double *v, size_t n);
double gt_stats_min(const double *v, size_t n);
double gt_stats_mean(const double *v, size_t n);

typedef struct gt_summary {
  size_t n;
  double median, p10, p90, min, max;
  double rel_spread; /* robust, fraction of the median */
} gt_summary_t;

void gt_stats_summarise(const double *v, size_t n, gt_summary_t *out);

/* The improvement decision: a candidate replaces the baseline only when it is faster by more
 * than max(min_improvement, noise), both fractions (0.03 = 3%). *threshold receives the fraction
 * that was required. */
bool gt_stats_improves(double cand_us, double base_us, double min_improvement, double noise,
                       double *threshold);

#ifdef __cplusplus
}
#endif
#endif
