/* A stand-in for an application that knows nothing of gemmtune: it links the real cuBLAS and
 * cuBLASLt and the shared CUDA runtime (as PyTorch does) and calls cublasGemmEx,
 * cublasGemmStridedBatchedEx, cublasSgemm_v2, cublasHgemm and cublasLtMatmul on a table of
 * shapes, some inside CUDA graph capture (one on a stream first used under capture, as
 * torch.cuda.graph does), one in device pointer mode. For each case it prints
 *   case <name> sum=<> wsum=<> asum=<>
 * (plain, position-weighted and absolute sums of the output), which tests/cli/test_preload.sh
 * compares between runs with and without the preload shim. Exits 77 when there is no GPU.
 *
 * Environment (for the other GPU tests of the shim):
 *   GT_CLIENT_CASES=scope   a second table instead: the entry points beyond the first five
 *                           (cublasGemmBatchedEx, cublasGemmGroupedBatchedEx, torch-like bmm via
 *                           cublasGemmStridedBatchedEx, the S/H strided forms, _64 calls, one of
 *                           them under capture, an fp8 cublasLtMatmul with scale pointers):
 *                           tests/cli/test_preload_scope.sh
 *   GT_CLIENT_GRAPH_FIRST=1 every case runs inside CUDA graph capture (then 3 replays), so every
 *                           key's first call is captured (the device-pointer case is left out):
 *                           tests/cli/test_preload_capture_first.sh
 *   GT_CLIENT_WARMUP=1      one eager GEMM of a key of its own before the cases (a process that
 *                           called cuBLAS once before it captured)
 *   GT_CLIENT_CASES=replays a decode-like step instead (k_step: one key called twice, one once,
 *                           after one eager call of the second), captured once into a graph and
 *                           replayed GT_CLIENT_REPLAYS times (default 7); it prints
 *                             step <name> calls_per_step=<n> eager=<n>
 *                             replays <n>
 *                           so tests/cli/test_preload_graph_replays.sh can check that capture
 *                           counts calls = replays x calls per step (+ eager calls) */
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
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const half16_t *alpha, const half16_t *A, int lda,
                                         long long int strideA, const half16_t *B, int ldb,
                                         long long int strideB, const half16_t *beta, half16_t *C,
                                         int ldc, long long int strideC, int batchCount);

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

typedef enum {
  E_GEMMEX, E_STRIDED, E_SGEMM, E_HGEMM, E_LT,
  /* the scope table's */
  E_GEMMEX64, E_STRIDED64, E_SGEMM64, E_SGEMM_SB, E_HGEMM_SB, E_BATCHED, E_GROUPED, E_LT_FP8
} entry_t;
typedef enum { T_BF16, T_F16, T_F32, T_E4M3 } type_t;
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

/* The scope table: every entry point the shim records beyond the first five. Batched and grouped
 * calls take pointer arrays (recorded, marked not tunable); a grouped case has two groups, the
 * case's shape with `batch` problems and one of half its m. bmm_* are what torch.bmm issues for
 * row-major [b,M,K] @ [b,K,N] (NN, operands swapped). */
static const gemm_case_t k_scope[] = {
    {"bmm_strided_nn", E_STRIDED, T_BF16, T_BF16, CUBLAS_OP_N, CUBLAS_OP_N, 128, 64, 256, 8, 0.f, 2, RUN_EAGER},
    {"bmm_strided_graph", E_STRIDED, T_BF16, T_BF16, CUBLAS_OP_N, CUBLAS_OP_N, 96, 32, 128, 4, 0.f, 1, RUN_GRAPH},
    {"sgemm_strided", E_SGEMM_SB, T_F32, T_F32, CUBLAS_OP_N, CUBLAS_OP_N, 64, 48, 32, 3, 0.f, 2, RUN_EAGER},
    {"hgemm_strided", E_HGEMM_SB, T_F16, T_F16, CUBLAS_OP_T, CUBLAS_OP_N, 128, 32, 64, 3, 0.f, 2, RUN_EAGER},
    {"gemmex64_eager", E_GEMMEX64, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 512, 8, 512, 1, 0.f, 2, RUN_EAGER},
    {"gemmex64_graph", E_GEMMEX64, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 1024, 16, 1024, 1, 0.f, 1, RUN_GRAPH},
    {"strided64", E_STRIDED64, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 256, 16, 256, 2, 0.f, 2, RUN_EAGER},
    {"sgemm64", E_SGEMM64, T_F32, T_F32, CUBLAS_OP_N, CUBLAS_OP_N, 192, 64, 64, 1, 0.f, 2, RUN_EAGER},
    {"batched_ex", E_BATCHED, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 256, 32, 512, 4, 0.f, 2, RUN_EAGER},
    {"batched_ex_graph", E_BATCHED, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 128, 16, 256, 2, 0.f, 1, RUN_GRAPH},
    {"grouped_ex", E_GROUPED, T_BF16, T_BF16, CUBLAS_OP_N, CUBLAS_OP_N, 128, 16, 64, 2, 0.f, 2, RUN_EAGER},
    {"lt_fp8", E_LT_FP8, T_E4M3, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 256, 16, 512, 1, 0.f, 2, RUN_EAGER},
};

/* The key of GT_CLIENT_WARMUP's eager call: in no table. */
static const gemm_case_t k_warmup = {"warmup", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N,
                                     64, 8, 64, 1, 0.f, 1, RUN_EAGER};

static size_t tsize(type_t t) { return t == T_F32 ? 4 : t == T_E4M3 ? 1 : 2; }
static cudaDataType cuda_type(type_t t) {
  return t == T_BF16 ? CUDA_R_16BF : t == T_F16 ? CUDA_R_16F : t == T_E4M3 ? CUDA_R_8F_E4M3
                                                                            : CUDA_R_32F;
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

/* Multiples of 1/8 in [-1, 1] are exact in e4m3 too (3 mantissa bits, bias 7). */
static uint8_t f32_to_e4m3(float f) {
  if (f == 0.0f) return 0;
  uint8_t sign = f < 0 ? 0x80 : 0;
  int e;
  float mant = frexpf(fabsf(f), &e); /* |f| = mant * 2^e, mant in [0.5, 1) */
  uint8_t frac = (uint8_t)lrintf((mant * 2.0f - 1.0f) * 8.0f);
  return sign | (uint8_t)((e - 1 + 7) << 3) | frac;
}

static void *make_host(type_t t, size_t n, unsigned seed) {
  void *h = malloc(n * tsize(t));
  if (!h) exit(1);
  for (size_t i = 0; i < n; i++) {
    float v = (float)((int)((i * 37u + seed * 11u + 5u) % 17u) - 8) / 8.0f;
    if (t == T_F32) ((float *)h)[i] = v;
    else if (t == T_BF16) ((uint16_t *)h)[i] = f32_to_bf16(v);
    else if (t == T_E4M3) ((uint8_t *)h)[i] = f32_to_e4m3(v);
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
  float *dscale; /* device floats 1.0: the fp8 call's A scale at [0], B's at [4] (16-byte aligned) */
  /* pointer arrays of the case being run (batched and grouped entries), device memory */
  const void **pa, **pb;
  void **pc;
} ctx_t;

static const char *entry_name(entry_t e) {
  static const char *const names[] = {
      "cublasGemmEx",    "cublasGemmStridedBatchedEx",    "cublasSgemm_v2",
      "cublasHgemm",     "cublasLtMatmul",                "cublasGemmEx_64",
      "cublasGemmStridedBatchedEx_64", "cublasSgemm_v2_64", "cublasSgemmStridedBatched",
      "cublasHgemmStridedBatched", "cublasGemmBatchedEx", "cublasGemmGroupedBatchedEx",
      "cublasLtMatmul"};
  return names[e];
}

/* The problems a case's operands hold: batch of its shape, and for a grouped case one more of
 * half its m (group 1). */
static int problems(const gemm_case_t *g) { return g->entry == E_GROUPED ? g->batch + 1 : g->batch; }
static void case_elems(const gemm_case_t *g, size_t *na, size_t *nb, size_t *nc) {
  size_t b = (size_t)g->batch, m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
  *na = m * k * b + (g->entry == E_GROUPED ? m / 2 * k : 0);
  *nb = k * n * b + (g->entry == E_GROUPED ? k * n : 0);
  *nc = m * n * b + (g->entry == E_GROUPED ? m / 2 * n : 0);
}

/* cublasSetStream resets the handle's workspace to cuBLAS's own pool: set ours again, so cuBLAS
 * itself never allocates under capture. */
static void use_stream(ctx_t *c, cudaStream_t s) {
  c->cur = s;
  CB(cublasSetStream(c->h, s));
  CB(cublasSetWorkspace(c->h, c->ws, c->ws_size));
}

/* One cuBLASLt call of the case (E_LT, or E_LT_FP8 with A and B scale pointers set), its
 * algorithm from the heuristic, as frameworks call it. */
static void issue_lt(ctx_t *c, const gemm_case_t *g, const void *A, const void *B, void *C,
                     const void *alpha, const void *beta) {
  int lda = g->ta == CUBLAS_OP_N ? g->m : g->k;
  int ldb = g->tb == CUBLAS_OP_N ? g->k : g->n;
  int ldc = g->m;
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t la, lb, lc;
  CB(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  int32_t ta = g->ta, tb = g->tb;
  CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (g->entry == E_LT_FP8) {
    const float *sa = c->dscale, *sb = c->dscale + 4;
    CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa));
    CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb));
  }
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
  cublasStatus_t st = cublasLtMatmul(c->lt, d, alpha, A, la, B, lb, beta, C, lc, C, lc, &res.algo,
                                     c->ws, c->ws_size, c->cur);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED && g->entry == E_LT_FP8) {
    /* Some cuBLASLt builds list an fp8 algorithm for this in-place call and then refuse it. The
     * call is still issued (what capture must see); its output stays as initialised, the same
     * with and without the shim, which passes fp8 calls through. */
    static bool said;
    if (!said) fprintf(stderr, "shim_client: %s: this cuBLASLt refuses the fp8 call (status 15); "
                               "its output is left as initialised\n", g->name);
    said = true;
  } else if (st != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "shim_client: cublasLtMatmul (%s): cuBLAS status %d (line %d)\n", g->name,
            (int)st, __LINE__);
    exit(1);
  }
  CB(cublasLtMatmulPreferenceDestroy(pref));
  CB(cublasLtMatrixLayoutDestroy(la));
  CB(cublasLtMatrixLayoutDestroy(lb));
  CB(cublasLtMatrixLayoutDestroy(lc));
  CB(cublasLtMatmulDescDestroy(d));
}

/* One call of the first five entry points (D = C in place, as the cublas<...> API does). */
static void issue_first(ctx_t *c, const gemm_case_t *g, const void *A, const void *B, void *C,
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
    default:
      issue_lt(c, g, A, B, C, alpha, beta);
      break;
  }
}

/* One call of a scope-table entry point beyond the first five. */
static void issue_scope(ctx_t *c, const gemm_case_t *g, const void *A, const void *B, void *C,
                        const void *alpha, const void *beta) {
  const int64_t lda = g->ta == CUBLAS_OP_N ? g->m : g->k;
  const int64_t ldb = g->tb == CUBLAS_OP_N ? g->k : g->n;
  const int64_t ldc = g->m;
  const long long sa = (long long)lda * (g->ta == CUBLAS_OP_N ? g->k : g->m);
  const long long sb = (long long)ldb * (g->tb == CUBLAS_OP_N ? g->n : g->k);
  const long long sc = (long long)ldc * g->n;
  const cudaDataType at = cuda_type(g->ab), ct = cuda_type(g->cd);
  switch (g->entry) {
    case E_GEMMEX64:
      CB(cublasGemmEx_64(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, at, lda, B, at, ldb, beta,
                         C, ct, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      break;
    case E_STRIDED64:
      CB(cublasGemmStridedBatchedEx_64(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, at, lda,
                                       sa, B, at, ldb, sb, beta, C, ct, ldc, sc, g->batch,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      break;
    case E_SGEMM64:
      CB(cublasSgemm_64(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, lda, B, ldb, beta, C, ldc));
      break;
    case E_SGEMM_SB:
      CB(cublasSgemmStridedBatched(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, (int)lda, sa, B,
                                   (int)ldb, sb, beta, C, (int)ldc, sc, g->batch));
      break;
    case E_HGEMM_SB:
      CB(cublasHgemmStridedBatched(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, A, (int)lda, sa, B,
                                   (int)ldb, sb, beta, C, (int)ldc, sc, g->batch));
      break;
    case E_BATCHED:
      CB(cublasGemmBatchedEx(c->h, g->ta, g->tb, g->m, g->n, g->k, alpha, (const void *const *)c->pa,
                             at, (int)lda, (const void *const *)c->pb, at, (int)ldb, beta,
                             (void *const *)c->pc, ct, (int)ldc, g->batch, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT));
      break;
    case E_GROUPED: {
      /* group 0: the case's shape, batch problems; group 1: half its m, one problem */
      const cublasOperation_t ta[2] = {g->ta, g->ta}, tb[2] = {g->tb, g->tb};
      const int m[2] = {g->m, g->m / 2}, n[2] = {g->n, g->n}, k[2] = {g->k, g->k};
      const int la[2] = {g->ta == CUBLAS_OP_N ? g->m : g->k, g->ta == CUBLAS_OP_N ? g->m / 2 : g->k};
      const int lb[2] = {(int)ldb, (int)ldb}, lc[2] = {g->m, g->m / 2}, size[2] = {g->batch, 1};
      const float al[2] = {1.0f, 1.0f}, be[2] = {g->beta, g->beta};
      (void)alpha, (void)beta;
      CB(cublasGemmGroupedBatchedEx(c->h, ta, tb, m, n, k, al, (const void *const *)c->pa, at, la,
                                    (const void *const *)c->pb, at, lb, be, (void *const *)c->pc,
                                    ct, lc, 2, size, CUBLAS_COMPUTE_32F));
      break;
    }
    default:
      issue_lt(c, g, A, B, C, alpha, beta);
      break;
  }
}

static void issue(ctx_t *c, const gemm_case_t *g, const void *A, const void *B, void *C,
                  const void *alpha, const void *beta) {
  if (g->entry <= E_LT) issue_first(c, g, A, B, C, alpha, beta);
  else issue_scope(c, g, A, B, C, alpha, beta);
}

/* The device pointer arrays of a batched or grouped case into A, B, C (problem p of group 0 at
 * p times its size; group 1's after them). */
static void make_pointer_arrays(ctx_t *c, const gemm_case_t *g, const char *A, const char *B,
                                char *C) {
  int np = problems(g);
  const void *ha[16], *hb[16];
  void *hc[16];
  if (np > 16) exit(1);
  size_t m = (size_t)g->m, n = (size_t)g->n, k = (size_t)g->k;
  for (int p = 0; p < np; p++) {
    ha[p] = A + (size_t)p * m * k * tsize(g->ab);
    hb[p] = B + (size_t)p * k * n * tsize(g->ab);
    hc[p] = C + (size_t)p * m * n * tsize(g->cd);
  }
  CK(cudaMalloc((void **)&c->pa, sizeof ha));
  CK(cudaMalloc((void **)&c->pb, sizeof hb));
  CK(cudaMalloc((void **)&c->pc, sizeof hc));
  CK(cudaMemcpy(c->pa, ha, sizeof ha, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(c->pb, hb, sizeof hb, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(c->pc, hc, sizeof hc, cudaMemcpyHostToDevice));
}

/* GT_CLIENT_GRAPH_FIRST: every case is captured, its first call included. */
static bool g_graph_first;

static void run_case(ctx_t *c, const gemm_case_t *g) {
  size_t na, nb, nc;
  case_elems(g, &na, &nb, &nc);
  void *hA = make_host(g->ab, na, 1), *hB = make_host(g->ab, nb, 2), *hC = make_host(g->cd, nc, 3);
  void *A, *B, *C, *C0;
  CK(cudaMalloc(&A, na * tsize(g->ab)));
  CK(cudaMalloc(&B, nb * tsize(g->ab)));
  CK(cudaMalloc(&C, nc * tsize(g->cd)));
  CK(cudaMalloc(&C0, nc * tsize(g->cd)));
  CK(cudaMemcpy(A, hA, na * tsize(g->ab), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hB, nb * tsize(g->ab), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(C0, hC, nc * tsize(g->cd), cudaMemcpyHostToDevice));
  if (g->entry == E_BATCHED || g->entry == E_GROUPED) make_pointer_arrays(c, g, A, B, C);

  /* Scalars: f16 for the Hgemm forms (f16 compute), f32 otherwise. */
  float alpha_f = 1.0f, beta_f = g->beta;
  half16_t alpha_h = {f32_to_f16(1.0f)}, beta_h = {f32_to_f16(g->beta)};
  const bool half = g->entry == E_HGEMM || g->entry == E_HGEMM_SB;
  const void *alpha = half ? (const void *)&alpha_h : (const void *)&alpha_f;
  const void *beta = half ? (const void *)&beta_h : (const void *)&beta_f;
  void *dscal = NULL;
  if (g->mode == RUN_DEVPTR) {
    float sc[2] = {alpha_f, beta_f};
    CK(cudaMalloc(&dscal, sizeof sc));
    CK(cudaMemcpy(dscal, sc, sizeof sc, cudaMemcpyHostToDevice));
    CB(cublasSetPointerMode(c->h, CUBLAS_POINTER_MODE_DEVICE));
    alpha = dscal;
    beta = (const float *)dscal + 1;
  }

  bool graph = g->mode == RUN_GRAPH || g->mode == RUN_GRAPH2 || g_graph_first;
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
  if (c->pa) {
    CK(cudaFree(c->pa));
    CK(cudaFree(c->pb));
    CK(cudaFree(c->pc));
    c->pa = c->pb = NULL;
    c->pc = NULL;
  }
}

/* GT_CLIENT_CASES=replays: .reps is the calls per step; the second case is also called once
 * eagerly before the capture. */
static const gemm_case_t k_step[] = {
    {"step_twice", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 1024, 4, 1024, 1, 0.f, 2, RUN_GRAPH},
    {"step_once", E_GEMMEX, T_BF16, T_BF16, CUBLAS_OP_T, CUBLAS_OP_N, 2048, 4, 1024, 1, 0.f, 1, RUN_GRAPH},
};

static void run_replays(ctx_t *c) {
  const char *rv = getenv("GT_CLIENT_REPLAYS");
  const int replays = rv && atoi(rv) > 0 ? atoi(rv) : 7;
  enum { NSTEP = sizeof k_step / sizeof k_step[0] };
  void *A[NSTEP], *B[NSTEP], *C[NSTEP];
  const float alpha = 1.0f, beta = 0.0f;
  for (int i = 0; i < NSTEP; i++) {
    size_t na, nb, nc;
    case_elems(&k_step[i], &na, &nb, &nc);
    CK(cudaMalloc(&A[i], na * tsize(k_step[i].ab)));
    CK(cudaMalloc(&B[i], nb * tsize(k_step[i].ab)));
    CK(cudaMalloc(&C[i], nc * tsize(k_step[i].cd)));
    CK(cudaMemset(A[i], 0, na * tsize(k_step[i].ab)));
    CK(cudaMemset(B[i], 0, nb * tsize(k_step[i].ab)));
  }
  use_stream(c, c->s);
  issue(c, &k_step[NSTEP - 1], A[NSTEP - 1], B[NSTEP - 1], C[NSTEP - 1], &alpha, &beta);
  CK(cudaStreamSynchronize(c->s));
  cudaGraph_t gr;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(c->s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < NSTEP; i++)
    for (int r = 0; r < k_step[i].reps; r++) issue(c, &k_step[i], A[i], B[i], C[i], &alpha, &beta);
  CK(cudaStreamEndCapture(c->s, &gr));
  CK(cudaGraphInstantiate(&exec, gr, 0));
  for (int r = 0; r < replays; r++) CK(cudaGraphLaunch(exec, c->s));
  CK(cudaStreamSynchronize(c->s));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(gr));
  for (int i = 0; i < NSTEP; i++) {
    printf("step %s calls_per_step=%d eager=%d\n", k_step[i].name, k_step[i].reps,
           i == NSTEP - 1);
    CK(cudaFree(A[i]));
    CK(cudaFree(B[i]));
    CK(cudaFree(C[i]));
  }
  printf("replays %d\n", replays);
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
  /* A's factor at [0], B's at [4]: cuBLASLt wants 16-byte aligned scale pointers (it refuses the
   * call, CUBLAS_STATUS_NOT_SUPPORTED, for a pointer 4 bytes into an allocation). */
  const float ones[8] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  CK(cudaMalloc((void **)&c.dscale, sizeof ones));
  CK(cudaMemcpy(c.dscale, ones, sizeof ones, cudaMemcpyHostToDevice));
  use_stream(&c, c.s);
  const char *cases = getenv("GT_CLIENT_CASES"), *first = getenv("GT_CLIENT_GRAPH_FIRST");
  const char *warm = getenv("GT_CLIENT_WARMUP");
  const bool scope = cases && strcmp(cases, "scope") == 0;
  if (cases && strcmp(cases, "replays") == 0) {
    run_replays(&c);
    CB(cublasLtDestroy(c.lt));
    CB(cublasDestroy(c.h));
    return 0;
  }
  const gemm_case_t *table = scope ? k_scope : k_cases;
  const size_t ncases = scope ? sizeof k_scope / sizeof k_scope[0] : sizeof k_cases / sizeof k_cases[0];
  if (warm && atoi(warm)) run_case(&c, &k_warmup); /* eager, before any graph-first case */
  g_graph_first = first && atoi(first);
  for (size_t i = 0; i < ncases; i++) {
    if (only && strcmp(only, table[i].name) != 0) continue;
    if (g_graph_first && table[i].mode == RUN_DEVPTR) continue; /* an eager call by its nature */
    run_case(&c, &table[i]);
  }
  CB(cublasLtDestroy(c.lt));
  CB(cublasDestroy(c.h));
  CK(cudaFree(c.ws));
  CK(cudaFree(c.dscale));
  CK(cudaStreamDestroy(c.s));
  CK(cudaStreamDestroy(c.s2));
  return 0;
}
