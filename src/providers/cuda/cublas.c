/* Provider "cublas": the baseline, cublasGemmEx with CUBLAS_GEMM_DEFAULT, called the way
 * frameworks call it (PyTorch 2.11's bf16 nn.Linear: transa=T, transb=N, CUBLAS_COMPUTE_32F,
 * host pointer mode, a 32 MiB workspace). Every candidate of every other provider is measured
 * against this one on the same bench, so it must be the live path, not a tuned imitation of it. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gt_provider.h"
#include "gt_cuda_kernel_names.h"
#include "platform/gt_cudalib.h"

#define GT_CUBLAS_CAND_NAME "cublas_gemmex_default"
/* PyTorch on Hopper gives cuBLAS a 32 MiB workspace; cuBLAS's heuristics pick split-K
 * kernels only when the workspace allows, so the baseline gets the same amount. Setting it
 * explicitly also keeps the call capturable in a CUDA graph (no allocation from the pool). */
#define GT_CUBLAS_WS_BYTES ((size_t)32 << 20)
#define GT_CUBLAS_MAX_DEVICES 64

extern const gt_provider_t gt_provider_cublas;

typedef struct cublas_state {
  const gt_cublas_api_t *api;
  cublasHandle_t handle;
  gt_problem_t p;
  cudaDataType_t at, bt, ct;
  cublasComputeType_t compute;
  size_t c_bytes; /* extent of C/D, for the out-of-place copy */
} cublas_state_t;

/* One handle per thread and device, kept for the life of the thread: cublasCreate costs
 * milliseconds and allocates, and handles are not meant to be shared between threads. */
static _Thread_local cublasHandle_t t_handles[GT_CUBLAS_MAX_DEVICES];

static gt_status_t handle_for_current_device(const gt_cublas_api_t *api, cublasHandle_t *out) {
  int dev = 0;
  GT_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= GT_CUBLAS_MAX_DEVICES)
    return gt_err_set(GT_ERR_UNSUPPORTED, "CUDA device %d: more than %d devices", dev,
                      GT_CUBLAS_MAX_DEVICES);
  if (!t_handles[dev]) GT_CUBLAS_CHECK(api->Create(&t_handles[dev]));
  *out = t_handles[dev];
  return GT_OK;
}

static gt_status_t cublas_init(void) {
  const gt_cublas_api_t *api;
  gt_status_t st = gt_cudalib_load(&api);
  if (st != GT_OK) return st;
  if ((st = gt_cuda_device_count(NULL)) != GT_OK) return st;
  return GT_OK;
}

static char g_version[48] = "cublas=?";
static pthread_once_t g_version_once = PTHREAD_ONCE_INIT;

static void version_once(void) {
  const gt_cublas_api_t *api;
  if (gt_cudalib_load(&api) != GT_OK) return;
  int v = 0;
  if (api->GetProperty) {
    int major = 0, minor = 0, patch = 0;
    if (api->GetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        api->GetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        api->GetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
      v = major * 10000 + minor * 100 + patch;
  }
  if (!v) {
    cublasHandle_t h;
    if (handle_for_current_device(api, &h) != GT_OK || api->GetVersion(h, &v) != CUBLAS_STATUS_SUCCESS)
      return;
  }
  snprintf(g_version, sizeof g_version, "cublas=%d", v);
}

static const char *cublas_lib_version(void) {
  pthread_once(&g_version_once, version_once);
  return g_version;
}

static bool is_fp8(gt_dtype_t t) { return t == GT_DT_F8E4M3FN || t == GT_DT_F8E5M2; }

/* The type combinations cublasGemmEx documents (cuBLAS 13 "cublasGemmEx" table). Anything else
 * is excluded up front with the reason, rather than failing at run time. */
static bool gemmex_supports(const gt_problem_t *p, char *why, size_t cap) {
  gt_dtype_t a = p->a_type, b = p->b_type, c = p->c_type, s = p->scale_type;
  if (is_fp8(a) || is_fp8(b) || is_fp8(c) || is_fp8(p->d_type)) {
    snprintf(why, cap, "cublasGemmEx has no fp8 path (cuBLASLt only)");
    return false;
  }
  if (c != p->d_type) {
    snprintf(why, cap, "cublasGemmEx writes D in C's type (c=%s, d=%s)", gt_dtype_name(c),
             gt_dtype_name(p->d_type));
    return false;
  }
  if (a != b) {
    snprintf(why, cap, "cublasGemmEx needs A and B of one type (a=%s, b=%s)", gt_dtype_name(a),
             gt_dtype_name(b));
    return false;
  }
  bool ok = false;
  switch (p->compute) {
    case GT_COMPUTE_F16:
      ok = a == GT_DT_F16 && c == GT_DT_F16 && s == GT_DT_F16;
      break;
    case GT_COMPUTE_F32:
      ok = s == GT_DT_F32 &&
           ((a == GT_DT_BF16 && (c == GT_DT_BF16 || c == GT_DT_F32)) ||
            (a == GT_DT_F16 && (c == GT_DT_F16 || c == GT_DT_F32)) ||
            (a == GT_DT_I8 && c == GT_DT_F32) || (a == GT_DT_F32 && c == GT_DT_F32));
      break;
    case GT_COMPUTE_TF32:
    case GT_COMPUTE_F32_FAST_F16:
    case GT_COMPUTE_F32_FAST_BF16:
      ok = a == GT_DT_F32 && c == GT_DT_F32 && s == GT_DT_F32;
      break;
    case GT_COMPUTE_F64:
      ok = a == GT_DT_F64 && c == GT_DT_F64 && s == GT_DT_F64;
      break;
    case GT_COMPUTE_I32:
      ok = a == GT_DT_I8 && c == GT_DT_I32 && (s == GT_DT_I32 || s == GT_DT_F32);
      break;
    default:
      break;
  }
  if (!ok) {
    snprintf(why, cap, "cublasGemmEx has no %s x %s -> %s path with %s compute, %s scale",
             gt_dtype_name(a), gt_dtype_name(b), gt_dtype_name(c), gt_compute_name(p->compute),
             gt_dtype_name(s));
    return false;
  }
  return true;
}

/* Why cublasGemmEx cannot serve p ("" when it can). */
static bool applicable(const gt_problem_t *p, char *why, size_t cap) {
  why[0] = '\0';
  if (p->op != GT_OP_GEMM) {
    snprintf(why, cap, "not a GEMM");
    return false;
  }
  if (p->epilogue != GT_EPI_NONE) {
    snprintf(why, cap, "cublasGemmEx has no %s epilogue", gt_epilogue_name(p->epilogue));
    return false;
  }
  if (p->m > INT_MAX || p->n > INT_MAX || p->k > INT_MAX || p->lda > INT_MAX ||
      p->ldb > INT_MAX || p->ldc > INT_MAX || p->batch > INT_MAX) {
    snprintf(why, cap, "dimension above INT_MAX (cublasGemmEx takes int)");
    return false;
  }
  return gemmex_supports(p, why, cap);
}

static void fill_candidate(gt_candidate_t *c) {
  memset(c, 0, sizeof *c);
  c->provider = &gt_provider_cublas;
  snprintf(c->name, sizeof c->name, "%s", GT_CUBLAS_CAND_NAME);
  c->is_baseline = true;
}

static gt_status_t cublas_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o,
                                    gt_cand_list_t *out) {
  char why[GT_REASON_MAX];
  if (!applicable(p, why, sizeof why))
    return gt_cand_list_exclude(out, &gt_provider_cublas, GT_CUBLAS_CAND_NAME, "%s", why);
  gt_candidate_t c;
  fill_candidate(&c);
  return gt_cand_list_push(out, &c);
}

static gt_status_t cublas_from_name(const char *name, const gt_problem_t *p, gt_candidate_t *out) {
  if (strcmp(name, GT_CUBLAS_CAND_NAME) != 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a cublas candidate (only %s)", name,
                      GT_CUBLAS_CAND_NAME);
  char why[GT_REASON_MAX];
  if (!applicable(p, why, sizeof why)) return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
  fill_candidate(out);
  return GT_OK;
}

static gt_status_t cublas_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                                  size_t *ws_needed) {
  char why[GT_REASON_MAX];
  if (!applicable(p, why, sizeof why)) return gt_err_set(GT_ERR_UNSUPPORTED, "%s", why);
  const gt_cublas_api_t *api;
  gt_status_t st = gt_cudalib_load(&api);
  if (st != GT_OK) return st;
  cublas_state_t *s = calloc(1, sizeof *s);
  if (!s) return gt_err_set(GT_ERR_NOMEM, "cublas: out of host memory");
  s->api = api;
  s->p = *p;
  if ((st = gt_cudalib_data_type(p->a_type, &s->at)) != GT_OK ||
      (st = gt_cudalib_data_type(p->b_type, &s->bt)) != GT_OK ||
      (st = gt_cudalib_data_type(p->c_type, &s->ct)) != GT_OK ||
      (st = gt_cudalib_compute_type(p->compute, &s->compute)) != GT_OK ||
      (st = handle_for_current_device(api, &s->handle)) != GT_OK) {
    free(s);
    return st;
  }
  s->c_bytes = gt_problem_operand_elems(p, 'C') * gt_dtype_size(p->c_type);
  *state = s;
  *ws_needed = GT_CUBLAS_WS_BYTES;
  return GT_OK;
}

static gt_status_t cublas_run(void *state, const gt_operands_t *ops, void *stream) {
  cublas_state_t *s = state;
  const gt_cublas_api_t *api = s->api;
  const gt_problem_t *p = &s->p;
  cudaStream_t st = (cudaStream_t)stream;
  /* cublasSetStream resets the workspace to the default pool, so the workspace goes second. */
  GT_CUBLAS_CHECK(api->SetStream(s->handle, st));
  if (ops->workspace) GT_CUBLAS_CHECK(api->SetWorkspace(s->handle, ops->workspace, ops->ws_size));
  GT_CUBLAS_CHECK(api->SetPointerMode(s->handle, CUBLAS_POINTER_MODE_HOST));
  GT_CUBLAS_CHECK(api->SetMathMode(s->handle, CUBLAS_DEFAULT_MATH));

  /* cublasGemmEx updates C in place. A bench that keeps C and D apart (to see which outputs a
   * candidate wrote) gets C copied into D first; the live path and timed runs pass C == D. */
  void *D = ops->D;
  if (!p->beta_zero && ops->C && ops->C != ops->D)
    GT_CUDA_CHECK(cudaMemcpyAsync(D, ops->C, s->c_bytes, cudaMemcpyDeviceToDevice, st));

  cublasOperation_t ta = p->transa == GT_TRANS_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = p->transb == GT_TRANS_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (p->batch == 1) {
    GT_CUBLAS_CHECK(api->GemmEx(s->handle, ta, tb, (int)p->m, (int)p->n, (int)p->k, ops->alpha,
                                ops->A, s->at, (int)p->lda, ops->B, s->bt, (int)p->ldb, ops->beta, D,
                                s->ct, (int)p->ldc, s->compute, CUBLAS_GEMM_DEFAULT));
  } else {
    GT_CUBLAS_CHECK(api->GemmStridedBatchedEx(
        s->handle, ta, tb, (int)p->m, (int)p->n, (int)p->k, ops->alpha, ops->A, s->at, (int)p->lda,
        (long long)p->stride_a, ops->B, s->bt, (int)p->ldb, (long long)p->stride_b, ops->beta, D,
        s->ct, (int)p->ldc, (long long)p->stride_c, (int)p->batch, s->compute,
        CUBLAS_GEMM_DEFAULT));
  }
  return GT_OK;
}

static void cublas_release(void *state) { free(state); }

/* prepare is host work once this thread has its cuBLAS handle for the current device; creating
 * one (cublasCreate) allocates device memory, which must not happen inside a capture. */
static bool cublas_capture_safe(void) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return dev >= 0 && dev < GT_CUBLAS_MAX_DEVICES && t_handles[dev] != NULL;
}

/* cublasGemmEx with its default algorithm is what frameworks call: today's path for GemmEx calls,
 * and for CUDA shapes without an epilogue that do not say where they came from (cublasGemmEx has
 * no epilogue, so a biased key is some other entry point's). */
/* Not for fp8 keys: cublasGemmEx has no fp8 path, their calls come through cuBLASLt. */
static bool cublas_baseline_for(gt_entry_t e, const gt_problem_t *p) {
  return (e == GT_ENTRY_DEFAULT || e == GT_ENTRY_GEMMEX) &&
         (!p || (p->epilogue == GT_EPI_NONE && !is_fp8(p->a_type) && !is_fp8(p->b_type)));
}

const gt_provider_t gt_provider_cublas = {
    .api_version = GT_PROVIDER_API_VERSION,
    .name = "cublas",
    .description = "cublasGemmEx with CUBLAS_GEMM_DEFAULT: the path frameworks call (baseline)",
    .backend = GT_BACKEND_CUDA,
    .init = cublas_init,
    .baseline_for = cublas_baseline_for,
    .lib_version = cublas_lib_version,
    .enumerate = cublas_enumerate,
    .from_name = cublas_from_name,
    .prepare = cublas_prepare,
    .run = cublas_run,
    .release = cublas_release,
    .row_kernels = gt_cublas_row_kernels,
    .owns_kernel = gt_cublas_owns_kernel,
    .same_kernel = gt_cublas_same_kernel,
    .capture_safe = cublas_capture_safe,
};
