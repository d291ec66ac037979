/* The provider registry: the one table listing every provider this build has, in the order
 * `gemmtune list` prints them and the search driver enumerates them. Adding a provider means
 * adding one line here; nothing else in the framework names one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gt_provider.h"

#ifdef GT_HAVE_CUDA
extern const gt_provider_t gt_provider_cublas;        /* providers/cuda/: the baseline path */
extern const gt_provider_t gt_provider_cublaslt;      /* providers/cuda/: heuristic + full space */
extern const gt_provider_t gt_provider_kernels;       /* providers/cuda/: own CUDA instances */
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
    &gt_provider_testonly_cuda,
#endif
    &gt_provider_reference,
    &gt_provider_cpu,
    &gt_provider_testonly,
};
#define N_PROVIDERS (sizeof k_providers / sizeof k_providers[0])

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

const gt_provider_t *gt_provider_baseline(gt_backend_t b, gt_entry_t e, char *why, size_t cap) {
  char dummy[1];
  if (!why) {
    why = dummy;
    cap = sizeof dummy;
  }
  why[0] = '\0';
  for (size_t i = 0; i < N_PROVIDERS; i++) {
    const gt_provider_t *p = k_providers[i];
    if (p->backend != b || !p->baseline_for || !p->baseline_for(e)) continue;
    if (gt_provider_ready(p) != GT_OK) {
      snprintf(why, cap, "%s (today's path for %s calls) is unavailable: %s", p->name,
               gt_entry_name(e), gt_err_msg());
      return NULL;
    }
    return p;
  }
  snprintf(why, cap, "no provider stands for %s calls on %s in this build", gt_entry_name(e),
           b == GT_BACKEND_CUDA ? "cuda" : "host");
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
