/* Where the runtime libraries (preload shim, tracer) live relative to the gemmtune binary. */
#ifndef GT_RUNTIME_PATHS_H
#define GT_RUNTIME_PATHS_H
#include <stddef.h>
/* Path of runtime library `name`: env_override's value if set, else the first readable of
 * <exe dir>/{., src/runtime, ../lib, ../lib64}/name. NULL when not found. */
const char *gt_runtime_find_lib(const char *name, const char *env_override, char *buf, size_t cap);
#endif
