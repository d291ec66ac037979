/* Keys of live cuBLAS / cuBLASLt calls (see gt_cublas_key.h). Pure C: the runtime shim passes the
 * raw argument and attribute values; nothing here touches a GPU or a CUDA header. */
#include "gt_cublas_key.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

gt_status_t gt_cublas_dtype(int cuda_type, gt_dtype_t *out) {
  switch (cuda_type) {
    case GT_CUDA_R_32F: *out = GT_DT_F32; return GT_OK;
    case GT_CUDA_R_64F: *out = GT_DT_F64; return GT_OK;
    case GT_CUDA_R_16F: *out = GT_DT_F16; return GT_OK;
    case GT_CUDA_R_16BF: *out = GT_DT_BF16; return GT_OK;
    case GT_CUDA_R_8I: *out = GT_DT_I8; return GT_OK;
    case GT_CUDA_R_32I: *out = GT_DT_I32; return GT_OK;
    case GT_CUDA_R_8F_E4M3: *out = GT_DT_F8E4M3FN; return GT_OK;
    case GT_CUDA_R_8F_E5M2: *out = GT_DT_F8E5M2; return GT_OK;
    default:
      /* Complex, unsigned, 4/6-bit and exponent-only types have no gemmtune instance. */
      return gt_err_set(GT_ERR_UNSUPPORTED, "data type %d (cudaDataType_t) is not tuned",
                        cuda_type);
  }
}

/* For real data OP_C is OP_T (cuBLAS treats them alike), so both map to T. */
static gt_status_t map_trans(const char *which, int op, gt_trans_t *out) {
  switch (op) {
    case GT_CUBLAS_OP_N: *out = GT_TRANS_N; return GT_OK;
    case GT_CUBLAS_OP_T:
    case GT_CUBLAS_OP_C: *out = GT_TRANS_T; return GT_OK;
    default: return gt_err_set(GT_ERR_UNSUPPORTED, "%s = %d is not OP_N/OP_T/OP_C", which, op);
  }
}

/* beta == 0 decides whether C is read, which is part of the key. Signed zeros count as zero,
 * as cuBLAS treats them. */
static gt_status_t read_beta_zero(gt_dtype_t scale, const void *beta, bool *zero) {
  if (!beta) return gt_err_set(GT_ERR_UNSUPPORTED, "beta is NULL");
  switch (scale) {
    case GT_DT_F32: {
      float v;
      memcpy(&v, beta, sizeof v);
      *zero = v == 0.0f;
      return GT_OK;
    }
    case GT_DT_F64: {
      double v;
      memcpy(&v, beta, sizeof v);
      *zero = v == 0.0;
      return GT_OK;
    }
    case GT_DT_F16:
    case GT_DT_BF16: {
      uint16_t v;
      memcpy(&v, beta, sizeof v);
      *zero = (v & 0x7fffu) == 0;
      return GT_OK;
    }
    case GT_DT_I32: {
      int32_t v;
      memcpy(&v, beta, sizeof v);
      *zero = v == 0;
      return GT_OK;
    }
    default:
      return gt_err_set(GT_ERR_UNSUPPORTED, "scale type %s: beta cannot be read",
                        gt_dtype_name(scale));
  }
}

/* ---- marks ---------------------------------------------------------------------------------
 * A check that finds something the key cannot express for a GEMM that does run records the
 * first such reason and lets the build go on; conclude() decides at the end whether the caller
 * gets the key with its mark, or (without a mark) the refusal it always got. */

static void mark(gt_cublas_mark_t *mk, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void mark(gt_cublas_mark_t *mk, const char *fmt, ...) {
  if (mk->why[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mk->why, sizeof mk->why, fmt, ap);
  va_end(ap);
  /* It becomes a CSV cell and a log line. */
  for (char *c = mk->why; *c; c++)
    if (*c == ',' || *c == '\n' || *c == '\r') *c = ';';
}

/* cublasComputeType_t -> gemmtune compute and the scale (alpha/beta) type cublasGemmEx implies.
 * Pedantic and emulated variants are different numerics that no key expresses: keyed by the
 * compute they start from, and marked. */
static gt_status_t map_compute(int ct, gt_compute_t *compute, gt_dtype_t *scale,
                               gt_cublas_mark_t *mk) {
  switch (ct) {
    case GT_CUBLAS_COMPUTE_16F: *compute = GT_COMPUTE_F16; *scale = GT_DT_F16; return GT_OK;
    case GT_CUBLAS_COMPUTE_32F: *compute = GT_COMPUTE_F32; *scale = GT_DT_F32; return GT_OK;
    case GT_CUBLAS_COMPUTE_32F_FAST_16F:
      *compute = GT_COMPUTE_F32_FAST_F16; *scale = GT_DT_F32; return GT_OK;
    case GT_CUBLAS_COMPUTE_32F_FAST_16BF:
      *compute = GT_COMPUTE_F32_FAST_BF16; *scale = GT_DT_F32; return GT_OK;
    case GT_CUBLAS_COMPUTE_32F_FAST_TF32: *compute = GT_COMPUTE_TF32; *scale = GT_DT_F32; return GT_OK;
    case GT_CUBLAS_COMPUTE_64F: *compute = GT_COMPUTE_F64; *scale = GT_DT_F64; return GT_OK;
    case GT_CUBLAS_COMPUTE_32I: *compute = GT_COMPUTE_I32; *scale = GT_DT_I32; return GT_OK;
    case GT_CUBLAS_COMPUTE_16F_PEDANTIC:
    case GT_CUBLAS_COMPUTE_32F_PEDANTIC:
    case GT_CUBLAS_COMPUTE_64F_PEDANTIC:
    case GT_CUBLAS_COMPUTE_32I_PEDANTIC: {
      mark(mk, "pedantic compute type %d is not tuned", ct);
      return map_compute(ct - 1, compute, scale, mk); /* each follows its plain form */
    }
    case GT_CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      mark(mk, "emulated compute type %d is not tuned", ct);
      *compute = GT_COMPUTE_F32, *scale = GT_DT_F32;
      return GT_OK;
    case GT_CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      mark(mk, "emulated compute type %d is not tuned", ct);
      *compute = GT_COMPUTE_F64, *scale = GT_DT_F64;
      return GT_OK;
    default: return gt_err_set(GT_ERR_UNSUPPORTED, "unknown compute type %d", ct);
  }
}

static bool narrow_output(gt_dtype_t d) {
  return d != GT_DT_F32 && d != GT_DT_F64 && d != GT_DT_I32;
}

/* The handle's math mode can change the numerics of a cublasGemmEx call in ways the key does not
 * carry. Tunable: the default mode, and TF32 mode where it has no effect (inputs that are not
 * fp32). Marked: TF32/tensor-op/emulation modes on fp32 inputs (the library decides whether to
 * down-convert), pedantic, unknown flag bits, and "disallow reduced-precision reduction" when the
 * output is narrower than the accumulator (a tuned split-K may reduce in the output type). */
static void check_math_gemm_ex(int math, gt_dtype_t a_type, gt_dtype_t d_type,
                               gt_cublas_mark_t *mk) {
  int mode = math & 0xf, flags = math & ~0xf;
  if (flags & ~GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) {
    mark(mk, "math mode 0x%x has unknown flag bits", math);
    return;
  }
  if ((flags & GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) && narrow_output(d_type)) {
    mark(mk, "math mode disallows reduced-precision reduction (%s output)",
         gt_dtype_name(d_type));
    return;
  }
  if (mode == GT_CUBLAS_DEFAULT_MATH) return;
  if (mode == GT_CUBLAS_TF32_TENSOR_OP_MATH && a_type != GT_DT_F32) return;
  mark(mk, "math mode %d with %s inputs is not part of the key", mode, gt_dtype_name(a_type));
}

static gt_status_t fill_shape(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                              int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                              gt_problem_t *p) {
  gt_status_t s;
  if ((s = map_trans("transa", transa, &p->transa)) != GT_OK) return s;
  if ((s = map_trans("transb", transb, &p->transb)) != GT_OK) return s;
  p->m = m;
  p->n = n;
  p->k = k;
  p->lda = lda;
  p->ldb = ldb;
  p->ldc = ldc;
  /* copied, not formatted: this runs on every intercepted call */
  memcpy(p->arch, env->arch, sizeof p->arch);
  p->arch[sizeof p->arch - 1] = '\0';
  p->sm_count = env->sm_count;
  return GT_OK;
}

/* A _64 call whose sizes all fit an int is its 32-bit twin's GEMM (the same key, served the same
 * way). Larger sizes are a key no baseline can run (cublasGemmEx takes int), so `tune` could not
 * race it. */
static void check_sizes_64(const gt_cublas_env_t *env, const gt_problem_t *p,
                           gt_cublas_mark_t *mk) {
  if (!env->sizes_64) return;
  const int64_t v[7] = {p->m, p->n, p->k, p->lda, p->ldb, p->ldc, p->batch};
  for (int i = 0; i < 7; i++)
    if (v[i] > INT32_MAX) {
      mark(mk, "64-bit sizes beyond int (a _64 call): not tuned");
      return;
    }
}

/* Arguments cuBLAS would reject (or that mean "do nothing", m/n/k = 0) are passed through so the
 * library gives the caller its own answer. */
static gt_status_t finish(gt_problem_t *p) {
  if (gt_problem_validate(p) != GT_OK) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    return gt_err_set(GT_ERR_UNSUPPORTED, "arguments not a tunable GEMM: %s", msg);
  }
  return GT_OK;
}

/* The end of every builder: a key that validates goes out, with its mark when the caller takes
 * one; a marked key without a mark to carry it is the refusal it always was. */
static gt_status_t conclude(gt_problem_t *p, const gt_cublas_mark_t *mk, gt_cublas_mark_t *mark,
                            gt_problem_t *out) {
  gt_status_t s = finish(p);
  if (s != GT_OK) return s;
  if (mk->why[0] && !mark) return gt_err_set(GT_ERR_UNSUPPORTED, "%s", mk->why);
  if (mark) *mark = *mk;
  *out = *p;
  return GT_OK;
}

/* beta == 0 decides whether C is read. In device pointer mode it cannot be read from the host:
 * the key is marked and records beta_zero 0 (C read: the larger footprint). Element `index` of
 * a beta array (grouped calls) is read. */
static gt_status_t key_beta(const gt_cublas_env_t *env, gt_dtype_t scale, const void *beta,
                            int64_t index, gt_problem_t *p, gt_cublas_mark_t *mk) {
  if (env->pointer_mode != GT_CUBLAS_POINTER_MODE_HOST) {
    mark(mk, "pointer mode device: beta is not readable on the host");
    p->beta_zero = false;
    return GT_OK;
  }
  if (!beta) return gt_err_set(GT_ERR_UNSUPPORTED, "beta is NULL");
  const char *b = (const char *)beta + (size_t)index * gt_dtype_size(scale);
  return read_beta_zero(scale, b, &p->beta_zero);
}

static gt_status_t check_env(const gt_cublas_env_t *env) {
  if (!env) return gt_err_set(GT_ERR_USAGE, "no environment given");
  return GT_OK;
}

/* What the cublas<...>gemm<...>Ex forms share beyond their types: the shape, the batch and how
 * its operands are found. */
typedef struct gemm_call {
  int transa, transb;
  int64_t m, n, k, lda, ldb, ldc;
  int64_t stride_a, stride_b, stride_c, batch;
  const void *beta;
  int64_t beta_index;
  const char *batch_kind; /* NULL: strided; else why no key states where the operands are */
} gemm_call_t;

/* Strides of a batch whose operands a key cannot locate (pointer arrays): shown as if packed,
 * the footprint they would have. */
static gt_status_t packed_strides(gt_problem_t *p) {
  int64_t acols = p->transa == GT_TRANS_N ? p->k : p->m;
  int64_t bcols = p->transb == GT_TRANS_N ? p->n : p->k;
  if (__builtin_mul_overflow(p->lda, acols, &p->stride_a) ||
      __builtin_mul_overflow(p->ldb, bcols, &p->stride_b) ||
      __builtin_mul_overflow(p->ldc, p->n, &p->stride_c))
    return gt_err_set(GT_ERR_UNSUPPORTED, "arguments not a tunable GEMM: operand sizes overflow");
  return GT_OK;
}

static gt_status_t key_batch(const gemm_call_t *c, gt_problem_t *p, gt_cublas_mark_t *mk) {
  if (c->batch < 1)
    return gt_err_set(GT_ERR_UNSUPPORTED, "batch count %" PRId64 " < 1", c->batch);
  p->batch = c->batch;
  if (c->batch_kind) {
    mark(mk, "%s", c->batch_kind);
    return c->batch > 1 ? packed_strides(p) : GT_OK;
  }
  if (c->batch > 1) {
    if (c->stride_a < 0 || c->stride_b < 0 || c->stride_c < 0)
      return gt_err_set(GT_ERR_UNSUPPORTED, "negative batch stride");
    p->stride_a = c->stride_a;
    p->stride_b = c->stride_b;
    p->stride_c = c->stride_c;
  } /* batch 1: strides are meaningless and the key states them as 0 */
  return GT_OK;
}

/* The cublas<...>Ex forms: explicit types and compute type. */
static gt_status_t key_gemm_typed(const gt_cublas_env_t *env, const gemm_call_t *c, int atype,
                                  int btype, int ctype, int compute_type, int algo,
                                  gt_problem_t *out, gt_cublas_mark_t *mark_out) {
  gt_status_t s;
  if ((s = check_env(env)) != GT_OK) return s;
  gt_cublas_mark_t mk = {{0}};
  gt_problem_t p;
  gt_problem_init(&p);
  if ((s = gt_cublas_dtype(atype, &p.a_type)) != GT_OK) return s;
  if ((s = gt_cublas_dtype(btype, &p.b_type)) != GT_OK) return s;
  if ((s = gt_cublas_dtype(ctype, &p.c_type)) != GT_OK) return s;
  p.d_type = p.c_type;
  /* Any other algo is the caller's explicit choice: honour it by passing through. */
  if (algo != GT_CUBLAS_GEMM_DEFAULT && algo != GT_CUBLAS_GEMM_DEFAULT_TENSOR_OP)
    mark(&mk, "non-default algo %d", algo);
  if ((s = map_compute(compute_type, &p.compute, &p.scale_type, &mk)) != GT_OK) return s;
  check_math_gemm_ex(env->math_mode, p.a_type, p.d_type, &mk);
  if ((s = fill_shape(env, c->transa, c->transb, c->m, c->n, c->k, c->lda, c->ldb, c->ldc, &p)) !=
      GT_OK)
    return s;
  if ((s = key_batch(c, &p, &mk)) != GT_OK) return s;
  if ((s = key_beta(env, p.scale_type, c->beta, c->beta_index, &p, &mk)) != GT_OK) return s;
  check_sizes_64(env, &p, &mk);
  return conclude(&p, &mk, mark_out, out);
}

gt_status_t gt_cublas_key_gemm_strided_batched_ex(
    const gt_cublas_env_t *env, int transa, int transb, int64_t m, int64_t n, int64_t k,
    int atype, int64_t lda, int64_t stride_a, int btype, int64_t ldb, int64_t stride_b,
    const void *beta, int ctype, int64_t ldc, int64_t stride_c, int64_t batch_count,
    int compute_type, int algo, gt_problem_t *out, gt_cublas_mark_t *mark) {
  const gemm_call_t c = {transa, transb, m,        n,        k,           lda,  ldb, ldc,
                         stride_a, stride_b, stride_c, batch_count, beta, 0,   NULL};
  return key_gemm_typed(env, &c, atype, btype, ctype, compute_type, algo, out, mark);
}

gt_status_t gt_cublas_key_gemm_ex(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                  int64_t n, int64_t k, int atype, int64_t lda, int btype,
                                  int64_t ldb, const void *beta, int ctype, int64_t ldc,
                                  int compute_type, int algo, gt_problem_t *out,
                                  gt_cublas_mark_t *mark) {
  return gt_cublas_key_gemm_strided_batched_ex(env, transa, transb, m, n, k, atype, lda, 0, btype,
                                               ldb, 0, beta, ctype, ldc, 0, 1, compute_type, algo,
                                               out, mark);
}

gt_status_t gt_cublas_key_gemm_batched_ex(const gt_cublas_env_t *env, int transa, int transb,
                                          int64_t m, int64_t n, int64_t k, int atype, int64_t lda,
                                          int btype, int64_t ldb, const void *beta, int ctype,
                                          int64_t ldc, int64_t batch_count, int compute_type,
                                          int algo, gt_problem_t *out, gt_cublas_mark_t *mark) {
  const gemm_call_t c = {transa, transb, m, n, k, lda, ldb, ldc, 0, 0, 0, batch_count, beta, 0,
                         "pointer-array batch (cublasGemmBatchedEx): operands at arbitrary "
                         "addresses; strides shown as if packed"};
  return key_gemm_typed(env, &c, atype, btype, ctype, compute_type, algo, out, mark);
}

gt_status_t gt_cublas_key_gemm_grouped_ex(const gt_cublas_env_t *env, int transa, int transb,
                                          int64_t m, int64_t n, int64_t k, int atype, int64_t lda,
                                          int btype, int64_t ldb, const void *beta_array,
                                          int64_t group, int ctype, int64_t ldc,
                                          int64_t group_size, int compute_type, gt_problem_t *out,
                                          gt_cublas_mark_t *mark) {
  const gemm_call_t c = {transa, transb, m, n, k, lda, ldb, ldc, 0, 0, 0, group_size, beta_array,
                         group,
                         "grouped batch (cublasGemmGroupedBatchedEx): one group of pointer-array "
                         "problems; strides shown as if packed"};
  return key_gemm_typed(env, &c, atype, btype, ctype, compute_type, GT_CUBLAS_GEMM_DEFAULT, out,
                        mark);
}

/* The math mode of the typed fp32 routine: where it selects the arithmetic (PyTorch's allow_tf32
 * sets CUBLAS_TF32_TENSOR_OP_MATH on its handle). The reduction flag cannot narrow an fp32
 * output, so it is harmless here. */
static void sgemm_compute(int math, gt_compute_t *compute, gt_cublas_mark_t *mk) {
  *compute = GT_COMPUTE_F32;
  if (math & ~0xf & ~GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) {
    mark(mk, "math mode 0x%x has unknown flag bits", math);
    return;
  }
  switch (math & 0xf) {
    case GT_CUBLAS_DEFAULT_MATH: return;
    case GT_CUBLAS_TF32_TENSOR_OP_MATH: *compute = GT_COMPUTE_TF32; return;
    case GT_CUBLAS_TENSOR_OP_MATH: *compute = GT_COMPUTE_F32_FAST_F16; return;
    default: mark(mk, "math mode %d for cublasSgemm is not part of the key", math & 0xf);
  }
}

/* fp16 accumulation into an fp16 output: the reduction flag changes nothing; TF32 and the
 * deprecated tensor-op mode apply to fp32 routines only. */
static void hgemm_math(int math, gt_cublas_mark_t *mk) {
  int mode = math & 0xf;
  if (math & ~0xf & ~GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) {
    mark(mk, "math mode 0x%x has unknown flag bits", math);
    return;
  }
  if (mode != GT_CUBLAS_DEFAULT_MATH && mode != GT_CUBLAS_TF32_TENSOR_OP_MATH &&
      mode != GT_CUBLAS_TENSOR_OP_MATH)
    mark(mk, "math mode %d for cublasHgemm is not part of the key", mode);
}

/* The typed S/H routines: one element type, compute from the routine (and the math mode). */
static gt_status_t key_gemm_sh(const gt_cublas_env_t *env, const gemm_call_t *c, bool half,
                               gt_problem_t *out, gt_cublas_mark_t *mark_out) {
  gt_status_t s;
  if ((s = check_env(env)) != GT_OK) return s;
  gt_cublas_mark_t mk = {{0}};
  gt_problem_t p;
  gt_problem_init(&p);
  const gt_dtype_t t = half ? GT_DT_F16 : GT_DT_F32;
  p.a_type = p.b_type = p.c_type = p.d_type = p.scale_type = t;
  if (half) {
    p.compute = GT_COMPUTE_F16;
    hgemm_math(env->math_mode, &mk);
  } else {
    sgemm_compute(env->math_mode, &p.compute, &mk);
  }
  if ((s = fill_shape(env, c->transa, c->transb, c->m, c->n, c->k, c->lda, c->ldb, c->ldc, &p)) !=
      GT_OK)
    return s;
  if ((s = key_batch(c, &p, &mk)) != GT_OK) return s;
  if ((s = key_beta(env, t, c->beta, 0, &p, &mk)) != GT_OK) return s;
  check_sizes_64(env, &p, &mk);
  return conclude(&p, &mk, mark_out, out);
}

gt_status_t gt_cublas_key_sgemm_strided_batched(const gt_cublas_env_t *env, int transa,
                                                int transb, int64_t m, int64_t n, int64_t k,
                                                int64_t lda, int64_t stride_a, int64_t ldb,
                                                int64_t stride_b, const float *beta, int64_t ldc,
                                                int64_t stride_c, int64_t batch_count,
                                                gt_problem_t *out, gt_cublas_mark_t *mark) {
  const gemm_call_t c = {transa,   transb,   m,           n,    k, lda, ldb, ldc, stride_a,
                         stride_b, stride_c, batch_count, beta, 0, NULL};
  return key_gemm_sh(env, &c, false, out, mark);
}

gt_status_t gt_cublas_key_sgemm(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                const float *beta, int64_t ldc, gt_problem_t *out,
                                gt_cublas_mark_t *mark) {
  return gt_cublas_key_sgemm_strided_batched(env, transa, transb, m, n, k, lda, 0, ldb, 0, beta,
                                             ldc, 0, 1, out, mark);
}

gt_status_t gt_cublas_key_hgemm_strided_batched(const gt_cublas_env_t *env, int transa,
                                                int transb, int64_t m, int64_t n, int64_t k,
                                                int64_t lda, int64_t stride_a, int64_t ldb,
                                                int64_t stride_b, const uint16_t *beta,
                                                int64_t ldc, int64_t stride_c,
                                                int64_t batch_count, gt_problem_t *out,
                                                gt_cublas_mark_t *mark) {
  const gemm_call_t c = {transa,   transb,   m,           n,    k, lda, ldb, ldc, stride_a,
                         stride_b, stride_c, batch_count, beta, 0, NULL};
  return key_gemm_sh(env, &c, true, out, mark);
}

gt_status_t gt_cublas_key_hgemm(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                const uint16_t *beta, int64_t ldc, gt_problem_t *out,
                                gt_cublas_mark_t *mark) {
  return gt_cublas_key_hgemm_strided_batched(env, transa, transb, m, n, k, lda, 0, ldb, 0, beta,
                                             ldc, 0, 1, out, mark);
}

/* Epilogues with auxiliary outputs and gradient epilogues write buffers a tuned candidate would
 * not: keyed without an epilogue, and marked. */
static void map_lt_epilogue(uint32_t e, gt_epilogue_t *out, gt_cublas_mark_t *mk) {
  switch (e) {
    case GT_CUBLASLT_EPILOGUE_DEFAULT: *out = GT_EPI_NONE; return;
    case GT_CUBLASLT_EPILOGUE_RELU: *out = GT_EPI_RELU; return;
    case GT_CUBLASLT_EPILOGUE_BIAS: *out = GT_EPI_BIAS; return;
    case GT_CUBLASLT_EPILOGUE_RELU_BIAS: *out = GT_EPI_BIAS_RELU; return;
    case GT_CUBLASLT_EPILOGUE_GELU: *out = GT_EPI_GELU; return;
    case GT_CUBLASLT_EPILOGUE_GELU_BIAS: *out = GT_EPI_BIAS_GELU; return;
    default:
      *out = GT_EPI_NONE;
      mark(mk, "epilogue %u (aux output or gradient) is not tuned", (unsigned)e);
  }
}

static bool epilogue_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

/* A layout the key reads as column-major and strided; row-major and pointer-array layouts run
 * but the key cannot state them (marked). */
static gt_status_t check_layout(const char *name, const gt_cublaslt_layout_t *l, gt_dtype_t *t,
                                gt_cublas_mark_t *mk) {
  if (!l->ok) return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: attributes unreadable", name);
  if (l->order != GT_CUBLASLT_ORDER_COL)
    mark(mk, "layout %s: order %d is not column-major", name, (int)l->order);
  if (l->plane_offset != 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: planar complex", name);
  if (l->batch_mode != GT_CUBLASLT_BATCH_MODE_STRIDED)
    mark(mk, "layout %s: batch mode %u is not strided", name, (unsigned)l->batch_mode);
  if (l->rows == 0 || l->cols == 0 || l->rows > INT64_MAX || l->cols > INT64_MAX)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: %" PRIu64 "x%" PRIu64 " is empty", name,
                      l->rows, l->cols);
  if (l->batch_count < 1)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: batch count %d", name, (int)l->batch_count);
  gt_status_t s = gt_cublas_dtype((int)l->type, t);
  if (s != GT_OK) {
    char msg[200];
    snprintf(msg, sizeof msg, "%s", gt_err_msg());
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: %s", name, msg);
  }
  return GT_OK;
}

/* The descriptor attributes no key states: each set one marks the call. */
static gt_status_t lt_desc_marks(const gt_cublaslt_desc_t *d, gt_cublas_mark_t *mk) {
  if (!d || !d->ok) return gt_err_set(GT_ERR_UNSUPPORTED, "matmul descriptor unreadable");
  if (d->extras_unreadable)
    return gt_err_set(GT_ERR_UNSUPPORTED, "matmul descriptor: an attribute could not be read");
  /* cuBLASLt supports no other transc: such a call fails in the library itself. */
  if (d->transc != GT_CUBLAS_OP_N)
    return gt_err_set(GT_ERR_UNSUPPORTED, "transc = %d", (int)d->transc);
  if (d->pointer_mode != GT_CUBLAS_POINTER_MODE_HOST)
    mark(mk, "pointer mode %d: alpha/beta are not host scalars", (int)d->pointer_mode);
  /* The A/B scales, D's scale and amax and fast accumulation are keyed (lt_fp8); the rest of
   * the scaling attributes are not. */
  if (d->scale_ptr[GT_LT_SCALE_C]) mark(mk, "a C scale pointer is set (not part of the key)");
  if (d->scale_ptr[GT_LT_SCALE_AUX] || d->scale_ptr[GT_LT_AMAX_AUX])
    mark(mk, "epilogue aux scale or amax pointers are set");
  if (d->scale_ptr[GT_LT_SCALE_D_OUT]) mark(mk, "a D out scale pointer is set (block-scaled D)");
  for (int i = 2; i < 6; i++)
    if (d->scale_mode[i])
      mark(mk, "scaling mode %d of %s is set", (int)d->scale_mode[i],
           i == 2 ? "C" : i == 3 ? "D" : i == 4 ? "the epilogue aux" : "D out");
  if (d->emulation_desc) mark(mk, "an emulation descriptor is set");
  if (d->sm_count_target != 0) mark(mk, "SM count target %d is set", (int)d->sm_count_target);
  if (d->fill_mode != GT_CUBLAS_FILL_MODE_FULL)
    mark(mk, "fill mode %d is not full", (int)d->fill_mode);
  return GT_OK;
}

/* Shape, leading dimensions and batch from the four layouts (A, B, C, D). */
static gt_status_t lt_shape(const gt_cublaslt_layout_t lay[4], gt_problem_t *p,
                            gt_cublas_mark_t *mk) {
  const gt_cublaslt_layout_t *A = &lay[0], *B = &lay[1], *C = &lay[2], *D = &lay[3];
  p->m = (int64_t)D->rows;
  p->n = (int64_t)D->cols;
  p->k = (int64_t)(p->transa == GT_TRANS_N ? A->cols : A->rows);
  uint64_t a_rows = p->transa == GT_TRANS_N ? (uint64_t)p->m : (uint64_t)p->k;
  uint64_t b_rows = p->transb == GT_TRANS_N ? (uint64_t)p->k : (uint64_t)p->n;
  uint64_t b_cols = p->transb == GT_TRANS_N ? (uint64_t)p->n : (uint64_t)p->k;
  if (A->rows != a_rows || B->rows != b_rows || B->cols != b_cols || C->rows != D->rows ||
      C->cols != D->cols)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout dimensions are inconsistent");
  /* The key has one leading dimension and one batch stride for C and D (as cublasGemmEx). */
  if (C->ld != D->ld) mark(mk, "ldd %" PRId64 " != ldc %" PRId64, D->ld, C->ld);
  p->lda = A->ld;
  p->ldb = B->ld;
  p->ldc = C->ld;
  if (A->batch_count != D->batch_count || B->batch_count != D->batch_count ||
      C->batch_count != D->batch_count)
    return gt_err_set(GT_ERR_UNSUPPORTED, "batch counts differ between layouts");
  p->batch = D->batch_count;
  if (p->batch > 1) {
    if (C->batch_stride != D->batch_stride) mark(mk, "D batch stride != C batch stride");
    if (A->batch_stride < 0 || B->batch_stride < 0 || C->batch_stride < 0)
      return gt_err_set(GT_ERR_UNSUPPORTED, "negative batch stride");
    p->stride_a = A->batch_stride;
    p->stride_b = B->batch_stride;
    p->stride_c = C->batch_stride;
  }
  return GT_OK;
}

/* cublasLtMatmulMatrixScale_t -> the key's scale mode of one operand whose scale pointer is
 * set. The Blackwell block formats (VEC16_UE4M3, VEC32_UE8M0) are not keyed: marked. The sm_90
 * block modes are keyed and tunable: the gate's references read their arrays in the layout
 * cuBLASLt documents (gt_scale.h); lt_fp8 marks the pairs and shapes cuBLASLt refuses. */
static void lt_scale_mode(const char *name, int32_t mode, gt_scale_mode_t *out,
                          gt_cublas_mark_t *mk) {
  switch (mode) {
    case GT_CUBLASLT_MATRIX_SCALE_SCALAR_32F: *out = GT_SCALE_TENSOR; return;
    case GT_CUBLASLT_MATRIX_SCALE_OUTER_VEC_32F: *out = GT_SCALE_OUTER; return;
    case GT_CUBLASLT_MATRIX_SCALE_VEC128_32F: *out = GT_SCALE_BLK1X128; return;
    case GT_CUBLASLT_MATRIX_SCALE_BLK128X128_32F: *out = GT_SCALE_BLK128X128; return;
    default:
      *out = GT_SCALE_NONE;
      mark(mk, "%s scaling mode %d is not keyed (not an sm_90 fp32 scale)", name, (int)mode);
  }
}

/* The fp8 fields of the key: how A and B are scaled, fast accumulation, D's scale and amax.
 * A scale is keyed only where it means something (an fp8 operand, an fp8 D); cuBLASLt rejects
 * or ignores the others, and a key stating them would describe a different computation. */
static void lt_fp8(const gt_cublaslt_desc_t *d, gt_problem_t *p, gt_cublas_mark_t *mk) {
  static const char *const names[2] = {"A", "B"};
  const gt_dtype_t types[2] = {p->a_type, p->b_type};
  gt_scale_mode_t *modes[2] = {&p->scale_a, &p->scale_b};
  for (int i = 0; i < 2; i++) {
    const void *ptr = d->scale_ptr[i == 0 ? GT_LT_SCALE_A : GT_LT_SCALE_B];
    if (!ptr) {
      /* No factor: the values are used as stored, whatever the mode says, except that a block
       * mode without its array would fail in the library. */
      if (d->scale_mode[i] != GT_CUBLASLT_MATRIX_SCALE_SCALAR_32F)
        mark(mk, "%s scaling mode %d without a scale pointer", names[i], (int)d->scale_mode[i]);
      continue;
    }
    if (!gt_dtype_is_fp8(types[i])) {
      mark(mk, "%s scale pointer on a %s operand", names[i], gt_dtype_name(types[i]));
      continue;
    }
    lt_scale_mode(names[i], d->scale_mode[i], modes[i], mk);
  }
  /* A block-scaled call cuBLASLt itself refuses (a mode pair or a shape it has no kernel for)
   * runs as issued and fails as issued: no tuned kernel may make it succeed instead. */
  const char *refused = gt_scale_block_refusal(p->scale_a, p->scale_b, p->m, p->n);
  if (refused) mark(mk, "%s", refused);
  if (d->fast_accum) {
    if (gt_dtype_is_fp8(p->a_type) || gt_dtype_is_fp8(p->b_type)) p->fast_accum = true;
    else mark(mk, "fast accumulation on a %s GEMM", gt_dtype_name(p->a_type));
  }
  if (d->scale_ptr[GT_LT_SCALE_D]) {
    if (gt_dtype_is_fp8(p->d_type)) p->scale_d = true;
    else mark(mk, "a D scale pointer with a %s D", gt_dtype_name(p->d_type));
  }
  if (d->scale_ptr[GT_LT_AMAX_D]) {
    if (gt_dtype_is_fp8(p->a_type) || gt_dtype_is_fp8(p->b_type)) p->amax_d = true;
    else mark(mk, "an amax pointer on a %s GEMM", gt_dtype_name(p->a_type));
  }
}

static gt_status_t lt_bias(const gt_cublaslt_desc_t *d, const gt_problem_t *p,
                           gt_cublas_mark_t *mk) {
  if (!epilogue_has_bias(p->epilogue)) return GT_OK;
  if (!d->bias) return gt_err_set(GT_ERR_UNSUPPORTED, "bias epilogue without a bias pointer");
  if (d->bias_data_type != -1) {
    gt_dtype_t bt, want = gt_dtype_is_fp8(p->d_type) ? GT_DT_BF16 : p->d_type;
    /* cuBLASLt's default bias type is D's, or bf16 for an fp8 D: the key's bias is that one. */
    if (gt_cublas_dtype(d->bias_data_type, &bt) != GT_OK || bt != want)
      mark(mk, "bias type %d differs from D's type", (int)d->bias_data_type);
  }
  if (p->batch > 1) mark(mk, "batched bias is not part of the key");
  return GT_OK;
}

gt_status_t gt_cublas_key_lt_matmul(const gt_cublas_env_t *env, const gt_cublaslt_desc_t *d,
                                    const gt_cublaslt_layout_t lay[4], const void *beta,
                                    gt_problem_t *out, gt_cublas_mark_t *mark_out) {
  gt_status_t s;
  if ((s = check_env(env)) != GT_OK) return s;
  gt_cublas_mark_t mk = {{0}};
  if ((s = lt_desc_marks(d, &mk)) != GT_OK) return s;
  gt_problem_t p;
  gt_problem_init(&p);
  gt_dtype_t scale_from_compute;
  /* cuBLASLt states the scale type explicitly; the one cublasGemmEx would imply is not used. */
  if ((s = map_compute(d->compute_type, &p.compute, &scale_from_compute, &mk)) != GT_OK) return s;
  (void)scale_from_compute;
  if ((s = gt_cublas_dtype(d->scale_type, &p.scale_type)) != GT_OK) return s;
  if ((s = map_trans("transa", d->transa, &p.transa)) != GT_OK) return s;
  if ((s = map_trans("transb", d->transb, &p.transb)) != GT_OK) return s;
  map_lt_epilogue(d->epilogue, &p.epilogue, &mk);

  static const char *const names[4] = {"A", "B", "C", "D"};
  gt_dtype_t t[4];
  for (int i = 0; i < 4; i++)
    if ((s = check_layout(names[i], &lay[i], &t[i], &mk)) != GT_OK) return s;
  p.a_type = t[0];
  p.b_type = t[1];
  p.c_type = t[2];
  p.d_type = t[3];
  if ((s = lt_shape(lay, &p, &mk)) != GT_OK) return s;
  if ((s = lt_bias(d, &p, &mk)) != GT_OK) return s;
  lt_fp8(d, &p, &mk);
  if (d->pointer_mode == GT_CUBLAS_POINTER_MODE_HOST) {
    if ((s = read_beta_zero(p.scale_type, beta, &p.beta_zero)) != GT_OK) return s;
  } else {
    p.beta_zero = false; /* not readable: C counted as read */
  }
  memcpy(p.arch, env->arch, sizeof p.arch);
  p.arch[sizeof p.arch - 1] = '\0';
  p.sm_count = env->sm_count;
  return conclude(&p, &mk, mark_out, out);
}
