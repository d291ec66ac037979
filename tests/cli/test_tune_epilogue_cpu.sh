#!/usr/bin/env bash
# Epilogue keys through the whole loop on the CPU providers: a shapes file in the BLAS-key view
# with bias and bias_gelu rows is tuned, the rows are written with the epilogue in their key and
# look up (a key without the epilogue misses on exactly that field), and the planted candidates
# that drop or double the bias fail the gate and never reach the DB.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$TMP/epi.csv"
cat >"$shapes" <<'EOF'
label,a_type,b_type,c_type,d_type,transa,transb,m,n,k,epilogue
proj_bias,bf16,bf16,bf16,bf16,T,N,192,8,128,bias
mlp_up_gelu,f32,f32,f32,f32,T,N,160,24,96,bias_gelu
EOF
db="$TMP/epi.db"

expect_exit 0 "tune epilogue keys on the CPU providers" "$GT" tune --cpu --rounds 5 "$shapes" -o "$db"
expect_grep "summary line" 'Summary: 2 shapes tuned'
expect_grep "no shape failed" 'Summary: 2 shapes tuned .*, 0 failed'
# Key columns: 1 op, 2-5 types, 8-9 transa/transb, 10-12 m,n,k, 20 epilogue; 24 provider.
row() { awk -F, -v m="$1" -v n="$2" -v k="$3" -v e="$4" -v t="$5" \
  '$1=="gemm" && $2==t && $8=="T" && $9=="N" && $10==m && $11==n && $12==k && $20==e' "$db"; }
[ -n "$(row 192 8 128 bias bf16)" ] && ok "bias row written with epilogue=bias in its key" \
  || bad "no bias row" "$(cat "$db")"
[ -n "$(row 160 24 96 bias_gelu f32)" ] && ok "bias_gelu row written with epilogue=bias_gelu in its key" \
  || bad "no bias_gelu row" "$(cat "$db")"
awk -F, '$1=="gemm" && $24!="cpu" { bad=1 } END { exit bad }' "$db" \
  && ok "every row's winner is a cpu instance" || bad "a row from another provider" "$(cat "$db")"

# The rows are found under their own key, and only there.
expect_exit 0 "explain hits the bias key" "$GT" explain "$db" --cpu --blas 192,8,128 --ops TN --epilogue bias
expect_grep "HIT printed" '^HIT .*epilogue=bias,'
expect_exit 1 "the same shape without the epilogue misses" "$GT" explain "$db" --cpu --blas 192,8,128 --ops TN
expect_grep "miss names the epilogue" 'nearest #1 \(1 field differ\): epilogue: none vs bias '
expect_exit 0 "explain hits the bias_gelu key" "$GT" explain "$db" --cpu --blas 160,24,96 --ops TN --dtype f32 --epilogue bias_gelu

# The planted bias mistakes: gated out on a bias key, every disposition listed.
expect_exit 0 "profile a bias_gelu key with planted candidates" \
  env GEMMTUNE_TEST_PROVIDERS=1 "$GT" profile --cpu --rounds 3 --explain --blas 160,24,96 --ops TN --dtype f32 --epilogue bias_gelu
expect_grep "dropped bias fails the gate" 'failed-gate .*testonly_nobias'
expect_grep "doubled bias fails the gate" 'failed-gate .*testonly_twobias'
expect_grep "cpu instances pass the gate" 'passed .*cpu_blk_f32_'
expect_nogrep "a planted candidate is not best" '^Best: testonly'
expect_grep "Arguments line keeps the epilogue" '^Arguments: .*epilogue=bias_gelu'
expect_exit 0 "profile a relu key with planted candidates" \
  env GEMMTUNE_TEST_PROVIDERS=1 "$GT" profile --cpu --rounds 3 --explain --blas 160,24,96 --ops TN --dtype f32 --epilogue relu
expect_nogrep "no bias, no bias candidates listed" 'testonly_(nobias|twobias)'
GEMMTUNE_TEST_PROVIDERS=1 "$GT" tune --cpu --rounds 5 "$shapes" -o "$TMP/planted.db" >"$TMP/planted.out" 2>&1 || true
if grep -q testonly "$TMP/planted.db" 2>/dev/null; then bad "planted candidate written to DB" "$(cat "$TMP/planted.db")"; else ok "planted candidates never written"; fi
grep -q '^Summary: 2 shapes tuned' "$TMP/planted.out" && ok "tune with planted candidates finishes" \
  || bad "tune with planted candidates" "$(cat "$TMP/planted.out")"
finish
