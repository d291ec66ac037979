#!/usr/bin/env bash
# Issue 17 (a): where tune's live replay and the application disagree on a row, which kernels ran
# and for how long on each side. For every row of DB named by ROWS (OUTxTOKENS, default the llama
# 8B qkv rows at 1..16 tokens), one process each, all under the kernel tracer
# (libgemmtune_trace.so: per kernel name its calls, total, min and max time):
#   check  `gemmtune check --live` over a DB holding that row alone: the live replay's plain path
#          (the row's baseline through its provider) and its served path (the runtime's dispatch)
#   app    bench/decode_vs_inductor.py --db (the same one-row DB) --no-inductor, one round: the
#          cublas column (F.linear, no shim) and the gemmtune column (F.linear under the shim)
# Then, per row and process, each GEMM kernel's name, calls and mean/min/max time, beside the
# graph times each side reported. Equal kernels at equal kernel times with different graph times
# point at the gaps between kernels; different kernels at the selection. check runs with the
# cuBLAS torch loads (LD_LIBRARY_PATH, as tune does in bench/decode_vs_inductor.py).
#
# Limits: check replays in its shape worker, which ends with _exit, so that trace file says
# status=incomplete and the check side has only its graph times; a kernel launched with
# programmatic dependent launch (own kernels) starts before the previous one ends, so its CUPTI
# duration overlaps its neighbour's and its mean is no per-call time (cuBLAS's kernels here are
# launched without it).
#
# Usage: bash bench/probe_live_vs_app.sh BUILD OUTDIR DB
# Environment: ROWS (default "6144x1 6144x2 6144x4 6144x8 6144x16"), K (in_features, 4096),
# LABEL (the decode_vs_inductor --filter, default llama3_8b/qkv), SHAPES (its --shapes, 8b).
set -uo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup probe_live_vs_app.sh "$@"
DB=${3:?usage: probe_live_vs_app.sh BUILD OUTDIR DB}
DB=$(cd "$(dirname "$DB")" && pwd)/$(basename "$DB")
[ -x "$GT" ] || die "$GT not built"
[ -f "$TRACER" ] || die "$TRACER not built"
py=python3
[ -x /opt/torch/.venv/bin/python ] && py=/opt/torch/.venv/bin/python
K=${K:-4096}
check_env=()
if bench_torch_probe "$OUT/torch_env.txt"; then
  lt_dir=$(bench_torch_lib_dir "$OUT/torch_env.txt" libcublasLt)
  [ -n "$lt_dir" ] && check_env=("LD_LIBRARY_PATH=$lt_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
for r in ${ROWS:-6144x1 6144x2 6144x4 6144x8 6144x16}; do
  n=${r%x*} t=${r#*x}
  d="$OUT/$r"
  mkdir -p "$d"
  # The comment lines, the column header and the one row: gemm,types...,T,N,M,N,K,... (fields 10-12: m, n, k).
  awk -F, -v m="$n" -v tk="$t" -v k="$K" '/^#/ || /^op,/ || ($10 == m && $11 == tk && $12 == k)' "$DB" >"$d/row.db"
  if [ "$(grep -vc '^#' "$d/row.db")" -eq 0 ]; then
    echo "$r: no row in $DB"
    continue
  fi
  stage "$r: check --live"
  env "${check_env[@]}" CUDA_INJECTION64_PATH="$TRACER" GEMMTUNE_TRACE="$d/trace_check_%p.txt" \
    "$GT" check "$d/row.db" --live --format csv >"$d/check.csv" 2>"$d/check.log"
  echo "check exit $?"
  cat "$d/check.csv"
  stage "$r: the application (cublas and gemmtune columns, one round)"
  CUDA_INJECTION64_PATH=$TRACER GEMMTUNE_TRACE="$d/trace_app_%p.txt" \
    "$py" "$root/bench/decode_vs_inductor.py" --gemmtune "$GT" --db "$d/row.db" --no-inductor \
    --shapes "${SHAPES:-8b}" --filter "${LABEL:-llama3_8b/qkv}" --tokens "$t" --rounds 1 \
    --out "$d/app" >"$d/app.log" 2>&1
  echo "app exit $?"
  grep -E "^${LABEL:-llama3_8b/qkv} " "$d/app.log" | head -n 3
  for f in "$d"/trace_*.txt; do
    [ -f "$f" ] || continue
    echo "--- $(basename "$f")"
    # name,calls,total_ns,min_ns,max_ns,...: the GEMM kernels, with their mean.
    awk -F, 'NR == 1 { print; next } /^name,/ { next }
      $2 > 0 && ($1 ~ /gemm|nvjet|gt_sm90|splitK|cutlass|sm90_xmma|Kernel/) {
        printf "%s calls=%d mean_us=%.3f min_us=%.3f max_us=%.3f\n", $1, $2, $3 / $2 / 1000, $4 / 1000, $5 / 1000 }' "$f"
  done
done
