/* Inputs as an attacker or a careless user writes them: sizes whose products overflow, values
 * past a field's range, nan and inf, sums that wrap, files that are FIFOs, devices or huge, locks
 * held elsewhere, non-canonical names, large duplicate-heavy files. Each case says what must
 * happen: a data error naming the field, never a wrapped value or a crash or a hang. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/gt_filelock.h"
#include "core/gt_fileio.h"
#include "core/gt_problem.h"
#include "core/gt_shapes.h"
#include "gt_testutil.h"
#include "providers/cuda/gt_cublaslt_name.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- key text: every field's range, and footprints that do not fit ------------------------ */

typedef struct key_case {
  const char *name;
  const char *key;     /* parsed from gt_problem_init, then fill_lds and validate */
  const char *field;   /* NULL: valid; else the field the error must name */
} key_case_t;

static const key_case_t k_keys[] = {
    {"tight linear", "m=4096,n=16,k=4096,transa=T", NULL},
    {"ldc*(n-1) overflows (issue reproducer)", "m=1,n=5,k=1,ldc=4611686018427387904", "ldc"},
    {"m=n=k=2^32: A overflows", "m=4294967296,n=4294967296,k=4294967296", "lda"},
    {"m=n=k=2^40 (DB reproducer)", "m=1099511627776,n=1099511627776,k=1099511627776", "lda"},
    {"filled stride_a would wrap to 0 (explain reproducer)", "m=4294967296,n=1,k=4294967296,batch=2",
     "lda"},
    {"batch stride product overflows", "m=2,n=2,k=2,batch=4611686018427387904,stride_a=4", "stride_a"},
    {"bytes overflow though elements fit", "m=4611686018427387904,n=1,k=1,a_type=f32", "lda"},
    {"sm_count past INT_MAX is not cut to 2", "m=1,n=1,k=1,sm_count=4294967298", "sm_count"},
    {"m past 64 bits", "m=99999999999999999999,n=1,k=1", "m"},
    {"negative stride", "m=1,n=1,k=1,stride_b=-1", "stride_b"},
    {"stride_c overlap with a large ldc", "m=2,n=4,k=2,batch=2,ldc=4611686018427387904,stride_c=8",
     "ldc"},
    {"largest f8 vector that fits", "m=9223372036854775807,n=1,k=1,a_type=f8e4m3fn,b_type=f8e4m3fn,"
     "c_type=f8e4m3fn,d_type=f8e4m3fn", NULL},
};

static void test_key_limits(void **state) {
  int failed = 0;
  for (size_t i = 0; i < sizeof k_keys / sizeof k_keys[0]; i++) {
    const key_case_t *c = &k_keys[i];
    gt_problem_t p;
    gt_problem_init(&p);
    gt_status_t s = gt_problem_parse_key(c->key, &p);
    if (s == GT_OK) {
      gt_problem_fill_lds(&p);
      s = gt_problem_validate(&p);
    }
    char want[64] = "";
    if (c->field) snprintf(want, sizeof want, "field '%s'", c->field);
    bool ok = c->field ? s == GT_ERR_DATA && strstr(gt_err_msg(), want) : s == GT_OK;
    if (ok && !c->field) ok = gt_problem_operand_elems(&p, 'A') > 0;
    printf("%s %s: %s\n", ok ? "ok  " : "FAIL", c->name, s == GT_OK ? "valid" : gt_err_msg());
    failed += !ok;
  }
  assert_int_equal(failed, 0);
}

/* A wrapped footprint must never reach a caller that sizes buffers from it. */
static void test_operand_elems_never_wraps(void **state) {
  gt_problem_t p;
  gt_problem_init(&p);
  p.m = 1, p.n = 5, p.k = 1, p.ldc = INT64_C(4611686018427387904);
  gt_problem_fill_lds(&p);
  assert_int_equal(gt_problem_operand_elems(&p, 'C'), 0);
  p.ldc = 1;
  assert_int_equal(gt_problem_operand_elems(&p, 'C'), 5);
}

/* ---- shapes files ------------------------------------------------------------------------ */

typedef struct shapes_case {
  const char *name;
  const char *text;
  const char *want; /* substring of the error, NULL: accepted */
} shapes_case_t;

static const shapes_case_t k_shapes[] = {
    {"nan time", "m,n,k,time_us\n4,4,4,nan\n", "column 'time_us'"},
    {"inf share", "m,n,k,share\n4,4,4,inf\n", "column 'share'"},
    {"-inf time", "m,n,k,time_us\n4,4,4,-inf\n", "column 'time_us'"},
    {"calls sum overflows", "m,n,k,calls\n4,4,4,9223372036854775807\n4,4,4,1\n",
     "column 'calls': the sum"},
    {"time sum becomes inf", "m,n,k,time_us\n4,4,4,1e308\n4,4,4,1e308\n", "not finite"},
    {"sm_count cut", "m,n,k,sm_count\n4,4,4,4294967298\n", "field 'sm_count'"},
    {"ldc overflow", "m,n,k,ldc\n1,5,1,4611686018427387904\n", ":2: field 'ldc'"},
    {"2^32 cube", "m,n,k\n4294967296,4294967296,4294967296\n", ":2: field 'lda'"},
    {"duplicates fold", "m,n,k,calls\n4,4,4,2\n4,4,4,3\n", NULL},
};

static void test_shapes_limits(void **state) {
  gt_problem_t d;
  gt_problem_init(&d);
  int failed = 0;
  for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++) {
    const shapes_case_t *c = &k_shapes[i];
    gt_shapes_t sh;
    size_t merged = 0;
    gt_status_t s = gt_shapes_parse("s.csv", c->text, &d, &sh, &merged);
    bool ok = c->want ? s == GT_ERR_DATA && strstr(gt_err_msg(), c->want)
                      : s == GT_OK && sh.n == 1 && sh.v[0].calls == 5 && merged == 1;
    printf("%s %s: %s\n", ok ? "ok  " : "FAIL", c->name, s == GT_OK ? "accepted" : gt_err_msg());
    failed += !ok;
    if (s == GT_OK) gt_shapes_free(&sh);
  }
  assert_int_equal(failed, 0);
}

/* 10,000 rows, every key twice: the duplicate check is a hash lookup, not a scan (it runs in a
 * host process's exit path when capture merges an earlier file). */
static void test_shapes_many_rows_fast(void **state) {
  size_t cap = 64u << 20;
  char *text = malloc(cap);
  assert_non_null(text);
  size_t o = (size_t)snprintf(text, cap, "m,n,k,calls\n");
  for (int r = 0; r < 10000; r++)
    o += (size_t)snprintf(text + o, cap - o, "%d,%d,8,1\n", 8 + r % 5000, 1 + r % 5000 / 100);
  gt_problem_t d;
  gt_problem_init(&d);
  gt_shapes_t sh;
  size_t merged = 0;
  double t0 = now_s();
  assert_int_equal(gt_shapes_parse("big.csv", text, &d, &sh, &merged), GT_OK);
  double took = now_s() - t0;
  printf("10000 rows (%zu distinct, %zu folded) in %.3f s\n", sh.n, merged, took);
  assert_int_equal(sh.n, 5000);
  assert_int_equal(merged, 5000);
  assert_true(took < 1.0);
  gt_shapes_free(&sh);
  free(text);
}

/* ---- files: what a reader inside a host process refuses, and the bounded lock ------------- */

static void test_file_read_refuses(void **state) {
  const char *dir = gt_test_tmpdir();
  char *text;
  size_t len;
  const char *fifo = gt_test_path(dir, "fifo");
  assert_int_equal(mkfifo(fifo, 0600), 0);
  /* A FIFO nobody writes: refused at once, not waited on. */
  double t0 = now_s();
  assert_int_equal(gt_file_read(fifo, GT_FILE_MAX_HOST, GT_FILE_REGULAR_ONLY, &text, &len), GT_ERR_IO);
  assert_non_null(strstr(gt_err_msg(), "not a regular file"));
  assert_true(now_s() - t0 < 1.0);
  assert_int_equal(gt_file_read("/dev/zero", GT_FILE_MAX_HOST, GT_FILE_REGULAR_ONLY, &text, &len),
                   GT_ERR_IO);
  /* Without REGULAR_ONLY (the CLI: pipes allowed) an endless source stops at the cap. */
  assert_int_equal(gt_file_read("/dev/zero", 1 << 20, 0, &text, &len), GT_ERR_DATA);
  assert_int_equal(gt_file_read(dir, GT_FILE_MAX_CLI, 0, &text, &len), GT_ERR_IO);
  assert_non_null(strstr(gt_err_msg(), "is a directory"));
  /* A sparse 1 GB file is refused by its size, without reading it. */
  const char *big = gt_test_path(dir, "big");
  int fd = open(big, O_WRONLY | O_CREAT, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)1 << 30), 0);
  close(fd);
  t0 = now_s();
  assert_int_equal(gt_file_read(big, GT_FILE_MAX_HOST, GT_FILE_REGULAR_ONLY, &text, &len), GT_ERR_DATA);
  assert_true(now_s() - t0 < 1.0);
  /* Missing: GT_ERR_NOT_FOUND (exit 66). */
  assert_int_equal(gt_file_read(gt_test_path(dir, "nope"), 10, 0, &text, &len), GT_ERR_NOT_FOUND);
  /* Exactly at the cap reads; one byte past does not. */
  const char *f = gt_test_path(dir, "ten");
  gt_test_write_file(f, "0123456789");
  assert_int_equal(gt_file_read(f, 10, GT_FILE_REGULAR_ONLY, &text, &len), GT_OK);
  assert_int_equal(len, 10);
  assert_string_equal(text, "0123456789");
  free(text);
  assert_int_equal(gt_file_read(f, 9, GT_FILE_REGULAR_ONLY, &text, &len), GT_ERR_DATA);
  unlink(fifo);
  unlink(big);
  unlink(f);
  rmdir(dir);
}

static void test_lock_is_bounded(void **state) {
  const char *dir = gt_test_tmpdir();
  const char *db = gt_test_path(dir, "x.db");
  int held = open(dir, O_RDONLY | O_DIRECTORY);
  assert_true(held >= 0);
  assert_int_equal(flock(held, LOCK_EX), 0); /* another open description: another holder */
  int fd;
  double t0 = now_s();
  assert_int_equal(gt_file_lock_dir(db, 0.3, &fd), GT_ERR_IO);
  double took = now_s() - t0;
  assert_true(took >= 0.25 && took < 3.0);
  assert_non_null(strstr(gt_err_msg(), "another process has held the lock"));
  flock(held, LOCK_UN);
  assert_int_equal(gt_file_lock_dir(db, 0.3, &fd), GT_OK);
  gt_file_unlock_dir(fd);
  close(held);
  rmdir(dir);
}

/* ---- cuBLASLt names: one config, one spelling ---------------------------------------------- */

static void test_cublaslt_noncanonical(void **state) {
  gt_cublaslt_config_t c;
  /* cluster id 2 is a known shape: its only spelling is the dimensions the formatter writes */
  int x, y, z;
  assert_true(gt_cublaslt_cluster_dims(2, &x, &y, &z));
  char canon[128], alias[128];
  gt_cublaslt_config_t cfg = {.algo_id = 3, .splitk = 1, .cluster_id = 2};
  assert_int_equal(gt_cublaslt_name_format(&cfg, canon, sizeof canon), GT_OK);
  assert_int_equal(gt_cublaslt_name_parse(canon, &c), GT_OK);
  snprintf(alias, sizeof alias, "cublaslt_a3_tnone_snone_sk1_r0_sw0_co0_clid2");
  assert_int_equal(gt_cublaslt_name_parse(alias, &c), GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "canonical"));
  assert_non_null(strstr(gt_err_msg(), canon));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_limits),
      cmocka_unit_test(test_operand_elems_never_wraps),
      cmocka_unit_test(test_shapes_limits),
      cmocka_unit_test(test_shapes_many_rows_fast),
      cmocka_unit_test(test_file_read_refuses),
      cmocka_unit_test(test_lock_is_bounded),
      cmocka_unit_test(test_cublaslt_noncanonical),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
