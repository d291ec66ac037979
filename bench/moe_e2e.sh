#!/usr/bin/env bash
# Issue 24 acceptance: gemmtune on an unmodified transformers MoE model (bench/moe_e2e.py:
# Mixtral- and Qwen3-MoE-shaped configs, random weights, transformers' default experts
# implementation = torch._grouped_mm), a graph-captured decode step at batch 1 and 16 and an eager
# prefill, per family:
#   a. gemmtune capture (the shim and the torch bridge): the grouped keys must be recorded with
#      calls and GPU time, entry grouped_mm                                  -> FAM/shapes.csv
#   b. gemmtune tune: cuBLAS keys are tuned as always; then tune races the grouped keys in a torch
#      process (python3 -m gemmtune.grouped: torch's own path against the own grouped instances,
#      BUILD/libgemmtune_grouped.so) and puts the winners' rows into its DB     -> FAM/tuned.db
#   c. gemmtune verify --db: every tuned key engaged by kernel identity (a grouped key: its own
#      kernel where prepare_grouped_gemm_data and the CUTLASS kernel ran before)
#   d. logits: the run under the DB no further from an fp32 copy than the plain bf16 run (+25%)
# Exit 0 pass, 1 fail, 2 setup error. Every log lands in OUTDIR.
#
# Usage: bash bench/moe_e2e.sh BUILD OUTDIR
# Environment: FAMILIES (default "mixtral qwen3_moe"), BATCHES (1,16), REPS (50), TUNE_ARGS,
# VERIFY_ARGS (e.g. "--runs 3": fewer end-to-end pairs), MODEL (the client: default
# bench/moe_e2e.py; bench/moe_fp8_client.py is an fp8 MoE layer on torch._scaled_grouped_mm with
# rowwise scales, FAMILIES deepseek_v3, qwen3_moe or mixtral).
set -uo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup moe_e2e.sh "$@"
MODEL=${MODEL:-$root/bench/moe_e2e.py}
BATCHES=${BATCHES:-1,16}
REPS=${REPS:-50}
BRIDGE=$BUILD/libgemmtune_torchmm.so
unset GEMMTUNE_TORCH_BRIDGE # capture, run and verify preload the bridge by default
[ -x "$GT" ] || die "$GT not built"
[ -f "$SHIM" ] || die "$SHIM not built (CUDA off?)"
[ -f "$BRIDGE" ] || die "$BRIDGE not built: configure with torch's headers (python3's torch, or -DGT_TORCH_INCLUDE)"
GLIB=$BUILD/libgemmtune_grouped.so
[ -f "$GLIB" ] || die "$GLIB not built (CUDA off?)"

stage "environment"
# The default client is a transformers model; another client (MODEL=) may not need transformers.
extra=transformers
[ "$MODEL" = "$root/bench/moe_e2e.py" ] || extra=
bench_torch_probe "$OUT/torch_env.txt" $extra || die "PyTorch cannot run a bf16 matmul here"
cat "$OUT/torch_env.txt"
fail=0
for fam in ${FAMILIES:-mixtral qwen3_moe}; do
  d="$OUT/$fam"
  mkdir -p "$d"
  args=(--family "$fam" --batch "$BATCHES" --reps "$REPS")

  stage "$fam: a. capture"
  GEMMTUNE_LOG=1 "$GT" capture -o "$d/shapes.csv" -- python3 "$MODEL" "${args[@]}" \
    --json "$d/capture_err.json" >"$d/capture.log" 2>&1 || { echo "FAIL: capture"; fail=1; continue; }
  grep -E 'moe-check|torch bridge' "$d/capture.log"
  ngrouped=$(grep -c ',grouped_mm,' "$d/shapes.csv" || true)
  echo "grouped keys captured: $ngrouped"
  if [ "$ngrouped" -eq 0 ]; then echo "FAIL: no grouped key captured"; fail=1; fi
  "$GT" shapes "$d/shapes.csv" >"$d/shapes.txt" 2>&1
  grep -E 'grouped_mm' "$d/shapes.txt" | head -n 12

  stage "$fam: b. tune: the cuBLAS keys, then the grouped race (own instances against torch's path)"
  # shellcheck disable=SC2086 # TUNE_ARGS is a list of words
  "$GT" tune "$d/shapes.csv" -o "$d/tuned.db" ${TUNE_ARGS:-} >"$d/tune.log" 2>&1
  trc=$?
  tail -n 6 "$d/tune.log"
  grep -A1 -E '^ +[0-9]+  grouped_mm' "$d/tune.log"
  [ $trc -le 1 ] || { echo "FAIL: tune exited $trc"; fail=1; }
  ngrows=$(grep -c '^grouped_mm,' "$d/tuned.db" 2>/dev/null || true)
  echo "grouped rows in tune's DB: ${ngrows:-0}"
  if grep -qE 'grouped_mm.*not tunable here' "$d/tune.log"; then
    echo "FAIL: tune did not race the grouped keys"
    fail=1
  fi

  if [ -s "$d/tuned.db" ] && [ "$(grep -vc '^#' "$d/tuned.db")" -gt 1 ]; then
    stage "$fam: c. verify"
    # shellcheck disable=SC2086 # VERIFY_ARGS is a list of words
    "$GT" verify --db "$d/tuned.db" --json "$d/verify.json" ${VERIFY_ARGS:-} -- python3 "$MODEL" "${args[@]}" \
      >"$d/verify.log" 2>&1
    vrc=$?
    grep -E '^(PASS|FAIL|UNVERIFIED)|grouped' "$d/verify.log" | head -n 20
    [ $vrc -eq 0 ] || { echo "FAIL: verify (exit $vrc)"; fail=1; }

    stage "$fam: d. logits with the DB against the plain run"
    python3 "$MODEL" "${args[@]}" --json "$d/plain.json" >"$d/plain.log" 2>&1
    "$GT" run --db "$d/tuned.db" -- python3 "$MODEL" "${args[@]}" --json "$d/tuned.json" \
      >"$d/tuned.log" 2>&1
    python3 - "$d/plain.json" "$d/tuned.json" <<'PY' || fail=1
import json, sys
plain, tuned = (json.load(open(p)) for p in sys.argv[1:3])
bad = 0
for step, e in sorted(plain.items()):
    t = tuned.get(step, float("inf"))
    ok = t <= 1.25 * e + 1e-4
    bad += not ok
    print("%-10s plain_vs_fp32 %.4e  tuned_vs_fp32 %.4e  %s" % (step, e, t, "ok" if ok else "FAIL"))
sys.exit(1 if bad else 0)
PY
  else
    echo "no tuned rows for $fam: nothing to verify (grouped keys need own grouped kernels)"
  fi
done
[ $fail -eq 0 ] && echo "RESULT: PASS" || echo "RESULT: FAIL"
exit $fail
