/* The fp8 encoders (gt_f32_to_e4m3fn, gt_f32_to_e5m2: what fp8 operands, references and the fp8
 * GPU gate are generated with) round to nearest with ties to the even code, keep the sign,
 * saturate to the largest finite value and map NaN to 0x7f: checked code by code, at every
 * midpoint between neighbouring codes, and against a plain nearest-value scan over a sweep of
 * float bit patterns. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "core/gt_dtype.h"

typedef struct fmt {
  const char *name;
  uint8_t (*enc)(float);
  float (*dec)(uint8_t);
  uint8_t max_code; /* the largest finite non-negative code */
  float max_value;
} fmt_t;

static const fmt_t k_fmts[] = {
    {"e4m3fn", gt_f32_to_e4m3fn, gt_e4m3fn_to_f32, 0x7e, 448.0f},
    {"e5m2", gt_f32_to_e5m2, gt_e5m2_to_f32, 0x7b, 57344.0f},
};

/* The oracle: the nearest finite non-negative code by a scan, ties to the even code. */
static uint8_t scan_encode(const fmt_t *f, float x) {
  if (isnan(x)) return 0x7f;
  float a = fabsf(x);
  if (a > f->max_value) a = f->max_value;
  int best = 0;
  double bd = INFINITY;
  for (int c = 0; c <= f->max_code; c++) {
    const double d = fabs((double)f->dec((uint8_t)c) - (double)a);
    if (d < bd || (d == bd && (c & 1) == 0 && (best & 1) == 1)) bd = d, best = c;
  }
  return (uint8_t)(best | (signbit(x) ? 0x80 : 0));
}

static void test_codes_round_trip(void **state) {
  const fmt_t *f = *state;
  for (int c = 0; c <= f->max_code; c++) {
    for (int s = 0; s < 2; s++) {
      const uint8_t code = (uint8_t)(c | (s ? 0x80 : 0));
      if (f->enc(f->dec(code)) != code)
        fail_msg("%s: code 0x%02x (%g) encodes to 0x%02x", f->name, code, (double)f->dec(code),
                 f->enc(f->dec(code)));
    }
  }
}

static void test_midpoints_tie_to_even(void **state) {
  const fmt_t *f = *state;
  for (int c = 0; c < f->max_code; c++) {
    const float lo = f->dec((uint8_t)c), hi = f->dec((uint8_t)(c + 1));
    const float mid = (float)(0.5 * ((double)lo + (double)hi)); /* exact: fp8 has few bits */
    const int even = (c & 1) == 0 ? c : c + 1;
    assert_int_equal(f->enc(mid), even);
    assert_int_equal(f->enc(-mid), even | 0x80);
    /* just off the midpoint: the nearer code */
    assert_int_equal(f->enc(nextafterf(mid, 0.0f)), c);
    assert_int_equal(f->enc(nextafterf(mid, INFINITY)), c + 1);
  }
}

static void test_saturate_and_nan(void **state) {
  const fmt_t *f = *state;
  assert_int_equal(f->enc(f->max_value * 4.0f), f->max_code);
  assert_int_equal(f->enc(-f->max_value * 4.0f), f->max_code | 0x80);
  assert_int_equal(f->enc(INFINITY), f->max_code);
  assert_int_equal(f->enc(-INFINITY), f->max_code | 0x80);
  assert_int_equal(f->enc(NAN), 0x7f);
  assert_int_equal(f->enc(0.0f), 0x00);
  assert_int_equal(f->enc(-0.0f), 0x80);
  /* below half the smallest subnormal: zero, with its sign */
  const float tiny = f->dec(1) * 0.25f;
  assert_int_equal(f->enc(tiny), 0x00);
  assert_int_equal(f->enc(-tiny), 0x80);
}

static void test_matches_scan(void **state) {
  const fmt_t *f = *state;
  long checked = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 65521) {
    const uint32_t bits = (uint32_t)u;
    float x;
    memcpy(&x, &bits, sizeof x);
    const uint8_t got = f->enc(x), want = scan_encode(f, x);
    if (got != want)
      fail_msg("%s: %a encodes to 0x%02x, the nearest-code scan gives 0x%02x", f->name,
               (double)x, got, want);
    checked++;
  }
  assert_true(checked > 60000);
}

int main(void) {
  const struct CMUnitTest t[] = {
      cmocka_unit_test_prestate(test_codes_round_trip, (void *)&k_fmts[0]),
      cmocka_unit_test_prestate(test_codes_round_trip, (void *)&k_fmts[1]),
      cmocka_unit_test_prestate(test_midpoints_tie_to_even, (void *)&k_fmts[0]),
      cmocka_unit_test_prestate(test_midpoints_tie_to_even, (void *)&k_fmts[1]),
      cmocka_unit_test_prestate(test_saturate_and_nan, (void *)&k_fmts[0]),
      cmocka_unit_test_prestate(test_saturate_and_nan, (void *)&k_fmts[1]),
      cmocka_unit_test_prestate(test_matches_scan, (void *)&k_fmts[0]),
      cmocka_unit_test_prestate(test_matches_scan, (void *)&k_fmts[1]),
  };
  return cmocka_run_group_tests(t, NULL, NULL);
}
