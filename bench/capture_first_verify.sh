#!/usr/bin/env bash
# Keys first seen inside CUDA graph capture, end to end in PyTorch: bench/capture_first_graph.py
# captures one decode step per batch size with torch.cuda.graph, every key's first call inside the
# capture, and replays the graphs.
#   a. gemmtune capture records its GEMMs (all batch sizes, counted under capture) -> shapes.csv
#   b. gemmtune tune races cuBLAS, cuBLASLt and the own instances               -> capfirst.db
#   c. gemmtune verify, per batch size: every tuned key the step issued must run its tuned kernel
#      in the graph replays (CUPTI trace, "from graphs"), with the replayed step timed with and
#      without the DB; the client fails by itself when its output under the shim is further than
#      --tol from an fp32 copy of the computation
#   d. the same with --no-warmup-gemm (no GEMM at all outside capture): verify's verdicts are kept
#      in the logs; own-kernel rows engage, cuBLASLt rows are expected to stay on cuBLAS there
#      (informational: this stage never fails the run)
# Every log lands in OUTDIR. Exit 0 pass, 1 fail, 2 setup error.
#
# Usage: bash bench/capture_first_verify.sh BUILD OUTDIR
# Environment: BATCHES (default "1 4 16"), RUNS (verify's end-to-end runs per side, 3), TUNE_ARGS
#   (default "--budget 3 --finalists 4 --rounds 9"), LAYERS (1).
set -uo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup capture_first_verify.sh "$@"
CLIENT=$root/bench/capture_first_graph.py
BATCHES=${BATCHES:-1 4 16}
RUNS=${RUNS:-3}
LAYERS=${LAYERS:-1}
TUNE_ARGS=${TUNE_ARGS:---budget 3 --finalists 4 --rounds 9}
[ -x "$GT" ] || die "$GT not built"
[ -f "$SHIM" ] || die "$SHIM not built (CUDA off?)"
[ -f "$TRACER" ] || die "$TRACER not built (CUPTI headers missing?)"

# Tune against the cuBLAS PyTorch loads (cuBLASLt rows record its version).
lt_dir=
bench_torch_probe "$OUT/torch_env.txt" && lt_dir=$(bench_torch_lib_dir "$OUT/torch_env.txt" libcublasLt)
[ -n "$lt_dir" ] && export LD_LIBRARY_PATH="$lt_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "PyTorch's cuBLASLt: ${lt_dir:-not found (default one)}"

batches_csv=$(echo "$BATCHES" | tr ' ' ',')
stage "a. capture (batch $batches_csv, every key first called inside torch.cuda.graph)"
rm -f "$OUT/shapes.csv"
timeout -k 5 300 "$GT" capture --lib "$SHIM" -o "$OUT/shapes.csv" -- \
  python3 "$CLIENT" --batch "$batches_csv" --layers "$LAYERS" --reps 5 >"$OUT/capture.log" 2>&1
rc=$?
tail -n 16 "$OUT/capture.log"
[ $rc -eq 0 ] && [ -s "$OUT/shapes.csv" ] || die "capture failed (exit $rc): $OUT/capture.log"
cat "$OUT/shapes.csv"

stage "b. tune $(($(grep -vc '^#' "$OUT/shapes.csv") - 1)) keys"
rm -f "$OUT/capfirst.db" "$OUT"/capfirst.db.journal*
# shellcheck disable=SC2086
timeout -k 5 900 "$GT" tune "$OUT/shapes.csv" -o "$OUT/capfirst.db" $TUNE_ARGS >"$OUT/tune.log" 2>&1
rc=$?
tail -n 30 "$OUT/tune.log"
[ $rc -le 1 ] || die "tune failed (exit $rc): $OUT/tune.log"
nrows=$(grep -c '^gemm,' "$OUT/capfirst.db" 2>/dev/null)
echo "DB: $OUT/capfirst.db ($nrows rows)"
[ "${nrows:-0}" -gt 0 ] || { echo "FAIL: the DB has no rows: nothing to verify"; echo "RESULT: FAIL"; exit 1; }

fail=0
for b in $BATCHES; do
  stage "c. verify, batch $b (one eager GEMM of another shape first)"
  timeout -k 5 300 "$GT" verify --db "$OUT/capfirst.db" --runs "$RUNS" --warmup 1 --timeout 200 \
    --keep "$OUT/verify-b$b" -- python3 "$CLIENT" --batch "$b" --layers "$LAYERS" \
    >"$OUT/verify-b$b.log" 2>&1
  rc=$?
  awk '/^\[not issued\]/ { skip = 1 } /^$/ { skip = 0 } !skip' "$OUT/verify-b$b.log" | tail -n 40
  echo "batch $b: verify exit $rc"
  [ $rc -eq 0 ] || fail=1
done
for b in $BATCHES; do
  stage "d. verify, batch $b, no GEMM outside capture (informational)"
  timeout -k 5 300 "$GT" verify --db "$OUT/capfirst.db" --no-e2e --timeout 200 \
    --keep "$OUT/verify-nowarm-b$b" -- python3 "$CLIENT" --batch "$b" --layers "$LAYERS" \
    --no-warmup-gemm >"$OUT/verify-nowarm-b$b.log" 2>&1
  echo "batch $b (no warm-up GEMM): verify exit $? (own-kernel rows engage; cuBLASLt rows may not)"
  grep -E '^\[(engaged|not engaged|partly)' "$OUT/verify-nowarm-b$b.log" | head -n 20
done
if [ $fail -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit $fail
