/* The fp64 reference GEMM and the "reference" provider that lists it (see gt_reference.h).
 *
 * Speed matters only enough that gating a large CPU problem does not dominate a run: operands are
 * widened once to fp64 panels (op(A) row-major, op(B) column-major, so every dot product reads two
 * contiguous vectors), the dot products are blocked 4x4 over K chunks, and columns are split
 * across threads. Accumulation is fp64 throughout, so the reference's own error (~2^-53 sqrt(k))
 * is negligible against every bound the gate applies. */
#include "gt_reference.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/gt_dtype.h"

#define REF_KC 256 /* K chunk: 4 rows + 4 columns of it stay in L1 */
#define REF_MAX_THREADS 32

gt_dtype_t gt_reference_bias_type(const gt_problem_t *p) {
  if (p->d_type == GT_DT_F8E4M3FN || p->d_type == GT_DT_F8E5M2) return GT_DT_BF16;
  return p->d_type;
}

double gt_reference_gelu(double x) {
  const double c = 0.7978845608028654; /* sqrt(2/pi) */
  return 0.5 * x * (1.0 + tanh(c * (x + 0.044715 * x * x * x)));
}

typedef struct ref_job {
  const double *Ar; /* op(A), m x k, row-major: Ar[i*k + p] */
  const double *Bc; /* op(B), k x n, column-major: Bc[j*k + p] */
  double *acc;      /* m x n column-major sums, zeroed */
  int64_t m, k, j0, j1;
} ref_job_t;

/* acc[:, j0:j1] += Ar * Bc over all of K, in K chunks. */
static void *ref_dots(void *arg) {
  const ref_job_t *jb = arg;
  const int64_t m = jb->m, k = jb->k;
  for (int64_t p0 = 0; p0 < k; p0 += REF_KC) {
    const int64_t kc = k - p0 < REF_KC ? k - p0 : REF_KC;
    int64_t j = jb->j0;
    for (; j + 4 <= jb->j1; j += 4) {
      const double *b0 = jb->Bc + j * k + p0, *b1 = b0 + k, *b2 = b1 + k, *b3 = b2 + k;
      int64_t i = 0;
      for (; i + 4 <= m; i += 4) {
        const double *a0 = jb->Ar + i * k + p0, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
        double s[4][4] = {{0}};
        for (int64_t q = 0; q < kc; q++) {
          const double x0 = a0[q], x1 = a1[q], x2 = a2[q], x3 = a3[q];
          const double y0 = b0[q], y1 = b1[q], y2 = b2[q], y3 = b3[q];
          s[0][0] += x0 * y0, s[1][0] += x1 * y0, s[2][0] += x2 * y0, s[3][0] += x3 * y0;
          s[0][1] += x0 * y1, s[1][1] += x1 * y1, s[2][1] += x2 * y1, s[3][1] += x3 * y1;
          s[0][2] += x0 * y2, s[1][2] += x1 * y2, s[2][2] += x2 * y2, s[3][2] += x3 * y2;
          s[0][3] += x0 * y3, s[1][3] += x1 * y3, s[2][3] += x2 * y3, s[3][3] += x3 * y3;
        }
        for (int c = 0; c < 4; c++)
          for (int r = 0; r < 4; r++) jb->acc[(j + c) * m + i + r] += s[r][c];
      }
      for (; i < m; i++) {
        const double *a = jb->Ar + i * k + p0;
        for (int c = 0; c < 4; c++) {
          const double *b = jb->Bc + (j + c) * k + p0;
          double s = 0;
          for (int64_t q = 0; q < kc; q++) s += a[q] * b[q];
          jb->acc[(j + c) * m + i] += s;
        }
      }
    }
    for (; j < jb->j1; j++) {
      const double *b = jb->Bc + j * k + p0;
      for (int64_t i = 0; i < m; i++) {
        const double *a = jb->Ar + i * k + p0;
        double s = 0;
        for (int64_t q = 0; q < kc; q++) s += a[q] * b[q];
        jb->acc[j * m + i] += s;
      }
    }
  }
  return NULL;
}

static int ref_threads(const gt_problem_t *p) {
  /* Thread start-up costs tens of microseconds; below ~4 MFLOP one thread is faster. */
  if ((double)p->m * (double)p->n * (double)p->k < 4e6 || p->n < 8) return 1;
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  int t = c > 0 ? (int)c : 1;
  if (t > REF_MAX_THREADS) t = REF_MAX_THREADS;
  if (t > p->n / 4) t = (int)(p->n / 4) > 0 ? (int)(p->n / 4) : 1;
  return t;
}

static double epilogue_apply(const gt_problem_t *p, double v, double bias) {
  switch (p->epilogue) {
    case GT_EPI_BIAS: return v + bias;
    case GT_EPI_RELU: return v > 0 ? v : 0;
    case GT_EPI_BIAS_RELU: v += bias; return v > 0 ? v : 0;
    case GT_EPI_GELU: return gt_reference_gelu(v);
    case GT_EPI_BIAS_GELU: return gt_reference_gelu(v + bias);
    default: return v;
  }
}

static bool epi_has_bias(gt_epilogue_t e) {
  return e == GT_EPI_BIAS || e == GT_EPI_BIAS_RELU || e == GT_EPI_BIAS_GELU;
}

/* What storing v into type t keeps, for the types whose conversion is not a plain rounding. */
static double store_clamp(gt_dtype_t t, double v) {
  if (!isfinite(v)) return v;
  switch (t) {
    case GT_DT_I8:
    case GT_DT_I32: {
      double lo = t == GT_DT_I8 ? -128.0 : -2147483648.0;
      double hi = t == GT_DT_I8 ? 127.0 : 2147483647.0;
      v = nearbyint(v);
      return v < lo ? lo : v > hi ? hi : v;
    }
    case GT_DT_F8E4M3FN: return v > 448.0 ? 448.0 : v < -448.0 ? -448.0 : v;
    case GT_DT_F8E5M2: return v > 57344.0 ? 57344.0 : v < -57344.0 ? -57344.0 : v;
    default: return v;
  }
}

gt_status_t gt_reference_gemm(const gt_problem_t *p, const gt_operands_t *ops, double *ref_out) {
  if (!ops || !ops->A || !ops->B || !ops->alpha || !ref_out)
    return gt_err_set(GT_ERR_USAGE, "reference: missing operand");
  if (!p->beta_zero && (!ops->C || !ops->beta))
    return gt_err_set(GT_ERR_USAGE, "reference: beta != 0 but no C or beta given");
  if (epi_has_bias(p->epilogue) && !ops->bias)
    return gt_err_set(GT_ERR_USAGE, "reference: epilogue %s needs a bias vector",
                      gt_epilogue_name(p->epilogue));
  const int64_t m = p->m, n = p->n, k = p->k, nb = p->batch > 0 ? p->batch : 1;
  if (m <= 0 || n <= 0 || k <= 0) return gt_err_set(GT_ERR_USAGE, "reference: empty problem");
  if ((p->scale_a != GT_SCALE_NONE && !ops->scale_a) ||
      (p->scale_b != GT_SCALE_NONE && !ops->scale_b) || (p->scale_d && !ops->scale_d))
    return gt_err_set(GT_ERR_USAGE, "reference: the key's fp8 scaling needs its scale arrays");
  const double alpha = gt_load_elem(ops->alpha, p->scale_type, 0);
  const double beta = p->beta_zero ? 0.0 : gt_load_elem(ops->beta, p->scale_type, 0);
  const gt_dtype_t bias_t = gt_reference_bias_type(p);

  double *Ar = malloc((size_t)m * (size_t)k * sizeof(double));
  double *Bc = malloc((size_t)k * (size_t)n * sizeof(double));
  double *acc = malloc((size_t)m * (size_t)n * sizeof(double));
  if (!Ar || !Bc || !acc) {
    free(Ar), free(Bc), free(acc);
    return gt_err_set(GT_ERR_NOMEM, "reference: cannot allocate %.1f MB of fp64 panels",
                      (double)(m * k + k * n + m * n) * 8 / 1e6);
  }
  const int nt = ref_threads(p);
  for (int64_t b = 0; b < nb; b++) {
    const size_t oa = (size_t)(b * p->stride_a), ob = (size_t)(b * p->stride_b);
    for (int64_t i = 0; i < m; i++)
      for (int64_t q = 0; q < k; q++) {
        size_t idx = p->transa == GT_TRANS_N ? (size_t)(i + q * p->lda) : (size_t)(q + i * p->lda);
        Ar[i * k + q] = gt_load_elem(ops->A, p->a_type, oa + idx);
        /* Dequantized: each element times the factor covering it (every mode factors so). */
        if (p->scale_a != GT_SCALE_NONE)
          Ar[i * k + q] *= ops->scale_a[gt_scale_mode_index(p->scale_a, 'A', m, n, k, i, q)];
      }
    for (int64_t j = 0; j < n; j++)
      for (int64_t q = 0; q < k; q++) {
        size_t idx = p->transb == GT_TRANS_N ? (size_t)(q + j * p->ldb) : (size_t)(j + q * p->ldb);
        Bc[j * k + q] = gt_load_elem(ops->B, p->b_type, ob + idx);
        if (p->scale_b != GT_SCALE_NONE)
          Bc[j * k + q] *= ops->scale_b[gt_scale_mode_index(p->scale_b, 'B', m, n, k, j, q)];
      }
    memset(acc, 0, (size_t)m * (size_t)n * sizeof(double));

    ref_job_t jobs[REF_MAX_THREADS];
    pthread_t tid[REF_MAX_THREADS];
    unsigned started = 0;
    int64_t per = ((n + nt - 1) / nt + 3) / 4 * 4; /* multiples of 4 keep the 4x4 blocks whole */
    for (int t = 0; t < nt; t++) {
      int64_t j0 = t * per, j1 = j0 + per < n ? j0 + per : n;
      jobs[t] = (ref_job_t){Ar, Bc, acc, m, k, j0 < n ? j0 : n, j1};
    }
    for (int t = 1; t < nt; t++)
      if (pthread_create(&tid[t], NULL, ref_dots, &jobs[t]) == 0)
        started |= 1u << t;
      else
        ref_dots(&jobs[t]); /* no thread: do the share here */
    ref_dots(&jobs[0]);
    for (int t = 1; t < nt; t++)
      if (started & (1u << t)) pthread_join(tid[t], NULL);

    double *out = ref_out + (size_t)b * (size_t)m * (size_t)n;
    const size_t oc = (size_t)(b * p->stride_c);
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        double v = alpha * acc[j * m + i];
        if (!p->beta_zero) v += beta * gt_load_elem(ops->C, p->c_type, oc + (size_t)(i + j * p->ldc));
        double bias = epi_has_bias(p->epilogue) ? gt_load_elem(ops->bias, bias_t, (size_t)i) : 0.0;
        /* An fp8 D is scaled after the epilogue (cuBLASLt: D = scale_d * epilogue(...)). */
        double e = epilogue_apply(p, v, bias);
        if (p->scale_d) e *= (double)ops->scale_d[0];
        out[j * m + i] = store_clamp(p->d_type, e);
      }
  }
  free(Ar), free(Bc), free(acc);
  return GT_OK;
}

/* ---- the provider ---------------------------------------------------------------------------
 * Listed so `gemmtune list` shows where the gate's answers come from; excluded because fp64
 * accumulation on a CPU is never a candidate for a tuned row. It still runs when asked by name
 * (prepare/run), writing the reference rounded to the output type. */

#define REF_NAME "reference_f64"
#define REF_REASON "gate reference: fp64 accumulation, never raced"

static gt_status_t ref_enumerate(const gt_problem_t *p, const gt_enum_opts_t *o,
                                 gt_cand_list_t *out) {
  return gt_cand_list_exclude(out, &gt_provider_reference, REF_NAME, "%s", REF_REASON);
}

static gt_status_t ref_from_name(const char *name, const gt_problem_t *p, gt_candidate_t *out) {
  if (strcmp(name, REF_NAME) != 0)
    return gt_err_set(GT_ERR_NOT_FOUND, "'%s' is not a reference instance", name);
  memset(out, 0, sizeof *out);
  out->provider = &gt_provider_reference;
  strcpy(out->name, REF_NAME);
  out->excluded = true;
  strcpy(out->reason, REF_REASON);
  return GT_OK;
}

typedef struct ref_state {
  gt_problem_t p;
  double *out;
} ref_state_t;

static gt_status_t ref_prepare(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                               size_t *ws_needed) {
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return gt_err_set(GT_ERR_NOMEM, "reference: no memory for state");
  s->p = *p;
  s->out = malloc((size_t)p->m * (size_t)p->n * (size_t)(p->batch > 0 ? p->batch : 1) *
                  sizeof(double));
  if (!s->out) {
    free(s);
    return gt_err_set(GT_ERR_NOMEM, "reference: no memory for the fp64 output");
  }
  *state = s;
  if (ws_needed) *ws_needed = 0;
  return GT_OK;
}

static gt_status_t ref_run(void *state, const gt_operands_t *ops, void *stream) {
  ref_state_t *s = state;
  const gt_problem_t *p = &s->p;
  gt_status_t st = gt_reference_gemm(p, ops, s->out);
  if (st != GT_OK) return st;
  for (int64_t b = 0; b < (p->batch > 0 ? p->batch : 1); b++)
    for (int64_t j = 0; j < p->n; j++)
      for (int64_t i = 0; i < p->m; i++)
        gt_store_elem(ops->D, p->d_type, (size_t)(b * p->stride_c + j * p->ldc + i),
                      s->out[(b * p->n + j) * p->m + i]);
  return GT_OK;
}

static void ref_release(void *state) {
  ref_state_t *s = state;
  if (!s) return;
  free(s->out);
  free(s);
}

const gt_provider_t gt_provider_reference = {
    .api_version = GT_PROVIDER_API_VERSION,
    .name = "reference",
    .description = "fp64-accumulating CPU GEMM: the gate's reference, never raced",
    .backend = GT_BACKEND_HOST,
    .init = NULL,
    .lib_version = NULL,
    .enumerate = ref_enumerate,
    .from_name = ref_from_name,
    .prepare = ref_prepare,
    .run = ref_run,
    .release = ref_release,
};
