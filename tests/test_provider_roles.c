/* What providers answer for themselves through the registry, in every build: whether a row's
 * library dependency applies to the loaded library (and how the difference is named), which
 * kernels a row launches, which traced kernels are a provider's GEMM kernels and which
 * differently named kernels are one kernel. In a build without CUDA the CUDA providers' stand-ins
 * answer the kernel questions but are never listed, found or chosen as a baseline. A full space
 * spread for widening keeps every entry and samples all of it from the start. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "kernels/gt_kernel_name.h"
#include "providers/gt_provider.h"

/* ---- library dependency ---------------------------------------------------------------------- */

static const char *g_lib;
static const char *lib_now(void) { return g_lib; }
static const gt_provider_t k_libbed = {.api_version = GT_PROVIDER_API_VERSION,
                                       .name = "libbed",
                                       .backend = GT_BACKEND_CUDA,
                                       .lib_version = lib_now};
static const gt_provider_t k_nolib = {.api_version = GT_PROVIDER_API_VERSION,
                                      .name = "nolib",
                                      .backend = GT_BACKEND_HOST};

static void test_lib_applies(void **st) {
  (void)st;
  static const struct {
    const char *name;
    bool with_lib; /* the provider has lib_version (returning loaded) */
    const char *loaded, *row;
    bool applies;
    const char *why, *loaded_str;
  } k[] = {
      {"no dependency applies everywhere", true, "cublaslt=130400", "-", true, "", "cublaslt=130400"},
      {"empty dependency too", true, "cublaslt=130400", "", true, "", "cublaslt=130400"},
      {"the same version", true, "cublaslt=130400", "cublaslt=130400", true, "", "cublaslt=130400"},
      {"another version names the library once", true, "cublaslt=130400", "cublaslt=130100", false,
       "cublaslt: 130100 vs 130400", "cublaslt=130400"},
      {"another library", true, "cublaslt=130400", "cublas=130100", false,
       "library: cublas=130100 vs cublaslt=130400", "cublaslt=130400"},
      {"a provider reporting an empty version has none", true, "", "cublaslt=1", false,
       "library: cublaslt=1 vs -", "-"},
      {"a provider without lib_version has none", false, NULL, "cublaslt=1", false,
       "library: cublaslt=1 vs -", "-"},
      {"...and serves rows without a dependency", false, NULL, "-", true, "", "-"},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    g_lib = k[i].loaded;
    const gt_provider_t *p = k[i].with_lib ? &k_libbed : &k_nolib;
    char why[128] = "junk";
    bool a = gt_provider_lib_applies(p, k[i].row, why, sizeof why);
    if (a != k[i].applies || strcmp(why, k[i].why) != 0)
      fail_msg("%s: applies %d why '%s', want %d '%s'", k[i].name, a, why, k[i].applies, k[i].why);
    assert_int_equal(gt_provider_lib_applies(p, k[i].row, NULL, 0), k[i].applies);
    assert_string_equal(gt_provider_lib_loaded(p), k[i].loaded_str);
    printf("ok   - %s\n", k[i].name);
  }
}

/* ---- kernel identity ------------------------------------------------------------------------- */

#define SPLITK_DECODE "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks2_v8"
#define SPLITK_DECODETC "gt_sm90_decodetc_f16_tn_n16_m1_w1x8_u4_s2_ks2_v8"
#define SPLITK_WG "gt_sm90_wg_bf16_tn_t48x32x256_s3_ks2_p8"

static void test_row_kernels(void **st) {
  (void)st;
  static const struct {
    const char *provider, *instance;
    bool known, any;
    int n;
    const char *sym0, *sym1;
  } k[] = {
      /* own kernels: the instance is the symbol; split-K through the workspace adds the reduce */
      {"kernels", SPLITK_DECODE, true, false, 2, SPLITK_DECODE, "gt_sm90_splitk_reduce_bf16"},
      {"kernels", SPLITK_DECODETC, true, false, 2, SPLITK_DECODETC, "gt_sm90_splitk_reduce_f16"},
      /* wg splits K inside a cluster: no reduce kernel */
      {"kernels", SPLITK_WG, true, false, 1, SPLITK_WG, NULL},
      {"kernels", "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8", true, false, 1,
       "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8", NULL},
      {"kernels", "cublaslt_a66_t64x8_s0_k2_r1_w0_c0_l2x1", false, false, 0, NULL, NULL},
      /* the libraries pick their kernels at run time */
      {"cublaslt", "cublaslt_a66_t64x8_s0_k2_r1_w0_c0_l2x1", true, true, 0, NULL, NULL},
      {"cublas", "cublas_gemmex_default", true, true, 0, NULL, NULL},
      /* host providers and unknown names cannot say */
      {"cpu", "cpu_tile_64x64", false, false, 0, NULL, NULL},
      {"nope", SPLITK_DECODE, false, false, 0, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    gt_row_kernels_t rk;
    bool known = gt_provider_row_kernels(k[i].provider, k[i].instance, NULL, &rk);
    if (known != k[i].known || rk.any != k[i].any || rk.n != k[i].n)
      fail_msg("%s/%s: known %d any %d n %d, want %d %d %d", k[i].provider, k[i].instance, known,
               rk.any, rk.n, k[i].known, k[i].any, k[i].n);
    if (k[i].sym0) assert_string_equal(rk.sym[0], k[i].sym0);
    if (k[i].sym1) assert_string_equal(rk.sym[1], k[i].sym1);
  }
  gt_kparams_t kp;
  assert_int_equal(gt_kernel_name_parse(SPLITK_DECODETC, &kp), GT_OK);
  char buf[64];
  assert_int_equal(gt_kernel_reduce_symbol(&kp, buf, sizeof buf),
                   (int)strlen("gt_sm90_splitk_reduce_f16"));
  assert_string_equal(buf, "gt_sm90_splitk_reduce_f16");
  assert_int_equal(gt_kernel_reduce_symbol(&kp, buf, 4), (int)strlen("gt_sm90_splitk_reduce_f16"));
  assert_string_equal(buf, "gt_");
}

static void test_owned_kernels(void **st) {
  (void)st;
  static const struct {
    const char *provider, *kernel;
    bool owns;
  } k[] = {
      {"cublas", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", true},
      {"cublaslt", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", true},
      {"cublaslt", "_ZN8cublasLt19splitKreduce_kernelE", true},
      {"cublaslt", SPLITK_DECODE, false},
      {"kernels", SPLITK_DECODE, true},
      {"kernels", "gt_sm90_splitk_reduce_bf16", true},
      {"kernels", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", false},
      {"kernels", "gt_notanarch", false},
      {"cpu", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", false},
      {"nope", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", false},
      {NULL, "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", true},
      {NULL, SPLITK_DECODE, true},
      {NULL, "_ZN2at6native29vectorized_elementwise_kernel", false},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (gt_provider_owns_kernel(k[i].provider, k[i].kernel) != k[i].owns)
      fail_msg("%s owns %s should be %d", k[i].provider ? k[i].provider : "any", k[i].kernel,
               k[i].owns);
  assert_true(gt_provider_same_kernel("nvjet_sm90_tst_64x8_64x16_2x4_h_bx_NNT",
                                      "nvjet_sm90_tst_64x8_64x16_2x4_h_badd_NNT"));
  assert_false(gt_provider_same_kernel(SPLITK_DECODE, "gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks4_v8"));
  assert_true(gt_provider_same_kernel(SPLITK_DECODE, SPLITK_DECODE));
}

/* Stand-ins answer kernel questions only: the table, find and the baseline are as built. */
static void test_standins_are_not_providers(void **st) {
  (void)st;
  bool in_table = false;
  for (size_t i = 0; i < gt_provider_count(); i++)
    in_table |= strcmp(gt_provider_at(i)->name, "kernels") == 0;
  assert_int_equal(in_table, gt_provider_find("kernels") != NULL);
#ifndef GT_HAVE_CUDA
  assert_false(in_table);
  assert_null(gt_provider_find("cublas"));
  char why[200];
  assert_null(gt_provider_baseline(GT_BACKEND_CUDA, GT_ENTRY_GEMMEX, NULL, why, sizeof why));
  assert_non_null(strstr(why, "no provider stands for gemmex calls on cuda"));
#endif
}

/* ---- the order a full space is listed in ------------------------------------------------------- */

/* gt_cand_list_spread: the entries before `from` stay; the rest come in van der Corput order, so
 * the first widenings of a search sample all of it (the middle, then the quarters, ...). */
static void test_spread_order(void **state) {
  gt_cand_list_t l = {0};
  for (int i = 0; i < 10; i++) {
    gt_candidate_t c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "c%d", i);
    assert_int_equal(gt_cand_list_push(&l, &c), GT_OK);
  }
  assert_int_equal(gt_cand_list_spread(&l, 2), GT_OK);
  static const char *const want[] = {"c0", "c1", "c2", "c6", "c4", "c8", "c3", "c7", "c5", "c9"};
  for (int i = 0; i < 10; i++) assert_string_equal(l.v[i].name, want[i]);
  /* A range of fewer than three, or none, is left as it is. */
  assert_int_equal(gt_cand_list_spread(&l, 8), GT_OK);
  assert_string_equal(l.v[8].name, "c5");
  assert_int_equal(gt_cand_list_spread(&l, 10), GT_OK);
  gt_cand_list_free(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spread_order),
      cmocka_unit_test(test_lib_applies),
      cmocka_unit_test(test_row_kernels),
      cmocka_unit_test(test_owned_kernels),
      cmocka_unit_test(test_standins_are_not_providers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
