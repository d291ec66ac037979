/* The one table of gemmtune's environment variables, and the check that finds the ones a user
 * meant for gemmtune but misspelt. A variable with a plausible wrong name (GEMMTUNE_DB_FILE,
 * GEMMTUNE_DBS, GEMTUNE_DB) is accepted by the shell and ignored by everything; the shim warns
 * about each at its start and the CLI at every command, naming the nearest known variable. A new
 * variable is added here (and to the README's table, which a test compares with this one); the
 * code that reads it still calls getenv with its name. Pure C, no allocation: the shim runs the
 * check inside someone else's process. */
#ifndef GT_ENVVARS_H
#define GT_ENVVARS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Who reads a variable. */
enum {
  GT_ENV_SHIM = 1 << 0,     /* libgemmtune_preload.so, inside the application */
  GT_ENV_TRACER = 1 << 1,   /* libgemmtune_trace.so, inside the application */
  GT_ENV_DISPATCH = 1 << 2, /* libgemmtune, the dispatch API */
  GT_ENV_CLI = 1 << 3,      /* the gemmtune commands */
  GT_ENV_LAYERS = 1 << 4,   /* the layers every tuning process links: harness, providers, loader */
  GT_ENV_PYTHON = 1 << 5    /* the Python package */
};

typedef struct gt_env_var {
  const char *name;
  unsigned readers; /* GT_ENV_* */
  const char *what; /* one line */
} gt_env_var_t;

/* The table, in README order. */
size_t gt_env_count(void);
const gt_env_var_t *gt_env_at(size_t i);
/* The variable called exactly `name` (case matters, as it does to getenv), or NULL. */
const gt_env_var_t *gt_env_find(const char *name);

/* Whether a variable name looks meant for gemmtune: it starts with GEMMTUNE_ in any case, or its
 * first word is within two edits of GEMMTUNE (GEMTUNE_DB, GEMMTUNEDB, GEMMTUNNE_LOG), or it
 * starts GEMM_TUNE_. Words further off (GEMM_, TUNE_) belong to other tools and are left alone.
 * name may be a whole "NAME=value" environment entry. */
bool gt_env_looks_ours(const char *name);
/* The known variable nearest to name (a whole entry is fine): its first word read as GEMMTUNE and
 * its case ignored, an exact match first, then a known name it extends or that extends it
 * (GEMMTUNE_DB_FILE and GEMMTUNE_DBS -> GEMMTUNE_DB), then the fewest edits (a swap of two
 * neighbours counts one). Never NULL. */
const gt_env_var_t *gt_env_nearest(const char *name);

/* Call fn once for every variable of envp (NULL-terminated "NAME=value" entries, e.g. environ)
 * that looks meant for gemmtune but is not in the table, with the nearest known one: a name given
 * twice is reported once, names are cut at 127 characters, at most 32 are reported. Returns how
 * many were. Safe in a host process: no allocation, no lock, nothing but reading envp. */
typedef void (*gt_env_unknown_fn)(void *ctx, const char *name, const gt_env_var_t *nearest);
size_t gt_env_check(char *const *envp, gt_env_unknown_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
