#!/usr/bin/env bash
# Rows `gemmtune capture` marks not_tunable (GEMMs the workload ran that gemmtune cannot tune:
# pointer-array or grouped batches, FP8 scaling, device pointer mode...): `shapes` lists each
# with its reason, `tune` skips each saying why and writes no row for it, the summary counts
# them, `baseline` skips them too; a shapes file without the column (written before it existed)
# reads and tunes as before.
# CPU providers only.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

marked="$TMP/marked.csv"
printf '%s\n' 'model,proj,tokens,out_features,in_features,calls,not_tunable' \
  't,a,8,192,128,5,-' \
  't,b,8,192,128,3,pointer-array batch (cublasGemmBatchedEx): operands at arbitrary addresses' \
  't,c,16,64,128,2,FP8/block scaling or amax pointers are set' >"$marked"

expect_exit 0 "shapes reads a file with marked rows" "$GT" shapes --cpu "$marked"
expect_grep "a tunable row says yes" ' yes$'
expect_grep "a marked row says why it is not tunable" 'no: pointer-array batch \(cublasGemmBatchedEx\)'
expect_grep "the FP8 row says why" 'no: FP8/block scaling or amax pointers are set'
expect_grep "the marked rows are counted" '2 of 3 rows are not tunable'
expect_grep "the same key marked and unmarked is two rows (no merge note)" '^ +3 +t/b '
expect_nogrep "nothing merged" 'duplicate rows merged'
expect_exit 0 "shapes --format csv has the tunable column" "$GT" shapes --cpu --format csv "$marked"
expect_grep "csv header ends in tunable" 'share,tunable$'

db="$TMP/t.db"
expect_exit 0 "tune skips the marked rows" "$GT" tune --cpu --rounds 3 "$marked" -o "$db"
expect_grep "each marked row is listed as skipped" '^ +2  t/b .* skipped '
expect_grep "with its reason" '\| not tunable: pointer-array batch'
expect_grep "the FP8 row too" '\| not tunable: FP8/block scaling'
expect_grep "the summary counts one tuned shape and two not tunable" \
  'Summary: 1 shapes tuned .*, 2 not tunable \(skipped'
if grep -q '^gemm,.*,16,64,128,' "$db" 2>/dev/null || grep -q '^gemm,.*,64,16,128,' "$db" 2>/dev/null; then
  bad "a marked row was tuned into the DB" "$(cat "$db")"
else
  ok "no row for the marked-only key"
fi
expect_exit 0 "tune --format csv lists them too" "$GT" tune --cpu --rounds 3 --format csv "$marked" -o "$TMP/csv.db"
expect_grep "a csv row with outcome skipped and the reason" ',skipped,-,not tunable: FP8/block scaling'

expect_exit 0 "baseline skips the marked rows" "$GT" baseline --cpu --rounds 3 "$marked"
expect_grep "saying why" 'line 4 skipped: not tunable: FP8/block scaling'

# Files written before the column existed: every row tunable, as before.
printf 'model,proj,tokens,out_features,in_features,calls\nt,a,8,192,128,5\n' >"$TMP/old.csv"
expect_exit 0 "shapes reads a file without the column" "$GT" shapes --cpu "$TMP/old.csv"
expect_grep "its row is tunable" ' yes$'
expect_nogrep "nothing marked" 'not tunable'
printf 'model,tokens,out_features,in_features,not_tunable\nt,8,192,128,%0200d\n' 0 >"$TMP/long.csv"
expect_exit 65 "a reason longer than the column holds is malformed" "$GT" shapes --cpu "$TMP/long.csv"
expect_grep "names the column" "long.csv:2: column 'not_tunable'"
finish
