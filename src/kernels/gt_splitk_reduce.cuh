// Split-K reduce: D = act(alpha * sum_z ws[z] + beta * C + bias), summing the partials in split
// order so the result is bitwise reproducible. The epilogue is read at run time (a.epilogue,
// GT_EPI_NONE for plain instances): one reduce kernel serves the plain instances and their
// epilogue twins, whose main kernels write raw partials. One thread per output element, m fastest (ws and D are both
// column-major in m), grid-stride so any m*n fits the launch. The kernels that run this body are
// generated per architecture (generated/splitk_reduce_<arch>.cu), named by
// gt_kernel_reduce_symbol.
#pragma once

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
    v = epilogue_apply<T>(a, row, v);
    D[off] = T::from_f(v);
  }
}

}  // namespace gtk
