/* The fp64 reference GEMM: a hand-computed 2x2 product, agreement with a plain triple loop for
 * every transpose, padded leading dimensions, strided batches, beta != 0, fp8/int8 inputs and
 * sizes that take the blocked and threaded paths; epilogues (bias, relu, gelu with the tanh
 * approximation); integer outputs rounded half-even and saturated; fp8 outputs saturated. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_dtype.h"
#include "core/gt_problem.h"
#include "providers/gt_reference.h"

static void test_hand_computed_2x2(void **state) {
  (void)state;
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_F32;
  p.m = p.n = p.k = 2;
  gt_problem_fill_lds(&p);
  p.beta_zero = false;
  /* column-major A = [1 2; 3 4], B = [5 6; 7 8], C = [1 1; 1 1] */
  float A[] = {1, 3, 2, 4}, B[] = {5, 7, 6, 8}, C[] = {1, 1, 1, 1}, alpha = 2, beta = -1;
  gt_operands_t o = {.A = A, .B = B, .C = C, .alpha = &alpha, .beta = &beta};
  double ref[4];
  assert_int_equal(gt_reference_gemm(&p, &o, ref), GT_OK);
  /* A*B = [19 22; 43 50] -> 2*AB - 1 */
  assert_float_equal(ref[0], 37, 0);
  assert_float_equal(ref[1], 85, 0);
  assert_float_equal(ref[2], 43, 0);
  assert_float_equal(ref[3], 99, 0);
  /* beta == 0: C is not read (a NaN there must not leak in) */
  p.beta_zero = true;
  C[0] = NAN;
  assert_int_equal(gt_reference_gemm(&p, &o, ref), GT_OK);
  assert_float_equal(ref[0], 38, 0);
}

/* ---- agreement with a plain triple loop ------------------------------------------------------ */

typedef struct agree_case {
  const char *name;
  gt_dtype_t in, out, scale;
  gt_compute_t comp;
  gt_trans_t ta, tb;
  int64_t m, n, k, batch;
  int pad;
  bool beta;
} agree_case_t;

static const agree_case_t k_agree[] = {
    {"agrees_f32_NN_odd", GT_DT_F32, GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_N, 5, 7, 9, 1, 0, false},
    {"agrees_bf16_NT_padded_beta", GT_DT_BF16, GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_N, GT_TRANS_T, 13, 6, 300, 1, 3, true},
    {"agrees_f16_TN_batch3", GT_DT_F16, GT_DT_F16, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_N, 9, 11, 17, 3, 2, true},
    {"agrees_e4m3_TT", GT_DT_F8E4M3FN, GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_T, 8, 8, 64, 1, 0, false},
    {"agrees_e5m2_TN", GT_DT_F8E5M2, GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_N, 8, 4, 32, 1, 1, true},
    {"agrees_i8_i32_TN", GT_DT_I8, GT_DT_I32, GT_DT_I32, GT_COMPUTE_I32, GT_TRANS_T, GT_TRANS_N, 16, 12, 100, 1, 0, true},
    {"agrees_f64_NN", GT_DT_F64, GT_DT_F64, GT_DT_F64, GT_COMPUTE_F64, GT_TRANS_N, GT_TRANS_N, 6, 6, 6, 2, 0, true},
    {"agrees_threaded_blocked_path", GT_DT_F32, GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32, GT_TRANS_T, GT_TRANS_N, 70, 90, 700, 1, 1, true},
};

static uint64_t g_rng = 99;
static double draw_int(void) { /* [-4, 4] \ {0} */
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  int v = (int)((g_rng >> 33) % 8) - 4;
  return v >= 0 ? v + 1 : v;
}

static void test_agrees(void **state) {
  const agree_case_t *c = *state;
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = c->in;
  p.c_type = p.d_type = c->out;
  p.scale_type = c->scale;
  p.compute = c->comp;
  p.transa = c->ta, p.transb = c->tb;
  p.m = c->m, p.n = c->n, p.k = c->k, p.batch = c->batch;
  p.lda = (c->ta == GT_TRANS_N ? p.m : p.k) + c->pad;
  p.ldb = (c->tb == GT_TRANS_N ? p.k : p.n) + c->pad;
  p.ldc = p.m + c->pad;
  if (p.batch > 1) {
    p.stride_a = p.lda * (c->ta == GT_TRANS_N ? p.k : p.m) + 5;
    p.stride_b = p.ldb * (c->tb == GT_TRANS_N ? p.n : p.k) + 5;
    p.stride_c = p.ldc * p.n + 5;
  }
  p.beta_zero = !c->beta;
  size_t na = (size_t)(p.lda * (c->ta == GT_TRANS_N ? p.k : p.m) + (p.batch - 1) * p.stride_a);
  size_t nb = (size_t)(p.ldb * (c->tb == GT_TRANS_N ? p.n : p.k) + (p.batch - 1) * p.stride_b);
  size_t nc = (size_t)(p.ldc * p.n + (p.batch - 1) * p.stride_c);
  void *A = malloc(na * 8), *B = malloc(nb * 8), *C = malloc(nc * 8);
  for (size_t i = 0; i < na; i++) gt_store_elem(A, p.a_type, i, draw_int() / (c->in == GT_DT_I8 ? 1 : 4.0));
  for (size_t i = 0; i < nb; i++) gt_store_elem(B, p.b_type, i, draw_int() / (c->in == GT_DT_I8 ? 1 : 4.0));
  for (size_t i = 0; i < nc; i++) gt_store_elem(C, p.c_type, i, draw_int());
  uint64_t alpha_buf = 0, beta_buf = 0;
  gt_store_elem(&alpha_buf, p.scale_type, 0, c->scale == GT_DT_I32 ? 3 : 0.75);
  gt_store_elem(&beta_buf, p.scale_type, 0, c->scale == GT_DT_I32 ? -2 : -0.5);
  gt_operands_t o = {.A = A, .B = B, .C = C, .alpha = &alpha_buf, .beta = &beta_buf};
  double *ref = malloc(sizeof(double) * (size_t)(p.m * p.n * p.batch));
  assert_int_equal(gt_reference_gemm(&p, &o, ref), GT_OK);
  double alpha = gt_load_elem(&alpha_buf, p.scale_type, 0), beta = gt_load_elem(&beta_buf, p.scale_type, 0);
  for (int64_t b = 0; b < p.batch; b++)
    for (int64_t j = 0; j < p.n; j++)
      for (int64_t i = 0; i < p.m; i++) {
        double s = 0;
        for (int64_t q = 0; q < p.k; q++) {
          size_t ai = (size_t)(b * p.stride_a + (c->ta == GT_TRANS_N ? i + q * p.lda : q + i * p.lda));
          size_t bi = (size_t)(b * p.stride_b + (c->tb == GT_TRANS_N ? q + j * p.ldb : j + q * p.ldb));
          s += gt_load_elem(A, p.a_type, ai) * gt_load_elem(B, p.b_type, bi);
        }
        double want = alpha * s;
        if (c->beta) want += beta * gt_load_elem(C, p.c_type, (size_t)(b * p.stride_c + i + j * p.ldc));
        double got = ref[(b * p.n + j) * p.m + i];
        if (got != want) print_error("%s: (%lld,%lld,%lld) %g vs %g\n", c->name, (long long)b, (long long)i, (long long)j, got, want);
        assert_true(got == want); /* quarter-integers: every sum is exact in fp64 */
      }
  free(A), free(B), free(C), free(ref);
}

/* ---- epilogues and output conversions --------------------------------------------------------- */

typedef struct epi_case {
  const char *name;
  gt_epilogue_t epi;
  gt_dtype_t out;
  double acc, bias, expect; /* 1x1x1 GEMM: acc = a*b (alpha 1), bias of the output's bias type */
} epi_case_t;

static const epi_case_t k_epi[] = {
    {"epilogue_none", GT_EPI_NONE, GT_DT_F32, -1.5, 0, -1.5},
    {"epilogue_bias", GT_EPI_BIAS, GT_DT_F32, 1.5, 0.25, 1.75},
    {"epilogue_relu_clamps_negative", GT_EPI_RELU, GT_DT_F32, -1.5, 0, 0},
    {"epilogue_bias_relu", GT_EPI_BIAS_RELU, GT_DT_F32, -1.5, 2.0, 0.5},
    {"epilogue_gelu_tanh_approx_at_1", GT_EPI_GELU, GT_DT_F32, 1.0, 0, 0.8411919906082768},
    {"epilogue_gelu_tanh_approx_at_minus_1", GT_EPI_GELU, GT_DT_F32, -1.0, 0, -0.15880800939172324},
    {"epilogue_bias_gelu", GT_EPI_BIAS_GELU, GT_DT_F32, 0.5, 0.5, 0.8411919906082768},
    {"e4m3_output_saturates", GT_EPI_NONE, GT_DT_F8E4M3FN, 1000, 0, 448},
    {"e5m2_output_saturates", GT_EPI_NONE, GT_DT_F8E5M2, -1e6, 0, -57344},
    {"i8_output_saturates_high", GT_EPI_NONE, GT_DT_I8, 300, 0, 127},
    {"i8_output_saturates_low", GT_EPI_NONE, GT_DT_I8, -300, 0, -128},
    {"i8_output_rounds_half_even", GT_EPI_NONE, GT_DT_I8, 2.5, 0, 2},
    {"i32_output_rounds_half_even", GT_EPI_NONE, GT_DT_I32, -3.5, 0, -4},
};

static void test_epilogue(void **state) {
  const epi_case_t *c = *state;
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = GT_DT_F32;
  p.c_type = p.d_type = c->out;
  p.epilogue = c->epi;
  p.m = p.n = p.k = 1;
  gt_problem_fill_lds(&p);
  float a = (float)c->acc, b = 1, alpha = 1, beta = 0;
  uint64_t bias = 0;
  gt_store_elem(&bias, gt_reference_bias_type(&p), 0, c->bias);
  gt_operands_t o = {.A = &a, .B = &b, .alpha = &alpha, .beta = &beta, .bias = &bias};
  double ref;
  assert_int_equal(gt_reference_gemm(&p, &o, &ref), GT_OK);
  assert_float_equal(ref, c->expect, 1e-12);
}

static void test_missing_bias_refused(void **state) {
  (void)state;
  gt_problem_t p;
  gt_problem_init(&p);
  p.epilogue = GT_EPI_BIAS;
  p.m = p.n = p.k = 1;
  gt_problem_fill_lds(&p);
  uint16_t a = 0x3f80, b = 0x3f80;
  float alpha = 1;
  gt_operands_t o = {.A = &a, .B = &b, .alpha = &alpha};
  double ref;
  assert_int_equal(gt_reference_gemm(&p, &o, &ref), GT_ERR_USAGE);
  assert_non_null(strstr(gt_err_msg(), "bias"));
  assert_int_equal(gt_reference_bias_type(&p), GT_DT_BF16);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  struct CMUnitTest t[64];
  size_t n = 0;
  t[n++] = (struct CMUnitTest){"hand_computed_2x2", test_hand_computed_2x2, NULL, NULL, NULL};
  for (size_t i = 0; i < NELEM(k_agree); i++)
    t[n++] = (struct CMUnitTest){k_agree[i].name, test_agrees, NULL, NULL, (void *)&k_agree[i]};
  for (size_t i = 0; i < NELEM(k_epi); i++)
    t[n++] = (struct CMUnitTest){k_epi[i].name, test_epilogue, NULL, NULL, (void *)&k_epi[i]};
  t[n++] = (struct CMUnitTest){"missing_bias_refused", test_missing_bias_refused, NULL, NULL, NULL};
  return _cmocka_run_group_tests("reference", t, n, NULL, NULL);
}
