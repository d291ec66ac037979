/* Run-time resolution of cuBLAS/cuBLASLt, CUDA type mappings and the CUDA/cuBLAS error reporting. */
#define _GNU_SOURCE
#include "gt_cudalib.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- library resolution ----------------------------------------------------------------- */

typedef enum { PART_LT = 0, PART_BLAS = 1 } part_t;

/* One entry per symbol: where its pointer goes in the table. Optional ones may be missing. */
typedef struct sym {
  const char *name;
  size_t offset;
  part_t part;
  bool optional;
} sym_t;

#define SYM(n, member, part) {n, offsetof(gt_cublas_api_t, member), part, false}
#define OPT(n, member, part) {n, offsetof(gt_cublas_api_t, member), part, true}

static const sym_t k_syms[] = {
    SYM("cublasLtCreate", LtCreate, PART_LT),
    SYM("cublasLtDestroy", LtDestroy, PART_LT),
    SYM("cublasLtGetVersion", LtGetVersion, PART_LT),
    SYM("cublasLtMatmulDescCreate", LtMatmulDescCreate, PART_LT),
    SYM("cublasLtMatmulDescDestroy", LtMatmulDescDestroy, PART_LT),
    SYM("cublasLtMatmulDescSetAttribute", LtMatmulDescSetAttribute, PART_LT),
    SYM("cublasLtMatmulDescGetAttribute", LtMatmulDescGetAttribute, PART_LT),
    SYM("cublasLtMatrixLayoutCreate", LtMatrixLayoutCreate, PART_LT),
    SYM("cublasLtMatrixLayoutDestroy", LtMatrixLayoutDestroy, PART_LT),
    SYM("cublasLtMatrixLayoutSetAttribute", LtMatrixLayoutSetAttribute, PART_LT),
    SYM("cublasLtMatrixLayoutGetAttribute", LtMatrixLayoutGetAttribute, PART_LT),
    SYM("cublasLtMatmulPreferenceCreate", LtMatmulPreferenceCreate, PART_LT),
    SYM("cublasLtMatmulPreferenceSetAttribute", LtMatmulPreferenceSetAttribute, PART_LT),
    SYM("cublasLtMatmulPreferenceDestroy", LtMatmulPreferenceDestroy, PART_LT),
    SYM("cublasLtMatmulAlgoGetHeuristic", LtMatmulAlgoGetHeuristic, PART_LT),
    SYM("cublasLtMatmulAlgoGetIds", LtMatmulAlgoGetIds, PART_LT),
    SYM("cublasLtMatmulAlgoInit", LtMatmulAlgoInit, PART_LT),
    SYM("cublasLtMatmulAlgoCheck", LtMatmulAlgoCheck, PART_LT),
    SYM("cublasLtMatmulAlgoCapGetAttribute", LtMatmulAlgoCapGetAttribute, PART_LT),
    SYM("cublasLtMatmulAlgoConfigSetAttribute", LtMatmulAlgoConfigSetAttribute, PART_LT),
    SYM("cublasLtMatmulAlgoConfigGetAttribute", LtMatmulAlgoConfigGetAttribute, PART_LT),
    SYM("cublasLtMatmul", LtMatmul, PART_LT),
    OPT("cublasLtGetStatusString", LtGetStatusString, PART_LT),

    SYM("cublasCreate_v2", Create, PART_BLAS),
    SYM("cublasDestroy_v2", Destroy, PART_BLAS),
    SYM("cublasSetStream_v2", SetStream, PART_BLAS),
    SYM("cublasGetStream_v2", GetStream, PART_BLAS),
    SYM("cublasSetWorkspace_v2", SetWorkspace, PART_BLAS),
    SYM("cublasSetMathMode", SetMathMode, PART_BLAS),
    SYM("cublasGetMathMode", GetMathMode, PART_BLAS),
    SYM("cublasGetPointerMode_v2", GetPointerMode, PART_BLAS),
    SYM("cublasSetPointerMode_v2", SetPointerMode, PART_BLAS),
    SYM("cublasGemmEx", GemmEx, PART_BLAS),
    SYM("cublasGemmStridedBatchedEx", GemmStridedBatchedEx, PART_BLAS),
    SYM("cublasSgemm_v2", Sgemm, PART_BLAS),
    SYM("cublasHgemm", Hgemm, PART_BLAS),
    SYM("cublasGetVersion_v2", GetVersion, PART_BLAS),
    OPT("cublasGetStatusString", GetStatusString, PART_BLAS),
    OPT("cublasGetProperty", GetProperty, PART_BLAS),
};

/* Sonames in preference order. The versioned names double as the symbol version nodes
 * (cublasGemmEx@@libcublas.so.13). The unversioned name covers a toolkit's dev symlink. */
static const char *const k_lt_names[] = {"libcublasLt.so.13", "libcublasLt.so", "libcublasLt.so.12"};
static const char *const k_blas_names[] = {"libcublas.so.13", "libcublas.so", "libcublas.so.12"};
#define NNAMES 3

typedef struct part_state {
  gt_status_t status;
  char msg[512];
} part_state_t;

static gt_cublas_api_t g_api;
static part_state_t g_part[2];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Prefer a copy the process already has: two cuBLAS copies in one process would give the
 * application's calls and ours different handles, workspaces and (under the shim) versions.
 * Otherwise the file `env` names (GEMMTUNE_CUBLASLT_LIB, GEMMTUNE_CUBLAS_LIB: `tune` sets them to
 * the copy a captured application loaded, so its rows carry that copy's version), else the
 * normal search path. A named file that cannot be loaded is an error, never a silent fallback to
 * another version. */
static void *open_library(const char *const *names, const char *env, bool *was_loaded,
                          char *why, size_t cap) {
  for (int i = 0; i < NNAMES; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      *was_loaded = true;
      return h;
    }
  }
  const char *file = getenv(env);
  if (file && *file) {
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    const char *e = h ? NULL : dlerror();
    if (!h) snprintf(why, cap, "cannot load %s=%s: %s", env, file, e ? e : "not found");
    *was_loaded = false;
    return h;
  }
  for (int i = 0; i < NNAMES; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      *was_loaded = false;
      return h;
    }
  }
  return NULL;
}

/* Look name up in h only. The versioned lookup comes first; the plain one covers libraries built
 * without version nodes. Either way the search is confined to h and its dependencies, which a
 * preloaded interposer is not part of. The owner check makes that explicit. */
static void *resolve(void *h, const struct link_map *owner, const char *const *names,
                     const char *sym) {
  void *fn = NULL;
  for (int i = 0; i < NNAMES && !fn; i++)
    if (strstr(names[i], ".so.")) fn = dlvsym(h, sym, names[i]);
  if (!fn) fn = dlsym(h, sym);
  if (!fn) return NULL;
  Dl_info info;
  struct link_map *lm = NULL;
  if (owner && dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm && lm != owner)
    return NULL; /* defined by some other object (an interposer): never ours to call */
  return fn;
}

static void load_part(part_t part, const char *const *names) {
  part_state_t *ps = &g_part[part];
  bool was_loaded = false;
  char named[400] = "";
  void *h = open_library(names, part == PART_LT ? "GEMMTUNE_CUBLASLT_LIB" : "GEMMTUNE_CUBLAS_LIB",
                         &was_loaded, named, sizeof named);
  if (!h) {
    const char *why = dlerror();
    ps->status = GT_ERR_LIBRARY;
    if (named[0]) snprintf(ps->msg, sizeof ps->msg, "%s", named);
    else
      snprintf(ps->msg, sizeof ps->msg, "cannot load %s (also tried %s, %s): %s", names[0],
               names[1], names[2], why ? why : "not found");
    return;
  }
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) lm = NULL;
  char *path = part == PART_LT ? g_api.cublaslt_path : g_api.cublas_path;
  snprintf(path, sizeof g_api.cublas_path, "%s", lm && lm->l_name ? lm->l_name : names[0]);
  for (size_t i = 0; i < sizeof k_syms / sizeof k_syms[0]; i++) {
    const sym_t *s = &k_syms[i];
    if (s->part != part) continue;
    void *fn = resolve(h, lm, names, s->name);
    if (!fn && !s->optional) {
      ps->status = GT_ERR_LIBRARY;
      snprintf(ps->msg, sizeof ps->msg, "%s: symbol %s not found (library too old or not cuBLAS)",
               path, s->name);
      return;
    }
    memcpy((char *)&g_api + s->offset, &fn, sizeof fn);
  }
  if (part == PART_LT) {
    g_api.have_cublaslt = true;
    g_api.cublaslt_was_loaded = was_loaded;
  } else {
    g_api.have_cublas = true;
    g_api.cublas_was_loaded = was_loaded;
  }
  ps->status = GT_OK;
}

static void load_once(void) {
  /* cuBLASLt first: libcublas depends on it, so it is the one both parts need. */
  load_part(PART_LT, k_lt_names);
  if (g_part[PART_LT].status == GT_OK) {
    load_part(PART_BLAS, k_blas_names);
  } else {
    g_part[PART_BLAS] = g_part[PART_LT];
  }
}

gt_status_t gt_cudalib_load(const gt_cublas_api_t **out) {
  pthread_once(&g_once, load_once);
  *out = NULL;
  for (int p = 0; p < 2; p++)
    if (g_part[p].status != GT_OK) return gt_err_set(g_part[p].status, "%s", g_part[p].msg);
  *out = &g_api;
  return GT_OK;
}

gt_status_t gt_cudalib_load_lt(const gt_cublas_api_t **out) {
  pthread_once(&g_once, load_once);
  *out = NULL;
  if (g_part[PART_LT].status != GT_OK)
    return gt_err_set(g_part[PART_LT].status, "%s", g_part[PART_LT].msg);
  *out = &g_api;
  return GT_OK;
}

/* ---- type mappings ------------------------------------------------------------------------ */

gt_status_t gt_cudalib_data_type(gt_dtype_t t, cudaDataType_t *out) {
  switch (t) {
    case GT_DT_F32: *out = CUDA_R_32F; return GT_OK;
    case GT_DT_F16: *out = CUDA_R_16F; return GT_OK;
    case GT_DT_BF16: *out = CUDA_R_16BF; return GT_OK;
    case GT_DT_F8E4M3FN: *out = CUDA_R_8F_E4M3; return GT_OK;
    case GT_DT_F8E5M2: *out = CUDA_R_8F_E5M2; return GT_OK;
    case GT_DT_I8: *out = CUDA_R_8I; return GT_OK;
    case GT_DT_I32: *out = CUDA_R_32I; return GT_OK;
    case GT_DT_F64: *out = CUDA_R_64F; return GT_OK;
    default: break;
  }
  return gt_err_set(GT_ERR_UNSUPPORTED, "no CUDA data type for element type %d", (int)t);
}

gt_status_t gt_cudalib_compute_type(gt_compute_t c, cublasComputeType_t *out) {
  switch (c) {
    case GT_COMPUTE_F32: *out = CUBLAS_COMPUTE_32F; return GT_OK;
    case GT_COMPUTE_TF32: *out = CUBLAS_COMPUTE_32F_FAST_TF32; return GT_OK;
    case GT_COMPUTE_F16: *out = CUBLAS_COMPUTE_16F; return GT_OK;
    case GT_COMPUTE_F64: *out = CUBLAS_COMPUTE_64F; return GT_OK;
    case GT_COMPUTE_I32: *out = CUBLAS_COMPUTE_32I; return GT_OK;
    case GT_COMPUTE_F32_FAST_F16: *out = CUBLAS_COMPUTE_32F_FAST_16F; return GT_OK;
    case GT_COMPUTE_F32_FAST_BF16: *out = CUBLAS_COMPUTE_32F_FAST_16BF; return GT_OK;
    default: break;
  }
  return gt_err_set(GT_ERR_UNSUPPORTED, "no cuBLAS compute type for compute %d", (int)c);
}

gt_dtype_t gt_cudalib_bias_type(const gt_problem_t *p) {
  if (p->d_type == GT_DT_F8E4M3FN || p->d_type == GT_DT_F8E5M2) return GT_DT_BF16;
  return p->d_type;
}

/* ---- errors ------------------------------------------------------------------------------- */

const char *gt_cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_?";
}

static atomic_bool g_broken;

bool gt_cuda_error_is_sticky(cudaError_t e) {
  /* The errors cudaError_t documents as leaving "the process in an inconsistent state". */
  switch (e) {
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContained:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorExternalDevice:
      return true;
    default:
      return false;
  }
}

bool gt_cuda_context_broken(void) { return atomic_load(&g_broken); }
void gt_cuda_mark_context_broken(void) { atomic_store(&g_broken, true); }

static const char *base_name(const char *file) {
  const char *s = strrchr(file, '/');
  return s ? s + 1 : file;
}

gt_status_t gt_cuda_err(cudaError_t e, const char *what, const char *file, int line) {
  const char *name = cudaGetErrorName(e), *str = cudaGetErrorString(e);
  if (gt_cuda_error_is_sticky(e)) {
    gt_cuda_mark_context_broken();
    return gt_err_set(GT_ERR_DEVICE,
                      "device fault: %s (%s) at %s:%d in %s; the CUDA context is unusable", name,
                      str, base_name(file), line, what);
  }
  gt_status_t s = e == cudaErrorMemoryAllocation ? GT_ERR_NOMEM : GT_ERR_DEVICE;
  return gt_err_set(s, "%s:%d: %s: %s (%s)", base_name(file), line, what, name, str);
}

gt_status_t gt_cublas_err(cublasStatus_t st, const char *what, const char *file, int line) {
  if (st == CUBLAS_STATUS_EXECUTION_FAILED || st == CUBLAS_STATUS_INTERNAL_ERROR) {
    /* A kernel fault inside cuBLAS surfaces as EXECUTION_FAILED; report the real cause. */
    cudaError_t e = cudaPeekAtLastError();
    if (gt_cuda_error_is_sticky(e)) return gt_cuda_err(e, what, file, line);
  }
  gt_status_t s = GT_ERR_LIBRARY;
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_ARCH_MISMATCH)
    s = GT_ERR_UNSUPPORTED;
  else if (st == CUBLAS_STATUS_ALLOC_FAILED)
    s = GT_ERR_NOMEM;
  /* The library's own description when it is loaded (resolved from its handle, so this never
   * calls into an interposer). */
  gt_pfn_cublasGetStatusString str = g_api.LtGetStatusString ? g_api.LtGetStatusString
                                                             : g_api.GetStatusString;
  const char *desc = str ? str(st) : NULL;
  return gt_err_set(s, "%s:%d: %s: %s%s%s%s", base_name(file), line, what,
                    gt_cublas_status_name(st), desc ? " (" : "", desc ? desc : "", desc ? ")" : "");
}

gt_status_t gt_cuda_device_count(int *count) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (count) *count = n;
  if (e != cudaSuccess) return gt_err_set(GT_ERR_DEVICE, "no CUDA device: %s", cudaGetErrorString(e));
  if (n == 0) return gt_err_set(GT_ERR_DEVICE, "no CUDA device");
  return GT_OK;
}
