# Shared helpers for the CLI tests: a table of named checks ending in "N passed, N failed".
# Usage in a test: source lib.sh; check NAME CMD...; expect_exit CODE NAME CMD...; finish
GT=${1:?usage: test.sh GEMMTUNE SRCDIR}
SRC=${2:?usage: test.sh GEMMTUNE SRCDIR}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PASSED=0
FAILED=0
# Default to the host backend so the CLI tests mean the same thing with or without a GPU.
export GEMMTUNE_SEED=${GEMMTUNE_SEED:-12345}
ok() { PASSED=$((PASSED + 1)); echo "ok   - $1"; }
bad() { FAILED=$((FAILED + 1)); echo "FAIL - $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/       /'; }
# expect_exit CODE NAME CMD... : run CMD, require exit status CODE; output kept in $OUT_TXT
expect_exit() {
  local want=$1 name=$2; shift 2
  set +e
  OUT_TXT=$("$@" 2>&1)
  local got=$?
  set -e
  if [ "$got" = "$want" ]; then ok "$name"; else bad "$name (exit $got, want $want)" "$OUT_TXT"; fi
}
# expect_grep NAME PATTERN : require PATTERN in the last command's output. A here-string, not a
# pipe: under pipefail, grep -q exiting at the first match can kill the writer with SIGPIPE and
# turn a match into a failed pipeline.
expect_grep() {
  if grep -Eq -- "$2" <<<"$OUT_TXT"; then ok "$1"; else bad "$1 (no /$2/)" "$OUT_TXT"; fi
}
expect_nogrep() {
  if grep -Eq -- "$2" <<<"$OUT_TXT"; then bad "$1 (found /$2/)" "$OUT_TXT"; else ok "$1"; fi
}
finish() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" = 0 ]
}
