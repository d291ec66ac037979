#!/usr/bin/env bash
# The committed own-kernel sources in src/kernels/generated/ are exactly what
# src/kernels/gen_instances.py generates from src/kernels/space.json (a build needs no python, so
# a stale generated file would otherwise go unnoticed). Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 not found"
  exit 77
fi
expect_exit 0 "generated kernels are up to date" python3 "$SRC/src/kernels/gen_instances.py" --check
expect_grep "check names the instance count" 'instances, [0-9]+ files up to date'
# A stale copy must be caught: check a copy of the tree with one generated file edited.
cp -r "$SRC/src/kernels" "$TMP/kernels"
printf '// edited\n' >> "$TMP/kernels/generated/instances.c"
expect_exit 1 "an edited generated file is reported" python3 "$TMP/kernels/gen_instances.py" --check
expect_grep "the edited file is named" 'instances.c differs'
rm "$TMP/kernels/generated/instances_fn.cu"
expect_exit 1 "a missing generated file is reported" python3 "$TMP/kernels/gen_instances.py" --check
expect_grep "the missing file is named" 'instances_fn.cu missing'
finish
