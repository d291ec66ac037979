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
# An illegal parameter set fails generation with the family, group and rule named.
illegal() { # illegal NAME FAMILY GROUP_JSON PATTERN
  cp -r "$SRC/src/kernels" "$TMP/bad_$1"
  python3 - "$TMP/bad_$1/space.json" "$2" "$3" <<'PY'
import json, sys
path, fam, group = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
space = json.load(open(path))
space["families"][fam]["groups"].append(group)
json.dump(space, open(path, "w"))
PY
  expect_exit 2 "$1 is refused" python3 "$TMP/bad_$1/gen_instances.py" --list
  expect_grep "$1: the rule is named" "$4"
}
illegal decodetc_prefetch_with_s3 decodetc \
  '{"n": [8], "m": [1], "w": [[1, 8]], "u": [2], "s": [3], "p": [2]}' 'decodetc group [0-9]+ .*0 with s3'
illegal wg_multicast_cluster_too_big wg \
  '{"t": [[64, 64, 64]], "s": [4], "ks": [4], "p": [4], "c": [4]}' 'wg group [0-9]+ .*c \* ks <= 8'
illegal wg_multicast_partial_swizzle_group wg \
  '{"t": [[64, 16, 64]], "s": [4], "ks": [1], "p": [4], "c": [4]}' 'BN / c a multiple of 8'
illegal wg_two_warpgroups_odd_split wg \
  '{"t": [[40, 64, 64]], "s": [4], "ks": [1], "p": [4], "w": [2]}' 'two consumer warpgroups'
finish
