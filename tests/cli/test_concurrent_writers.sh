#!/usr/bin/env bash
# Many writers, one DB, no row lost: 8 `tune` processes of disjoint shapes write into one DB at
# once, then 8 `merge` processes merge shards into one DB at once (`merge OUT SHARD -o OUT`).
# Every update takes the lock on the DB's directory and re-reads the file before writing it, so
# the DB ends with every row any of them wrote, and every process exits 0.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# ---- 8 concurrent tunes of disjoint shapes into one DB -----------------------------------------
db="$TMP/tuned.db"
pids=()
for i in 0 1 2 3 4 5 6 7; do
  printf 'm,n,k,transa\n%d,4,16,T\n' $((24 + 8 * i)) >"$TMP/shapes$i.csv"
  "$GT" tune --cpu --rounds 3 --min-improvement 0 "$TMP/shapes$i.csv" -o "$db" \
    >"$TMP/tune$i.out" 2>&1 &
  pids+=($!)
done
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
[ "$rcs" = 0 ] && ok "8 concurrent tunes into one DB exit 0" || bad "$rcs tunes failed" "$(cat "$TMP"/tune*.out)"
improved=$(cat "$TMP"/tune*.out | grep -Ec '^ +[0-9]+ .* improved ' || true)
rows=$(grep -c '^gemm,' "$db")
[ "$rows" = "$improved" ] && [ "$improved" -ge 1 ] &&
  ok "the DB keeps every improved shape's row ($rows of $improved)" ||
  bad "the DB has $rows rows, the tunes improved $improved" "$(cat "$db")"
lost=0
for i in 0 1 2 3 4 5 6 7; do
  m=$((24 + 8 * i))
  for n in 4; do
    if grep -Eq "blas TN m=$m n=$n k=16 .* improved " "$TMP/tune$i.out"; then
      "$GT" explain "$db" --cpu --blas "$m,$n,16" --ops TN >/dev/null 2>&1 || lost=$((lost + 1))
    fi
  done
done
[ "$lost" = 0 ] && ok "every improved shape hits in the DB" || bad "$lost improved shapes miss in the DB"
[ -z "$(ls "$TMP" | grep -E 'tmp\.|journal')" ] && ok "no temp or journal files left" ||
  bad "files left behind" "$(ls "$TMP")"

# ---- 8 concurrent merges into one DB -----------------------------------------------------------
# Shards of one row each, built from a row of the tuned DB with n changed (n is in no leading
# dimension of a TN key, so each is a valid row of its own key).
sed -n '1,/^op,/p' "$db" >"$TMP/head.txt" # the format line, the validators, the header
row=$(grep -m1 '^gemm,' "$db")
shard() { # shard N -> a DB whose only row is `row` with n=N
  { cat "$TMP/head.txt"; awk -F, -v OFS=, -v n="$1" '{ $11 = n; print }' <<<"$row"; } >"$TMP/shard$1.db"
}
for n in 100 101 102 103 104 105 106 107 108; do shard "$n"; done
cp "$TMP/shard100.db" "$TMP/merged.db"
pids=()
for n in 101 102 103 104 105 106 107 108; do
  "$GT" merge -q "$TMP/merged.db" "$TMP/shard$n.db" -o "$TMP/merged.db" >"$TMP/merge$n.out" 2>&1 &
  pids+=($!)
done
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
[ "$rcs" = 0 ] && ok "8 concurrent merges into one DB exit 0" || bad "$rcs merges failed" "$(cat "$TMP"/merge*.out)"
mrows=$(grep -c '^gemm,' "$TMP/merged.db")
[ "$mrows" = 9 ] && ok "the merged DB keeps all 9 rows" || bad "the merged DB has $mrows of 9 rows" "$(cat "$TMP/merged.db")"
missing=0
for n in 100 101 102 103 104 105 106 107 108; do
  grep -q "^$(cut -d, -f1-10 <<<"$row"),$n," "$TMP/merged.db" || missing=$((missing + 1))
done
[ "$missing" = 0 ] && ok "every shard's key is in the merged DB" || bad "$missing shards' keys are missing"

# ---- links planted at the predictable names are never followed ------------------------------
echo "the victim's own text" >"$TMP/victim"
mkdir -p "$TMP/planted"
pdb="$TMP/planted/p.db"
ln -s "$TMP/victim" "$pdb.journal"             # an older run's journal name
ln -s "$TMP/victim" "$pdb.tmp.2147483000.AbCdEf" # a dead writer's temp file name
expect_exit 0 "tune next to planted links" "$GT" tune --cpu --rounds 3 "$TMP/shapes0.csv" -o "$pdb"
[ "$(cat "$TMP/victim")" = "the victim's own text" ] && ok "the links' target is untouched" ||
  bad "the links' target was changed" "$(cat "$TMP/victim")"
cp "$TMP/shard100.db" "$TMP/planted/real.db"
cp "$TMP/shard100.db" "$TMP/real.orig"
ln -s "$TMP/planted/real.db" "$TMP/planted/link.db"
expect_exit 74 "a symlink at the DB path is refused" "$GT" tune --cpu --rounds 3 "$TMP/shapes0.csv" -o "$TMP/planted/link.db"
expect_grep "the refusal says it is a symbolic link" "symbolic link"
expect_exit 74 "merge refuses a symlink at OUT" "$GT" merge "$TMP/shard100.db" "$TMP/shard101.db" -o "$TMP/planted/link.db"
cmp -s "$TMP/planted/real.db" "$TMP/real.orig" && [ -L "$TMP/planted/link.db" ] &&
  ok "the DB link and its target are untouched" || bad "the DB link's target was replaced"

# ---- the lock is bounded: a holder that never lets go costs a clear error, not a hang ---------
if command -v flock >/dev/null 2>&1 && command -v timeout >/dev/null 2>&1; then
  # The holder's sleep inherits the lock; its output goes nowhere, so nothing waits on it.
  flock "$TMP" sleep 4 </dev/null >/dev/null 2>&1 &
  holder=$!
  sleep 0.5
  set +e
  OUT_TXT=$(GEMMTUNE_LOCK_TIMEOUT=1 timeout 100 "$GT" merge "$TMP/merged.db" "$TMP/shard100.db" -o "$TMP/merged.db" 2>&1)
  got=$?
  set -e
  wait "$holder" 2>/dev/null || true
  [ "$got" = 74 ] && ok "a lock held elsewhere ends in exit 74" || bad "exit $got with the lock held (want 74)" "$OUT_TXT"
  expect_grep "the message says another process holds the lock" "another process has held the lock"
fi
finish
