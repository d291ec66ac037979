#!/usr/bin/env bash
# bench/multigpu_tune.sh, the multi-GPU run as one command, dry on the CPU providers so its
# plumbing is tested where no GPU is: the script parses (bash -n; shellcheck when installed);
# --cpu under Open MPI's mpirun runs every stage (plan, two ranks with --shard auto, merge, one
# process, the checks) and passes, the merged DB holding one process's keys; and
# --share-one-gpu under torchrun (a stand-in that sets torchrun's variables: torchrun comes
# with PyTorch) gives both ranks device 0 (LOCAL_RANK=1 with CUDA_VISIBLE_DEVICES=0 picks
# device 0) and passes its plumbing checks. The GPU stages themselves (timings, the speedup,
# verify of the llama client on device 1) need a machine with several GPUs. Skipped (77)
# without python3 (the checks); the mpirun part without mpirun.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 not found"
  exit 77
fi
SCRIPT=$SRC/bench/multigpu_tune.sh
BUILD=$(dirname "$GT")
# A launcher around the test run must not number the script's processes.
for v in $(compgen -e | grep -E '^(SLURM_|OMPI_|PMI_|PMIX_|TORCHELASTIC_)' || true); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MPI_LOCALRANKID CUDA_VISIBLE_DEVICES

expect_exit 0 "the script parses (bash -n)" bash -n "$SCRIPT"
if command -v shellcheck >/dev/null 2>&1; then
  # From the source tree: the script's `source=bench/lib.sh` directive is relative to it.
  expect_exit 0 "shellcheck finds no warning" bash -c "cd '$SRC' && shellcheck -x -S warning bench/multigpu_tune.sh"
fi
expect_exit 0 "the checker compiles" python3 -m py_compile "$SRC/bench/multigpu_check.py"
expect_exit 2 "an unknown option is a usage error" bash "$SCRIPT" --bogus "$BUILD" "$TMP/x"

if command -v mpirun >/dev/null 2>&1; then
  expect_exit 0 "--cpu under mpirun -np 2: every stage passes" \
    env LAUNCHER=mpirun bash "$SCRIPT" --cpu "$BUILD" "$TMP/mpi"
  expect_grep "both ranks read Open MPI's variables" 'tune-rank1.log: shard 1 of 2 from openmpi \(OMPI_COMM_WORLD_RANK=1'
  expect_grep "merge's calibration verdict is shown" '^  calibration: '
  expect_grep "the one-process run is timed" '^wall: one process [0-9.]+ s'
  expect_grep "keys are checked against one process" '^  CHECK keys +PASS - merged 7 rows, one process 7'
  expect_grep "every shape was tuned once between the ranks" '^  CHECK shapes-once +PASS - ranks tuned [0-9]+\+[0-9]+ = 7 shapes of 7'
  expect_grep "the speedup is measured (not required on the CPU)" '^  CHECK speedup +(PASS|INFO) - one process'
  expect_grep "verify is skipped without a GPU" '^verify: skipped \(cpu mode\)'
  expect_grep "the result line" '^RESULT: PASS$'
  [ -f "$TMP/mpi/check.json" ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not d['keys']['ok'])" "$TMP/mpi/check.json" \
    && ok "check.json records the checks" || bad "check.json" "$(cat "$TMP/mpi/check.json" 2>&1)"
else
  echo "# mpirun not found: the mpirun part is skipped (apt-get install openmpi-bin)"
fi

# torchrun: the stand-in starts the workers with the variables torchrun's agent sets.
mkdir -p "$TMP/bin"
cat >"$TMP/bin/torchrun" <<'TR'
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
  env RANK=$i LOCAL_RANK=$i GROUP_RANK=0 WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n \
    MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 TORCHELASTIC_RUN_ID=none OMP_NUM_THREADS=1 "$@" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
TR
chmod +x "$TMP/bin/torchrun"
{ echo model,proj,tokens,out_features,in_features; printf '%s\n' cpu,a,8,256,256 cpu,b,16,256,128 \
  cpu,c,32,128,256 cpu,d,24,128,128; } >"$TMP/small.csv"
# Without --cpu, so each rank picks its GPU as on the GPU machine (here it finds none and tunes
# on the host after saying which device it would take).
expect_exit 0 "--share-one-gpu under torchrun: the plumbing checks pass" \
  env PATH="$TMP/bin:$PATH" LAUNCHER=torchrun SHAPES="$TMP/small.csv" STAGES="plan multi compare" \
  TUNE_ARGS="--warm --rounds 5 --finalists 3" bash "$SCRIPT" --share-one-gpu "$BUILD" "$TMP/share"
expect_grep "rank 1 reads torchrun's variables and takes device 0" \
  'tune-rank1.log: shard 1 of 2 from torchrun \(RANK=1 WORLD_SIZE=2 LOCAL_RANK=1\); CUDA device 0 \(local rank 1, CUDA_VISIBLE_DEVICES=0\)'
expect_grep "the device check passes: both on device 0" '^  CHECK devices +PASS - rank 0: device 0; rank 1: device 0'
expect_grep "the merged DB is the union of the shards" '^  CHECK shards-disjoint +PASS'
expect_grep "both shards carry calibration lines" '^  CHECK calibration-lines +PASS - 2 of 2'
expect_grep "keys against one process are not required when sharing" '^  CHECK keys +INFO'
expect_grep "the result line" '^RESULT: PASS$'
finish
