#!/usr/bin/env bash
# On the GPU: `check --live` replays a tuned row through the runtime's dispatch. A decode shape
# is tuned (own kernels usually win it), then checked with --live: every row that passes has a
# live line in its note (both times and the ratio to the recorded speedup, or why it was not
# replayed), and the csv carries the live columns with numbers for rows replayed live.
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
if ! grep -vq '^#' "$TMP/t.db" || [ "$(grep -vc '^#' "$TMP/t.db")" -lt 2 ]; then
  echo "no row was written (the baseline won both shapes here): skipped"
  exit 77
fi
set +e
OUT_TXT=$("$GT" check --live "$TMP/t.db" 2>&1)
set -e
expect_grep "passing rows carry a live line" 'live: ([0-9.]+ us served vs [0-9.]+ us [a-z_]+, [0-9.]+x \([0-9.]+ of the recorded [0-9.]+x\)|not replayed: )'
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
finish
