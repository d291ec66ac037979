#!/usr/bin/env bash
# The Python entry point from the source tree (python/gemmtune, the package pip installs):
# python -m gemmtune runs the CLI with the same arguments and exit status, and deploy_env gives
# the environment `gemmtune run` gives. GEMMTUNE_BIN points it at the binary under test.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
export PYTHONPATH="$SRC/python${PYTHONPATH:+:$PYTHONPATH}" GEMMTUNE_BIN="$GT"
expect_exit 0 "python -m gemmtune --version" python3 -m gemmtune --version
expect_grep "the CLI answered" '^gemmtune [0-9]+\.[0-9]+'
expect_exit 0 "python -m gemmtune tune --help" python3 -m gemmtune tune --help
expect_grep "tune's help" 'Usage: gemmtune tune SHAPES -o DB'
expect_exit 66 "the CLI's exit status comes back" python3 -m gemmtune tune "$TMP/nope.csv" -o "$TMP/x.db"
printf 'model,proj,tokens,out_features,in_features\nt,a,8,128,128\n' >"$TMP/s.csv"
expect_exit 0 "python -m gemmtune tune" python3 -m gemmtune tune --cpu --rounds 3 "$TMP/s.csv" -o "$TMP/p.db"
expect_grep "tuned" 'Summary: 1 shapes tuned'
shim=$(ls /lib/x86_64-linux-gnu/libm.so.6 /usr/lib64/libm.so.6 2>/dev/null | head -1 || true)
if [ -n "$shim" ]; then
  expect_exit 0 "python -m gemmtune run" env -u LD_PRELOAD python3 -m gemmtune run --db "$TMP/p.db" --lib "$shim" -- env
  expect_grep "LD_PRELOAD is the shim" "^LD_PRELOAD=/.*libm[^:]*$"
  expect_grep "GEMMTUNE_DB is the DB" "^GEMMTUNE_DB=/.*p\.db$"
  expect_exit 0 "deploy_env" env GEMMTUNE_PRELOAD_LIB="$shim" LD_PRELOAD=/x.so python3 -c \
    "import gemmtune, sys; e = gemmtune.deploy_env('$TMP/p.db'); print(e['LD_PRELOAD']); print(e['GEMMTUNE_DB'])"
  expect_grep "the shim in front of what LD_PRELOAD held" "^$shim:/x\.so$"
fi
# tune races grouped_mm keys in a torch process: the CLI gets this interpreter (with its torch).
expect_exit 0 "python -m gemmtune hands over its interpreter" env -u GEMMTUNE_PYTHON \
  GEMMTUNE_BIN=/usr/bin/env python3 -m gemmtune
expect_grep "... as GEMMTUNE_PYTHON" "^GEMMTUNE_PYTHON=$(python3 -c 'import sys; print(sys.executable)')$"
expect_exit 0 "... unless one is named" env GEMMTUNE_PYTHON=/opt/py GEMMTUNE_BIN=/usr/bin/env python3 -m gemmtune
expect_grep "... which stays" '^GEMMTUNE_PYTHON=/opt/py$'
expect_exit 0 "the package imports" python3 -c "import gemmtune; print(gemmtune.binary())"
expect_grep "binary from GEMMTUNE_BIN" "$(basename "$GT")"
finish
