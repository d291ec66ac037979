// Which cuBLASLt fp8-output (e4m3 D) configurations this GPU's cuBLASLt accepts: C type (bf16, f16,
// e4m3) x C pointer (D itself or a separate buffer) x amax pointer x D scale, one line each with the
// heuristic's and the matmul's status. Build and run: nvcc bench/fp8_d_probe.cu -lcublasLt && ./a.out
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdio.h>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("cuda %s\n", cudaGetErrorString(e)); return 1; } } while (0)
static const char *st(cublasStatus_t s) { return s == 0 ? "OK" : s == 7 ? "INVALID_VALUE" : s == 15 ? "NOT_SUPPORTED" : "other"; }
int run(cublasLtHandle_t h, int m, int n, int k, cudaDataType ct, bool sepC, bool amax, bool dscale, bool cscalemode) {
  void *A, *B, *C, *D, *ws; float *sa, *sb, *sd, *am;
  cudaMalloc(&A, (size_t)m * k); cudaMalloc(&B, (size_t)n * k); cudaMalloc(&D, (size_t)m * n);
  cudaMalloc(&C, (size_t)m * n * 2); cudaMalloc(&ws, 1 << 22);
  cudaMalloc(&sa, 16); cudaMalloc(&sb, 16); cudaMalloc(&sd, 16); cudaMalloc(&am, 16);
  float one = 1; cudaMemcpy(sa, &one, 4, cudaMemcpyHostToDevice); cudaMemcpy(sb, &one, 4, cudaMemcpyHostToDevice); cudaMemcpy(sd, &one, 4, cudaMemcpyHostToDevice);
  cublasLtMatmulDesc_t op; cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
  if (dscale) cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd, sizeof sd);
  if (amax) cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &am, sizeof am);
  (void)cscalemode;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
  cublasLtMatrixLayoutCreate(&lc, ct, m, n, m);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_8F_E4M3, m, n, m);
  cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
  size_t wss = 1 << 22; cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wss, sizeof wss);
  cublasLtMatmulHeuristicResult_t hr[4]; int got = 0;
  cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, ld, pref, 4, hr, &got);
  float alpha = 1, beta = 0;
  cublasStatus_t ms = (cublasStatus_t)-1;
  if (hs == 0 && got > 0)
    ms = cublasLtMatmul(h, op, &alpha, A, la, B, lb, &beta, sepC ? C : D, lc, D, ld, &hr[0].algo, ws, wss, 0);
  cudaError_t ce = cudaDeviceSynchronize();
  printf("C=%-5s %-8s amax=%d dscale=%d: heuristic %s (%d)  matmul %s  sync %s\n",
         ct == CUDA_R_16BF ? "bf16" : ct == CUDA_R_16F ? "f16" : ct == CUDA_R_8F_E4M3 ? "e4m3" : "f32",
         sepC ? "sep C" : "C=D", amax, dscale, st(hs), got, ms == (cublasStatus_t)-1 ? "-" : st(ms), cudaGetErrorString(ce));
  return 0;
}
int main() {
  cublasLtHandle_t h; cublasLtCreate(&h);
  printf("cublasLt %zu\n", cublasLtGetVersion());
  cudaDataType cts[] = {CUDA_R_16BF, CUDA_R_16F, CUDA_R_8F_E4M3};
  for (int c = 0; c < 3; c++)
    for (int sep = 0; sep < 2; sep++)
      for (int am = 0; am < 2; am++)
        for (int ds = 0; ds < 2; ds++)
          run(h, 4096, 16, 4096, cts[c], sep, am, ds, false);
  return 0;
}
