#!/usr/bin/env bash
# Issue 6 acceptance: prove that the tuned DB engages in an unmodified PyTorch + transformers
# workload (bench/llama_model.py: a random-weight Llama, 4 layers, bf16, a 1-token decode step
# captured in a CUDA graph and replayed), and measure what it is worth end to end:
#   a. gemmtune capture the model's GEMMs (batch 1 and 16 in one run)   -> llama_shapes.csv
#   b. gemmtune tune them (against the cuBLAS PyTorch itself loads)     -> llama.db
#   c. per batch size: gemmtune verify --db llama.db -- <the model with --graph>: every tuned key
#      the model issued must engage (shim counters + CUPTI kernel trace, graph replays included),
#      with the GEMM share of GPU time, the Amdahl bound from the rows' speedups, and the graph
#      step time with vs without the DB (interleaved runs)
#   d. a deliberately wrong DB (the same rows with sm_count 114) must make verify fail and name
#      the field
# Summary at the end; every log under OUTDIR. Exit 0 pass, 1 fail, 2 setup error.
#
# The model prints "batch B: graph (...) replay median X us"; a small wrapper adds the line
# "gemmtune-metric: decode_step_bB X us" after it, which verify measures end to end (lower is
# better). A model that prints its own gemmtune-metric lines needs no wrapper; it does no harm.
#
# Usage: bash bench/llama_verify.sh BUILD OUTDIR
# Environment: BATCHES (default "1 16"), RUNS (end-to-end runs per side, 3), WARMUP (0),
#   REPS (graph replays per run, 50), PROMPT_LEN (16),
#   TUNE_ARGS (default "--budget 3 --finalists 4 --rounds 9": the tune stage has to fit),
#   DB (a tuned DB to verify instead of capturing and tuning; by default the DB of the torch
#   stage, OUTDIR/../torch/llama.db, is reused when it exists; FRESH=1 ignores it),
#   MODEL_ARGS (extra llama_model.py arguments, e.g. "--family gpt2").
set -uo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup llama_verify.sh "$@"
MODEL=$root/bench/llama_model.py
BATCHES=${BATCHES:-1 16}
RUNS=${RUNS:-3}
WARMUP=${WARMUP:-0}
REPS=${REPS:-50}
PROMPT_LEN=${PROMPT_LEN:-16}
TUNE_ARGS=${TUNE_ARGS:---budget 3 --finalists 4 --rounds 9}

[ -x "$GT" ] || die "$GT not built"
[ -f "$SHIM" ] || die "$SHIM not built (CUDA off?)"
[ -f "$TRACER" ] || die "$TRACER not built (CUPTI headers missing?)"
[ -f "$MODEL" ] || die "$MODEL missing"

stage "environment"
bench_torch_probe "$OUT/torch_env.txt" transformers
rc=$?
cat "$OUT/torch_env.txt"
[ $rc -eq 0 ] || die "PyTorch cannot run a bf16 matmul here"
# Tune and calibrate against the cuBLAS PyTorch loads: cuBLASLt rows record its version, and the
# kernels a configuration runs are that version's.
lt_dir=$(bench_torch_lib_dir "$OUT/torch_env.txt" libcublasLt)
if [ -n "$lt_dir" ]; then
  echo "using PyTorch's cuBLAS in $lt_dir"
  export LD_LIBRARY_PATH="$lt_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# The model with a metric line after each graph replay summary; the model's exit status is kept.
WRAP=$OUT/model_metric.sh
cat >"$WRAP" <<EOF
#!/usr/bin/env bash
set -o pipefail
python3 "$MODEL" ${MODEL_ARGS:-} "\$@" 2>&1 | awk '{ print; fflush() }
  / graph \(.*\) replay median / {
    b = \$2; sub(/:\$/, "", b)
    for (i = 1; i < NF; i++) if (\$i == "median") { printf "gemmtune-metric: decode_step_b%s %s us\n", b, \$(i + 1); fflush() }
  }'
EOF
chmod +x "$WRAP"

# ---- a, b: the DB -------------------------------------------------------------------------------
if [ -z "${DB:-}" ] && [ "${FRESH:-0}" != 1 ] && [ -s "$OUT/../torch/llama.db" ]; then
  DB=$(cd "$OUT/../torch" && pwd)/llama.db
  echo "reusing the DB of the torch stage: $DB (FRESH=1 captures and tunes again)"
fi
if [ -n "${DB:-}" ]; then
  [ -s "$DB" ] || die "DB=$DB is missing or empty"
else
  DB=$OUT/llama.db
  batches_csv=$(echo "$BATCHES" | tr ' ' ',')
  stage "a. capture (batch $batches_csv, graph decode step)"
  rm -f "$OUT/llama_shapes.csv"
  timeout -k 5 120 "$GT" capture --lib "$SHIM" -o "$OUT/llama_shapes.csv" -- \
    python3 "$MODEL" ${MODEL_ARGS:-} --batch "$batches_csv" --prompt-len "$PROMPT_LEN" --graph --reps 5 \
    >"$OUT/capture.log" 2>&1
  rc=$?
  tail -n 20 "$OUT/capture.log"
  [ $rc -eq 0 ] && [ -s "$OUT/llama_shapes.csv" ] || die "capture failed (exit $rc): $OUT/capture.log"
  stage "b. tune $(($(wc -l <"$OUT/llama_shapes.csv") - 1)) keys ($TUNE_ARGS)"
  rm -f "$DB" "$DB.journal"
  # shellcheck disable=SC2086
  timeout -k 5 150 "$GT" tune "$OUT/llama_shapes.csv" -o "$DB" $TUNE_ARGS >"$OUT/tune.log" 2>&1
  rc=$?
  tail -n 25 "$OUT/tune.log"
  [ $rc -le 1 ] || die "tune failed (exit $rc): $OUT/tune.log"
  [ -f "$DB" ] || die "tune wrote no DB"
fi
nrows=$(grep -c '^gemm,' "$DB")
echo "DB: $DB ($nrows rows)"
[ "$nrows" -gt 0 ] || { echo "FAIL: the DB has no rows: nothing to verify"; echo "RESULT: FAIL"; exit 1; }

# ---- c: verify per batch size -----------------------------------------------------------------
fail=0
declare -A vrc
for b in $BATCHES; do
  stage "c. verify, batch $b ($RUNS+$RUNS end-to-end runs)"
  timeout -k 5 200 "$GT" verify --db "$DB" --runs "$RUNS" --warmup "$WARMUP" --timeout 120 \
    --keep "$OUT/verify-b$b" --json "$OUT/verify-b$b.json" \
    -- "$WRAP" --batch "$b" --prompt-len "$PROMPT_LEN" --graph --reps "$REPS" >"$OUT/verify-b$b.log" 2>&1
  vrc[$b]=$?
  # everything but the blocks of DB rows this batch size does not issue (the other batch's)
  awk '/^\[not issued\]/ { skip = 1 } /^$/ { skip = 0 } !skip' "$OUT/verify-b$b.log" | tail -n 90
  [ "${vrc[$b]}" -eq 0 ] || fail=1
done

# ---- d: the wrong DB --------------------------------------------------------------------------
b1=$(echo "$BATCHES" | awk '{ print $1 }')
stage "d. a DB for another device (sm_count 114): verify must fail and say why (batch $b1)"
sed -E 's/^(gemm,([^,]*,){21})[0-9]+,/\1114,/' "$DB" >"$OUT/wrong_sm114.db"
changed=$(diff "$DB" "$OUT/wrong_sm114.db" | grep -c '^>')
echo "rows changed: $changed of $nrows"
timeout -k 5 120 "$GT" verify --db "$OUT/wrong_sm114.db" --no-e2e --timeout 100 --keep "$OUT/verify-wrong" \
  -- "$WRAP" --batch "$b1" --prompt-len "$PROMPT_LEN" --graph --reps 5 >"$OUT/verify-wrong.log" 2>&1
wrong_rc=$?
grep -E '^(\[near miss\]|FAIL|PASS|UNVERIFIED)' "$OUT/verify-wrong.log" | head -n 8
grep -m 3 -E 'sm_count: [0-9]+ vs 114' "$OUT/verify-wrong.log" | sed 's/^ */  /'
if [ $wrong_rc -eq 1 ] && grep -Eq 'sm_count: [0-9]+ vs 114' "$OUT/verify-wrong.log"; then
  wrong_ok=1
else
  wrong_ok=0
  fail=1
  echo "FAIL: the wrong DB did not make verify fail naming sm_count (exit $wrong_rc)"
fi

# ---- summary ----------------------------------------------------------------------------------
stage "summary"
for b in $BATCHES; do
  log=$OUT/verify-b$b.log
  eng=$(grep -c '^\[engaged\]' "$log")
  other=$(grep -cE '^\[(partly|not engaged|unverified|near miss)\]' "$log")
  echo "batch $b: verify exit ${vrc[$b]}; $eng tuned keys engaged, $other not"
  grep -E '^(PASS|FAIL|UNVERIFIED)' "$log" | sed 's/^/  /'
  grep -E '^GPU kernel time' "$log" | sed 's/^/  /'
  grep -E '^Amdahl bound' "$log" | sed 's/^/  /'
  grep -E '^  (with the DB|without the DB|speedup):' "$log" | sed 's/^ */  step time /'
done
echo "wrong DB (sm_count 114): verify exit $wrong_rc, field named: $([ $wrong_ok = 1 ] && echo yes || echo no)"
echo "wall time: $(($(date +%s) - t0)) s (target < 240 s)"
if [ $fail -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit $fail
