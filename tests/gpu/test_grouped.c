/* Every grouped GEMM instance (gt_grouped.h) against a host fp64 reference per group, on a table of
 * routings: uneven splits, empty groups first, in the middle and last, all rows in one group,
 * decode-like (1-3 rows per group over many groups) and prefill-like (hundreds per group), with
 * N and K tails, padded strides, bias on and off, both weight layouts ([E][N][K] seen transposed,
 * sbk == 1, and [E][K][N], sbn == 1: each instance runs the cases of its layout). D is filled with
 * a sentinel first and every row at or past offs[groups-1] must keep it. Then, per family and
 * split-K, one instance captured into a CUDA graph and replayed after offs was rewritten on the
 * device: the replay must follow the new routing. Then the path the shim takes for a DB row: the
 * grouped provider rebuilds every instance from a grouped_mm key (gt_grouped_key of a torch-style
 * call, no operand pointers yet), prepares and runs it with the call's operands. The e4m3
 * instances (torch's f8f8bf16_grouped_mm: fp8 operands, one fp32 scale per routed row and one per
 * group and output column, bf16 D) run the enk cases without bias against the fp64 product of
 * the dequantized operands: the row scales and every group's column scales all differ, so a
 * kernel that ignores a scale, applies a row scale to columns or reads another group's scales
 * fails. One e4m3 case has same-signed operands and a long K (every product adds, nothing
 * cancels): a kernel that sums K in the fp8 wgmma accumulator alone (about 14 mantissa bits on
 * Hopper) is off by more than the tolerance there, as the promoting kernels are not. A bf16
 * problem is refused by an e4m3 instance and the other way round, as are an fp8 call without
 * scales and one with a bias. Exits 77 without an sm_90 device; a kernel
 * that hangs traps after its bounded waits (gt_grp.cuh), and CTest gives the test a timeout. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/gt_dtype.h"
#include "core/gt_grouped_key.h"
#include "kernels/gt_grouped.h"
#include "providers/gt_provider.h"

#define MAXG 64
#define SENTINEL 0x7fc1u /* a bf16 NaN no kernel writes */

typedef struct gcase {
  const char *name;
  int groups;
  int counts[MAXG]; /* rows per group; -1 ends the list early (the rest 0) */
  int64_t extra;    /* rows allocated past offs[groups-1] */
  int64_t n, k;
  int64_t pad_a, pad_w, pad_d; /* added to lda, the weight stride, ldd (elements) */
  int bias;
} gcase_t;

static const gcase_t k_cases[] = {
    {"uneven_mid_empty", 5, {3, 0, 17, 1, 9}, 7, 200, 328, 0, 0, 0, 0},
    {"empty_first_last_bias", 4, {0, 40, 90, 0}, 5, 136, 256, 8, 8, 3, 1},
    {"all_rows_one_group", 6, {0, 0, 0, 130, 0, 0}, 3, 264, 192, 0, 0, 0, 0},
    {"decode_many_groups_bias", 16, {1, 2, 0, 1, 3, 1, 0, 0, 2, 1, 1, 0, 1, 1, 2, 1}, 9, 1000,
     1024, 0, 16, 0, 1},
    {"decode_one_row", 8, {0, 0, 0, 0, 1, 0, 0, 0}, 1, 512, 4104, 0, 0, 0, 0},
    {"prefill_uneven_bias", 3, {300, 513, 200}, 11, 520, 384, 8, 0, 1, 1},
    {"k_tail_n_tail", 3, {65, 7, 129}, 2, 72, 72, 0, 8, 0, 0},
    {"all_empty", 4, {0, 0, 0, 0}, 8, 128, 128, 0, 0, 0, 1},
    /* N not a multiple of 8 with ldd one: the vector store's partial last vector */
    {"n_tail_vector_store_bias", 3, {20, 0, 37}, 3, 100, 196, 4, 4, 4, 1},
    /* K a multiple of 16 (e4m3's TMA strides) but not of any BK, empty first and last groups,
     * padded strides, an odd ldd (the element-by-element store) */
    {"k_tail_odd_ldd", 5, {0, 7, 33, 1, 0}, 6, 200, 688, 16, 32, 5, 0},
    /* the vector store's partial last vector with K and strides e4m3 can take */
    {"n_tail_vector_store_k256", 3, {20, 0, 37}, 3, 100, 256, 0, 0, 4, 0},
};
#define NCASES (sizeof k_cases / sizeof k_cases[0])

static uint16_t f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static double bf2d(uint16_t v) {
  uint32_t u = (uint32_t)v << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t g_rng = 12345u;
static float frand(void) {
  g_rng = g_rng * 1664525u + 1013904223u;
  return (float)((g_rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

#define CK(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* One problem on the host and the device. */
typedef struct prob {
  gt_grouped_args_t a;
  int32_t offs[MAXG];
  int64_t used, wsz, xsz, dsz;
  uint16_t *hx, *hw, *hb;
  void *dx, *dw, *dd, *db;
  int32_t *doffs;
  /* e4m3 operands (prob_make_f8): the bytes, the scales on the host and the device */
  int f8;
  uint8_t *hx8, *hw8;
  float *hsa, *hsb;
  void *dsa, *dsb;
} prob_t;

static void prob_make(prob_t *p, const gcase_t *c, int layout) {
  memset(p, 0, sizeof *p);
  int64_t r = 0;
  for (int g = 0; g < c->groups; g++) {
    r += c->counts[g] > 0 ? c->counts[g] : 0;
    p->offs[g] = (int32_t)r;
  }
  p->used = r;
  gt_grouped_args_t *a = &p->a;
  a->groups = c->groups;
  a->rows = r + c->extra;
  a->n = c->n;
  a->k = c->k;
  a->lda = c->k + c->pad_a;
  a->ldd = c->n + c->pad_d;
  if (layout == GT_GROUPED_ENK) { /* [E][N][K]: row n of group g at g*sbg + n*sbn */
    a->sbk = 1;
    a->sbn = c->k + c->pad_w;
    a->sbg = a->sbn * c->n;
  } else { /* [E][K][N] */
    a->sbn = 1;
    a->sbk = c->n + c->pad_w;
    a->sbg = a->sbk * c->k;
  }
  a->sbias = (c->n + 8 + 7) / 8 * 8; /* 16-byte aligned vectors: the vector store reads them */
  p->xsz = a->rows * a->lda;
  p->wsz = a->sbg * c->groups;
  p->dsz = a->rows * a->ldd;
  p->hx = malloc(p->xsz * 2);
  p->hw = malloc(p->wsz * 2);
  p->hb = malloc(a->sbias * c->groups * 2);
  for (int64_t i = 0; i < p->xsz; i++) p->hx[i] = f2bf(frand());
  for (int64_t i = 0; i < p->wsz; i++) p->hw[i] = f2bf(frand());
  for (int64_t i = 0; i < a->sbias * c->groups; i++) p->hb[i] = f2bf(frand());
  CK(cudaMalloc(&p->dx, p->xsz * 2));
  CK(cudaMalloc(&p->dw, p->wsz * 2));
  CK(cudaMalloc(&p->dd, p->dsz * 2));
  CK(cudaMalloc(&p->db, a->sbias * c->groups * 2));
  CK(cudaMalloc((void **)&p->doffs, sizeof p->offs));
  CK(cudaMemcpy(p->dx, p->hx, p->xsz * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(p->dw, p->hw, p->wsz * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(p->db, p->hb, a->sbias * c->groups * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(p->doffs, p->offs, sizeof p->offs, cudaMemcpyHostToDevice));
  /* A cudaMemcpy from pageable memory may return before its DMA lands, on the legacy stream, which
   * a non-blocking stream does not wait for: every fill here ends with a device synchronize. */
  CK(cudaDeviceSynchronize());
  a->a = p->dx;
  a->b = p->dw;
  a->d = p->dd;
  a->offs = p->doffs;
  a->bias = c->bias ? p->db : NULL;
}

/* The case with e4m3 operands ([E][N][K] weights, no bias): random bytes of values in [-2, 2]
 * ([0, 2] with same_sign), a scale per routed row in [0.75, 1.25] and per group and column in
 * [1.5, 2.5], each distinct, so no scale can be mistaken for another. The bf16 operand buffers
 * are replaced by the bytes. */
static void prob_make_f8_pad(prob_t *p, const gcase_t *c, int64_t spad, int same_sign) {
  gcase_t nb = *c;
  nb.bias = 0;
  prob_make(p, &nb, GT_GROUPED_ENK);
  gt_grouped_args_t *a = &p->a;
  p->f8 = 1;
  a->operands = GT_GROUPED_OPERANDS_E4M3;
  a->sscale_b = a->n + spad; /* padded (spad > 0): the group stride of scale_b is not n */
  p->hx8 = malloc(p->xsz);
  p->hw8 = malloc(p->wsz);
  for (int64_t i = 0; i < p->xsz; i++)
    p->hx8[i] = gt_f32_to_e4m3fn(2.0f * (same_sign ? fabsf(frand()) : frand()));
  for (int64_t i = 0; i < p->wsz; i++)
    p->hw8[i] = gt_f32_to_e4m3fn(2.0f * (same_sign ? fabsf(frand()) : frand()));
  p->hsa = malloc(a->rows * sizeof(float));
  p->hsb = malloc(a->sscale_b * a->groups * sizeof(float));
  for (int64_t r = 0; r < a->rows; r++) p->hsa[r] = 0.75f + 0.5f * frand();
  for (int64_t i = 0; i < a->sscale_b * a->groups; i++) p->hsb[i] = 1.5f + frand();
  CK(cudaMemcpy(p->dx, p->hx8, p->xsz, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(p->dw, p->hw8, p->wsz, cudaMemcpyHostToDevice));
  CK(cudaMalloc(&p->dsa, a->rows * sizeof(float) + 16));
  CK(cudaMalloc(&p->dsb, a->sscale_b * a->groups * sizeof(float)));
  CK(cudaMemcpy(p->dsa, p->hsa, a->rows * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(p->dsb, p->hsb, a->sscale_b * a->groups * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize()); /* see prob_make */
  a->scale_a = p->dsa;
  a->scale_b = p->dsb;
}

static void prob_make_f8(prob_t *p, const gcase_t *c) { prob_make_f8_pad(p, c, 4, 0); }

static void prob_free(prob_t *p) {
  free(p->hx);
  free(p->hw);
  free(p->hb);
  free(p->hx8);
  free(p->hw8);
  free(p->hsa);
  free(p->hsb);
  cudaFree(p->dx);
  cudaFree(p->dw);
  cudaFree(p->dd);
  cudaFree(p->db);
  cudaFree(p->doffs);
  cudaFree(p->dsa);
  cudaFree(p->dsb);
}

static void fill_sentinel(prob_t *p) {
  uint16_t *h = malloc(p->dsz * 2);
  for (int64_t i = 0; i < p->dsz; i++) h[i] = SENTINEL;
  CK(cudaMemcpy(p->dd, h, p->dsz * 2, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize()); /* see prob_make */
  free(h);
}

/* The fp64 reference of routing offs: rows x n doubles (rows past offs[last] unset). */
static double *reference(const prob_t *p, const int32_t *offs) {
  const gt_grouped_args_t *a = &p->a;
  double *ref = calloc((size_t)(a->rows * a->n + 1), sizeof *ref);
  int64_t beg = 0;
  for (int g = 0; g < a->groups; g++) {
    for (int64_t r = beg; r < offs[g]; r++)
      for (int64_t n = 0; n < a->n; n++) {
        double v = 0;
        if (p->f8) {
          for (int64_t k = 0; k < a->k; k++)
            v += (double)gt_e4m3fn_to_f32(p->hx8[r * a->lda + k]) *
                 (double)gt_e4m3fn_to_f32(p->hw8[g * a->sbg + k * a->sbk + n * a->sbn]);
          v *= (double)p->hsa[r] * (double)p->hsb[g * a->sscale_b + n];
        } else {
          for (int64_t k = 0; k < a->k; k++)
            v += bf2d(p->hx[r * a->lda + k]) * bf2d(p->hw[g * a->sbg + k * a->sbk + n * a->sbn]);
        }
        if (a->bias) v += bf2d(p->hb[g * a->sbias + n]);
        ref[r * a->n + n] = v;
      }
    beg = offs[g];
  }
  return ref;
}

/* Compares D with the reference of routing offs; rows past offs[last] and the padding columns
 * must hold the sentinel. Returns the number of bad elements (prints the first). */
static long check(const prob_t *p, const int32_t *offs, const double *refs, const char *what) {
  const gt_grouped_args_t *a = &p->a;
  uint16_t *h = malloc(p->dsz * 2);
  CK(cudaMemcpy(h, p->dd, p->dsz * 2, cudaMemcpyDeviceToHost));
  long bad = 0;
  int64_t beg = 0;
  const int64_t end_all = offs[a->groups - 1];
  for (int g = 0; g < a->groups; g++) {
    const int64_t end = offs[g];
    for (int64_t r = beg; r < end; r++)
      for (int64_t n = 0; n < a->n; n++) {
        const double ref = refs[r * a->n + n];
        const double got = bf2d(h[r * a->ldd + n]);
        /* fp8: the same bound on the unscaled sum (products of +-2 values: 4x bf16's +-1),
         * times the element's two scales. */
        const double sc = p->f8 ? 4.0 * p->hsa[r] * p->hsb[g * a->sscale_b + n] : 1.0;
        const double tol = 0.008 * fabs(ref) + 2e-3 * sqrt((double)a->k) * sc;
        if (!(fabs(got - ref) <= tol)) {
          if (!bad)
            fprintf(stderr, "  %s: group %d row %lld col %lld: got %g, want %g\n", what, g,
                    (long long)r, (long long)n, got, ref);
          bad++;
        }
      }
    beg = end;
  }
  for (int64_t r = 0; r < a->rows; r++)
    for (int64_t n = 0; n < a->ldd; n++) {
      if (r < end_all && n < a->n) continue;
      if (h[r * a->ldd + n] != SENTINEL) {
        if (!bad)
          fprintf(stderr, "  %s: row %lld col %lld outside the routed output was written\n", what,
                  (long long)r, (long long)n);
        bad++;
      }
    }
  free(h);
  return bad;
}

static int g_pass, g_fail;
static void report(int ok, const char *inst, const char *what) {
  if (ok) {
    g_pass++;
  } else {
    g_fail++;
    fprintf(stderr, "FAIL %s: %s\n", inst, what);
  }
}

/* Every instance of the layout (and of the operands: f8 the e4m3 ones, 2 with same-signed
 * operands) on case c. */
static void run_case(const gcase_t *c, int layout, int f8, int *ran) {
  prob_t p;
  if (f8)
    prob_make_f8_pad(&p, c, 4, f8 == 2);
  else
    prob_make(&p, c, layout);
  double *ref = reference(&p, p.offs);
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    const gt_grouped_instance_t *in = &gt_grouped_instances[i];
    if ((int)in->layout != layout || (in->dtype == GT_DT_F8E4M3FN) != (p.f8 != 0)) continue;
    if (gt_grouped_supports((int)i, &p.a) != GT_OK) {
      fprintf(stderr, "  %s refuses %s: %s\n", in->name, c->name, gt_err_msg());
      continue;
    }
    fill_sentinel(&p);
    gt_status_t s = gt_grouped_launch(in->name, &p.a, NULL, 0, 0);
    cudaError_t e = cudaDeviceSynchronize();
    char what[160];
    snprintf(what, sizeof what, "%s (%s)", c->name,
             f8 == 2 ? "e4m3, same-signed operands"
             : f8    ? "e4m3, rowwise scales"
             : layout == GT_GROUPED_ENK ? "enk"
                                        : "ekn");
    if (s != GT_OK || e != cudaSuccess) {
      fprintf(stderr, "  %s on %s: launch %s, sync %s\n", in->name, what,
              s != GT_OK ? gt_err_msg() : "ok", cudaGetErrorString(e));
      report(0, in->name, what);
      if (e != cudaSuccess) exit(1); /* the context is gone */
      continue;
    }
    report(check(&p, p.offs, ref, what) == 0, in->name, what);
    ran[i]++;
  }
  free(ref);
  prob_free(&p);
}

/* Capture one launch into a graph, replay it with offs rewritten on the device (another routing,
 * same rows): the replay's output must be that routing's. */
static void run_graph(int idx) {
  const gt_grouped_instance_t *in = &gt_grouped_instances[idx];
  const gcase_t c = {"graph", 6, {5, 0, 9, 2, 0, 14}, 4, 264, 512, 0, 0, 0, 1};
  prob_t p;
  if (in->dtype == GT_DT_F8E4M3FN)
    prob_make_f8(&p, &c);
  else
    prob_make(&p, &c, in->layout);
  const int32_t offs2[6] = {0, 11, 11, 12, 30, 30}; /* same 30 rows, other groups */
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  fill_sentinel(&p);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  gt_status_t s = gt_grouped_launch(in->name, &p.a, NULL, 0, st);
  CK(cudaStreamEndCapture(st, &graph));
  if (s != GT_OK) {
    fprintf(stderr, "  %s: launch under capture: %s\n", in->name, gt_err_msg());
    report(0, in->name, "graph capture");
    prob_free(&p);
    return;
  }
  CK(cudaGraphInstantiate(&exec, graph, 0));
  double *ref1 = reference(&p, p.offs), *ref2 = reference(&p, offs2);
  CK(cudaGraphLaunch(exec, st));
  CK(cudaStreamSynchronize(st));
  report(check(&p, p.offs, ref1, "graph replay 1") == 0, in->name, "graph replay, captured routing");
  fill_sentinel(&p);
  CK(cudaMemcpy(p.doffs, offs2, sizeof offs2, cudaMemcpyHostToDevice));
  CK(cudaDeviceSynchronize()); /* see prob_make */
  CK(cudaGraphLaunch(exec, st));
  CK(cudaStreamSynchronize(st));
  report(check(&p, offs2, ref2, "graph replay 2") == 0, in->name, "graph replay, rewritten routing");
  free(ref1);
  free(ref2);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(st);
  prob_free(&p);
}

/* What the shim does with a DB row: rebuild the candidate from the key alone (no pointers yet),
 * prepare it, run it on the call's operands. Every instance of the key's layout and operands must
 * come back from its name and compute the product (a refusal here is a row that never engages);
 * an instance of the other operands must be refused. f8: the key of an f8f8bf16_grouped_mm call
 * with rowwise scales, the operands in BLAS terms (A the weights with their per-column scale,
 * torch's scale_b; B the rows with theirs, torch's scale_a): row and column scales differ, so a
 * provider that swapped them fails. */
static void run_provider_path(int f8) {
  const char *sfx = f8 ? " (fp8)" : "";
  const gt_provider_t *prov = gt_provider_find("grouped");
  if (!prov || gt_provider_ready(prov) != GT_OK) {
    if (!f8) report(0, "grouped provider", "ready on this device");
    return;
  }
  /* A Mixtral-like decode call: 8 experts of N x 1024 ([E][N][K]), 29 routed rows. */
  static const gcase_t cb = {"provider_decode", 8, {5, 0, 3, 9, 1, 4, 0, 7}, 0, 7168, 1024,
                             0, 0, 0, 0};
  static const gcase_t cf = {"provider_decode_f8", 8, {5, 0, 3, 9, 1, 4, 0, 7}, 0, 2048, 1024,
                             0, 0, 0, 0};
  const gcase_t *c = f8 ? &cf : &cb;
  prob_t p;
  if (f8)
    prob_make_f8_pad(&p, c, 0, 0); /* torch's [groups][N] scale_b: groups N apart */
  else
    prob_make(&p, c, GT_GROUPED_ENK);
  gt_grouped_call_t call = {0};
  call.entry = f8 ? "f8f8bf16_grouped_mm" : "bf16bf16_grouped_mm";
  call.a_type = call.b_type = f8 ? GT_DT_F8E4M3FN : GT_DT_BF16;
  call.out_type = GT_DT_BF16;
  call.a_2d = call.b_3d = call.has_offs = true;
  call.fp8_scaled = call.scales_rowwise = f8 != 0;
  call.rows = p.a.rows;
  call.k = c->k;
  call.n = c->n;
  call.groups = c->groups;
  call.a_row_stride = p.a.lda, call.a_col_stride = 1;
  call.b_group_stride = p.a.sbg, call.b_k_stride = 1, call.b_n_stride = p.a.sbn;
  call.out_row_stride = p.a.ldd, call.out_col_stride = 1;
  gt_problem_t key;
  gt_cublas_mark_t mark;
  memset(&mark, 0, sizeof mark);
  if (gt_grouped_key(&call, "sm_90", 132, &key, &mark) != GT_OK || mark.why[0]) {
    fprintf(stderr, "  gt_grouped_key%s: %s %s\n", sfx, gt_err_msg(), mark.why);
    report(0, "gt_grouped_key", f8 ? "keys an fp8 rowwise call as tunable"
                                   : "keys a Mixtral-like call as tunable");
    prob_free(&p);
    return;
  }
  double *ref = reference(&p, p.offs);
  const gt_dtype_t mine = f8 ? GT_DT_F8E4M3FN : GT_DT_BF16;
  int rebuilt = 0;
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    const gt_grouped_instance_t *in = &gt_grouped_instances[i];
    gt_candidate_t cand;
    void *st = NULL;
    size_t ws = 0;
    const gt_status_t fs = gt_provider_candidate_from_name("grouped", in->name, &key, &cand);
    if (in->dtype != mine) {
      if (fs == GT_OK) report(0, in->name, "an instance of the other operands is refused");
      continue;
    }
    if (in->layout != GT_GROUPED_ENK) continue;
    if (fs != GT_OK) {
      fprintf(stderr, "  %s from its name%s: %s\n", in->name, sfx, gt_err_msg());
      report(0, in->name, "rebuilt from the key alone (a DB row's path)");
      continue;
    }
    if (prov->prepare(&cand, &key, &st, &ws) != GT_OK || ws != 0) {
      fprintf(stderr, "  %s prepare%s: %s\n", in->name, sfx, gt_err_msg());
      report(0, in->name, "prepared from the key alone");
      continue;
    }
    fill_sentinel(&p);
    gt_operands_t ops;
    memset(&ops, 0, sizeof ops);
    ops.A = p.a.b; /* BLAS A is the weights, B the routed rows */
    ops.B = p.a.a;
    ops.D = p.a.d;
    ops.offs = p.a.offs;
    ops.rows = p.a.rows;
    if (f8) {
      ops.scale_a = p.dsb; /* the weights' (torch's scale_b) */
      ops.scale_b = p.dsa; /* the rows' (torch's scale_a) */
    }
    gt_status_t s = prov->run(st, &ops, NULL);
    cudaError_t e = cudaDeviceSynchronize();
    prov->release(st);
    if (s != GT_OK || e != cudaSuccess) {
      fprintf(stderr, "  %s run%s: %s, sync %s\n", in->name, sfx,
              s != GT_OK ? gt_err_msg() : "ok", cudaGetErrorString(e));
      report(0, in->name, "provider run");
      if (e != cudaSuccess) exit(1);
      continue;
    }
    report(check(&p, p.offs, ref, f8 ? "provider path fp8" : "provider path") == 0, in->name,
           f8 ? "provider path (shim's), fp8 with rowwise scales" : "provider path (shim's)");
    rebuilt++;
  }
  report(rebuilt > 0, "grouped provider", f8 ? "at least one e4m3 instance served the fp8 key"
                                             : "at least one instance served the key");
  free(ref);
  prob_free(&p);
}

int main(void) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("no CUDA device: skipped\n");
    return 77;
  }
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  if (major != 9 || minor != 0) {
    printf("device is sm_%d%d, the grouped kernels are sm_90a: skipped\n", major, minor);
    return 77;
  }
  int *ran = calloc(gt_grouped_instance_count, sizeof *ran);
  for (size_t c = 0; c < NCASES; c++) {
    for (int layout = GT_GROUPED_ENK; layout <= GT_GROUPED_EKN; layout++)
      run_case(&k_cases[c], layout, 0, ran);
    /* e4m3 needs K and the strides in multiples of 16 bytes: the cases whose K is */
    if (k_cases[c].k % 16 == 0 && k_cases[c].pad_a % 16 == 0 && k_cases[c].pad_w % 16 == 0)
      run_case(&k_cases[c], GT_GROUPED_ENK, 1, ran);
  }
  {
    /* Sums of 4096 same-signed products (about 4000 before scaling). Without promotion the
     * e4m3 kernels came out 0.8-1.7% low on the provider case's sums of 1024 same-signed
     * products (an H100, 2026-12-07); the tolerance is 0.8% of the sum. */
    const gcase_t pos = {"same_sign_k4096", 4, {3, 0, 9, 5}, 2, 192, 4096, 0, 0, 0, 0};
    run_case(&pos, GT_GROUPED_ENK, 2, ran);
  }
  for (size_t i = 0; i < gt_grouped_instance_count; i++)
    report(ran[i] > 0, gt_grouped_instances[i].name, "ran on at least one case");
  /* One instance per (family, split-K, layout, operands) in a graph. */
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    int first = 1;
    for (size_t j = 0; j < i; j++)
      if (gt_grouped_instances[j].family == gt_grouped_instances[i].family &&
          (gt_grouped_instances[j].splitk > 1) == (gt_grouped_instances[i].splitk > 1) &&
          gt_grouped_instances[j].layout == gt_grouped_instances[i].layout &&
          gt_grouped_instances[j].dtype == gt_grouped_instances[i].dtype)
        first = 0;
    if (first) run_graph((int)i);
  }
  run_provider_path(0);
  run_provider_path(1);
  /* A mismatched layout is refused with a reason. */
  {
    prob_t p;
    prob_make(&p, &k_cases[0], GT_GROUPED_EKN);
    const int enk = gt_grouped_find("gt_sm90_grpd_bf16_enk_t128x8x128_s4_ks1");
    report(enk >= 0 && gt_grouped_supports(enk, &p.a) == GT_ERR_UNSUPPORTED &&
               strstr(gt_err_msg(), "sbk == 1") != NULL,
           "gt_grouped_supports", "an [E][K][N] problem is refused by an enk instance");
    prob_free(&p);
  }
  /* The operands are the instance's: each refuses the other's problem, and an e4m3 call without
   * its scales or with a bias is refused with the reason. */
  {
    const int bf = gt_grouped_find("gt_sm90_grpd_bf16_enk_t128x8x128_s4_ks1");
    const int f8 = gt_grouped_find("gt_sm90_grpd_e4m3_enk_t64x8x512_s4_ks1");
    report(f8 >= 0, "gt_grouped_find", "the e4m3 instance t64x8x512_s4_ks1 is in the table");
    prob_t p, q;
    prob_make(&p, &k_cases[0], GT_GROUPED_ENK);
    prob_make_f8(&q, &k_cases[1]);
    report(f8 >= 0 && gt_grouped_supports(f8, &p.a) == GT_ERR_UNSUPPORTED &&
               strstr(gt_err_msg(), "e4m3 operands, the problem has bf16") != NULL,
           "gt_grouped_supports", "a bf16 problem is refused by an e4m3 instance");
    report(bf >= 0 && gt_grouped_supports(bf, &q.a) == GT_ERR_UNSUPPORTED &&
               strstr(gt_err_msg(), "bf16 operands, the problem has e4m3") != NULL,
           "gt_grouped_supports", "an e4m3 problem is refused by a bf16 instance");
    gt_grouped_args_t noscale = q.a;
    noscale.scale_b = NULL;
    report(f8 >= 0 && gt_grouped_supports(f8, &noscale) == GT_ERR_USAGE &&
               strstr(gt_err_msg(), "scale_a and scale_b") != NULL,
           "gt_grouped_supports", "an e4m3 problem without scale_b is refused");
    gt_grouped_args_t withbias = q.a;
    withbias.bias = q.db;
    report(f8 >= 0 && gt_grouped_supports(f8, &withbias) == GT_ERR_UNSUPPORTED &&
               strstr(gt_err_msg(), "no bias") != NULL,
           "gt_grouped_supports", "an e4m3 problem with a bias is refused");
    prob_free(&p);
    prob_free(&q);
  }
  free(ran);
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
