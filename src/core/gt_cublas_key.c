/* Keys of live cuBLAS / cuBLASLt calls (see gt_cublas_key.h). Pure C: the runtime shim passes the
 * raw argument and attribute values; nothing here touches a GPU or a CUDA header. */
#include "gt_cublas_key.h"

#include <inttypes.h>
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

/* cublasComputeType_t -> gemmtune compute and the scale (alpha/beta) type cublasGemmEx implies.
 * Pedantic and emulated variants are different numerics that no key expresses. */
static gt_status_t map_compute(int ct, gt_compute_t *compute, gt_dtype_t *scale) {
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
    case GT_CUBLAS_COMPUTE_32I_PEDANTIC:
      return gt_err_set(GT_ERR_UNSUPPORTED, "pedantic compute type %d is not tuned", ct);
    case GT_CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case GT_CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      return gt_err_set(GT_ERR_UNSUPPORTED, "emulated compute type %d is not tuned", ct);
    default: return gt_err_set(GT_ERR_UNSUPPORTED, "unknown compute type %d", ct);
  }
}

static bool narrow_output(gt_dtype_t d) {
  return d != GT_DT_F32 && d != GT_DT_F64 && d != GT_DT_I32;
}

/* The handle's math mode can change the numerics of a cublasGemmEx call in ways the key does not
 * carry. Accepted: the default mode, and TF32 mode where it has no effect (inputs that are not
 * fp32). Rejected: TF32/tensor-op/emulation modes on fp32 inputs (the library decides whether to
 * down-convert), pedantic, unknown flag bits, and "disallow reduced-precision reduction" when the
 * output is narrower than the accumulator (a tuned split-K may reduce in the output type). */
static gt_status_t check_math_gemm_ex(int math, gt_dtype_t a_type, gt_dtype_t d_type) {
  int mode = math & 0xf, flags = math & ~0xf;
  if (flags & ~GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
    return gt_err_set(GT_ERR_UNSUPPORTED, "math mode 0x%x has unknown flag bits", math);
  if ((flags & GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) && narrow_output(d_type))
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "math mode disallows reduced-precision reduction (%s output)",
                      gt_dtype_name(d_type));
  if (mode == GT_CUBLAS_DEFAULT_MATH) return GT_OK;
  if (mode == GT_CUBLAS_TF32_TENSOR_OP_MATH && a_type != GT_DT_F32) return GT_OK;
  return gt_err_set(GT_ERR_UNSUPPORTED, "math mode %d with %s inputs is not part of the key",
                    mode, gt_dtype_name(a_type));
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

static gt_status_t check_env(const gt_cublas_env_t *env, bool want_host_pointers) {
  if (!env) return gt_err_set(GT_ERR_USAGE, "no environment given");
  if (want_host_pointers && env->pointer_mode != GT_CUBLAS_POINTER_MODE_HOST)
    return gt_err_set(GT_ERR_UNSUPPORTED, "pointer mode device: beta is not readable on the host");
  return GT_OK;
}

gt_status_t gt_cublas_key_gemm_strided_batched_ex(
    const gt_cublas_env_t *env, int transa, int transb, int64_t m, int64_t n, int64_t k,
    int atype, int64_t lda, int64_t stride_a, int btype, int64_t ldb, int64_t stride_b,
    const void *beta, int ctype, int64_t ldc, int64_t stride_c, int64_t batch_count,
    int compute_type, int algo, gt_problem_t *out) {
  gt_status_t s;
  if ((s = check_env(env, true)) != GT_OK) return s;
  /* Any other algo is the caller's explicit choice: honour it by passing through. */
  if (algo != GT_CUBLAS_GEMM_DEFAULT && algo != GT_CUBLAS_GEMM_DEFAULT_TENSOR_OP)
    return gt_err_set(GT_ERR_UNSUPPORTED, "non-default algo %d", algo);
  gt_problem_t p;
  gt_problem_init(&p);
  if ((s = gt_cublas_dtype(atype, &p.a_type)) != GT_OK) return s;
  if ((s = gt_cublas_dtype(btype, &p.b_type)) != GT_OK) return s;
  if ((s = gt_cublas_dtype(ctype, &p.c_type)) != GT_OK) return s;
  p.d_type = p.c_type;
  if ((s = map_compute(compute_type, &p.compute, &p.scale_type)) != GT_OK) return s;
  if ((s = check_math_gemm_ex(env->math_mode, p.a_type, p.d_type)) != GT_OK) return s;
  if ((s = fill_shape(env, transa, transb, m, n, k, lda, ldb, ldc, &p)) != GT_OK) return s;
  if (batch_count < 1)
    return gt_err_set(GT_ERR_UNSUPPORTED, "batch count %" PRId64 " < 1", batch_count);
  p.batch = batch_count;
  if (batch_count > 1) {
    if (stride_a < 0 || stride_b < 0 || stride_c < 0)
      return gt_err_set(GT_ERR_UNSUPPORTED, "negative batch stride");
    p.stride_a = stride_a;
    p.stride_b = stride_b;
    p.stride_c = stride_c;
  } /* batch 1: strides are meaningless and the key states them as 0 */
  if ((s = read_beta_zero(p.scale_type, beta, &p.beta_zero)) != GT_OK) return s;
  if ((s = finish(&p)) != GT_OK) return s;
  *out = p;
  return GT_OK;
}

gt_status_t gt_cublas_key_gemm_ex(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                  int64_t n, int64_t k, int atype, int64_t lda, int btype,
                                  int64_t ldb, const void *beta, int ctype, int64_t ldc,
                                  int compute_type, int algo, gt_problem_t *out) {
  return gt_cublas_key_gemm_strided_batched_ex(env, transa, transb, m, n, k, atype, lda, 0, btype,
                                               ldb, 0, beta, ctype, ldc, 0, 1, compute_type, algo,
                                               out);
}

gt_status_t gt_cublas_key_sgemm(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                const float *beta, int64_t ldc, gt_problem_t *out) {
  gt_status_t s;
  if ((s = check_env(env, true)) != GT_OK) return s;
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_F32;
  p.scale_type = GT_DT_F32;
  /* The typed fp32 routine is where the math mode selects the arithmetic (PyTorch's allow_tf32
   * sets CUBLAS_TF32_TENSOR_OP_MATH on its handle). The reduction flag cannot narrow an fp32
   * output, so it is harmless here. */
  int mode = env->math_mode & 0xf;
  if (env->math_mode & ~0xf & ~GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
    return gt_err_set(GT_ERR_UNSUPPORTED, "math mode 0x%x has unknown flag bits", env->math_mode);
  switch (mode) {
    case GT_CUBLAS_DEFAULT_MATH: p.compute = GT_COMPUTE_F32; break;
    case GT_CUBLAS_TF32_TENSOR_OP_MATH: p.compute = GT_COMPUTE_TF32; break;
    case GT_CUBLAS_TENSOR_OP_MATH: p.compute = GT_COMPUTE_F32_FAST_F16; break;
    default:
      return gt_err_set(GT_ERR_UNSUPPORTED, "math mode %d for cublasSgemm is not part of the key",
                        mode);
  }
  if ((s = fill_shape(env, transa, transb, m, n, k, lda, ldb, ldc, &p)) != GT_OK) return s;
  if ((s = read_beta_zero(GT_DT_F32, beta, &p.beta_zero)) != GT_OK) return s;
  if ((s = finish(&p)) != GT_OK) return s;
  *out = p;
  return GT_OK;
}

gt_status_t gt_cublas_key_hgemm(const gt_cublas_env_t *env, int transa, int transb, int64_t m,
                                int64_t n, int64_t k, int64_t lda, int64_t ldb,
                                const uint16_t *beta, int64_t ldc, gt_problem_t *out) {
  gt_status_t s;
  if ((s = check_env(env, true)) != GT_OK) return s;
  gt_problem_t p;
  gt_problem_init(&p);
  p.a_type = p.b_type = p.c_type = p.d_type = GT_DT_F16;
  p.compute = GT_COMPUTE_F16;
  p.scale_type = GT_DT_F16;
  /* fp16 accumulation into an fp16 output: the reduction flag changes nothing; TF32 and the
   * deprecated tensor-op mode apply to fp32 routines only. */
  int mode = env->math_mode & 0xf;
  if (env->math_mode & ~0xf & ~GT_CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)
    return gt_err_set(GT_ERR_UNSUPPORTED, "math mode 0x%x has unknown flag bits", env->math_mode);
  if (mode != GT_CUBLAS_DEFAULT_MATH && mode != GT_CUBLAS_TF32_TENSOR_OP_MATH &&
      mode != GT_CUBLAS_TENSOR_OP_MATH)
    return gt_err_set(GT_ERR_UNSUPPORTED, "math mode %d for cublasHgemm is not part of the key",
                      mode);
  if ((s = fill_shape(env, transa, transb, m, n, k, lda, ldb, ldc, &p)) != GT_OK) return s;
  if ((s = read_beta_zero(GT_DT_F16, beta, &p.beta_zero)) != GT_OK) return s;
  if ((s = finish(&p)) != GT_OK) return s;
  *out = p;
  return GT_OK;
}

static gt_status_t map_lt_epilogue(uint32_t e, gt_epilogue_t *out) {
  switch (e) {
    case GT_CUBLASLT_EPILOGUE_DEFAULT: *out = GT_EPI_NONE; return GT_OK;
    case GT_CUBLASLT_EPILOGUE_RELU: *out = GT_EPI_RELU; return GT_OK;
    case GT_CUBLASLT_EPILOGUE_BIAS: *out = GT_EPI_BIAS; return GT_OK;
    case GT_CUBLASLT_EPILOGUE_RELU_BIAS: *out = GT_EPI_BIAS_RELU; return GT_OK;
    case GT_CUBLASLT_EPILOGUE_GELU: *out = GT_EPI_GELU; return GT_OK;
    case GT_CUBLASLT_EPILOGUE_GELU_BIAS: *out = GT_EPI_BIAS_GELU; return GT_OK;
    default:
      /* AUX outputs and gradient epilogues write buffers a tuned candidate would not. */
      return gt_err_set(GT_ERR_UNSUPPORTED, "epilogue %u (aux output or gradient) is not tuned",
                        (unsigned)e);
  }
}

static bool epilogue_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

static gt_status_t check_layout(const char *name, const gt_cublaslt_layout_t *l, gt_dtype_t *t) {
  if (!l->ok) return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: attributes unreadable", name);
  if (l->order != GT_CUBLASLT_ORDER_COL)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: order %d is not column-major", name,
                      (int)l->order);
  if (l->plane_offset != 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: planar complex", name);
  if (l->batch_mode != GT_CUBLASLT_BATCH_MODE_STRIDED)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout %s: batch mode %u is not strided", name,
                      (unsigned)l->batch_mode);
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

gt_status_t gt_cublas_key_lt_matmul(const gt_cublas_env_t *env, const gt_cublaslt_desc_t *d,
                                    const gt_cublaslt_layout_t lay[4], const void *beta,
                                    gt_problem_t *out) {
  gt_status_t s;
  if ((s = check_env(env, false)) != GT_OK) return s;
  if (!d || !d->ok) return gt_err_set(GT_ERR_UNSUPPORTED, "matmul descriptor unreadable");
  if (d->extras_unreadable)
    return gt_err_set(GT_ERR_UNSUPPORTED, "matmul descriptor: an attribute could not be read");
  if (d->pointer_mode != GT_CUBLAS_POINTER_MODE_HOST)
    return gt_err_set(GT_ERR_UNSUPPORTED, "pointer mode %d: alpha/beta are not host scalars",
                      (int)d->pointer_mode);
  for (int i = 0; i < 8; i++)
    if (d->scale_ptr[i])
      return gt_err_set(GT_ERR_UNSUPPORTED, "FP8/block scaling or amax pointers are set");
  for (int i = 0; i < 6; i++)
    if (d->scale_mode[i])
      return gt_err_set(GT_ERR_UNSUPPORTED, "scaling mode %d is set", (int)d->scale_mode[i]);
  if (d->fast_accum)
    return gt_err_set(GT_ERR_UNSUPPORTED, "FP8 fast accumulation is not part of the key");
  if (d->emulation_desc)
    return gt_err_set(GT_ERR_UNSUPPORTED, "an emulation descriptor is set");
  if (d->sm_count_target != 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "SM count target %d is set", (int)d->sm_count_target);
  if (d->transc != GT_CUBLAS_OP_N)
    return gt_err_set(GT_ERR_UNSUPPORTED, "transc = %d", (int)d->transc);
  if (d->fill_mode != GT_CUBLAS_FILL_MODE_FULL)
    return gt_err_set(GT_ERR_UNSUPPORTED, "fill mode %d is not full", (int)d->fill_mode);

  gt_problem_t p;
  gt_problem_init(&p);
  gt_dtype_t scale_from_compute;
  /* cuBLASLt states the scale type explicitly; the one cublasGemmEx would imply is not used. */
  if ((s = map_compute(d->compute_type, &p.compute, &scale_from_compute)) != GT_OK) return s;
  (void)scale_from_compute;
  if ((s = gt_cublas_dtype(d->scale_type, &p.scale_type)) != GT_OK) return s;
  if ((s = map_trans("transa", d->transa, &p.transa)) != GT_OK) return s;
  if ((s = map_trans("transb", d->transb, &p.transb)) != GT_OK) return s;
  if ((s = map_lt_epilogue(d->epilogue, &p.epilogue)) != GT_OK) return s;

  static const char *const names[4] = {"A", "B", "C", "D"};
  gt_dtype_t t[4];
  for (int i = 0; i < 4; i++)
    if ((s = check_layout(names[i], &lay[i], &t[i])) != GT_OK) return s;
  p.a_type = t[0];
  p.b_type = t[1];
  p.c_type = t[2];
  p.d_type = t[3];

  const gt_cublaslt_layout_t *A = &lay[0], *B = &lay[1], *C = &lay[2], *D = &lay[3];
  p.m = (int64_t)D->rows;
  p.n = (int64_t)D->cols;
  p.k = (int64_t)(p.transa == GT_TRANS_N ? A->cols : A->rows);
  uint64_t a_rows = p.transa == GT_TRANS_N ? (uint64_t)p.m : (uint64_t)p.k;
  uint64_t b_rows = p.transb == GT_TRANS_N ? (uint64_t)p.k : (uint64_t)p.n;
  uint64_t b_cols = p.transb == GT_TRANS_N ? (uint64_t)p.n : (uint64_t)p.k;
  if (A->rows != a_rows || B->rows != b_rows || B->cols != b_cols || C->rows != D->rows ||
      C->cols != D->cols)
    return gt_err_set(GT_ERR_UNSUPPORTED, "layout dimensions are inconsistent");
  /* The key has one leading dimension and one batch stride for C and D (as cublasGemmEx). */
  if (C->ld != D->ld)
    return gt_err_set(GT_ERR_UNSUPPORTED, "ldd %" PRId64 " != ldc %" PRId64, D->ld, C->ld);
  p.lda = A->ld;
  p.ldb = B->ld;
  p.ldc = C->ld;
  if (A->batch_count != D->batch_count || B->batch_count != D->batch_count ||
      C->batch_count != D->batch_count)
    return gt_err_set(GT_ERR_UNSUPPORTED, "batch counts differ between layouts");
  p.batch = D->batch_count;
  if (p.batch > 1) {
    if (C->batch_stride != D->batch_stride)
      return gt_err_set(GT_ERR_UNSUPPORTED, "D batch stride != C batch stride");
    if (A->batch_stride < 0 || B->batch_stride < 0 || C->batch_stride < 0)
      return gt_err_set(GT_ERR_UNSUPPORTED, "negative batch stride");
    p.stride_a = A->batch_stride;
    p.stride_b = B->batch_stride;
    p.stride_c = C->batch_stride;
  }

  if (epilogue_has_bias(p.epilogue)) {
    if (!d->bias) return gt_err_set(GT_ERR_UNSUPPORTED, "bias epilogue without a bias pointer");
    if (d->bias_data_type != -1) {
      gt_dtype_t bt;
      if (gt_cublas_dtype(d->bias_data_type, &bt) != GT_OK || bt != p.d_type)
        return gt_err_set(GT_ERR_UNSUPPORTED, "bias type %d differs from D's type",
                          (int)d->bias_data_type);
    }
    if (p.batch > 1)
      return gt_err_set(GT_ERR_UNSUPPORTED, "batched bias is not part of the key");
  }
  if ((s = read_beta_zero(p.scale_type, beta, &p.beta_zero)) != GT_OK) return s;
  memcpy(p.arch, env->arch, sizeof p.arch);
  p.arch[sizeof p.arch - 1] = '\0';
  p.sm_count = env->sm_count;
  if ((s = finish(&p)) != GT_OK) return s;
  *out = p;
  return GT_OK;
}
