/* grouped_bench: every grouped GEMM instance (gt_grouped.h) timed on the MoE shapes of Mixtral
 * 8x7B, Qwen3-30B-A3B and DeepSeek-V3 (gate+up fused and down projections), at the routed rows
 * of 1, 4, 16 and 64 decode tokens and of a 2048-token prefill (tokens x top-k), the routing
 * random but seeded (each token picks top-k distinct experts: uneven splits, empty groups).
 *
 * Cold timing: the weights are rotated over enough copies that the bytes one round touches are
 * several times L2 (a copy is dropped when memory is short: the line says how many), a CUDA graph
 * of `iters` launches is replayed `reps` times and the median per-launch time is reported. TB/s
 * counts the weight bytes of non-empty groups only (what a call has to read), TFLOP/s the
 * routed rows' 2*N*K.
 *
 * Usage: grouped_bench [--filter SUBSTR] [--tokens 1,4,16,64,2048] [--iters N] [--reps N]
 *                      [--csv FILE] [--instance NAME]
 * Prints one line per (shape, tokens, instance) and the best instance per (shape, tokens). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kernels/gt_grouped.h"

typedef struct mshape {
  const char *model, *proj;
  int experts, topk;
  int64_t k, n; /* in, out */
} mshape_t;

static const mshape_t k_shapes[] = {
    {"mixtral-8x7b", "gate_up", 8, 2, 4096, 28672},
    {"mixtral-8x7b", "down", 8, 2, 14336, 4096},
    {"qwen3-30b-a3b", "gate_up", 128, 8, 2048, 1536},
    {"qwen3-30b-a3b", "down", 128, 8, 768, 2048},
    {"deepseek-v3", "gate_up", 256, 8, 7168, 4096},
    {"deepseek-v3", "down", 256, 8, 2048, 7168},
};

#define CK(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

static uint64_t g_rng;
static uint32_t rnd(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_rng >> 33);
}

/* Seeded top-k routing of `tokens` tokens over e experts: counts per expert, cumulative. */
static void route(int tokens, int e, int topk, uint64_t seed, int32_t *offs) {
  int *cnt = calloc((size_t)e, sizeof *cnt);
  char *pick = malloc((size_t)e);
  g_rng = seed;
  for (int t = 0; t < tokens; t++) {
    memset(pick, 0, (size_t)e);
    for (int j = 0; j < topk; j++) {
      int x;
      do x = (int)(rnd() % (uint32_t)e);
      while (pick[x]);
      pick[x] = 1;
      cnt[x]++;
    }
  }
  int32_t run = 0;
  for (int g = 0; g < e; g++) offs[g] = run += cnt[g];
  free(cnt);
  free(pick);
}

static int cmp_f(const void *a, const void *b) {
  const float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* Fills n bytes of device memory with a repeated block of random bf16 values in [-1, 1). */
static void fill_random(void *d, size_t bytes) {
  const size_t blk = 64u << 20;
  uint16_t *h = malloc(blk);
  for (size_t i = 0; i < blk / 2; i++) h[i] = (uint16_t)(0x3c00u + (rnd() & 0x7f)) | (rnd() & 0x8000u);
  for (size_t off = 0; off < bytes; off += blk)
    CK(cudaMemcpy((char *)d + off, h, bytes - off < blk ? bytes - off : blk,
                  cudaMemcpyHostToDevice));
  free(h);
}

/* Median microseconds per launch of instance `name` on args a (weights rotated over w[copies]):
 * a CUDA graph of `iters` launches replayed `reps` times. -1 when a launch is refused (the
 * reason in gt_err_msg()). */
static double time_instance(const char *name, gt_grouped_args_t *a, void **w, int copies,
                            int iters, int reps, cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1) {
  a->b = w[0];
  /* Warm-up, and a check that the launch works outside a graph. */
  if (gt_grouped_launch(name, a, NULL, 0, st) != GT_OK) return -1;
  CK(cudaStreamSynchronize(st));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  int ok = 1;
  for (int it = 0; it < iters && ok; it++) {
    a->b = w[it % copies];
    ok = gt_grouped_launch(name, a, NULL, 0, st) == GT_OK;
  }
  CK(cudaStreamEndCapture(st, &graph));
  if (!ok) {
    cudaGraphDestroy(graph);
    return -1;
  }
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, st)); /* warm */
  float *ms = malloc(sizeof(float) * (size_t)reps);
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms[r], e0, e1));
  }
  qsort(ms, (size_t)reps, sizeof *ms, cmp_f);
  const double us = ms[reps / 2] * 1000.0 / iters;
  free(ms);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  a->b = w[0];
  return us;
}

int main(int argc, char **argv) {
  const char *filter = NULL, *csv = NULL, *only = NULL;
  int tokens_list[8] = {1, 4, 16, 64, 2048}, ntok = 5, iters = 20, reps = 7;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
    else if (!strcmp(argv[i], "--instance") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) {
      ntok = 0;
      for (char *t = strtok(argv[++i], ","); t && ntok < 8; t = strtok(NULL, ",")) tokens_list[ntok++] = atoi(t);
    } else {
      fprintf(stderr, "usage: %s [--filter S] [--tokens 1,4,16,64,2048] [--iters N] [--reps N]"
                      " [--csv FILE] [--instance NAME]\n", argv[0]);
      return 64;
    }
  }
  if (iters < 1 || reps < 1) return 64;
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("grouped_bench: no CUDA device: skipped\n");
    return 77;
  }
  int l2 = 0;
  CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  FILE *out = csv ? fopen(csv, "w") : NULL;
  if (csv && !out) {
    perror(csv);
    return 73;
  }
  if (out) fprintf(out, "model,proj,experts,k,n,tokens,rows,active,instance,us,tbs,tflops,copies\n");
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("%-14s %-8s %6s %5s %-44s %9s %7s %8s\n", "model", "proj", "tokens", "rows", "instance",
         "us", "TB/s", "TFLOP/s");
  for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++) {
    const mshape_t *sh = &k_shapes[si];
    char label[64];
    snprintf(label, sizeof label, "%s %s", sh->model, sh->proj);
    if (filter && !strstr(label, filter)) continue;
    const int64_t per_expert = sh->n * sh->k * 2;
    const size_t wbytes = (size_t)per_expert * (size_t)sh->experts;
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    /* Copies: enough that the smallest round (1 token) touches 4x L2, within half the free
     * memory. */
    const int64_t touched_min = per_expert * (sh->topk < sh->experts ? sh->topk : sh->experts);
    int copies = (int)((4 * (int64_t)l2 + touched_min - 1) / touched_min);
    if (copies < 2) copies = 2; /* with one, a call would find the last call's bytes in L2 */
    while (copies > 1 && (size_t)copies * wbytes > free_b / 2) copies--;
    if (copies * wbytes > free_b - (1u << 30)) {
      printf("%-23s skipped: %.1f GB of weights, %.1f GB free\n", label, wbytes / 1e9,
             free_b / 1e9);
      continue;
    }
    void **w = calloc((size_t)copies, sizeof *w);
    for (int c = 0; c < copies; c++) {
      CK(cudaMalloc(&w[c], wbytes));
      fill_random(w[c], wbytes);
    }
    for (int ti = 0; ti < ntok; ti++) {
      const int tokens = tokens_list[ti];
      const int64_t rows = (int64_t)tokens * sh->topk;
      int32_t *offs = malloc(sizeof(int32_t) * (size_t)sh->experts);
      route(tokens, sh->experts, sh->topk, 1000u + si * 97u + (uint64_t)tokens, offs);
      int active = 0;
      for (int g = 0; g < sh->experts; g++) active += offs[g] != (g ? offs[g - 1] : 0);
      void *x, *d;
      int32_t *doffs;
      CK(cudaMalloc(&x, (size_t)(rows * sh->k * 2)));
      CK(cudaMalloc(&d, (size_t)(rows * sh->n * 2)));
      CK(cudaMalloc((void **)&doffs, sizeof(int32_t) * (size_t)sh->experts));
      fill_random(x, (size_t)(rows * sh->k * 2));
      CK(cudaMemcpy(doffs, offs, sizeof(int32_t) * (size_t)sh->experts, cudaMemcpyHostToDevice));
      gt_grouped_args_t a = {0};
      a.a = x;
      a.d = d;
      a.offs = doffs;
      a.rows = rows;
      a.n = sh->n;
      a.k = sh->k;
      a.lda = sh->k;
      a.ldd = sh->n;
      a.sbk = 1;
      a.sbn = sh->k;
      a.sbg = sh->n * sh->k;
      a.groups = sh->experts;
      const double bytes = (double)active * (double)per_expert;
      const double flops = 2.0 * (double)rows * (double)sh->n * (double)sh->k;
      double best_us = 0;
      const char *best = NULL;
      for (size_t i = 0; i < gt_grouped_instance_count; i++) {
        const gt_grouped_instance_t *in = &gt_grouped_instances[i];
        if (only && strcmp(only, in->name)) continue;
        /* A decode tile re-reads the group's weights for every BN rows: past 4 tiles per group
         * on average it cannot win, and at prefill it would take seconds. */
        if (!only && in->family != GT_GROUPED_PREFILL && active &&
            rows > 4 * (int64_t)in->tile_rows * active)
          continue;
        a.b = w[0];
        if (gt_grouped_supports((int)i, &a) != GT_OK) continue;
        const double us = time_instance(in->name, &a, w, copies, iters, reps, st, e0, e1);
        if (us < 0) {
          printf("%-23s %s: %s\n", label, in->name, gt_err_msg());
          continue;
        }
        printf("%-14s %-8s %6d %5lld %-44s %9.2f %7.2f %8.1f\n", sh->model, sh->proj, tokens,
               (long long)rows, in->name, us, bytes / us * 1e-6, flops / us * 1e-6);
        if (out)
          fprintf(out, "%s,%s,%d,%lld,%lld,%d,%lld,%d,%s,%.3f,%.3f,%.2f,%d\n", sh->model,
                  sh->proj, sh->experts, (long long)sh->k, (long long)sh->n, tokens,
                  (long long)rows, active, in->name, us, bytes / us * 1e-6, flops / us * 1e-6,
                  copies);
        if (!best || us < best_us) {
          best_us = us;
          best = in->name;
        }
      }
      if (best)
        printf("BEST %-23s tokens %5d rows %6lld active %3d: %s %.2f us %.2f TB/s %.1f TFLOP/s"
               " (%d weight copies)\n", label, tokens, (long long)rows, active, best, best_us,
               bytes / best_us * 1e-6, flops / best_us * 1e-6, copies);
      cudaFree(x);
      cudaFree(d);
      cudaFree(doffs);
      free(offs);
    }
    for (int c = 0; c < copies; c++) cudaFree(w[c]);
    free(w);
  }
  if (out) fclose(out);
  return 0;
}
