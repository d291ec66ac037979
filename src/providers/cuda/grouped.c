/* The `grouped` provider: gemmtune's own grouped GEMM kernels (src/kernels, gt_grouped.h) for
 * grouped_mm keys, torch._grouped_mm's MoE product (core/gt_grouped_key.h). It turns a key and a
 * call's operands into the kernels' argument block (kernels/gt_grouped_args.h) and launches the
 * instance a DB row names.
 *
 * Its baseline is torch's own function, which no provider of this process can run: baseline_for is
 * false: `tune` races grouped keys in a torch process instead (src/tools/tune_grouped.c, python
 * -m gemmtune.grouped). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "kernels/gt_grouped.h"
#include "kernels/gt_grouped_args.h"
#include "providers/gt_provider.h"
#include "gt_grouped_names.h"

/* ---- the provider ---------------------------------------------------------------------------- */

typedef struct gblob {
  int idx;
} gblob_t;

typedef struct gstate {
  int idx;
  gt_problem_t key;
} gstate_t;

/* The kernels' argument block for key p and operands ops (NULL: pointers left NULL, for the
 * shape-only questions of enumerate). BLAS A is the weights, B the routed rows, D the output: an
 * fp8 key's scale_a (ops->scale_a) is the weights' per group and column, the kernels' scale_b,
 * whose groups are N (the key's m) apart (gt_grouped_key.h: the layout the key requires), and
 * scale_b the rows', the kernels' scale_a. */
static void fill_args(const gt_problem_t *p, const gt_operands_t *ops, gt_grouped_args_t *a) {
  memset(a, 0, sizeof *a);
  const bool f8 = p->a_type == GT_DT_F8E4M3FN;
  a->operands = f8 ? GT_GROUPED_OPERANDS_E4M3 : GT_GROUPED_OPERANDS_BF16;
  if (f8) a->sscale_b = p->m;
  if (ops) {
    a->a = ops->B;
    a->b = ops->A;
    a->d = ops->D;
    a->offs = (const int32_t *)ops->offs;
    a->bias = ops->bias;
    if (f8) {
      a->scale_a = ops->scale_b;
      a->scale_b = ops->scale_a;
    }
  }
  a->rows = ops && ops->rows > 0 ? ops->rows : p->n;
  a->n = p->m;
  a->k = p->k;
  a->lda = p->ldb;
  a->ldd = p->ldc;
  a->sbg = p->stride_a;
  /* transa T: the weight is [E][N][K] seen transposed (K contiguous, lda = the N stride). */
  a->sbk = p->transa == GT_TRANS_T ? 1 : p->lda;
  a->sbn = p->transa == GT_TRANS_T ? p->lda : 1;
  a->sbias = 0;
  a->groups = (int32_t)p->batch;
}

static gt_status_t grouped_init(void) {
  if (gt_grouped_instance_count == 0)
    return gt_err_set(GT_ERR_UNSUPPORTED, "no own grouped kernels in this build");
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= 0) {
    (void)cudaGetLastError();
    return gt_err_set(GT_ERR_DEVICE, "no CUDA device");
  }
  return GT_OK;
}

static bool grouped_baseline_for(gt_entry_t e, const gt_problem_t *p) {
  (void)e, (void)p;
  return false; /* torch's own function is the baseline, and it is not a provider here */
}

static const char *grouped_lib_version(void) { return "gemmtune-grouped=1"; }

/* Why instance i cannot run key p ("" when it can): the key's own limits first. */
static bool instance_ok(size_t i, const gt_problem_t *p, char *why, size_t cap) {
  if (p->op != GT_OP_GROUPED_MM) return snprintf(why, cap, "not a grouped_mm key"), false;
  if (p->batch > INT32_MAX) return snprintf(why, cap, "more groups than an int32"), false;
  const bool bf16 = p->a_type == GT_DT_BF16 && p->b_type == GT_DT_BF16 &&
                    p->d_type == GT_DT_BF16 && p->scale_a == GT_SCALE_NONE &&
                    p->scale_b == GT_SCALE_NONE;
  const bool f8 = p->a_type == GT_DT_F8E4M3FN && p->b_type == GT_DT_F8E4M3FN &&
                  p->d_type == GT_DT_BF16 && p->scale_a == GT_SCALE_OUTER &&
                  p->scale_b == GT_SCALE_OUTER;
  if (!bf16 && !f8)
    return snprintf(why, cap, "bf16, or e4m3 x e4m3 -> bf16 with rowwise (outer) scales, only"),
           false;
  gt_grouped_args_t a;
  fill_args(p, NULL, &a);
  if (gt_grouped_supports((int)i, &a) != GT_OK) return snprintf(why, cap, "%s", gt_err_msg()), false;
  why[0] = '\0';
  return true;
}

static void fill_candidate(gt_candidate_t *c, size_t i);

static gt_status_t grouped_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o,
                                     gt_cand_list_t *out) {
  (void)o;
  if (p->op != GT_OP_GROUPED_MM) return GT_OK; /* nothing to say about other ops */
  for (size_t i = 0; i < gt_grouped_instance_count; i++) {
    gt_candidate_t c;
    fill_candidate(&c, i);
    char why[GT_REASON_MAX];
    if (!instance_ok(i, p, why, sizeof why)) {
      c.excluded = true;
      snprintf(c.reason, sizeof c.reason, "%s", why);
    }
    gt_status_t s = gt_cand_list_push(out, &c);
    if (s != GT_OK) return s;
  }
  return GT_OK;
}

static gt_status_t grouped_from_name(const char *name, const gt_problem_t *p,
                                     gt_candidate_t *out) {
  const int i = gt_grouped_find(name);
  if (i < 0) return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a grouped instance of this build", name);
  char why[GT_REASON_MAX];
  if (!instance_ok((size_t)i, p, why, sizeof why))
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
  fill_candidate(out, (size_t)i);
  return GT_OK;
}

static gt_status_t grouped_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                                   size_t *ws_needed) {
  gblob_t b;
  memcpy(&b, c->blob, sizeof b);
  if (b.idx < 0 || (size_t)b.idx >= gt_grouped_instance_count || strcmp(gt_grouped_instances[b.idx].name, c->name))
    return gt_err_set(GT_ERR_INTERNAL, "grouped: candidate '%s' does not match its blob", c->name);
  gstate_t *st = malloc(sizeof *st);
  if (!st) return gt_err_set(GT_ERR_NOMEM, "grouped: out of host memory");
  st->idx = b.idx;
  st->key = *p;
  gt_grouped_args_t a;
  fill_args(p, NULL, &a);
  *ws_needed = gt_grouped_workspace_bytes(b.idx, &a);
  *state = st;
  return GT_OK;
}

static gt_status_t grouped_run(void *state, const gt_operands_t *ops, void *stream) {
  const gstate_t *st = state;
  if (!ops->offs)
    return gt_err_set(GT_ERR_USAGE, "grouped: a grouped_mm call without offs");
  if (st->key.a_type == GT_DT_F8E4M3FN && (!ops->scale_a || !ops->scale_b))
    return gt_err_set(GT_ERR_USAGE, "grouped: an fp8 grouped_mm call without its scales");
  /* A call may carry fewer rows than its bucket, never more (its key would be another bucket). */
  if (ops->rows > st->key.n)
    return gt_err_set(GT_ERR_USAGE, "grouped: %lld rows in a bucket of %lld",
                      (long long)ops->rows, (long long)st->key.n);
  gt_grouped_args_t a;
  fill_args(&st->key, ops, &a);
  return gt_grouped_launch(gt_grouped_instances[st->idx].name, &a, ops->workspace, ops->ws_size,
                           (struct CUstream_st *)stream);
}

static void grouped_release(void *state) { free(state); }

/* Launching is all run does: no allocation, no synchronisation. */
static bool grouped_capture_safe(void) { return true; }

const gt_provider_t gt_provider_grouped = {
    .api_version = GT_PROVIDER_API_VERSION,
    .name = "grouped",
    .description = "gemmtune's own grouped GEMM kernels for torch._grouped_mm (MoE experts); "
                   "baseline: torch's own function",
    .backend = GT_BACKEND_CUDA,
    .init = grouped_init,
    .baseline_for = grouped_baseline_for,
    .lib_version = grouped_lib_version,
    .enumerate = grouped_enumerate,
    .from_name = grouped_from_name,
    .prepare = grouped_prepare,
    .run = grouped_run,
    .release = grouped_release,
    .row_kernels = gt_grouped_row_kernels,
    .owns_kernel = gt_grouped_owns_kernel,
    .capture_safe = grouped_capture_safe,
};

static void fill_candidate(gt_candidate_t *c, size_t i) {
  memset(c, 0, sizeof *c);
  c->provider = &gt_provider_grouped;
  snprintf(c->name, sizeof c->name, "%s", gt_grouped_instances[i].name);
  gblob_t b = {(int)i};
  memcpy(c->blob, &b, sizeof b);
}
