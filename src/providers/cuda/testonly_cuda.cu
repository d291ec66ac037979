// Provider "testonly_cuda": planted bad candidates that prove the harness catches them. Enabled
// only with GEMMTUNE_TEST_PROVIDERS=1, so a real tuning run can never pick one.
//
//   testonly_cuda_wrong  a fast, wrong GEMM for bf16/f16 nn.Linear (TN) problems: it reads only
//                        the first K/8 of every row and scales by 8, so it moves 1/8 of the
//                        weights and beats cuBLAS on decode shapes. The gate must reject it.
//   testonly_cuda_fault  stores through an invalid pointer: an illegal-address fault, sticky for
//                        the CUDA context. The harness must report a device fault, not hang or
//                        crash, and mark the context unusable.
// Listed only for problems whose epilogue has a bias (bias, bias_relu, bias_gelu), as the host
// provider's testonly_nobias and testonly_twobias are, and on the same TN bf16/f16 problems as
// testonly_cuda_wrong: everything right but the bias, so only a gate that feeds a bias and
// checks it catches them.
//   testonly_cuda_nobias   act(alpha * op(A)op(B)) with the bias dropped.
//   testonly_cuda_twobias  act(alpha * op(A)op(B) + 2 * bias).
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
const char *const kNoBias = "testonly_cuda_nobias";
const char *const kTwoBias = "testonly_cuda_twobias";

enum Kind { KIND_WRONG = 1, KIND_FAULT = 2, KIND_NOBIAS = 3, KIND_TWOBIAS = 4 };

struct State {
  Kind kind;
  gt_problem_t p;
};

__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ void from_f(__nv_bfloat16 *d, float v) { *d = __float2bfloat16_rn(v); }
__device__ __forceinline__ void from_f(__half *d, float v) { *d = __float2half_rn(v); }

// The activation of a bias epilogue, in fp32 as cuBLASLt computes it (GELU: the tanh form).
__device__ __forceinline__ float act(gt_epilogue_t e, float v) {
  switch (e) {
    case GT_EPI_RELU:
    case GT_EPI_BIAS_RELU: return v > 0.f ? v : 0.f;
    case GT_EPI_GELU:
    case GT_EPI_BIAS_GELU:
      return 0.5f * v * (1.f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    default: return v;
  }
}

// One warp per output row i (an output feature):
//   D[i, j] = act(scale * sum_{k < kk} A[k, i] * B[k, j] + bias_times * bias[i]).
// testonly_cuda_wrong runs it with kk = K/8, scale = alpha * K/kk, no bias and no epilogue; the
// bias pair with kk = K, scale = alpha and bias_times 0 or 2.
template <typename T>
__global__ void planted_tn_kernel(const T *__restrict__ A, const T *__restrict__ B,
                                  T *__restrict__ D, const T *__restrict__ bias, int m, int n,
                                  int kk, long long lda, long long ldb, long long ldc, float scale,
                                  float bias_times, gt_epilogue_t epi) {
  long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  int lane = threadIdx.x & 31;
  if (warp >= m) return;
  const T *a = A + warp * lda;
  const float bv = bias ? bias_times * to_f(bias[warp]) : 0.f;
  for (int j = 0; j < n; j++) {
    const T *b = B + (long long)j * ldb;
    float acc = 0.f;
    for (int k = lane; k < kk; k += 32) acc += to_f(a[k]) * to_f(b[k]);
    for (int off = 16; off; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) from_f(&D[warp + (long long)j * ldc], act(epi, acc * scale + bv));
  }
}

__global__ void fault_kernel(int *bad) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *(volatile int *)bad = 0x7fffffff;
}

bool has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

// The problems planted_tn_kernel computes: bf16/f16 TN, beta 0, batch 1; no epilogue for the
// wrong kernel, a bias epilogue for the bias pair.
bool tn_applies(const gt_problem_t *p, bool bias_pair, char *why, size_t cap) {
  bool t16 = p->a_type == GT_DT_BF16 || p->a_type == GT_DT_F16;
  if (!t16 || p->b_type != p->a_type || p->d_type != p->a_type) {
    snprintf(why, cap, "only bf16/f16 in and out");
    return false;
  }
  if (p->transa != GT_TRANS_T || p->transb != GT_TRANS_N) {
    snprintf(why, cap, "only TN (nn.Linear) problems");
    return false;
  }
  if (!p->beta_zero || p->batch != 1 || p->scale_type != GT_DT_F32 || p->op != GT_OP_GEMM) {
    snprintf(why, cap, "only beta=0, batch 1, f32 scale");
    return false;
  }
  if (bias_pair ? !has_bias(p->epilogue) : p->epilogue != GT_EPI_NONE) {
    snprintf(why, cap, "%s", bias_pair ? "only bias epilogues" : "only no epilogue");
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

// Push name, or list it excluded with why when planted_tn_kernel does not compute p.
gt_status_t push_tn(const gt_problem_t *p, const char *name, bool bias_pair, gt_cand_list_t *out) {
  char why[GT_REASON_MAX];
  if (!tn_applies(p, bias_pair, why, sizeof why))
    return gt_cand_list_exclude(out, &gt_provider_testonly_cuda, name, "%s", why);
  gt_candidate_t c;
  fill(&c, name);
  return gt_cand_list_push(out, &c);
}

gt_status_t to_enumerate(const gt_problem_t *p, const gt_enum_opts_t *, gt_cand_list_t *out) {
  gt_status_t st = push_tn(p, kWrong, false, out);
  if (st != GT_OK) return st;
  gt_candidate_t c;
  fill(&c, kFault);
  if ((st = gt_cand_list_push(out, &c)) != GT_OK) return st;
  // The bias pair only where there is a bias to get wrong.
  if (!has_bias(p->epilogue)) return GT_OK;
  if ((st = push_tn(p, kNoBias, true, out)) != GT_OK) return st;
  return push_tn(p, kTwoBias, true, out);
}

gt_status_t to_from_name(const char *name, const gt_problem_t *p, gt_candidate_t *out) {
  char why[GT_REASON_MAX];
  const bool wrong = strcmp(name, kWrong) == 0;
  if (wrong || strcmp(name, kNoBias) == 0 || strcmp(name, kTwoBias) == 0) {
    if (!tn_applies(p, !wrong, why, sizeof why))
      return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
    fill(out, name);
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
  const bool wrong = strcmp(c->name, kWrong) == 0;
  if (wrong || strcmp(c->name, kNoBias) == 0 || strcmp(c->name, kTwoBias) == 0) {
    char why[GT_REASON_MAX];
    if (!tn_applies(p, !wrong, why, sizeof why)) {
      free(s);
      return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", c->name, why);
    }
    s->kind = wrong ? KIND_WRONG : strcmp(c->name, kNoBias) == 0 ? KIND_NOBIAS : KIND_TWOBIAS;
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
  const float alpha = *(const float *)ops->alpha;
  int kk = (int)p->k;
  float scale = alpha, bias_times = 0.f;
  const void *bias = nullptr;
  if (s->kind == KIND_WRONG) {
    kk = (int)(p->k / 8 > 0 ? p->k / 8 : 1);
    scale = alpha * (float)p->k / (float)kk;
  } else {
    if (!ops->bias)
      return gt_err_set(GT_ERR_USAGE, "%s: epilogue %s needs a bias vector",
                        s->kind == KIND_NOBIAS ? kNoBias : kTwoBias,
                        gt_epilogue_name(p->epilogue));
    bias = ops->bias; // bias type = D's type (gt_cudalib_bias_type) for bf16/f16 outputs
    bias_times = s->kind == KIND_NOBIAS ? 0.f : 2.f;
  }
  const int threads = 256, warps_per_block = threads / 32;
  unsigned blocks = (unsigned)((p->m + warps_per_block - 1) / warps_per_block);
  if (p->a_type == GT_DT_BF16)
    planted_tn_kernel<<<blocks, threads, 0, st>>>(
        (const __nv_bfloat16 *)ops->A, (const __nv_bfloat16 *)ops->B, (__nv_bfloat16 *)ops->D,
        (const __nv_bfloat16 *)bias, (int)p->m, (int)p->n, kk, (long long)p->lda,
        (long long)p->ldb, (long long)p->ldc, scale, bias_times, p->epilogue);
  else
    planted_tn_kernel<<<blocks, threads, 0, st>>>(
        (const __half *)ops->A, (const __half *)ops->B, (__half *)ops->D, (const __half *)bias,
        (int)p->m, (int)p->n, kk, (long long)p->lda, (long long)p->ldb, (long long)p->ldc, scale,
        bias_times, p->epilogue);
  GT_CUDA_CHECK(cudaGetLastError());
  return GT_OK;
}

void to_release(void *state) { free(state); }

}  // namespace

extern "C" const gt_provider_t gt_provider_testonly_cuda = {
    GT_PROVIDER_API_VERSION,
    "testonly_cuda",
    "planted wrong, faulting and bias-dropping CUDA candidates for harness tests "
    "(GEMMTUNE_TEST_PROVIDERS=1)",
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
