/* A stand-in for an application that knows nothing of gemmtune: it links the real cuBLAS and
 * cuBLASLt and the shared CUDA runtime (as PyTorch does) and calls cublasGemmEx,
 * cublasGemmStridedBatchedEx, cublasSgemm_v2, cublasHgemm and cublasLtMatmul on a table of
 * shapes, some inside CUDA graph capture (one on a stream first used under capture, as
 * torch.cuda.graph does), one in device pointer mode. For each case it prints
 *   case <name> sum=<> wsum=<> asum=<>
 * (plain, position-weighted and absolute sums of the output), which tests/cli/test_preload.sh
 * compares between runs with and without the preload shim. Exits 77 when there is no GPU. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cublasHgemm is declared for C++ only; the symbol takes 16-bit IEEE halves. */
typedef struct half16 { unsigned short x; } half16_t;
cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const half16_t *alpha,
                           const half16_t *A, int lda, const half16_t *B, int ldb,
                           const half16_t *beta, half16_t *C, int ldc);

#define CK(call)                                                                        \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "shim_client: %s: %s (line %d)\n", #call, cudaGetErrorString(e_), \
              __LINE__);                                                                \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)
#define CB(call)                                                                         \
  do {                                                                                   \
    cublasStatus_t s_ = (call);                                                          \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
      fprintf(stderr, "shim_client: %s: cuBLAS status %d (line %d)\n", #call, (int)s_, \
              __LINE__);                                                                 \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

typedef enum { E_GEMMEX, E_STRIDED, E_SGEMM, E_HGEMM, E_LT } entry_t;
typedef enum { T_BF16, T_F16, T_F32 } type_t;
/* RUN_GRAPH2: captured on a second stream that has seen no call before the capture. */
typedef enum { RUN_EAGER, RUN_GRAPH, RUN_GRAPH2, RUN_DEVPTR } mode_t_;

typedef struct gemm_case {
  const char *name;
  entry_t entry;
  type_t ab, cd; /* input and output element types */
  cublasOperation_t ta, tb;
  int m, n, k, batch;
  float beta;
  int reps;
  mode_t_ mode;
} gemm_case_t;

/* Shapes are distinct per case (except graph_seen and graph_stream2, which repeat
 * gemmex_linear16 and gemmex_f32out under capture after they were seen eagerly), so each case is
 * one key the shim logs on its own. */
static const gemm_case_t k_cases[] = {
    {"gemmex_linear16", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 16, 4096, 1, 0.f, 3, RUN_EAGER},
    {"gemmex_nn_beta1", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_N, CUBLAS_OP_N, 256, 192, 512, 1, 1.f, 2, RUN_EAGER},
    {"gemmex_f16_nt", E_GEMMEX, T_F16, T_F16, CUBLAS_OP_N, CUBLAS_OP_T, 384, 128, 256, 1, 0.f, 2, RUN_EAGER},
    {"gemmex_f32out", E_GEMMEX, T_BF16, T_F32, CUBLAS_OP_T, CUBLAS_OP_N, 512, 64, 1024, 1, 0.f, 2, RUN_EAGER},
    {"strided_tn", E_STRIDED, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 128, 64, 256, 4, 0.f, 2, RUN_EAGER},
    {"sgemm_nn", E_SGEMM, T_F32, T_F32, CUBLAS_OP_N, CUBLAS_OP_N, 320, 256, 256, 1, 0.f, 2, RUN_EAGER},
    {"hgemm_tn", E_HGEMM, T_F16, T_F16, CUBLAS_OP_T, CUBLAS_OP_N, 256, 128, 512, 1, 0.f, 2, RUN_EAGER},
    {"lt_tn", E_LT, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 1024, 32, 1024, 1, 0.f, 2, RUN_EAGER},
    {"devptr", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 256, 32, 256, 1, 0.f, 1, RUN_DEVPTR},
    {"graph_new", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 2048, 8, 2048, 1, 0.f, 1, RUN_GRAPH},
    {"graph_seen", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 16, 4096, 1, 0.f, 1, RUN_GRAPH},
    {"graph_stream2", E_GEMMEX, T_BF16, T_F32, CUBLAS_OP_T, CUBLAS_OP_N, 512, 64, 1024, 1, 0.f, 1, RUN_GRAPH2},
};

static size_t tsize(type_t t) { return t == T_F32 ? 4 : 2; }
static cudaDataType cuda_type(type_t t) {
  return t == T_BF16 ? CUDA_R_16BF : t == T_F16 ? CUDA_R_16F : CUDA_R_32F;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* Inputs are multiples of 1/8 in [-1, 1]: exact in f16, so no rounding mode matters here. */
static uint16_t f32_to_f16(float f) {
  if (f == 0.0f) return 0;
  uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = fabsf(f);
  int e;
  float mant = frexpf(a, &e); /* a = mant * 2^e, mant in [0.5, 1) */
  int exp16 = e - 1 + 15;
  uint16_t frac = (uint16_t)lrintf((mant * 2.0f - 1.0f) * 1024.0f);
  return sign | (uint16_t)(exp16 << 10) | frac;
}
static float f16_to_f32(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  float v;
  if (e == 0) v = ldexpf((float)f, -24);
  else if (e == 31) v = f ? NAN : INFINITY;
  else v = ldexpf((float)(f | 0x400), e - 25);
  return s ? -v : v;
}

static void *make_host(type_t t, size_t n, unsigned seed) {
  void *h = malloc(n * tsize(t));
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++) {
    float v = (float)((int)((i * 37u + seed * 11u + 5u) % 17u) - 8) / 8.0f;
    if (t == T_F32) ((float *)h)[i] = v;
    else if (t == T_BF16) ((uint16_t *)h)[i] = f32_to_bf16(v);
    else ((uint16_t *)h)[i] = f32_to_f16(v);
  }
  return h;
}

static double elem(type_t t, const void *h, size_t i) {
  if (t == T_F32) return ((const float *)h)[i];
  if (t == T_BF16) return bf16_to_f32(((const uint16_t *)h)[i]);
  return f16_to_f32(((const uint16_t *)h)[i]);
}

typedef struct ctx {
  cublasHandle_t h;
  cublasLtHandle_t lt;
  cudaStream_t s, s2;
  cudaStream_t cur; /* the stream of the case being run */
  void *ws;
  size_t ws_size;
} ctx_t;

static const char *entry_name(entry_t e) {
  static const char *const names[] = {"cublasGemmEx", "cublasGemmStridedBatchedEx",
                                      "cublasSgemm_v2", "cublasHgemm", "cublasLtMatmul"};
  return names[e];
}

/* cublasSetStream resets the handle's workspace to cuBLAS's own pool: set ours again, so cuBLAS
 * itself never allocates under capture. */
static void use_stream(ctx_t *c, cudaStream_t s) {
  c->cur = s;
  CB(cublasSetStream(c->h, s));
  CB(cublasSetWorkspace(c->h, c->ws, c->ws_size));
}

/* One call of the case's entry point (D = C in place, as the cublas<...> API does). */
static void issue(ctx_t *c, const gemm_case_t *g, const void *A, const void *B, void *C,
                  const void *alpha, const void *beta) {
  int lda = g->ta == CUBLAS_OP_N ? g->m : g->k;
  int ldb = g->tb == CUBLAS_OP_N ? g->k : g->n;
  int ldc = g->m;
  switch (g->entry) {
    case E_GEMMEX:
      CB(cublasGemmEx(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, cuda_type(g->ab), lda, B,
                      cuda_type(g->ab), ldb, beta, C, cuda_type(g->cd), ldc, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
      break;
    case E_STRIDED: {
      long long sa = (long long)lda * (g->ta == CUBLAS_OP_N ? g->k : g->m);
      long long sb = (long long)ldb * (g->tb == CUBLAS_OP_N ? g->n : g->k);
      long long sc = (long long)ldc * g->n;
      CB(cublasGemmStridedBatchedEx(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A,
                                    cuda_type(g->ab), lda, sa, B, cuda_type(g->ab), ldb, sb, beta,
                                    C, cuda_type(g->cd), ldc, sc, g->batch, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
      break;
    }
    case E_SGEMM:
      CB(cublasSgemm(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, lda, B, ldb, beta, C, ldc));
      break;
    case E_HGEMM:
      CB(cublasHgemm(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, lda, B, ldb, beta, C, ldc));
      break;
    case E_LT: {
      cublasLtMatmulDesc_t d;
      cublasLtMatrixLayout_t la, lb, lc;
      CB(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
      int32_t ta = g->ta, tb = g->tb;
      CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
      CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
      CB(cublasLtMatrixLayoutCreate(&la, cuda_type(g->ab), g->ta == CUBLAS_OP_N ? g->m : g->k,
                                    g->ta == CUBLAS_OP_N ? g->k : g->m, lda));
      CB(cublasLtMatrixLayoutCreate(&lb, cuda_type(g->ab), g->tb == CUBLAS_OP_N ? g->k : g->n,
                                    g->tb == CUBLAS_OP_N ? g->n : g->k, ldb));
      CB(cublasLtMatrixLayoutCreate(&lc, cuda_type(g->cd), g->m, g->n, ldc));
      cublasLtMatmulPreference_t pref;
      CB(cublasLtMatmulPreferenceCreate(&pref));
      CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                              &c->ws_size, sizeof c->ws_size));
      cublasLtMatmulHeuristicResult_t res;
      int got = 0;
      CB(cublasLtMatmulAlgoGetHeuristic(c->lt, d, la, lb, lc, lc, pref, 1, &res, &got));
      if (got < 1) {
        fprintf(stderr, "shim_client: no cuBLASLt heuristic for %s\n", g->name);
        exit(1);
      }
      CB(cublasLtMatmul(c->lt, d, alpha, A, la, B, lb, beta, C, lc, C, lc, &res.algo, c->ws,
                        c->ws_size, c->cur));
      CB(cublasLtMatmulPreferenceDestroy(pref));
      CB(cublasLtMatrixLayoutDestroy(la));
      CB(cublasLtMatrixLayoutDestroy(lb));
      CB(cublasLtMatrixLayoutDestroy(lc));
      CB(cublasLtMatmulDescDestroy(d));
      break;
    }
  }
}

static void run_case(ctx_t *c, const gemm_case_t *g) {
  size_t na = (size_t)g->m * g->k * g->batch, nb = (size_t)g->k * g->n * g->batch;
  size_t nc = (size_t)g->m * g->n * g->batch;
  void *hA = make_host(g->ab, na, 1), *hB = make_host(g->ab, nb, 2), *hC = make_host(g->cd, nc, 3);
  void *A, *B, *C, *C0;
  CK(cudaMalloc(&A, na * tsize(g->ab)));
  CK(cudaMalloc(&B, nb * tsize(g->ab)));
  CK(cudaMalloc(&C, nc * tsize(g->cd)));
  CK(cudaMalloc(&C0, nc * tsize(g->cd)));
  CK(cudaMemcpy(A, hA, na * tsize(g->ab), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hB, nb * tsize(g->ab), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(C0, hC, nc * tsize(g->cd), cudaMemcpyHostToDevice));

  /* Scalars: f16 for Hgemm (f16 compute), f32 otherwise. */
  float alpha_f = 1.0f, beta_f = g->beta;
  half16_t alpha_h = {f32_to_f16(1.0f)}, beta_h = {f32_to_f16(g->beta)};
  const void *alpha = g->entry == E_HGEMM ? (const void *)&alpha_h : (const void *)&alpha_f;
  const void *beta = g->entry == E_HGEMM ? (const void *)&beta_h : (const void *)&beta_f;
  void *dscal = NULL;
  if (g->mode == RUN_DEVPTR) {
    float sc[2] = {alpha_f, beta_f};
    CK(cudaMalloc(&dscal, sizeof sc));
    CK(cudaMemcpy(dscal, sc, sizeof sc, cudaMemcpyHostToDevice));
    CB(cublasSetPointerMode(c->h, CUBLAS_POINTER_MODE_DEVICE));
    alpha = dscal;
    beta = (const float *)dscal + 1;
  }

  bool graph = g->mode == RUN_GRAPH || g->mode == RUN_GRAPH2;
  cudaStream_t s = g->mode == RUN_GRAPH2 ? c->s2 : c->s;
  use_stream(c, s);
  for (int r = 0; r < g->reps; r++) {
    /* C is reset before each call, so beta != 0 reads the same C every time. */
    CK(cudaMemcpyAsync(C, C0, nc * tsize(g->cd), cudaMemcpyDeviceToDevice, s));
    if (graph) {
      cudaGraph_t gr;
      cudaGraphExec_t exec;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      issue(c, g, A, B, C, alpha, beta);
      /* Say which call broke the capture, if one did (an interposer must never). */
      enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
      cudaError_t qe = cudaStreamIsCapturing(s, &cs);
      if (qe != cudaSuccess || cs != cudaStreamCaptureStatusActive) {
        fprintf(stderr,
                "shim_client: case %s: the capture is not active after its %s call (status %d, "
                "%s)\n",
                g->name, entry_name(g->entry), (int)cs, cudaGetErrorString(qe));
        exit(1);
      }
      CK(cudaStreamEndCapture(s, &gr));
      CK(cudaGraphInstantiate(&exec, gr, 0));
      for (int k = 0; k < 3; k++) CK(cudaGraphLaunch(exec, s));
      CK(cudaStreamSynchronize(s));
      CK(cudaGraphExecDestroy(exec));
      CK(cudaGraphDestroy(gr));
    } else {
      issue(c, g, A, B, C, alpha, beta);
    }
  }
  CK(cudaStreamSynchronize(s));
  use_stream(c, c->s);
  if (g->mode == RUN_DEVPTR) CB(cublasSetPointerMode(c->h, CUBLAS_POINTER_MODE_HOST));

  void *hD = malloc(nc * tsize(g->cd));
  if (!hD) exit(1);
  CK(cudaMemcpy(hD, C, nc * tsize(g->cd), cudaMemcpyDeviceToHost));
  double sum = 0, wsum = 0, asum = 0;
  for (size_t i = 0; i < nc; i++) {
    double v = elem(g->cd, hD, i);
    sum += v;
    wsum += v * (double)((int)(i % 7) - 3);
    asum += fabs(v);
  }
  printf("case %s sum=%.6e wsum=%.6e asum=%.6e\n", g->name, sum, wsum, asum);
  fflush(stdout);
  free(hA), free(hB), free(hC), free(hD);
  CK(cudaFree(A));
  CK(cudaFree(B));
  CK(cudaFree(C));
  CK(cudaFree(C0));
  if (dscal) CK(cudaFree(dscal));
}

int main(int argc, char **argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    printf("no device\n");
    return 77;
  }
  const char *only = argc > 1 ? argv[1] : NULL; /* run one case by name (debugging) */
  ctx_t c = {0};
  CK(cudaSetDevice(0));
  CK(cudaStreamCreate(&c.s));
  CK(cudaStreamCreate(&c.s2));
  CB(cublasCreate(&c.h));
  CB(cublasLtCreate(&c.lt));
  /* A workspace set on the handle lets cuBLAS itself run under graph capture. */
  c.ws_size = (size_t)32 << 20;
  CK(cudaMalloc(&c.ws, c.ws_size));
  use_stream(&c, c.s);
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
    if (!only || strcmp(only, k_cases[i].name) == 0) run_case(&c, &k_cases[i]);
  CB(cublasLtDestroy(c.lt));
  CB(cublasDestroy(c.h));
  CK(cudaFree(c.ws));
  CK(cudaStreamDestroy(c.s));
  CK(cudaStreamDestroy(c.s2));
  return 0;
}
