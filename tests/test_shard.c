/* Launcher ranks and the shard plan (core/gt_shard.h): a table of launcher environments and the
 * rank, world and source each gives (or the error naming the variable); the plan is balanced (the
 * llama 8B corpus over 8 shards: the largest shard within 1.25x of the mean, on an H200's
 * roofline), deterministic whatever order the shapes are listed in, and covers every shape once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gt_shapes.h"
#include "core/gt_shard.h"
#include "gt_testutil.h"

/* The environment of one case: NULL-terminated name=value pairs. */
static const char *const *g_env;
static const char *fake_getenv(const char *name) {
  size_t n = strlen(name);
  for (const char *const *e = g_env; e && *e; e++)
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return NULL;
}

typedef struct env_case {
  const char *name;
  const char *env[8];
  gt_status_t want;
  int rank, size, local;
  const char *source; /* or a substring of the error */
} env_case_t;

static const env_case_t k_env[] = {
    {"nothing set", {NULL}, GT_ERR_NOT_FOUND, 0, 0, -1, "no launcher's rank variables"},
    {"slurm tasks", {"SLURM_PROCID=2", "SLURM_NTASKS=4", "SLURM_LOCALID=1"}, GT_OK, 2, 4, 1, "slurm"},
    {"slurm array from 0", {"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_COUNT=8", "SLURM_ARRAY_TASK_MIN=0"}, GT_OK, 3, 8, -1, "slurm-array"},
    {"slurm array from 1", {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_MIN=1", "SLURM_NTASKS=1", "SLURM_PROCID=0"}, GT_OK, 0, 4, -1, "slurm-array"},
    {"srun inside an array uses the tasks", {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_NTASKS=2", "SLURM_PROCID=1"}, GT_OK, 1, 2, -1, "slurm"},
    {"array id outside", {"SLURM_ARRAY_TASK_ID=9", "SLURM_ARRAY_TASK_COUNT=4"}, GT_ERR_DATA, 0, 0, -1, "SLURM_ARRAY_TASK_ID=9 is outside"},
    {"open mpi", {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_LOCAL_RANK=1"}, GT_OK, 1, 3, 1, "openmpi"},
    {"pmi", {"PMI_RANK=0", "PMI_SIZE=2"}, GT_OK, 0, 2, -1, "pmi"},
    {"torchrun", {"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=5"}, GT_OK, 5, 8, 5, "torchrun"},
    {"rank beyond world", {"RANK=8", "WORLD_SIZE=8"}, GT_ERR_DATA, 0, 0, -1, "RANK=8 is not a rank of WORLD_SIZE=8"},
    {"not a number", {"OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2"}, GT_ERR_DATA, 0, 0, -1, "OMPI_COMM_WORLD_RANK='x'"},
    {"size missing", {"PMI_RANK=0"}, GT_ERR_DATA, 0, 0, -1, "PMI_SIZE=''"},
};

static void test_launcher_environments(void **st) {
  (void)st;
  int failed = 0, n = (int)(sizeof k_env / sizeof k_env[0]);
  for (int i = 0; i < n; i++) {
    const env_case_t *c = &k_env[i];
    g_env = c->env;
    gt_shard_env_t e;
    gt_status_t s = gt_shard_env_read(fake_getenv, &e);
    bool ok = s == c->want &&
              (s == GT_OK ? e.rank == c->rank && e.size == c->size && e.local_rank == c->local &&
                                strcmp(e.source, c->source) == 0 && e.vars[0]
                          : strstr(gt_err_msg(), c->source) != NULL);
    if (!ok)
      printf("FAIL - %s: status %d rank %d/%d local %d source %s vars '%s' msg '%s'\n", c->name, s,
             e.rank, e.size, e.local_rank, e.source, e.vars, gt_err_msg());
    failed += !ok;
  }
  printf("%d passed, %d failed\n", n - failed, failed);
  assert_int_equal(failed, 0);
}

static gt_shapes_t read_corpus(void) {
  const char *src = getenv("GT_TEST_SRCDIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/examples/corpus/llama3_8b.csv", src ? src : ".");
  gt_problem_t defaults = gt_test_h200_linear(1, 64, 64);
  gt_shapes_t sh;
  if (gt_shapes_read(path, &defaults, &sh, NULL) != GT_OK) fail_msg("%s", gt_err_msg());
  return sh;
}

static void test_corpus_balances_over_8(void **st) {
  (void)st;
  gt_shapes_t sh = read_corpus();
  size_t n = sh.n;
  double *cost = calloc(n, sizeof *cost), load[8], rev_load[8];
  uint64_t *hash = calloc(n, sizeof *hash);
  int *shard = calloc(n, sizeof *shard), *rev = calloc(n, sizeof *rev);
  double *rcost = calloc(n, sizeof *rcost);
  uint64_t *rhash = calloc(n, sizeof *rhash);
  for (size_t i = 0; i < n; i++) {
    cost[i] = gt_shard_cost(&sh.v[i].p, 989.0, 4800.0);
    hash[i] = gt_problem_hash(&sh.v[i].p);
    rcost[n - 1 - i] = cost[i], rhash[n - 1 - i] = hash[i];
  }
  assert_int_equal(gt_shard_plan(cost, hash, n, 8, shard, load), GT_OK);
  double total = 0, max = 0;
  for (int s = 0; s < 8; s++) total += load[s], max = load[s] > max ? load[s] : max;
  printf("# %zu shapes, mean shard cost %.2f, largest %.2f (%.3fx)\n", n, total / 8, max,
         max / (total / 8));
  assert_true(max <= 1.25 * total / 8);
  /* Listed in reverse, every shape lands in the same shard. */
  assert_int_equal(gt_shard_plan(rcost, rhash, n, 8, rev, rev_load), GT_OK);
  for (size_t i = 0; i < n; i++) assert_int_equal(shard[i], rev[n - 1 - i]);
  /* Every shape once, every shard used. */
  int used[8] = {0};
  for (size_t i = 0; i < n; i++) {
    assert_true(shard[i] >= 0 && shard[i] < 8);
    used[shard[i]]++;
  }
  for (int s = 0; s < 8; s++) assert_true(used[s] > 0);
  free(cost), free(hash), free(shard), free(rev), free(rcost), free(rhash);
  gt_shapes_free(&sh);
}

static void test_plan_edges(void **st) {
  (void)st;
  int shard[3];
  double cost[3] = {1, 1, 1}, load[5];
  assert_int_equal(gt_shard_plan(cost, NULL, 3, 0, shard, NULL), GT_ERR_USAGE);
  /* More shards than shapes: the extra shards stay empty (and their DBs must still be written). */
  assert_int_equal(gt_shard_plan(cost, NULL, 3, 5, shard, load), GT_OK);
  assert_true(load[3] == 0 && load[4] == 0);
  assert_int_equal(gt_shard_plan(cost, NULL, 0, 2, shard, load), GT_OK);
  /* A bigger shape costs more, a missing roofline costs one sample. */
  gt_problem_t small = gt_test_h200_linear(1, 4096, 4096), big = gt_test_h200_linear(8192, 4096, 4096);
  assert_true(gt_shard_cost(&big, 989, 4800) > gt_shard_cost(&small, 989, 4800));
  assert_true(gt_shard_cost(&big, 0, 0) == 1.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_launcher_environments),
      cmocka_unit_test(test_corpus_balances_over_8),
      cmocka_unit_test(test_plan_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
