#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan, CUDA off) and runs each for a bounded time
# over its seed corpus (fuzz/corpus/TARGET). Any finding (a crash, a sanitizer report, a broken
# invariant, a leak, a timeout) fails the run; its input is kept under BUILD/artifacts/TARGET.
#
#   fuzz/run.sh                        every target, 30 s each (what CI runs)
#   fuzz/run.sh --seconds 600 -j 2     longer, two targets at a time
#   fuzz/run.sh --seconds 60 db key    some targets
#
# Options: --seconds S (per target, default 30), -j N (targets at once, default 1), --build DIR
# (default build-fuzz under the repository root), --no-build. New inputs found go to
# BUILD/corpus/TARGET, never into the committed seeds. Ends with "N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=30
jobs=1
build="$root/build-fuzz"
do_build=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "fuzz/run.sh: unknown option $1" >&2; exit 64 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all=(db calib shapes key names trace stats cli)
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

cc=${FUZZ_CC:-clang}
command -v "$cc" >/dev/null 2>&1 || { echo "fuzz/run.sh: $cc not found (scripts/install-deps.sh installs clang)" >&2; exit 69; }
if [ "$do_build" = 1 ]; then
  launcher=()
  command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
  flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -DGT_CUDA=OFF -DGT_FUZZ=ON -DCMAKE_BUILD_TYPE=Fuzz \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" "${launcher[@]}" >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log"; exit 1; }
  cmake --build "$build" --target fuzz_all -j"$(nproc)" >"$build/build.log" 2>&1 ||
    { tail -50 "$build/build.log"; exit 1; }
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: fresh corpus dir seeded from the committed seeds, bounded time, stats kept.
run_one() {
  local t=$1 bin="$build/fuzz/fuzz_$t"
  local corpus="$build/corpus/$t" art="$build/artifacts/$t" log="$build/logs/$t.log"
  mkdir -p "$corpus" "$art" "$(dirname "$log")"
  local dict=()
  [ -f "$root/fuzz/dict/$t.dict" ] && dict=(-dict="$root/fuzz/dict/$t.dict")
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" "$corpus" "$root/fuzz/corpus/$t" \
    >"$log" 2>&1
}

pass=0
failed=0
report() {
  local t=$1 rc=$2 log="$build/logs/$1.log"
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" 2>/dev/null | grep -o '[0-9]*$' || echo '?')
  if [ "$rc" = 0 ]; then
    pass=$((pass + 1))
    echo "ok   - fuzz_$t: ${seconds} s, $execs executions, no finding"
  else
    failed=$((failed + 1))
    echo "FAIL - fuzz_$t: exit $rc after $execs executions; input in $build/artifacts/$t/"
    grep -E 'ERROR|runtime error|invariant|SUMMARY|Test unit written' "$log" | head -20 | sed 's/^/       /'
  fi
}

running=()
for t in "${targets[@]}"; do
  [ -x "$build/fuzz/fuzz_$t" ] || { echo "FAIL - fuzz_$t: not built"; failed=$((failed + 1)); continue; }
  run_one "$t" &
  running+=("$!:$t")
  if [ ${#running[@]} -ge "$jobs" ]; then
    entry=${running[0]}
    running=("${running[@]:1}")
    rc=0
    wait "${entry%%:*}" || rc=$?
    report "${entry#*:}" "$rc"
  fi
done
for entry in "${running[@]}"; do
  rc=0
  wait "${entry%%:*}" || rc=$?
  report "${entry#*:}" "$rc"
done
echo "fuzz: $pass passed, $failed failed"
[ "$failed" = 0 ]
