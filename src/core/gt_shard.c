/* Launcher ranks and the cost-balanced shard plan (see gt_shard.h). */
#include "gt_shard.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_roofline.h"

/* One launcher's variables: rank, world size, local rank (NULL: none). Innermost launcher first:
 * a launcher's variables reach every process it starts, so a process started by torchrun or
 * mpirun inside a Slurm step also sees the step's SLURM_PROCID (the node's task, not its own
 * rank); the launcher that started this process directly is the one that numbers it. */
typedef struct launcher {
  const char *source, *rank, *size, *local;
} launcher_t;

static const launcher_t k_launchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};
enum { N_LAUNCHERS = sizeof k_launchers / sizeof k_launchers[0] };

/* The largest rank count accepted from a variable, and for an array times its tasks. */
#define GT_SHARD_MAX_WORLD 1000000L

/* A variable as a non-negative int, or an error naming it. */
static gt_status_t env_int(gt_getenv_fn get, const char *name, long *out) {
  const char *v = get(name);
  char *end;
  errno = 0;
  long x = v ? strtol(v, &end, 10) : -1;
  if (!v || !*v || *end || errno || x < 0 || x > GT_SHARD_MAX_WORLD)
    return gt_err_set(GT_ERR_DATA, "%s='%s' is not a non-negative integer", name, v ? v : "");
  *out = x;
  return GT_OK;
}

static void note(gt_shard_env_t *o, gt_getenv_fn get, const char *name) {
  size_t l = strlen(o->vars);
  snprintf(o->vars + l, sizeof o->vars - l, "%s%s=%s", l ? " " : "", name, get(name));
}

/* The innermost launcher whose rank and size are both set, into o (rank, size, local rank,
 * source, vars). GT_ERR_NOT_FOUND when none is complete; then, when one is half set (a rank
 * without its size), *half names it. */
static gt_status_t inner_launcher(gt_getenv_fn get, gt_shard_env_t *o, const launcher_t **half) {
  *half = NULL;
  for (int i = 0; i < N_LAUNCHERS; i++) {
    const launcher_t *l = &k_launchers[i];
    if (!get(l->rank) || !get(l->size)) {
      if (!*half && (get(l->rank) || get(l->size))) *half = l;
      continue;
    }
    long rank = 0, size = 0, local = -1;
    gt_status_t s;
    if ((s = env_int(get, l->rank, &rank)) != GT_OK || (s = env_int(get, l->size, &size)) != GT_OK)
      return s;
    if (size < 1 || rank >= size)
      return gt_err_set(GT_ERR_DATA, "%s=%ld is not a rank of %s=%ld", l->rank, rank, l->size,
                        size);
    if (l->local && get(l->local) && (s = env_int(get, l->local, &local)) != GT_OK) return s;
    o->rank = (int)rank, o->size = (int)size, o->local_rank = (int)local;
    snprintf(o->source, sizeof o->source, "%s", l->source);
    note(o, get, l->rank);
    note(o, get, l->size);
    if (local >= 0) note(o, get, l->local);
    return GT_OK;
  }
  return GT_ERR_NOT_FOUND;
}

/* A Slurm job array around the inner launcher's processes (each array task runs `size` of
 * them, or one when no launcher is inside): array task a of count holds ranks a*size ..
 * a*size+size-1 of count*size, so every process of every task tunes its own shard. */
static gt_status_t slurm_array(gt_getenv_fn get, gt_shard_env_t *o, bool inner) {
  long id = 0, count = 0, min = 0;
  gt_status_t s;
  if ((s = env_int(get, "SLURM_ARRAY_TASK_ID", &id)) != GT_OK ||
      (s = env_int(get, "SLURM_ARRAY_TASK_COUNT", &count)) != GT_OK)
    return s;
  if (get("SLURM_ARRAY_TASK_MIN") && (s = env_int(get, "SLURM_ARRAY_TASK_MIN", &min)) != GT_OK)
    return s;
  if (count < 1 || id < min || id - min >= count)
    return gt_err_set(GT_ERR_DATA,
                      "SLURM_ARRAY_TASK_ID=%ld is outside the array (min %ld, count %ld): use "
                      "a contiguous array (--array=0-N) or --shard I/N",
                      id, min, count);
  /* A stride (--array=0-14:2) or a list (--array=0,3,5) numbers its tasks with gaps: some ids
   * would fall outside the count and others land on the wrong shard. */
  long max = 0;
  if (get("SLURM_ARRAY_TASK_MAX") && (s = env_int(get, "SLURM_ARRAY_TASK_MAX", &max)) != GT_OK)
    return s;
  if (get("SLURM_ARRAY_TASK_MAX") && max - min + 1 != count)
    return gt_err_set(GT_ERR_DATA,
                      "SLURM_ARRAY_TASK_MIN=%ld to SLURM_ARRAY_TASK_MAX=%ld is not "
                      "SLURM_ARRAY_TASK_COUNT=%ld tasks: use a contiguous array (--array=0-N) "
                      "or --shard I/N",
                      min, max, count);
  long size = inner ? o->size : 1, rank = inner ? o->rank : 0;
  if (count * size > GT_SHARD_MAX_WORLD)
    return gt_err_set(GT_ERR_DATA, "SLURM_ARRAY_TASK_COUNT=%ld times %ld processes per task is "
                      "more than %ld ranks", count, size, GT_SHARD_MAX_WORLD);
  gt_shard_env_t in = *o;
  o->rank = (int)((id - min) * size + rank), o->size = (int)(count * size);
  /* A task of one process is the plain array; its SLURM_PROCID=0 of 1 says nothing more. */
  snprintf(o->source, sizeof o->source, "slurm-array%s%s", size > 1 ? "+" : "",
           size > 1 ? in.source : "");
  o->vars[0] = '\0';
  note(o, get, "SLURM_ARRAY_TASK_ID");
  note(o, get, "SLURM_ARRAY_TASK_COUNT");
  if (get("SLURM_ARRAY_TASK_MIN")) note(o, get, "SLURM_ARRAY_TASK_MIN");
  if (size > 1) {
    size_t l = strlen(o->vars);
    snprintf(o->vars + l, sizeof o->vars - l, " %s", in.vars);
  }
  return GT_OK;
}

gt_status_t gt_shard_env_read(gt_getenv_fn get, gt_shard_env_t *o) {
  memset(o, 0, sizeof *o);
  o->local_rank = -1;
  const launcher_t *half;
  gt_status_t s = inner_launcher(get, o, &half);
  if (s != GT_OK && s != GT_ERR_NOT_FOUND) return s;
  if (get("SLURM_ARRAY_TASK_ID")) return slurm_array(get, o, s == GT_OK);
  if (s == GT_OK) return GT_OK;
  if (half) {
    const char *set = get(half->rank) ? half->rank : half->size;
    return gt_err_set(GT_ERR_DATA,
                      "%s=%s is set without %s (%s sets both): start the processes with "
                      "their launcher, or give --shard I/N",
                      set, get(set), set == half->rank ? half->size : half->rank, half->source);
  }
  return gt_err_set(GT_ERR_NOT_FOUND,
                    "no launcher's rank variables are set (looked for RANK and WORLD_SIZE, "
                    "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID and SLURM_NTASKS, "
                    "SLURM_ARRAY_TASK_ID): start the processes with torchrun, mpirun, srun or "
                    "a Slurm array, or give --shard I/N");
}

int gt_shard_device(int local_rank, const char *visible, int *nvisible) {
  int listed = 0;
  if (visible && *visible) {
    listed = 1;
    for (const char *c = visible; *c; c++) listed += *c == ',';
  }
  if (nvisible) *nvisible = listed;
  if (local_rank < 0) return -1;
  /* One device listed: the launcher gave each rank its own (srun --gpus-per-task=1). Several:
   * the ranks of this host share them, local rank i on the i-th listed (its ordinal i, as CUDA
   * numbers the visible devices), wrapping when there are more ranks than devices. */
  return listed == 1 ? 0 : listed > 1 ? local_rank % listed : local_rank;
}

double gt_shard_cost(const gt_problem_t *p, double peak_tflops, double peak_gbps) {
  if (peak_tflops <= 0 || peak_gbps <= 0) return 1.0;
  gt_floor_t f;
  gt_roof_floor_at(gt_problem_flops(p), gt_problem_min_bytes(p), peak_tflops, peak_gbps, &f);
  return 1.0 + f.us * 1e-6 / 2e-3;
}

typedef struct item {
  double cost;
  uint64_t hash;
  size_t idx;
} item_t;

static int cmp_item(const void *a, const void *b) {
  const item_t *x = a, *y = b;
  if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

gt_status_t gt_shard_plan(const double *cost, const uint64_t *hash, size_t n, int world,
                          int *shard, double *load) {
  if (world < 1) return gt_err_set(GT_ERR_USAGE, "shard plan: %d shards", world);
  item_t *it = n ? malloc(n * sizeof *it) : NULL;
  double *sum = calloc((size_t)world, sizeof *sum);
  if ((n && !it) || !sum) {
    free(it);
    free(sum);
    return gt_err_set(GT_ERR_NOMEM, "shard plan: out of memory");
  }
  for (size_t i = 0; i < n; i++) it[i] = (item_t){cost[i], hash ? hash[i] : 0, i};
  qsort(it, n, sizeof *it, cmp_item);
  for (size_t i = 0; i < n; i++) {
    int best = 0;
    for (int s = 1; s < world; s++)
      if (sum[s] < sum[best]) best = s;
    shard[it[i].idx] = best;
    sum[best] += it[i].cost;
  }
  if (load) memcpy(load, sum, (size_t)world * sizeof *sum);
  free(it);
  free(sum);
  return GT_OK;
}
