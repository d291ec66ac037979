#!/usr/bin/env bash
# Issue 23 acceptance: the floor-aware search budget against the plain full search, over the
# llama3 8B and 70B corpus (examples/corpus/llama3_8b.csv + llama3_70b.csv), on one GPU:
#   a. gemmtune tune CORPUS --search floor (the default: the quick race for a shape whose baseline
#      is within --floor-threshold of its roofline floor, widenings into the full space until three
#      in a row gain under 2% for the others)                                   -> floor.db
#   b. gemmtune tune CORPUS --search full (every shape, cuBLASLt's whole space and every own
#      instance, one pass, no stopping rule), the same seed                    -> plain.db
# and print for each the total tuning time and the tuned geomean (the geometric mean of the
# speedups over every searched shape, unchanged ones counting 1.0, as tune's summary prints it),
# then the time saved and the geomean ratio. The saving must not cost more than 1% of geomean:
# RESULT: PASS when floor geomean >= 0.99 x plain geomean. Every shape's floor, baseline and
# winner shares and stopping rule are in the tune logs (the third line of each shape).
#
# Usage: bash bench/floor_budget.sh RESULTS [BUILD]
#   RESULTS  folder for the logs and DBs (created)
#   BUILD    the build folder holding gemmtune (default: build)
# Environment: SEED (input seed of both runs, default 23), FLOOR_ARGS (extra arguments of the
#   floor-aware run, e.g. "--floor-threshold 10"), PLAIN_ARGS (default "--search full"),
#   TUNE_ARGS (extra arguments of both, e.g. "--budget 60"), CORPUS (shapes files, default the
#   two above), DRY=1 (a check of this script without a GPU: the CPU providers on
#   examples/small_cpu.csv, in a minute; the numbers mean nothing).
# Cost: the plain run races cuBLASLt's whole space (about 4,000-11,000 configurations a shape on
# the H200) for each of the 170 shapes, about a minute a shape: hours. A first look can take a
# subset (CORPUS=one file, or a few of its lines) or bound both runs alike (TUNE_ARGS="--budget
# 120"); a budget that stops the plain run favours neither, it is counted in both summaries.
# Exit status: 0 PASS, 1 FAIL, 2 setup error.
set -uo pipefail
RESULTS=${1:?usage: floor_budget.sh RESULTS [BUILD]}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${2:-$root/build}
SEED=${SEED:-23}
PLAIN_ARGS=${PLAIN_ARGS:---search full}
FLOOR_ARGS=${FLOOR_ARGS:-}
TUNE_ARGS=${TUNE_ARGS:-}
if [ "${DRY:-0}" = 1 ]; then
  CORPUS=${CORPUS:-$root/examples/small_cpu.csv}
  TUNE_ARGS="--cpu --rounds 5 $TUNE_ARGS"
else
  CORPUS=${CORPUS:-$root/examples/corpus/llama3_8b.csv $root/examples/corpus/llama3_70b.csv}
fi
GT=$BUILD/gemmtune

die() {
  echo "SETUP ERROR: $*"
  echo "RESULT: FAIL"
  exit 2
}
[ -x "$GT" ] || die "$GT not built"
mkdir -p "$RESULTS" || die "cannot create $RESULTS"
RESULTS=$(cd "$RESULTS" && pwd)

# One shapes file: the first file's header and every file's rows (the corpus files share it).
corpus="$RESULTS/corpus.csv"
first=1
: >"$corpus"
for f in $CORPUS; do
  [ -r "$f" ] || die "cannot read $f"
  if [ $first = 1 ]; then cat "$f" >>"$corpus"; else tail -n +2 "$f" >>"$corpus"; fi
  first=0
done
echo "corpus: $CORPUS ($(($(wc -l <"$corpus") - 1)) shapes) -> $corpus"
"$GT" --version

# run NAME ARGS...: tune the corpus into a fresh NAME.db, logs NAME.out / NAME.err; sets
# run_secs and run_geo.
run() {
  local name=$1
  shift
  rm -f "$RESULTS/$name.db" "$RESULTS/$name.db".journal*
  echo "=== $name: gemmtune tune corpus.csv -o $name.db --seed $SEED $*"
  local t0 t1
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086 # the argument lists are lists of words
  "$GT" tune "$corpus" -o "$RESULTS/$name.db" --seed "$SEED" "$@" >"$RESULTS/$name.out" \
    2>"$RESULTS/$name.err"
  local rc=$?
  t1=$(date +%s.%N)
  run_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  run_geo=$(sed -n 's/^Tuned geomean: \([0-9.]*\)x.*/\1/p' "$RESULTS/$name.out" | tail -n 1)
  grep -E '^(Summary|Tuned geomean|Search stopped by|DB):' "$RESULTS/$name.out" | sed 's/^/  /'
  [ $rc -eq 0 ] || echo "  (tune exited $rc: see $RESULTS/$name.err)"
  [ -n "$run_geo" ] || die "$name: no 'Tuned geomean' line in $RESULTS/$name.out"
  echo "  $name: total $run_secs s, tuned geomean ${run_geo}x"
}

# shellcheck disable=SC2086
run floor $TUNE_ARGS $FLOOR_ARGS
secs_floor=$run_secs geo_floor=$run_geo
# shellcheck disable=SC2086
run plain $TUNE_ARGS $PLAIN_ARGS
secs_plain=$run_secs geo_plain=$run_geo

echo "=== floor-aware against plain"
awk -v tf="$secs_floor" -v tp="$secs_plain" -v gf="$geo_floor" -v gp="$geo_plain" 'BEGIN {
  printf "time:    floor %.1f s, plain %.1f s: %.1f%% saved (%.2fx faster)\n", tf, tp,
         (tp > 0 ? 100 * (1 - tf / tp) : 0), (tf > 0 ? tp / tf : 0)
  printf "geomean: floor %.4fx, plain %.4fx: floor / plain = %.4f (the bar: >= 0.99)\n", gf, gp,
         (gp > 0 ? gf / gp : 0)
  exit !(gp > 0 && gf >= 0.99 * gp)
}' | tee "$RESULTS/summary.txt"
pass=${PIPESTATUS[0]}
if [ "$pass" -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi | tee -a "$RESULTS/summary.txt"
exit $((pass != 0))
