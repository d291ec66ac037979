#!/usr/bin/env bash
# The whole loop on the CPU providers, and the ways tune must refuse bad input without writing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$TMP/shapes.csv"
printf 'model,proj,tokens,out_features,in_features\nt,a,8,192,128\nt,b,64,256,128\n' >"$shapes"
db="$TMP/t.db"

# Malformed shapes: names the line, exits 65, writes nothing.
printf 'model,proj,tokens,out_features,in_features\nt,a,8,192,128\nt,b,x,256,128\n' >"$TMP/bad.csv"
expect_exit 65 "malformed shapes exits 65" "$GT" tune --cpu "$TMP/bad.csv" -o "$TMP/never.db"
expect_grep "malformed shapes names file:line and column" "bad.csv:3: column 'tokens'"
[ ! -e "$TMP/never.db" ] && ok "malformed shapes wrote no DB" || bad "malformed shapes wrote a DB"
printf 'model,tokens,out_features\nt,8,192\n' >"$TMP/bad2.csv"
expect_exit 65 "shapes without a full view exits 65" "$GT" tune --cpu "$TMP/bad2.csv" -o "$TMP/never.db"

# A malformed existing DB is refused and left byte-identical.
printf '#gemmtune-db 1\nnot,a,header\n' >"$TMP/broken.db"
cp "$TMP/broken.db" "$TMP/broken.orig"
expect_exit 65 "malformed existing DB refused" "$GT" tune --cpu "$shapes" -o "$TMP/broken.db"
expect_grep "names the DB line" 'broken.db:2'
cmp -s "$TMP/broken.db" "$TMP/broken.orig" && ok "malformed DB untouched" || bad "malformed DB changed"

# The loop itself.
expect_exit 0 "tune on the CPU providers" "$GT" tune --cpu --rounds 5 "$shapes" -o "$db"
expect_grep "summary line" 'Summary: 2 shapes tuned'
[ -f "$db" ] && ok "DB written" || bad "no DB written"
head -1 "$db" | grep -qx '#gemmtune-db 4' && ok "DB format line" || bad "DB format line"
# Every row must be faster than its baseline.
awk -F, 'NR>1 && !/^#/ && $1=="gemm" { if ($27+0 >= $28+0) bad=1 } END { exit bad }' "$db" \
  && ok "no row slower than its baseline" || bad "a row is slower than its baseline" "$(cat "$db")"
[ -z "$(ls "$TMP" | grep -E 'tmp\.|journal|worker')" ] && ok "no temp or journal files left" \
  || bad "leftover files" "$(ls "$TMP")"

# The gate: a planted wrong candidate is the fastest but never wins.
expect_exit 0 "profile with planted candidates" env GEMMTUNE_TEST_PROVIDERS=1 "$GT" profile --cpu --rounds 5 --linear 64,256,512
expect_grep "planted wrong candidate fails the gate" 'failed-gate .*testonly_wrong'
expect_grep "planted stale candidate fails the gate" 'failed-gate .*testonly_stale'
expect_grep "planted fault recorded as failed" 'failed-run .*testonly_fault'
expect_nogrep "wrong candidate is not best" '^Best: testonly'
expect_grep "Arguments line replays" '^Arguments: gemmtune profile --key'
GEMMTUNE_TEST_PROVIDERS=1 "$GT" tune --cpu --rounds 5 "$shapes" -o "$TMP/planted.db" >"$TMP/planted.out" 2>&1 || true
if grep -q testonly "$TMP/planted.db" 2>/dev/null; then bad "planted candidate written to DB" "$(cat "$TMP/planted.db")"; else ok "planted candidates never written"; fi

# Explain: a hit for a tuned key, a miss naming the one differing field.
if grep -q '^gemm,' "$db"; then
  line=$(grep '^gemm,' "$db" | head -1)
  m=$(echo "$line" | cut -d, -f10); n=$(echo "$line" | cut -d, -f11); k=$(echo "$line" | cut -d, -f12)
  expect_exit 0 "explain hit" "$GT" explain "$db" --cpu --linear "$n,$m,$k"
  expect_grep "HIT printed" '^HIT '
  expect_exit 1 "explain miss exits 1" "$GT" explain "$db" --cpu --linear "$((n + 1)),$m,$k"
  expect_grep "miss names the differing field" "n: $((n + 1)) vs $n"
else
  ok "explain skipped: no shape improved on this machine (the DB says so)"
fi

# Merge: the DB with itself is a no-op merge; output written atomically.
expect_exit 0 "merge two DBs" "$GT" merge "$db" "$db" -o "$TMP/merged.db"
[ -f "$TMP/merged.db" ] && ok "merged DB written" || bad "merged DB missing"

# A shape without a baseline says why in the baseline provider's words (cpu excludes i8), and
# does not quote a provider that has nothing to do with it (testonly is merely not enabled).
expect_exit 66 "a shape the baseline provider excludes is not searched" \
  "$GT" profile --cpu --rounds 5 --linear 16,64,64 --dtype i8
expect_grep "the message names the baseline provider and its reason" \
  'no baseline candidate for this problem: cpu \(today.s path for default calls\) excludes cpu_naive_i8: types'
expect_nogrep "the message does not quote another provider" 'problem:.*testonly'
expect_exit 66 "a baseline provider left out by --providers is named" \
  "$GT" profile --cpu --rounds 5 --linear 16,64,64 --providers testonly
expect_grep "the message says --providers left it out" 'cpu \(today.s path for default calls\) is not among --providers testonly'
finish
