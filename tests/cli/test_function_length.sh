#!/usr/bin/env bash
# No hand-written function over 150 lines in src/ or bench/ (check_function_length.py; the
# exempt kernel bodies are named there with their reasons). The checker must also fail: a copy
# of the tree with one planted 151-line function, a planted long Python def, a long function
# whose signature spans lines and a long template with a defaulted parameter is reported at
# each. Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 not found"
  exit 77
fi
CHECK="$(dirname "$0")/check_function_length.py"

expect_exit 0 "no function in src/ or bench/ is over 150 lines" python3 "$CHECK" "$SRC"
expect_grep "functions were found" 'function-length: [0-9]{3,} functions, limit 150'

tree="$TMP/long"
mkdir -p "$tree"
cp -r "$SRC/src" "$SRC/bench" "$tree/"
{
  echo 'static int planted_long(int a,'
  echo '                        int b) {'
  for i in $(seq 1 150); do echo "  a += b * $i;"; done
  echo '  return a;'
  echo '}'
} >>"$tree/src/core/gt_stats.c"
{
  echo 'def planted_py():'
  for i in $(seq 1 151); do echo "    x = $i"; done
} >>"$tree/bench/probe21_bench.py"
{
  echo 'template <typename T, bool EPI = false>'
  echo '__device__ __forceinline__ void planted_template(int a) {'
  for i in $(seq 1 150); do echo "  a += $i;"; done
  echo '}'
} >>"$tree/src/kernels/gt_kcommon.cuh"
expect_exit 1 "planted long functions fail" python3 "$CHECK" "$tree"
expect_grep "the C function is named at its file and line" '^src/core/gt_stats.c:[0-9]+: planted_long is 154 lines'
expect_grep "the Python def is named" '^bench/probe21_bench.py:[0-9]+: planted_py is 152 lines'
expect_grep "a template with a defaulted parameter is seen" '^src/kernels/gt_kcommon.cuh:[0-9]+: planted_template is 153 lines'
expect_grep "the count of violations" '3 violations'
finish
