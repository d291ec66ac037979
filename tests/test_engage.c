/* The engagement verdict of `gemmtune verify`: each scenario is a DB, the shim's counters and a
 * kernel trace, and asserts the verdict of every key and whether the run passes. Also the
 * expected-kernel rules, the GEMM-name classification, the GPU-time / Amdahl arithmetic and the
 * end-to-end statistics. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_testutil.h"
#include "core/gt_grouped_key.h"
#include "providers/cuda/gt_grouped_names.h"
#include "kernels/gt_grouped.h"
#include "verify/gt_engage.h"

#define SPLITK_INSTANCE "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks2_v8"
#define PLAIN_INSTANCE "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8"
#define LT_INSTANCE "cublaslt_a66_t64x8_s0_k2_r1_w0_c0_l2x1"

static gt_problem_t key_linear(int64_t tokens, int64_t out, int64_t in, int sms) {
  gt_problem_t p;
  gt_problem_init(&p);
  gt_problem_set_linear(&p, tokens, out, in);
  snprintf(p.arch, sizeof p.arch, "sm_90");
  p.sm_count = sms;
  return p;
}

static gt_db_row_t make_row(gt_problem_t key, const char *provider, const char *instance,
                            double speedup) {
  gt_db_row_t r;
  memset(&r, 0, sizeof r);
  r.key = key;
  snprintf(r.provider, sizeof r.provider, "%s", provider);
  snprintf(r.lib, sizeof r.lib, "%s", strcmp(provider, "kernels") ? "cublaslt=130100" : "-");
  snprintf(r.instance, sizeof r.instance, "%s", instance);
  r.baseline_us = 10.0 * speedup;
  r.time_us = 10.0;
  r.speedup = speedup;
  r.error = 1e-3;
  r.error_bound = 1e-2;
  snprintf(r.timing, sizeof r.timing, "cold-graph");
  r.rounds = 15;
  r.spread_pct = 1.0;
  snprintf(r.baseline, sizeof r.baseline, "cublas_gemmex_default");
  return r;
}

static gt_shim_key_t shim_key(gt_problem_t key, uint64_t calls, uint64_t hits,
                              gt_shim_decision_t d) {
  gt_shim_key_t k;
  memset(&k, 0, sizeof k);
  k.key = key;
  k.calls = calls;
  k.hits = hits;
  k.decision = d;
  snprintf(k.entry, sizeof k.entry, "cublasGemmEx");
  return k;
}

/* ---- scenarios ----------------------------------------------------------------------------- */

/* Keys: A = 1x4096x4096 (row: own split-K kernel), B = 1x14336x4096 (row: cuBLASLt, calibrated
 * kernel "nvjet_tuned"), C = 1x6144x4096 (no row). */
#define K_A key_linear(1, 4096, 4096, 132)
#define K_B key_linear(1, 14336, 4096, 132)
#define K_C key_linear(1, 6144, 4096, 132)

typedef struct kernel_run {
  const char *name;
  uint64_t calls, total_ns;
} kernel_run_t;

typedef struct scenario {
  const char *name;
  /* DB: rows for A and B unless sm114 (then both rows say sm_count 114) */
  bool rows_sm114;
  bool row_b_uncalibrated;
  /* shim counters (calls 0 = key not issued) */
  uint64_t a_calls, a_hits, b_calls, b_hits, c_calls;
  gt_shim_decision_t a_dec, b_dec;
  bool stats_missing;
  /* trace */
  gt_trace_state_t trace_state; /* OK, or UNVERIFIED */
  bool no_trace;
  kernel_run_t kernels[5];
  /* expectations */
  gt_engage_verdict_t want_a, want_b, want_c;
  bool want_pass, want_unverified;
  const char *want_summary;  /* substring */
  const char *want_why_a;    /* substring of A's why, or NULL */
} scenario_t;

#define RED_A "gt_sm90_splitk_reduce_bf16"
#define NA GT_ENGAGE__COUNT /* item absent */

static const scenario_t k_scenarios[] = {
    {"every call hit; graph replays ran the kernels many more times", false, false,
     4, 4, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{SPLITK_INSTANCE, 400, 4000}, {RED_A, 400, 400}, {"nvjet_tuned", 200, 3000}},
     GT_ENGAGE_ENGAGED, GT_ENGAGE_ENGAGED, NA, true, false, "PASS: all 2 tuned keys", "4 of 4 calls hit"},
    {"an untuned key next to engaged ones still passes", false, false,
     4, 4, 2, 2, 3, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{SPLITK_INSTANCE, 4, 40}, {RED_A, 4, 4}, {"nvjet_tuned", 2, 30}, {"nvjet_default", 3, 30}},
     GT_ENGAGE_ENGAGED, GT_ENGAGE_ENGAGED, GT_ENGAGE_UNTUNED, true, false, "PASS", NULL},
    {"some calls hit", false, false,
     10, 6, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{SPLITK_INSTANCE, 6, 60}, {RED_A, 6, 6}, {"nvjet_tuned", 2, 30}},
     GT_ENGAGE_PARTLY, GT_ENGAGE_ENGAGED, NA, false, false, "FAIL: 1 of 2", "6 of 10 calls hit"},
    {"the split-K reduce never ran", false, false,
     4, 4, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{SPLITK_INSTANCE, 4, 40}, {"nvjet_tuned", 2, 30}},
     GT_ENGAGE_PARTLY, GT_ENGAGE_ENGAGED, NA, false, false, "FAIL", RED_A " never ran"},
    {"the shim served calls but the trace shows none of the row's kernels", false, false,
     4, 4, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{"nvjet_default", 4, 40}, {"nvjet_tuned", 2, 30}},
     GT_ENGAGE_NOT, GT_ENGAGE_ENGAGED, NA, false, false, "FAIL", "trace contradicts"},
    {"a kernel ran fewer times than the shim's hits", false, false,
     4, 4, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{SPLITK_INSTANCE, 3, 40}, {RED_A, 3, 4}, {"nvjet_tuned", 2, 30}},
     GT_ENGAGE_PARTLY, GT_ENGAGE_ENGAGED, NA, false, false, "FAIL", "ran 3 times for 4 hits"},
    {"first seen under graph capture: the graph holds the default path", false, false,
     4, 0, 2, 2, 0, GT_SHIM_DEFERRED, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{"nvjet_default", 400, 4000}, {"nvjet_tuned", 2, 30}},
     GT_ENGAGE_NOT, GT_ENGAGE_ENGAGED, NA, false, false, "FAIL", "graph capture"},
    {"a row the shim could not use", false, false,
     4, 0, 2, 2, 0, GT_SHIM_NOTUSED, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{"nvjet_default", 4, 40}, {"nvjet_tuned", 2, 30}},
     GT_ENGAGE_NOT, GT_ENGAGE_ENGAGED, NA, false, false, "FAIL", "could not use it"},
    {"no trace: served calls are unverified, not passed", false, false,
     4, 4, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_UNVERIFIED, false, {{0}},
     GT_ENGAGE_UNVERIFIED, GT_ENGAGE_UNVERIFIED, NA, false, true, "UNVERIFIED", "CUPTI taken"},
    {"no trace file at all", false, false,
     4, 4, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, true, {{0}},
     GT_ENGAGE_UNVERIFIED, GT_ENGAGE_UNVERIFIED, NA, false, true, "UNVERIFIED", "no kernel trace"},
    {"no trace, but a key with no hit fails outright", false, false,
     4, 0, 2, 2, 0, GT_SHIM_DEFERRED, GT_SHIM_HIT, false, GT_TRACE_UNVERIFIED, false, {{0}},
     GT_ENGAGE_NOT, GT_ENGAGE_UNVERIFIED, NA, false, false, "FAIL", "graph capture"},
    {"a row whose kernels are unknown is unverified", false, true,
     4, 4, 2, 2, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{SPLITK_INSTANCE, 4, 40}, {RED_A, 4, 4}, {"nvjet_tuned", 2, 30}},
     GT_ENGAGE_ENGAGED, GT_ENGAGE_UNVERIFIED, NA, false, true, "UNVERIFIED", NULL},
    {"a DB for another device: every key is a near miss naming sm_count", true, false,
     4, 0, 2, 0, 0, GT_SHIM_MISS, GT_SHIM_MISS, false, GT_TRACE_OK, false,
     {{"nvjet_default", 6, 60}},
     GT_ENGAGE_NEAR_MISS, GT_ENGAGE_NEAR_MISS, NA, false, false, "sm_count: 132 vs 114",
     "sm_count: 132 vs 114"},
    {"a row the workload never issued is listed, the run still passes", false, false,
     4, 4, 0, 0, 0, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{SPLITK_INSTANCE, 4, 40}, {RED_A, 4, 4}},
     GT_ENGAGE_ENGAGED, GT_ENGAGE_NOT_ISSUED, NA, true, false, "PASS: all 1 tuned", NULL},
    {"only untuned keys: nothing was verified", false, false,
     0, 0, 0, 0, 5, GT_SHIM_HIT, GT_SHIM_HIT, false, GT_TRACE_OK, false,
     {{"nvjet_default", 5, 50}},
     GT_ENGAGE_NOT_ISSUED, GT_ENGAGE_NOT_ISSUED, GT_ENGAGE_UNTUNED, false, false,
     "no DB row matched any of the 1 keys", NULL},
    {"no counters from the shim", false, false,
     0, 0, 0, 0, 0, GT_SHIM_HIT, GT_SHIM_HIT, true, GT_TRACE_OK, false, {{0}},
     GT_ENGAGE_NOT_ISSUED, GT_ENGAGE_NOT_ISSUED, NA, false, true, "UNVERIFIED: the shim's counters", NULL},
};

static const gt_engage_item_t *find_item(const gt_engage_report_t *r, gt_problem_t k) {
  for (size_t i = 0; i < r->n; i++)
    if (gt_problem_equal(&r->items[i].key, &k)) return &r->items[i];
  return NULL;
}

static bool check_item(const char *sc, const char *what, const gt_engage_report_t *r,
                       gt_problem_t k, gt_engage_verdict_t want, const char *why) {
  const gt_engage_item_t *it = find_item(r, k);
  if (want == NA) {
    if (!it) return true;
    printf("FAIL - %s: key %s should not be listed\n", sc, what);
    return false;
  }
  if (!it) {
    printf("FAIL - %s: key %s missing\n", sc, what);
    return false;
  }
  if (it->verdict != want) {
    printf("FAIL - %s: key %s is '%s', want '%s' (%s)\n", sc, what,
           gt_engage_verdict_name(it->verdict), gt_engage_verdict_name(want), it->why);
    return false;
  }
  if (why && !strstr(it->why, why)) {
    printf("FAIL - %s: key %s: why '%s' lacks '%s'\n", sc, what, it->why, why);
    return false;
  }
  return true;
}

static void test_scenarios(void **st) {
  (void)st;
  int failed = 0;
  for (size_t s = 0; s < sizeof k_scenarios / sizeof k_scenarios[0]; s++) {
    const scenario_t *c = &k_scenarios[s];
    gt_db_t db;
    gt_db_init(&db);
    int sms = c->rows_sm114 ? 114 : 132;
    gt_db_row_t ra = make_row(key_linear(1, 4096, 4096, sms), "kernels", SPLITK_INSTANCE, 1.5);
    gt_db_row_t rb = make_row(key_linear(1, 14336, 4096, sms), "cublaslt", LT_INSTANCE, 1.2);
    assert_int_equal(gt_db_put(&db, &ra), GT_OK);
    assert_int_equal(gt_db_put(&db, &rb), GT_OK);

    gt_shim_stats_t stats = {0};
    gt_shim_key_t keys[3];
    if (c->a_calls) keys[stats.n++] = shim_key(K_A, c->a_calls, c->a_hits, c->a_dec);
    if (c->b_calls) keys[stats.n++] = shim_key(K_B, c->b_calls, c->b_hits, c->b_dec);
    if (c->c_calls) keys[stats.n++] = shim_key(K_C, c->c_calls, 0, GT_SHIM_MISS);
    stats.v = keys;
    stats.files = 1;

    gt_trace_t tr;
    gt_trace_init(&tr);
    if (c->trace_state != GT_TRACE_OK) gt_trace_set_state(&tr, c->trace_state, "CUPTI taken");
    for (int k = 0; k < 5 && c->kernels[k].name; k++)
      for (uint64_t i = 0; i < c->kernels[k].calls; i++)
        gt_trace_add(&tr, c->kernels[k].name, 0,
                     c->kernels[k].total_ns / c->kernels[k].calls +
                         (i < c->kernels[k].total_ns % c->kernels[k].calls),
                     1, false);

    gt_engage_report_t rep;
    assert_int_equal(gt_engage_build(&db, c->stats_missing ? NULL : &stats, &rep), GT_OK);
    /* what verify does: own kernels from the row, cuBLASLt rows from a calibration */
    for (size_t i = 0; i < rep.n; i++) {
      gt_engage_item_t *it = &rep.items[i];
      if (!it->issued || !it->row) continue;
      if (gt_engage_expected_from_row(it->row, &it->expected)) it->expected_known = true;
      else if (!c->row_b_uncalibrated) {
        gt_kset_add(&it->expected, "nvjet_tuned");
        it->expected_known = true;
      } else {
        snprintf(it->expected_why, sizeof it->expected_why, "calibration run exited 1");
      }
    }
    gt_engage_judge(&db, c->no_trace ? NULL : &tr, !c->stats_missing, "no stats file", &rep);

    bool ok = check_item(c->name, "A", &rep, c->rows_sm114 ? K_A : K_A, c->want_a, c->want_why_a);
    if (c->want_b == GT_ENGAGE_NOT_ISSUED)
      ok &= check_item(c->name, "B row", &rep, rb.key, c->want_b, NULL);
    else
      ok &= check_item(c->name, "B", &rep, K_B, c->want_b, NULL);
    ok &= check_item(c->name, "C", &rep, K_C, c->want_c, NULL);
    if (c->want_a == GT_ENGAGE_NOT_ISSUED)
      ok &= check_item(c->name, "A row", &rep, ra.key, GT_ENGAGE_NOT_ISSUED, NULL);
    if (rep.pass != c->want_pass || rep.unverified != c->want_unverified) {
      printf("FAIL - %s: pass=%d unverified=%d, want %d/%d (%s)\n", c->name, rep.pass,
             rep.unverified, c->want_pass, c->want_unverified, rep.summary);
      ok = false;
    }
    if (!strstr(rep.summary, c->want_summary)) {
      printf("FAIL - %s: summary '%s' lacks '%s'\n", c->name, rep.summary, c->want_summary);
      ok = false;
    }
    if (ok) printf("ok   - %s\n", c->name);
    else failed++;
    gt_engage_report_free(&rep);
    gt_trace_free(&tr);
    gt_db_free(&db);
  }
  printf("%zu passed, %d failed\n", sizeof k_scenarios / sizeof k_scenarios[0] - (size_t)failed,
         failed);
  assert_int_equal(failed, 0);
}

/* A row never issued names the nearest issued key and the field that differs (row value first). */
static void test_not_issued_names_the_field(void **st) {
  (void)st;
  gt_db_t db;
  gt_db_init(&db);
  gt_db_row_t r = make_row(key_linear(16, 4096, 4096, 132), "kernels", PLAIN_INSTANCE, 1.3);
  assert_int_equal(gt_db_put(&db, &r), GT_OK);
  gt_shim_key_t k = shim_key(key_linear(1, 4096, 4096, 132), 3, 0, GT_SHIM_MISS);
  gt_shim_stats_t stats = {.v = &k, .n = 1, .files = 1};
  gt_trace_t tr;
  gt_trace_init(&tr);
  gt_engage_report_t rep;
  assert_int_equal(gt_engage_build(&db, &stats, &rep), GT_OK);
  gt_engage_judge(&db, &tr, true, NULL, &rep);
  const gt_engage_item_t *row = find_item(&rep, r.key), *key = find_item(&rep, k.key);
  assert_int_equal(row->verdict, GT_ENGAGE_NOT_ISSUED);
  assert_non_null(strstr(row->why, "n: 16 vs 1"));
  /* another shape is not a near miss: the key is untuned, and says which row is nearest */
  assert_int_equal(key->verdict, GT_ENGAGE_UNTUNED);
  assert_non_null(strstr(key->why, "n: 1 vs 16"));
  gt_engage_report_free(&rep);
  gt_db_free(&db);
}

/* A key tune raced and kept (the DB's kept line) whose sibling (same shape, a bias) has a row is
 * not a near miss: its calls rightly run the original. Without the kept line it is one. */
static void test_kept_key_is_not_a_near_miss(void **st) {
  (void)st;
  gt_problem_t plain = key_linear(16, 4096, 4096, 132), biased = plain;
  biased.epilogue = GT_EPI_BIAS;
  for (int kept = 0; kept <= 1; kept++) {
    gt_db_t db;
    gt_db_init(&db);
    gt_db_row_t r = make_row(biased, "kernels", PLAIN_INSTANCE, 1.3);
    assert_int_equal(gt_db_put(&db, &r), GT_OK);
    if (kept)
      assert_int_equal(gt_db_set_kept(&db, &plain, "NVIDIA H200: the baseline was fastest"),
                       GT_OK);
    gt_shim_key_t ks[2] = {shim_key(biased, 4, 4, GT_SHIM_HIT),
                           shim_key(plain, 4, 0, GT_SHIM_MISS)};
    gt_shim_stats_t stats = {.v = ks, .n = 2, .files = 1};
    gt_trace_t tr;
    gt_trace_init(&tr);
    for (int i = 0; i < 4; i++) gt_trace_add(&tr, PLAIN_INSTANCE, 0, 10, 1, false);
    gt_engage_report_t rep;
    assert_int_equal(gt_engage_build(&db, &stats, &rep), GT_OK);
    for (size_t i = 0; i < rep.n; i++)
      if (rep.items[i].row) {
        assert_true(gt_engage_expected_from_row(rep.items[i].row, &rep.items[i].expected));
        rep.items[i].expected_known = true;
      }
    gt_engage_judge(&db, &tr, true, NULL, &rep);
    const gt_engage_item_t *it = find_item(&rep, plain);
    assert_non_null(it);
    if (kept) {
      assert_int_equal(it->verdict, GT_ENGAGE_UNTUNED);
      assert_non_null(strstr(it->why, "kept today's path"));
      assert_true(rep.pass);
    } else {
      assert_int_equal(it->verdict, GT_ENGAGE_NEAR_MISS);
      assert_false(rep.pass);
    }
    gt_engage_report_free(&rep);
    gt_trace_free(&tr);
    gt_db_free(&db);
  }
}

/* Two keys tuned to the same kernel share its launches: it must have run for both. */
static void test_shared_kernel_needs_both_keys_hits(void **st) {
  (void)st;
  gt_db_t db;
  gt_db_init(&db);
  gt_db_row_t a = make_row(key_linear(1, 4096, 4096, 132), "kernels", PLAIN_INSTANCE, 1.3);
  gt_db_row_t b = make_row(key_linear(2, 4096, 4096, 132), "kernels", PLAIN_INSTANCE, 1.3);
  gt_db_put(&db, &a);
  gt_db_put(&db, &b);
  gt_shim_key_t ks[2] = {shim_key(a.key, 3, 3, GT_SHIM_HIT), shim_key(b.key, 3, 3, GT_SHIM_HIT)};
  gt_shim_stats_t stats = {.v = ks, .n = 2, .files = 1};
  for (int runs = 5; runs <= 6; runs++) {
    gt_trace_t tr;
    gt_trace_init(&tr);
    for (int i = 0; i < runs; i++) gt_trace_add(&tr, PLAIN_INSTANCE, 0, 10, 1, false);
    gt_engage_report_t rep;
    gt_engage_build(&db, &stats, &rep);
    for (size_t i = 0; i < rep.n; i++) {
      assert_true(gt_engage_expected_from_row(rep.items[i].row, &rep.items[i].expected));
      rep.items[i].expected_known = true;
    }
    gt_engage_judge(&db, &tr, true, NULL, &rep);
    gt_engage_verdict_t want = runs == 6 ? GT_ENGAGE_ENGAGED : GT_ENGAGE_PARTLY;
    assert_int_equal(find_item(&rep, a.key)->verdict, want);
    assert_int_equal(find_item(&rep, b.key)->verdict, want);
    assert_int_equal(rep.pass, runs == 6);
    /* the kernel's 60 ns (6 runs) are split between the keys by their hits */
    if (runs == 6) assert_true(fabs(find_item(&rep, a.key)->gpu_ns - 30.0) < 1e-9);
    gt_engage_report_free(&rep);
    gt_trace_free(&tr);
  }
  gt_db_free(&db);
}

/* A grouped_mm key is engaged where its own kernel ran and torch's grouped path is gone: with
 * every grouped call hit, a launch of prepare_grouped_gemm_data left in the trace means some call
 * still ran torch's path. */
static void test_grouped_replaces_torch_path(void **st) {
  (void)st;
  gt_grouped_call_t c = {.entry = "bf16bf16_grouped_mm", .a_type = GT_DT_BF16,
                         .b_type = GT_DT_BF16, .out_type = GT_DT_BF16, .a_2d = true, .b_3d = true,
                         .has_offs = true, .rows = 16, .k = 4096, .n = 14336, .groups = 8,
                         .a_row_stride = 4096, .a_col_stride = 1, .b_group_stride = 14336 * 4096,
                         .b_k_stride = 1, .b_n_stride = 4096, .out_row_stride = 14336,
                         .out_col_stride = 1};
  gt_problem_t key;
  assert_int_equal(gt_grouped_key(&c, "sm_90", 132, &key, NULL), GT_OK);
  gt_db_t db;
  gt_db_init(&db);
  gt_db_row_t r = make_row(key, "grouped", "gt_sm90_grpd_bf16_enk_t128x8x128_s3_ks1", 1.4);
  snprintf(r.lib, sizeof r.lib, "-");
  snprintf(r.baseline, sizeof r.baseline, "torch_bf16bf16_grouped_mm");
  assert_int_equal(gt_db_put(&db, &r), GT_OK);
  gt_shim_key_t k = shim_key(key, 4, 4, GT_SHIM_HIT);
  snprintf(k.entry, sizeof k.entry, "bf16bf16_grouped_mm");
  gt_shim_stats_t stats = {.v = &k, .n = 1, .files = 1};
  for (int torch_left = 0; torch_left <= 1; torch_left++) {
    gt_trace_t tr;
    gt_trace_init(&tr);
    for (int i = 0; i < 4; i++) gt_trace_add(&tr, "gt_sm90_grpd_bf16_enk_t128x8x128_s3_ks1", 0, 40, 1, false);
    if (torch_left)
      gt_trace_add(&tr, "void at::cuda::detail::prepare_grouped_gemm_data<cutlass::bfloat16_t>()",
                   0, 2, 1, false);
    gt_engage_report_t rep;
    assert_int_equal(gt_engage_build(&db, &stats, &rep), GT_OK);
    gt_engage_item_t *it = (gt_engage_item_t *)find_item(&rep, key);
    assert_true(gt_engage_expected_from_row(it->row, &it->expected));
    it->expected_known = true;
    gt_engage_judge(&db, &tr, true, NULL, &rep);
    if (torch_left) {
      assert_int_equal(it->verdict, GT_ENGAGE_PARTLY);
      assert_non_null(strstr(it->why, "torch's own grouped path"));
    } else {
      assert_int_equal(it->verdict, GT_ENGAGE_ENGAGED);
      assert_non_null(strstr(it->why, "did not run"));
    }
    gt_engage_report_free(&rep);
    gt_trace_free(&tr);
  }
  gt_db_free(&db);
  /* torch's kernels, mangled (CUPTI) and demangled, are recognised; others are not */
  assert_true(gt_grouped_is_torch_kernel(
      "_ZN7cutlass13device_kernelIN2at4cuda6detail25enable_3x_kernel_for_sm9xINS_4gemm6kernel13"
      "GemmUniversalINS5_17GroupProblemShapeIN4cute5tupleIJiiiEEEEE"));
  assert_false(gt_grouped_is_torch_kernel("cutlass_80_tensorop_bf16_s16816gemm_128x64"));
  assert_false(gt_grouped_is_torch_kernel("nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT"));
  /* The own grouped kernels are known by their instances' names (what the trace shows), so
   * verify needs no calibration run for a grouped row. */
  assert_true(gt_grouped_owns_kernel("gt_sm90_grpd_bf16_enk_t128x8x128_s3_ks1"));
  assert_false(gt_grouped_owns_kernel("gt_sm90_grpd_bf16_enk_t1x1x1_s9_ks9"));
  assert_false(gt_grouped_owns_kernel("gt_sm90_decode_bf16_tn_n1_r2_w8_u4_ks1_v8"));
  gt_row_kernels_t rk;
  assert_true(gt_grouped_row_kernels("gt_sm90_grpp_bf16_enk_t128x128x64_s6_ks1", NULL, &rk));
  assert_int_equal(rk.n, 1);
  assert_string_equal(rk.sym[0], "gt_sm90_grpp_bf16_enk_t128x128x64_s6_ks1");
}

/* GPU time shares and the Amdahl bound, by hand: 1000 ns of kernels, 400 ns of them the tuned
 * key's (speedup 2: 800 ns with the baseline), 100 ns another GEMM, 500 ns other work. */
static void test_gpu_time_and_amdahl(void **st) {
  (void)st;
  gt_db_t db;
  gt_db_init(&db);
  gt_db_row_t a = make_row(key_linear(1, 4096, 4096, 132), "kernels", PLAIN_INSTANCE, 2.0);
  gt_db_put(&db, &a);
  gt_shim_key_t k = shim_key(a.key, 2, 2, GT_SHIM_HIT);
  gt_shim_stats_t stats = {.v = &k, .n = 1, .files = 1};
  gt_trace_t tr;
  gt_trace_init(&tr);
  gt_trace_add(&tr, PLAIN_INSTANCE, 0, 200, 1, true);
  gt_trace_add(&tr, PLAIN_INSTANCE, 0, 200, 1, true);
  gt_trace_add(&tr, "nvjet_sm90_other", 0, 100, 1, false);
  gt_trace_add(&tr, "elementwise_kernel", 0, 500, 1, false);
  gt_engage_report_t rep;
  gt_engage_build(&db, &stats, &rep);
  assert_true(gt_engage_expected_from_row(rep.items[0].row, &rep.items[0].expected));
  rep.items[0].expected_known = true;
  gt_engage_judge(&db, &tr, true, NULL, &rep);
  assert_true(rep.pass);
  assert_true(fabs(rep.total_ns - 1000) < 1e-9);
  assert_true(fabs(rep.gemm_ns - 500) < 1e-9);
  assert_true(fabs(rep.gemm_share - 0.5) < 1e-12);
  assert_true(fabs(rep.tuned_ns - 400) < 1e-9);
  assert_true(fabs(rep.tuned_speedup - 2.0) < 1e-12);
  /* without the DB: 1400 ns, 800 of them the key's */
  assert_true(fabs(rep.tuned_share_base - 800.0 / 1400.0) < 1e-12);
  assert_true(fabs(rep.amdahl_gain - 1.4) < 1e-12);
  double f = rep.tuned_share_base, s = rep.tuned_speedup;
  assert_true(fabs(rep.amdahl_gain - 1.0 / (1.0 - f * (1.0 - 1.0 / s))) < 1e-12);
  /* every GEMM free: 1400 / 500 */
  assert_true(fabs(rep.gemm_ceiling - 2.8) < 1e-12);
  gt_engage_report_free(&rep);
  gt_trace_free(&tr);
  gt_db_free(&db);
}

/* ---- expected kernels and names -------------------------------------------------------------- */

static void test_kernel_match(void **st) {
  (void)st;
  static const struct { const char *expected, *ran; bool match; } cases[] = {
      {"gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4", "gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4", true},
      {"gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4", "gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v8", false},
      {"nvjet_sm90_tst_64x8_64x16_2x4_h_bx_NNT", "nvjet_sm90_tst_64x8_64x16_2x4_h_badd_NNT", true},
      {"nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT", "nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT", true},
      {"nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT", "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", false},
      {"nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT", "nvjet_sm90_tst_64x8_64x16_2x4_h_bz_NNT", false},
      {"nvjet_sm90_tst_64x8_64x16_2x4_h_bz_TNT", "nvjet_sm90_tst_64x8_64x16_2x4_h_bz", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (gt_engage_kernel_match(cases[i].expected, cases[i].ran) != cases[i].match)
      fail_msg("case %zu: %s vs %s should %smatch", i, cases[i].expected, cases[i].ran,
               cases[i].match ? "" : "not ");
  }
}

static void test_expected_from_row(void **st) {
  (void)st;
  gt_kset_t s;
  gt_db_row_t r = make_row(key_linear(1, 4096, 4096, 132), "kernels", SPLITK_INSTANCE, 1.5);
  assert_true(gt_engage_expected_from_row(&r, &s));
  assert_int_equal(s.n, 2);
  assert_true(gt_kset_has(&s, SPLITK_INSTANCE));
  assert_true(gt_kset_has(&s, "gt_sm90_splitk_reduce_bf16"));
  gt_kset_free(&s);
  r = make_row(key_linear(1, 4096, 4096, 132), "kernels", PLAIN_INSTANCE, 1.5);
  assert_true(gt_engage_expected_from_row(&r, &s));
  assert_int_equal(s.n, 1);
  gt_kset_free(&s);
  /* wg splits K inside a cluster: no reduce kernel runs, so none is expected */
  r = make_row(key_linear(32, 1024, 1024, 132), "kernels", "gt_sm90_wg_bf16_tn_t48x32x256_s3_ks2_p8",
               1.5);
  assert_true(gt_engage_expected_from_row(&r, &s));
  assert_int_equal(s.n, 1);
  assert_false(gt_kset_has(&s, "gt_sm90_splitk_reduce_bf16"));
  gt_kset_free(&s);
  r = make_row(key_linear(1, 4096, 4096, 132), "cublaslt", LT_INSTANCE, 1.5);
  assert_false(gt_engage_expected_from_row(&r, &s));
  assert_int_equal(s.n, 0);
}

/* A calibration trace: the harness's kernels (not the provider's, however often they ran) and
 * one-time set-up kernels are not the row's. */
static void test_expected_from_calibration(void **st) {
  (void)st;
  gt_trace_t t;
  gt_trace_init(&t);
  for (int i = 0; i < 17; i++) gt_trace_add(&t, "nvjet_sm90_tst_64x8", 0, 10, 1, i > 0);
  for (int i = 0; i < 17; i++) gt_trace_add(&t, "_ZN8cublasLt19splitKreduce_kernelE", 0, 2, 1, false);
  gt_trace_add(&t, "_ZN8cublasLt12init_kernelEv", 0, 1, 1, false);
  for (int i = 0; i < 40; i++) gt_trace_add(&t, "_Z18fill_random_kernelPvimyii", 0, 1, 1, false);
  gt_trace_add(&t, "_Z16reference_kernel7gt_cuk", 0, 1, 1, false);
  gt_kset_t s;
  assert_int_equal(gt_engage_expected_from_trace(&t, "cublaslt", &s), GT_OK);
  assert_int_equal(s.n, 2);
  assert_true(gt_kset_has(&s, "nvjet_sm90_tst_64x8"));
  assert_true(gt_kset_has(&s, "_ZN8cublasLt19splitKreduce_kernelE"));
  gt_kset_free(&s);
  gt_trace_free(&t);
  /* only harness kernels: the candidate never ran */
  gt_trace_init(&t);
  gt_trace_add(&t, "_Z18fill_random_kernelPvimyii", 0, 1, 1, false);
  assert_int_equal(gt_engage_expected_from_trace(&t, "cublaslt", &s), GT_ERR_NOT_FOUND);
  gt_trace_set_state(&t, GT_TRACE_UNVERIFIED, "no CUPTI");
  assert_int_equal(gt_engage_expected_from_trace(&t, "cublaslt", &s), GT_ERR_UNSUPPORTED);
  gt_trace_free(&t);
}

static void test_gemm_names(void **st) {
  (void)st;
  static const struct {
    const char *name;
    bool gemm;
  } k[] = {
      {"nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", true},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", true},
      {"_ZN7cutlass7Kernel2INS_4gemm6kernel", true},
      {"ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn", true},
      {"_Z17gemv2T_kernel_valIiiLi128E", true},
      {"_ZN8cublasLt19splitKreduce_kernelE", true},
      {"gt_sm90_tc_bf16_nn_t128x64x32_w2x2_s4_ks1_a8", true},
      {"gt_sm90_splitk_reduce_f16", true},
      {"_ZN2at6native29vectorized_elementwise_kernel", false},
      {"_ZN2at6native18reduce_kernelILi512", false},
      {"flash_fwd_kernel", false},
      {"fmha_cutlassF_bf16_aligned_64x64_rf_sm80", false},
      {"_Z18fill_random_kernelPvimyii", false},
      {"gt_sm12_tc_bf16_nn_t128x64x32_w2x2_s4_ks1_a8", false}, /* no family is built for it */
      {"cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x128x64_1x1x1_0_tnn_align8", true},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (gt_engage_is_gemm_name(k[i].name) != k[i].gemm) fail_msg("%s: gemm should be %d", k[i].name, k[i].gemm);
}

/* ---- end to end ------------------------------------------------------------------------------ */

static void test_metric_lines(void **st) {
  (void)st;
  static const struct {
    const char *line;
    bool ok;
    const char *name, *unit;
    double value;
  } k[] = {
      {"gemmtune-metric: step_time 1179.5 us\n", true, "step_time", "us", 1179.5},
      {"  gemmtune-metric:\tthroughput 812 tok/s", true, "throughput", "tok/s", 812},
      {"gemmtune-metric: step_time 1e3 us extra words", true, "step_time", "us", 1000},
      {"gemmtune-metric: step_time abc us", false, NULL, NULL, 0},
      {"gemmtune-metric: step_time 12", false, NULL, NULL, 0},
      {"gemmtune-metric: step_time 12us", false, NULL, NULL, 0},
      {"info gemmtune-metric: step_time 1 us", false, NULL, NULL, 0},
      {"gemmtune-metric:", false, NULL, NULL, 0},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    char name[64], unit[32];
    double v = 0;
    bool ok = gt_engage_parse_metric(k[i].line, name, sizeof name, &v, unit, sizeof unit);
    if (ok != k[i].ok) fail_msg("'%s': parsed %d, want %d", k[i].line, ok, k[i].ok);
    if (ok && (strcmp(name, k[i].name) || strcmp(unit, k[i].unit) || v != k[i].value))
      fail_msg("'%s': got %s %g %s", k[i].line, name, v, unit);
  }
  assert_true(gt_engage_metric_higher_better("tok/s"));
  assert_true(gt_engage_metric_higher_better("GB/s"));
  assert_false(gt_engage_metric_higher_better("us"));
  assert_false(gt_engage_metric_higher_better("ms/step"));
}

static void test_e2e_statistics(void **st) {
  (void)st;
  gt_e2e_t e;
  double with[] = {10, 10.2, 9.8, 10.1, 9.9}, without[] = {12, 12.3, 11.8, 12.1, 11.9};
  assert_int_equal(gt_engage_e2e(with, 5, without, 5, false, &e), GT_OK);
  assert_true(fabs(e.speedup - 1.2) < 1e-12);
  /* quartiles: with 9.9 .. 10.1, without 11.9 .. 12.1 */
  assert_true(fabs(e.speedup_lo - 11.9 / 10.1) < 1e-12);
  assert_true(fabs(e.speedup_hi - 12.1 / 9.9) < 1e-12);
  assert_true(e.significant);
  /* rates: higher is better, so the same numbers read the other way */
  assert_int_equal(gt_engage_e2e(with, 5, without, 5, true, &e), GT_OK);
  assert_true(fabs(e.speedup - 10.0 / 12.0) < 1e-12);
  assert_true(e.significant && e.speedup < 1);
  /* overlapping samples: within the noise */
  double a[] = {10, 11, 12, 13}, b[] = {10.5, 11.5, 12.5, 13.5};
  assert_int_equal(gt_engage_e2e(a, 4, b, 4, false, &e), GT_OK);
  assert_false(e.significant);
  assert_int_equal(gt_engage_e2e(a, 0, b, 4, false, &e), GT_ERR_USAGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scenarios),
      cmocka_unit_test(test_not_issued_names_the_field),
      cmocka_unit_test(test_shared_kernel_needs_both_keys_hits),
      cmocka_unit_test(test_grouped_replaces_torch_path),
      cmocka_unit_test(test_kept_key_is_not_a_near_miss),
      cmocka_unit_test(test_gpu_time_and_amdahl),
      cmocka_unit_test(test_kernel_match),
      cmocka_unit_test(test_expected_from_row),
      cmocka_unit_test(test_expected_from_calibration),
      cmocka_unit_test(test_gemm_names),
      cmocka_unit_test(test_metric_lines),
      cmocka_unit_test(test_e2e_statistics),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
