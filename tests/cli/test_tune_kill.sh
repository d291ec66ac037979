#!/usr/bin/env bash
# kill -9 at random moments: after each kill the DB is the old one or a new one (it reads back,
# never torn), no temp file of the killed writer survives the next write, and --resume completes
# the sweep: every shape finished, nothing tuned twice, no journal left.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$TMP/shapes.csv"
{
  echo 'm,n,k,transa'
  for n in 2 3 4 5 6 7; do echo "40,$n,24,T"; done
} >"$shapes"
trials=${GT_KILL_TRIALS:-6}
RANDOM=${GEMMTUNE_SEED:-12345}
torn=0 incomplete=0 leftovers=0 journals=0
for t in $(seq 1 "$trials"); do
  d="$TMP/trial$t"
  mkdir -p "$d"
  db="$d/k.db"
  "$GT" tune --cpu --rounds 5 --min-improvement 0 "$shapes" -o "$db" >"$d/run.out" 2>&1 &
  pid=$!
  sleep "$((RANDOM % 150 + 10))e-2" # 0.1 to 1.6 s: before the first row, between rows, near the end
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ -e "$db" ]; then
    # A DB that reads back is old or new: exit 1 is a clean miss, 65 would be a torn file.
    set +e
    "$GT" explain "$db" m=1,n=1,k=1 >/dev/null 2>&1
    rc=$?
    set -e
    [ "$rc" = 1 ] || { torn=$((torn + 1)); echo "trial $t: DB does not read back (exit $rc)"; }
  fi
  set +e
  "$GT" tune --cpu --rounds 3 --min-improvement 0 --resume "$shapes" -o "$db" >"$d/resume.out" 2>&1
  rc=$?
  set -e
  done_n=$(grep -Eo '[0-9]+ already done' "$d/resume.out" | grep -Eo '^[0-9]+' || echo 0)
  tuned=$(grep -Eo 'Summary: [0-9]+ shapes tuned' "$d/resume.out" | grep -Eo '[0-9]+' || echo -1)
  if [ "$rc" != 0 ] || [ $((done_n + tuned)) != 6 ]; then
    incomplete=$((incomplete + 1))
    echo "trial $t: resume exit $rc, $tuned tuned + $done_n already done of 6"
    cat "$d/resume.out"
  fi
  ls "$d" | grep -q '\.tmp\.' && leftovers=$((leftovers + 1))
  ls "$d" | grep -q 'journal' && journals=$((journals + 1))
done
[ "$torn" = 0 ] && ok "after $trials kills the DB always reads back (old or new)" || bad "$torn torn DBs"
[ "$incomplete" = 0 ] && ok "--resume completes every killed sweep (6 of 6 shapes)" || bad "$incomplete resumes incomplete"
[ "$leftovers" = 0 ] && ok "no temp file of a killed writer is left after the resume" || bad "$leftovers trials left temp files"
[ "$journals" = 0 ] && ok "no journal is left after the resume completes" || bad "$journals trials left journals"
finish
