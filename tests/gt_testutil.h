/* Helpers shared by the test programs: temp directories, file I/O, the GPU-skip convention, a
 * common problem key. */
#ifndef GT_TESTUTIL_H
#define GT_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/gt_problem.h"

/* Exit code ctest reads as "skipped" (SKIP_RETURN_CODE). */
#define GT_TEST_SKIP 77

/* A fresh temp directory (mkdtemp under $TMPDIR or /tmp); path is static per call site use. */
const char *gt_test_tmpdir(void);
/* Join dir and name into a static rotating buffer. */
const char *gt_test_path(const char *dir, const char *name);
/* Write text to path (aborts the test on failure). */
void gt_test_write_file(const char *path, const char *text);
/* Read a whole file into a malloc'ed NUL-terminated buffer (NULL if missing). */
char *gt_test_read_file(const char *path);
/* The source tree root (GT_TEST_SRCDIR, set by ctest). */
const char *gt_test_srcdir(void);
/* The key of a bf16 nn.Linear call (tokens x in -> out) on an H200 (sm_90, 132 SMs). */
gt_problem_t gt_test_h200_linear(int64_t tokens, int64_t out, int64_t in);

#endif
