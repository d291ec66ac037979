/* batched_gemm: a plain cuBLAS application calling cublasGemmBatchedEx (bf16 A, B and C, fp32
 * compute, the operand pointer arrays in device memory), the client of issue 17's capture check
 * (bench/capture_vs_trace.py) for the pointer-array entry point, which gemmtune records but
 * never tunes.
 *
 * Per shape of k_shapes: --iters eager calls on one stream; then one CUDA graph, captured on the
 * same stream, holding one call of every shape, replayed --replays times. So each shape issues
 * iters + replays GEMMs whose kernels run, iters of them eagerly and replays of them from graph
 * replays. cuBLAS gets a workspace of its own (cublasSetWorkspace, after cublasSetStream, which
 * resets it) so nothing is allocated during the capture.
 *
 * Usage: batched_gemm [--iters N] [--replays R]
 * Prints per shape a line for people and a manifest line for capture_vs_trace.py:
 *   gemmtune-manifest {"client":"batched_gemm","label":"scores","entry":"cublasGemmBatchedEx",...}
 * with the problem in cuBLAS's column-major terms (transa, transb, m, n, k, batch), the eager
 * calls, the calls per graph replay and the replays.
 * Exit status: 0 done; 1 a CUDA or cuBLAS error; 2 usage; 77 no CUDA device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

typedef struct bg_shape {
  const char *label, *what;
  cublasOperation_t transa, transb;
  int m, n, k, batch;
} bg_shape_t;

/* Attention-like batches of small products, one per (sequence, head): 8 sequences x 8 heads of
 * 512 tokens and head size 64. Large enough that a call runs for microseconds, not
 * nanoseconds. */
static const bg_shape_t k_shapes[] = {
    /* scores S = K^T Q per head: column-major K [64 x 512] transposed, Q [64 x 512] */
    {"scores", "S[512x512] = K^T Q, head 64", CUBLAS_OP_T, CUBLAS_OP_N, 512, 512, 64, 64},
    /* context O = V P per head: V [64 x 512], P [512 x 512] */
    {"context", "O[64x512] = V P, 512 keys", CUBLAS_OP_N, CUBLAS_OP_N, 64, 512, 512, 64},
};
enum { BG_NSHAPES = sizeof k_shapes / sizeof k_shapes[0] };

#define BG_WORKSPACE_BYTES ((size_t)32 << 20)

#define CK_CUDA(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "batched_gemm: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_),  \
              __FILE__, __LINE__);                                                           \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

#define CK_CUBLAS(call)                                                                      \
  do {                                                                                       \
    cublasStatus_t s_ = (call);                                                              \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      fprintf(stderr, "batched_gemm: %s failed: cuBLAS status %d (%s:%d)\n", #call, (int)s_,   \
              __FILE__, __LINE__);                                                           \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

/* One shape's device memory: the operands packed one batch entry after another, and the three
 * pointer arrays cublasGemmBatchedEx reads (device memory, as the API requires). */
typedef struct bg_operands {
  uint16_t *a, *b, *c;
  void **pa, **pb, **pc;
  int lda, ldb, ldc;
} bg_operands_t;

/* A float as bf16 (round to nearest even; the values here are finite). */
static uint16_t bg_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* n bf16 values in [-1, 1) from a seeded generator, copied to dst. */
static int bg_fill(uint16_t *dst, size_t n, uint32_t seed) {
  uint16_t *h = malloc(n * sizeof *h);
  if (!h) return fprintf(stderr, "batched_gemm: out of host memory\n"), 1;
  uint32_t x = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    h[i] = bg_bf16((float)(x >> 8) / (float)(1u << 23) - 1.0f);
  }
  cudaError_t e = cudaMemcpy(dst, h, n * sizeof *h, cudaMemcpyHostToDevice);
  free(h);
  if (e != cudaSuccess)
    return fprintf(stderr, "batched_gemm: cudaMemcpy: %s\n", cudaGetErrorString(e)), 1;
  return 0;
}

/* The device pointers of batch entry i, i = 0..batch-1, as a device array. */
static int bg_pointer_array(void ***out, uint16_t *base, size_t elems_per_entry, int batch) {
  void **h = malloc((size_t)batch * sizeof *h);
  if (!h) return fprintf(stderr, "batched_gemm: out of host memory\n"), 1;
  for (int i = 0; i < batch; i++) h[i] = base + (size_t)i * elems_per_entry;
  cudaError_t e = cudaMalloc((void **)out, (size_t)batch * sizeof *h);
  if (e == cudaSuccess) e = cudaMemcpy(*out, h, (size_t)batch * sizeof *h, cudaMemcpyHostToDevice);
  free(h);
  if (e != cudaSuccess)
    return fprintf(stderr, "batched_gemm: pointer array: %s\n", cudaGetErrorString(e)), 1;
  return 0;
}

static int bg_setup(const bg_shape_t *s, bg_operands_t *o, uint32_t seed) {
  /* Column-major: op(A) is m x k, op(B) k x n, C m x n; a transposed operand is stored the
   * other way round. */
  const int an = s->transa == CUBLAS_OP_N, bn = s->transb == CUBLAS_OP_N;
  int a_rows = an ? s->m : s->k, a_cols = an ? s->k : s->m;
  int b_rows = bn ? s->k : s->n, b_cols = bn ? s->n : s->k;
  o->lda = a_rows, o->ldb = b_rows, o->ldc = s->m;
  size_t ea = (size_t)a_rows * a_cols, eb = (size_t)b_rows * b_cols, ec = (size_t)s->m * s->n;
  CK_CUDA(cudaMalloc((void **)&o->a, ea * s->batch * sizeof(uint16_t)));
  CK_CUDA(cudaMalloc((void **)&o->b, eb * s->batch * sizeof(uint16_t)));
  CK_CUDA(cudaMalloc((void **)&o->c, ec * s->batch * sizeof(uint16_t)));
  CK_CUDA(cudaMemset(o->c, 0, ec * s->batch * sizeof(uint16_t)));
  if (bg_fill(o->a, ea * s->batch, seed) || bg_fill(o->b, eb * s->batch, seed + 1)) return 1;
  if (bg_pointer_array(&o->pa, o->a, ea, s->batch) ||
      bg_pointer_array(&o->pb, o->b, eb, s->batch) ||
      bg_pointer_array(&o->pc, o->c, ec, s->batch))
    return 1;
  return 0;
}

static cublasStatus_t bg_call(cublasHandle_t h, const bg_shape_t *s, const bg_operands_t *o) {
  static const float one = 1.0f, zero = 0.0f;
  return cublasGemmBatchedEx(h, s->transa, s->transb, s->m, s->n, s->k, &one,
                             (const void *const *)o->pa, CUDA_R_16BF, o->lda,
                             (const void *const *)o->pb, CUDA_R_16BF, o->ldb, &zero,
                             (void *const *)o->pc, CUDA_R_16BF, o->ldc, s->batch,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

static int bg_parse_count(const char *opt, const char *v, int *out) {
  char *end = NULL;
  long x = v ? strtol(v, &end, 10) : -1;
  if (!v || *v == '\0' || *end != '\0' || x < 1 || x > 1000000) {
    fprintf(stderr, "batched_gemm: %s wants a count from 1 to 1000000, not '%s'\n", opt,
            v ? v : "");
    return 2;
  }
  *out = (int)x;
  return 0;
}

static const char k_usage[] =
    "Usage: batched_gemm [--iters N] [--replays R]\n"
    "cublasGemmBatchedEx (bf16, fp32 compute, device pointer arrays) for two shapes: N eager\n"
    "calls each (default 20), then one CUDA graph holding one call of each, replayed R times\n"
    "(default 10). Prints a gemmtune-manifest line per shape.\n"
    "Exit status: 0 done, 1 CUDA or cuBLAS error, 2 usage, 77 no CUDA device.\n";

int main(int argc, char **argv) {
  int iters = 20, replays = 10;
  for (int i = 1; i < argc; i++) {
    int rc = 0;
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return printf("%s", k_usage), 0;
    if (!strcmp(argv[i], "--iters"))
      rc = bg_parse_count("--iters", i + 1 < argc ? argv[++i] : NULL, &iters);
    else if (!strcmp(argv[i], "--replays"))
      rc = bg_parse_count("--replays", i + 1 < argc ? argv[++i] : NULL, &replays);
    else {
      fprintf(stderr, "batched_gemm: unknown argument '%s'\n%s", argv[i], k_usage);
      rc = 2;
    }
    if (rc) return 2;
  }
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev < 1) {
    printf("batched_gemm: no CUDA device (%s): skipped\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    return 77;
  }
  struct cudaDeviceProp prop;
  CK_CUDA(cudaGetDeviceProperties(&prop, 0));
  printf("batched_gemm: %s, cublasGemmBatchedEx bf16 -> bf16, fp32 compute, %d eager calls per "
         "shape, then a graph of one call per shape replayed %d times\n",
         prop.name, iters, replays);

  cublasHandle_t h;
  cudaStream_t stream;
  void *workspace = NULL;
  CK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CK_CUBLAS(cublasCreate(&h));
  CK_CUBLAS(cublasSetStream(h, stream));
  CK_CUDA(cudaMalloc(&workspace, BG_WORKSPACE_BYTES));
  CK_CUBLAS(cublasSetWorkspace(h, workspace, BG_WORKSPACE_BYTES));

  bg_operands_t ops[BG_NSHAPES];
  memset(ops, 0, sizeof ops);
  for (int s = 0; s < BG_NSHAPES; s++)
    if (bg_setup(&k_shapes[s], &ops[s], 17u + 2u * (uint32_t)s)) return 1;
  CK_CUDA(cudaDeviceSynchronize());

  /* Eager: every call's kernels run as it is made. */
  cudaEvent_t t0, t1;
  CK_CUDA(cudaEventCreate(&t0));
  CK_CUDA(cudaEventCreate(&t1));
  float eager_ms[BG_NSHAPES];
  for (int s = 0; s < BG_NSHAPES; s++) {
    CK_CUDA(cudaEventRecord(t0, stream));
    for (int i = 0; i < iters; i++) CK_CUBLAS(bg_call(h, &k_shapes[s], &ops[s]));
    CK_CUDA(cudaEventRecord(t1, stream));
    CK_CUDA(cudaEventSynchronize(t1));
    CK_CUDA(cudaEventElapsedTime(&eager_ms[s], t0, t1));
  }

  /* The graph: one call of every shape, captured on the same stream, replayed. */
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int s = 0; s < BG_NSHAPES; s++) {
    cublasStatus_t st = bg_call(h, &k_shapes[s], &ops[s]);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cudaGraph_t broken;
      cudaStreamEndCapture(stream, &broken);
      fprintf(stderr, "batched_gemm: %s under stream capture failed: cuBLAS status %d\n",
              k_shapes[s].label, (int)st);
      return 1;
    }
  }
  CK_CUDA(cudaStreamEndCapture(stream, &graph));
  CK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  float graph_ms = 0;
  CK_CUDA(cudaEventRecord(t0, stream));
  for (int r = 0; r < replays; r++) CK_CUDA(cudaGraphLaunch(exec, stream));
  CK_CUDA(cudaEventRecord(t1, stream));
  CK_CUDA(cudaEventSynchronize(t1));
  CK_CUDA(cudaEventElapsedTime(&graph_ms, t0, t1));
  CK_CUDA(cudaGetLastError());

  for (int s = 0; s < BG_NSHAPES; s++) {
    const bg_shape_t *sh = &k_shapes[s];
    char ta = sh->transa == CUBLAS_OP_N ? 'N' : 'T', tb = sh->transb == CUBLAS_OP_N ? 'N' : 'T';
    printf("%-8s %s: %c%c m=%d n=%d k=%d batch=%d: %d eager calls, %.2f us each; %d graph "
           "replays of 1 call\n",
           sh->label, sh->what, ta, tb, sh->m, sh->n, sh->k, sh->batch, iters,
           1000.0 * eager_ms[s] / iters, replays);
    printf("gemmtune-manifest {\"client\":\"batched_gemm\",\"label\":\"%s\","
           "\"entry\":\"cublasGemmBatchedEx\",\"dtype\":\"bf16\",\"transa\":\"%c\","
           "\"transb\":\"%c\",\"m\":%d,\"n\":%d,\"k\":%d,\"batch\":%d,\"eager_calls\":%d,"
           "\"graph_calls_per_replay\":1,\"graph_replays\":%d}\n",
           sh->label, ta, tb, sh->m, sh->n, sh->k, sh->batch, iters, replays);
  }
  printf("batched_gemm: graph of %d calls: %.2f us per replay\n", BG_NSHAPES,
         1000.0 * graph_ms / replays);

  CK_CUDA(cudaGraphExecDestroy(exec));
  CK_CUDA(cudaGraphDestroy(graph));
  for (int s = 0; s < BG_NSHAPES; s++) {
    cudaFree(ops[s].a), cudaFree(ops[s].b), cudaFree(ops[s].c);
    cudaFree(ops[s].pa), cudaFree(ops[s].pb), cudaFree(ops[s].pc);
  }
  CK_CUBLAS(cublasDestroy(h));
  cudaFree(workspace);
  cudaEventDestroy(t0), cudaEventDestroy(t1);
  CK_CUDA(cudaStreamDestroy(stream));
  fflush(stdout);
  return 0;
}
