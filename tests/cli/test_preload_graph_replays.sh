#!/usr/bin/env bash
# Calls made under CUDA graph capture count once per replay: tests/gpu/shim_client.c with
# GT_CLIENT_CASES=replays captures a decode-like step once (one key called twice per step, one
# once, the latter also called once eagerly before the capture) and replays the graph N times.
#   1. gemmtune capture (the kernel tracer injected): calls = N x calls per step (+ the eager
#      call), GPU time from the replays' kernels (a key never called eagerly still has time), the
#      file's '#gemmtune-replays' line names the method, stderr says the replays were counted
#   2. the same with the tracer missing: each captured call counts once, as an API call, and
#      capture says replays were not counted and why
# Usage: bash test_preload_graph_replays.sh /path/to/gemmtune SRCDIR. Exits 77 without a GPU.
set -u
GEMMTUNE=${1:?usage: test_preload_graph_replays.sh /path/to/gemmtune SRCDIR}
BIN=$(cd "$(dirname "$GEMMTUNE")" && pwd)
SHIM=${GEMMTUNE_PRELOAD_LIB:-$BIN/libgemmtune_preload.so}
TRACER=${GEMMTUNE_TRACE_LIB:-$BIN/libgemmtune_trace.so}
CLIENT=${GT_SHIM_CLIENT:-$BIN/gt_shim_client}

if [ ! -x "$CLIENT" ] || [ ! -f "$SHIM" ] || [ ! -f "$TRACER" ]; then
  echo "SKIP: shim, tracer or client not built (CUDA off, or no CUPTI?)"
  exit 77
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no GPU (nvidia-smi -L failed)"
  exit 77
fi
if [ -n "${CUDA_INJECTION64_PATH:-}" ]; then
  echo "SKIP: CUDA_INJECTION64_PATH is set by the environment: the tracer cannot be injected"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gt_replays.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
finish() {
  echo "$pass passed, $failed failed"
  if [ "$failed" -ne 0 ]; then
    for f in "$tmp"/*.err "$tmp"/*.csv; do
      [ -s "$f" ] || continue
      echo "--- $(basename "$f") (last 30 lines)"
      tail -n 30 "$f"
    done
    exit 1
  fi
  exit 0
}
# calls of the row whose key has m=$2 (n=4, k=1024) in shapes file $1
calls_of() { awk -F, -v m="$2" '/^#/ { next } !h { h = 1; next } $16 == m && $17 == 4 && $18 == 1024 { print $1 }' "$1"; }
time_of() { awk -F, -v m="$2" '/^#/ { next } !h { h = 1; next } $16 == m && $17 == 4 && $18 == 1024 { print $2 }' "$1"; }

export GT_CLIENT_CASES=replays
N=7
export GT_CLIENT_REPLAYS=$N

# 1. with the tracer
"$GEMMTUNE" capture --lib "$SHIM" --trace-lib "$TRACER" -o "$tmp/shapes.csv" -- "$CLIENT" \
  >"$tmp/cap.out" 2>"$tmp/cap.err"
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: the client found no CUDA device"; exit 77; }
check "client runs under gemmtune capture" "[ $rc -eq 0 ]"
check "the client replayed its step $N times" "grep -q '^replays $N\$' '$tmp/cap.out'"
check "the method is named: counted through the tracer's graph nodes, 3 captured calls, $((3 * N)) replays" \
  "grep -q '^#gemmtune-replays counted_by=cupti-graph-nodes captured_calls=3 identified=3 replays=$((3 * N))\$' '$tmp/shapes.csv'"
twice=$(calls_of "$tmp/shapes.csv" 1024)
once=$(calls_of "$tmp/shapes.csv" 2048)
check "the key called twice per step: $((2 * N)) calls (got ${twice:-none})" "[ '${twice:-}' = $((2 * N)) ]"
check "the key called once per step and once eagerly: $((N + 1)) calls (got ${once:-none})" \
  "[ '${once:-}' = $((N + 1)) ]"
check "the key never called eagerly has the GPU time of its replays" \
  "awk -v t='$(time_of "$tmp/shapes.csv" 1024)' 'BEGIN { exit !(t + 0 > 0) }'"
check "capture says the replays were counted" \
  "grep -q 'graph replays counted through the kernel trace' '$tmp/cap.err'"

# 2. without the tracer
GEMMTUNE_TRACE_LIB="$tmp/no-such-tracer.so" "$GEMMTUNE" capture --lib "$SHIM" \
  -o "$tmp/api.csv" -- "$CLIENT" >"$tmp/api.out" 2>"$tmp/api.err"
check "client runs under capture without the tracer" "[ $? -eq 0 ]"
check "the method is named: API calls, with the reason" \
  "grep -q '^#gemmtune-replays counted_by=api-calls captured_calls=3 reason=..*' '$tmp/api.csv'"
check "captured calls count once each (2 and 1 + 1 eager)" \
  "[ '$(calls_of "$tmp/api.csv" 1024)' = 2 ] && [ '$(calls_of "$tmp/api.csv" 2048)' = 2 ]"
check "capture says the replays were not counted" \
  "grep -q 'graph replays NOT counted' '$tmp/api.err'"
finish
