#!/usr/bin/env bash
# Issue 16 acceptance on a GPU machine: an unmodified fp8 PyTorch client (bench/fp8_client.py:
# torch._scaled_mm, e4m3, tensorwise and rowwise scales, bf16 output with and without a bias,
# decode and prefill token counts, in a CUDA graph) through
#   a. gemmtune capture: every fp8 call keyed (scale modes in the key), none "passed through"
#   b. gemmtune tune: the fp8 keys raced against the application's own cuBLASLt call
#   c. gemmtune verify --db: every tuned fp8 key engaged by kernel identity, the client's outputs
#      within the fp8 bound of the fp64 reference under the DB too
# Usage: bash bench/fp8_verify.sh BUILD OUTDIR. Environment: TOKENS (1,16,256), MODES
# (tensor,row; add block for DeepSeek-V3's 1x128 / 128x128 scaling), TUNE_ARGS.
# Exit 0 pass, 1 fail, 2 setup error.
set -uo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup fp8_verify.sh "$@"
TOKENS=${TOKENS:-1,16,256}
TUNE_ARGS=${TUNE_ARGS:---search quick --budget 2 --finalists 3 --rounds 7}
CLIENT=(python3 "$root/bench/fp8_client.py" --tokens "$TOKENS" --modes "${MODES:-tensor,row}")
[ -x "$GT" ] || die "$GT not built"
fail=0
stage "a. capture"
timeout -k 5 120 "$GT" capture -o "$OUT/fp8_shapes.csv" -- "${CLIENT[@]}" --reps 3 >"$OUT/capture.log" 2>&1
rc=$?
grep -vE '^check ' "$OUT/capture.log" | tail -n 30
[ $rc -eq 0 ] && [ -s "$OUT/fp8_shapes.csv" ] || die "capture failed (exit $rc)"
nf8=$(grep -c 'f8e4m3' "$OUT/fp8_shapes.csv")
echo "fp8 keys in the shapes file: $nf8"
[ "$nf8" -gt 0 ] || { echo "FAIL: no fp8 key captured"; fail=1; }
grep -q 'passed through (not recorded)' "$OUT/capture.log" && { echo "FAIL: fp8 calls passed through unrecorded"; fail=1; }
stage "b. tune ($TUNE_ARGS)"
# shellcheck disable=SC2086
timeout -k 5 240 "$GT" tune "$OUT/fp8_shapes.csv" -o "$OUT/fp8.db" $TUNE_ARGS >"$OUT/tune.log" 2>&1
rc=$?
grep -E '^ *[0-9]+  |^Summary|^Tuned|^DB|failed' "$OUT/tune.log" | tail -n 40
[ $rc -le 1 ] && [ -s "$OUT/fp8.db" ] || die "tune failed (exit $rc)"
stage "c. verify"
timeout -k 5 200 "$GT" verify --db "$OUT/fp8.db" --runs 2 --timeout 120 --json "$OUT/verify.json" \
  --keep "$OUT/verify" -- "${CLIENT[@]}" --reps 20 >"$OUT/verify.log" 2>&1
vrc=$?
grep -E '^(\[|PASS|FAIL|UNVERIFIED|GPU kernel time|Amdahl|  (with|without) the DB|  speedup)' "$OUT/verify.log" | head -n 60
grep -E 'largest relative error' "$OUT/verify.log" | tail -n 2
[ $vrc -eq 0 ] || { echo "FAIL: verify exited $vrc"; fail=1; }
stage "summary"
if [ $fail -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit $fail
