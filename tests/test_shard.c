/* Launcher ranks and the shard plan (core/gt_shard.h): a table of launcher environments and the
 * rank, world and source each gives (or the error naming the variable), innermost launcher first
 * and a Slurm array multiplying the launcher inside it; the device a local rank takes under
 * CUDA_VISIBLE_DEVICES; the plan is balanced (the llama 8B corpus over 8 shards: the largest
 * shard within 1.25x of the mean, on an H200's roofline), deterministic whatever order the
 * shapes are listed in, and covers every shape once. */
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
  const char *env[10];
  gt_status_t want;
  int rank, size, local;
  const char *source; /* or a substring of the error */
  const char *vars;   /* a substring of the variables it says it used (NULL: any) */
} env_case_t;

static const env_case_t k_env[] = {
    {"nothing set", {NULL}, GT_ERR_NOT_FOUND, 0, 0, -1, "no launcher's rank variables", NULL},
    {"slurm tasks (srun)", {"SLURM_PROCID=2", "SLURM_NTASKS=4", "SLURM_LOCALID=1"}, GT_OK, 2, 4, 1, "slurm", "SLURM_PROCID=2 SLURM_NTASKS=4 SLURM_LOCALID=1"},
    {"slurm array from 0", {"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_COUNT=8", "SLURM_ARRAY_TASK_MIN=0"}, GT_OK, 3, 8, -1, "slurm-array", "SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=8"},
    {"slurm array from 1, one task per element", {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_MIN=1", "SLURM_NTASKS=1", "SLURM_PROCID=0", "SLURM_LOCALID=0"}, GT_OK, 0, 4, 0, "slurm-array", NULL},
    {"array batch step: SLURM_PROCID without SLURM_NTASKS", {"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_PROCID=0"}, GT_OK, 2, 4, -1, "slurm-array", NULL},
    {"srun of 2 tasks inside array element 1 of 4", {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=4", "SLURM_NTASKS=2", "SLURM_PROCID=1", "SLURM_LOCALID=1"}, GT_OK, 3, 8, 1, "slurm-array+slurm", "SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=4 SLURM_PROCID=1 SLURM_NTASKS=2"},
    {"torchrun inside array element 1 of 2", {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=2", "SLURM_ARRAY_TASK_MIN=0", "SLURM_NTASKS=1", "SLURM_PROCID=0", "RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=3"}, GT_OK, 11, 16, 3, "slurm-array+torchrun", "RANK=3 WORLD_SIZE=8"},
    {"array with its max", {"SLURM_ARRAY_TASK_ID=8", "SLURM_ARRAY_TASK_COUNT=8", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=8"}, GT_OK, 7, 8, -1, "slurm-array", NULL},
    {"array with a stride (--array=0-14:2)", {"SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_COUNT=8", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=14", "SLURM_ARRAY_TASK_STEP=2"}, GT_ERR_DATA, 0, 0, -1, "SLURM_ARRAY_TASK_MIN=0 to SLURM_ARRAY_TASK_MAX=14 is not SLURM_ARRAY_TASK_COUNT=8 tasks", NULL},
    {"array from a list (--array=0,3,5)", {"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=5"}, GT_ERR_DATA, 0, 0, -1, "not SLURM_ARRAY_TASK_COUNT=3 tasks", NULL},
    {"array id outside", {"SLURM_ARRAY_TASK_ID=9", "SLURM_ARRAY_TASK_COUNT=4"}, GT_ERR_DATA, 0, 0, -1, "SLURM_ARRAY_TASK_ID=9 is outside", NULL},
    {"array times tasks too large", {"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_COUNT=1000000", "SLURM_NTASKS=2", "SLURM_PROCID=0"}, GT_ERR_DATA, 0, 0, -1, "more than", NULL},
    {"open mpi", {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_LOCAL_RANK=1"}, GT_OK, 1, 3, 1, "openmpi", "OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=3 OMPI_COMM_WORLD_LOCAL_RANK=1"},
    {"mpirun inside a Slurm allocation: Open MPI numbers it", {"SLURM_PROCID=0", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=16", "OMPI_COMM_WORLD_LOCAL_RANK=5"}, GT_OK, 5, 16, 5, "openmpi", NULL},
    {"pmi with its local rank", {"PMI_RANK=3", "PMI_SIZE=4", "MPI_LOCALRANKID=1"}, GT_OK, 3, 4, 1, "pmi", "MPI_LOCALRANKID=1"},
    {"pmi without a local rank", {"PMI_RANK=0", "PMI_SIZE=2"}, GT_OK, 0, 2, -1, "pmi", NULL},
    {"torchrun", {"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=5", "LOCAL_WORLD_SIZE=8", "GROUP_RANK=0"}, GT_OK, 5, 8, 5, "torchrun", "RANK=5 WORLD_SIZE=8 LOCAL_RANK=5"},
    {"torchrun under srun (one torchrun per node): torchrun numbers it", {"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_LOCALID=0", "RANK=9", "WORLD_SIZE=16", "LOCAL_RANK=1"}, GT_OK, 9, 16, 1, "torchrun", NULL},
    {"rank beyond world", {"RANK=8", "WORLD_SIZE=8"}, GT_ERR_DATA, 0, 0, -1, "RANK=8 is not a rank of WORLD_SIZE=8", NULL},
    {"not a number", {"OMPI_COMM_WORLD_RANK=x", "OMPI_COMM_WORLD_SIZE=2"}, GT_ERR_DATA, 0, 0, -1, "OMPI_COMM_WORLD_RANK='x'", NULL},
    {"size missing", {"PMI_RANK=0"}, GT_ERR_DATA, 0, 0, -1, "PMI_RANK=0 is set without PMI_SIZE", NULL},
    {"batch step outside an array: SLURM_PROCID alone", {"SLURM_PROCID=0"}, GT_ERR_DATA, 0, 0, -1, "SLURM_PROCID=0 is set without SLURM_NTASKS", NULL},
    {"a stray RANK does not hide mpirun's variables", {"RANK=0", "OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3"}, GT_OK, 2, 3, -1, "openmpi", NULL},
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
                                strcmp(e.source, c->source) == 0 && e.vars[0] &&
                                (!c->vars || strstr(e.vars, c->vars))
                          : strstr(gt_err_msg(), c->source) != NULL);
    if (!ok)
      printf("FAIL - %s: status %d rank %d/%d local %d source %s vars '%s' msg '%s'\n", c->name, s,
             e.rank, e.size, e.local_rank, e.source, e.vars, gt_err_msg());
    failed += !ok;
  }
  printf("%d passed, %d failed\n", n - failed, failed);
  assert_int_equal(failed, 0);
}

/* The device of a local rank under CUDA_VISIBLE_DEVICES. */
typedef struct device_case {
  const char *name;
  int local_rank;
  const char *visible;
  int want, nvisible;
} device_case_t;

static const device_case_t k_device[] = {
    {"unset: the local rank", 3, NULL, 3, 0},
    {"empty counts as unset", 3, "", 3, 0},
    {"one listed (srun --gpus-per-task=1): device 0", 3, "5", 0, 1},
    {"torchrun's 2 workers sharing GPU 0 (LOCAL_RANK=1, CUDA_VISIBLE_DEVICES=0): device 0", 1, "0", 0, 1},
    {"all eight listed (torchrun, mpirun): the local rank", 3, "0,1,2,3,4,5,6,7", 3, 8},
    {"narrowed to two: ranks take them in turn", 5, "2,3", 1, 2},
    {"UUIDs count the same way", 1, "GPU-6f1c,GPU-88aa", 1, 2},
    {"local rank unknown: keep the default", -1, "0,1", -1, 2},
};

static void test_device_from_local_rank(void **st) {
  (void)st;
  int failed = 0, n = (int)(sizeof k_device / sizeof k_device[0]);
  for (int i = 0; i < n; i++) {
    const device_case_t *c = &k_device[i];
    int nv = -7, d = gt_shard_device(c->local_rank, c->visible, &nv);
    bool ok = d == c->want && nv == c->nvisible;
    if (!ok) printf("FAIL - %s: device %d (want %d), %d listed (want %d)\n", c->name, d, c->want, nv, c->nvisible);
    failed += !ok;
  }
  assert_int_equal(gt_shard_device(2, "0,1", NULL), 0); /* nvisible may be NULL */
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
      cmocka_unit_test(test_device_from_local_rank),
      cmocka_unit_test(test_corpus_balances_over_8),
      cmocka_unit_test(test_plan_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
