#!/usr/bin/env bash
# `make run`: build, tune the bundled example, show the result and what to try next. On a machine
# with a GPU the example is a set of Llama-3-8B projections at decode and prefill sizes; without
# one, a smaller set that the CPU providers tune in about twenty seconds, in a CPU-only build.
# Usage: examples/run.sh BUILD_DIR [JOBS] [CMAKE_FLAGS...]
set -euo pipefail
build=${1:-build}
jobs=${2:-2}
shift $(($# > 2 ? 2 : $#))
here=$(cd "$(dirname "$0")" && pwd)
t0=$(date +%s)
mkdir -p "$build"
log="$build/make-run-build.log"
echo "== building in $build ($*; the full log: $log)"
if ! { cmake -S "$here/.." -B "$build" "$@" && cmake --build "$build" -j"$jobs" --target gemmtune; } >"$log" 2>&1; then
  echo "== the build failed; the end of its log:" >&2
  tail -30 "$log" >&2
  exit 1
fi
echo "   built in $(($(date +%s) - t0)) s"
gt="$build/gemmtune"
if grep -Eq '^cublas +cuda +ready' <<<"$("$gt" list 2>/dev/null)"; then
  shapes="$here/llama3_8b_gpu.csv"
  echo "== GPU found: tuning $shapes"
  where=()
else
  shapes="$here/small_cpu.csv"
  echo "== no GPU: tuning $shapes on the CPU providers"
  where=(--cpu)
fi
db="$build/example-tuned.db"
echo
echo "== step 1 (scope): what the shapes ask for: gemmtune shapes $shapes"
"$gt" shapes "${where[@]}" "$shapes"
echo
echo "== steps 2-5 (baseline, search, gate, deploy): gemmtune tune $shapes -o $db"
rm -f "$db"
"$gt" tune "${where[@]}" "$shapes" -o "$db"
echo
echo "== the DB that was written ($db):"
cat "$db"
echo
echo "== step 6 (verify) starts here: the first shape's key, looked up exactly as the runtime does"
first=$(awk -F, 'NR==2{print $3","$4","$5}' "$shapes")
"$gt" explain "$db" --linear "$first" || true
report="$build/example-report.html"
"$gt" report "$db" --shapes "$shapes" -o "$report"
echo
echo "== done in $(($(date +%s) - t0)) s. What to try next:"
cat <<EOT
  open $report
      the page about this DB: roofline, speedups (gemmtune report --help)
  $gt profile ${where[*]} --linear $first --explain
      the whole race for one shape: every candidate, its time and its gate
  $gt --help
      every command; each one's --help ends with examples
  make test
      build everything (every CUDA file too, when the toolkit is here) and run the tests
EOT
if [ ${#where[@]} -gt 0 ]; then
  cat <<EOT
  With an NVIDIA GPU and the CUDA toolkit, 'make run' builds the CUDA providers, own kernels,
  preload shim and tracer and tunes examples/llama3_8b_gpu.csv; then, for your application:
      gemmtune capture -o shapes.csv -- python3 app.py    # the GEMMs it issues
      gemmtune tune shapes.csv -o tuned.db                # tune them
      gemmtune verify --db tuned.db --json v.json -- python3 app.py   # did they engage
      gemmtune run --db tuned.db -- python3 app.py        # deploy
  From Python: pip install . ; python -m gemmtune --help (README: Python).
EOT
fi
