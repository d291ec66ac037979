#!/usr/bin/env bash
# The Python benchmarks' datasheet bandwidths (python/gemmtune/datasheet.py, used to scale the
# H200's TB/s bars to the part a run is on) are the rows of src/core/gt_roofline.c's table, which
# the C side's floors and verdicts use: the same parts, SM counts and GB/s, in the same order.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
# check.py TREE: compares TREE's two tables; exit 1 and both listed when they differ.
cat >"$TMP/check.py" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[1] + "/python")
from gemmtune import datasheet
src = open(sys.argv[1] + "/src/core/gt_roofline.c").read()
body = src[src.index("k_datasheets[] = {"):]
body = body[:body.index("};")]
rows = [(n, int(s), float(g)) for n, s, g in
        re.findall(r'\{"([^"]+)",\s*(\d+),\s*([0-9.]+)', body)]
if not rows:
    sys.exit("no rows read from gt_roofline.c's k_datasheets")
py = [(n, s, float(g)) for n, s, g in datasheet.DATASHEETS]
if rows != py:
    print("gt_roofline.c:", rows, "\ndatasheet.py: ", py)
    sys.exit(1)
if datasheet.H200_GBPS != dict(((n, s), g) for n, s, g in rows)[("H200", 0)]:
    print("H200_GBPS is not gt_roofline.c's H200 row")
    sys.exit(1)
print(len(rows), "rows agree")
PY
expect_exit 0 "the two tables agree" python3 "$TMP/check.py" "$SRC"
expect_grep "it read the C table's rows" '^[1-9][0-9]* rows agree'
# The check can fail: a copy of the tree whose C table differs in one bandwidth.
mkdir -p "$TMP/tree/src/core" "$TMP/tree/python"
cp -r "$SRC/python/gemmtune" "$TMP/tree/python/"
sed 's/{"H100", 132, 3350,/{"H100", 132, 3352,/' "$SRC/src/core/gt_roofline.c" >"$TMP/tree/src/core/gt_roofline.c"
expect_exit 1 "a bandwidth that differs is found" python3 "$TMP/check.py" "$TMP/tree"
expect_grep "both tables are listed" '3352'
finish
