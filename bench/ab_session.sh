#!/usr/bin/env bash
# A kernel change against the tree it changes, in one call on the GPU machine: builds this tree
# (A, into build-dev) and a copy with PATCH applied (B, into build-ab), runs B's GPU gates, then
# the same kernels_bench runs on A and B alternately (A, B, then A and B again for the next
# run), so both builds see the same card, clocks and temperature, and compares each own instance
# across the two with bench/candidates_ab.py (each over its own run's baseline).
#
#   bash bench/ab_session.sh PATCH [RUN ...]
#
# A RUN is one kernels_bench option string, e.g. "--tokens 16,32,64" or
# "--dtype f8e4m3fn --scale tensor"; the default is both of those. Gates: GATES (an ctest -R
# regex over B's build, default '^gpu_test_kernels$') and, when a RUN names f8e4m3fn, B's fp8 gate
# (gpu_test_kernels_fp8). A failed gate stops the call before any time is taken.
# Environment: OUT (default ./out; results.tgz and summary.txt land there), JOBS, FAMILIES (the
# instance families candidates_ab.py reads, default "wg wgf8 decodetc dtf8": the patched ones and
# their controls). Needs bench/gpu_session.sh's cmocka copy (.devdeps) for the gates.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && exit 0
  exit 2
fi
patch=$(realpath "$1") || exit 2
shift
[ -f "$patch" ] || { echo "ab_session.sh: $patch: no such patch" >&2; exit 2; }
runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=("--tokens 16,32,64" "--dtype f8e4m3fn --scale tensor")
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
work=$(mktemp -d)
summary="$work/summary.txt"
pack() { tar -C "$work" -czf "$OUT/results.tgz" . 2>/dev/null; cp "$summary" "$OUT/summary.txt" 2>/dev/null; }
trap 'pack; rm -rf "$work"' EXIT
if [ -d "$root/.devdeps" ]; then
  export LD_LIBRARY_PATH="$root/.devdeps/lib:${LD_LIBRARY_PATH:-}"
  prefix="-DCMAKE_PREFIX_PATH=$root/.devdeps"
else
  prefix=""
fi
say() { echo "$*" | tee -a "$summary"; }
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
step() {  # step NAME LIMIT CMD...: full log in the archive, its tail (TAIL, default 12) in the summary
  local rc
  TAIL=${TAIL:-12} bench_timed_step "$work" "$summary" "$1" "$@"
  rc=$?
  pack
  return $rc
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv 2>&1 | tee -a "$summary"
(git apply --check "$patch") >"$work/patch.log" 2>&1 ||
  { say "ab_session.sh: $patch does not apply to this tree:"; tee -a "$summary" <"$work/patch.log"; exit 1; }
cp "$patch" "$work/"
# B: the tree as committed plus the working tree's changes, then the patch.
tree_b="$work/tree_b"
mkdir -p "$tree_b"
tar -C "$root" --exclude=./build-dev --exclude=./build-ab --exclude=./build --exclude=./.git \
  --exclude=./out -cf - . | tar -C "$tree_b" -xf - || exit 1
(cd "$tree_b" && git apply "$patch") >"$work/patch.log" 2>&1 ||
  { say "ab_session.sh: $patch does not apply:"; tee -a "$summary" <"$work/patch.log"; exit 1; }
j=${JOBS:-$(nproc)}
# The two builds run side by side: a build's tail is a few long kernel units, so two overlap.
step build_a "${T_BUILD:-300}" bash -c "cmake -S '$root' -B '$root/build-dev' -DGT_CUDA=ON $prefix && cmake --build '$root/build-dev' -j$j" &
pa=$!
step build_b "${T_BUILD:-300}" bash -c "cmake -S '$tree_b' -B '$root/build-ab' -DGT_CUDA=ON $prefix && cmake --build '$root/build-ab' -j$j" &
pb=$!
wait $pa || { say "build A failed"; exit 1; }
wait $pb || { say "build B failed"; exit 1; }
TAIL=20 step gate_b "${T_GATE:-240}" bash -c "cd '$root/build-ab' && ctest --output-on-failure --timeout 200 -R '${GATES:-^gpu_test_kernels\$}'" || exit 1
case "${runs[*]}" in
  *f8e4m3fn*) TAIL=8 step gate_b_fp8 "${T_GATE:-240}" "$root/build-ab/gpu_test_kernels_fp8" || exit 1 ;;
esac
i=0
for r in "${runs[@]}"; do
  i=$((i + 1))
  # Alternate which build goes first so a drift over the call does not favour one of them.
  if [ $((i % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
  for side in $order; do
    if [ "$side" = a ]; then b="$root/build-dev"; else b="$root/build-ab"; fi
    # shellcheck disable=SC2086  # r is an option string on purpose
    TAIL=6 step "run${i}_$side" "${T_KERNELS:-300}" env OUT="$work/run${i}_$side" \
      bash "$root/bench/kernels_bench.sh" "$b" $r
  done
  say "=== run $i: $r"
  for fam in ${FAMILIES:-wg wgf8 decodetc dtf8}; do
    python3 "$root/bench/candidates_ab.py" "$work/run${i}_a/kernels_bench_candidates.csv" \
      "$work/run${i}_b/kernels_bench_candidates.csv" --family "$fam" --by-split --quiet \
      >"$work/run${i}_ab_$fam.txt" 2>&1 && { say "--- family $fam (B over A)"; tee -a "$summary" <"$work/run${i}_ab_$fam.txt"; }
  done
done
exit 0
