#!/usr/bin/env bash
# The Slurm array, srun and torchrun recipes of docs/scale-out.md on the CPU providers. Slurm
# cannot run in CI and torchrun comes with PyTorch, so `sbatch`, `srun` and `torchrun` here are
# stand-ins: they start the recipe's processes on this host with the variables the real
# launcher sets in each (Slurm's sbatch and srun manuals, torchrun's "Environment Variables"),
# which is all `--shard auto` reads. Each merged DB has the same keys and winners' providers as
# one process over the same shapes and seed (scaleout_lib.sh says why that comparison is
# deterministic). The launchers' own parts (scheduling, GPU binding) are not tested here; the
# variables and their precedence are, also in tests/test_shard.c.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/scaleout_lib.sh"
export STANDIN_STATE=$TMP/standin
mkdir -p "$STANDIN_STATE"

# sbatch: `sbatch --parsable SCRIPT` runs every task of the script's `#SBATCH --array=A-B` at
# once, each as an array task's batch step would see it, and prints the job id;
# `sbatch --dependency=afterok:ID --wrap CMD` runs CMD when job ID's tasks all succeeded.
cat >"$BIN/sbatch" <<'SB'
#!/usr/bin/env bash
set -euo pipefail
dep= wrap= parsable=0
while [ $# -gt 0 ]; do
  case $1 in
    --parsable) parsable=1 ;;
    --dependency=*) dep=${1#*=} ;;
    --wrap) wrap=$2; shift ;;
    --wrap=*) wrap=${1#*=} ;;
    -*) ;;
    *) break ;;
  esac
  shift
done
jid=$(($(cat "$STANDIN_STATE/jobs" 2>/dev/null || echo 1000) + 1))
echo "$jid" >"$STANDIN_STATE/jobs"
if [ -n "$dep" ]; then
  case $dep in afterok:*) ;; *) echo "sbatch stand-in: only afterok dependencies" >&2; exit 1 ;; esac
  [ -e "$STANDIN_STATE/${dep#afterok:}.failed" ] && { echo "sbatch stand-in: dependency $dep failed" >&2; exit 1; }
fi
if [ -n "$wrap" ]; then
  SLURM_JOB_ID=$jid SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 bash -c "$wrap" >"slurm-$jid.out" 2>&1 \
    || { touch "$STANDIN_STATE/$jid.failed"; cat "slurm-$jid.out" >&2; exit 1; }
  [ "$parsable" = 1 ] && echo "$jid" || echo "Submitted batch job $jid"
  exit 0
fi
script=$1
range=$(sed -n 's/^#SBATCH --array=\([0-9]*-[0-9]*\).*/\1/p' "$script")
ntasks=$(sed -n 's/^#SBATCH --ntasks=\([0-9]*\).*/\1/p' "$script")
[ -n "$range" ] || { echo "sbatch stand-in: only job arrays (#SBATCH --array=A-B)" >&2; exit 1; }
lo=${range%-*} hi=${range#*-}
pids=()
for ((i = lo; i <= hi; i++)); do
  env SLURM_JOB_ID=$((jid + 1 + i - lo)) SLURM_ARRAY_JOB_ID=$jid SLURM_ARRAY_TASK_ID=$i \
    SLURM_ARRAY_TASK_MIN=$lo SLURM_ARRAY_TASK_MAX=$hi SLURM_ARRAY_TASK_COUNT=$((hi - lo + 1)) \
    SLURM_ARRAY_TASK_STEP=1 SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 \
    ${ntasks:+SLURM_NTASKS=$ntasks} SLURM_SUBMIT_DIR=$PWD \
    bash "$script" >"slurm-${jid}_$i.out" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || touch "$STANDIN_STATE/$jid.failed"; done
[ "$parsable" = 1 ] && echo "$jid" || echo "Submitted batch job $jid"
SB

# srun: `srun --ntasks=N [--gpus-per-task=1] CMD` runs N copies of CMD with a job step's
# variables (one node), each with its own GPU when --gpus-per-task=1 asks for one.
cat >"$BIN/srun" <<'SR'
#!/usr/bin/env bash
set -euo pipefail
n=1 gpt=
while [ $# -gt 0 ]; do
  case $1 in
    --ntasks=*) n=${1#*=} ;;
    -n|--ntasks) n=$2; shift ;;
    --gpus-per-task=*) gpt=${1#*=} ;;
    -*) ;;
    *) break ;;
  esac
  shift
done
pids=() rc=0
for ((i = 0; i < n; i++)); do
  env SLURM_JOB_ID=2000 SLURM_STEP_ID=0 SLURM_PROCID=$i SLURM_NTASKS=$n SLURM_LOCALID=$i \
    SLURM_NODEID=0 SLURM_NNODES=1 SLURM_STEP_NUM_TASKS=$n ${gpt:+CUDA_VISIBLE_DEVICES=$i} "$@" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
SR

# torchrun: `torchrun --nproc-per-node=N --no-python CMD` runs N workers of CMD with the
# variables torchrun's elastic agent sets on one node.
cat >"$BIN/torchrun" <<'TR'
#!/usr/bin/env bash
set -euo pipefail
n=1 nopy=0
while [ $# -gt 0 ]; do
  case $1 in
    --nproc-per-node=*|--nproc_per_node=*) n=${1#*=} ;;
    --no-python|--no_python) nopy=1 ;;
    -*) ;;
    *) break ;;
  esac
  shift
done
[ "$nopy" = 1 ] || { echo "torchrun stand-in: runs executables only (--no-python)" >&2; exit 1; }
pids=() rc=0
for ((i = 0; i < n; i++)); do
  env RANK=$i LOCAL_RANK=$i GROUP_RANK=0 ROLE_RANK=$i ROLE_NAME=default WORLD_SIZE=$n \
    LOCAL_WORLD_SIZE=$n ROLE_WORLD_SIZE=$n GROUP_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=29500 TORCHELASTIC_RUN_ID=none TORCHELASTIC_RESTART_COUNT=0 \
    TORCHELASTIC_MAX_RESTARTS=0 OMP_NUM_THREADS=1 "$@" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
TR
chmod +x "$BIN/sbatch" "$BIN/srun" "$BIN/torchrun"

reference

run_recipe slurm-array tune-array.sbatch
shards_of slurm-array 8
grep -q 'shard 5 of 8 from slurm-array (SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_COUNT=8 SLURM_ARRAY_TASK_MIN=0)' \
  "$TMP"/slurm-array/slurm-*_5.out && ok "slurm-array: task 5 says which variables it read" \
  || bad "slurm-array: task 5's first line" "$(cat "$TMP"/slurm-array/slurm-*_5.out)"
compare slurm-array

run_recipe srun
expect_grep "srun: task 3 is shard 3 of 8" 'shard 3 of 8 from slurm \(SLURM_PROCID=3 SLURM_NTASKS=8 SLURM_LOCALID=3\)'
shards_of srun 8
compare srun

run_recipe torchrun
expect_grep "torchrun: worker 6 is shard 6 of 8" 'shard 6 of 8 from torchrun \(RANK=6 WORLD_SIZE=8 LOCAL_RANK=6\)'
shards_of torchrun 8
compare torchrun
finish
