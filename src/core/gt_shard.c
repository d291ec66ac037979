/* Launcher ranks and the cost-balanced shard plan (see gt_shard.h). */
#include "gt_shard.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_roofline.h"

/* One launcher's variables: rank, world size, local rank (NULL: none). */
typedef struct launcher {
  const char *source, *rank, *size, *local;
} launcher_t;

static const launcher_t k_launchers[] = {
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
};

/* A variable as a non-negative int, or an error naming it. */
static gt_status_t env_int(gt_getenv_fn get, const char *name, long *out) {
  const char *v = get(name);
  char *end;
  errno = 0;
  long x = v ? strtol(v, &end, 10) : -1;
  if (!v || !*v || *end || errno || x < 0 || x > 1000000)
    return gt_err_set(GT_ERR_DATA, "%s='%s' is not a non-negative integer", name, v ? v : "");
  *out = x;
  return GT_OK;
}

static void note(gt_shard_env_t *o, gt_getenv_fn get, const char *name) {
  size_t l = strlen(o->vars);
  snprintf(o->vars + l, sizeof o->vars - l, "%s%s=%s", l ? " " : "", name, get(name));
}

static gt_status_t slurm_array(gt_getenv_fn get, gt_shard_env_t *o) {
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
  o->rank = (int)(id - min), o->size = (int)count, o->local_rank = -1;
  snprintf(o->source, sizeof o->source, "slurm-array");
  note(o, get, "SLURM_ARRAY_TASK_ID");
  note(o, get, "SLURM_ARRAY_TASK_COUNT");
  if (get("SLURM_ARRAY_TASK_MIN")) note(o, get, "SLURM_ARRAY_TASK_MIN");
  return GT_OK;
}

gt_status_t gt_shard_env_read(gt_getenv_fn get, gt_shard_env_t *o) {
  memset(o, 0, sizeof *o);
  o->local_rank = -1;
  const char *ntasks = get("SLURM_NTASKS");
  if (get("SLURM_ARRAY_TASK_ID") && (!ntasks || strcmp(ntasks, "1") == 0))
    return slurm_array(get, o);
  for (size_t i = 0; i < sizeof k_launchers / sizeof k_launchers[0]; i++) {
    const launcher_t *l = &k_launchers[i];
    if (!get(l->rank) && !get(l->size)) continue;
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
  return gt_err_set(GT_ERR_NOT_FOUND,
                    "no launcher's rank variables are set (looked for SLURM_ARRAY_TASK_ID, "
                    "SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK, RANK): start the processes "
                    "with srun, mpirun, torchrun or a Slurm array, or give --shard I/N");
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
