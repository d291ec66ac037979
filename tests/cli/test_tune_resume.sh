#!/usr/bin/env bash
# A killed tune loses nothing it finished: the DB holds every finished shape's row, and
# --resume skips the finished shapes and completes the rest.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$TMP/shapes.csv"
{
  echo 'model,proj,tokens,out_features,in_features'
  for t in 8 16 24 32 40 48; do echo "r,p,$t,192,256"; done
} >"$shapes"
db="$TMP/r.db"
"$GT" tune --cpu --rounds 9 "$shapes" -o "$db" >"$TMP/run1.out" 2>&1 &
pid=$!
# Wait for the first finished shape, then kill hard (no chance to clean up).
for _ in $(seq 1 600); do
  grep -Eq '^ +1 +r/p .*(improved|unchanged)' "$TMP/run1.out" 2>/dev/null && break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
if grep -q 'Summary:' "$TMP/run1.out"; then
  ok "run finished before it could be killed (machine too fast); resume checked as a no-op"
  expect_exit 0 "resume after a complete run" "$GT" tune --cpu --rounds 5 --resume "$shapes" -o "$db"
  finish
  exit $?
fi
j=$(ls "$db".journal.* 2>/dev/null | head -1)
[ -n "$j" ] && [ -f "$j" ] && ok "journal kept after a kill" || bad "no journal after a kill" "$(cat "$TMP/run1.out")"
done1=$(cat "$db".journal.* | wc -l)
[ "$done1" -ge 1 ] && ok "journal lists the finished shape(s)" || bad "journal empty"
if grep -q improved "$j"; then
  [ -f "$db" ] && "$GT" explain "$db" --key "$(head -1 "$j" | cut -f1)" >/dev/null \
    && ok "finished row is in the DB after the kill" || bad "finished row lost"
fi
expect_exit 0 "resume completes" "$GT" tune --cpu --rounds 5 --resume "$shapes" -o "$db"
expect_grep "resume skips finished shapes" "$done1 already done \(--resume\)"
expect_grep "resume tunes the rest" "Summary: $((6 - done1)) shapes tuned"
[ -z "$(ls "$db".journal* 2>/dev/null)" ] && ok "journal removed after completion" || bad "journal left behind"
finish
