/* Splitting a tuning run across processes: the rank and world size a launcher gives a process,
 * and a plan that balances the shapes of a shapes file by estimated cost.
 *
 * The plan is computed from the shapes file alone (and the device's roofline, the same on every
 * rank of one machine type), deterministically, so every rank of a job computes the same split
 * without talking to the others: each rank tunes the shapes the plan gives it and writes its own
 * DB, and the DBs are merged. */
#ifndef GT_SHARD_H
#define GT_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "gt_problem.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a process sits in a launcher's job. */
typedef struct gt_shard_env {
  int rank, size;  /* 0 <= rank < size */
  int local_rank;  /* rank on this host (-1 unknown): picks the GPU */
  char source[32]; /* "torchrun", "openmpi", "pmi", "slurm", "slurm-array", "slurm-array+slurm" */
  char vars[256];  /* the variables read, with their values: "SLURM_PROCID=2 SLURM_NTASKS=4" */
} gt_shard_env_t;

/* getenv, or a stand-in for tests. */
typedef const char *(*gt_getenv_fn)(const char *name);

/* Read the rank and world size a launcher gave this process. The launcher that started the
 * process directly numbers it, so the innermost wins (torchrun or mpirun inside a Slurm step
 * also see the step's SLURM_PROCID): torchrun (RANK of WORLD_SIZE, local LOCAL_RANK), Open MPI
 * (OMPI_COMM_WORLD_RANK of OMPI_COMM_WORLD_SIZE, local OMPI_COMM_WORLD_LOCAL_RANK), PMI / MPICH
 * (PMI_RANK of PMI_SIZE, local MPI_LOCALRANKID), Slurm tasks (SLURM_PROCID of SLURM_NTASKS,
 * local SLURM_LOCALID); a launcher counts when both its rank and size are set. A Slurm job
 * array (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT) multiplies the
 * launcher inside each of its tasks: task a of count running p processes gives ranks a*p ..
 * a*p+p-1 of count*p (p = 1 without one; SLURM_PROCID=0 of 1 is the plain array). out->vars
 * lists every variable used. GT_ERR_NOT_FOUND when no launcher is set (the message lists what
 * was looked for); GT_ERR_DATA naming the variable for a value that is not a non-negative
 * integer, a rank outside its world, an array id outside the array or an array that is not
 * contiguous (SLURM_ARRAY_TASK_MAX - MIN + 1 != COUNT: a stride or a list), or a rank set
 * without its size when no complete launcher is found. */
gt_status_t gt_shard_env_read(gt_getenv_fn get, gt_shard_env_t *out);

/* The CUDA device ordinal a process of local rank `local_rank` tunes on, given
 * CUDA_VISIBLE_DEVICES (`visible`, NULL or "" when unset): local_rank itself when unset, 0 when
 * it lists one device (the launcher gave each process its own, srun --gpus-per-task=1), and
 * local_rank modulo the count when it lists several (ranks share the listed devices in turn).
 * -1 when local_rank < 0 (unknown: the caller keeps its default). nvisible (may be NULL)
 * receives how many devices `visible` lists (0 unset), so a caller can say when ranks share a
 * listed device (local_rank >= *nvisible > 1; one listed may be each process's own). */
int gt_shard_device(int local_rank, const char *visible, int *nvisible);

/* A shape's estimated tuning cost, in units of one timing sample (about 2 ms): every candidate is
 * timed in samples of at least that long, and a shape whose roofline floor is longer needs longer
 * samples. So: 1 + floor / 2 ms, floor = max(FLOPs / peak, bytes / bandwidth). peak_tflops and
 * peak_gbps are the device's (gt_device_info_t); <= 0 gives cost 1. */
double gt_shard_cost(const gt_problem_t *p, double peak_tflops, double peak_gbps);

/* Assign n shapes to `world` shards, balancing the summed cost: largest cost first (ties by key
 * hash, then index), each to the shard with the least cost so far (ties: the lowest shard). The
 * result depends only on the costs and hashes, never on the order shapes are listed in the file
 * beyond exact ties. shard[i] receives shape i's shard; load (may be NULL, world entries)
 * receives each shard's total cost. GT_ERR_USAGE for world < 1, GT_ERR_NOMEM. */
gt_status_t gt_shard_plan(const double *cost, const uint64_t *hash, size_t n, int world,
                          int *shard, double *load);

#ifdef __cplusplus
}
#endif
#endif
