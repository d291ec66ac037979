// Split-K reduce: D = alpha * sum_z ws[z] + beta * C, summing the partials in split order so the
// result is bitwise reproducible. One thread per output element, m fastest (ws and D are both
// column-major in m), grid-stride so any m*n fits the launch.
#include "gt_kcommon.cuh"
#include "gt_kernel_fns.h"

namespace gtk {

template <typename T> __device__ __forceinline__ void splitk_reduce_body(const gt_kargs_t &a) {
  const int64_t total = a.m * a.n;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  const uint16_t *C = static_cast<const uint16_t *>(a.C);
  uint16_t *D = static_cast<uint16_t *>(a.D);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    float s = 0.f;
    for (int z = 0; z < a.splits; z++) s += a.ws[(int64_t)z * total + i];
    const int64_t row = i % a.m, col = i / a.m;
    const int64_t off = row + col * a.ldc;
    float v = a.alpha * s;
    if (a.beta_nonzero) v += a.beta * T::to_f(C[off]);
    D[off] = T::from_f(v);
  }
}

}  // namespace gtk

extern "C" __global__ void __launch_bounds__(GT_KREDUCE_THREADS)
    gt_sm90_splitk_reduce_bf16(const __grid_constant__ gt_kargs_t a) {
  gtk::splitk_reduce_body<gtk::bf16>(a);
}

extern "C" __global__ void __launch_bounds__(GT_KREDUCE_THREADS)
    gt_sm90_splitk_reduce_f16(const __grid_constant__ gt_kargs_t a) {
  gtk::splitk_reduce_body<gtk::f16>(a);
}

extern "C" const void *gt_kreduce_fn(gt_dtype_t t) {
  switch (t) {
  case GT_DT_BF16:
    return (const void *)gt_sm90_splitk_reduce_bf16;
  case GT_DT_F16:
    return (const void *)gt_sm90_splitk_reduce_f16;
  default:
    return nullptr;
  }
}
