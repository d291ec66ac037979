/* Provider "cublaslt": cuBLASLt matmul configurations as candidates.
 *
 * Two ways to list them: the heuristic's top N (cublasLtMatmulAlgoGetHeuristic, 32 MiB workspace,
 * the default), and with --exhaustive the whole configuration space: every algorithm id, every
 * tile and stages value it reports, split-K, reduction scheme, CTA swizzling, custom option and
 * (on sm_90 and later) cluster shape, each checked with cublasLtMatmulAlgoCheck. Configurations
 * the library rejects stay in the list, excluded, with the library's reason.
 *
 * A candidate is named by its configuration (gt_cublaslt_name.h), never by its heuristic rank,
 * and what gets timed is the algorithm rebuilt from that name (AlgoInit + config attributes), the
 * same thing from_name gives back when a DB row is replayed.
 *
 * One candidate is not a configuration but a call: cublaslt_heuristic_ws<BYTES>, the application's
 * own cublasLtMatmul as frameworks make it, with the heuristic's first algorithm for the same
 * descriptors under the application's workspace limit. It is the baseline of every key whose
 * calls came through cublasLtMatmul (and of biased keys that do not say, since only
 * cublasLtMatmul has a bias epilogue): a speedup against cublasGemmEx would not be a measurement
 * of the path the application takes. PyTorch 2.11 asks the heuristic for one algorithm per call
 * with a 1 MiB workspace and the operands' pointer alignment (at most 256 bytes) as preferences
 * (measured: bench/results/epilogues/probe_cublaslt_log.txt); capture records the workspace each
 * key's calls offered, and 1 MiB stands in when it is not known. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/gt_provider.h"
#include "gt_cuda_kernel_names.h"
#include "gt_cublaslt_name.h"
#include "platform/gt_cudalib.h"

#define GT_LT_WS_BYTES ((size_t)32 << 20)
#define GT_LT_APP_WS_DEFAULT ((uint64_t)1 << 20) /* PyTorch's CUBLASLT_WORKSPACE_SIZE default */
#define GT_LT_APP_ALIGN 256u                      /* the alignment PyTorch reports at most */
#define GT_LT_HEUR_PREFIX "cublaslt_heuristic_ws"
#define GT_LT_DEFAULT_TOP 8
#define GT_LT_MAX_DEVICES 64
#define GT_LT_MAX_ALGO_IDS 1024
/* Upper bound on configurations examined by one exhaustive enumeration: a safety net against a
 * library that reports far more tiles than Hopper's (the H200 space was 55,265). */
#define GT_LT_MAX_CONFIGS 400000

/* The name tables must agree with the header this file is compiled with. */
#define GT_LT_CHECK_TILE(id, r, c) \
  _Static_assert(CUBLASLT_MATMUL_TILE_##r##x##c == id, "tile table vs cublasLt.h: " #r "x" #c);
GT_CUBLASLT_TILES(GT_LT_CHECK_TILE)
#define GT_LT_CHECK_STAGES(id, k, n) \
  _Static_assert(CUBLASLT_MATMUL_STAGES_##k##x##n == id, "stages table vs cublasLt.h: " #k "x" #n);
GT_CUBLASLT_STAGES(GT_LT_CHECK_STAGES)
#define GT_LT_CHECK_STAGES_AUTO(id, k) \
  _Static_assert(CUBLASLT_MATMUL_STAGES_##k##xAUTO == id, "stages table vs cublasLt.h: " #k "xAUTO");
GT_CUBLASLT_STAGES_AUTO(GT_LT_CHECK_STAGES_AUTO)
#define GT_LT_CHECK_CLUSTER(id, X, Y, Z)                              \
  _Static_assert(CUBLASLT_CLUSTER_SHAPE_##X##x##Y##x##Z == id,        \
                 "cluster table vs cublasLt.h: " #X "x" #Y "x" #Z);
GT_CUBLASLT_CLUSTERS(GT_LT_CHECK_CLUSTER)

extern const gt_provider_t gt_provider_cublaslt;

/* What a candidate carries: its configuration, the algorithm built from it, and the workspace
 * AlgoCheck asked for. */
typedef struct lt_blob {
  uint32_t magic;
  uint32_t ws_bytes;
  uint64_t heur_ws_cap; /* GT_LT_HEUR_MAGIC: the workspace limit the heuristic was asked with */
  gt_cublaslt_config_t cfg;
  cublasLtMatmulAlgo_t algo;
} lt_blob_t;
_Static_assert(sizeof(lt_blob_t) <= GT_CAND_BLOB, "cuBLASLt blob does not fit a candidate");
#define GT_LT_MAGIC 0x544c5447u      /* "GTLT": a configuration */
#define GT_LT_HEUR_MAGIC 0x48544c47u /* "GLTH": the application's heuristic call */

/* Matmul descriptor and the four layouts for one problem. */
typedef struct lt_descs {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c, d;
  cublasComputeType_t compute;
  cudaDataType_t scale, at, bt, ct, dt;
} lt_descs_t;

typedef struct lt_state {
  const gt_cublas_api_t *api;
  cublasLtHandle_t handle;
  lt_descs_t descs;
  cublasLtMatmulAlgo_t algo;
  size_t ws_needed;
  bool has_bias;
  const void *bias_set; /* bias pointer last written into the descriptor */
  /* fp8: which scale pointers the key has, and the ones last written into the descriptor (the
   * run's operands say where this call's factors are; cuBLASLt reads them when the kernel runs,
   * so a graph replay with new values in the same arrays sees the new values). */
  bool has_scale[4];                 /* scale_a, scale_b, scale_d, amax_d */
  const void *scale_set[4];
} lt_state_t;

/* The descriptor attribute of each scale pointer, in lt_state_t.has_scale order. */
static const cublasLtMatmulDescAttributes_t k_scale_attr[4] = {
    CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
    CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER};

/* Stand-in scale pointer for descriptors built before any operand exists (enumeration, prepare):
 * cuBLASLt's heuristic and AlgoCheck choose by whether a pointer is set, never read it; run()
 * writes the real one before every launch that needs it. 256-byte aligned, as allocations are. */
static const void *const k_scale_placeholder = (const void *)(uintptr_t)0x100;

/* ---- handles, descriptors ------------------------------------------------------------------ */

static _Thread_local cublasLtHandle_t t_handles[GT_LT_MAX_DEVICES];

static gt_status_t lt_handle(const gt_cublas_api_t *api, cublasLtHandle_t *out) {
  int dev = 0;
  GT_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= GT_LT_MAX_DEVICES)
    return gt_err_set(GT_ERR_UNSUPPORTED, "CUDA device %d: more than %d devices", dev,
                      GT_LT_MAX_DEVICES);
  if (!t_handles[dev]) GT_CUBLAS_CHECK(api->LtCreate(&t_handles[dev]));
  *out = t_handles[dev];
  return GT_OK;
}

static bool lt_epilogue(gt_epilogue_t e, cublasLtEpilogue_t *out) {
  switch (e) {
    case GT_EPI_NONE: *out = CUBLASLT_EPILOGUE_DEFAULT; return true;
    case GT_EPI_BIAS: *out = CUBLASLT_EPILOGUE_BIAS; return true;
    case GT_EPI_RELU: *out = CUBLASLT_EPILOGUE_RELU; return true;
    case GT_EPI_BIAS_RELU: *out = CUBLASLT_EPILOGUE_RELU_BIAS; return true;
    case GT_EPI_GELU: *out = CUBLASLT_EPILOGUE_GELU; return true;
    case GT_EPI_BIAS_GELU: *out = CUBLASLT_EPILOGUE_GELU_BIAS; return true;
    default: return false;
  }
}

static bool has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

/* The cuBLASLt scale mode of a key's scale (never asked for none). */
static int32_t lt_scale_mode(gt_scale_mode_t m) {
  switch (m) {
    case GT_SCALE_OUTER: return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    case GT_SCALE_BLK1X128: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case GT_SCALE_BLK128X128: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    default: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  }
}

/* Whether the key has scale pointer i (lt_state_t.has_scale order). */
static bool key_has_scale(const gt_problem_t *p, int i) {
  switch (i) {
    case 0: return p->scale_a != GT_SCALE_NONE;
    case 1: return p->scale_b != GT_SCALE_NONE;
    case 2: return p->scale_d;
    default: return p->amax_d;
  }
}

/* The fp8 attributes of the application's descriptor, as the key states them: scale modes,
 * fast accumulation, and (stand-in) scale and amax pointers. */
static gt_status_t descs_fp8(const gt_cublas_api_t *api, const gt_problem_t *p, lt_descs_t *d) {
  static const cublasLtMatmulDescAttributes_t mode_attr[2] = {CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                                                              CUBLASLT_MATMUL_DESC_B_SCALE_MODE};
  const gt_scale_mode_t modes[2] = {p->scale_a, p->scale_b};
  for (int i = 0; i < 2; i++) {
    if (modes[i] == GT_SCALE_NONE) continue;
    int32_t m = lt_scale_mode(modes[i]);
    GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(d->op, mode_attr[i], &m, sizeof m));
  }
  for (int i = 0; i < 4; i++)
    if (key_has_scale(p, i))
      GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(d->op, k_scale_attr[i], &k_scale_placeholder,
                                                    sizeof k_scale_placeholder));
  if (p->fast_accum) {
    int8_t on = 1;
    GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on,
                                                  sizeof on));
  }
  return GT_OK;
}

static void descs_destroy(const gt_cublas_api_t *api, lt_descs_t *d) {
  if (d->a) api->LtMatrixLayoutDestroy(d->a);
  if (d->b) api->LtMatrixLayoutDestroy(d->b);
  if (d->c) api->LtMatrixLayoutDestroy(d->c);
  if (d->d) api->LtMatrixLayoutDestroy(d->d);
  if (d->op) api->LtMatmulDescDestroy(d->op);
  memset(d, 0, sizeof *d);
}

static gt_status_t layout(const gt_cublas_api_t *api, cublasLtMatrixLayout_t *out, cudaDataType_t t,
                          int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  GT_CUBLAS_CHECK(api->LtMatrixLayoutCreate(out, t, (uint64_t)rows, (uint64_t)cols, ld));
  if (batch > 1) {
    int32_t count = (int32_t)batch;
    GT_CUBLAS_CHECK(api->LtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &count, sizeof count));
    GT_CUBLAS_CHECK(api->LtMatrixLayoutSetAttribute(
        *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return GT_OK;
}

static gt_status_t descs_build(const gt_cublas_api_t *api, const gt_problem_t *p, lt_descs_t *d) {
  gt_status_t st;
  if ((st = gt_cudalib_data_type(p->a_type, &d->at)) != GT_OK ||
      (st = gt_cudalib_data_type(p->b_type, &d->bt)) != GT_OK ||
      (st = gt_cudalib_data_type(p->c_type, &d->ct)) != GT_OK ||
      (st = gt_cudalib_data_type(p->d_type, &d->dt)) != GT_OK ||
      (st = gt_cudalib_data_type(p->scale_type, &d->scale)) != GT_OK ||
      (st = gt_cudalib_compute_type(p->compute, &d->compute)) != GT_OK)
    return st;
  cublasLtEpilogue_t epi;
  if (!lt_epilogue(p->epilogue, &epi))
    return gt_err_set(GT_ERR_UNSUPPORTED, "cuBLASLt has no %s epilogue", gt_epilogue_name(p->epilogue));

  GT_CUBLAS_CHECK(api->LtMatmulDescCreate(&d->op, d->compute, d->scale));
  int32_t ta = p->transa == GT_TRANS_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t tb = p->transb == GT_TRANS_T ? CUBLAS_OP_T : CUBLAS_OP_N;
  GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  uint32_t e = (uint32_t)epi;
  GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
  if (has_bias(p->epilogue) && (p->d_type == GT_DT_F8E4M3FN || p->d_type == GT_DT_F8E5M2)) {
    cudaDataType_t bt;
    if ((st = gt_cudalib_data_type(gt_cudalib_bias_type(p), &bt)) != GT_OK) return st;
    int32_t b32 = (int32_t)bt;
    GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &b32,
                                                  sizeof b32));
  }

  if ((st = descs_fp8(api, p, d)) != GT_OK) return st;

  int64_t ar = p->transa == GT_TRANS_N ? p->m : p->k, ac = p->transa == GT_TRANS_N ? p->k : p->m;
  int64_t br = p->transb == GT_TRANS_N ? p->k : p->n, bc = p->transb == GT_TRANS_N ? p->n : p->k;
  if ((st = layout(api, &d->a, d->at, ar, ac, p->lda, p->batch, p->stride_a)) != GT_OK ||
      (st = layout(api, &d->b, d->bt, br, bc, p->ldb, p->batch, p->stride_b)) != GT_OK ||
      (st = layout(api, &d->c, d->ct, p->m, p->n, p->ldc, p->batch, p->stride_c)) != GT_OK ||
      (st = layout(api, &d->d, d->dt, p->m, p->n, p->ldc, p->batch, p->stride_c)) != GT_OK)
    return st;
  return GT_OK;
}

/* Problems cuBLASLt cannot be asked about at all (the rest is for the library to judge). */
static bool applicable(const gt_problem_t *p, char *why, size_t cap) {
  cublasLtEpilogue_t e;
  if (p->op != GT_OP_GEMM) return snprintf(why, cap, "not a GEMM"), false;
  if (!lt_epilogue(p->epilogue, &e))
    return snprintf(why, cap, "no cuBLASLt epilogue for %s", gt_epilogue_name(p->epilogue)), false;
  if (p->batch > INT32_MAX) return snprintf(why, cap, "batch above INT32_MAX"), false;
  return true;
}

/* ---- algorithm <-> configuration ------------------------------------------------------------ */

static gt_status_t config_read(const gt_cublas_api_t *api, const cublasLtMatmulAlgo_t *algo,
                               gt_cublaslt_config_t *c) {
  size_t w;
  uint16_t inner = 0, cluster = 0;
  memset(c, 0, sizeof *c);
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &c->algo_id,
                                                      sizeof c->algo_id, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID,
                                                      &c->tile_id, sizeof c->tile_id, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                                      &c->stages_id, sizeof c->stages_id, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                      &c->splitk, sizeof c->splitk, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                      &c->reduction, sizeof c->reduction, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING,
                                                      &c->swizzle, sizeof c->swizzle, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION,
                                                      &c->custom, sizeof c->custom, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID,
                                                      &inner, sizeof inner, &w));
  GT_CUBLAS_CHECK(api->LtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                                                      &cluster, sizeof cluster, &w));
  c->inner_shape = inner;
  c->cluster_id = cluster;
  if (c->splitk < 1) c->splitk = 1; /* some algorithms report 0 for "not split" */
  return GT_OK;
}

/* AlgoInit + every configuration attribute: the one way an algorithm is ever built from a name. */
static cublasStatus_t algo_build(const gt_cublas_api_t *api, cublasLtHandle_t h,
                                 const lt_descs_t *d, const gt_cublaslt_config_t *c,
                                 cublasLtMatmulAlgo_t *algo) {
  /* AlgoInit leaves part of the opaque struct as it found it: start from zeros, so one
   * configuration always gives the same bytes (a candidate's blob compares equal to the one its
   * name rebuilds). */
  memset(algo, 0, sizeof *algo);
  cublasStatus_t s = api->LtMatmulAlgoInit(h, d->compute, d->scale, d->at, d->bt, d->ct, d->dt,
                                           c->algo_id, algo);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  uint16_t inner = (uint16_t)c->inner_shape, cluster = (uint16_t)c->cluster_id;
#define SET(attr, v)                                                                 \
  if ((s = api->LtMatmulAlgoConfigSetAttribute(algo, attr, &(v), sizeof(v))) !=     \
      CUBLAS_STATUS_SUCCESS)                                                         \
    return s;
  SET(CUBLASLT_ALGO_CONFIG_TILE_ID, c->tile_id);
  SET(CUBLASLT_ALGO_CONFIG_STAGES_ID, c->stages_id);
  SET(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, c->splitk);
  SET(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, c->reduction);
  SET(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, c->swizzle);
  SET(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, c->custom);
  SET(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, inner);
  SET(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster);
#undef SET
  return CUBLAS_STATUS_SUCCESS;
}

/* Build and check one configuration. Returns true when it runs within our workspace; otherwise
 * why says what rejected it. */
static bool config_check(const gt_cublas_api_t *api, cublasLtHandle_t h, const lt_descs_t *d,
                         const gt_cublaslt_config_t *c, cublasLtMatmulAlgo_t *algo, size_t *ws,
                         char *why, size_t cap) {
  cublasStatus_t s = algo_build(api, h, d, c, algo);
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(why, cap, "config rejected: %s", gt_cublas_status_name(s));
    return false;
  }
  cublasLtMatmulHeuristicResult_t r;
  memset(&r, 0, sizeof r);
  s = api->LtMatmulAlgoCheck(h, d->op, d->a, d->b, d->c, d->d, algo, &r);
  if (s != CUBLAS_STATUS_SUCCESS) {
    snprintf(why, cap, "AlgoCheck: %s", gt_cublas_status_name(s));
    return false;
  }
  if (r.workspaceSize > GT_LT_WS_BYTES) {
    snprintf(why, cap, "workspace %zu MiB > %zu MiB", (r.workspaceSize + (1u << 20) - 1) >> 20,
             GT_LT_WS_BYTES >> 20);
    return false;
  }
  *ws = r.workspaceSize;
  return true;
}

/* ---- name set (dedup of heuristic and enumerated configurations) ---------------------------- */

typedef struct name_set {
  uint64_t *v;
  size_t n, cap;
} name_set_t;

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
}

/* Insert; false when already present (or out of memory, which only costs a duplicate). */
static bool name_set_add(name_set_t *s, const char *name) {
  if ((s->n + 1) * 2 > s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    uint64_t *v = calloc(cap, sizeof *v);
    if (!v) return true;
    for (size_t i = 0; i < s->cap; i++) {
      if (!s->v[i]) continue;
      size_t j = s->v[i] & (cap - 1);
      while (v[j]) j = (j + 1) & (cap - 1);
      v[j] = s->v[i];
    }
    free(s->v);
    s->v = v, s->cap = cap;
  }
  uint64_t h = fnv1a(name);
  size_t j = h & (s->cap - 1);
  while (s->v[j]) {
    if (s->v[j] == h) return false;
    j = (j + 1) & (s->cap - 1);
  }
  s->v[j] = h;
  s->n++;
  return true;
}

/* ---- candidates ----------------------------------------------------------------------------- */

static void fill_candidate(gt_candidate_t *out, const char *name, const gt_cublaslt_config_t *c,
                           const cublasLtMatmulAlgo_t *algo, size_t ws) {
  memset(out, 0, sizeof *out);
  out->provider = &gt_provider_cublaslt;
  snprintf(out->name, sizeof out->name, "%s", name);
  out->splitk = c->splitk > 1;
  lt_blob_t b;
  memset(&b, 0, sizeof b);
  b.magic = GT_LT_MAGIC;
  b.ws_bytes = (uint32_t)ws;
  b.cfg = *c;
  b.algo = *algo;
  memcpy(out->blob, &b, sizeof b);
}

typedef struct enum_ctx {
  const gt_cublas_api_t *api;
  cublasLtHandle_t h;
  lt_descs_t *d;
  gt_cand_list_t *out;
  name_set_t seen;
  size_t examined;
  bool truncated;
} enum_ctx_t;

/* Check configuration c and append it (active, or excluded with the reason) unless a candidate
 * of that name is listed already. Returns GT_OK, or GT_ERR_NOMEM from the list. *ok says whether
 * the configuration passed, listed now or before. */
static gt_status_t add_config(enum_ctx_t *x, const gt_cublaslt_config_t *c, const char *prefix_why,
                              bool *ok) {
  char name[GT_NAME_MAX], why[GT_REASON_MAX];
  *ok = false;
  if (gt_cublaslt_name_format(c, name, sizeof name) != GT_OK) {
    snprintf(name, sizeof name, "cublaslt_a%d_unnamed_%zu", (int)c->algo_id, x->examined);
    return gt_cand_list_exclude(x->out, &gt_provider_cublaslt, name, "%s%s", prefix_why,
                                gt_err_msg());
  }
  cublasLtMatmulAlgo_t algo;
  size_t ws = 0;
  if (!name_set_add(&x->seen, name)) {
    /* Already listed (the heuristic found it first); the caller may still need its verdict. */
    *ok = config_check(x->api, x->h, x->d, c, &algo, &ws, why, sizeof why);
    return GT_OK;
  }
  x->examined++;
  if (!config_check(x->api, x->h, x->d, c, &algo, &ws, why, sizeof why))
    return gt_cand_list_exclude(x->out, &gt_provider_cublaslt, name, "%s%s", prefix_why, why);
  gt_candidate_t cand;
  fill_candidate(&cand, name, c, &algo, ws);
  *ok = true;
  return gt_cand_list_push(x->out, &cand);
}

static gt_status_t enum_heuristic(enum_ctx_t *x, int top) {
  const gt_cublas_api_t *api = x->api;
  cublasLtMatmulPreference_t pref = NULL;
  GT_CUBLAS_CHECK(api->LtMatmulPreferenceCreate(&pref));
  uint64_t ws = GT_LT_WS_BYTES;
  cublasStatus_t s = api->LtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t *res = calloc((size_t)top, sizeof *res);
  int returned = 0;
  if (s == CUBLAS_STATUS_SUCCESS && res)
    s = api->LtMatmulAlgoGetHeuristic(x->h, x->d->op, x->d->a, x->d->b, x->d->c, x->d->d, pref, top,
                                      res, &returned);
  api->LtMatmulPreferenceDestroy(pref);
  if (!res) return gt_err_set(GT_ERR_NOMEM, "cublaslt: out of host memory");
  gt_status_t st = GT_OK;
  if (s != CUBLAS_STATUS_SUCCESS) {
    /* No heuristic answer is a statement about the problem, not a failure of the provider. */
    st = gt_cand_list_exclude(x->out, &gt_provider_cublaslt, "cublaslt_heuristic",
                              "AlgoGetHeuristic: %s", gt_cublas_status_name(s));
    free(res);
    return st;
  }
  for (int i = 0; i < returned && st == GT_OK; i++) {
    if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
    gt_cublaslt_config_t c;
    if ((st = config_read(api, &res[i].algo, &c)) != GT_OK) break;
    bool ok;
    st = add_config(x, &c, "heuristic config does not rebuild: ", &ok);
  }
  free(res);
  return st;
}

/* ---- the application's own call: the heuristic's first algorithm -------------------------- */

/* The algorithm cuBLASLt's heuristic gives descriptors d under a workspace limit of ws_cap bytes,
 * asked as the application asks: one result, its workspace limit, the operands' alignment. */
static gt_status_t heuristic_pick(const gt_cublas_api_t *api, cublasLtHandle_t h,
                                  const lt_descs_t *d, uint64_t ws_cap, cublasLtMatmulAlgo_t *algo,
                                  size_t *ws) {
  cublasLtMatmulPreference_t pref = NULL;
  GT_CUBLAS_CHECK(api->LtMatmulPreferenceCreate(&pref));
  uint32_t align = GT_LT_APP_ALIGN;
  const cublasLtMatmulPreferenceAttributes_t aligns[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cublasStatus_t s = api->LtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_cap, sizeof ws_cap);
  for (size_t i = 0; s == CUBLAS_STATUS_SUCCESS && i < sizeof aligns / sizeof aligns[0]; i++)
    s = api->LtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align);
  cublasLtMatmulHeuristicResult_t r;
  memset(&r, 0, sizeof r);
  int returned = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = api->LtMatmulAlgoGetHeuristic(h, d->op, d->a, d->b, d->c, d->d, pref, 1, &r, &returned);
  api->LtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS)
    return gt_err_set(GT_ERR_UNSUPPORTED, "AlgoGetHeuristic: %s", gt_cublas_status_name(s));
  if (returned < 1 || r.state != CUBLAS_STATUS_SUCCESS)
    return gt_err_set(GT_ERR_UNSUPPORTED,
                      "the heuristic has no algorithm for this problem within %llu bytes of "
                      "workspace",
                      (unsigned long long)ws_cap);
  *algo = r.algo;
  *ws = r.workspaceSize;
  return GT_OK;
}

/* The heuristic call's candidate for a workspace limit: named by the limit, since the algorithm
 * is the library's choice at the time of the call. */
static void fill_heuristic(gt_candidate_t *out, uint64_t ws_cap, const cublasLtMatmulAlgo_t *algo,
                           size_t ws) {
  memset(out, 0, sizeof *out);
  out->provider = &gt_provider_cublaslt;
  snprintf(out->name, sizeof out->name, GT_LT_HEUR_PREFIX "%llu", (unsigned long long)ws_cap);
  out->is_baseline = true;
  lt_blob_t b;
  memset(&b, 0, sizeof b);
  b.magic = GT_LT_HEUR_MAGIC;
  b.ws_bytes = (uint32_t)ws;
  b.heur_ws_cap = ws_cap;
  b.algo = *algo;
  memcpy(out->blob, &b, sizeof b);
}

/* Whether name is a heuristic-call candidate; *ws_cap its workspace limit. */
static bool parse_heuristic(const char *name, uint64_t *ws_cap) {
  const size_t n = sizeof GT_LT_HEUR_PREFIX - 1;
  if (strncmp(name, GT_LT_HEUR_PREFIX, n) != 0) return false;
  const char *v = name + n;
  if (*v < '1' || *v > '9') return false; /* canonical: no sign, no leading zero */
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || x > ((uint64_t)1 << 40)) return false;
  *ws_cap = x;
  return true;
}

/* cuBLASLt stands for today's path of cublasLtMatmul calls, and of keys with an epilogue whose
 * entry point is not stated (no other entry point has one). */
static bool lt_baseline_for(gt_entry_t e, const gt_problem_t *p) {
  const bool lt_only = p && (p->epilogue != GT_EPI_NONE || gt_dtype_is_fp8(p->a_type) ||
                             gt_dtype_is_fp8(p->b_type)); /* fp8 is cuBLASLt's alone too */
  return e == GT_ENTRY_LTMATMUL || (e == GT_ENTRY_DEFAULT && lt_only);
}

static gt_status_t enum_baseline(enum_ctx_t *x, const gt_enum_opts_t *o) {
  uint64_t cap = o->workspace ? o->workspace : GT_LT_APP_WS_DEFAULT;
  char name[GT_NAME_MAX];
  snprintf(name, sizeof name, GT_LT_HEUR_PREFIX "%llu", (unsigned long long)cap);
  cublasLtMatmulAlgo_t algo;
  size_t ws = 0;
  if (heuristic_pick(x->api, x->h, x->d, cap, &algo, &ws) != GT_OK)
    return gt_cand_list_exclude(x->out, &gt_provider_cublaslt, name, "%s", gt_err_msg());
  gt_candidate_t c;
  fill_heuristic(&c, cap, &algo, ws);
  return gt_cand_list_push(x->out, &c);
}

static bool arch_has_clusters(const char *arch) {
  int v = 0;
  return sscanf(arch, "sm_%d", &v) == 1 && v >= 90;
}

/* Read an array capability (tile or stages ids). An empty answer means the algorithm takes the
 * attribute's UNDEFINED value only. */
static int cap_ids(const gt_cublas_api_t *api, const cublasLtMatmulAlgo_t *algo,
                   cublasLtMatmulAlgoCapAttributes_t attr, uint32_t **ids) {
  size_t bytes = 0;
  *ids = NULL;
  if (api->LtMatmulAlgoCapGetAttribute(algo, attr, NULL, 0, &bytes) != CUBLAS_STATUS_SUCCESS ||
      bytes < sizeof(uint32_t)) {
    *ids = calloc(1, sizeof **ids);
    return *ids ? 1 : -1;
  }
  *ids = calloc(bytes / sizeof(uint32_t), sizeof **ids);
  if (!*ids) return -1;
  size_t w = 0;
  if (api->LtMatmulAlgoCapGetAttribute(algo, attr, *ids, bytes, &w) != CUBLAS_STATUS_SUCCESS ||
      w < sizeof(uint32_t))
    return 1; /* (*ids)[0] == 0: UNDEFINED */
  return (int)(w / sizeof(uint32_t));
}

static int32_t cap_i32(const gt_cublas_api_t *api, const cublasLtMatmulAlgo_t *algo,
                       cublasLtMatmulAlgoCapAttributes_t attr) {
  int32_t v = 0;
  size_t w;
  if (api->LtMatmulAlgoCapGetAttribute(algo, attr, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS)
    return 0;
  return v;
}

/* Split-K counts tried when an algorithm supports split-K. */
static const int32_t k_splitk[] = {1, 2, 3, 4, 6, 8, 16};
/* Explicit cluster shapes tried (besides AUTO) on cluster-capable GPUs: the shapes Hopper's
 * kernels use; larger ones leave SMs idle on 132-SM parts. */
static const uint32_t k_clusters_tried[] = {
    CUBLASLT_CLUSTER_SHAPE_1x1x1, CUBLASLT_CLUSTER_SHAPE_2x1x1, CUBLASLT_CLUSTER_SHAPE_1x2x1,
    CUBLASLT_CLUSTER_SHAPE_2x2x1, CUBLASLT_CLUSTER_SHAPE_4x1x1, CUBLASLT_CLUSTER_SHAPE_1x4x1,
};

static gt_status_t enum_algo(enum_ctx_t *x, const gt_problem_t *p, int id) {
  const gt_cublas_api_t *api = x->api;
  const lt_descs_t *d = x->d;
  gt_cublaslt_config_t c;
  memset(&c, 0, sizeof c);
  c.algo_id = id;
  c.splitk = 1;
  char name[GT_NAME_MAX];

  cublasLtMatmulAlgo_t algo;
  cublasStatus_t s = api->LtMatmulAlgoInit(x->h, d->compute, d->scale, d->at, d->bt, d->ct, d->dt,
                                           id, &algo);
  if (s != CUBLAS_STATUS_SUCCESS) {
    gt_cublaslt_name_format(&c, name, sizeof name);
    return gt_cand_list_exclude(x->out, &gt_provider_cublaslt, name, "AlgoInit: %s",
                                gt_cublas_status_name(s));
  }
  /* Whole-algorithm rules, one line each. */
  if (p->batch > 1 && !cap_i32(api, &algo, CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT)) {
    gt_cublaslt_name_format(&c, name, sizeof name);
    return gt_cand_list_exclude(x->out, &gt_provider_cublaslt, name,
                                "algo %d has no strided batch", id);
  }
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  lt_epilogue(p->epilogue, &epi);
  if (epi != CUBLASLT_EPILOGUE_DEFAULT &&
      (cap_i32(api, &algo, CUBLASLT_ALGO_CAP_EPILOGUE_MASK) & (int32_t)epi) != (int32_t)epi) {
    gt_cublaslt_name_format(&c, name, sizeof name);
    return gt_cand_list_exclude(x->out, &gt_provider_cublaslt, name, "algo %d has no %s epilogue",
                                id, gt_epilogue_name(p->epilogue));
  }

  uint32_t *tiles = NULL, *stages = NULL;
  int ntiles = cap_ids(api, &algo, CUBLASLT_ALGO_CAP_TILE_IDS, &tiles);
  int nstages = cap_ids(api, &algo, CUBLASLT_ALGO_CAP_STAGES_IDS, &stages);
  if (ntiles < 0 || nstages < 0) {
    free(tiles), free(stages);
    return gt_err_set(GT_ERR_NOMEM, "cublaslt: out of host memory");
  }
  bool splitk_ok = cap_i32(api, &algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT) != 0;
  uint32_t red_mask = (uint32_t)cap_i32(api, &algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK) &
                      CUBLASLT_REDUCTION_SCHEME_MASK;
  int nswizzle = cap_i32(api, &algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT) ? 2 : 1;
  int32_t custom_max = cap_i32(api, &algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX);
  if (custom_max < 0) custom_max = 0;

  /* Cluster shapes: cuBLASLt reports no capability for them, so probe once per algorithm with
   * an explicit 1x1x1 on its first accepted base configuration; algorithms that refuse it are
   * enumerated with AUTO only (and one line says so). */
  bool clusters_probe = arch_has_clusters(p->arch);
  bool clusters_ok = false, probed = false;

  gt_status_t st = GT_OK;
  for (int ti = 0; ti < ntiles && st == GT_OK; ti++) {
    for (int si = 0; si < nstages && st == GT_OK; si++) {
      if (x->examined >= GT_LT_MAX_CONFIGS) {
        x->truncated = true;
        goto done;
      }
      gt_cublaslt_config_t base = c;
      base.tile_id = tiles[ti];
      base.stages_id = stages[si];
      bool ok;
      /* Rule: a tile/stages pair the library rejects at its plainest (no split-K, no swizzle,
       * option 0, cluster AUTO) is not expanded further. */
      if ((st = add_config(x, &base, "", &ok)) != GT_OK || !ok) continue;

      if (clusters_probe && !probed) {
        probed = true;
        gt_cublaslt_config_t pc = base;
        pc.cluster_id = CUBLASLT_CLUSTER_SHAPE_1x1x1;
        cublasLtMatmulAlgo_t a2;
        size_t ws;
        char why[GT_REASON_MAX];
        clusters_ok = config_check(api, x->h, d, &pc, &a2, &ws, why, sizeof why);
        if (!clusters_ok && gt_cublaslt_name_format(&pc, name, sizeof name) == GT_OK &&
            name_set_add(&x->seen, name))
          st = gt_cand_list_exclude(x->out, &gt_provider_cublaslt, name,
                                    "algo %d takes no explicit cluster shape (%s); AUTO only", id,
                                    why);
      }
      int nclusters = 1 + (clusters_ok ? (int)(sizeof k_clusters_tried / sizeof k_clusters_tried[0]) : 0);
      for (int ci = 0; ci < nclusters && st == GT_OK; ci++) {
        for (size_t ki = 0; ki < sizeof k_splitk / sizeof k_splitk[0] && st == GT_OK; ki++) {
          int32_t sk = k_splitk[ki];
          if (sk > 1 && (!splitk_ok || sk > p->k)) break;
          /* Reduction schemes only mean something when K is split; try each one supported. */
          uint32_t reds[3];
          int nred = 0;
          if (sk == 1) {
            reds[nred++] = CUBLASLT_REDUCTION_SCHEME_NONE;
          } else {
            static const uint32_t k_reds[] = {CUBLASLT_REDUCTION_SCHEME_INPLACE,
                                              CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
                                              CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
            for (int r = 0; r < 3; r++)
              if (red_mask & k_reds[r]) reds[nred++] = k_reds[r];
          }
          for (int ri = 0; ri < nred && st == GT_OK; ri++) {
            for (int sw = 0; sw < nswizzle && st == GT_OK; sw++) {
              for (int32_t co = 0; co <= custom_max && st == GT_OK; co++) {
                if (x->examined >= GT_LT_MAX_CONFIGS) {
                  x->truncated = true;
                  goto done;
                }
                gt_cublaslt_config_t cc = base;
                cc.cluster_id = ci == 0 ? 0 : k_clusters_tried[ci - 1];
                cc.splitk = sk;
                cc.reduction = reds[ri];
                cc.swizzle = (uint32_t)sw;
                cc.custom = (uint32_t)co;
                if (ci == 0 && sk == 1 && sw == 0 && co == 0) continue; /* the base, listed above */
                st = add_config(x, &cc, "", &ok);
              }
            }
          }
        }
      }
    }
  }
done:
  free(tiles);
  free(stages);
  return st;
}

static gt_status_t enum_exhaustive(enum_ctx_t *x, const gt_problem_t *p) {
  const gt_cublas_api_t *api = x->api;
  const lt_descs_t *d = x->d;
  int *ids = calloc(GT_LT_MAX_ALGO_IDS, sizeof *ids);
  if (!ids) return gt_err_set(GT_ERR_NOMEM, "cublaslt: out of host memory");
  int nids = 0;
  cublasStatus_t s = api->LtMatmulAlgoGetIds(x->h, d->compute, d->scale, d->at, d->bt, d->ct,
                                             d->dt, GT_LT_MAX_ALGO_IDS, ids, &nids);
  gt_status_t st = GT_OK;
  if (s != CUBLAS_STATUS_SUCCESS) {
    st = gt_cand_list_exclude(x->out, &gt_provider_cublaslt, "cublaslt_algo_ids",
                              "AlgoGetIds: %s", gt_cublas_status_name(s));
  }
  for (int i = 0; i < nids && st == GT_OK && !x->truncated; i++) st = enum_algo(x, p, ids[i]);
  free(ids);
  if (st == GT_OK && x->truncated)
    st = gt_cand_list_exclude(x->out, &gt_provider_cublaslt, "cublaslt_enumeration_truncated",
                              "enumeration stopped after %d configurations (GT_LT_MAX_CONFIGS)",
                              GT_LT_MAX_CONFIGS);
  return st;
}

/* ---- provider entry points ------------------------------------------------------------------ */

static gt_status_t lt_init(void) {
  const gt_cublas_api_t *api;
  gt_status_t st = gt_cudalib_load_lt(&api);
  if (st != GT_OK) return st;
  if ((st = gt_cuda_device_count(NULL)) != GT_OK) return st;
  return GT_OK;
}

static char g_version[48] = "cublaslt=?";
static pthread_once_t g_version_once = PTHREAD_ONCE_INIT;

static void version_once(void) {
  const gt_cublas_api_t *api;
  if (gt_cudalib_load_lt(&api) == GT_OK)
    snprintf(g_version, sizeof g_version, "cublaslt=%zu", api->LtGetVersion());
}

static const char *lt_lib_version(void) {
  pthread_once(&g_version_once, version_once);
  return g_version;
}

/* Make device `dev` current for the duration of an enumeration; *prev receives the old one. */
static gt_status_t enter_device(int dev, int *prev) {
  GT_CUDA_CHECK(cudaGetDevice(prev));
  if (dev != *prev) GT_CUDA_CHECK(cudaSetDevice(dev));
  return GT_OK;
}

static gt_status_t lt_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o, gt_cand_list_t *out) {
  char why[GT_REASON_MAX];
  if (!applicable(p, why, sizeof why))
    return gt_cand_list_exclude(out, &gt_provider_cublaslt, "cublaslt", "%s", why);
  const gt_cublas_api_t *api;
  gt_status_t st = gt_cudalib_load_lt(&api);
  if (st != GT_OK) return st;
  int prev = 0;
  if ((st = enter_device(o ? o->device : 0, &prev)) != GT_OK) return st;

  lt_descs_t d;
  memset(&d, 0, sizeof d);
  enum_ctx_t x;
  memset(&x, 0, sizeof x);
  x.api = api, x.d = &d, x.out = out;
  if ((st = lt_handle(api, &x.h)) == GT_OK) {
    if ((st = descs_build(api, p, &d)) != GT_OK) {
      /* A type combination cuBLASLt has no descriptor for is an exclusion, not an error. */
      st = st == GT_ERR_UNSUPPORTED || st == GT_ERR_LIBRARY
               ? gt_cand_list_exclude(out, &gt_provider_cublaslt, "cublaslt", "%s", gt_err_msg())
               : st;
    } else {
      int top = o && o->max_candidates > 0 ? o->max_candidates : GT_LT_DEFAULT_TOP;
      if (o && lt_baseline_for(o->entry, p)) st = enum_baseline(&x, o);
      if (st == GT_OK) st = enum_heuristic(&x, top);
      const size_t first_full = out->n;
      if (st == GT_OK && o && o->exhaustive) st = enum_exhaustive(&x, p);
      /* The full space comes in nested-loop order (algo, tile, stages, ...): spread it, so a
       * search widening into it step by step samples every algorithm from the first step. */
      if (st == GT_OK && o && o->exhaustive) st = gt_cand_list_spread(out, first_full);
    }
  }
  descs_destroy(api, &d);
  free(x.seen.v);
  if (prev != (o ? o->device : 0)) cudaSetDevice(prev);
  return st;
}

static gt_status_t heuristic_from_name(const char *name, uint64_t cap, const gt_problem_t *p,
                                       gt_candidate_t *out) {
  char why[GT_REASON_MAX];
  if (!applicable(p, why, sizeof why)) return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
  const gt_cublas_api_t *api;
  gt_status_t st = gt_cudalib_load_lt(&api);
  cublasLtHandle_t h;
  if (st == GT_OK) st = lt_handle(api, &h);
  if (st != GT_OK) return st;
  lt_descs_t d;
  memset(&d, 0, sizeof d);
  cublasLtMatmulAlgo_t algo;
  size_t ws = 0;
  if ((st = descs_build(api, p, &d)) == GT_OK && (st = heuristic_pick(api, h, &d, cap, &algo, &ws)) == GT_OK)
    fill_heuristic(out, cap, &algo, ws);
  descs_destroy(api, &d);
  return st;
}

static gt_status_t lt_from_name(const char *name, const gt_problem_t *p, gt_candidate_t *out) {
  uint64_t cap;
  if (parse_heuristic(name, &cap)) return heuristic_from_name(name, cap, p, out);
  if (strncmp(name, GT_LT_HEUR_PREFIX, sizeof GT_LT_HEUR_PREFIX - 1) == 0)
    return gt_err_set(GT_ERR_DATA,
                      "cuBLASLt name '%s': the heuristic call is spelled " GT_LT_HEUR_PREFIX
                      "<bytes>, a byte count from 1 to 2^40 without leading zeros",
                      name);
  gt_cublaslt_config_t c;
  gt_status_t st = gt_cublaslt_name_parse(name, &c);
  if (st != GT_OK) return st;
  char why[GT_REASON_MAX];
  if (!applicable(p, why, sizeof why)) return gt_err_set(GT_ERR_UNSUPPORTED, "%s: %s", name, why);
  const gt_cublas_api_t *api;
  if ((st = gt_cudalib_load_lt(&api)) != GT_OK) return st;
  cublasLtHandle_t h;
  if ((st = lt_handle(api, &h)) != GT_OK) return st;
  lt_descs_t d;
  memset(&d, 0, sizeof d);
  if ((st = descs_build(api, p, &d)) == GT_OK) {
    cublasLtMatmulAlgo_t algo;
    size_t ws = 0;
    if (config_check(api, h, &d, &c, &algo, &ws, why, sizeof why))
      fill_candidate(out, name, &c, &algo, ws);
    else
      st = gt_err_set(GT_ERR_UNSUPPORTED, "%s does not apply to this problem: %s", name, why);
  }
  descs_destroy(api, &d);
  return st;
}

static gt_status_t lt_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                              size_t *ws_needed) {
  lt_blob_t b;
  memcpy(&b, c->blob, sizeof b);
  if (b.magic != GT_LT_MAGIC && b.magic != GT_LT_HEUR_MAGIC)
    return gt_err_set(GT_ERR_INTERNAL, "%s: not a cuBLASLt candidate blob", c->name);
  const gt_cublas_api_t *api;
  gt_status_t st = gt_cudalib_load_lt(&api);
  if (st != GT_OK) return st;
  lt_state_t *s = calloc(1, sizeof *s);
  if (!s) return gt_err_set(GT_ERR_NOMEM, "cublaslt: out of host memory");
  s->api = api;
  s->algo = b.algo;
  s->has_bias = has_bias(p->epilogue);
  for (int i = 0; i < 4; i++) {
    s->has_scale[i] = key_has_scale(p, i);
    s->scale_set[i] = k_scale_placeholder;
  }
  if ((st = lt_handle(api, &s->handle)) != GT_OK || (st = descs_build(api, p, &s->descs)) != GT_OK) {
    descs_destroy(api, &s->descs);
    free(s);
    return st;
  }
  if (b.magic == GT_LT_HEUR_MAGIC) {
    /* The application's call: ask the heuristic again for this problem, as every call does. */
    st = heuristic_pick(api, s->handle, &s->descs, b.heur_ws_cap, &s->algo, &s->ws_needed);
    if (st != GT_OK) {
      char why[GT_REASON_MAX];
      snprintf(why, sizeof why, "%s", gt_err_msg());
      descs_destroy(api, &s->descs);
      free(s);
      return gt_err_set(st, "%s: %s", c->name, why);
    }
    *state = s;
    *ws_needed = s->ws_needed;
    return GT_OK;
  }
  /* Re-check against this problem (the candidate may come from a DB row): the workspace it needs
   * here is what the harness allocates. */
  cublasLtMatmulHeuristicResult_t r;
  memset(&r, 0, sizeof r);
  cublasStatus_t cs = api->LtMatmulAlgoCheck(s->handle, s->descs.op, s->descs.a, s->descs.b,
                                             s->descs.c, s->descs.d, &s->algo, &r);
  if (cs != CUBLAS_STATUS_SUCCESS) {
    descs_destroy(api, &s->descs);
    free(s);
    return gt_err_set(GT_ERR_UNSUPPORTED, "%s: AlgoCheck: %s", c->name, gt_cublas_status_name(cs));
  }
  s->ws_needed = r.workspaceSize;
  *state = s;
  *ws_needed = s->ws_needed;
  return GT_OK;
}

static gt_status_t lt_run(void *state, const gt_operands_t *ops, void *stream) {
  lt_state_t *s = state;
  const gt_cublas_api_t *api = s->api;
  if (ops->ws_size < s->ws_needed || (s->ws_needed && !ops->workspace))
    return gt_err_set(GT_ERR_USAGE, "cublaslt: workspace of %zu bytes given, %zu needed",
                      ops->ws_size, s->ws_needed);
  if (s->has_bias && ops->bias != s->bias_set) {
    GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(s->descs.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                  &ops->bias, sizeof ops->bias));
    s->bias_set = ops->bias;
  }
  const void *const want[4] = {ops->scale_a, ops->scale_b, ops->scale_d, ops->amax_d};
  for (int i = 0; i < 4; i++) {
    if (!s->has_scale[i]) continue;
    if (!want[i])
      return gt_err_set(GT_ERR_USAGE, "cublaslt: the key's fp8 %s pointer is not given",
                        i == 0 ? "A scale" : i == 1 ? "B scale" : i == 2 ? "D scale" : "amax");
    if (want[i] != s->scale_set[i]) {
      GT_CUBLAS_CHECK(api->LtMatmulDescSetAttribute(s->descs.op, k_scale_attr[i], &want[i],
                                                    sizeof want[i]));
      s->scale_set[i] = want[i];
    }
  }
  const void *C = ops->C ? ops->C : ops->D;
  /* cuBLASLt refuses C == D, and a NULL C, when C's type is not D's (an fp8 D takes a 16-bit C):
   * with beta 0 C is never read, and another device pointer stands for it (PyTorch's scaled_gemm
   * passes A's: "cublasLtMatmul requires a C pointer that is not result_ptr or nullptr"). */
  if (C == ops->D && s->descs.ct != s->descs.dt) C = ops->A;
  GT_CUBLAS_CHECK(api->LtMatmul(s->handle, s->descs.op, ops->alpha, ops->A, s->descs.a, ops->B,
                                s->descs.b, ops->beta, C, s->descs.c, ops->D, s->descs.d, &s->algo,
                                s->ws_needed ? ops->workspace : NULL,
                                s->ws_needed ? ops->ws_size : 0, (cudaStream_t)stream));
  return GT_OK;
}

/* from_name and prepare build descriptors and layouts, check a configuration (AlgoCheck) or ask
 * the heuristic: host work that frameworks do on every cuBLASLt call inside captured graphs. Not
 * so the handle's creation (cublasLtCreate), which nothing documents as capture-safe: only a
 * thread that already has its handle for the current device may prepare under capture. */
static bool lt_capture_safe(void) {
  int dev = -1;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return dev >= 0 && dev < GT_LT_MAX_DEVICES && t_handles[dev] != NULL;
}

static void lt_release(void *state) {
  lt_state_t *s = state;
  if (!s) return;
  descs_destroy(s->api, &s->descs);
  free(s);
}

const gt_provider_t gt_provider_cublaslt = {
    .api_version = GT_PROVIDER_API_VERSION,
    .name = "cublaslt",
    .description = "cuBLASLt configurations: heuristic top-N, or the full space with --exhaustive",
    .backend = GT_BACKEND_CUDA,
    .init = lt_init,
    .baseline_for = lt_baseline_for,
    .lib_version = lt_lib_version,
    .enumerate = lt_enumerate,
    .from_name = lt_from_name,
    .prepare = lt_prepare,
    .run = lt_run,
    .release = lt_release,
    .row_kernels = gt_cublas_row_kernels,
    .owns_kernel = gt_cublas_owns_kernel,
    .same_kernel = gt_cublas_same_kernel,
    .capture_safe = lt_capture_safe,
};
