/* Instance names round-trip: for a table of problems, every candidate of every ready provider is
 * rebuilt by from_name(name) with the same name and the same parameter blob (directly and through
 * the registry). Malformed or non-canonical names are refused as not found; valid names that were
 * not enumerated still rebuild to themselves. Also: the registry's order and init caching. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_problem.h"
#include "providers/gt_provider.h"

typedef struct prob_case {
  const char *name;
  gt_dtype_t in, out;
  gt_compute_t comp;
  gt_trans_t ta, tb;
  int64_t m, n, k, batch;
  gt_epilogue_t epi;
  bool beta;
} prob_case_t;

static const prob_case_t k_probs[] = {
    {"names_bf16_NN_64x64x64", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_N, 64, 64, 64, 1, GT_EPI_NONE, false},
    {"names_bf16_TN_linear_16x4096x4096", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_N, 4096, 16, 4096, 1, GT_EPI_NONE, false},
    {"names_f32_TT_1x7x13_beta", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_T, 1, 7, 13, 1, GT_EPI_NONE, true},
    {"names_f16_NT_batch3", GT_DT_F16, GT_DT_F16, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_T, 33, 65, 129, 3, GT_EPI_NONE, false},
    {"names_f32_tf32", GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32, GT_TRANS_N, GT_TRANS_N, 128, 128, 128, 1, GT_EPI_NONE, false},
    {"names_i8_i32", GT_DT_I8, GT_DT_I32, GT_COMPUTE_I32, GT_TRANS_T, GT_TRANS_N, 64, 64, 64, 1, GT_EPI_NONE, false},
    {"names_e4m3_bf16", GT_DT_F8E4M3FN, GT_DT_BF16, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_N, 256, 16, 512, 1, GT_EPI_NONE, false},
    {"names_bf16_bias_gelu", GT_DT_BF16, GT_DT_BF16, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_N, 256, 8, 256, 1, GT_EPI_BIAS_GELU, false},
};

static gt_problem_t make(const prob_case_t *c) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = c->in;
  p.c_type = p.d_type = c->out;
  p.compute = c->comp;
  p.scale_type = c->comp == GT_COMPUTE_I32 ? GT_DT_I32 : GT_DT_F32;
  p.transa = c->ta, p.transb = c->tb;
  p.m = c->m, p.n = c->n, p.k = c->k, p.batch = c->batch;
  p.epilogue = c->epi;
  p.beta_zero = !c->beta;
  gt_problem_fill_lds(&p);
  return p;
}

static void check_same(const gt_candidate_t *a, const gt_candidate_t *b) {
  assert_string_equal(a->name, b->name);
  assert_ptr_equal(a->provider, b->provider);
  assert_memory_equal(a->blob, b->blob, GT_CAND_BLOB);
  assert_int_equal(a->is_baseline, b->is_baseline);
  assert_int_equal(a->splitk, b->splitk);
}

static void test_round_trip(void **state) {
  const prob_case_t *c = *state;
  gt_problem_t p = make(c);
  size_t checked = 0;
  for (size_t i = 0; i < gt_provider_count(); i++) {
    const gt_provider_t *pr = gt_provider_at(i);
    if (gt_provider_ready(pr) != GT_OK) continue;
    gt_cand_list_t l = {0};
    assert_int_equal(pr->enumerate(&p, NULL, &l), GT_OK);
    for (size_t j = 0; j < l.n; j++) {
      const gt_candidate_t *cand = &l.v[j];
      assert_ptr_equal(cand->provider, pr);
      assert_true(cand->name[0] != '\0');
      if (cand->excluded) assert_true(cand->reason[0] != '\0'); /* every exclusion says why */
      gt_candidate_t back, via_reg;
      gt_status_t s = pr->from_name(cand->name, &p, &back);
      if (cand->excluded && s == GT_ERR_UNSUPPORTED) continue; /* the name parsed; p is refused */
      if (s != GT_OK) print_error("%s: from_name(%s): %s\n", c->name, cand->name, gt_err_msg());
      assert_int_equal(s, GT_OK);
      check_same(cand, &back);
      assert_int_equal(gt_provider_candidate_from_name(pr->name, cand->name, &p, &via_reg), GT_OK);
      check_same(cand, &via_reg);
      checked++;
    }
    gt_cand_list_free(&l);
  }
  /* reference_f64 is always listed, and rebuilds by name */
  assert_true(checked >= 1);
}

/* ---- malformed and non-enumerated names ------------------------------------------------------ */

typedef struct name_case {
  const char *name;
  const char *instance;
  gt_status_t expect; /* GT_OK: rebuilds to itself */
} name_case_t;

static const name_case_t k_names[] = {
    {"name_unknown_kind_not_found", "cpu_warp_f32", GT_ERR_NOT_FOUND},
    {"name_bad_type_not_found", "cpu_naive_f33", GT_ERR_NOT_FOUND},
    {"name_alias_type_not_canonical", "cpu_naive_float", GT_ERR_NOT_FOUND},
    {"name_extra_token_not_found", "cpu_naive_f32_t64x64x64", GT_ERR_NOT_FOUND},
    {"name_missing_tile_not_found", "cpu_blk_f32_r8x4", GT_ERR_NOT_FOUND},
    {"name_no_microkernel_not_found", "cpu_blk_f32_t64x64x256_r3x3", GT_ERR_NOT_FOUND},
    {"name_block_not_multiple_of_tile", "cpu_blk_f32_t66x64x256_r8x4", GT_ERR_NOT_FOUND},
    {"name_leading_zero_not_canonical", "cpu_blk_f32_t064x64x256_r8x4", GT_ERR_NOT_FOUND},
    {"name_zero_threads_not_found", "cpu_par_f32_th0_t64x64x256_r8x4", GT_ERR_NOT_FOUND},
    {"name_other_provider_not_found", "cublas_default", GT_ERR_NOT_FOUND},
    {"name_other_dtype_unsupported", "cpu_naive_bf16", GT_ERR_UNSUPPORTED},
    {"name_unlisted_blocked_rebuilds", "cpu_blk_f32_t16x24x40_r4x8", GT_OK},
    {"name_unlisted_parallel_rebuilds", "cpu_par_f32_th3_t32x32x64_r4x4", GT_OK},
    {"name_reference_rebuilds", "reference_f64", GT_OK},
};

static void test_name(void **state) {
  const name_case_t *c = *state;
  prob_case_t pc = {"", GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_N, 40, 30, 20, 1, GT_EPI_NONE, false};
  gt_problem_t p = make(&pc);
  gt_candidate_t out;
  const char *prov = strncmp(c->instance, "reference", 9) == 0 ? "reference" : "cpu";
  gt_status_t s = gt_provider_candidate_from_name(prov, c->instance, &p, &out);
  if (s != c->expect) print_error("%s: got %s: %s\n", c->instance, gt_status_name(s), gt_err_msg());
  assert_int_equal(s, c->expect);
  if (s == GT_OK) assert_string_equal(out.name, c->instance);
  /* Without a provider the registry finds the owner by trying each. */
  if (c->expect == GT_OK) {
    assert_int_equal(gt_provider_candidate_from_name(NULL, c->instance, &p, &out), GT_OK);
    assert_string_equal(out.provider->name, prov);
  }
}

/* ---- registry -------------------------------------------------------------------------------- */

static void test_registry_order_and_find(void **state) {
  (void)state;
  size_t n = gt_provider_count();
  assert_true(n >= 3);
  /* host providers come last, in this order, in every build */
  assert_string_equal(gt_provider_at(n - 3)->name, "reference");
  assert_string_equal(gt_provider_at(n - 2)->name, "cpu");
  assert_string_equal(gt_provider_at(n - 1)->name, "testonly");
  assert_null(gt_provider_at(n));
  assert_ptr_equal(gt_provider_find("cpu"), gt_provider_at(n - 2));
  assert_null(gt_provider_find("nope"));
  assert_int_equal(gt_provider_candidate_from_name("nope", "x", NULL, NULL), GT_ERR_NOT_FOUND);
}

/* testonly is not enabled here: every call reports why, not only the first. */
static void test_unavailable_message_repeats(void **state) {
  (void)state;
  const gt_provider_t *t = gt_provider_find("testonly");
  assert_int_equal(gt_provider_ready(t), GT_ERR_UNSUPPORTED);
  assert_non_null(strstr(gt_err_msg(), "GEMMTUNE_TEST_PROVIDERS=1"));
  gt_err_clear();
  assert_int_equal(gt_provider_ready(t), GT_ERR_UNSUPPORTED);
  assert_non_null(strstr(gt_err_msg(), "GEMMTUNE_TEST_PROVIDERS=1"));
  assert_int_equal(gt_provider_ready(gt_provider_find("cpu")), GT_OK);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  unsetenv("GEMMTUNE_TEST_PROVIDERS");
  struct CMUnitTest t[64];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_probs); i++)
    t[n++] = (struct CMUnitTest){k_probs[i].name, test_round_trip, NULL, NULL, (void *)&k_probs[i]};
  for (size_t i = 0; i < NELEM(k_names); i++)
    t[n++] = (struct CMUnitTest){k_names[i].name, test_name, NULL, NULL, (void *)&k_names[i]};
  t[n++] = (struct CMUnitTest){"registry_order_and_find", test_registry_order_and_find, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"unavailable_message_repeats", test_unavailable_message_repeats, NULL, NULL, NULL};
  return _cmocka_run_group_tests("names", t, n, NULL, NULL);
}
