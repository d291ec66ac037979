#!/usr/bin/env bash
# The tune supervisor on the host backend: with --isolate each shape runs in a worker process.
# A planted candidate that crashes the worker (SIGSEGV) and one that never returns are recorded
# as failed, the shape is retried without them, and the run goes on to the next shape. The
# silence limit (5 s) is far above what a real candidate takes on these 128-wide shapes, so a
# loaded machine (ctest -j on few cores) does not make a real candidate look hung.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$TMP/s.csv"
printf 'model,proj,tokens,out_features,in_features\ni,a,8,96,128\ni,b,16,64,128\n' >"$shapes"
expect_exit 0 "tune survives a crashing and a hanging candidate" \
  env GEMMTUNE_TEST_PROVIDERS=all "$GT" tune --cpu --isolate --shape-timeout 5 --rounds 5 \
  "$shapes" -o "$TMP/i.db"
expect_grep "the crash is attributed to its candidate" 'candidate testonly_crash crashed; recorded as failed'
expect_grep "the hang is attributed to its candidate" 'candidate testonly_hang hung; recorded as failed'
expect_grep "both shapes finished" 'Summary: 2 shapes tuned'
expect_grep "no shape failed" ' 0 failed'
expect_grep "the note names the excluded candidates" 'faulted: testonly_crash,testonly_hang'
if grep -q testonly "$TMP/i.db"; then bad "a planted candidate reached the DB"; else ok "no planted candidate in the DB"; fi
# Without isolation the planted crash would take the tune with it: the candidates are only
# offered when asked for, and never by GEMMTUNE_TEST_PROVIDERS=1.
expect_exit 0 "GEMMTUNE_TEST_PROVIDERS=1 offers no crash or hang candidate" \
  env GEMMTUNE_TEST_PROVIDERS=1 "$GT" list --cpu --linear 8,96,128
expect_nogrep "crash/hang not listed" 'testonly_(crash|hang)'
finish
