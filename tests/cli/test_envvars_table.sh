#!/usr/bin/env bash
# One table of environment variables (src/core/gt_envvars.c): every GEMMTUNE_* name a string
# literal of src/ or the Python package uses is in it (so the shim and the CLI know every variable
# that is read), every name in it is read somewhere, and the README's table lists exactly its
# names. Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 not found"
  exit 77
fi
expect_exit 0 "the table, the code and the README agree" python3 - "$SRC" <<'PY'
import os, re, sys
src = sys.argv[1]
NAME = re.compile(r"GEMMTUNE_[A-Z0-9_]*[A-Z0-9]")

def literals(text):
    """String literals of C text, comments removed."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.findall(r'"((?:[^"\\\n]|\\.)*)"', text)

table_file = os.path.join(src, "src/core/gt_envvars.c")
table = set()
for lit in literals(open(table_file).read()):
    if NAME.fullmatch(lit):
        table.add(lit)
used = {}
for root, _, files in os.walk(os.path.join(src, "src")):
    for f in files:
        p = os.path.join(root, f)
        if not f.endswith((".c", ".h", ".cu", ".cuh")) or p == table_file:
            continue
        for lit in literals(open(p, errors="replace").read()):
            for n in NAME.findall(lit):
                used.setdefault(n, p)
for root, _, files in os.walk(os.path.join(src, "python")):
    for f in files:
        if f.endswith(".py"):
            for n in re.findall(r'["\'](GEMMTUNE_[A-Z0-9_]*[A-Z0-9])["\']', open(os.path.join(root, f)).read()):
                used.setdefault(n, os.path.join(root, f))
readme = open(os.path.join(src, "README.md")).read()
section = readme.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
in_readme = set(n for line in section.splitlines() if line.startswith("| `")
                for n in NAME.findall(re.split(r"(?<!\\)\|", line)[1]))
bad = 0
for n, p in sorted(used.items()):
    if n not in table:
        print("%s: %s is read but not in the table (src/core/gt_envvars.c)" % (p, n)); bad = 1
for n in sorted(table - set(used)):
    print("%s is in the table but nothing reads it" % n); bad = 1
for n in sorted(table ^ in_readme):
    print("%s: in %s but not in %s" % (n, *(("the table", "the README's table") if n in table else ("the README's table", "the table")))); bad = 1
print("%d variables in the table, %d read, %d in the README" % (len(table), len(used), len(in_readme)))
sys.exit(bad)
PY
expect_grep "the counts are printed" '^[0-9]+ variables in the table'
finish
