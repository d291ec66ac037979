/* gemmtune's environment variables and the misspelling check (see gt_envvars.h). */
#include "gt_envvars.h"

#include <string.h>

static const gt_env_var_t k_vars[] = {
    {"GEMMTUNE_DB", GT_ENV_SHIM, "tuned DBs to load, path[:path...]; the first file listing a key wins"},
    {"GEMMTUNE_LOG", GT_ENV_SHIM | GT_ENV_DISPATCH,
     "one line per distinct key on its first hit or miss; calls and hits per key at exit"},
    {"GEMMTUNE_CAPTURE", GT_ENV_SHIM, "record mode: the issued GEMM keys as a shapes file at exit"},
    {"GEMMTUNE_STATS", GT_ENV_SHIM, "per-key calls, hits and decisions as CSV at exit"},
    {"GEMMTUNE_TRACE", GT_ENV_TRACER, "where the tracer writes its kernel trace"},
    {"GEMMTUNE_TRACE_CALLS", GT_ENV_TRACER, "1: the tracer times each GEMM call by its kernels"},
    {"GEMMTUNE_PRELOAD_LIB", GT_ENV_CLI, "the preload shim capture, run and verify use"},
    {"GEMMTUNE_TRACE_LIB", GT_ENV_CLI, "the tracer capture and verify inject"},
    {"GEMMTUNE_TORCH_BRIDGE", GT_ENV_CLI, "0: capture, run and verify do not preload the torch bridge (default: they do, where it was built)"},
    {"GEMMTUNE_CUPTI_LIB", GT_ENV_TRACER, "the libcupti the tracer loads"},
    {"GEMMTUNE_KERNELS_PDL", GT_ENV_LAYERS, "0: own kernels without programmatic dependent launch"},
    {"GEMMTUNE_GROUPED_PDL", GT_ENV_LAYERS, "0: grouped (MoE) kernels without programmatic dependent launch"},
    {"GEMMTUNE_WG_L2_PROMOTION", GT_ENV_LAYERS, "the wg family's tensor-map L2 promotion"},
    {"GEMMTUNE_WG_EVICT_FIRST", GT_ENV_LAYERS, "0: no evict-first hint on the wg family's weights"},
    {"GEMMTUNE_WG_PERSISTENT_GRID", GT_ENV_LAYERS,
     "resident (default) or balanced: the grid of the persistent (g1) wg and wgf8 instances"},
    {"GEMMTUNE_SEED", GT_ENV_LAYERS | GT_ENV_CLI, "the input seed"},
    {"GEMMTUNE_TEST_PROVIDERS", GT_ENV_LAYERS, "1, all or widen: the planted test candidates"},
    {"GEMMTUNE_TEST_DEVICE", GT_ENV_SHIM, "tests only: the device the shim keys calls as, no GPU"},
    {"GEMMTUNE_CPU_PEAK_GFLOPS", GT_ENV_LAYERS | GT_ENV_CLI, "the host's peak rate for floors"},
    {"GEMMTUNE_CPU_PEAK_GBPS", GT_ENV_LAYERS | GT_ENV_CLI, "the host's bandwidth for floors"},
    {"GEMMTUNE_CUBLASLT_LIB", GT_ENV_LAYERS, "the cuBLASLt file to load when none is loaded"},
    {"GEMMTUNE_CUBLAS_LIB", GT_ENV_LAYERS, "the cuBLAS file to load when none is loaded"},
    {"GEMMTUNE_PROGRESS_S", GT_ENV_CLI, "seconds between progress lines off a terminal"},
    {"GEMMTUNE_LOCK_TIMEOUT", GT_ENV_CLI, "seconds to wait for a DB directory's lock"},
    {"GEMMTUNE_BIN", GT_ENV_PYTHON, "the gemmtune binary python -m gemmtune runs"},
    {"GEMMTUNE_GROUPED_LIB", GT_ENV_CLI, "the grouped kernels' library tune's grouped race loads"},
    {"GEMMTUNE_PYTHON", GT_ENV_CLI, "the interpreter (with torch) tune races grouped_mm keys in (default python3)"},
};
#define NVARS (sizeof k_vars / sizeof k_vars[0])

enum { NAME_MAX_ = 127 };

size_t gt_env_count(void) { return NVARS; }

const gt_env_var_t *gt_env_at(size_t i) { return i < NVARS ? &k_vars[i] : NULL; }

const gt_env_var_t *gt_env_find(const char *name) {
  for (size_t i = 0; i < NVARS; i++)
    if (strcmp(k_vars[i].name, name) == 0) return &k_vars[i];
  return NULL;
}

static char up(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c; }

/* The name part of an entry ("NAME=value" or "NAME"), upper-cased and cut at NAME_MAX_. */
static size_t name_upper(const char *entry, char out[NAME_MAX_ + 1]) {
  size_t n = 0;
  while (entry[n] && entry[n] != '=' && n < NAME_MAX_) out[n] = up(entry[n]), n++;
  out[n] = '\0';
  return n;
}

/* Edits between a and b (insert, delete, substitute, and a swap of neighbours: the optimal
 * string alignment distance), both at most NAME_MAX_ long. Three rows on the stack. */
static int edits(const char *a, size_t la, const char *b, size_t lb) {
  int r0[NAME_MAX_ + 2], r1[NAME_MAX_ + 2], r2[NAME_MAX_ + 2];
  int *pp = r0, *prev = r1, *cur = r2;
  for (size_t j = 0; j <= lb; j++) prev[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int best = prev[j - 1] + (a[i - 1] != b[j - 1]);
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < best)
        best = pp[j - 2] + 1;
      cur[j] = best;
    }
    int *t = pp;
    pp = prev, prev = cur, cur = t;
  }
  return prev[lb];
}

static const char k_prefix[] = "GEMMTUNE";
#define PREFIX_LEN (sizeof k_prefix - 1)

/* The length of the first word of an upper-cased name (up to its first '_'). */
static size_t first_word(const char *u) {
  const char *us = strchr(u, '_');
  return us ? (size_t)(us - u) : strlen(u);
}

bool gt_env_looks_ours(const char *name) {
  char u[NAME_MAX_ + 1];
  size_t n = name_upper(name, u);
  if (strncmp(u, "GEMMTUNE_", 9) == 0 || strncmp(u, "GEMM_TUNE_", 10) == 0) return true;
  size_t w = first_word(u);
  return w >= PREFIX_LEN - 2 && w <= n && edits(u, w, k_prefix, PREFIX_LEN) <= 2;
}

/* name with its first word read as GEMMTUNE (and GEMM_TUNE_ as GEMMTUNE_), upper-cased. */
static size_t canonical(const char *name, char out[NAME_MAX_ + 1]) {
  char u[NAME_MAX_ + 1];
  size_t n = name_upper(name, u);
  const char *rest = u;
  if (strncmp(u, "GEMM_TUNE_", 10) == 0) rest = u + 9;
  else if (strchr(u, '_')) rest = u + first_word(u);
  else return memcpy(out, u, n + 1), n; /* one word: GEMMTUNEDB stays, one edit from GEMMTUNE_DB */
  size_t len = PREFIX_LEN + strlen(rest);
  if (len > NAME_MAX_) len = NAME_MAX_;
  memcpy(out, k_prefix, PREFIX_LEN);
  memcpy(out + PREFIX_LEN, rest, len - PREFIX_LEN);
  out[len] = '\0';
  return len;
}

const gt_env_var_t *gt_env_nearest(const char *name) {
  char c[NAME_MAX_ + 1];
  size_t n = canonical(name, c);
  const gt_env_var_t *best = &k_vars[0];
  int best_score = 1 << 30;
  size_t best_common = 0;
  for (size_t i = 0; i < NVARS; i++) {
    const char *k = k_vars[i].name;
    size_t kl = strlen(k), common = 0;
    while (common < n && common < kl && c[common] == k[common]) common++;
    /* One name extending the other (a suffix added or cut) is the likeliest slip after a typo. */
    int score = common == n && common == kl           ? 0
                : (common == n || common == kl) && n > PREFIX_LEN + 1 ? 1
                : edits(c, n, k, kl);
    if (score < best_score || (score == best_score && common > best_common))
      best = &k_vars[i], best_score = score, best_common = common;
  }
  return best;
}

size_t gt_env_check(char *const *envp, gt_env_unknown_fn fn, void *ctx) {
  size_t reported = 0;
  for (size_t i = 0; envp && envp[i] && reported < 32; i++) {
    const char *e = envp[i];
    size_t n = 0;
    while (e[n] && e[n] != '=' && n < NAME_MAX_) n++;
    if (n == 0 || !gt_env_looks_ours(e)) continue;
    char name[NAME_MAX_ + 1];
    memcpy(name, e, n);
    name[n] = '\0';
    if (gt_env_find(name)) continue;
    /* A name given twice (an environment built by hand) is said once. */
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = strncmp(envp[j], name, n) == 0 && (envp[j][n] == '=' || envp[j][n] == '\0');
    if (seen) continue;
    if (fn) fn(ctx, name, gt_env_nearest(name));
    reported++;
  }
  return reported;
}
