/* What every fuzz target shares: the input as a NUL-terminated string, a quiet stderr, and a
 * check that turns a broken invariant into a crash libFuzzer reports. */
#ifndef GT_FUZZ_COMMON_H
#define GT_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A parser's invariant that must hold for every input it accepts. */
#define FUZZ_CHECK(cond)                                                                  \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stdout, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

/* The input as a C string (malloc'ed): bytes after an embedded NUL are dropped, as every text
 * parser behind a C string would see them. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* CLI helpers print their errors; a fuzzer printing one line per execution is mostly writing.
 * Only the stdio stream is replaced: libFuzzer kept its own copy of the old one and the
 * sanitizers write to descriptor 2, so their reports still show. */
static inline void fuzz_quiet_stderr(void) {
  FILE *null = fopen("/dev/null", "w");
  if (null) stderr = null;
}

#endif
