#!/usr/bin/env bash
# On the GPU: tune confirms each winner live before writing it, and `check --live` replays a
# tuned row through the runtime's dispatch. Decode shapes are tuned (own kernels usually win
# them): every winner's line has a live speedup or says what the confirmation did, the summary
# counts the confirmations, and every written row is confirmed (live time below the entry
# point's). Then checked with --live: every row that passes has a live line in its note (both
# times and the ratio to the recorded speedup, or why it was not replayed), and the csv carries
# the live columns with numbers for rows replayed live. Last, cuBLASLt keys with an epilogue
# (bias, bias_gelu) and a beta != 0 key are tuned and replayed live against the application's
# cublasLtMatmul with the heuristic's algorithm (cublaslt_heuristic_ws...).
# Exits 77 (skipped) where there is no usable GPU.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! grep -Eq '^cublas +cuda +ready' <<<"$("$GT" list 2>/dev/null)"; then
  echo "no usable GPU: skipped"
  exit 77
fi
shapes="$TMP/s.csv"
printf 'model,proj,tokens,out_features,in_features\ng,a,1,4096,4096\ng,b,4,6144,4096\n' >"$shapes"
expect_exit 0 "tune the decode shapes" "$GT" tune "$shapes" -o "$TMP/t.db" --rounds 5 \
  --providers cublas,cublaslt,kernels
expect_grep "the summary counts the live confirmations" '^(Live confirmation of [0-9]+ winners? |Summary: .* 0 improved)'
expect_nogrep "no winner was skipped on the GPU" ' skip +(improved|unconfirmed) '
awk -F, '$1 == "gemm" { n++; if ($49 != "confirmed" || !($50 > 0) || !($50 < $51)) bad = 1 }
  END { exit bad }' "$TMP/t.db" && ok "every written row is confirmed live, faster than its entry point" \
  || bad "a written row is not confirmed live" "$(cat "$TMP/t.db")"
if ! grep -vq '^#' "$TMP/t.db" || [ "$(grep -vc '^#' "$TMP/t.db")" -lt 2 ]; then
  echo "no row was written (the baseline won both shapes here, or the live path did not confirm): skipped"
  exit 77
fi
set +e
OUT_TXT=$("$GT" check --live "$TMP/t.db" 2>&1)
set -e
expect_grep "passing rows carry a live line" 'live: ([0-9.]+ us served vs [0-9.]+ us [a-z0-9_]+, [0-9.]+x \([0-9.]+ of the recorded [0-9.]+x(; confirmed live at [0-9.]+x when tuned)?\)|not replayed: )'
expect_nogrep "no row crashed or hung" ' (crashed|hung) '
set +e
csv=$("$GT" check --live --format csv "$TMP/t.db" 2>/dev/null)
set -e
OUT_TXT=$csv
expect_grep "csv has the live columns" '^row,verdict,.*,note,live_plain_us,live_served_us,live_speedup$'
if awk -F, 'NR > 1 && $2 == "passes" && $NF != "-" { live++ } END { exit !live }' <<<"$csv"; then
  ok "a passing row was replayed live with numbers"
else
  bad "no passing row has live numbers" "$csv"
fi

# ---- cuBLASLt keys: epilogues and beta != 0, against the application's cublasLtMatmul ---------
cat >"$TMP/lt.csv" <<'EOF'
label,entry,a_type,b_type,c_type,d_type,transa,transb,m,n,k,epilogue,beta_zero
lt_bias,ltmatmul,bf16,bf16,bf16,bf16,T,N,4096,16,4096,bias,1
lt_gelu,ltmatmul,bf16,bf16,bf16,bf16,T,N,11008,16,4096,bias_gelu,1
lt_beta,ltmatmul,bf16,bf16,bf16,bf16,T,N,4096,16,4096,none,0
EOF
expect_exit 0 "tune cuBLASLt keys with epilogues and beta != 0" "$GT" tune "$TMP/lt.csv" \
  -o "$TMP/lt.db" --rounds 5 --providers cublas,cublaslt,kernels
expect_nogrep "no winner failed in the runtime" ' fail +(improved|unconfirmed) '
if grep -q '^gemm,' "$TMP/lt.db"; then
  set +e
  OUT_TXT=$("$GT" check --live "$TMP/lt.db" 2>&1)
  set -e
  expect_nogrep "epilogue rows are replayed live" 'not replayed: rows with an epilogue'
  expect_grep "against the application's cublasLtMatmul" 'live: [0-9.]+ us served vs [0-9.]+ us cublaslt_heuristic_ws[0-9]+, '
  expect_nogrep "no row fails live" 'fails live'
else
  ok "cuBLASLt replay skipped: no cuBLASLt key was written here"
fi
finish
