#!/usr/bin/env bash
# gemmtune verify and gemmtune check on a GPU, on the shim's test client (tests/gpu/shim_client.c:
# real cuBLAS, calls through cublasGemmEx and cublasLtMatmul, some inside CUDA graph capture with
# three replays, one key seen only under capture) and a DB naming a runnable candidate for every
# captured key (gt_fixture_db: mostly cuBLASLt configs, so the calibration runs):
#   1. every key with a row engages: exit 0, PASS, kernel identity from the CUPTI trace, GEMM
#      share, Amdahl bound, end-to-end numbers; the device-pointer call's key is listed (untuned:
#      capture marked it not tunable, so no row serves it)
#   2. the key seen only under graph capture: decided during the capture, its tuned kernel found
#      in the graph replays; exit 0
#   3. the DB with sm_count changed: near misses naming sm_count; exit 1
#   4. libcupti unloadable: UNVERIFIED, never a pass; exit 1
#   5. check: rows for another device are not applicable (none applies: exit 1); every fixture row replays (exists and
#      passes the gate; its placeholder times are not expected to reproduce)
#   6. rows naming the Hopper TMA + wgmma own kernels (cluster launches) engage through the shim:
#      the trace shows the wg instance itself running, graph replays included
# Usage: bash test_verify_gpu.sh /path/to/gemmtune SRCDIR. Exits 77 (skipped) without a GPU.
set -u
GEMMTUNE=${1:?usage: test_verify_gpu.sh /path/to/gemmtune SRCDIR}
BIN=$(cd "$(dirname "$GEMMTUNE")" && pwd)
SHIM=${GEMMTUNE_PRELOAD_LIB:-$BIN/libgemmtune_preload.so}
TRACER=${GEMMTUNE_TRACE_LIB:-$BIN/libgemmtune_trace.so}
CLIENT=${GT_SHIM_CLIENT:-$BIN/gt_shim_client}
FIXTURE=${GT_FIXTURE_DB:-$BIN/gt_fixture_db}

for f in "$SHIM" "$TRACER" "$CLIENT" "$FIXTURE"; do
  if [ ! -e "$f" ]; then
    echo "SKIP: $f not built (CUDA off?)"
    exit 77
  fi
done
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no GPU (nvidia-smi -L failed)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gt_verify.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
# expect NAME RC_WANT OUTFILE CMD... : run CMD (stdout+stderr to OUTFILE), require its exit status
expect() {
  local name=$1 want=$2 out=$3
  shift 3
  "$@" >"$out" 2>&1
  local rc=$?
  if [ "$rc" = "$want" ]; then ok "$name"; else
    bad "$name (exit $rc, want $want)"
    tail -n 40 "$out" | sed 's/^/  | /'
  fi
}
has() { # NAME FILE PATTERN
  if grep -Eq -- "$3" "$2"; then ok "$1"; else bad "$1 (no /$3/ in $(basename "$2"))"; fi
}
hasnt() {
  if grep -Eq -- "$3" "$2"; then bad "$1 (found /$3/ in $(basename "$2"))"; else ok "$1"; fi
}

# The client, its capture and the fixture DB.
"$CLIENT" >"$tmp/plain.out" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIP: the client found no CUDA device"
  exit 77
fi
[ $rc -eq 0 ] || { bad "client runs"; tail "$tmp/plain.out"; exit 1; }
expect "capture the client" 0 "$tmp/cap.out" \
  "$GEMMTUNE" capture --lib "$SHIM" -o "$tmp/shapes.csv" -- "$CLIENT"
"$FIXTURE" "$tmp/shapes.csv" "$tmp/all.db" >"$tmp/fixture.out" 2>&1 || { bad "fixture DB"; cat "$tmp/fixture.out"; exit 1; }
# key column 10 is m: graph_new (m=2048) is only ever called under capture
awk -F, '!/^gemm,/ || $10 != 2048' "$tmp/all.db" >"$tmp/ok.db"
nrows=$(grep -c '^gemm,' "$tmp/ok.db")
nlt=$(grep -c '^gemm,.*,cublaslt,' "$tmp/ok.db")
echo "  note: $nrows fixture rows ($nlt cuBLASLt rows to calibrate)"

# 1. every key with a row engages
expect "verify: every tuned key engaged, exit 0" 0 "$tmp/v1.out" \
  "$GEMMTUNE" verify --db "$tmp/ok.db" --runs 2 --warmup 0 --keep "$tmp/v1" -- "$CLIENT"
has "PASS line" "$tmp/v1.out" "^PASS: all $nrows tuned keys the workload issued engaged"
has "the kernel trace was taken" "$tmp/v1.out" '^traced run: exit 0 .*kernel trace: ok, [0-9]+ kernel launches'
n=$(grep -c '^\[engaged\]' "$tmp/v1.out")
[ "$n" -eq "$nrows" ] && ok "one engaged key per row ($n)" || bad "engaged keys: $n, rows: $nrows"
has "expected kernels ran, with graph replays counted" "$tmp/v1.out" 'expected kernel .*: ran [0-9]+ times \([1-9][0-9]* from graphs\)'
hasnt "no kernel of a row missing" "$tmp/v1.out" 'never ran'
if [ "$nlt" -gt 0 ]; then
  has "cuBLASLt rows were calibrated (an expected kernel that is not an own kernel)" "$tmp/v1.out" \
    'expected kernel ([^g]|g[^t])'
  [ -n "$(ls "$tmp/v1" | grep '^calib-.*\.csv$')" ] && ok "calibration traces kept" || bad "no calibration traces"
fi
has "GEMM share printed" "$tmp/v1.out" '^GPU kernel time \(traced run, DB in place\): [0-9.]+ ms; GEMM kernels [0-9.]+%'
has "Amdahl bound printed" "$tmp/v1.out" '^Amdahl bound: '
has "end to end measured" "$tmp/v1.out" '^End to end \(2 runs each, interleaved, wall time'
has "the device-pointer call is keyed and passed through (untuned, decision pass)" "$tmp/v1.out" \
  '^\[untuned\] +bf16 TN m=256 n=32 k=256'

# 2. the key only issued under graph capture: decided there, served in the graph
expect "verify: a key first issued during graph capture engages, exit 0" 0 "$tmp/v2.out" \
  "$GEMMTUNE" verify --db "$tmp/all.db" --no-e2e -- "$CLIENT"
has "engaged" "$tmp/v2.out" '^\[engaged\] +bf16 TN m=2048 n=8 k=2048'
if awk '/^\[/ { blk = /m=2048 n=8 k=2048/ } blk && /expected kernel .*from graphs/ && !/\(0 from graphs\)/ { f = 1 } END { exit !f }' "$tmp/v2.out"; then
  ok "its tuned kernel ran in the graph replays"
else
  bad "its tuned kernel ran in the graph replays (no expected kernel from graphs in its block)"
fi
has "PASS line" "$tmp/v2.out" '^PASS: '

# 3. a DB for another device
awk -F, -v OFS=, '/^gemm,/ { $23 = 7 } { print }' "$tmp/ok.db" >"$tmp/sm7.db"
expect "verify: a DB for another device fails" 1 "$tmp/v3.out" \
  "$GEMMTUNE" verify --db "$tmp/sm7.db" --no-e2e -- "$CLIENT"
has "near misses" "$tmp/v3.out" '^\[near miss\] '
has "names sm_count" "$tmp/v3.out" 'sm_count: [0-9]+ vs 7'
has "FAIL: no row matched" "$tmp/v3.out" '^FAIL: no DB row matched any'

# 4. no CUPTI
expect "verify: no libcupti is unverified, exit 1" 1 "$tmp/v4.out" \
  env GEMMTUNE_CUPTI_LIB="$tmp/no-libcupti.so" "$GEMMTUNE" verify --db "$tmp/ok.db" --no-e2e -- "$CLIENT"
has "UNVERIFIED line" "$tmp/v4.out" '^UNVERIFIED: '
has "says why" "$tmp/v4.out" 'no-libcupti.so cannot be loaded'
hasnt "never PASS" "$tmp/v4.out" '^PASS'

# 5. check
expect "check: rows for another device are not applicable, and none applies: exit 1" 1 "$tmp/c1.out" \
  "$GEMMTUNE" check --rounds 5 "$tmp/sm7.db"
has "not applicable" "$tmp/c1.out" '^ +1  not applicable '
has "names the field" "$tmp/c1.out" 'sm_count: 7 vs [0-9]+ here'
"$GEMMTUNE" check --rounds 5 "$tmp/ok.db" >"$tmp/c2.out" 2>&1
nrep=$(grep -Ec '^ +[0-9]+  (passes|slower|no longer wins) ' "$tmp/c2.out")
[ "$nrep" -eq "$nrows" ] && ok "check: every fixture row replays ($nrep)" \
  || { bad "check: $nrep of $nrows rows replayed"; tail -n 40 "$tmp/c2.out" | sed 's/^/  | /'; }
hasnt "check: no row missing, failing the gate or crashing" "$tmp/c2.out" '^ +[0-9]+  (missing|fails gate|crashed|hung|error) '

# 6. the wg family through the live path
"$FIXTURE" "$tmp/shapes.csv" "$tmp/wg_all.db" --prefer gt_sm90_wg_ >"$tmp/fixture_wg.out" 2>&1 \
  || { bad "fixture DB with wg rows"; cat "$tmp/fixture_wg.out"; }
awk -F, '!/^gemm,/ || $10 != 2048' "$tmp/wg_all.db" >"$tmp/wg.db"
nwg=$(grep -c '^gemm,.*,gt_sm90_wg_' "$tmp/wg.db")
nwrows=$(grep -c '^gemm,' "$tmp/wg.db")
[ "$nwg" -gt 0 ] && ok "fixture: $nwg rows name wg instances" || bad "fixture: no wg row (client keys not TN bf16?)"
expect "verify: wg rows engage, exit 0" 0 "$tmp/v6.out" \
  "$GEMMTUNE" verify --db "$tmp/wg.db" --no-e2e -- "$CLIENT"
has "PASS line (wg DB)" "$tmp/v6.out" "^PASS: all $nwrows tuned keys the workload issued engaged"
has "a wg instance ran, graph replays counted" "$tmp/v6.out" \
  'expected kernel gt_sm90_wg_[a-z0-9_]+: ran [0-9]+ times \([1-9][0-9]* from graphs\)'

echo "$pass passed, $failed failed"
if [ "$failed" -ne 0 ]; then
  for f in "$tmp"/*.out; do
    echo "--- $(basename "$f") (last 30 lines)"
    tail -n 30 "$f"
  done
  exit 1
fi
exit 0
