#!/usr/bin/env bash
# The wg family's NN layout in a real client, end to end: bench/layout_client.py issues x @ W with
# W stored [in, out] (cuBLAS sees NN GEMMs), and
#   a. gemmtune capture records its GEMMs (batches 1 and 16)          -> nn_shapes.csv
#   b. gemmtune tune races cuBLAS, cuBLASLt and the own instances     -> nn.db
#   c. gemmtune verify, per batch: every tuned key must run its tuned kernel (CUPTI trace), and
#      the graph-replayed step is timed with and without the DB; the client itself fails when its
#      output under the shim is further than --tol from an fp32 copy of the computation.
# Every log lands in OUTDIR. Exit 0 pass, 1 fail, 2 setup error.
#
# Usage: bash bench/layout_verify.sh BUILD OUTDIR
# Environment: BATCHES (default "1 16"), RUNS (verify's end-to-end runs per side, 5), TUNE_ARGS
#   (default "--budget 3 --finalists 4 --rounds 9").
set -uo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup layout_verify.sh "$@"
CLIENT=$root/bench/layout_client.py
BATCHES=${BATCHES:-1 16}
RUNS=${RUNS:-5}
TUNE_ARGS=${TUNE_ARGS:---budget 3 --finalists 4 --rounds 9}
[ -x "$GT" ] || die "$GT not built"
[ -f "$SHIM" ] || die "$SHIM not built (CUDA off?)"

# Tune against the cuBLAS PyTorch loads (cuBLASLt rows record its version). The client needs
# torch alone; without it the default cuBLASLt is used and the capture below says what failed.
lt_dir=
bench_torch_probe "$OUT/torch_env.txt" && lt_dir=$(bench_torch_lib_dir "$OUT/torch_env.txt" libcublasLt)
[ -n "$lt_dir" ] && export LD_LIBRARY_PATH="$lt_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "PyTorch's cuBLASLt: ${lt_dir:-not found (default one)}"

batches_csv=$(echo "$BATCHES" | tr ' ' ',')
stage "a. capture (batch $batches_csv)"
rm -f "$OUT/nn_shapes.csv"
timeout -k 5 120 "$GT" capture --lib "$SHIM" -o "$OUT/nn_shapes.csv" -- \
  python3 "$CLIENT" --batch "$batches_csv" --reps 5 >"$OUT/capture.log" 2>&1
rc=$?
tail -n 12 "$OUT/capture.log"
[ $rc -eq 0 ] && [ -s "$OUT/nn_shapes.csv" ] || die "capture failed (exit $rc): $OUT/capture.log"
cat "$OUT/nn_shapes.csv"

stage "b. tune $(($(wc -l <"$OUT/nn_shapes.csv") - 1)) keys"
rm -f "$OUT/nn.db" "$OUT/nn.db.journal"
# shellcheck disable=SC2086
timeout -k 5 200 "$GT" tune "$OUT/nn_shapes.csv" -o "$OUT/nn.db" $TUNE_ARGS >"$OUT/tune.log" 2>&1
rc=$?
tail -n 25 "$OUT/tune.log"
[ $rc -le 1 ] || die "tune failed (exit $rc): $OUT/tune.log"
nrows=$(grep -c '^gemm,' "$OUT/nn.db" 2>/dev/null)
echo "DB: $OUT/nn.db ($nrows rows)"
[ "${nrows:-0}" -gt 0 ] || { echo "FAIL: the DB has no rows: nothing to verify"; echo "RESULT: FAIL"; exit 1; }

fail=0
for b in $BATCHES; do
  stage "c. verify, batch $b"
  timeout -k 5 200 "$GT" verify --db "$OUT/nn.db" --runs "$RUNS" --warmup 1 --timeout 120 \
    --keep "$OUT/verify-b$b" -- python3 "$CLIENT" --batch "$b" >"$OUT/verify-b$b.log" 2>&1
  rc=$?
  awk '/^\[not issued\]/ { skip = 1 } /^$/ { skip = 0 } !skip' "$OUT/verify-b$b.log" | tail -n 40
  echo "batch $b: verify exit $rc"
  [ $rc -eq 0 ] || fail=1
done
if [ $fail -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit $fail
