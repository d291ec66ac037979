#!/usr/bin/env bash
# Keys whose every first call is made inside CUDA graph capture (tests/gpu/shim_client.c with
# GT_CLIENT_GRAPH_FIRST=1: each case captured, then its graph replayed three times; the
# device-pointer case left out): under the shim with a DB row for the key, the tuned kernel runs
# in the replays, with the results of the direct cuBLAS calls.
#   1. without the shim: reference checksums (graph replays of cuBLAS)
#   2. capture: keys counted under capture; a fixture DB preferring own kernels
#   3. no call outside capture at all: rows of own kernels (whose preparation is safe during a
#      capture) are decided in the capture and hit on every call; a cuBLASLt row cannot be
#      prepared there by a thread without its cuBLASLt handle: it waits (says why), its calls run
#      cuBLAS, the results stay right, the capture is never invalidated
#   4. one eager GEMM of an unrelated key first (GT_CLIENT_WARMUP=1, as a process that ran any
#      GEMM before capturing): every row was prepared at that call, every row hits in the graphs
# Usage: bash test_preload_capture_first.sh /path/to/gemmtune SRCDIR. Exits 77 without a GPU.
set -u
GEMMTUNE=${1:?usage: test_preload_capture_first.sh /path/to/gemmtune SRCDIR}
BIN=$(cd "$(dirname "$GEMMTUNE")" && pwd)
SHIM=${GEMMTUNE_PRELOAD_LIB:-$BIN/libgemmtune_preload.so}
CLIENT=${GT_SHIM_CLIENT:-$BIN/gt_shim_client}
FIXTURE=${GT_FIXTURE_DB:-$BIN/gt_fixture_db}

if [ ! -x "$CLIENT" ] || [ ! -f "$SHIM" ] || [ ! -x "$FIXTURE" ]; then
  echo "SKIP: shim or its test programs not built (CUDA off?)"
  exit 77
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no GPU (nvidia-smi -L failed)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gt_capfirst.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
finish() {
  echo "$pass passed, $failed failed"
  if [ "$failed" -ne 0 ]; then
    for f in "$tmp"/*.err "$tmp"/fixture.out "$tmp"/*stats.csv; do
      [ -s "$f" ] || continue
      echo "--- $(basename "$f") (last 40 lines)"
      tail -n 40 "$f"
    done
    exit 1
  fi
  exit 0
}
same_results() { # ref got rel (see test_preload.sh)
  awk -v rel="$3" '
    function abs(x) { return x < 0 ? -x : x }
    function val(s) { sub(/^[a-z]+=/, "", s); return s + 0 }
    FNR == NR { if ($1 == "case") { s[$2] = val($3); w[$2] = val($4); a[$2] = val($5); n++ } next }
    $1 == "case" {
      seen++
      if (!($2 in a)) { next } # the warm-up case
      tol = rel * a[$2] + 1e-3
      if (abs(val($3) - s[$2]) > tol || abs(val($4) - w[$2]) > tol || abs(val($5) - a[$2]) > tol) {
        printf "  %s: sum %s vs %s, wsum %s vs %s, asum %s vs %s\n", $2, $3, s[$2], $4, w[$2], $5, a[$2]
        bad = 1
      }
    }
    END { if (seen < n) { print "  " seen " cases, reference has " n; bad = 1 } exit bad }
  ' "$1" "$2"
}
export GT_CLIENT_GRAPH_FIRST=1

# 1. reference
"$CLIENT" >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: the client found no CUDA device"; exit 77; }
check "client runs without the shim (every case captured)" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || { cat "$tmp/plain.err"; finish; }

# 2. capture and the fixture (own kernels where one applies)
"$GEMMTUNE" capture --lib "$SHIM" -o "$tmp/shapes.csv" -- "$CLIENT" >"$tmp/cap.out" 2>"$tmp/cap.err"
check "client runs under gemmtune capture" "[ $? -eq 0 ]"
check "capture leaves results unchanged" "same_results '$tmp/plain.out' '$tmp/cap.out' 0"
"$FIXTURE" "$tmp/shapes.csv" "$tmp/db.csv" --prefer gt_sm90_ >"$tmp/fixture.out" 2>&1
check "fixture DB written" "[ $? -eq 0 ] && [ -s '$tmp/db.csv' ]"
nrows=$(grep -c '^row ' "$tmp/fixture.out")
nown=$(grep -c '^row kernels ' "$tmp/fixture.out")
echo "  note: $nrows fixture rows, $nown of them own kernels"
check "the fixture has own-kernel rows" "[ $nown -gt 0 ]"

# 3. every call of the process inside a capture
GEMMTUNE_DB="$tmp/db.csv" GEMMTUNE_LOG=1 GEMMTUNE_STATS="$tmp/first_stats.csv" LD_PRELOAD="$SHIM" \
  "$CLIENT" >"$tmp/first.out" 2>"$tmp/first.err"
check "client runs under the shim, every first call in capture" "[ $? -eq 0 ]"
check "results within tolerance of the direct calls" "same_results '$tmp/plain.out' '$tmp/first.out' 0.02"
check "no capture was invalidated" "! grep -qiE 'invalidated|capture is not active' '$tmp/first.err'"
check "every own-kernel row hit on every call, in the graphs ($nown)" \
  "[ \$(awk -F, 'NR > 1 && \$3 == \"hit\" && \$4 == \"kernels\" && \$1 == \$2' '$tmp/first_stats.csv' | wc -l) -eq $nown ]"
check "every other row waited, saying why (no cuBLASLt handle before the capture)" \
  "[ \$(awk -F, 'NR > 1 && \$3 == \"deferred\"' '$tmp/first_stats.csv' | wc -l) -eq $((nrows - nown)) ] && { [ $nrows -eq $nown ] || grep -q '^gemmtune: wait .*cannot prepare a candidate during CUDA graph capture' '$tmp/first.err'; }"

# 4. one eager GEMM first: the warm-up prepares every row
GT_CLIENT_WARMUP=1 GEMMTUNE_DB="$tmp/db.csv" GEMMTUNE_LOG=1 GEMMTUNE_STATS="$tmp/warm_stats.csv" \
  LD_PRELOAD="$SHIM" "$CLIENT" >"$tmp/warm.out" 2>"$tmp/warm.err"
check "client runs under the shim after one eager GEMM" "[ $? -eq 0 ]"
check "results within tolerance of the direct calls" "same_results '$tmp/plain.out' '$tmp/warm.out' 0.02"
check "every row hit on every call, in the graphs ($nrows)" \
  "[ \$(awk -F, 'NR > 1 && \$3 == \"hit\" && \$1 == \$2' '$tmp/warm_stats.csv' | wc -l) -eq $nrows ]"
check "nothing waited" "! grep -q '^gemmtune: wait ' '$tmp/warm.err' && ! grep -q ',deferred,' '$tmp/warm_stats.csv'"
check "no crash or abort messages" "! grep -qiE 'segmentation|abort|core dumped|invalidated' '$tmp/first.err' '$tmp/warm.err'"
finish
