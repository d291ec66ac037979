/* gt_cublas_key: the key of a live cuBLAS/cuBLASLt call must be exactly the gt_problem_t the CLI
 * builds for the same GEMM (or a tuned row never matches), and anything the builder does not
 * fully understand must be refused with a reason.
 *
 * The cuBLAS arguments in these tables are written out the way an application passes them
 * (PyTorch's nn.Linear, a row-major D = A*B computed as D^T = B^T A^T), independently of
 * gt_problem_set_rowmajor, so the test checks the two mappings against each other. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/gt_cublas_key.h"
#include "core/gt_dtype.h"
#include "core/gt_problem.h"

enum { EP_GEMMEX, EP_STRIDED1, EP_STRIDED3, EP_SGEMM, EP_HGEMM, EP_LT, EP__COUNT };
static const char *const k_ep_names[EP__COUNT] = {
    "cublasGemmEx", "cublasGemmStridedBatchedEx(batch=1)", "cublasGemmStridedBatchedEx(batch=3)",
    "cublasSgemm_v2", "cublasHgemm", "cublasLtMatmul"};

/* Types as an application states them, and what the CLI says for the same GEMM. */
typedef struct type_case {
  const char *name;
  int ab, c;              /* cudaDataType_t of A/B and C/D */
  int compute;            /* cublasComputeType_t (cublasGemmEx / cuBLASLt) */
  int scale;              /* cudaDataType_t of alpha/beta (cuBLASLt) */
  int math;               /* handle math mode */
  gt_dtype_t g_ab, g_c, g_scale;
  gt_compute_t g_compute;
} type_case_t;

static const type_case_t k_gemmex_types[] = {
    {"bf16", GT_CUDA_R_16BF, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUDA_R_32F, 0, GT_DT_BF16, GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32},
    {"bf16 under TF32 math (PyTorch allow_tf32)", GT_CUDA_R_16BF, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUDA_R_32F, GT_CUBLAS_TF32_TENSOR_OP_MATH, GT_DT_BF16, GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32},
    {"f16", GT_CUDA_R_16F, GT_CUDA_R_16F, GT_CUBLAS_COMPUTE_32F, GT_CUDA_R_32F, 0, GT_DT_F16, GT_DT_F16, GT_DT_F32, GT_COMPUTE_F32},
    {"bf16 in, f32 out", GT_CUDA_R_16BF, GT_CUDA_R_32F, GT_CUBLAS_COMPUTE_32F, GT_CUDA_R_32F, 0, GT_DT_BF16, GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32},
    {"f32 fast tf32", GT_CUDA_R_32F, GT_CUDA_R_32F, GT_CUBLAS_COMPUTE_32F_FAST_TF32, GT_CUDA_R_32F, 0, GT_DT_F32, GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32},
    {"f16 with f16 compute", GT_CUDA_R_16F, GT_CUDA_R_16F, GT_CUBLAS_COMPUTE_16F, GT_CUDA_R_16F, 0, GT_DT_F16, GT_DT_F16, GT_DT_F16, GT_COMPUTE_F16},
    {"i8 to i32", GT_CUDA_R_8I, GT_CUDA_R_32I, GT_CUBLAS_COMPUTE_32I, GT_CUDA_R_32I, 0, GT_DT_I8, GT_DT_I32, GT_DT_I32, GT_COMPUTE_I32},
};
static const type_case_t k_sgemm_types[] = {
    {"f32 default math", 0, 0, 0, 0, GT_CUBLAS_DEFAULT_MATH, GT_DT_F32, GT_DT_F32, GT_DT_F32, GT_COMPUTE_F32},
    {"f32 under TF32 math", 0, 0, 0, 0, GT_CUBLAS_TF32_TENSOR_OP_MATH, GT_DT_F32, GT_DT_F32, GT_DT_F32, GT_COMPUTE_TF32},
};
static const type_case_t k_hgemm_types[] = {
    {"f16", 0, 0, 0, 0, 0, GT_DT_F16, GT_DT_F16, GT_DT_F16, GT_COMPUTE_F16},
};
static const type_case_t k_lt_types[] = {
    {"bf16", GT_CUDA_R_16BF, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUDA_R_32F, 0, GT_DT_BF16, GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32},
    {"f16 with f32 scale", GT_CUDA_R_16F, GT_CUDA_R_16F, GT_CUBLAS_COMPUTE_32F, GT_CUDA_R_32F, 0, GT_DT_F16, GT_DT_F16, GT_DT_F32, GT_COMPUTE_F32},
    {"e4m3 in, bf16 out", GT_CUDA_R_8F_E4M3, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUDA_R_32F, 0, GT_DT_F8E4M3FN, GT_DT_BF16, GT_DT_F32, GT_COMPUTE_F32},
};

/* Row-major shapes: layout code as the CLI takes it, and the cuBLAS call an application makes
 * for the row-major D[M,N] = A * B (operands swapped, since D^T = B^T A^T column-major). */
typedef struct shape_case {
  const char *layout;
  int64_t M, N, K;
  int ta, tb;                  /* cuBLAS transposes of the call */
  int64_t m, n, k, lda, ldb, ldc;
} shape_case_t;

static const shape_case_t k_shapes[] = {
    /* A[M,K] * B[K,N]: cuBLAS A = user B (N x K col-major view, op N) */
    {"mk,kn", 64, 96, 128, GT_CUBLAS_OP_N, GT_CUBLAS_OP_N, 96, 64, 128, 96, 128, 96},
    /* A[M,K] * B[N,K]^T (nn.Linear): op T on the weight */
    {"mk,nk", 16, 4096, 4096, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 4096, 16, 4096, 4096, 4096, 4096},
    /* A[K,M]^T * B[K,N] */
    {"km,kn", 48, 80, 32, GT_CUBLAS_OP_N, GT_CUBLAS_OP_T, 80, 48, 32, 80, 48, 80},
    /* A[K,M]^T * B[N,K]^T */
    {"km,nk", 40, 24, 56, GT_CUBLAS_OP_T, GT_CUBLAS_OP_T, 24, 40, 56, 56, 40, 24},
};

static const gt_cublas_env_t k_env_h200 = {.pointer_mode = GT_CUBLAS_POINTER_MODE_HOST,
                                           .math_mode = 0,
                                           .arch = "sm_90",
                                           .sm_count = 132};

/* What `gemmtune tune` builds for this GEMM: the CLI's row-major mapping plus the device. */
static gt_problem_t cli_problem(const type_case_t *t, const shape_case_t *s, int64_t batch,
                                bool beta_zero) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = t->g_ab;
  p.c_type = p.d_type = t->g_c;
  p.compute = t->g_compute;
  p.scale_type = t->g_scale;
  assert_int_equal(gt_problem_set_rowmajor(&p, s->layout, s->M, s->N, s->K), GT_OK);
  p.batch = batch;
  gt_problem_fill_lds(&p);
  p.beta_zero = beta_zero;
  snprintf(p.arch, sizeof p.arch, "sm_90");
  p.sm_count = 132;
  return p;
}

static void beta_bytes(int scale_cuda, double v, unsigned char out[8]) {
  memset(out, 0, 8);
  switch (scale_cuda) {
    case GT_CUDA_R_16F: {
      uint16_t h = gt_f32_to_f16((float)v);
      memcpy(out, &h, 2);
      break;
    }
    case GT_CUDA_R_32I: {
      int32_t i = (int32_t)v;
      memcpy(out, &i, 4);
      break;
    }
    case GT_CUDA_R_64F: memcpy(out, &v, 8); break;
    default: {
      float f = (float)v;
      memcpy(out, &f, 4);
    }
  }
}

static void lt_defaults(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t lay[4]) {
  memset(d, 0, sizeof *d);
  d->ok = true;
  d->compute_type = GT_CUBLAS_COMPUTE_32F;
  d->scale_type = GT_CUDA_R_32F;
  d->pointer_mode = GT_CUBLAS_POINTER_MODE_HOST;
  d->fill_mode = GT_CUBLAS_FILL_MODE_FULL;
  d->epilogue = GT_CUBLASLT_EPILOGUE_DEFAULT;
  d->bias_data_type = -1;
  for (int i = 0; i < 4; i++) {
    memset(&lay[i], 0, sizeof lay[i]);
    lay[i].ok = true;
    lay[i].batch_count = 1;
  }
}

static void lt_set_layouts(gt_cublaslt_layout_t lay[4], const type_case_t *t,
                           const shape_case_t *s, int32_t batch) {
  uint64_t ar = s->ta == GT_CUBLAS_OP_N ? s->m : s->k, ac = s->ta == GT_CUBLAS_OP_N ? s->k : s->m;
  uint64_t br = s->tb == GT_CUBLAS_OP_N ? s->k : s->n, bc = s->tb == GT_CUBLAS_OP_N ? s->n : s->k;
  lay[0] = (gt_cublaslt_layout_t){true, (uint32_t)t->ab, 0, ar, ac, s->lda, batch,
                                  batch > 1 ? (int64_t)(s->lda * ac) : 0, 0, 0};
  lay[1] = (gt_cublaslt_layout_t){true, (uint32_t)t->ab, 0, br, bc, s->ldb, batch,
                                  batch > 1 ? (int64_t)(s->ldb * bc) : 0, 0, 0};
  for (int i = 2; i < 4; i++)
    lay[i] = (gt_cublaslt_layout_t){true, (uint32_t)t->c, 0, (uint64_t)s->m, (uint64_t)s->n,
                                    s->ldc, batch, batch > 1 ? (int64_t)(s->ldc * s->n) : 0, 0, 0};
}

/* Build the live key for entry point ep, as the shim would from the call's arguments. */
static gt_status_t live_key(int ep, const type_case_t *t, const shape_case_t *s, double beta,
                            gt_problem_t *out) {
  gt_cublas_env_t env = k_env_h200;
  env.math_mode = t->math;
  unsigned char b[8];
  int scale_cuda = t->scale;
  switch (ep) {
    case EP_GEMMEX:
      beta_bytes(t->compute == GT_CUBLAS_COMPUTE_16F ? GT_CUDA_R_16F
                 : t->compute == GT_CUBLAS_COMPUTE_32I ? GT_CUDA_R_32I
                                                       : GT_CUDA_R_32F,
                 beta, b);
      return gt_cublas_key_gemm_ex(&env, s->ta, s->tb, s->m, s->n, s->k, t->ab, s->lda, t->ab,
                                   s->ldb, b, t->c, s->ldc, t->compute, GT_CUBLAS_GEMM_DEFAULT,
                                   out, NULL);
    case EP_STRIDED1:
    case EP_STRIDED3: {
      int64_t batch = ep == EP_STRIDED1 ? 1 : 3;
      int64_t ac = s->ta == GT_CUBLAS_OP_N ? s->k : s->m, bc = s->tb == GT_CUBLAS_OP_N ? s->n : s->k;
      beta_bytes(GT_CUDA_R_32F, beta, b);
      /* batch 1 with arbitrary strides: the strides mean nothing and must not enter the key */
      int64_t sa = batch > 1 ? s->lda * ac : 12345, sb = batch > 1 ? s->ldb * bc : 777;
      int64_t sc = batch > 1 ? s->ldc * s->n : 99;
      return gt_cublas_key_gemm_strided_batched_ex(&env, s->ta, s->tb, s->m, s->n, s->k, t->ab,
                                                   s->lda, sa, t->ab, s->ldb, sb, b, t->c, s->ldc,
                                                   sc, batch, t->compute, GT_CUBLAS_GEMM_DEFAULT,
                                                   out, NULL);
    }
    case EP_SGEMM: {
      float fb = (float)beta;
      return gt_cublas_key_sgemm(&env, s->ta, s->tb, s->m, s->n, s->k, s->lda, s->ldb, &fb,
                                 s->ldc, out, NULL);
    }
    case EP_HGEMM: {
      uint16_t hb = gt_f32_to_f16((float)beta);
      return gt_cublas_key_hgemm(&env, s->ta, s->tb, s->m, s->n, s->k, s->lda, s->ldb, &hb,
                                 s->ldc, out, NULL);
    }
    case EP_LT: {
      gt_cublaslt_desc_t d;
      gt_cublaslt_layout_t lay[4];
      lt_defaults(&d, lay);
      d.compute_type = t->compute;
      d.scale_type = t->scale;
      d.transa = s->ta;
      d.transb = s->tb;
      lt_set_layouts(lay, t, s, 1);
      beta_bytes(scale_cuda, beta, b);
      return gt_cublas_key_lt_matmul(&env, &d, lay, b, out, NULL);
    }
  }
  return GT_ERR_INTERNAL;
}

static void expect_same(const gt_problem_t *want, const gt_problem_t *got, const char *what) {
  char diff[1024];
  gt_problem_diff_str(got, want, diff, sizeof diff);
  if (!gt_problem_equal(want, got)) fail_msg("%s: live key differs from the CLI's: %s", what, diff);
}

static void check_entry(int ep, const type_case_t *types, size_t ntypes) {
  for (size_t ti = 0; ti < ntypes; ti++)
    for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++)
      for (int bz = 0; bz < 2; bz++) {
        const type_case_t *t = &types[ti];
        const shape_case_t *s = &k_shapes[si];
        char what[256];
        snprintf(what, sizeof what, "%s / %s / %s / beta=%d", k_ep_names[ep], t->name, s->layout,
                 bz ? 0 : 1);
        gt_problem_t got;
        gt_err_clear();
        gt_status_t st = live_key(ep, t, s, bz ? 0.0 : 1.0, &got);
        if (st != GT_OK) fail_msg("%s: refused: %s", what, gt_err_msg());
        gt_problem_t want = cli_problem(t, s, ep == EP_STRIDED3 ? 3 : 1, bz);
        expect_same(&want, &got, what);
      }
}

static void test_gemmex_matches_cli(void **st) {
  (void)st;
  check_entry(EP_GEMMEX, k_gemmex_types, sizeof k_gemmex_types / sizeof k_gemmex_types[0]);
}
static void test_strided_batch1_matches_cli(void **st) {
  (void)st;
  check_entry(EP_STRIDED1, k_gemmex_types, 1);
}
static void test_strided_batch3_matches_cli(void **st) {
  (void)st;
  check_entry(EP_STRIDED3, k_gemmex_types, 3);
}
static void test_sgemm_matches_cli(void **st) {
  (void)st;
  check_entry(EP_SGEMM, k_sgemm_types, sizeof k_sgemm_types / sizeof k_sgemm_types[0]);
}
static void test_hgemm_matches_cli(void **st) {
  (void)st;
  check_entry(EP_HGEMM, k_hgemm_types, 1);
}
static void test_lt_matches_cli(void **st) {
  (void)st;
  check_entry(EP_LT, k_lt_types, sizeof k_lt_types / sizeof k_lt_types[0]);
}

/* The example everyone checks first: PyTorch's bf16 F.linear, tokens=16, 4096 -> 4096. */
static void test_pytorch_linear_is_set_linear(void **st) {
  (void)st;
  gt_problem_t want;
  gt_problem_init(&want);
  gt_problem_set_linear(&want, 16, 4096, 4096);
  snprintf(want.arch, sizeof want.arch, "sm_90");
  want.sm_count = 132;
  float beta = 0.0f;
  gt_problem_t got;
  assert_int_equal(gt_cublas_key_gemm_ex(&k_env_h200, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 4096, 16,
                                         4096, GT_CUDA_R_16BF, 4096, GT_CUDA_R_16BF, 4096, &beta,
                                         GT_CUDA_R_16BF, 4096, GT_CUBLAS_COMPUTE_32F,
                                         GT_CUBLAS_GEMM_DEFAULT, &got, NULL),
                   GT_OK);
  expect_same(&want, &got, "F.linear 16x4096x4096");
}

/* Accepted spellings that mean the same GEMM. */
typedef struct equiv_case {
  const char *name;
  int ta, algo;
} equiv_case_t;
static const equiv_case_t k_equiv[] = {
    {"CUBLAS_GEMM_DEFAULT_TENSOR_OP is the default algorithm", GT_CUBLAS_OP_T, GT_CUBLAS_GEMM_DEFAULT_TENSOR_OP},
    {"OP_C on real data is OP_T", GT_CUBLAS_OP_C, GT_CUBLAS_GEMM_DEFAULT},
};

static void test_equivalent_spellings(void **st) {
  (void)st;
  gt_problem_t want;
  gt_problem_init(&want);
  gt_problem_set_linear(&want, 16, 4096, 4096);
  snprintf(want.arch, sizeof want.arch, "sm_90");
  want.sm_count = 132;
  for (size_t i = 0; i < sizeof k_equiv / sizeof k_equiv[0]; i++) {
    float beta = 0.0f;
    gt_problem_t got;
    gt_err_clear();
    if (gt_cublas_key_gemm_ex(&k_env_h200, k_equiv[i].ta, GT_CUBLAS_OP_N, 4096, 16, 4096,
                              GT_CUDA_R_16BF, 4096, GT_CUDA_R_16BF, 4096, &beta, GT_CUDA_R_16BF,
                              4096, GT_CUBLAS_COMPUTE_32F, k_equiv[i].algo, &got, NULL) != GT_OK)
      fail_msg("%s: refused: %s", k_equiv[i].name, gt_err_msg());
    expect_same(&want, &got, k_equiv[i].name);
  }
}

/* ---- refusals ----------------------------------------------------------------------------- */

typedef struct refuse_case {
  const char *name;
  const char *reason; /* substring the message must contain */
  /* cublasGemmEx arguments (bf16 F.linear 16x4096x4096 unless changed) */
  int pointer_mode, math_mode, ta, m, lda, atype, compute, algo;
  bool null_beta;
  bool keyed; /* with a mark: keyed and marked (a GEMM that runs), else not keyed at all */
} refuse_case_t;

static const refuse_case_t k_refuse_gemmex[] = {
    {"device pointer mode (beta unreadable)", "pointer mode device", 1, 0, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, true},
    {"explicit algorithm", "non-default algo", 0, 0, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, 5, false, true},
    {"autotune algorithm", "non-default algo", 0, 0, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, 999, false, true},
    {"pedantic compute", "pedantic", 0, 0, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F_PEDANTIC, GT_CUBLAS_GEMM_DEFAULT, false, true},
    {"emulated compute", "emulated", 0, 0, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F_EMULATED_16BFX9, GT_CUBLAS_GEMM_DEFAULT, false, true},
    {"pedantic math mode", "math mode", 0, GT_CUBLAS_PEDANTIC_MATH, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, true},
    {"no reduced-precision reduction, bf16 out", "reduced-precision", 0, GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, true},
    {"unknown math flag", "flag bits", 0, 0x100, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, true},
    {"complex data", "data type", 0, 0, GT_CUBLAS_OP_T, 4096, 4096, 4 /* CUDA_C_32F */, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, false},
    {"unknown transpose", "transa", 0, 0, 7, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, false},
    {"m = 0 (nothing to do)", "not a tunable GEMM", 0, 0, GT_CUBLAS_OP_T, 0, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, false},
    {"lda below the rows of A", "lda", 0, 0, GT_CUBLAS_OP_T, 4096, 100, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, false, false},
    {"beta NULL", "beta is NULL", 0, 0, GT_CUBLAS_OP_T, 4096, 4096, GT_CUDA_R_16BF, GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, true, false},
};

static void test_gemmex_refusals(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_refuse_gemmex / sizeof k_refuse_gemmex[0]; i++) {
    const refuse_case_t *r = &k_refuse_gemmex[i];
    gt_cublas_env_t env = k_env_h200;
    env.pointer_mode = r->pointer_mode;
    env.math_mode = r->math_mode;
    float beta = 0.0f;
    gt_problem_t got;
    gt_err_clear();
    gt_status_t s = gt_cublas_key_gemm_ex(&env, r->ta, GT_CUBLAS_OP_N, r->m, 16, 4096, r->atype,
                                          r->lda, r->atype, 4096, r->null_beta ? NULL : &beta,
                                          r->atype, 4096, r->compute, r->algo, &got, NULL);
    if (s != GT_ERR_UNSUPPORTED)
      fail_msg("%s: expected GT_ERR_UNSUPPORTED, got %s", r->name, gt_status_name(s));
    if (!strstr(gt_err_msg(), r->reason))
      fail_msg("%s: reason '%s' does not mention '%s'", r->name, gt_err_msg(), r->reason);
  }
}

/* fp32 routines: whether TF32 is used under a math mode is the library's call, except in the
 * typed Sgemm where the math mode is the documented switch. */
static void test_fp32_math_mode_rules(void **st) {
  (void)st;
  gt_cublas_env_t env = k_env_h200;
  env.math_mode = GT_CUBLAS_TF32_TENSOR_OP_MATH;
  float beta = 0.0f;
  gt_problem_t got;
  assert_int_equal(gt_cublas_key_gemm_ex(&env, GT_CUBLAS_OP_N, GT_CUBLAS_OP_N, 64, 64, 64,
                                         GT_CUDA_R_32F, 64, GT_CUDA_R_32F, 64, &beta,
                                         GT_CUDA_R_32F, 64, GT_CUBLAS_COMPUTE_32F,
                                         GT_CUBLAS_GEMM_DEFAULT, &got, NULL),
                   GT_ERR_UNSUPPORTED);
  env.math_mode = GT_CUBLAS_PEDANTIC_MATH;
  assert_int_equal(gt_cublas_key_sgemm(&env, GT_CUBLAS_OP_N, GT_CUBLAS_OP_N, 64, 64, 64, 64, 64,
                                       &beta, 64, &got, NULL),
                   GT_ERR_UNSUPPORTED);
  /* the reduction flag cannot narrow an fp32 output */
  env.math_mode = GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  assert_int_equal(gt_cublas_key_sgemm(&env, GT_CUBLAS_OP_N, GT_CUBLAS_OP_N, 64, 64, 64, 64, 64,
                                       &beta, 64, &got, NULL),
                   GT_OK);
  assert_int_equal(got.compute, GT_COMPUTE_F32);
}

/* cuBLASLt descriptors with something the key cannot express. */
typedef struct lt_refuse_case {
  const char *name;
  const char *reason;
  void (*mutate)(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t lay[4]);
  bool keyed; /* with a mark: keyed and marked, else not keyed at all */
} lt_refuse_case_t;

static void m_ptr_device(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->pointer_mode = 1; }
static void m_scale_ptr(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->scale_ptr[0] = (void *)0x1000; }
static void m_amax(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->scale_ptr[4] = (void *)0x1000; }
static void m_scale_mode(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->scale_mode[1] = 2; }
static void m_fast_accum(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->fast_accum = 1; }
static void m_ldd(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)d; l[3].ld += 8; }
static void m_aux_epi(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->epilogue = 2 | 128; }
static void m_bias_no_ptr(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->epilogue = GT_CUBLASLT_EPILOGUE_BIAS; }
static void m_bias_type(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->epilogue = GT_CUBLASLT_EPILOGUE_BIAS; d->bias = (void *)0x1000; d->bias_data_type = GT_CUDA_R_32F; }
static void m_row_order(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)d; l[1].order = 1; }
static void m_sm_target(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->sm_count_target = 66; }
static void m_batch_mismatch(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)d; l[0].batch_count = 2; }
static void m_transc(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->transc = 1; }
static void m_unreadable(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->ok = false; }
static void m_layout_unreadable(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)d; l[2].ok = false; }
static void m_dims(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)d; l[1].rows += 1; }
static void m_emulation(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) { (void)l; d->emulation_desc = (void *)0x1000; }
static void m_d_stride(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t *l) {
  (void)d;
  for (int i = 0; i < 4; i++) l[i].batch_count = 2;
  l[0].batch_stride = 4096 * 4096;
  l[1].batch_stride = 4096 * 16;
  l[2].batch_stride = 4096 * 16;
  l[3].batch_stride = 4096 * 32;
}

static const lt_refuse_case_t k_refuse_lt[] = {
    {"device pointer mode", "pointer mode", m_ptr_device, true},
    {"scale pointer on a bf16 A", "A scale pointer on a bf16 operand", m_scale_ptr, true},
    {"amax pointer", "amax", m_amax, true},
    {"block scaling mode", "scaling mode", m_scale_mode, true},
    {"fp8 fast accumulation", "fast accumulation", m_fast_accum, true},
    {"ldd != ldc", "ldd", m_ldd, true},
    {"epilogue with aux output", "epilogue", m_aux_epi, true},
    {"bias epilogue without bias", "bias pointer", m_bias_no_ptr, false},
    {"bias of another type", "bias type", m_bias_type, true},
    {"row-major layout", "order", m_row_order, true},
    {"SM count target", "SM count target", m_sm_target, true},
    {"batch counts differ", "batch counts", m_batch_mismatch, false},
    {"transc", "transc", m_transc, false},
    {"descriptor unreadable", "unreadable", m_unreadable, false},
    {"layout unreadable", "unreadable", m_layout_unreadable, false},
    {"inconsistent dims", "inconsistent", m_dims, false},
    {"emulation descriptor", "emulation", m_emulation, true},
    {"D batch stride != C batch stride", "batch stride", m_d_stride, true},
};

static void lt_linear(gt_cublaslt_desc_t *d, gt_cublaslt_layout_t lay[4]) {
  lt_defaults(d, lay);
  d->transa = GT_CUBLAS_OP_T;
  d->transb = GT_CUBLAS_OP_N;
  lt_set_layouts(lay, &k_lt_types[0], &k_shapes[1], 1);
}

static void test_lt_refusals(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_refuse_lt / sizeof k_refuse_lt[0]; i++) {
    gt_cublaslt_desc_t d;
    gt_cublaslt_layout_t lay[4];
    lt_linear(&d, lay);
    float beta = 0.0f;
    gt_problem_t got;
    /* the unmodified descriptor is accepted: each refusal is caused by its one change */
    gt_err_clear();
    if (gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, NULL) != GT_OK)
      fail_msg("%s: baseline descriptor refused: %s", k_refuse_lt[i].name, gt_err_msg());
    k_refuse_lt[i].mutate(&d, lay);
    gt_err_clear();
    gt_status_t s = gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, NULL);
    if (s != GT_ERR_UNSUPPORTED)
      fail_msg("%s: expected GT_ERR_UNSUPPORTED, got %s", k_refuse_lt[i].name, gt_status_name(s));
    if (!strstr(gt_err_msg(), k_refuse_lt[i].reason))
      fail_msg("%s: reason '%s' does not mention '%s'", k_refuse_lt[i].name, gt_err_msg(),
               k_refuse_lt[i].reason);
  }
}

/* Epilogues the key expresses map onto it. */
static void test_lt_bias_epilogue_in_key(void **st) {
  (void)st;
  static const struct {
    const char *name;
    uint32_t lt;
    gt_epilogue_t want;
  } cases[] = {
      {"bias", GT_CUBLASLT_EPILOGUE_BIAS, GT_EPI_BIAS},
      {"relu+bias", GT_CUBLASLT_EPILOGUE_RELU_BIAS, GT_EPI_BIAS_RELU},
      {"gelu+bias", GT_CUBLASLT_EPILOGUE_GELU_BIAS, GT_EPI_BIAS_GELU},
      {"relu", GT_CUBLASLT_EPILOGUE_RELU, GT_EPI_RELU},
      {"gelu", GT_CUBLASLT_EPILOGUE_GELU, GT_EPI_GELU},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gt_cublaslt_desc_t d;
    gt_cublaslt_layout_t lay[4];
    lt_linear(&d, lay);
    d.epilogue = cases[i].lt;
    d.bias = (void *)0x1000;
    float beta = 0.0f;
    gt_problem_t got;
    gt_err_clear();
    if (gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, NULL) != GT_OK)
      fail_msg("%s: refused: %s", cases[i].name, gt_err_msg());
    if (got.epilogue != cases[i].want)
      fail_msg("%s: epilogue %s, want %s", cases[i].name, gt_epilogue_name(got.epilogue),
               gt_epilogue_name(cases[i].want));
  }
}

/* cudaDataType_t values are ABI: a wrong constant would silently mis-key every call. */
static void test_cuda_enum_values(void **st) {
  (void)st;
  static const struct {
    const char *name;
    int value, expect;
  } cases[] = {
      {"CUDA_R_32F", GT_CUDA_R_32F, 0},          {"CUDA_R_64F", GT_CUDA_R_64F, 1},
      {"CUDA_R_16F", GT_CUDA_R_16F, 2},          {"CUDA_R_8I", GT_CUDA_R_8I, 3},
      {"CUDA_R_32I", GT_CUDA_R_32I, 10},         {"CUDA_R_16BF", GT_CUDA_R_16BF, 14},
      {"CUDA_R_8F_E4M3", GT_CUDA_R_8F_E4M3, 28}, {"CUDA_R_8F_E5M2", GT_CUDA_R_8F_E5M2, 29},
      {"CUBLAS_COMPUTE_32F", GT_CUBLAS_COMPUTE_32F, 68},
      {"CUBLAS_COMPUTE_32F_FAST_TF32", GT_CUBLAS_COMPUTE_32F_FAST_TF32, 77},
      {"CUBLAS_GEMM_DEFAULT", GT_CUBLAS_GEMM_DEFAULT, -1},
      {"CUBLASLT_EPILOGUE_GELU_BIAS", GT_CUBLASLT_EPILOGUE_GELU_BIAS, 36},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (cases[i].value != cases[i].expect)
      fail_msg("%s is %d, CUDA 13 says %d", cases[i].name, cases[i].value, cases[i].expect);
}

/* ---- marks: keyed, but never tuned ----------------------------------------------------------- */

static void expect_mark(const char *what, gt_status_t s, const gt_cublas_mark_t *mk, bool keyed,
                        const char *reason) {
  if (!keyed) {
    if (s != GT_ERR_UNSUPPORTED)
      fail_msg("%s: with a mark: expected not keyed, got %s", what, gt_status_name(s));
    return;
  }
  if (s != GT_OK) fail_msg("%s: with a mark: expected a marked key, got %s: %s", what,
                           gt_status_name(s), gt_err_msg());
  if (!strstr(mk->why, reason)) fail_msg("%s: mark '%s' does not mention '%s'", what, mk->why, reason);
  if (strchr(mk->why, ',')) fail_msg("%s: mark '%s' holds a comma (it is a CSV cell)", what, mk->why);
}

/* Each refusal of cublasGemmEx is either a GEMM that runs (keyed with a mark, recorded by
 * capture) or a call that cannot be keyed at all. */
static void test_gemmex_marks(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_refuse_gemmex / sizeof k_refuse_gemmex[0]; i++) {
    const refuse_case_t *r = &k_refuse_gemmex[i];
    gt_cublas_env_t env = k_env_h200;
    env.pointer_mode = r->pointer_mode;
    env.math_mode = r->math_mode;
    float beta = 0.0f;
    gt_problem_t got;
    gt_cublas_mark_t mk = {{0}};
    gt_err_clear();
    gt_status_t s = gt_cublas_key_gemm_ex(&env, r->ta, GT_CUBLAS_OP_N, r->m, 16, 4096, r->atype,
                                          r->lda, r->atype, 4096, r->null_beta ? NULL : &beta,
                                          r->atype, 4096, r->compute, r->algo, &got, &mk);
    expect_mark(r->name, s, &mk, r->keyed, r->reason);
    if (r->keyed && (got.m != r->m || got.n != 16 || got.k != 4096))
      fail_msg("%s: marked key has the wrong shape", r->name);
  }
  /* device pointer mode: beta is never read, C counted as read */
  gt_cublas_env_t env = k_env_h200;
  env.pointer_mode = GT_CUBLAS_POINTER_MODE_DEVICE;
  gt_problem_t got;
  gt_cublas_mark_t mk = {{0}};
  assert_int_equal(gt_cublas_key_gemm_ex(&env, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 4096, 16, 4096,
                                         GT_CUDA_R_16BF, 4096, GT_CUDA_R_16BF, 4096,
                                         (void *)0x10 /* a device pointer: never read */,
                                         GT_CUDA_R_16BF, 4096, GT_CUBLAS_COMPUTE_32F,
                                         GT_CUBLAS_GEMM_DEFAULT, &got, &mk),
                   GT_OK);
  assert_false(got.beta_zero);
}

static void test_lt_marks(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_refuse_lt / sizeof k_refuse_lt[0]; i++) {
    gt_cublaslt_desc_t d;
    gt_cublaslt_layout_t lay[4];
    lt_linear(&d, lay);
    k_refuse_lt[i].mutate(&d, lay);
    float beta = 0.0f;
    gt_problem_t got;
    gt_cublas_mark_t mk = {{0}};
    gt_err_clear();
    gt_status_t s = gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, &mk);
    expect_mark(k_refuse_lt[i].name, s, &mk, k_refuse_lt[i].keyed, k_refuse_lt[i].reason);
  }
  /* an fp8 call with tensorwise scale pointers: keyed with its fp8 types and scaling, tunable */
  gt_cublaslt_desc_t d;
  gt_cublaslt_layout_t lay[4];
  lt_defaults(&d, lay);
  d.transa = GT_CUBLAS_OP_T;
  d.transb = GT_CUBLAS_OP_N;
  lt_set_layouts(lay, &k_lt_types[2], &k_shapes[1], 1);
  d.scale_ptr[0] = d.scale_ptr[1] = (void *)0x1000;
  float beta = 0.0f;
  gt_problem_t got;
  gt_cublas_mark_t mk = {{0}};
  assert_int_equal(gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, &mk), GT_OK);
  assert_int_equal(got.a_type, GT_DT_F8E4M3FN);
  assert_int_equal(got.scale_a, GT_SCALE_TENSOR);
  assert_int_equal(got.scale_b, GT_SCALE_TENSOR);
  assert_string_equal(mk.why, "");
  /* and the same call without scales is another key, also tunable */
  memset(d.scale_ptr, 0, sizeof d.scale_ptr);
  assert_int_equal(gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, &mk), GT_OK);
  assert_int_equal(got.scale_a, GT_SCALE_NONE);
  assert_string_equal(mk.why, "");
}

/* fp8 cublasLtMatmul descriptors as applications set them (torch._scaled_mm on sm_90 sets the A
 * and B scale pointers, their modes and FAST_ACCUM, probe of torch 2.11): the scaling each one
 * states lands in the key, and what the key cannot state marks the call. */
typedef struct fp8_case {
  const char *name;
  int32_t ab_type, b_type, d_type; /* cudaDataType_t of A, B (0 = A's), C and D */
  const void *ptr[8];              /* scale pointers, GT_LT_SCALE_* order */
  int32_t mode[6];
  int8_t fast_accum;
  gt_scale_mode_t want_a, want_b;
  bool want_fast, want_scale_d, want_amax;
  const char *mark; /* NULL: tunable; else a substring of the mark */
} fp8_case_t;

#define P1 ((const void *)0x1000)
#define P2 ((const void *)0x2000)
static const fp8_case_t k_fp8_lt[] = {
    {"torch tensorwise (modes set to scalar, fast accum off)", GT_CUDA_R_8F_E4M3, 0,
     GT_CUDA_R_16BF, {P1, P1}, {0, 0}, 0, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0, NULL},
    {"torch tensorwise, use_fast_accum", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2}, {0, 0},
     1, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 1, 0, 0, NULL},
    {"torch rowwise (OUTER_VEC_32F on both)", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2},
     {3, 3}, 0, GT_SCALE_OUTER, GT_SCALE_OUTER, 0, 0, 0, NULL},
    /* torch's DeepSeek call: its weight (128x128) is cuBLASLt's A, its activations (1x128) B */
    {"DeepSeek blockwise: A 128x128, B 1x128", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2},
     {5, 4}, 0, GT_SCALE_BLK128X128, GT_SCALE_BLK1X128, 0, 0, 0, NULL},
    {"blockwise: A 1x128, B 128x128", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2}, {4, 5}, 0,
     GT_SCALE_BLK1X128, GT_SCALE_BLK128X128, 0, 0, 0, NULL},
    {"blockwise: 1x128 on both", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2}, {4, 4}, 0,
     GT_SCALE_BLK1X128, GT_SCALE_BLK1X128, 0, 0, 0, NULL},
    /* pairs and shapes cuBLASLt has no kernel for: run (and fail) as issued */
    {"blockwise: 128x128 on both", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2}, {5, 5}, 0,
     GT_SCALE_BLK128X128, GT_SCALE_BLK128X128, 0, 0, 0, "128x128 block scales on both A and B"},
    {"blockwise A, tensorwise B", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2}, {5, 0}, 0,
     GT_SCALE_BLK128X128, GT_SCALE_TENSOR, 0, 0, 0, "a block scale mode on one operand only"},

    {"e4m3 x e5m2, only B scaled", GT_CUDA_R_8F_E4M3, GT_CUDA_R_8F_E5M2, GT_CUDA_R_32F,
     {NULL, P2}, {0, 0}, 0, GT_SCALE_NONE, GT_SCALE_TENSOR, 0, 0, 0, NULL},
    {"e5m2 x e4m3, unscaled", GT_CUDA_R_8F_E5M2, GT_CUDA_R_8F_E4M3, GT_CUDA_R_16F, {NULL},
     {0}, 0, GT_SCALE_NONE, GT_SCALE_NONE, 0, 0, 0, NULL},
    {"fp8 D with its scale and amax", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_8F_E4M3,
     {P1, P1, NULL, P2, P2}, {0}, 0, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 1, 1, NULL},
    {"bf16 D with amax", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P1, NULL, NULL, P2}, {0}, 0,
     GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 1, NULL},
    {"D scale on a bf16 D", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P1, NULL, P2}, {0}, 0,
     GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0, 0, "D scale pointer with a bf16 D"},
    {"a C scale", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P1, P2}, {0}, 0, GT_SCALE_TENSOR,
     GT_SCALE_TENSOR, 0, 0, 0, "C scale pointer"},
    {"Blackwell VEC32_UE8M0 block format", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {P1, P2},
     {2, 2}, 0, GT_SCALE_NONE, GT_SCALE_NONE, 0, 0, 0, "scaling mode 2 is not keyed"},
    {"block mode without its array", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_16BF, {NULL, P2}, {4, 0},
     0, GT_SCALE_NONE, GT_SCALE_TENSOR, 0, 0, 0, "A scaling mode 4 without a scale pointer"},
    {"D scaling mode", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_8F_E4M3, {P1, P1, NULL, P2},
     {0, 0, 0, 3}, 0, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 1, 0, "scaling mode 3 of D"},
    {"D out scale (block-scaled D)", GT_CUDA_R_8F_E4M3, 0, GT_CUDA_R_8F_E4M3,
     {P1, P1, NULL, NULL, NULL, NULL, NULL, P2}, {0}, 0, GT_SCALE_TENSOR, GT_SCALE_TENSOR, 0, 0,
     0, "D out scale"},
};
#undef P1
#undef P2

/* The fp8 fields in key text: left out at their defaults (a bf16 key's text and hash are what
 * they were before the fields existed), printed and parsed back when set, named in a miss, and
 * refused where they mean nothing (a scale on a bf16 operand). */
static void test_fp8_key_text_and_diff(void **st) {
  (void)st;
  gt_problem_t p;
  gt_problem_init(&p);
  gt_problem_set_linear(&p, 16, 4096, 4096);
  char text[1024];
  gt_problem_format_key(&p, text, sizeof text);
  assert_null(strstr(text, "scale_a"));
  assert_null(strstr(text, "fast_accum"));
  assert_string_equal(text, "op=gemm,a_type=bf16,b_type=bf16,c_type=bf16,d_type=bf16,compute=f32,"
                            "scale_type=f32,transa=T,transb=N,m=4096,n=16,k=4096,lda=4096,"
                            "ldb=4096,ldc=4096,batch=1,stride_a=0,stride_b=0,stride_c=0,"
                            "epilogue=none,beta_zero=1,arch=cpu,sm_count=0");
  gt_problem_t q = p;
  q.a_type = q.b_type = GT_DT_F8E4M3FN;
  q.scale_a = q.scale_b = GT_SCALE_OUTER;
  q.fast_accum = true;
  gt_problem_format_key(&q, text, sizeof text);
  assert_non_null(strstr(text, ",sm_count=0,scale_a=outer_f32,scale_b=outer_f32,fast_accum=1"));
  assert_null(strstr(text, "scale_d"));
  gt_problem_t back;
  gt_problem_init(&back);
  assert_int_equal(gt_problem_parse_key(text, &back), GT_OK);
  assert_true(gt_problem_equal(&back, &q));
  gt_problem_t r = q;
  r.scale_b = GT_SCALE_TENSOR;
  r.fast_accum = false;
  char diff[256];
  gt_problem_diff_str(&q, &r, diff, sizeof diff);
  assert_string_equal(diff, "scale_b: outer_f32 vs tensor_f32, fast_accum: 1 vs 0");
  assert_true(gt_problem_hash(&q) != gt_problem_hash(&r));
  char desc[256];
  gt_problem_describe(&q, desc, sizeof desc);
  assert_non_null(strstr(desc, "f8e4m3fnxf8e4m3fn(outer_f32,outer_f32) fast_accum TN"));
  /* a scale on a bf16 operand, a D scale on a bf16 D: not keys */
  gt_problem_t bad = p;
  bad.scale_a = GT_SCALE_TENSOR;
  assert_int_equal(gt_problem_validate(&bad), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "field 'scale_a'"));
  bad = q;
  bad.scale_d = true;
  assert_int_equal(gt_problem_validate(&bad), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "field 'scale_d'"));
  gt_problem_init(&back);
  assert_int_equal(gt_problem_parse_key("scale_a=rowwise", &back), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "unknown scale mode 'rowwise'"));
}

static void test_lt_fp8_scaling_in_key(void **st) {
  (void)st;
  for (size_t i = 0; i < sizeof k_fp8_lt / sizeof k_fp8_lt[0]; i++) {
    const fp8_case_t *c = &k_fp8_lt[i];
    gt_cublaslt_desc_t d;
    gt_cublaslt_layout_t lay[4];
    lt_defaults(&d, lay);
    d.transa = GT_CUBLAS_OP_T;
    d.transb = GT_CUBLAS_OP_N;
    type_case_t t = k_lt_types[2];
    t.ab = c->ab_type;
    t.c = c->d_type;
    lt_set_layouts(lay, &t, &k_shapes[1], 1);
    if (c->b_type) lay[1].type = (uint32_t)c->b_type;
    memcpy(d.scale_ptr, c->ptr, sizeof d.scale_ptr);
    memcpy(d.scale_mode, c->mode, sizeof d.scale_mode);
    d.fast_accum = c->fast_accum;
    float beta = 0.0f;
    gt_problem_t got;
    gt_cublas_mark_t mk = {{0}};
    gt_err_clear();
    gt_status_t s = gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, &mk);
    if (s != GT_OK) fail_msg("%s: not keyed: %s", c->name, gt_err_msg());
    if (c->mark ? !strstr(mk.why, c->mark) : mk.why[0] != '\0')
      fail_msg("%s: mark '%s', expected %s%s", c->name, mk.why, c->mark ? "one with " : "none",
               c->mark ? c->mark : "");
    if (got.scale_a != c->want_a || got.scale_b != c->want_b || got.fast_accum != c->want_fast ||
        got.scale_d != c->want_scale_d || got.amax_d != c->want_amax)
      fail_msg("%s: keyed scale_a=%s scale_b=%s fast_accum=%d scale_d=%d amax_d=%d", c->name,
               gt_scale_mode_name(got.scale_a), gt_scale_mode_name(got.scale_b), got.fast_accum,
               got.scale_d, got.amax_d);
    /* A tunable key is a valid key whose text parses back to itself. */
    if (!c->mark) {
      assert_int_equal(gt_problem_validate(&got), GT_OK);
      char text[1024];
      gt_problem_format_key(&got, text, sizeof text);
      gt_problem_t back;
      gt_problem_init(&back);
      assert_int_equal(gt_problem_parse_key(text, &back), GT_OK);
      if (!gt_problem_equal(&back, &got)) fail_msg("%s: key text '%s' parses back differently", c->name, text);
    }
    /* Without a mark slot, a marked call is unsupported with the same reason. */
    if (c->mark) {
      gt_err_clear();
      assert_int_equal(gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, NULL),
                       GT_ERR_UNSUPPORTED);
      assert_non_null(strstr(gt_err_msg(), c->mark));
    }
  }
}

/* torch's DeepSeek blockwise call (128x128 weight as A, 1x128 activations as B) at several token
 * counts: tunable where n is a multiple of 4, marked where cuBLASLt requires it and it is not. */
static void test_lt_blockwise_tokens(void **st) {
  (void)st;
  static const struct {
    int64_t tokens;
    bool tunable;
  } cases[] = {{1, false}, {2, false}, {4, true}, {20, true}, {30, false}, {256, true}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gt_cublaslt_desc_t d;
    gt_cublaslt_layout_t lay[4];
    lt_defaults(&d, lay);
    d.transa = GT_CUBLAS_OP_T;
    d.transb = GT_CUBLAS_OP_N;
    type_case_t t = k_lt_types[2];
    t.ab = GT_CUDA_R_8F_E4M3;
    t.c = GT_CUDA_R_16BF;
    shape_case_t sh = k_shapes[1]; /* nn.Linear: B is k x n with ldb k, whatever n is */
    sh.M = sh.n = cases[i].tokens;
    lt_set_layouts(lay, &t, &sh, 1);
    d.scale_ptr[GT_LT_SCALE_A] = (const void *)0x1000;
    d.scale_ptr[GT_LT_SCALE_B] = (const void *)0x2000;
    d.scale_mode[0] = GT_CUBLASLT_MATRIX_SCALE_BLK128X128_32F;
    d.scale_mode[1] = GT_CUBLASLT_MATRIX_SCALE_VEC128_32F;
    float beta = 0.0f;
    gt_problem_t got;
    gt_cublas_mark_t mk = {{0}};
    assert_int_equal(gt_cublas_key_lt_matmul(&k_env_h200, &d, lay, &beta, &got, &mk), GT_OK);
    assert_int_equal(got.n, cases[i].tokens);
    assert_int_equal(got.scale_a, GT_SCALE_BLK128X128);
    assert_int_equal(got.scale_b, GT_SCALE_BLK1X128);
    if (cases[i].tunable ? mk.why[0] != '\0' : !strstr(mk.why, "not a multiple of 4"))
      fail_msg("%" PRId64 " tokens: mark '%s'", cases[i].tokens, mk.why);
  }
}

/* cublasSgemmStridedBatched and cublasHgemmStridedBatched key exactly as
 * cublasGemmStridedBatchedEx with their types (tunable), batch 1 as the plain routine. */
static void test_typed_strided_batched(void **st) {
  (void)st;
  const shape_case_t *s = &k_shapes[0];
  int64_t ac = s->ta == GT_CUBLAS_OP_N ? s->k : s->m, bc = s->tb == GT_CUBLAS_OP_N ? s->n : s->k;
  int64_t sa = s->lda * ac, sb = s->ldb * bc, sc = s->ldc * s->n;
  float fbeta = 1.0f;
  uint16_t hbeta = gt_f32_to_f16(1.0f);
  gt_problem_t want, got, plain;
  gt_cublas_mark_t mk = {{0}};
  assert_int_equal(gt_cublas_key_gemm_strided_batched_ex(
                       &k_env_h200, s->ta, s->tb, s->m, s->n, s->k, GT_CUDA_R_32F, s->lda, sa,
                       GT_CUDA_R_32F, s->ldb, sb, &fbeta, GT_CUDA_R_32F, s->ldc, sc, 5,
                       GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT, &want, NULL),
                   GT_OK);
  assert_int_equal(gt_cublas_key_sgemm_strided_batched(&k_env_h200, s->ta, s->tb, s->m, s->n,
                                                       s->k, s->lda, sa, s->ldb, sb, &fbeta,
                                                       s->ldc, sc, 5, &got, &mk),
                   GT_OK);
  assert_string_equal(mk.why, "");
  expect_same(&want, &got, "cublasSgemmStridedBatched batch 5");
  assert_int_equal(gt_cublas_key_sgemm_strided_batched(&k_env_h200, s->ta, s->tb, s->m, s->n,
                                                       s->k, s->lda, 77, s->ldb, 88, &fbeta,
                                                       s->ldc, 99, 1, &got, &mk),
                   GT_OK);
  assert_int_equal(gt_cublas_key_sgemm(&k_env_h200, s->ta, s->tb, s->m, s->n, s->k, s->lda,
                                       s->ldb, &fbeta, s->ldc, &plain, NULL),
                   GT_OK);
  expect_same(&plain, &got, "cublasSgemmStridedBatched batch 1 is cublasSgemm_v2");
  assert_int_equal(gt_cublas_key_gemm_strided_batched_ex(
                       &k_env_h200, s->ta, s->tb, s->m, s->n, s->k, GT_CUDA_R_16F, s->lda, sa,
                       GT_CUDA_R_16F, s->ldb, sb, &hbeta, GT_CUDA_R_16F, s->ldc, sc, 3,
                       GT_CUBLAS_COMPUTE_16F, GT_CUBLAS_GEMM_DEFAULT, &want, NULL),
                   GT_OK);
  assert_int_equal(gt_cublas_key_hgemm_strided_batched(&k_env_h200, s->ta, s->tb, s->m, s->n,
                                                       s->k, s->lda, sa, s->ldb, sb, &hbeta,
                                                       s->ldc, sc, 3, &got, &mk),
                   GT_OK);
  assert_string_equal(mk.why, "");
  expect_same(&want, &got, "cublasHgemmStridedBatched batch 3");
}

/* A _64 call whose sizes fit an int is its 32-bit twin's key; beyond that it is marked. */
static void test_64_twins(void **st) {
  (void)st;
  gt_cublas_env_t env64 = k_env_h200;
  env64.sizes_64 = true;
  float beta = 0.0f;
  gt_problem_t twin, got;
  gt_cublas_mark_t mk = {{0}};
  assert_int_equal(gt_cublas_key_gemm_ex(&k_env_h200, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 4096, 16,
                                         4096, GT_CUDA_R_16BF, 4096, GT_CUDA_R_16BF, 4096, &beta,
                                         GT_CUDA_R_16BF, 4096, GT_CUBLAS_COMPUTE_32F,
                                         GT_CUBLAS_GEMM_DEFAULT, &twin, NULL),
                   GT_OK);
  assert_int_equal(gt_cublas_key_gemm_ex(&env64, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 4096, 16, 4096,
                                         GT_CUDA_R_16BF, 4096, GT_CUDA_R_16BF, 4096, &beta,
                                         GT_CUDA_R_16BF, 4096, GT_CUBLAS_COMPUTE_32F,
                                         GT_CUBLAS_GEMM_DEFAULT, &got, &mk),
                   GT_OK);
  assert_string_equal(mk.why, "");
  expect_same(&twin, &got, "cublasGemmEx_64 with int sizes");
  const int64_t big = (int64_t)3 << 30;
  assert_int_equal(gt_cublas_key_gemm_ex(&env64, GT_CUBLAS_OP_N, GT_CUBLAS_OP_N, big, 1, 1,
                                         GT_CUDA_R_16BF, big, GT_CUDA_R_16BF, 1, &beta,
                                         GT_CUDA_R_16BF, big, GT_CUBLAS_COMPUTE_32F,
                                         GT_CUBLAS_GEMM_DEFAULT, &got, &mk),
                   GT_OK);
  assert_non_null(strstr(mk.why, "64-bit sizes"));
  assert_int_equal(got.m, big);
  uint16_t hb = 0;
  assert_int_equal(gt_cublas_key_hgemm(&env64, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 256, 128, 512, 512,
                                       512, &hb, 256, &got, &mk),
                   GT_OK);
  assert_string_equal(mk.why, "");
}

/* Pointer-array and grouped batches: keyed (strides as if packed), always marked; without a
 * mark they are refused as before. */
static void test_pointer_array_batches(void **st) {
  (void)st;
  float beta = 0.0f;
  gt_problem_t got;
  gt_cublas_mark_t mk = {{0}};
  assert_int_equal(gt_cublas_key_gemm_batched_ex(&k_env_h200, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 256,
                                                 32, 512, GT_CUDA_R_16BF, 512, GT_CUDA_R_16BF,
                                                 512, &beta, GT_CUDA_R_16BF, 256, 4,
                                                 GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT,
                                                 &got, &mk),
                   GT_OK);
  assert_non_null(strstr(mk.why, "pointer-array batch"));
  assert_null(strchr(mk.why, ','));
  assert_int_equal(got.batch, 4);
  assert_int_equal(got.stride_a, 512 * 256);
  assert_int_equal(got.stride_b, 512 * 32);
  assert_int_equal(got.stride_c, 256 * 32);
  assert_true(got.beta_zero);
  gt_err_clear();
  assert_int_equal(gt_cublas_key_gemm_batched_ex(&k_env_h200, GT_CUBLAS_OP_T, GT_CUBLAS_OP_N, 256,
                                                 32, 512, GT_CUDA_R_16BF, 512, GT_CUDA_R_16BF,
                                                 512, &beta, GT_CUDA_R_16BF, 256, 4,
                                                 GT_CUBLAS_COMPUTE_32F, GT_CUBLAS_GEMM_DEFAULT,
                                                 &got, NULL),
                   GT_ERR_UNSUPPORTED);
  assert_non_null(strstr(gt_err_msg(), "pointer-array"));
  /* grouped: group g reads element g of the beta array */
  const float betas[2] = {1.0f, 0.0f};
  for (int g = 0; g < 2; g++) {
    assert_int_equal(gt_cublas_key_gemm_grouped_ex(&k_env_h200, GT_CUBLAS_OP_N, GT_CUBLAS_OP_N,
                                                   64 * (g + 1), 8, 128, GT_CUDA_R_16BF,
                                                   64 * (g + 1), GT_CUDA_R_16BF, 128, betas, g,
                                                   GT_CUDA_R_16BF, 64 * (g + 1), 3,
                                                   GT_CUBLAS_COMPUTE_32F, &got, &mk),
                     GT_OK);
    assert_non_null(strstr(mk.why, "grouped batch"));
    assert_int_equal(got.m, 64 * (g + 1));
    assert_int_equal(got.batch, 3);
    assert_int_equal(got.beta_zero, g == 1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pytorch_linear_is_set_linear),
      cmocka_unit_test(test_gemmex_matches_cli),
      cmocka_unit_test(test_strided_batch1_matches_cli),
      cmocka_unit_test(test_strided_batch3_matches_cli),
      cmocka_unit_test(test_sgemm_matches_cli),
      cmocka_unit_test(test_hgemm_matches_cli),
      cmocka_unit_test(test_lt_matches_cli),
      cmocka_unit_test(test_equivalent_spellings),
      cmocka_unit_test(test_gemmex_refusals),
      cmocka_unit_test(test_fp32_math_mode_rules),
      cmocka_unit_test(test_lt_refusals),
      cmocka_unit_test(test_lt_bias_epilogue_in_key),
      cmocka_unit_test(test_cuda_enum_values),
      cmocka_unit_test(test_gemmex_marks),
      cmocka_unit_test(test_lt_marks),
      cmocka_unit_test(test_lt_fp8_scaling_in_key),
      cmocka_unit_test(test_lt_blockwise_tokens),
      cmocka_unit_test(test_fp8_key_text_and_diff),
      cmocka_unit_test(test_typed_strided_batched),
      cmocka_unit_test(test_64_twins),
      cmocka_unit_test(test_pointer_array_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
