/* The preload shim's view of the cuBLAS the process already loaded: where the real entry points
 * are, the handle and descriptor queries the shim needs, and the address range of libcublas's
 * code. The only file that names the cuBLAS libraries. It never loads a library: a second copy of
 * cuBLAS next to the application's would be the shim changing what the application runs. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "preload_internal.h"

const char *const gt_preload_lib_names[2] = {"libcublas.so.13", "libcublasLt.so.13"};

/* The library the application already loaded. RTLD_NOLOAD never maps a second copy: a process
 * that calls cublasGemmEx has libcublas loaded, so this only fails in odd setups, and then the
 * next definition in lookup order (RTLD_NEXT) is used. */
void *gt_preload_real_symbol(int lib, const char *sym, void *self) {
  void *fn = NULL;
  void *h = dlopen(gt_preload_lib_names[lib], RTLD_NOW | RTLD_NOLOAD);
  if (h) {
    fn = dlvsym(h, sym, gt_preload_lib_names[lib]);
    if (!fn) fn = dlsym(h, sym);
    dlclose(h); /* drops the reference NOLOAD added; the library stays loaded */
  }
  if (!fn) fn = dlsym(RTLD_NEXT, sym);
  if (fn == self) fn = NULL; /* never call ourselves */
  return fn;
}

bool gt_preload_lib_loaded(int lib) {
  void *h = dlopen(gt_preload_lib_names[lib], RTLD_NOW | RTLD_NOLOAD);
  const bool loaded = h != NULL;
  if (h) dlclose(h);
  return loaded;
}

/* Which cuBLAS and cuBLASLt the process loaded, as '#' lines of the capture file (the shapes
 * reader skips them; `tune` reads them to load the same copies):
 *   #gemmtune-capture cublaslt=130100 path=/abs/libcublasLt.so.13
 * The version is spelled as the providers spell a row's `lib` (cublas=MMmmpp, cublaslt=N), so
 * tune can compare. Only libraries already loaded are named; nothing is loaded here. */
size_t gt_preload_lib_lines(char *buf, size_t cap) {
  typedef size_t (*lt_version_fn)(void);
  typedef cublasStatus_t (*property_fn)(libraryPropertyType, int *);
  size_t o = 0;
  buf[0] = '\0';
  for (int lib = 0; lib < 2; lib++) {
    void *h = dlopen(gt_preload_lib_names[lib], RTLD_NOW | RTLD_NOLOAD);
    if (!h) continue;
    struct link_map *lm = NULL;
    const char *path = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name ? lm->l_name : "";
    char version[48] = "";
    if (lib == GT_PRELOAD_LIB_CUBLASLT) {
      lt_version_fn v = (lt_version_fn)gt_preload_real_symbol(lib, "cublasLtGetVersion", NULL);
      if (v) snprintf(version, sizeof version, "cublaslt=%zu", v());
    } else {
      property_fn p = (property_fn)gt_preload_real_symbol(lib, "cublasGetProperty", NULL);
      int ma = 0, mi = 0, pa = 0;
      if (p && p(MAJOR_VERSION, &ma) == CUBLAS_STATUS_SUCCESS &&
          p(MINOR_VERSION, &mi) == CUBLAS_STATUS_SUCCESS && p(PATCH_LEVEL, &pa) == CUBLAS_STATUS_SUCCESS)
        snprintf(version, sizeof version, "cublas=%d", ma * 10000 + mi * 100 + pa);
    }
    if (version[0] && path[0] && o < cap)
      o += (size_t)snprintf(buf + o, cap - o, "#gemmtune-capture %s path=%s\n", version, path);
    dlclose(h);
  }
  return o < cap ? o : cap - 1;
}

cublasStatus_t gt_preload_missing_real(const char *name) {
  static _Atomic int said;
  if (!atomic_exchange(&said, 1))
    gt_preload_say(
        "cannot find the real %s in this process (is cuBLAS 13 loaded?); failing the call", name);
  return CUBLAS_STATUS_NOT_INITIALIZED;
}

/* ---- the queries --------------------------------------------------------------------------- */

/* The table readers see is an immutable snapshot published through an atomic pointer: a refill
 * fills a copy and publishes it whole (release; readers acquire), so no thread ever reads a
 * pointer another thread is writing. Snapshots are never freed or changed once published (a
 * reader may hold one for the rest of its call); a refill publishes only when it resolved
 * something new, and there are only so many things to resolve (five queries and the range), so
 * a fixed pool suffices. */
#define API_SNAPSHOTS 8
static gt_preload_api_t g_api_pool[API_SNAPSHOTS];
static int g_api_used; /* snapshots taken from the pool, under g_api_mu */
static _Atomic(const gt_preload_api_t *) g_api;
static pthread_once_t g_api_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_api_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct range_query {
  uintptr_t addr, lo, hi;
} range_query_t;

static int find_range(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  range_query_t *q = data;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (q->addr >= lo && q->addr < hi) {
    q->lo = lo;
    q->hi = hi;
    return 1;
  }
  return 0;
}

/* Fill whatever is still missing in a: an application may load cuBLASLt first and cuBLAS later. */
static void api_fill(gt_preload_api_t *a) {
  if (!a->GetStream)
    a->GetStream = (gt_preload_get_stream_fn)gt_preload_real_symbol(
        GT_PRELOAD_LIB_CUBLAS, "cublasGetStream_v2", NULL);
  if (!a->GetPointerMode)
    a->GetPointerMode = (gt_preload_get_pointer_mode_fn)gt_preload_real_symbol(
        GT_PRELOAD_LIB_CUBLAS, "cublasGetPointerMode_v2", NULL);
  if (!a->GetMathMode)
    a->GetMathMode = (gt_preload_get_math_mode_fn)gt_preload_real_symbol(
        GT_PRELOAD_LIB_CUBLAS, "cublasGetMathMode", NULL);
  if (!a->LtDescGet)
    a->LtDescGet = (gt_preload_lt_desc_get_fn)gt_preload_real_symbol(
        GT_PRELOAD_LIB_CUBLASLT, "cublasLtMatmulDescGetAttribute", NULL);
  if (!a->LtLayoutGet)
    a->LtLayoutGet = (gt_preload_lt_layout_get_fn)gt_preload_real_symbol(
        GT_PRELOAD_LIB_CUBLASLT, "cublasLtMatrixLayoutGetAttribute", NULL);
  /* cuBLAS calls cublasLtMatmul internally, also from entry points the shim does not define
   * (cublasGemmBatchedEx, the _64 forms...). Those calls are cuBLAS's business: knowing where
   * libcublas is mapped lets cublasLtMatmul recognise them by their return address. */
  if (a->GetStream && !a->cublas_hi) {
    range_query_t q = {.addr = (uintptr_t)a->GetStream};
    if (dl_iterate_phdr(find_range, &q)) {
      a->cublas_lo = q.lo;
      a->cublas_hi = q.hi;
    }
  }
}

/* Under g_api_mu: a copy of the current snapshot with what is missing filled, published when it
 * differs (or when there is none yet). With the pool spent the current snapshot stays. */
static const gt_preload_api_t *api_refresh_locked(void) {
  const gt_preload_api_t *cur = atomic_load_explicit(&g_api, memory_order_acquire);
  if (g_api_used == API_SNAPSHOTS) return cur;
  gt_preload_api_t *next = &g_api_pool[g_api_used];
  if (cur) *next = *cur;
  api_fill(next);
  if (cur && memcmp(next, cur, sizeof *next) == 0) return cur;
  g_api_used++;
  atomic_store_explicit(&g_api, next, memory_order_release);
  return next;
}

static void api_resolve(void) {
  pthread_mutex_lock(&g_api_mu);
  (void)api_refresh_locked();
  pthread_mutex_unlock(&g_api_mu);
}

const gt_preload_api_t *gt_preload_api(void) {
  pthread_once(&g_api_once, api_resolve);
  return atomic_load_explicit(&g_api, memory_order_acquire);
}

const gt_preload_api_t *gt_preload_api_refill(void) {
  pthread_once(&g_api_once, api_resolve);
  pthread_mutex_lock(&g_api_mu);
  const gt_preload_api_t *a = api_refresh_locked();
  pthread_mutex_unlock(&g_api_mu);
  return a;
}
