// Provider "testonly_cuda": planted bad candidates that prove the harness catches them. Enabled
// only with GEMMTUNE_TEST_PROVIDERS=1, so a real tuning run can never pick one.
//
//   testonly_cuda_wrong  a fast, wrong GEMM for bf16/f16 nn.Linear (TN) problems: it reads only
//                        the first K/8 of every row and scales by 8, so it moves 1/8 of the
//                        weights and beats cuBLAS on decode shapes. The gate must reject it.
//   testonly_cuda_fault  stores through an invalid pointer: an illegal-address fault, sticky for
//                        the CUDA context. The harness must report a device fault, not hang or
//                        crash, and mark the context unusable.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gt_provider.h"
#include "platform/gt_cudalib.h"

extern "C" {
extern const gt_provider_t gt_provider_testonly_cuda;
}

namespace {

const char *const kWrong = "testonly_cuda_wrong";
const char *const kFault = "testonly_cuda_fault";

enum Kind { KIND_WRONG = 1, KIND_FAULT = 2 };

struct State {
  Kind kind;
  gt_problem_t p;
};

__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ void from_f(__nv_bfloat16 *d, float v) { *d = __float2bfloat16_rn(v); }
__device__ __forceinline__ void from_f(__half *d, float v) { *d = __float2half_rn(v); }

// One warp per output row i (an output feature): D[i, j] = scale * sum_{k < kk} A[k, i] * B[k, j].
template <typename T>
__global__ void wrong_tn_kernel(const T *__restrict__ A, const T *__restrict__ B, T *__restrict__ D,
                                int m, int n, int kk, long long lda, long long ldb, long long ldc,
                                float scale) {
  long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (warp >= m) return;
  const T *a = A + warp * lda;
  for (int j = 0; j < n; j++) {
    const T *b = B + (long long)j * ldb;
    float acc = 0.f;
    for (int k = lane; k < kk; k += 32) acc += to_f(a[k]) * to_f(b[k]);
    for (int off = 16; off; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) from_f(&D[warp + (long long)j * ldc], acc * scale);
  }
}

__global__ void fault_kernel(int *bad) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *(volatile int *)bad = 0x7fffffff;
}

bool wrong_applies(const gt_problem_t *p, char *why, size_t cap) {
  bool t16 = p->a_type == GT_DT_BF16 || p->a_type == GT_DT_F16;
  if (!t16 || p->b_type != p->a_type || p->d_type != p->a_type) {
    snprintf(why, cap, "only bf16/f16 in and out");
    return false;
  }
  if (p->transa != GT_TRANS_T || p->transb != GT_TRANS_N) {
    snprintf(why, cap, "only TN (nn.Linear) problems");
    return false;
  }
  if (!p->beta_zero || p->batch != 1 || p->epilogue != GT_EPI_NONE ||
      p->scale_type != GT_DT_F32 || p->op != GT_OP_GEMM) {
    snprintf(why, cap, "only beta=0, batch 1, no epilogue, f32 scale");
    return false;
  }
  if (p->m > INT32_MAX || p->n > INT32_MAX || p->k > INT32_MAX) {
    snprintf(why, cap, "dimension above INT32_MAX");
    return false;
  }
  return true;
}

void fill(gt_candidate_t *c, const char *name) {
  memset(c, 0, sizeof *c);
  c->provider = &gt_provider_testonly_cuda;
  snprintf(c->name, sizeof c->name, "%s", name);
}

gt_status_t to_init(void) {
  const char *e = getenv("GEMMTUNE_TEST_PROVIDERS");
  if (!e || strcmp(e, "1") != 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "test-only provider: set GEMMTUNE_TEST_PROVIDERS=1");
  gt_status_t st = gt_cuda_device_count(NULL);
  if (st != GT_OK) return st;
  return GT_OK;
}

gt_status_t to_enumerate(const gt_problem_t *p, const gt_enum_opts_t *, gt_cand_list_t *out) {
  char why[GT_REASON_MAX];
  gt_candidate_t c;
  gt_status_t st;
  if (wrong_applies(p, why, sizeof why)) {
    fill(&c, kWrong);
    st = gt_cand_list_push(out, &c);
  } else {
    st = gt_cand_list_exclude(out, &gt_provider_testonly_cuda, kWrong, "%s", why);
  }
  if (st != GT_OK) return st;
  fill(&c, kFault);
  return gt_cand_list_push(out, &c);
}

gt_status_t to_from_name(const char *name, const gt_problem_t *p, gt_candidate_t *out) {
  char why[GT_REASON_MAX];
  if (strcmp(name, kWrong) == 0) {
    if (!wrong_applies(p, why, sizeof why))
      return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
    fill(out, kWrong);
    return GT_OK;
  }
  if (strcmp(name, kFault) == 0) {
    fill(out, kFault);
    return GT_OK;
  }
  return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a testonly_cuda candidate", name);
}

gt_status_t to_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                       size_t *ws_needed) {
  State *s = (State *)calloc(1, sizeof(State));
  if (!s) return gt_err_set(GT_ERR_NOMEM, "testonly_cuda: out of host memory");
  s->p = *p;
  if (strcmp(c->name, kWrong) == 0) {
    char why[GT_REASON_MAX];
    if (!wrong_applies(p, why, sizeof why)) {
      free(s);
      return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", c->name, why);
    }
    s->kind = KIND_WRONG;
  } else if (strcmp(c->name, kFault) == 0) {
    s->kind = KIND_FAULT;
  } else {
    free(s);
    return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a testonly_cuda candidate", c->name);
  }
  *state = s;
  *ws_needed = 0;
  return GT_OK;
}

gt_status_t to_run(void *state, const gt_operands_t *ops, void *stream) {
  State *s = (State *)state;
  cudaStream_t st = (cudaStream_t)stream;
  if (s->kind == KIND_FAULT) {
    // A runtime value, so the compiler cannot see (or drop) the invalid store.
    int *bad = (int *)(uintptr_t)0x10;
    fault_kernel<<<1, 32, 0, st>>>(bad);
    GT_CUDA_CHECK(cudaGetLastError());
    return GT_OK;
  }
  const gt_problem_t *p = &s->p;
  int kk = (int)(p->k / 8 > 0 ? p->k / 8 : 1);
  float scale = *(const float *)ops->alpha * (float)p->k / (float)kk;
  const int threads = 256, warps_per_block = threads / 32;
  unsigned blocks = (unsigned)((p->m + warps_per_block - 1) / warps_per_block);
  if (p->a_type == GT_DT_BF16)
    wrong_tn_kernel<<<blocks, threads, 0, st>>>(
        (const __nv_bfloat16 *)ops->A, (const __nv_bfloat16 *)ops->B, (__nv_bfloat16 *)ops->D,
        (int)p->m, (int)p->n, kk, (long long)p->lda, (long long)p->ldb, (long long)p->ldc, scale);
  else
    wrong_tn_kernel<<<blocks, threads, 0, st>>>(
        (const __half *)ops->A, (const __half *)ops->B, (__half *)ops->D, (int)p->m, (int)p->n, kk,
        (long long)p->lda, (long long)p->ldb, (long long)p->ldc, scale);
  GT_CUDA_CHECK(cudaGetLastError());
  return GT_OK;
}

void to_release(void *state) { free(state); }

}  // namespace

extern "C" const gt_provider_t gt_provider_testonly_cuda = {
    GT_PROVIDER_API_VERSION,
    "testonly_cuda",
    "planted wrong and faulting CUDA candidates for harness tests (GEMMTUNE_TEST_PROVIDERS=1)",
    GT_BACKEND_CUDA,
    to_init,
    nullptr,  // baseline_for: never today's path
    nullptr,  // lib_version: no library
    to_enumerate,
    to_from_name,
    to_prepare,
    to_run,
    to_release,
    nullptr,  // row_kernels: its planted candidates never reach a DB that verify checks
    nullptr,  // owns_kernel
    nullptr,  // same_kernel
};
