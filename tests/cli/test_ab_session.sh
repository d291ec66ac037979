#!/usr/bin/env bash
# bench/ab_session.sh refuses before it builds or takes the GPU: no patch named (2), a patch that
# is not there (2), a patch that does not apply to the tree (1, with git's reason), and it leaves
# the source tree as it was. --help says what a run is. Skipped (77) without git.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v git >/dev/null || { echo "skip: no git"; exit 77; }
AB="$SRC/bench/ab_session.sh"
export OUT="$TMP/out"
expect_exit 0 "--help" bash "$AB" --help
expect_grep "--help says what a RUN is" 'A RUN is one kernels_bench option string'
expect_exit 2 "no patch named" bash "$AB"
expect_exit 2 "a patch that is not there" bash "$AB" "$TMP/none.patch"
expect_grep "it names the missing patch" 'none.patch: no such patch'
cat >"$TMP/bad.patch" <<'P'
diff --git a/src/kernels/no_such_file.cuh b/src/kernels/no_such_file.cuh
--- a/src/kernels/no_such_file.cuh
+++ b/src/kernels/no_such_file.cuh
@@ -1,1 +1,1 @@
-a line that is not there
+another
P
expect_exit 1 "a patch that does not apply" bash "$AB" "$TMP/bad.patch"
expect_grep "it says the patch does not apply, with git's reason" 'does not apply to this tree:'
expect_grep "git's reason names the file" 'no_such_file.cuh'
check_untouched() { [ ! -e "$SRC/src/kernels/no_such_file.cuh" ] && [ ! -e "$SRC/build-ab" ]; }
if check_untouched; then ok "the source tree is as it was"; else bad "the source tree changed"; fi
if [ -f "$OUT/summary.txt" ]; then ok "the summary lands under OUT"; else bad "no $OUT/summary.txt"; fi
finish
