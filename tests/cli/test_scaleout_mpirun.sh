#!/usr/bin/env bash
# The mpirun recipe of docs/scale-out.md, and `mpirun -np 3 gemmtune tune --shard auto` then
# `merge`, with Open MPI's mpirun on the CPU providers: the merged DB has the same keys and
# winners' providers as one process over the same shapes and seed (scaleout_lib.sh says why
# that comparison is deterministic). Skipped (77) without mpirun; CI installs openmpi-bin.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/scaleout_lib.sh"
if ! command -v mpirun >/dev/null 2>&1; then
  echo "skip: no mpirun (apt-get install openmpi-bin)"
  exit 77
fi
# CI runs as root, on 2 cores: Open MPI refuses both unless told, and the recipe stays as written.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

reference

# The acceptance run: 3 ranks, each its shard, then one merge.
d=$(workdir np3)
expect_exit 0 "mpirun -np 3 gemmtune tune --shard auto" bash -c \
  "cd '$d' && mpirun -np 3 gemmtune tune shapes.csv -o parts/tuned.db --shard auto"
for r in 0 1 2; do
  expect_grep "rank $r says which variables it read" \
    "shard $r of 3 from openmpi \\(OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=3 OMPI_COMM_WORLD_LOCAL_RANK=$r\\)"
done
shards_of np3 3
expect_exit 0 "merge of the 3 shards" bash -c "cd '$d' && gemmtune merge parts -o tuned.db"
compare np3

# The recipe as the doc gives it: 8 ranks over 7 shapes, so one shard is empty.
run_recipe mpirun
shards_of mpirun 8
compare mpirun
finish
