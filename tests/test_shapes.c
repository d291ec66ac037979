/* Shapes files (core/gt_shapes.h) through the shared CSV splitter: a table of files and the shapes
 * they give (count, the mapping of the first) or the error naming file:line. In particular the
 * row-major view reads a quoted layout code ("mk,nk",16,4096,4096), and the unquoted code, which
 * cannot be parsed, is refused with a message that says to quote it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_shapes.h"
#include "gt_testutil.h"

typedef struct shapes_case {
  const char *name;
  const char *text;
  size_t want_n;       /* shapes read (when not an error case) */
  const char *want;    /* substring of the first shape's view, or of the error message */
  bool error;
} shapes_case_t;

static const shapes_case_t k_cases[] = {
    {"nn.Linear view", "model,proj,tokens,out_features,in_features\nm,qkv,16,4096,4096\n", 1,
     "linear tokens=16 out=4096 in=4096 -> TN m=4096 n=16 k=4096", false},
    {"row-major, layout quoted", "layout,M,N,K\n\"mk,nk\",16,4096,4096\n", 1,
     "row-major mk,nk M=16 N=4096 K=4096 -> TN m=4096 n=16 k=4096", false},
    {"row-major, quoted, blanks after commas", "layout, M, N, K\n\"km,kn\", 8, 64, 32\n", 1,
     "row-major km,kn M=8 N=64 K=32 -> NT m=64 n=8 k=32", false},
    {"row-major, layout column last", "M,N,K,layout\n16,4096,4096,\"mk,kn\"\n", 1,
     "row-major mk,kn M=16 N=4096 K=4096 -> NN", false},
    {"row-major, CRLF", "layout,M,N,K\r\n\"mk,nk\",16,4096,4096\r\n\"km,nk\",1,2,3\r\n", 2,
     "row-major mk,nk", false},
    {"quoted label with a comma", "label,tokens,out_features,in_features\n\"a,b\",1,64,64\n", 1,
     "linear tokens=1", false},
    {"row-major, layout unquoted", "layout,M,N,K\nmk,nk,16,4096,4096\n", 0,
     "rm.csv:2: 5 columns, header has 4: a layout code holds a comma, write it quoted (\"mk,nk\")",
     true},
    {"row-major, unquoted, shows this row's code", "M,N,K,layout\n# c\n8,64,32,km,kn\n", 0,
     "rm.csv:3: 5 columns, header has 4: a layout code holds a comma, write it quoted (\"km,kn\")",
     true},
    {"fewer cells than a layout header: no quoting hint", "layout,M,N,K\n\"mk,nk\",16,4096\n", 0,
     "rm.csv:2: 3 columns, header has 4", true},
    {"more cells, no layout column: no quoting hint", "tokens,out_features,in_features\n1,2,3,4\n",
     0, "rm.csv:2: 4 columns, header has 3", true},
    {"unterminated quote names the column", "layout,M,N,K\n\"mk,nk,16,4096,4096\n", 0,
     "rm.csv:2: column 1: unterminated quoted field", true},
    {"text after the closing quote", "layout,M,N,K\n\"mk,nk\"x,16,4096,4096\n", 0,
     "rm.csv:2: column 1: text after the closing quote", true},
    {"unknown layout code", "layout,M,N,K\n\"mk,mk\",16,4096,4096\n", 0,
     "rm.csv:2: column 'layout': unknown layout 'mk,mk'", true},
    {"bad integer names its column", "layout,M,N,K\n\"mk,nk\",x,4096,4096\n", 0,
     "rm.csv:2: column 'M': not an integer: 'x'", true},
    {"truncated last line", "layout,M,N,K\n\"mk,nk\",16,4096,4096", 0,
     "rm.csv:2: truncated last line", true},
};

static bool run_case(const shapes_case_t *c) {
  gt_problem_t defaults = gt_test_h200_linear(1, 64, 64);
  gt_shapes_t sh;
  gt_status_t s = gt_shapes_parse("rm.csv", c->text, &defaults, &sh, NULL);
  bool ok;
  if (c->error)
    ok = s == GT_ERR_DATA && strstr(gt_err_msg(), c->want) && sh.n == 0 && sh.v == NULL;
  else
    ok = s == GT_OK && sh.n == c->want_n && strstr(sh.v[0].view, c->want);
  if (!ok)
    printf("FAIL - %s: status %d, %zu shapes, %s '%s'\n", c->name, s, sh.n,
           s == GT_OK ? "first view" : "message",
           s == GT_OK ? (sh.n ? sh.v[0].view : "") : gt_err_msg());
  gt_shapes_free(&sh);
  return ok;
}

static void test_shapes_table(void **st) {
  (void)st;
  int failed = 0, n = (int)(sizeof k_cases / sizeof k_cases[0]);
  for (int i = 0; i < n; i++) failed += !run_case(&k_cases[i]);
  printf("%d passed, %d failed\n", n - failed, failed);
  assert_int_equal(failed, 0);
}

/* The quoted row-major file and the CLI's --rowmajor mk,nk,16,4096,4096 give the same key. */
static void test_quoted_layout_is_the_rowmajor_key(void **st) {
  (void)st;
  gt_problem_t defaults = gt_test_h200_linear(1, 64, 64), want = defaults;
  assert_int_equal(gt_problem_set_rowmajor(&want, "mk,nk", 16, 4096, 4096), GT_OK);
  gt_problem_fill_lds(&want);
  gt_shapes_t sh;
  assert_int_equal(gt_shapes_parse("rm.csv", "layout,M,N,K\n\"mk,nk\",16,4096,4096\n", &defaults,
                                   &sh, NULL),
                   GT_OK);
  assert_int_equal(sh.n, 1);
  assert_true(gt_problem_equal(&sh.v[0].p, &want));
  gt_shapes_free(&sh);
}

/* The entry and workspace columns: parsed in any view, the entry by its own spelling or by the
 * cuBLAS function name capture writes; a duplicate key keeps the first stated entry and the
 * largest workspace; a bad value names the column. An epilogue column makes a biased Linear. */
static void test_entry_and_workspace_columns(void **st) {
  (void)st;
  gt_problem_t defaults = gt_test_h200_linear(1, 64, 64);
  gt_shapes_t sh;
  const char *text =
      "tokens,out_features,in_features,epilogue,entry,workspace\n"
      "1,4096,4096,bias,cublasLtMatmul,1048576\n"
      "16,4096,4096,none,gemmex,0\n"
      "1,4096,4096,bias,default,4194304\n";
  size_t merged = 0;
  assert_int_equal(gt_shapes_parse("e.csv", text, &defaults, &sh, &merged), GT_OK);
  assert_int_equal(sh.n, 2);
  assert_int_equal(merged, 1);
  assert_int_equal(sh.v[0].p.epilogue, GT_EPI_BIAS);
  assert_int_equal(sh.v[0].entry, GT_ENTRY_LTMATMUL);
  assert_true(sh.v[0].workspace == 4194304u);
  assert_int_equal(sh.v[1].entry, GT_ENTRY_GEMMEX);
  assert_int_equal(sh.v[1].p.epilogue, GT_EPI_NONE);
  gt_shapes_free(&sh);
  /* Not stated: default entry, no workspace. */
  assert_int_equal(gt_shapes_parse("e.csv", "tokens,out_features,in_features\n1,64,64\n",
                                   &defaults, &sh, NULL),
                   GT_OK);
  assert_int_equal(sh.v[0].entry, GT_ENTRY_DEFAULT);
  assert_true(sh.v[0].workspace == 0);
  gt_shapes_free(&sh);
  assert_int_equal(gt_shapes_parse("e.csv", "tokens,out_features,in_features,entry\n1,64,64,lt\n",
                                   &defaults, &sh, NULL),
                   GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "e.csv:2: column 'entry': 'lt' is not an entry point"));
  assert_int_equal(
      gt_shapes_parse("e.csv", "tokens,out_features,in_features,workspace\n1,64,64,-1\n",
                      &defaults, &sh, NULL),
      GT_ERR_DATA);
  assert_non_null(strstr(gt_err_msg(), "e.csv:2: column 'workspace': not a byte count: '-1'"));
}

/* The not_tunable column: "-" and empty are tunable, anything else is the reason; a marked row
 * and a tunable row of the same key stay two shapes, marked rows of one key and reason fold. */
static void test_not_tunable_column(void **st) {
  (void)st;
  gt_problem_t d;
  gt_problem_init(&d);
  gt_shapes_t sh;
  assert_int_equal(gt_shapes_parse("t.csv",
                                   "tokens,out_features,in_features,calls,not_tunable\n"
                                   "16,4096,4096,3,-\n"
                                   "16,4096,4096,2,pointer-array batch\n"
                                   "16,4096,4096,5,pointer-array batch\n"
                                   "8,4096,4096,1,\n",
                                   &d, &sh, NULL),
                   GT_OK);
  assert_int_equal(sh.n, 3);
  assert_string_equal(sh.v[0].not_tunable, "");
  assert_int_equal(sh.v[0].calls, 3);
  assert_string_equal(sh.v[1].not_tunable, "pointer-array batch");
  assert_int_equal(sh.v[1].calls, 7);
  assert_string_equal(sh.v[2].not_tunable, "");
  gt_shapes_free(&sh);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shapes_table),
      cmocka_unit_test(test_quoted_layout_is_the_rowmajor_key),
      cmocka_unit_test(test_entry_and_workspace_columns),
      cmocka_unit_test(test_not_tunable_column),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
