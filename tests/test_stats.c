/* Order statistics (quantiles, median, MAD, spread, summary) on known vectors, and the
 * improvement decision, including a noise floor larger than the minimum improvement. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_stats.h"

#define NV 16

/* ---- quantiles ------------------------------------------------------------------------------ */

typedef struct quantile_case {
  const char *name;
  double v[NV];
  size_t n;
  double q, expect; /* NAN expect: the result must be NaN */
} quantile_case_t;

static const quantile_case_t k_quantiles[] = {
    {"quantile_median_of_even_count_interpolates", {1, 2, 3, 4}, 4, 0.5, 2.5},
    {"quantile_median_of_unsorted_odd_count", {5, 1, 4, 2, 3}, 5, 0.5, 3},
    {"quantile_0_is_min", {7, 3, 9}, 3, 0.0, 3},
    {"quantile_1_is_max", {7, 3, 9}, 3, 1.0, 9},
    {"quantile_quarter_interpolates", {1, 2, 3, 4}, 4, 0.25, 1.75},
    {"quantile_p90_of_0_to_10", {10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, 11, 0.9, 9},
    {"quantile_single_value", {42}, 1, 0.3, 42},
    {"quantile_empty_is_nan", {0}, 0, 0.5, NAN},
};

static void test_quantile(void **state) {
  const quantile_case_t *c = *state;
  double copy[NV];
  memcpy(copy, c->v, sizeof copy);
  double r = gt_stats_quantile(copy, c->n, c->q);
  if (isnan(c->expect))
    assert_true(isnan(r));
  else
    assert_float_equal(r, c->expect, 1e-12);
  assert_memory_equal(copy, c->v, sizeof copy); /* input untouched */
}

/* ---- median, MAD, spread --------------------------------------------------------------------- */

typedef struct spread_case {
  const char *name;
  double v[NV];
  size_t n;
  double median, mad_sigma, rel_spread;
} spread_case_t;

static const spread_case_t k_spreads[] = {
    /* deviations {2,1,0,1,97}: MAD 1; the outlier does not move it */
    {"mad_ignores_one_outlier", {1, 2, 3, 4, 100}, 5, 3, 1.4826, 1.4826 / 3},
    {"mad_of_constant_is_zero", {10, 10, 10}, 3, 10, 0, 0},
    {"mad_of_symmetric_ramp", {8, 9, 10, 11, 12}, 5, 10, 1.4826, 0.14826},
    {"spread_of_one_sample_is_zero", {5}, 1, 5, 0, 0},
};

static void test_spread(void **state) {
  const spread_case_t *c = *state;
  assert_float_equal(gt_stats_median(c->v, c->n), c->median, 1e-12);
  assert_float_equal(gt_stats_mad_sigma(c->v, c->n), c->mad_sigma, 1e-12);
  assert_float_equal(gt_stats_rel_spread(c->v, c->n), c->rel_spread, 1e-12);
}

static void test_summary_of_ramp(void **state) {
  (void)state;
  double v[11] = {3, 1, 4, 0, 5, 9, 2, 6, 8, 7, 10};
  gt_summary_t s;
  gt_stats_summarise(v, 11, &s);
  assert_int_equal(s.n, 11);
  assert_float_equal(s.median, 5, 1e-12);
  assert_float_equal(s.p10, 1, 1e-12);
  assert_float_equal(s.p90, 9, 1e-12);
  assert_float_equal(s.min, 0, 1e-12);
  assert_float_equal(s.max, 10, 1e-12);
  assert_float_equal(gt_stats_min(v, 11), 0, 1e-12);
  assert_float_equal(gt_stats_mean(v, 11), 5, 1e-12);
}

/* ---- improvement decision -------------------------------------------------------------------- */

typedef struct improve_case {
  const char *name;
  double cand, base, min_improvement, noise;
  bool expect;
  double threshold;
} improve_case_t;

static const improve_case_t k_improves[] = {
    {"improves_10pct_faster_clears_3pct", 90, 100, 0.03, 0.01, true, 0.03},
    {"improves_2pct_faster_is_below_3pct", 98, 100, 0.03, 0.0, false, 0.03},
    {"improves_noise_above_min_raises_bar", 90, 100, 0.03, 0.15, false, 0.15},
    {"improves_clears_noise_floor", 80, 100, 0.03, 0.15, true, 0.15},
    {"improves_equal_time_never", 100, 100, 0.0, 0.0, false, 0.0},
    {"improves_slower_never", 120, 100, 0.03, 0.0, false, 0.03},
    {"improves_zero_time_is_invalid", 0, 100, 0.03, 0.0, false, 0.03},
    {"improves_nan_time_is_invalid", NAN, 100, 0.03, 0.0, false, 0.03},
    {"improves_nan_noise_ignored", 90, 100, 0.03, NAN, true, 0.03},
    /* speedup 1.0309 > 1.03 but (base-cand)/base = 0.03 exactly: the speedup reading is used */
    {"improves_is_a_speedup_threshold", 97, 100, 0.03, 0.0, true, 0.03},
};

static void test_improves(void **state) {
  const improve_case_t *c = *state;
  double thr = -1;
  assert_int_equal(gt_stats_improves(c->cand, c->base, c->min_improvement, c->noise, &thr),
                   c->expect);
  assert_float_equal(thr, c->threshold, 1e-12);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  struct CMUnitTest t[64];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_quantiles); i++)
    t[n++] = (struct CMUnitTest){k_quantiles[i].name, test_quantile, NULL, NULL,
                                 (void *)&k_quantiles[i]};
  for (size_t i = 0; i < NELEM(k_spreads); i++)
    t[n++] = (struct CMUnitTest){k_spreads[i].name, test_spread, NULL, NULL, (void *)&k_spreads[i]};
  t[n++] = (struct CMUnitTest){"summary_of_ramp", test_summary_of_ramp, NULL, NULL, NULL};
  for (size_t i = 0; i < NELEM(k_improves); i++)
    t[n++] = (struct CMUnitTest){k_improves[i].name, test_improves, NULL, NULL,
                                 (void *)&k_improves[i]};
  return _cmocka_run_group_tests("stats", t, n, NULL, NULL);
}
