#!/usr/bin/env bash
# Issue 20: a multi-GPU tuning run on one host, measured, as one command.
#
#   bash bench/multigpu_tune.sh BUILD OUTDIR [NGPU]                   the measured run
#   bash bench/multigpu_tune.sh --share-one-gpu BUILD OUTDIR          plumbing on one GPU
#   bash bench/multigpu_tune.sh --cpu BUILD OUTDIR [NPROC]            plumbing on the CPU (CI)
#
# The measured run (NGPU: the GPUs nvidia-smi lists, or the number given):
#   plan     the shard plan of the shapes (tune --estimate --shard NGPU; ESTIMATE=1 also times
#            the baselines for what one process would take)
#   multi    tune with one process per GPU, `--shard auto`, under mpirun when it is installed,
#            else torchrun --no-python (LAUNCHER=mpirun|torchrun chooses), then merge the shards
#   one      the same tune in one process on one GPU of this machine (the first listed)
#   compare  bench/multigpu_check.py: the merged DB has the one-process DB's keys, the winners'
#            times agree within their spreads (at least 2%), the speedup is at least 0.8 x NGPU,
#            every rank took its own GPU, every shape was tuned once, and merge's calibration
#            named no GPU as slow or throttled (its lines are printed either way)
#   verify   bench/llama_verify.sh with DB=the merged DB on a GPU other than device 0
#            (CUDA_VISIBLE_DEVICES=the second listed): every tuned key the llama client issues
#            must engage (needs PyTorch and transformers)
# The shapes: the Llama 3 8B and 70B corpus rows (examples/corpus/) at tokens 1..64 and the
# prefill rows with tokens >= 512. NCCL_NVLS_ENABLE=0 is kept (set when unset) and every other
# variable of the machine is left as it is.
#
# --share-one-gpu: two processes share GPU 0 (CUDA_VISIBLE_DEVICES=0) under torchrun (else
# mpirun) over six small decode shapes with a short budget, then merge and the checks that do
# not need several GPUs: each rank took device 0, every shape once, the merged DB the union of
# the shards, the calibration lines (keys, times, speedup and the calibration verdict against
# one process on the same GPU are printed, not required: the two processes disturb each other).
# About a minute on an H200.
#
# --cpu: the same stages on the CPU providers (two processes, a 7-shape corpus, short timing),
# so CI runs the script's plumbing (tests/cli/test_multigpu_dry.sh); keys must match one
# process there (every CPU row beats its naive baseline by 15x or more).
#
# Environment: STAGES (default "plan multi one compare verify"; stages read what earlier ones
# left in OUTDIR, so a run can be split across calls), LAUNCHER, TUNE_ARGS (default on a GPU
# "--budget 2 --finalists 4 --rounds 9", sharing "--budget 1 --finalists 2 --rounds 5", CPU
# "--cpu --warm --rounds 5 --finalists 3"), SHAPES (a shapes file instead of the corpus rows),
# TARGET (0.8), ESTIMATE (0).
# Every log lands in OUTDIR/logs; the last line is RESULT: PASS or FAIL. Exit 0 pass, 1 fail,
# 2 setup error.
set -uo pipefail
MODE=gpu
while [ $# -gt 0 ]; do
  case $1 in
    --cpu) MODE=cpu ;;
    --share-one-gpu) MODE=share ;;
    --) shift; break ;;
    -*) echo "usage: multigpu_tune.sh [--cpu|--share-one-gpu] BUILD OUTDIR [NGPU]" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup multigpu_tune.sh "$@"
NARG=${3:-}
STAGES=${STAGES:-plan multi one compare verify}
TARGET=${TARGET:-0.8}
LOGS=$OUT/logs
mkdir -p "$LOGS"
[ -x "$GT" ] || die "$GT not built"
command -v python3 >/dev/null 2>&1 || die "python3 is needed for the checks"

# ---- the machine ------------------------------------------------------------------------------
# NVLink multicast stays off, as the machine sets it; nothing else is changed.
if [ "${NCCL_NVLS_ENABLE:-0}" != 0 ]; then
  echo "note: NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE: set to 0 (NVLink multicast stays off)"
fi
export NCCL_NVLS_ENABLE=0
# visible_entry I: the I-th device CUDA_VISIBLE_DEVICES lists (I itself when it is unset).
visible_entry() {
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
    echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | sed -n "$(($1 + 1))p"
  else
    echo "$1"
  fi
}
case $MODE in
  gpu)
    if [ -n "$NARG" ]; then NPROC=$NARG
    elif [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then NPROC=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
    else NPROC=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    fi
    [ "$NPROC" -ge 1 ] 2>/dev/null || die "no GPU listed by nvidia-smi (give NGPU, or --cpu)"
    TUNE_ARGS=${TUNE_ARGS:---budget 2 --finalists 4 --rounds 9} ;;
  share)
    NPROC=2
    TUNE_ARGS=${TUNE_ARGS:---budget 1 --finalists 2 --rounds 5} ;;
  cpu)
    NPROC=${NARG:-2}
    TUNE_ARGS=${TUNE_ARGS:---cpu --warm --rounds 5 --finalists 3} ;;
esac
if [ -z "${LAUNCHER:-}" ]; then
  # Sharing one GPU is the torchrun recipe of the one-GPU machine; otherwise mpirun first.
  if [ "$MODE" = share ] && command -v torchrun >/dev/null 2>&1; then LAUNCHER=torchrun
  elif command -v mpirun >/dev/null 2>&1; then LAUNCHER=mpirun
  elif command -v torchrun >/dev/null 2>&1; then LAUNCHER=torchrun
  else die "neither mpirun nor torchrun is installed"
  fi
fi
command -v "$LAUNCHER" >/dev/null 2>&1 || die "LAUNCHER=$LAUNCHER is not installed"

stage "environment ($MODE, $NPROC processes under $LAUNCHER)"
{
  echo "mode $MODE, $NPROC processes, launcher $LAUNCHER ($(command -v "$LAUNCHER")), tune $TUNE_ARGS"
  [ "$MODE" = cpu ] || nvidia-smi --query-gpu=index,name,pci.bus_id,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv 2>&1
  env | grep -E '^(NCCL_|CUDA_VISIBLE_DEVICES|OMPI_MCA|GEMMTUNE_)' | sort
} | tee "$LOGS/environment.txt"
# Tune against the cuBLAS PyTorch loads when it is here, as llama_verify.sh does: the llama
# client of the verify stage runs that copy, and cuBLASLt rows apply only to their version.
if [ "$MODE" = gpu ] && bench_torch_probe "$LOGS/torch_env.txt" 2>/dev/null; then
  lt_dir=$(bench_torch_lib_dir "$LOGS/torch_env.txt" libcublasLt)
  if [ -n "$lt_dir" ]; then
    echo "using PyTorch's cuBLAS in $lt_dir"
    export LD_LIBRARY_PATH="$lt_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
fi

# ---- the shapes ---------------------------------------------------------------------------------
if [ -n "${SHAPES:-}" ]; then
  cp "$SHAPES" "$OUT/shapes.csv" 2>/dev/null || [ "$SHAPES" -ef "$OUT/shapes.csv" ] || die "SHAPES=$SHAPES cannot be read"
elif [ "$MODE" = gpu ]; then
  awk -F, 'NR == 1 { print; next } FNR > 1 && ($3 <= 64 || $3 >= 512)' \
    "$root/examples/corpus/llama3_8b.csv" "$root/examples/corpus/llama3_70b.csv" >"$OUT/shapes.csv"
elif [ "$MODE" = share ]; then
  awk -F, 'NR == 1 || (($3 == 1 || $3 == 16) && ($2 == "qkv" || $2 == "o" || $2 == "down"))' \
    "$root/examples/corpus/llama3_8b.csv" >"$OUT/shapes.csv"
else
  { echo model,proj,tokens,out_features,in_features; printf '%s\n' \
    cpu,a,8,256,256 cpu,b,16,256,128 cpu,c,32,128,256 cpu,d,24,128,128 cpu,e,64,64,256 \
    cpu,f,16,128,256 cpu,g,32,256,128; } >"$OUT/shapes.csv"
fi
SHAPES_FILE=$OUT/shapes.csv
echo "shapes: $SHAPES_FILE ($(($(grep -vc '^#' "$SHAPES_FILE") - 1)) rows)"

# ---- launching ------------------------------------------------------------------------------
# launch N CMD...: N copies of CMD under the launcher, each numbered by it.
launch() {
  local n=$1
  shift
  if [ "$LAUNCHER" = mpirun ]; then
    local flags=(--bind-to none)
    [ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
    [ "$MODE" = gpu ] || flags+=(--oversubscribe)
    mpirun -np "$n" "${flags[@]}" "$@"
  else
    torchrun --standalone --nproc-per-node="$n" --no-python "$@"
  fi
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

stage_plan() {
  stage "plan: $NPROC shards"
  # shellcheck disable=SC2086
  "$GT" tune "$SHAPES_FILE" -o "$OUT/plan.db" --estimate --shard "$NPROC" $TUNE_ARGS >"$LOGS/plan.log" 2>&1
  head -n $((NPROC + 2)) "$LOGS/plan.log"
  if [ "${ESTIMATE:-0}" = 1 ]; then
    # shellcheck disable=SC2086
    "$GT" tune "$SHAPES_FILE" -o "$OUT/plan.db" --estimate $TUNE_ARGS >"$LOGS/estimate.log" 2>&1
    grep -E '^Estimate:' "$LOGS/estimate.log"
  fi
}

stage_multi() {
  stage "multi: $NPROC processes, tune --shard auto under $LAUNCHER"
  rm -rf "$OUT/parts" "$LOGS"/tune-rank*.log
  mkdir -p "$OUT/parts"
  # Each process's output in its own log, named by the rank its launcher gave it.
  cat >"$OUT/rank.sh" <<EOF
#!/usr/bin/env bash
r=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-\${RANK:-\${SLURM_PROCID:-0}}}}
exec "$GT" tune "$SHAPES_FILE" -o "$OUT/parts/tuned.db" --shard auto $TUNE_ARGS >"$LOGS/tune-rank\$r.log" 2>&1
EOF
  local ts rc
  ts=$(now)
  if [ "$MODE" = share ]; then
    CUDA_VISIBLE_DEVICES=0 launch "$NPROC" bash "$OUT/rank.sh"
  else
    launch "$NPROC" bash "$OUT/rank.sh"
  fi
  rc=$?
  elapsed "$ts" "$(now)" >"$OUT/wall_multi.txt"
  echo "$LAUNCHER exit $rc, wall $(cat "$OUT/wall_multi.txt") s"
  for f in "$LOGS"/tune-rank*.log; do
    echo "  $(basename "$f"): $(grep -m1 'shard .* of .* from' "$f" | sed 's/^gemmtune tune: //')"
    grep -E '^(Summary|DB):|calibration (before|after)|warning' "$f" | sed 's/^/    /'
  done
  "$GT" merge "$OUT/parts" -o "$OUT/merged.db" >"$LOGS/merge.log" 2>&1
  echo "merge exit $?: $(grep -E '^merged [0-9]+ DBs' "$LOGS/merge.log")"
  grep '^calibration:' "$LOGS/merge.log" | grep -v '^calibration: kept' | sed 's/^/  /'
  return "$rc"
}

stage_one() {
  local dev ts rc
  dev=$(visible_entry 0)
  stage "one: the same tune in one process $([ "$MODE" = cpu ] && echo "on the host" || echo "on GPU $dev")"
  rm -rf "$OUT/one"
  mkdir -p "$OUT/one"
  ts=$(now)
  if [ "$MODE" = cpu ]; then
    # shellcheck disable=SC2086
    "$GT" tune "$SHAPES_FILE" -o "$OUT/one/tuned.db" $TUNE_ARGS >"$LOGS/tune-one.log" 2>&1
  else
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$dev "$GT" tune "$SHAPES_FILE" -o "$OUT/one/tuned.db" $TUNE_ARGS >"$LOGS/tune-one.log" 2>&1
  fi
  rc=$?
  elapsed "$ts" "$(now)" >"$OUT/wall_one.txt"
  echo "tune exit $rc, wall $(cat "$OUT/wall_one.txt") s"
  grep -E '^(Summary|DB):|calibration (before|after)|warning' "$LOGS/tune-one.log" | sed 's/^/  /'
  return "$rc"
}

stage_compare() {
  stage "compare: the sharded run against one process"
  local req skip=() share=()
  case $MODE in
    gpu) req=shards-disjoint,shapes-once,calibration-lines,devices,keys,times,speedup,calibration ;;
    share) req=shards-disjoint,shapes-once,calibration-lines,devices; share=(--share) ;;
    cpu) req=shards-disjoint,shapes-once,calibration-lines,keys; skip=(--skip devices) ;;
  esac
  # --no-calibration in TUNE_ARGS: no lines to look for.
  case " $TUNE_ARGS " in *" --no-calibration "*) req=${req//,calibration-lines/} ;; esac
  python3 "$root/bench/multigpu_check.py" --parts "$OUT/parts" --merged "$OUT/merged.db" \
    --one "$OUT/one/tuned.db" --logs "$LOGS" --shapes "$SHAPES_FILE" --nproc "$NPROC" \
    --wall-multi "$(cat "$OUT/wall_multi.txt" 2>/dev/null || echo 0)" \
    --wall-one "$(cat "$OUT/wall_one.txt" 2>/dev/null || echo 0)" --target "$TARGET" \
    --require "$req" "${skip[@]}" "${share[@]}" --json "$OUT/check.json" | tee "$LOGS/check.txt"
  return "${PIPESTATUS[0]}"
}

stage_verify() {
  if [ "$MODE" != gpu ] || [ "$NPROC" -lt 2 ]; then
    echo "verify: skipped ($([ "$MODE" = gpu ] && echo "one GPU: none other than device 0" || echo "$MODE mode"))"
    return 0
  fi
  local dev
  dev=$(visible_entry 1)
  stage "verify: the llama client under the merged DB on GPU $dev"
  CUDA_VISIBLE_DEVICES=$dev DB=$OUT/merged.db bash "$root/bench/llama_verify.sh" "$BUILD" "$OUT/verify" \
    >"$LOGS/verify.log" 2>&1
  local rc=$?
  sed -n '/^=== summary/,$p' "$LOGS/verify.log"
  return "$rc"
}

fail=0
declare -A src
for s in $STAGES; do
  case $s in
    plan|multi|one|compare|verify) "stage_$s"; src[$s]=$? ;;
    *) die "unknown stage '$s' (plan multi one compare verify)" ;;
  esac
  [ "${src[$s]}" -eq 0 ] || fail=1
done

stage "summary"
echo "mode $MODE: $NPROC processes under $LAUNCHER; tune $TUNE_ARGS; $(($(grep -vc '^#' "$SHAPES_FILE") - 1)) shapes"
for s in $STAGES; do echo "  stage $s: exit ${src[$s]}"; done
[ -f "$OUT/wall_multi.txt" ] && echo "wall: $NPROC processes $(cat "$OUT/wall_multi.txt") s"
[ -f "$OUT/wall_one.txt" ] && echo "wall: one process $(cat "$OUT/wall_one.txt") s"
[ -f "$LOGS/check.txt" ] && sed 's/^/  /' "$LOGS/check.txt"
if [ $fail -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit $fail
