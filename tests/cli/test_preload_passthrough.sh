#!/usr/bin/env bash
# The preload shim with stand-in cuBLAS libraries (fake_cublas.c, versioned like the real ones):
# it exports exactly the five interposed entry points and does not link cuBLAS; every call it does
# not serve reaches the real function with every argument unchanged (with and without logging,
# capture, or a bad GEMMTUNE_DB); a bad DB path costs one warning line; the exit table counts
# every call. Runs without a GPU (the shim then passes everything through) and with one.
# Usage: bash test_preload_passthrough.sh /path/to/gemmtune SRCDIR. Exits 77 when the shim is
# not built (CUDA off) or there is no C compiler.
set -u
GEMMTUNE=${1:?usage: test_preload_passthrough.sh /path/to/gemmtune SRCDIR}
SRC=${2:?usage: test_preload_passthrough.sh /path/to/gemmtune SRCDIR}
BIN=$(cd "$(dirname "$GEMMTUNE")" && pwd)
SHIM=${GEMMTUNE_PRELOAD_LIB:-$BIN/libgemmtune_preload.so}
CC=${CC:-cc}

[ -f "$SHIM" ] || { echo "SKIP: $SHIM not built (CUDA off?)"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler ($CC)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gt_passthrough.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0
check() { if eval "$2"; then echo "ok   - $1"; pass=$((pass + 1)); else echo "FAIL - $1"; failed=$((failed + 1)); fi; }

echo 'libcublas.so.13 { global: *; };' >"$tmp/cublas.map"
echo 'libcublasLt.so.13 { global: *; };' >"$tmp/cublasLt.map"
"$CC" -shared -fPIC -Wl,-soname,libcublas.so.13 -Wl,--version-script="$tmp/cublas.map" \
  "$SRC/tests/cli/fake_cublas.c" -o "$tmp/libcublas.so.13" &&
  "$CC" -shared -fPIC -DFAKE_LT -Wl,-soname,libcublasLt.so.13 \
    -Wl,--version-script="$tmp/cublasLt.map" "$SRC/tests/cli/fake_cublas.c" \
    -o "$tmp/libcublasLt.so.13" &&
  "$CC" "$SRC/tests/cli/passthrough_client.c" -o "$tmp/client" -L"$tmp" -l:libcublas.so.13 \
    -l:libcublasLt.so.13 -Wl,-rpath,"$tmp" || { echo "FAIL - building the stand-ins"; exit 1; }

exports=$(nm -D --defined-only "$SHIM" | awk '{print $3}' | sort | tr '\n' ' ')
check "exports exactly the five entry points ($exports)" \
  "[ '$exports' = 'cublasGemmEx cublasGemmStridedBatchedEx cublasHgemm cublasLtMatmul cublasSgemm_v2 ' ]"
check "exports carry no version node" "! readelf -V '$SHIM' | grep -q 'Version definition'"
check "does not link cuBLAS" "! readelf -d '$SHIM' | grep NEEDED | grep -qi cublas"

"$tmp/client" >"$tmp/plain.out" 2>&1
check "stand-in client runs" "[ \$? -eq 0 ] && [ \$(grep -c '^real ' '$tmp/plain.out') -eq 12 ]"

LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/quiet.out" 2>"$tmp/quiet.err"
check "no GEMMTUNE_* set: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/quiet.out'"
check "no GEMMTUNE_* set: silent" "[ ! -s '$tmp/quiet.err' ]"

GEMMTUNE_LOG=1 GEMMTUNE_DB="$tmp/missing.csv" LD_PRELOAD="$SHIM" "$tmp/client" \
  >"$tmp/log.out" 2>"$tmp/log.err"
check "logging with a missing DB: exit 0" "[ \$? -eq 0 ]"
check "logging with a missing DB: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/log.out'"
check "the missing DB is warned about exactly once" \
  "[ \$(grep -c '^gemmtune: tuned DB skipped: $tmp/missing.csv' '$tmp/log.err') -eq 1 ]"
check "every call is counted in the exit table" "grep -q '^gemmtune: total: 12 calls, 0 served' '$tmp/log.err'"
check "the unreadable cuBLASLt descriptor passes through" \
  "grep -q 'cublasLtMatmul calls passed through: \\(matmul descriptor unreadable\\|the stream.s device\\)' '$tmp/log.err'"

GEMMTUNE_CAPTURE="$tmp/shapes.csv" LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/cap.out" 2>"$tmp/cap.err"
check "capture: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/cap.out'"
check "capture: shapes file starts with the header" \
  "head -n 1 '$tmp/shapes.csv' | grep -q '^calls,time_us,share,op,a_type,'"

echo "$pass passed, $failed failed"
if [ "$failed" -ne 0 ]; then
  for f in "$tmp"/*.err; do echo "--- $f"; cat "$f"; done
  exit 1
fi
exit 0
