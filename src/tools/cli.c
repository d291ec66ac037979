/* Shared CLI plumbing (see cli.h). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int gt_cli_fail(const char *cmd, gt_status_t s) {
  fprintf(stderr, "gemmtune %s: %s\n", cmd, gt_err_msg()[0] ? gt_err_msg() : gt_status_str(s));
  return gt_status_exit_code(s);
}

int gt_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "gemmtune %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n(see 'gemmtune %s --help')\n", cmd);
  va_end(ap);
  return EX_USAGE_;
}

double gt_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- problem options ---------------------------------------------------------------------- */
enum {
  PO_LINEAR = 1000, PO_ROWMAJOR, PO_BLAS, PO_OPS, PO_KEY, PO_DTYPE, PO_ATYPE, PO_BTYPE, PO_CTYPE,
  PO_DTYPE_OUT, PO_COMPUTE, PO_SCALE, PO_BATCH, PO_BETA, PO_LDA, PO_LDB, PO_LDC, PO_EPI, PO_ARCH,
  PO_SMS, PO_SCALE_A, PO_SCALE_B, PO_FAST_ACCUM
};

void gt_cli_problem_init(gt_cli_problem_t *cp) {
  memset(cp, 0, sizeof *cp);
  gt_problem_init(&cp->p);
}

static int parse_ints(const char *s, int64_t *v, int n) {
  const char *p = s;
  for (int i = 0; i < n; i++) {
    char *end;
    errno = 0;
    long long x = strtoll(p, &end, 10);
    if (end == p || errno || x <= 0) return -1;
    v[i] = x;
    if (i < n - 1) {
      if (*end != ',' && *end != 'x') return -1;
      p = end + 1;
    } else if (*end) {
      return -1;
    }
  }
  return 0;
}

static int type_opt(const char *cmd, const char *arg, gt_dtype_t *t) {
  if (gt_dtype_parse(arg, t) != GT_OK) {
    fprintf(stderr, "gemmtune %s: %s\n", cmd, gt_err_msg());
    return -1;
  }
  return 1;
}

int gt_cli_problem_opt(const char *cmd, gt_cli_problem_t *cp, int id, const char *arg) {
  gt_problem_t *p = &cp->p;
  int64_t v[4];
  switch (id) {
    case PO_LINEAR:
      if (parse_ints(arg, v, 3)) {
        gt_cli_usage_error(cmd, "--linear wants TOKENS,OUT,IN (positive integers), got '%s'", arg);
        return -1;
      }
      gt_problem_set_linear(p, v[0], v[1], v[2]);
      snprintf(cp->mapping, sizeof cp->mapping,
               "linear tokens=%" PRId64 " out=%" PRId64 " in=%" PRId64
               " -> BLAS TN m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " lda=%" PRId64
               " ldb=%" PRId64 " ldc=%" PRId64,
               v[0], v[1], v[2], p->m, p->n, p->k, p->lda, p->ldb, p->ldc);
      cp->have_shape = true;
      return 1;
    case PO_ROWMAJOR: {
      char lay[8] = "";
      const char *c = strchr(arg, ',');
      if (c) c = strchr(c + 1, ','); /* layout codes contain one comma themselves */
      if (!c || (size_t)(c - arg) >= sizeof lay || parse_ints(c + 1, v, 3)) {
        gt_cli_usage_error(cmd, "--rowmajor wants LAYOUT,M,N,K (e.g. mk,nk,16,4096,4096), got '%s'",
                           arg);
        return -1;
      }
      memcpy(lay, arg, (size_t)(c - arg));
      lay[c - arg] = '\0';
      if (gt_problem_set_rowmajor(p, lay, v[0], v[1], v[2]) != GT_OK) {
        gt_cli_usage_error(cmd, "%s", gt_err_msg());
        return -1;
      }
      snprintf(cp->mapping, sizeof cp->mapping,
               "row-major %s M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " -> BLAS %s m=%" PRId64
               " n=%" PRId64 " k=%" PRId64 " lda=%" PRId64 " ldb=%" PRId64 " ldc=%" PRId64,
               lay, v[0], v[1], v[2], gt_problem_ops(p), p->m, p->n, p->k, p->lda, p->ldb,
               p->ldc);
      cp->have_shape = true;
      return 1;
    }
    case PO_BLAS:
      if (parse_ints(arg, v, 3)) {
        gt_cli_usage_error(cmd, "--blas wants M,N,K, got '%s'", arg);
        return -1;
      }
      p->m = v[0], p->n = v[1], p->k = v[2];
      p->lda = p->ldb = p->ldc = 0;
      cp->have_shape = true;
      return 1;
    case PO_OPS:
      if (strlen(arg) != 2 || !strchr("NTnt", arg[0]) || !strchr("NTnt", arg[1])) {
        gt_cli_usage_error(cmd, "--ops wants NN, NT, TN or TT, got '%s'", arg);
        return -1;
      }
      p->transa = (arg[0] == 'T' || arg[0] == 't') ? GT_TRANS_T : GT_TRANS_N;
      p->transb = (arg[1] == 'T' || arg[1] == 't') ? GT_TRANS_T : GT_TRANS_N;
      p->lda = p->ldb = 0;
      return 1;
    case PO_KEY:
      if (gt_problem_parse_key(arg, p) != GT_OK) {
        gt_cli_usage_error(cmd, "--key: %s", gt_err_msg());
        return -1;
      }
      if (strstr(arg, "arch=")) cp->arch_given = true;
      if (strstr(arg, "sm_count=")) cp->sms_given = true;
      if (strstr(arg, "stride_")) cp->strides_given = true;
      if (p->m && p->n && p->k) cp->have_shape = true;
      return 1;
    case PO_DTYPE: {
      gt_dtype_t t;
      if (type_opt(cmd, arg, &t) < 0) return -1;
      p->a_type = p->b_type = p->c_type = p->d_type = t;
      if (t == GT_DT_I8) p->c_type = p->d_type = GT_DT_I32, p->compute = GT_COMPUTE_I32, p->scale_type = GT_DT_I32;
      if (t == GT_DT_F8E4M3FN || t == GT_DT_F8E5M2) p->c_type = p->d_type = GT_DT_BF16;
      return 1;
    }
    case PO_ATYPE: return type_opt(cmd, arg, &p->a_type);
    case PO_BTYPE: return type_opt(cmd, arg, &p->b_type);
    case PO_CTYPE: return type_opt(cmd, arg, &p->c_type);
    case PO_DTYPE_OUT: return type_opt(cmd, arg, &p->d_type);
    case PO_SCALE: return type_opt(cmd, arg, &p->scale_type);
    case PO_COMPUTE:
      if (gt_compute_parse(arg, &p->compute) != GT_OK) {
        gt_cli_usage_error(cmd, "%s", gt_err_msg());
        return -1;
      }
      return 1;
    case PO_SCALE_A:
    case PO_SCALE_B:
      if (gt_scale_mode_parse(arg, id == PO_SCALE_A ? &p->scale_a : &p->scale_b) != GT_OK) {
        gt_cli_usage_error(cmd, "%s", gt_err_msg());
        return -1;
      }
      return 1;
    case PO_FAST_ACCUM: p->fast_accum = true; return 1;
    case PO_EPI:
      if (gt_epilogue_parse(arg, &p->epilogue) != GT_OK) {
        gt_cli_usage_error(cmd, "%s", gt_err_msg());
        return -1;
      }
      return 1;
    case PO_BATCH:
    case PO_LDA:
    case PO_LDB:
    case PO_LDC:
    case PO_SMS:
      if (parse_ints(arg, v, 1)) {
        gt_cli_usage_error(cmd, "option wants a positive integer, got '%s'", arg);
        return -1;
      }
      if (id == PO_BATCH) p->batch = v[0];
      if (id == PO_LDA) p->lda = v[0];
      if (id == PO_LDB) p->ldb = v[0];
      if (id == PO_LDC) p->ldc = v[0];
      if (id == PO_SMS && v[0] > INT_MAX) { /* never cut to fit: 4294967298 is not 2 */
        gt_cli_usage_error(cmd, "--sm-count %" PRId64 " is above the maximum %d", v[0], INT_MAX);
        return -1;
      }
      if (id == PO_SMS) p->sm_count = (int)v[0], cp->sms_given = true;
      return 1;
    case PO_BETA:
      if (strcmp(arg, "0") && strcmp(arg, "1")) {
        gt_cli_usage_error(cmd, "--beta wants 0 or 1, got '%s'", arg);
        return -1;
      }
      p->beta_zero = arg[0] == '0';
      return 1;
    case PO_ARCH:
      if (gt_problem_set_field(p, "arch", arg) != GT_OK) {
        gt_cli_usage_error(cmd, "--arch: %s", gt_err_msg());
        return -1;
      }
      cp->arch_given = true;
      return 1;
    default: return 0;
  }
}

int gt_cli_problem_finish(const char *cmd, gt_cli_problem_t *cp, const gt_device_info_t *dev) {
  if (!cp->have_shape)
    return gt_cli_usage_error(cmd, "no problem given: use --linear, --rowmajor, --blas or --key");
  gt_problem_t *p = &cp->p;
  /* Strides stated in --key are kept (0 = broadcast operand); the others are made tight. */
  int64_t sa = p->stride_a, sb = p->stride_b, sc = p->stride_c;
  if (p->batch > 1) p->stride_a = p->stride_b = p->stride_c = 0;
  gt_problem_fill_lds(p);
  if (cp->strides_given) p->stride_a = sa, p->stride_b = sb, p->stride_c = sc;
  if (dev) {
    if (!cp->arch_given) snprintf(p->arch, sizeof p->arch, "%s", dev->arch);
    if (!cp->sms_given) p->sm_count = dev->sm_count;
  }
  if (!cp->mapping[0])
    snprintf(cp->mapping, sizeof cp->mapping,
             "BLAS %s m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " lda=%" PRId64 " ldb=%" PRId64
             " ldc=%" PRId64,
             gt_problem_ops(p), p->m, p->n, p->k, p->lda, p->ldb, p->ldc);
  if (gt_problem_validate(p) != GT_OK) return gt_cli_usage_error(cmd, "%s", gt_err_msg());
  return 0;
}

/* ---- search options ----------------------------------------------------------------------- */
enum {
  SO_WARM = 2000, SO_FENCED, SO_ROUNDS, SO_FINALISTS, SO_MINIMP, SO_BUDGET, SO_EXHAUSTIVE,
  SO_PROVIDERS, SO_DEVICE, SO_INIT, SO_SEED, SO_BACKEND, SO_MAXCAND, SO_ESTIMATE, SO_CPU,
  SO_SETTLE, SO_SEARCH, SO_FLOOR, SO_WIDEN_STEP
};

/* ---- the shared option table ------------------------------------------------------------------ */
/* Every shared option once: its group (a GT_OPT_* bit), its getopt entry and its help line(s).
 * Commands pick groups (gt_cli_options), so what --help lists is what getopt accepts. */
typedef struct shared_opt {
  unsigned group;
  struct option o;
  const char *help;
} shared_opt_t;

#define REQ required_argument
#define NOARG no_argument
static const shared_opt_t k_shared[] = {
    {GT_OPT_SHAPE, {"linear", REQ, 0, PO_LINEAR},
     "  --linear T,OUT,IN      nn.Linear view: y[T,OUT] = x[T,IN] @ W[OUT,IN]^T\n"
     "                         (mapped to BLAS TN, m=OUT n=T k=IN, as PyTorch calls cublasGemmEx)\n"},
    {GT_OPT_SHAPE, {"rowmajor", REQ, 0, PO_ROWMAJOR},
     "  --rowmajor L,M,N,K     row-major D[M,N] = A*B with L one of mk,kn mk,nk km,kn km,nk\n"
     "                         (how A and B are stored), mapped to column-major BLAS terms\n"},
    {GT_OPT_SHAPE, {"blas", REQ, 0, PO_BLAS},
     "  --blas M,N,K           BLAS column-major m,n,k; transposes from --ops (default NN)\n"},
    {GT_OPT_SHAPE, {"ops", REQ, 0, PO_OPS}, "  --ops XY               transa,transb for --blas: NN NT TN TT\n"},
    {GT_OPT_SHAPE, {"key", REQ, 0, PO_KEY},
     "  --key TEXT             a full key as printed by gemmtune (field=value,...)\n"},
    {GT_OPT_TYPES, {"dtype", REQ, 0, PO_DTYPE},
     "  --dtype T              A/B/C/D type: bf16 (default) f16 f32 f8e4m3fn f8e5m2 i8\n"},
    {GT_OPT_TYPES, {"a-type", REQ, 0, PO_ATYPE},
     "  --a-type/--b-type/--c-type/--d-type T   override one operand's type\n"},
    {GT_OPT_TYPES, {"b-type", REQ, 0, PO_BTYPE}, NULL},
    {GT_OPT_TYPES, {"c-type", REQ, 0, PO_CTYPE}, NULL},
    {GT_OPT_TYPES, {"d-type", REQ, 0, PO_DTYPE_OUT}, NULL},
    {GT_OPT_TYPES, {"compute", REQ, 0, PO_COMPUTE},
     "  --compute C            accumulation: f32 (default) tf32 f16 f64 i32\n"},
    {GT_OPT_TYPES, {"scale-type", REQ, 0, PO_SCALE}, "  --scale-type T         alpha/beta type (default f32)\n"},
    {GT_OPT_TYPES, {"beta", REQ, 0, PO_BETA},
     "  --beta 0|1             0: C not read (default); 1: D = alpha*AB + beta*C\n"},
    {GT_OPT_TYPES, {"scale-a", REQ, 0, PO_SCALE_A},
     "  --scale-a/--scale-b M  fp8 scaling of A / B: none (default) tensor_f32 outer_f32\n"
     "                         blk1x128_f32 blk128x128_f32\n"},
    {GT_OPT_TYPES, {"scale-b", REQ, 0, PO_SCALE_B}, NULL},
    {GT_OPT_TYPES, {"fast-accum", 0, 0, PO_FAST_ACCUM},
     "  --fast-accum           fp8 fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM)\n"},
    {GT_OPT_TYPES, {"epilogue", REQ, 0, PO_EPI},
     "  --epilogue E           none bias relu bias_relu gelu bias_gelu\n"},
    {GT_OPT_LAYOUT, {"batch", REQ, 0, PO_BATCH}, "  --batch N              strided batch count (tight strides)\n"},
    {GT_OPT_LAYOUT, {"lda", REQ, 0, PO_LDA}, "  --lda/--ldb/--ldc N    leading dimensions (default tight)\n"},
    {GT_OPT_LAYOUT, {"ldb", REQ, 0, PO_LDB}, NULL},
    {GT_OPT_LAYOUT, {"ldc", REQ, 0, PO_LDC}, NULL},
    {GT_OPT_KEYDEV, {"arch", REQ, 0, PO_ARCH},
     "  --arch A, --sm-count N key's device fields (default: the device in use)\n"},
    {GT_OPT_KEYDEV, {"sm-count", REQ, 0, PO_SMS}, NULL},
    {GT_OPT_DEVICE, {"backend", REQ, 0, SO_BACKEND},
     "  --backend auto|cuda|host  where to run (auto: the GPU when there is one)\n"},
    {GT_OPT_DEVICE, {"cpu", NOARG, 0, SO_CPU}, "  --cpu                  the host (CPU) providers: --backend host\n"},
    {GT_OPT_DEVICE, {"device", REQ, 0, SO_DEVICE}, "  --device N             CUDA device ordinal (default 0)\n"},
    {GT_OPT_CANDS, {"providers", REQ, 0, SO_PROVIDERS},
     "  --providers A,B        only these providers (default: every provider ready here;\n"
     "                         'gemmtune list' names them)\n"},
    {GT_OPT_CANDS, {"exhaustive", NOARG, 0, SO_EXHAUSTIVE},
     "  --exhaustive           providers enumerate their full space (cuBLASLt: every config,\n"
     "                         own kernels: every instance the hard rules allow): --search full\n"},
    {GT_OPT_RACE, {"search", REQ, 0, SO_SEARCH},
     "  --search floor|quick|full  how much of the space a shape gets (default floor): floor:\n"
     "                         the quick pass over the default space, then, unless the floor\n"
     "                         rule stops it, widenings into the full space until 3 in a row\n"
     "                         each gain under 2%, the space is exhausted or --budget is spent;\n"
     "                         quick: the default space only; full: the whole full space in\n"
     "                         one pass, no stopping rule (the plain exhaustive search)\n"},
    {GT_OPT_RACE, {"floor-threshold", REQ, 0, SO_FLOOR},
     "  --floor-threshold PCT  the floor rule: a shape whose baseline is within PCT% of its\n"
     "                         roofline floor gets the quick race only (default 10; 'off': no\n"
     "                         floor rule, every shape widens)\n"},
    {GT_OPT_RACE, {"widen-step", REQ, 0, SO_WIDEN_STEP},
     "  --widen-step N         candidates of the first widening; each next one doubles\n"
     "                         (default 32)\n"},
    {GT_OPT_CANDS, {"max-candidates", REQ, 0, SO_MAXCAND},
     "  --max-candidates N     per-provider cap on candidates (0 = provider default)\n"},
    {GT_OPT_RACE, {"finalists", REQ, 0, SO_FINALISTS},
     "  --finalists N          candidates re-timed after the quick prune pass (default 6)\n"},
    {GT_OPT_TIMING, {"rounds", REQ, 0, SO_ROUNDS}, "  --rounds N             interleaved re-time rounds (default 15)\n"},
    {GT_OPT_RACE, {"min-improvement", REQ, 0, SO_MINIMP},
     "  --min-improvement P    required gain over the baseline, percent (default 3); the\n"
     "                         baseline's own spread is required too when larger\n"},
    {GT_OPT_RACE, {"budget", REQ, 0, SO_BUDGET},
     "  --budget S             seconds per shape for everything up to the end of the prune\n"
     "                         pass and its widenings (default: no limit): the pass stops when\n"
     "                         they are spent (the budget rule) and the candidates it did not\n"
     "                         reach are counted; the gate and the re-time rounds come on top\n"
     "                         (--finalists and --rounds bound them)\n"},
    {GT_OPT_TIMING, {"settle", REQ, 0, SO_SETTLE},
     "  --settle S             run the baseline at least S seconds before the race, then\n"
     "                         until the SM clock stops moving (at most 10x S), so every\n"
     "                         process races at the sustained clock (default 0.3 on a GPU)\n"},
    {GT_OPT_RACE, {"estimate", NOARG, 0, SO_ESTIMATE},
     "  --estimate             time each shape's baseline (not gated, one process for the\n"
     "                         whole run), print the sweep's cost estimate and stop\n"},
    {GT_OPT_TIMING, {"fenced", NOARG, 0, SO_FENCED},
     "  --fenced               CUDA: time every launch after a small plain kernel, as an\n"
     "                         application's norm or activation kernel precedes its GEMM: no\n"
     "                         launch overlaps the previous GEMM's tail through programmatic\n"
     "                         dependent launch (its own time is subtracted; rows say\n"
     "                         'graph-fenced')\n"},
    {GT_OPT_TIMING, {"warm", NOARG, 0, SO_WARM},
     "  --warm                 no input rotation (default: cold, inputs rotated over >= 2 sets\n"
     "                         and >= 3x the last-level cache)\n"},
    {GT_OPT_TIMING, {"init", REQ, 0, SO_INIT},
     "  --init random|int      input values: decimals in [-1,1) or small integers (exact)\n"},
    {GT_OPT_TIMING, {"seed", REQ, 0, SO_SEED},
     "  --seed N               input seed (default: GEMMTUNE_SEED or time)\n"},
};
#undef REQ
#undef NOARG
#define NSHARED (sizeof k_shared / sizeof k_shared[0])

static bool shared_taken(const shared_opt_t *so, unsigned mask, const char *except) {
  return (so->group & mask) && !gt_search_name_in_list(except, so->o.name);
}

struct option *gt_cli_options(const struct option *own, unsigned mask, const char *except) {
  size_t n = 0;
  for (const struct option *o = own; o && o->name; o++) n++;
  struct option *r = calloc(n + NSHARED + 1, sizeof *r);
  if (!r) abort(); /* a few hundred bytes at start-up: out of memory here is unrecoverable */
  n = 0;
  for (const struct option *o = own; o && o->name; o++) r[n++] = *o;
  for (size_t i = 0; i < NSHARED; i++)
    if (shared_taken(&k_shared[i], mask, except)) r[n++] = k_shared[i].o;
  return r;
}

void gt_cli_options_help(FILE *f, unsigned mask, const char *except) {
  /* Headings in table order; the problem's types read as row defaults where no shape is given. */
  static const struct {
    unsigned groups;
    const char *with_shape, *without_shape;
  } k_heads[] = {
      {GT_OPT_SHAPE | GT_OPT_TYPES | GT_OPT_LAYOUT | GT_OPT_KEYDEV,
       "Problem (one shape view is required):\n", "Defaults for rows that do not state them:\n"},
      {GT_OPT_DEVICE, "Device:\n", "Device:\n"},
      {GT_OPT_CANDS, "Candidates:\n", "Candidates:\n"},
      {GT_OPT_TIMING | GT_OPT_RACE, "Measurement:\n", "Measurement:\n"},
  };
  for (size_t h = 0; h < sizeof k_heads / sizeof k_heads[0]; h++) {
    bool said = false;
    for (size_t i = 0; i < NSHARED; i++) {
      const shared_opt_t *so = &k_shared[i];
      if (!(so->group & k_heads[h].groups) || !shared_taken(so, mask, except) || !so->help)
        continue;
      if (!said)
        fprintf(f, "\n%s", mask & GT_OPT_SHAPE ? k_heads[h].with_shape : k_heads[h].without_shape);
      said = true;
      fputs(so->help, f);
    }
  }
}

void gt_cli_search_init(gt_cli_search_t *cs) {
  memset(cs, 0, sizeof *cs);
  gt_search_opts_init(&cs->so, GT_BACKEND_HOST);
  cs->backend_name = "auto";
}

static int parse_pos_double(const char *cmd, const char *opt, const char *arg, double *out) {
  char *end;
  errno = 0;
  double x = strtod(arg, &end);
  if (!*arg || *end || errno || x < 0)
    return gt_cli_usage_error(cmd, "%s wants a non-negative number, got '%s'", opt, arg), -1;
  *out = x;
  return 1;
}

static int parse_pos_int(const char *cmd, const char *opt, const char *arg, int *out) {
  char *end;
  errno = 0;
  long x = strtol(arg, &end, 10);
  if (!*arg || *end || errno || x < 0 || x > 1000000000)
    return gt_cli_usage_error(cmd, "%s wants a non-negative integer, got '%s'", opt, arg), -1;
  *out = (int)x;
  return 1;
}

/* Every name in a --providers list must be a provider of this build: a misspelt one would
 * otherwise leave the search with no candidates and look like a result. */
static bool check_providers(const char *cmd, const char *list) {
  char known[512] = "";
  size_t kl = 0;
  bool have_cuda = false;
  for (size_t i = 0; i < gt_provider_count(); i++) {
    const gt_provider_t *p = gt_provider_at(i);
    kl += (size_t)snprintf(known + kl, kl < sizeof known ? sizeof known - kl : 0, "%s%s",
                           i ? ", " : "", p->name);
    if (p->backend == GT_BACKEND_CUDA) have_cuda = true;
  }
  const char *p = list;
  do {
    const char *e = strchr(p, ',');
    size_t l = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), p);
    if (!*name || !gt_provider_find(name)) {
      gt_cli_usage_error(cmd, "--providers: %s '%s'; this build has %s%s",
                         *name ? "no provider" : "an empty name in", *name ? name : list, known,
                         have_cuda ? "" : " (the CUDA providers need a build with CUDA)");
      return false;
    }
    p = e ? e + 1 : NULL;
  } while (p);
  return true;
}

int gt_cli_search_opt(const char *cmd, gt_cli_search_t *cs, int id, const char *arg) {
  gt_search_opts_t *o = &cs->so;
  double d;
  switch (id) {
    case SO_WARM: o->measure.warm = true; return 1;
    case SO_FENCED: o->measure.fenced = true; return 1;
    case SO_ROUNDS:
      if (parse_pos_int(cmd, "--rounds", arg, &o->rounds) < 0) return -1;
      if (o->rounds < 3) return gt_cli_usage_error(cmd, "--rounds must be >= 3 (a median needs samples)"), -1;
      return 1;
    case SO_FINALISTS: return parse_pos_int(cmd, "--finalists", arg, &o->finalists);
    case SO_MAXCAND: return parse_pos_int(cmd, "--max-candidates", arg, &o->max_candidates);
    case SO_DEVICE:
      cs->gpu_asked = cs->device_given = true;
      return parse_pos_int(cmd, "--device", arg, &o->measure.device);
    case SO_MINIMP:
      if (parse_pos_double(cmd, "--min-improvement", arg, &d) < 0) return -1;
      o->min_improvement = d / 100.0;
      return 1;
    case SO_BUDGET: return parse_pos_double(cmd, "--budget", arg, &o->budget_s);
    case SO_SETTLE:
      if (parse_pos_double(cmd, "--settle", arg, &o->settle_s) < 0) return -1;
      cs->settle_given = true;
      return 1;
    case SO_EXHAUSTIVE: o->exhaustive = true; return 1;
    case SO_SEARCH:
      if (!gt_search_mode_parse(arg, &o->mode))
        return gt_cli_usage_error(cmd, "--search wants floor, quick or full, got '%s'", arg), -1;
      return 1;
    case SO_FLOOR:
      if (strcmp(arg, "off") == 0) return o->floor_threshold = -1, 1;
      if (parse_pos_double(cmd, "--floor-threshold", arg, &d) < 0) return -1;
      if (d >= 100)
        return gt_cli_usage_error(cmd, "--floor-threshold wants a percentage below 100 or "
                                       "'off', got '%s'", arg), -1;
      o->floor_threshold = d / 100.0;
      return 1;
    case SO_WIDEN_STEP:
      if (parse_pos_int(cmd, "--widen-step", arg, &o->widen_step) < 0) return -1;
      if (o->widen_step < 1) return gt_cli_usage_error(cmd, "--widen-step must be >= 1"), -1;
      return 1;
    case SO_ESTIMATE: o->estimate_only = true; return 1;
    case SO_PROVIDERS: return check_providers(cmd, arg) ? (o->providers = arg, 1) : -1;
    case SO_CPU: cs->backend_name = "host"; return 1;
    case SO_BACKEND:
      if (strcmp(arg, "auto") && strcmp(arg, "cuda") && strcmp(arg, "host") && strcmp(arg, "cpu"))
        return gt_cli_usage_error(cmd, "--backend wants auto, cuda or host, got '%s'", arg), -1;
      cs->backend_name = strcmp(arg, "cpu") == 0 ? "host" : arg;
      if (strcmp(cs->backend_name, "cuda") == 0) cs->gpu_asked = true;
      return 1;
    case SO_INIT:
      if (strcmp(arg, "random") == 0) o->measure.init = GT_INIT_RANDOM;
      else if (strcmp(arg, "int") == 0) o->measure.init = GT_INIT_INT;
      else return gt_cli_usage_error(cmd, "--init wants random or int, got '%s'", arg), -1;
      return 1;
    case SO_SEED: {
      char *end;
      errno = 0;
      unsigned long long s = strtoull(arg, &end, 10);
      if (!*arg || *end || errno) return gt_cli_usage_error(cmd, "--seed wants an integer"), -1;
      o->measure.seed = s;
      return 1;
    }
    default: return 0;
  }
}

int gt_cli_pick_backend(const char *cmd, gt_cli_search_t *cs, gt_device_info_t *dev) {
  memset(dev, 0, sizeof *dev);
  const gt_harness_ops_t *cuda = gt_harness_for(GT_BACKEND_CUDA);
  if (strcmp(cs->backend_name, "host") != 0) {
    gt_err_clear();
    gt_status_t s = cuda ? cuda->available(cs->so.measure.device)
                         : gt_err_set(GT_ERR_UNSUPPORTED, "this build has no CUDA support");
    if (s == GT_OK && cuda->describe(cs->so.measure.device, dev) == GT_OK) {
      cs->so.backend = GT_BACKEND_CUDA;
      cs->so.roof = dev->roof;
      if (!cs->settle_given) cs->so.settle_s = 0.3;
      return 0;
    }
    if (strcmp(cs->backend_name, "cuda") == 0) return gt_cli_fail(cmd, s == GT_OK ? GT_ERR_DEVICE : s);
    snprintf(cs->note, sizeof cs->note, "%s", gt_err_msg()[0] ? gt_err_msg() : "unavailable");
  }
  cs->so.backend = GT_BACKEND_HOST;
  gt_status_t s = gt_harness_host.describe(0, dev);
  if (s != GT_OK) return gt_cli_fail(cmd, s);
  cs->so.roof = dev->roof;
  return 0;
}

void gt_cli_backend_note(const char *cmd, const gt_cli_search_t *cs) {
  if (cs->quiet || !cs->note[0]) return;
  if (!cs->gpu_asked && !gt_harness_for(GT_BACKEND_CUDA)) return; /* no GPU could change it */
  fprintf(stderr, "gemmtune %s: no usable GPU (%s); using the host (CPU) providers\n", cmd,
          cs->note);
}

int gt_cli_need_file(const char *cmd, const char *what, const char *path) {
  if (access(path, R_OK) == 0) return 0;
  fprintf(stderr, "gemmtune %s: %s%s%s: %s\n", cmd, what ? what : "", what ? " " : "", path,
          strerror(errno));
  return EX_NOINPUT_;
}

struct option *gt_cli_merge_options(const struct option *a, const struct option *b,
                                    const struct option *c) {
  const struct option *t[3] = {a, b, c};
  size_t n = 0;
  for (int i = 0; i < 3; i++)
    for (const struct option *o = t[i]; o && o->name; o++) n++;
  struct option *r = calloc(n + 1, sizeof *r);
  if (!r) abort(); /* a few hundred bytes at start-up: out of memory here is unrecoverable */
  n = 0;
  for (int i = 0; i < 3; i++)
    for (const struct option *o = t[i]; o && o->name; o++) r[n++] = *o;
  return r;
}

/* ---- output ------------------------------------------------------------------------------- */
int gt_cli_parse_format(const char *cmd, const char *arg, gt_fmt_t *out) {
  if (strcmp(arg, "table") == 0) *out = GT_FMT_TABLE;
  else if (strcmp(arg, "csv") == 0) *out = GT_FMT_CSV;
  else if (strcmp(arg, "json") == 0) *out = GT_FMT_JSON;
  else return gt_cli_usage_error(cmd, "--format wants table, csv or json, got '%s'", arg), -1;
  return 0;
}

void gt_table_begin(gt_table_t *t, FILE *f, gt_fmt_t fmt, int ncols, const char *const *names,
                    const bool *numeric) {
  memset(t, 0, sizeof *t);
  t->f = f, t->fmt = fmt, t->ncols = ncols, t->names = names, t->numeric = numeric;
}

void gt_table_row(gt_table_t *t, const char *const *cells) {
  if (t->nrows == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 64;
    t->rows = realloc(t->rows, (size_t)t->cap * sizeof *t->rows);
    if (!t->rows) abort(); /* cannot report results without memory for them */
  }
  char **r = malloc((size_t)t->ncols * sizeof *r);
  if (!r) abort();
  for (int i = 0; i < t->ncols; i++) r[i] = strdup(cells[i] ? cells[i] : "");
  t->rows[t->nrows++] = r;
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
    else fputc(*s, f);
  }
  fputc('"', f);
}

static void csv_cell(FILE *f, const char *s) {
  if (strpbrk(s, ",\"\n")) {
    fputc('"', f);
    for (; *s; s++) {
      if (*s == '"') fputc('"', f);
      fputc(*s, f);
    }
    fputc('"', f);
  } else {
    fputs(s, f);
  }
}

void gt_table_end(gt_table_t *t) {
  if (t->fmt == GT_FMT_CSV) {
    for (int c = 0; c < t->ncols; c++) fprintf(t->f, "%s%s", c ? "," : "", t->names[c]);
    fputc('\n', t->f);
    for (int r = 0; r < t->nrows; r++) {
      for (int c = 0; c < t->ncols; c++) {
        if (c) fputc(',', t->f);
        csv_cell(t->f, t->rows[r][c]);
      }
      fputc('\n', t->f);
    }
  } else if (t->fmt == GT_FMT_JSON) {
    fprintf(t->f, "[");
    for (int r = 0; r < t->nrows; r++) {
      fprintf(t->f, "%s\n  {", r ? "," : "");
      for (int c = 0; c < t->ncols; c++) {
        fprintf(t->f, "%s\"%s\": ", c ? ", " : "", t->names[c]);
        const char *v = t->rows[r][c];
        char *end;
        bool num = t->numeric && t->numeric[c] && *v && (strtod(v, &end), *end == '\0');
        if (num) fputs(v, t->f);
        else if (t->numeric && t->numeric[c] && (!*v || strcmp(v, "-") == 0)) fputs("null", t->f);
        else json_str(t->f, v);
      }
      fputc('}', t->f);
    }
    fprintf(t->f, "%s]\n", t->nrows ? "\n" : "");
  } else {
    int *w = calloc((size_t)t->ncols, sizeof *w);
    for (int c = 0; c < t->ncols; c++) {
      w[c] = (int)strlen(t->names[c]);
      for (int r = 0; r < t->nrows; r++)
        if ((int)strlen(t->rows[r][c]) > w[c]) w[c] = (int)strlen(t->rows[r][c]);
    }
    for (int c = 0; c < t->ncols; c++)
      fprintf(t->f, "%s%-*s", c ? "  " : "", c == t->ncols - 1 ? 0 : w[c], t->names[c]);
    fputc('\n', t->f);
    for (int r = 0; r < t->nrows; r++) {
      for (int c = 0; c < t->ncols; c++) {
        bool right = t->numeric && t->numeric[c];
        if (c == t->ncols - 1 && !right) fprintf(t->f, "%s%s", c ? "  " : "", t->rows[r][c]);
        else fprintf(t->f, right ? "%s%*s" : "%s%-*s", c ? "  " : "", w[c], t->rows[r][c]);
      }
      fputc('\n', t->f);
    }
    free(w);
  }
  for (int r = 0; r < t->nrows; r++) {
    for (int c = 0; c < t->ncols; c++) free(t->rows[r][c]);
    free(t->rows[r]);
  }
  free(t->rows);
  t->rows = NULL;
  t->nrows = t->cap = 0;
  fflush(t->f);
}

/* ---- progress ------------------------------------------------------------------------------ */
static struct {
  bool shown;          /* a terminal line is on screen */
  char label[160];     /* the label of the last plain line */
  double last;         /* when the last plain line was printed */
  double run_t0, run_total; /* the whole run: start and estimated length (< 0 unknown) */
} g_prog;

/* "45s", "3m05s", "1h02m". */
static void fmt_dur(char *b, size_t n, double s) {
  if (!(s >= 0)) s = 0;
  long t = lround(s);
  if (t < 60) snprintf(b, n, "%lds", t);
  else if (t < 3600) snprintf(b, n, "%ldm%02lds", t / 60, t % 60);
  else snprintf(b, n, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

static double progress_interval(void) {
  const char *e = getenv("GEMMTUNE_PROGRESS_S");
  char *end;
  double v = e && *e ? strtod(e, &end) : 10.0;
  return e && *e && *end ? 10.0 : v;
}

void gt_cli_progress_run(double t0, double total_s) {
  g_prog.run_t0 = t0;
  g_prog.run_total = total_s;
}

void gt_cli_progress(const char *label, const char *phase, size_t done, size_t total,
                     double elapsed_s) {
  char eta[48] = "", run[96] = "", d1[16], d2[16];
  if (total && done && done <= total) {
    fmt_dur(d1, sizeof d1, elapsed_s / (double)done * (double)(total - done));
    snprintf(eta, sizeof eta, "  ETA %s", d1);
  }
  double now = gt_cli_now();
  if (g_prog.run_t0 > 0) {
    fmt_dur(d1, sizeof d1, now - g_prog.run_t0);
    if (g_prog.run_total >= 0) {
      fmt_dur(d2, sizeof d2, g_prog.run_total - (now - g_prog.run_t0));
      snprintf(run, sizeof run, "  | run %s, ETA %s", d1, d2);
    } else {
      snprintf(run, sizeof run, "  | run %s", d1);
    }
  }
  char count[48] = "";
  if (total) snprintf(count, sizeof count, " %zu/%zu", done, total);
  if (isatty(2)) {
    fprintf(stderr, "\r\033[K%s  %s%s%s%s", label, phase, count, eta, run);
    g_prog.shown = true;
    return;
  }
  /* Not a terminal: a plain line when a new label starts, then at most one per interval. */
  double every = progress_interval();
  if (every < 0) return; /* negative: no lines at all; 0: every event */
  bool fresh = strcmp(label, g_prog.label) != 0;
  if (!fresh && now - g_prog.last < every) return;
  fprintf(stderr, "gemmtune: %s: %s%s%s%s\n", label, phase, count, eta, run);
  snprintf(g_prog.label, sizeof g_prog.label, "%s", label);
  g_prog.last = now;
}

void gt_cli_progress_clear(void) {
  if (g_prog.shown && isatty(2)) fprintf(stderr, "\r\033[K");
  g_prog.shown = false;
}
