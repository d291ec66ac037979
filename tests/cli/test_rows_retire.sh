#!/usr/bin/env bash
# A re-tune of a key whose row's choice no longer wins removes the row and says so ("retired:
# KEY: WHY" in the summary, outcome 'retired'); a re-tune that did not race the row's choice, or
# a row of another device, leaves it. On the CPU providers: --min-improvement 100000 makes a race
# that no candidate can win, so the row's choice, raced again, loses.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

printf 'model,proj,tokens,out_features,in_features\nt,a,16,256,256\n' >"$TMP/shapes.csv"
db="$TMP/db.csv"
"$GT" tune --cpu --rounds 5 "$TMP/shapes.csv" -o "$db" >"$TMP/tune.out" 2>&1 || true
if ! grep -q '^gemm,' "$db" 2>/dev/null; then
  ok "skipped: tune found no improving candidate on this machine"
  finish
  exit $?
fi
row=$(grep '^gemm,' "$db" | head -1)
inst=$(cut -d, -f26 <<<"$row")
cp "$db" "$TMP/orig.csv"
lose() { "$GT" tune --cpu --rounds 5 --min-improvement 100000 "$TMP/shapes.csv" -o "$@"; }

# ---- the row's choice races again and loses: retired -----------------------------------------
expect_exit 0 "a re-tune that no candidate wins: exit 0" lose "$db"
expect_grep "the outcome is 'retired'" ' retired +-'
# Raced again, the choice either reaches the re-time (the note gives its margin, or on a loaded
# machine says the baseline timed faster than it) or is cut by the prune pass (the note says it
# lost the quick pass): each retires it.
expect_grep "the shape's note says why" "retired: (the baseline is now within [0-9.]+% of cpu/$inst \\(a row needs 100000\\.0%; recorded [0-9.]+x\\)|the baseline is now [0-9.]+% faster than cpu/$inst \\(recorded [0-9.]+x\\)|cpu/$inst lost the quick pass .*); its row is removed from the DB"
expect_grep "the summary counts it" 'Summary: 1 shapes tuned .*1 unchanged, 0 failed, 1 rows retired'
expect_grep "and lists it by key" "^  retired: op=gemm,.*,m=256,n=16,k=256,.*: (the baseline is now (within|[0-9.]+% faster than)|cpu/$inst lost the quick pass)"
grep -q '^gemm,' "$db" && bad "the row is still in the DB" "$(cat "$db")" || ok "the row is gone from the DB"
[ "$(head -1 "$db")" = '#gemmtune-db 4' ] && ok "the DB is still a valid file" || bad "DB" "$(cat "$db")"
# The key raced and stayed on today's path: the DB says so in a kept line, which verify reads.
grep -Eq '^#kept\.[0-9a-f]{16}=.*: retired: ' "$db" && ok "the DB records the key as kept" ||
  bad "no kept line for the raced key" "$(cat "$db")"
[ -z "$(ls "$TMP" | grep -E 'journal|\.tmp')" ] && ok "no journal or temp file left" || bad "leftovers" "$(ls "$TMP")"
expect_exit 1 "the key now misses in the retired DB" "$GT" explain "$db" --cpu --linear 16,256,256
expect_grep "explain reads it" '^MISS '


# ---- csv output: the outcome column --------------------------------------------------------------
cp "$TMP/orig.csv" "$TMP/csv.db"
expect_exit 0 "retire with --format csv" lose "$TMP/csv.db" --format csv
expect_grep "outcome column" "^1,t/a,.*,retired,-,retired: (the baseline is now within|cpu/$inst lost the quick pass)"

# ---- a choice the race did not reach stays ---------------------------------------------------
awk -F, -v OFS=, '/^gemm,/ { $26 = "cpu_not_enumerated_bf16" } { print }' "$TMP/orig.csv" >"$TMP/unraced.csv"
expect_exit 0 "a re-tune that did not race the row's choice" lose "$TMP/unraced.csv"
expect_nogrep "nothing is retired" 'retired'
grep -q ',cpu_not_enumerated_bf16,' "$TMP/unraced.csv" && ok "the row stays" || bad "row lost" "$(cat "$TMP/unraced.csv")"

# ---- a row of another device stays: this race says nothing about that device -------------------
awk -F, -v OFS=, '/^gemm,/ { $39 = "Other CPU 9000"; $40 = 7 } { print }' "$TMP/orig.csv" >"$TMP/otherdev.csv"
expect_exit 0 "a re-tune over another device's row" lose "$TMP/otherdev.csv"
expect_nogrep "nothing is retired" 'retired'
grep -q ',Other CPU 9000,7,' "$TMP/otherdev.csv" && ok "the other device's row stays" \
  || bad "row lost" "$(cat "$TMP/otherdev.csv")"

# ---- a choice that now fails the gate is retired ---------------------------------------------
awk -F, -v OFS=, '/^gemm,/ { $24 = "testonly"; $26 = "testonly_wrong" } { print }' "$TMP/orig.csv" >"$TMP/wrong.csv"
expect_exit 0 "a re-tune over a row whose choice gives wrong answers" \
  env GEMMTUNE_TEST_PROVIDERS=1 "$GT" tune --cpu --rounds 5 --min-improvement 100000 \
  "$TMP/shapes.csv" -o "$TMP/wrong.csv"
expect_grep "retired, saying it fails the gate" \
  'retired: testonly/testonly_wrong (now fails the correctness gate|is excluded for this key now)'
grep -q '^gemm,' "$TMP/wrong.csv" && bad "the wrong row is still there" || ok "the wrong row is gone"

# ---- an improving re-tune still replaces the row (nothing retired) ---------------------------
cp "$TMP/orig.csv" "$TMP/again.csv"
expect_exit 0 "an ordinary re-tune" "$GT" tune --cpu --rounds 5 "$TMP/shapes.csv" -o "$TMP/again.csv"
if grep -q ' improved ' <<<"$OUT_TXT"; then
  expect_nogrep "nothing retired when a row is written" 'retired'
  grep -q '^gemm,' "$TMP/again.csv" && ok "the key keeps a row" || bad "row lost"
else
  ok "the re-tune did not improve on this machine (timing noise); its retirement is covered above"
fi
finish
