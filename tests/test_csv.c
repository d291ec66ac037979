/* The RFC 4180 field splitter every CSV reader uses (core/gt_csv.h): a table of records and the
 * fields (and quoted flags) they split into, or the error and the 1-based column it names. Also:
 * fields point into the caller's line (nothing allocated), and the count runs past the room
 * given so a reader can say how many columns a row has. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_csv.h"

#define MAXF 8

typedef struct csv_case {
  const char *name;
  const char *line;   /* one record, as a reader hands it over (no '\n') */
  unsigned flags;
  int room;           /* fields the caller has room for (0: MAXF) */
  int want_n;         /* fields in the record; on an error, fields before the faulty one */
  const char *want[MAXF];
  const char *quoted; /* per stored field '1' quoted, '0' not */
  const char *error;  /* NULL: must split; else a substring of the message */
} csv_case_t;

static const csv_case_t k_cases[] = {
    {"plain", "a,b,c", 0, 0, 3, {"a", "b", "c"}, "000", NULL},
    {"one field", "abc", 0, 0, 1, {"abc"}, "0", NULL},
    {"empty line is one empty field", "", 0, 0, 1, {""}, "0", NULL},
    {"empty fields", "a,,c", 0, 0, 3, {"a", "", "c"}, "000", NULL},
    {"only separators", ",,", 0, 0, 3, {"", "", ""}, "000", NULL},
    {"trailing empty field", "a,b,", 0, 0, 3, {"a", "b", ""}, "000", NULL},
    {"quoted with comma", "\"mk,nk\",16,4096,4096", 0, 0, 4, {"mk,nk", "16", "4096", "4096"},
     "1000", NULL},
    {"quoted last field", "x,\"a,b\"", 0, 0, 2, {"x", "a,b"}, "01", NULL},
    {"doubled quote", "\"say \"\"hi\"\"\",x", 0, 0, 2, {"say \"hi\"", "x"}, "10", NULL},
    {"only a doubled quote", "\"\"\"\"", 0, 0, 1, {"\""}, "1", NULL},
    {"quoted empty field", "\"\",b", 0, 0, 2, {"", "b"}, "10", NULL},
    {"quoted empty last field", "a,\"\"", 0, 0, 2, {"a", ""}, "01", NULL},
    {"quote inside an unquoted field is a character", "ab\"c,d", 0, 0, 2, {"ab\"c", "d"}, "00",
     NULL},
    {"CRLF: the CR is dropped", "a,b\r", 0, 0, 2, {"a", "b"}, "00", NULL},
    {"CRLF after a quoted field", "a,\"b,c\"\r", 0, 0, 2, {"a", "b,c"}, "01", NULL},
    {"CR inside quotes is kept", "\"a\rb\",c", 0, 0, 2, {"a\rb", "c"}, "10", NULL},
    {"blanks kept without TRIM", " a , b ", 0, 0, 2, {" a ", " b "}, "00", NULL},
    {"TRIM drops blanks", " a ,\tb\t, c", GT_CSV_TRIM, 0, 3, {"a", "b", "c"}, "000", NULL},
    {"TRIM around quotes keeps blanks inside", " \" mk,nk \" , 16", GT_CSV_TRIM, 0, 2,
     {" mk,nk ", "16"}, "10", NULL},
    {"count runs past the room", "a,b,c,d,e", 0, 2, 5, {"a", "b"}, "00", NULL},
    {"unterminated quote names its column", "a,\"bc,d", 0, 0, 1, {"a"}, NULL,
     "column 2: unterminated quoted field"},
    {"unterminated quote in column 1", "\"k,1,5,5", 0, 0, 0, {NULL}, NULL,
     "column 1: unterminated quoted field"},
    {"lone quote", "\"", 0, 0, 0, {NULL}, NULL, "column 1: unterminated quoted field"},
    {"junk after closing quote", "a,b,\"c\"d,e", 0, 0, 2, {"a", "b"}, NULL,
     "column 3: text after the closing quote"},
    {"blank after closing quote without TRIM", "\"a\" ,b", 0, 0, 0, {NULL}, NULL,
     "column 1: text after the closing quote"},
    {"quoting error past the room still found", "a,b,c,\"d", 0, 2, 3, {"a", "b"}, NULL,
     "column 4: unterminated quoted field"},
};

static bool run_case(const csv_case_t *c) {
  char line[256];
  snprintf(line, sizeof line, "%s", c->line);
  char *field[MAXF] = {0};
  bool quoted[MAXF] = {0};
  int room = c->room ? c->room : MAXF, n = -1;
  gt_status_t s = gt_csv_split(line, field, quoted, room, &n, c->flags);
  bool ok = n == c->want_n;
  if (c->error)
    ok = ok && s == GT_ERR_DATA && strstr(gt_err_msg(), c->error) != NULL;
  else
    ok = ok && s == GT_OK;
  int stored = n < room ? n : room;
  for (int i = 0; ok && i < stored; i++) {
    /* In place: every field lies inside the caller's line. */
    ok = field[i] >= line && field[i] < line + sizeof line && strcmp(field[i], c->want[i]) == 0;
    if (ok && c->quoted) ok = quoted[i] == (c->quoted[i] == '1');
  }
  if (!ok) {
    printf("FAIL - %s: status %d, n %d (want %d), message '%s'\n", c->name, s, n, c->want_n,
           s == GT_OK ? "" : gt_err_msg());
    for (int i = 0; i < stored && i < MAXF; i++)
      printf("       field %d: '%s' quoted %d\n", i + 1, field[i] ? field[i] : "(null)", quoted[i]);
  }
  return ok;
}

static void test_split_table(void **st) {
  (void)st;
  int failed = 0, n = (int)(sizeof k_cases / sizeof k_cases[0]);
  for (int i = 0; i < n; i++) failed += !run_case(&k_cases[i]);
  printf("%d passed, %d failed\n", n - failed, failed);
  assert_int_equal(failed, 0);
}

/* quoted may be NULL, and a caller may only count (room 0). */
static void test_optional_arguments(void **st) {
  (void)st;
  char line[] = "\"a,b\",c,d";
  int n = 0;
  assert_int_equal(gt_csv_split(line, NULL, NULL, 0, &n, 0), GT_OK);
  assert_int_equal(n, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_table),
      cmocka_unit_test(test_optional_arguments),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
