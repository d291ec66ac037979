/* Where the runtime libraries (preload shim, tracer) live relative to the gemmtune binary. */
#ifndef GT_RUNTIME_PATHS_H
#define GT_RUNTIME_PATHS_H
#include <stddef.h>
/* Path of runtime library `name`: env_override's value if set, else the first readable of
 * <exe dir>/{., src/runtime, ../lib, ../lib64}/name. NULL when not found. */
const char *gt_runtime_find_lib(const char *name, const char *env_override, char *buf, size_t cap);
/* The LD_PRELOAD list that deploys the shim at `shim`: the shim, then the torch bridge
 * (libgemmtune_torchmm.so, which interposes torch's grouped GEMMs and hands them to the shim)
 * when one lies beside it and GEMMTUNE_TORCH_BRIDGE is not 0, then `rest` (may be NULL or empty). Written to buf (truncated to cap,
 * always terminated); returns buf. */
char *gt_runtime_preload_list(const char *shim, const char *rest, char *buf, size_t cap);
#endif
