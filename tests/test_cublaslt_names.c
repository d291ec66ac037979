/* cuBLASLt candidate names: configurations format to the expected name and parse back to
 * themselves; every id of the enum tables round-trips; malformed and non-canonical names are
 * refused with the right status; impossible configurations do not format. Plain C, no GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "providers/cuda/gt_cublaslt_name.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- named round trips ------------------------------------------------------------------------ */

typedef struct named_case {
  const char *what;
  gt_cublaslt_config_t cfg;
  const char *name;
} named_case_t;

static const named_case_t k_named[] = {
    {"decode config cuBLAS picks for 16x4096x4096 (algo 66, 64x8, split-K 2, cluster 2x1)",
     {66, 10, 15, 2, 1, 0, 0, 0, 3}, "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1"},
    {"undefined tile, stages and AUTO cluster",
     {0, 0, 0, 1, 0, 0, 0, 0, 0}, "cublaslt_a0_tnone_snone_sk1_r0_sw0_co0_clauto"},
    {"AUTO stages", {31, 20, 35, 1, 0, 1, 3, 0, 0}, "cublaslt_a31_t128x128_s64xauto_sk1_r0_sw1_co3_clauto"},
    {"ids beyond the tables are numeric (tile, stages gap 29, cluster gap 1)",
     {7, 700, 29, 4, 2, 0, 0, 0, 1}, "cublaslt_a7_tid700_sid29_sk4_r2_sw0_co0_clid1"},
    {"non-zero inner shape adds a token", {21, 18, 8, 1, 0, 0, 0, 3, 2},
     "cublaslt_a21_t128x64_s32x2_sk1_r0_sw0_co0_cl1x1_is3"},
    {"last table entries", {5, 634, 38, 16, 4, 1, 1, 0, 51},
     "cublaslt_a5_t512x1024_s768xauto_sk16_r4_sw1_co1_cl1x15"},
    {"largest numbers", {2147483647, 1, 1, 2147483647, 0, 0, 4294967295u, 0, 0},
     "cublaslt_a2147483647_t8x8_s16x1_sk2147483647_r0_sw0_co4294967295_clauto"},
};

static void test_named_round_trip(void **state) {
  (void)state;
  for (size_t i = 0; i < NELEM(k_named); i++) {
    const named_case_t *c = &k_named[i];
    char buf[192];
    gt_status_t s = gt_cublaslt_name_format(&c->cfg, buf, sizeof buf);
    if (s != GT_OK) fail_msg("%s: format: %s", c->what, gt_err_msg());
    if (strcmp(buf, c->name) != 0) fail_msg("%s: formatted %s, expected %s", c->what, buf, c->name);
    gt_cublaslt_config_t back;
    s = gt_cublaslt_name_parse(c->name, &back);
    if (s != GT_OK) fail_msg("%s: parse: %s", c->what, gt_err_msg());
    if (memcmp(&back, &c->cfg, sizeof back) != 0) fail_msg("%s: parsed config differs", c->what);
  }
}

/* ---- every table entry ------------------------------------------------------------------------ */

static void round_trip_or_fail(const gt_cublaslt_config_t *c, const char *what, unsigned id) {
  char buf[192];
  gt_cublaslt_config_t back;
  if (gt_cublaslt_name_format(c, buf, sizeof buf) != GT_OK)
    fail_msg("%s %u: format: %s", what, id, gt_err_msg());
  if (gt_cublaslt_name_parse(buf, &back) != GT_OK)
    fail_msg("%s %u: parse '%s': %s", what, id, buf, gt_err_msg());
  if (memcmp(&back, c, sizeof back) != 0) fail_msg("%s %u: '%s' parsed to another config", what, id, buf);
}

static void test_every_tile_stages_cluster_id(void **state) {
  (void)state;
  gt_cublaslt_config_t c = {66, 0, 0, 1, 0, 0, 0, 0, 0};
  for (unsigned id = 0; id <= 640; id++) { /* past the table's end: numeric ids */
    c.tile_id = id;
    round_trip_or_fail(&c, "tile", id);
  }
  c.tile_id = 10;
  for (unsigned id = 0; id <= 45; id++) {
    c.stages_id = id;
    round_trip_or_fail(&c, "stages", id);
  }
  c.stages_id = 15;
  for (unsigned id = 0; id <= 60; id++) {
    c.cluster_id = id;
    round_trip_or_fail(&c, "cluster", id);
  }
}

static void test_table_lookups(void **state) {
  (void)state;
  int r, c, z;
  assert_int_equal(gt_cublaslt_tile_id(64, 8), 10);
  assert_true(gt_cublaslt_tile_dims(10, &r, &c));
  assert_int_equal(r, 64);
  assert_int_equal(c, 8);
  assert_int_equal(gt_cublaslt_stages_id(64, 3), 15);
  assert_int_equal(gt_cublaslt_stages_id(64, 0), 35); /* 64xAUTO */
  assert_int_equal(gt_cublaslt_cluster_id(2, 1, 1), 3);
  assert_true(gt_cublaslt_cluster_dims(3, &r, &c, &z));
  assert_int_equal(r * 100 + c * 10 + z, 211);
  assert_int_equal(gt_cublaslt_tile_id(3, 3), 0);
  assert_false(gt_cublaslt_tile_dims(0, &r, &c));
  assert_false(gt_cublaslt_stages_dims(29, &r, &c)); /* a gap in cublasLtMatmulStages_t */
  assert_false(gt_cublaslt_cluster_dims(1, &r, &c, &z));
}

/* ---- malformed names ----------------------------------------------------------------------------- */

typedef struct bad_case {
  const char *what;
  const char *name;
  gt_status_t want;
} bad_case_t;

static const bad_case_t k_bad[] = {
    {"another provider's name", "cublas_gemmex_default", GT_ERR_NOT_FOUND},
    {"empty", "", GT_ERR_NOT_FOUND},
    {"prefix only", "cublaslt", GT_ERR_NOT_FOUND},
    {"missing cluster", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co0", GT_ERR_DATA},
    {"extra token", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1_x1", GT_ERR_DATA},
    {"inner shape 0 written out", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1_is0", GT_ERR_DATA},
    {"leading zero", "cublaslt_a066_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"negative algo id", "cublaslt_a-1_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"algo id overflow", "cublaslt_a99999999999_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"no such tile", "cublaslt_a66_t3x3_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"tile with three numbers", "cublaslt_a66_t64x8x2_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"tile id 0 as a number", "cublaslt_a66_tid0_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"stages count 0", "cublaslt_a66_t64x8_s64x0_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"no such stages", "cublaslt_a66_t64x8_s64x9_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"split-K 0", "cublaslt_a66_t64x8_s64x3_sk0_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"reduction 3 (a mask, not a scheme)", "cublaslt_a66_t64x8_s64x3_sk2_r3_sw0_co0_cl2x1", GT_ERR_DATA},
    {"swizzle 2", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw2_co0_cl2x1", GT_ERR_DATA},
    {"custom option overflow", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co4294967296_cl2x1", GT_ERR_DATA},
    {"cluster z of 1 written out", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1x1", GT_ERR_DATA},
    {"no such cluster", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co0_cl3x3x3", GT_ERR_DATA},
    {"tokens out of order", "cublaslt_a66_t64x8_s64x3_sk2_sw0_r1_co0_cl2x1", GT_ERR_DATA},
    {"empty token", "cublaslt_a66__t64x8_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"upper-case tag", "cublaslt_a66_T64x8_s64x3_sk2_r1_sw0_co0_cl2x1", GT_ERR_DATA},
    {"trailing separator", "cublaslt_a66_t64x8_s64x3_sk2_r1_sw0_co0_cl2x1_", GT_ERR_DATA},
};

static void test_malformed_rejected(void **state) {
  (void)state;
  for (size_t i = 0; i < NELEM(k_bad); i++) {
    gt_cublaslt_config_t c;
    gt_status_t s = gt_cublaslt_name_parse(k_bad[i].name, &c);
    if (s != k_bad[i].want)
      fail_msg("%s ('%s'): got %s, want %s", k_bad[i].what, k_bad[i].name, gt_status_name(s),
               gt_status_name(k_bad[i].want));
    if (s == GT_ERR_DATA && !strstr(gt_err_msg(), "token") && !strstr(gt_err_msg(), "tokens"))
      fail_msg("%s: message does not name the token: %s", k_bad[i].what, gt_err_msg());
  }
}

/* ---- configurations no name can carry ---------------------------------------------------------- */

typedef struct unformattable {
  const char *what;
  gt_cublaslt_config_t cfg;
} unformattable_t;

static const unformattable_t k_unformattable[] = {
    {"negative algo id", {-1, 10, 15, 1, 0, 0, 0, 0, 0}},
    {"split-K 0", {66, 10, 15, 0, 0, 0, 0, 0, 0}},
    {"reduction mask 3", {66, 10, 15, 2, 3, 0, 0, 0, 0}},
    {"swizzle 2", {66, 10, 15, 1, 0, 2, 0, 0, 0}},
};

static void test_unformattable_configs(void **state) {
  (void)state;
  for (size_t i = 0; i < NELEM(k_unformattable); i++) {
    char buf[192];
    if (gt_cublaslt_name_format(&k_unformattable[i].cfg, buf, sizeof buf) != GT_ERR_USAGE)
      fail_msg("%s: formatted as '%s'", k_unformattable[i].what, buf);
  }
  char tiny[16];
  gt_cublaslt_config_t ok = {66, 10, 15, 2, 1, 0, 0, 0, 3};
  assert_int_equal(gt_cublaslt_name_format(&ok, tiny, sizeof tiny), GT_ERR_USAGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_named_round_trip),
      cmocka_unit_test(test_every_tile_stages_cluster_id),
      cmocka_unit_test(test_table_lookups),
      cmocka_unit_test(test_malformed_rejected),
      cmocka_unit_test(test_unformattable_configs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
