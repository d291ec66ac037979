/* The environment-variable table and the misspelling check (core/gt_envvars.h): a table of names
 * and what the check makes of each (ignored as another tool's, known, or unknown with the nearest
 * known one), a scan of an environment that reports each unknown name once, and the table itself
 * (unique GEMMTUNE_ names, each found). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "core/gt_envvars.h"

typedef struct name_case {
  const char *name;
  const char *entry;   /* as it stands in the environment */
  bool ours;           /* gt_env_looks_ours */
  bool known;          /* in the table */
  const char *nearest; /* for an unknown one of ours */
} name_case_t;

static const name_case_t k_names[] = {
    {"known_db", "GEMMTUNE_DB=/x.db", true, true, NULL},
    {"known_log", "GEMMTUNE_LOG=1", true, true, NULL},
    {"suffix_added", "GEMMTUNE_DB_FILE=/x.db", true, false, "GEMMTUNE_DB"},
    {"plural", "GEMMTUNE_DBS=/x.db", true, false, "GEMMTUNE_DB"},
    {"prefix_missing_an_m", "GEMTUNE_DB=/x.db", true, false, "GEMMTUNE_DB"},
    {"prefix_doubled_n", "GEMMTUNNE_LOG=1", true, false, "GEMMTUNE_LOG"},
    {"prefix_split", "GEMM_TUNE_STATS=s.csv", true, false, "GEMMTUNE_STATS"},
    {"no_underscore", "GEMMTUNEDB=/x.db", true, false, "GEMMTUNE_DB"},
    {"lower_case", "gemmtune_db=/x.db", true, false, "GEMMTUNE_DB"},
    {"swapped_letters", "GEMMTUNE_LGO=1", true, false, "GEMMTUNE_LOG"},
    {"suffix_cut", "GEMMTUNE_CUBLASLT=/lib.so", true, false, "GEMMTUNE_CUBLASLT_LIB"},
    {"longer_known_wins", "GEMMTUNE_TRACE_LIBS=/t.so", true, false, "GEMMTUNE_TRACE_LIB"},
    {"typo_inside", "GEMMTUNE_PROGRES_S=5", true, false, "GEMMTUNE_PROGRESS_S"},
    {"bare_prefix", "GEMMTUNE=1", true, false, NULL},
    {"another_tools_gemm", "GEMM_THREADS=4", false, false, NULL},
    {"another_tools_tune", "TUNE_DB=x", false, false, NULL},
    {"path", "PATH=/usr/bin", false, false, NULL},
    {"cuda", "CUDA_VISIBLE_DEVICES=0", false, false, NULL},
};

static void test_name(void **state) {
  const name_case_t *c = *state;
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)strcspn(c->entry, "="), c->entry);
  assert_int_equal(gt_env_looks_ours(c->entry), c->ours);
  assert_int_equal(gt_env_find(name) != NULL, c->known);
  if (c->nearest) {
    const gt_env_var_t *v = gt_env_nearest(c->entry);
    if (strcmp(v->name, c->nearest)) print_error("%s: nearest %s\n", c->entry, v->name);
    assert_string_equal(v->name, c->nearest);
  }
  assert_non_null(gt_env_nearest(c->entry)); /* never NULL */
}

typedef struct seen {
  char names[8][128], nearest[8][64];
  int n;
} seen_t;

static void collect(void *ctx, const char *name, const gt_env_var_t *nearest) {
  seen_t *s = ctx;
  if (s->n >= 8) return;
  snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
  snprintf(s->nearest[s->n++], sizeof s->nearest[0], "%s", nearest->name);
}

/* Known names and other tools' are left alone; each unknown one of ours once, with its nearest. */
static void test_scan_reports_each_unknown_once(void **state) {
  char *env[] = {"PATH=/usr/bin", "GEMMTUNE_DB=/a.db", "GEMMTUNE_DB_FILE=/b.db", "GEMM_THREADS=2",
                 "GEMTUNE_DB=/c.db", "GEMMTUNE_DB_FILE=/again.db", "GEMMTUNE_LOG", NULL};
  seen_t s = {0};
  assert_int_equal(gt_env_check(env, collect, &s), 2);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.names[0], "GEMMTUNE_DB_FILE");
  assert_string_equal(s.nearest[0], "GEMMTUNE_DB");
  assert_string_equal(s.names[1], "GEMTUNE_DB");
  assert_string_equal(s.nearest[1], "GEMMTUNE_DB");
  assert_int_equal(gt_env_check(NULL, collect, &s), 0);
}

/* A very long name is cut, not overrun, and the count of reports is bounded. */
static void test_scan_is_bounded(void **state) {
  static char longname[400];
  memset(longname, 'X', sizeof longname - 3);
  memcpy(longname, "GEMMTUNE_", 9);
  longname[sizeof longname - 3] = '=';
  longname[sizeof longname - 2] = '1';
  static char many[40][24];
  char *env[42];
  env[0] = longname;
  for (int i = 0; i < 40; i++) {
    snprintf(many[i], sizeof many[i], "GEMMTUNE_X%d=1", i);
    env[i + 1] = many[i];
  }
  env[41] = NULL;
  seen_t s = {0};
  assert_int_equal(gt_env_check(env, collect, &s), 32);
  assert_int_equal(strlen(s.names[0]), 127);
}

static void test_table(void **state) {
  assert_true(gt_env_count() >= 20);
  for (size_t i = 0; i < gt_env_count(); i++) {
    const gt_env_var_t *v = gt_env_at(i);
    assert_memory_equal(v->name, "GEMMTUNE_", 9);
    assert_ptr_equal(gt_env_find(v->name), v);
    assert_ptr_equal(gt_env_nearest(v->name), v);
    assert_true(v->readers != 0 && v->what[0]);
  }
  assert_null(gt_env_at(gt_env_count()));
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

int main(void) {
  struct CMUnitTest t[NELEM(k_names) + 3];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_names); i++)
    t[n++] = (struct CMUnitTest){k_names[i].name, test_name, NULL, NULL, (void *)&k_names[i]};
  t[n++] = (struct CMUnitTest){"scan_reports_each_unknown_once", test_scan_reports_each_unknown_once, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"scan_is_bounded", test_scan_is_bounded, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"table", test_table, NULL, NULL, NULL};
  return _cmocka_run_group_tests("envvars", t, n, NULL, NULL);
}
