/* The provider registry: the one table listing every provider this build has, in the order
 * `gemmtune list` prints them and the search driver enumerates them. Adding a provider means
 * adding one line here; nothing else in the framework names one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gt_provider.h"
#include "cuda/gt_cuda_kernel_names.h"
#include "cuda/gt_grouped_names.h"

#ifdef GT_HAVE_CUDA
extern const gt_provider_t gt_provider_cublas;        /* providers/cuda/: the baseline path */
extern const gt_provider_t gt_provider_cublaslt;      /* providers/cuda/: heuristic + full space */
extern const gt_provider_t gt_provider_kernels;       /* providers/cuda/: own CUDA instances */
extern const gt_provider_t gt_provider_grouped;       /* providers/cuda/: own grouped (MoE) */
extern const gt_provider_t gt_provider_testonly_cuda; /* providers/cuda/: planted bad candidates */
#endif
extern const gt_provider_t gt_provider_reference; /* fp64 CPU reference (never raced) */
extern const gt_provider_t gt_provider_cpu;       /* tiled CPU instances */
extern const gt_provider_t gt_provider_testonly;  /* planted bad host candidates */

static const gt_provider_t *const k_providers[] = {
#ifdef GT_HAVE_CUDA
    &gt_provider_cublas,
    &gt_provider_cublaslt,
    &gt_provider_kernels,
    &gt_provider_grouped,
    &gt_provider_testonly_cuda,
#endif
    &gt_provider_reference,
    &gt_provider_cpu,
    &gt_provider_testonly,
};
#define N_PROVIDERS (sizeof k_providers / sizeof k_providers[0])

/* Stand-ins for the CUDA providers in a build without them: their names and kernel-identity
 * members only (pure C, cuda/gt_cuda_kernel_names.c), so DB rows and traces from a GPU host are
 * judged the same here. They are not in the table: count, at, find and baseline never see them,
 * only the kernel-identity queries below. A CUDA provider whose kernels verify must recognise
 * adds its line here too. */
static const gt_provider_t *const k_standins[] = {
#ifndef GT_HAVE_CUDA
    &(const gt_provider_t){.api_version = GT_PROVIDER_API_VERSION,
                           .name = "cublas",
                           .description = "stand-in: kernel identity only",
                           .backend = GT_BACKEND_CUDA,
                           .row_kernels = gt_cublas_row_kernels,
                           .owns_kernel = gt_cublas_owns_kernel,
                           .same_kernel = gt_cublas_same_kernel},
    &(const gt_provider_t){.api_version = GT_PROVIDER_API_VERSION,
                           .name = "cublaslt",
                           .description = "stand-in: kernel identity only",
                           .backend = GT_BACKEND_CUDA,
                           .row_kernels = gt_cublas_row_kernels,
                           .owns_kernel = gt_cublas_owns_kernel,
                           .same_kernel = gt_cublas_same_kernel},
    &(const gt_provider_t){.api_version = GT_PROVIDER_API_VERSION,
                           .name = "kernels",
                           .description = "stand-in: kernel identity only",
                           .backend = GT_BACKEND_CUDA,
                           .row_kernels = gt_own_row_kernels,
                           .owns_kernel = gt_own_owns_kernel},
    &(const gt_provider_t){.api_version = GT_PROVIDER_API_VERSION,
                           .name = "grouped",
                           .description = "stand-in: kernel identity only",
                           .backend = GT_BACKEND_CUDA,
                           .row_kernels = gt_grouped_row_kernels,
                           .owns_kernel = gt_grouped_owns_kernel},
#endif
    NULL,
};

/* init() results, computed once per provider. The message is kept so every later caller sees why
 * a provider is unavailable, not only the first. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int done;
  gt_status_t status;
  char msg[256];
} g_init[N_PROVIDERS];

size_t gt_provider_count(void) { return N_PROVIDERS; }

const gt_provider_t *gt_provider_at(size_t i) { return i < N_PROVIDERS ? k_providers[i] : NULL; }

const gt_provider_t *gt_provider_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < N_PROVIDERS; i++)
    if (strcmp(k_providers[i]->name, name) == 0) return k_providers[i];
  return NULL;
}

static gt_status_t run_init(const gt_provider_t *p) {
  if (p->api_version != GT_PROVIDER_API_VERSION)
    return gt_err_set(GT_ERR_INTERNAL, "provider %s: api version %d, expected %d", p->name,
                      p->api_version, GT_PROVIDER_API_VERSION);
  return p->init ? p->init() : GT_OK;
}

gt_status_t gt_provider_ready(const gt_provider_t *p) {
  if (!p) return gt_err_set(GT_ERR_USAGE, "gt_provider_ready: no provider");
  size_t i;
  for (i = 0; i < N_PROVIDERS && k_providers[i] != p; i++) {
  }
  /* A provider not in the table (a test double) is initialised on every call. */
  if (i == N_PROVIDERS) return run_init(p);
  /* Held across init() so two threads never initialise one provider concurrently; init runs
   * once per process, so the serialisation costs nothing in steady state. */
  pthread_mutex_lock(&g_lock);
  if (!g_init[i].done) {
    gt_err_clear();
    g_init[i].status = run_init(p);
    snprintf(g_init[i].msg, sizeof g_init[i].msg, "%s", gt_err_msg());
    g_init[i].done = 1;
  }
  gt_status_t s = g_init[i].status;
  char msg[sizeof g_init[i].msg];
  memcpy(msg, g_init[i].msg, sizeof msg);
  pthread_mutex_unlock(&g_lock);
  if (s != GT_OK) gt_err_set(s, "%s", msg);
  return s;
}

const gt_provider_t *gt_provider_baseline(gt_backend_t b, gt_entry_t e, const gt_problem_t *p,
                                          char *why, size_t cap) {
  char dummy[1];
  if (!why) {
    why = dummy;
    cap = sizeof dummy;
  }
  why[0] = '\0';
  for (size_t i = 0; i < N_PROVIDERS; i++) {
    const gt_provider_t *pr = k_providers[i];
    if (pr->backend != b || !pr->baseline_for || !pr->baseline_for(e, p)) continue;
    if (gt_provider_ready(pr) != GT_OK) {
      snprintf(why, cap, "%s (today's path for %s calls) is unavailable: %s", pr->name,
               gt_entry_name(e), gt_err_msg());
      return NULL;
    }
    return pr;
  }
  char epi[48] = "";
  if (p && p->epilogue != GT_EPI_NONE)
    snprintf(epi, sizeof epi, " with a %s epilogue", gt_epilogue_name(p->epilogue));
  snprintf(why, cap, "no provider stands for %s calls%s on %s in this build", gt_entry_name(e),
           epi, b == GT_BACKEND_CUDA ? "cuda" : "host");
  return NULL;
}

gt_status_t gt_provider_candidate_from_name(const char *provider, const char *name,
                                            const gt_problem_t *p, gt_candidate_t *out) {
  if (!name || !*name) return gt_err_set(GT_ERR_USAGE, "empty instance name");
  if (provider && *provider) {
    const gt_provider_t *pr = gt_provider_find(provider);
    if (!pr) return gt_err_set(GT_ERR_NOT_FOUND, "no provider named '%s' in this build", provider);
    gt_status_t s = gt_provider_ready(pr);
    if (s != GT_OK) {
      char why[256];
      snprintf(why, sizeof why, "%s", gt_err_msg());
      return gt_err_set(s, "provider %s is unavailable: %s", provider, why);
    }
    if (!pr->from_name)
      return gt_err_set(GT_ERR_UNSUPPORTED, "provider %s cannot rebuild candidates by name",
                        provider);
    return pr->from_name(name, p, out);
  }
  /* No provider given: the first ready provider that recognises the name owns it. */
  for (size_t i = 0; i < N_PROVIDERS; i++) {
    const gt_provider_t *pr = k_providers[i];
    if (!pr->from_name || gt_provider_ready(pr) != GT_OK) continue;
    gt_status_t s = pr->from_name(name, p, out);
    if (s != GT_ERR_NOT_FOUND) return s;
  }
  return gt_err_set(GT_ERR_NOT_FOUND, "no available provider recognises instance '%s'", name);
}

/* ---- library dependency ------------------------------------------------------------------------ */

const char *gt_provider_lib_loaded(const gt_provider_t *p) {
  const char *lib = p && p->lib_version ? p->lib_version() : NULL;
  return lib && *lib ? lib : "-";
}

bool gt_provider_lib_applies(const gt_provider_t *p, const char *row_lib, char *why, size_t cap) {
  if (why && cap) why[0] = '\0';
  if (!row_lib || !*row_lib || strcmp(row_lib, "-") == 0) return true;
  const char *lib = gt_provider_lib_loaded(p);
  if (strcmp(row_lib, lib) == 0) return true;
  if (!why || !cap) return false;
  /* "cublaslt=130100" vs "cublaslt=130400": name the library once, like a key field. */
  const char *eq = strchr(row_lib, '='), *eq2 = strchr(lib, '=');
  if (eq && eq2 && eq - row_lib == eq2 - lib && strncmp(row_lib, lib, (size_t)(eq - row_lib)) == 0)
    snprintf(why, cap, "%.*s: %s vs %s", (int)(eq - row_lib), row_lib, eq + 1, eq2 + 1);
  else
    snprintf(why, cap, "library: %s vs %s", row_lib, lib);
  return false;
}

/* ---- kernel identity --------------------------------------------------------------------------- */

/* Every provider whose kernels this build can name: the table, then the stand-ins (a stand-in
 * for a name the table has is never consulted). NULL past the end. */
static const gt_provider_t *known_at(size_t i) {
  if (i < N_PROVIDERS) return k_providers[i];
  for (size_t j = 0; k_standins[j]; j++) {
    if (gt_provider_find(k_standins[j]->name)) continue;
    if (i-- == N_PROVIDERS) return k_standins[j];
  }
  return NULL;
}

static const gt_provider_t *known_find(const char *name) {
  const gt_provider_t *p;
  for (size_t i = 0; name && (p = known_at(i)); i++)
    if (strcmp(p->name, name) == 0) return p;
  return NULL;
}

bool gt_provider_row_kernels(const char *provider, const char *instance, const gt_problem_t *key,
                             gt_row_kernels_t *out) {
  memset(out, 0, sizeof *out);
  const gt_provider_t *p = known_find(provider);
  if (!p || !p->row_kernels || !instance) return false;
  if (p->row_kernels(instance, key, out)) return true;
  memset(out, 0, sizeof *out);
  return false;
}

bool gt_provider_owns_kernel(const char *provider, const char *kernel) {
  if (!kernel) return false;
  if (provider) {
    const gt_provider_t *p = known_find(provider);
    return p && p->owns_kernel && p->owns_kernel(kernel);
  }
  const gt_provider_t *p;
  for (size_t i = 0; (p = known_at(i)); i++)
    if (p->owns_kernel && p->owns_kernel(kernel)) return true;
  return false;
}

bool gt_provider_same_kernel(const char *expected, const char *ran) {
  if (strcmp(expected, ran) == 0) return true;
  const gt_provider_t *p;
  for (size_t i = 0; (p = known_at(i)); i++)
    if (p->same_kernel && p->same_kernel(expected, ran)) return true;
  return false;
}
