/* Test helpers: temp dirs, whole-file I/O and a common problem key. */
#define _GNU_SOURCE
#include "gt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gt_test_tmpdir(void) {
  static char buf[8][512];
  static int next;
  char *b = buf[next++ % 8];
  const char *t = getenv("TMPDIR");
  snprintf(b, 512, "%s/gttest.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(b)) {
    perror("mkdtemp");
    abort();
  }
  return b;
}

const char *gt_test_path(const char *dir, const char *name) {
  static char buf[16][1024];
  static int next;
  char *b = buf[next++ % 16];
  snprintf(b, 1024, "%s/%s", dir, name);
  return b;
}

void gt_test_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

char *gt_test_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) abort();
  b[n] = '\0';
  fclose(f);
  return b;
}

const char *gt_test_srcdir(void) {
  const char *s = getenv("GT_TEST_SRCDIR");
  return s && *s ? s : ".";
}

gt_problem_t gt_test_h200_linear(int64_t tokens, int64_t out, int64_t in) {
  gt_problem_t p;
  gt_problem_init(&p);
  gt_problem_set_linear(&p, tokens, out, in);
  snprintf(p.arch, sizeof p.arch, "sm_90");
  p.sm_count = 132;
  return p;
}
