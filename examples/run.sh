#!/usr/bin/env bash
# `make run`: tune the bundled example and show the result. On a machine with a GPU the example
# is a set of Llama-3-8B projections at decode and prefill sizes; without one, a smaller set that
# the CPU providers tune in about a minute. Usage: examples/run.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
gt="$build/gemmtune"
if grep -Eq '^cublas +cuda +ready' <<<"$("$gt" list 2>/dev/null)"; then
  shapes="$here/llama3_8b_gpu.csv"
  echo "== GPU found: tuning $shapes"
else
  shapes="$here/small_cpu.csv"
  echo "== no GPU: tuning $shapes on the CPU providers"
fi
db="$build/example-tuned.db"
echo "== step 1 (scope): what the shapes ask for"
"$gt" shapes "$shapes"
echo
echo "== steps 2-5 (baseline, search, gate, deploy): gemmtune tune $shapes -o $db"
rm -f "$db"
"$gt" tune "$shapes" -o "$db"
echo
echo "== the DB that was written ($db):"
cat "$db"
echo
echo "== step 6 (verify) starts here: the first shape's key, looked up exactly as the runtime does"
first=$(awk -F, 'NR==2{print $3","$4","$5}' "$shapes")
"$gt" explain "$db" --linear "$first" || true
