/* The provider interface: every source of GEMM candidates (CPU instances, cuBLAS, cuBLASLt,
 * gemmtune's own CUDA kernels) is one gt_provider_t, a struct of function pointers, listed in the
 * single table in registry.c. The search driver, harness, DB and runtime know candidates only
 * through this interface; none of them names a kernel.
 *
 * Life of a candidate: enumerate() lists candidates for a problem (excluded ones stay in the list
 * with a one-line reason) -> prepare() builds what running it needs (plans, descriptors,
 * function handles) -> run() launches it on operands, as often as asked, on the given stream
 * (asynchronously on GPU backends; run must be safe under CUDA graph capture: no allocation, no
 * synchronization) -> release(). from_name() rebuilds a candidate from its instance name, which
 * is how a DB row becomes runnable again. */
#ifndef GT_PROVIDER_H
#define GT_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gt_entry.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_PROVIDER_API_VERSION 1
#define GT_NAME_MAX 192
#define GT_REASON_MAX 192
#define GT_CAND_BLOB 256

typedef enum gt_backend {
  GT_BACKEND_HOST = 0, /* operands are host pointers, run is synchronous */
  GT_BACKEND_CUDA = 1  /* operands are device pointers, run is enqueued on a cudaStream_t */
} gt_backend_t;

struct gt_provider;

typedef struct gt_candidate {
  const struct gt_provider *provider;
  char name[GT_NAME_MAX];     /* instance name: parses back to the parameters (from_name) */
  bool excluded;              /* listed for --explain, never raced */
  char reason[GT_REASON_MAX]; /* why excluded (one line) */
  bool is_baseline;           /* the path applications use today */
  bool splitk;                /* candidate splits K (recorded in DB rows) */
  unsigned char blob[GT_CAND_BLOB]; /* provider-private parameters (POD, copyable) */
} gt_candidate_t;

/* A growable list of candidates. */
typedef struct gt_cand_list {
  gt_candidate_t *v;
  size_t n, cap;
} gt_cand_list_t;

/* Append a candidate (copied). Returns GT_ERR_NOMEM on allocation failure. */
gt_status_t gt_cand_list_push(gt_cand_list_t *l, const gt_candidate_t *c);
/* Append an excluded candidate with a printf-style reason. */
gt_status_t gt_cand_list_exclude(gt_cand_list_t *l, const struct gt_provider *prov,
                                 const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void gt_cand_list_free(gt_cand_list_t *l);
size_t gt_cand_list_count_active(const gt_cand_list_t *l);
/* Reorder entries [from, n) so that every prefix of the range samples all of it evenly (van der
 * Corput order: the middle, the quarters, the eighths, ...). A provider whose full space is
 * listed by nested loops over its parameters calls it on that space, so a search that widens into
 * it step by step (gt_search.h) tries every part of it early, not one parameter's corner first.
 * The entries are the same; GT_ERR_NOMEM leaves the list unchanged. */
gt_status_t gt_cand_list_spread(gt_cand_list_t *l, size_t from);

/* Operand pointers of one GEMM call, in the problem's column-major terms. alpha and beta point
 * to host scalars of the problem's scale_type. workspace may be NULL (ws_size 0). The fp8
 * scales are f32 arrays on the operands' side (device memory for CUDA providers, read by the
 * kernel when it runs, as cuBLASLt reads them): scale_a/scale_b laid out as the key's
 * scale_a/scale_b mode says (gt_scale_mode_shape; NULL for mode none), scale_d one factor
 * (key's scale_d), amax_d one f32 the call writes max|D| to before D's scale (key's amax_d). A grouped_mm call also has offs (int32 cumulative row ends per group, device memory) and rows, the routed
 * rows of this call (the key's n is their bucket; 0 = the key's n); other ops leave them 0. */
typedef struct gt_operands {
  const void *A, *B, *C;
  void *D;
  const void *bias;
  const void *alpha, *beta;
  void *workspace;
  size_t ws_size;
  const float *scale_a, *scale_b, *scale_d;
  float *amax_d;
  const void *offs;
  int64_t rows;
} gt_operands_t;

/* What a provider's enumerate() may want to know beyond the problem. */
typedef struct gt_enum_opts {
  int max_candidates; /* cap on non-excluded candidates (0 = provider default) */
  bool exhaustive;    /* providers with a huge space (cuBLASLt) enumerate it all */
  int device;         /* CUDA device ordinal */
  gt_entry_t entry;   /* the entry point the shape's calls came through: the provider whose
                         baseline_for(entry, p) is true marks its baseline candidate */
  uint64_t workspace; /* bytes of workspace the application gives such a call (0 unknown): the
                         baseline is run with what the application offers, not more */
} gt_enum_opts_t;

/* The kernels one call of a DB row's candidate launches, as its provider states them, for
 * `verify` to find in a kernel trace. */
#define GT_ROW_KERNELS_MAX 4
typedef struct gt_row_kernels {
  bool any; /* the row runs some of this provider's kernels (owns_kernel), but which ones the
               library picks at run time (cuBLAS, cuBLASLt): they are found by running the row's
               candidate under the tracer; sym is then empty */
  int n;
  char sym[GT_ROW_KERNELS_MAX][GT_NAME_MAX]; /* exact kernel symbols that must appear */
} gt_row_kernels_t;

typedef struct gt_provider {
  int api_version;  /* GT_PROVIDER_API_VERSION */
  const char *name; /* "cpu", "cublas", ... (DB 'provider' column) */
  const char *description;
  gt_backend_t backend;
  /* (optional) one-time initialisation; a provider that cannot work here (no GPU, library
   * missing) returns an error and the message says why; it is then listed as unavailable. */
  gt_status_t (*init)(void);
  /* (optional) whether this provider's baseline candidate (is_baseline) stands for today's path
   * of problem p's calls made through entry point e on its backend: the search driver races
   * every shape against the candidate of the provider that answers true (gt_provider_baseline).
   * p lets a provider answer for the calls only it can issue (a bias epilogue exists only in
   * cublasLtMatmul, so a biased key that does not say where it came from is an Lt call). */
  bool (*baseline_for)(gt_entry_t e, const gt_problem_t *p);
  /* (optional) dependency string recorded in DB rows: e.g. "cublaslt=130100". NULL or "-" when
   * the provider's choices don't depend on a library version. */
  const char *(*lib_version)(void);
  /* Append this provider's candidates for p to out (excluded ones with reasons). */
  gt_status_t (*enumerate)(const gt_problem_t *p, const gt_enum_opts_t *o, gt_cand_list_t *out);
  /* Rebuild a candidate from an instance name, for problem p. GT_ERR_NOT_FOUND if the name is
   * not one of this provider's, GT_ERR_UNSUPPORTED if it no longer applies to p. */
  gt_status_t (*from_name)(const char *name, const gt_problem_t *p, gt_candidate_t *out);
  /* Build the per-problem state to run c (may allocate host memory; called under graph capture
   * only when capture_safe says so). *ws_needed receives the workspace bytes run() will want (0 if none). */
  gt_status_t (*prepare)(const gt_candidate_t *c, const gt_problem_t *p, void **state,
                         size_t *ws_needed);
  /* Launch once. stream is a cudaStream_t for CUDA providers, NULL for host providers. */
  gt_status_t (*run)(void *state, const gt_operands_t *ops, void *stream);
  void (*release)(void *state);
  /* Kernel identity: what a kernel trace shows of this provider's candidates. These members are
   * pure C (no library, no device: a trace from a GPU host is judged anywhere) and come last, so
   * tables initialised positionally (C++) may leave them out. */
  /* (optional) the kernels one call of a row with this instance (for key; may be NULL) launches.
   * False when the provider cannot say (verify then cannot check the row's kernels). */
  bool (*row_kernels)(const char *instance, const gt_problem_t *key, gt_row_kernels_t *out);
  /* (optional) whether a traced kernel name is one of this provider's GEMM kernels. */
  bool (*owns_kernel)(const char *kernel);
  /* (optional) whether traced kernel `ran` is this provider's kernel `expected` although the
   * names differ, because a library names a kernel by facts of the call that are not part of the
   * tuned choice (cuBLAS: how the epilogue treats C). */
  bool (*same_kernel)(const char *expected, const char *ran);
  /* (optional) whether from_name() and prepare() may be called now, on this thread, while a
   * stream of the process is being captured into a CUDA graph (the caller switches this thread to
   * relaxed capture mode first): they would then make no device allocation, no synchronisation
   * and no stream operation, nothing that could invalidate the capture. NULL: never. The runtime
   * asks before deciding a key first seen during capture (src/runtime/README.md). Last, so tables
   * initialised positionally (C++) leave it NULL. */
  bool (*capture_safe)(void);
} gt_provider_t;

/* The registry (registry.c): every provider this build has, in a fixed order. */
size_t gt_provider_count(void);
const gt_provider_t *gt_provider_at(size_t i);
const gt_provider_t *gt_provider_find(const char *name);
/* Initialise once (idempotent); returns the provider's init status, message in gt_err_msg. */
gt_status_t gt_provider_ready(const gt_provider_t *p);

/* The provider that stands for today's path of p's calls through entry e on backend b (the first
 * in the table whose baseline_for(e, p) is true; GT_ENTRY_DEFAULT means the backend's usual
 * entry for such a problem).
 * NULL when there is none or it is not ready here, with why (may be NULL) saying which, in that
 * provider's own words: "no provider stands for cublasLtMatmul calls on cuda in this build",
 * "cublas (today's path for gemmex calls) is unavailable: no CUDA device". */
const gt_provider_t *gt_provider_baseline(gt_backend_t b, gt_entry_t e, const gt_problem_t *p,
                                          char *why, size_t cap);

/* Whether a DB row's library dependency (row_lib as rows spell it: "cublaslt=130100"; "-" or
 * empty for none) holds for p as this process loads it (lib_version): a row without one applies
 * everywhere, a row with one only where p reports exactly that version (cuBLASLt algo ids are not
 * portable across versions). On false, why (may be NULL) names the difference, the row's value
 * first, as key differences are named: "cublaslt: 130100 vs 130400" when both name the same
 * library, otherwise "library: cublaslt=1 vs -". */
bool gt_provider_lib_applies(const gt_provider_t *p, const char *row_lib, char *why, size_t cap);
/* p's dependency string as this process loads it (lib_version), "-" when it reports none. */
const char *gt_provider_lib_loaded(const gt_provider_t *p);

/* ---- kernel identity (pure C, every build) ------------------------------------------------------
 * Asked of every provider this build has and, where the CUDA providers are not built, of their
 * stand-ins (registry.c): names and identity members only, never listed, found or run, so a DB
 * and a trace recorded on a GPU host are judged the same on any host. */

/* The kernels one call of `provider`'s row with this instance (for key, may be NULL) launches
 * (the provider's row_kernels). False, with out empty, when the provider is unknown or cannot say. */
bool gt_provider_row_kernels(const char *provider, const char *instance, const gt_problem_t *key,
                             gt_row_kernels_t *out);
/* Whether a traced kernel is one of `provider`'s GEMM kernels (owns_kernel); provider NULL: of
 * any provider's. */
bool gt_provider_owns_kernel(const char *provider, const char *kernel);
/* Whether traced kernel `ran` is kernel `expected`: the same name, or different names a provider
 * calls the same kernel (same_kernel). */
bool gt_provider_same_kernel(const char *expected, const char *ran);

/* Find which provider owns an instance name and rebuild the candidate. */
gt_status_t gt_provider_candidate_from_name(const char *provider, const char *name,
                                            const gt_problem_t *p, gt_candidate_t *out);

#ifdef __cplusplus
}
#endif
#endif
