#!/usr/bin/env bash
# The preload shim with stand-in cuBLAS libraries (fake_cublas.c, versioned like the real ones):
# it exports exactly the five interposed entry points and does not link cuBLAS; every call it does
# not serve reaches the real function with every argument unchanged (with and without logging,
# capture, or a bad GEMMTUNE_DB); a bad DB path costs one warning line; the exit table counts
# every call; a misspelt GEMMTUNE_* variable costs one line naming the nearest known one. Runs
# without a GPU (the shim then passes everything through) and with one.
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
# The stand-in's cublasLtMatmul gets a stream value no CUDA runtime knows: the shim must read the
# (unreadable) descriptor first and pass the call through without ever handing that stream to CUDA
# (with a GPU present, doing so crashes the process).
check "the unreadable cuBLASLt descriptor passes through, whatever its stream" \
  "grep -q 'gemmtune: *2 cublasLtMatmul calls passed through: matmul descriptor unreadable' '$tmp/log.err'"

GEMMTUNE_CAPTURE="$tmp/shapes.csv" LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/cap.out" 2>"$tmp/cap.err"
check "capture: exit 0" "[ \$? -eq 0 ]"
check "capture: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/cap.out'"
check "capture: shapes file starts with the header" \
  "head -n 1 '$tmp/shapes.csv' | grep -q '^calls,time_us,share,entry,workspace,op,a_type,'"

# GEMMTUNE_STATS: the exact header, every call in some row, only the five decisions, the
# descriptor-less cuBLASLt calls as one pass row without a key. "%p" becomes the process id.
GEMMTUNE_STATS="$tmp/stats.%p.csv" LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/stats.out" 2>"$tmp/stats.err"
check "stats: exit 0, arguments forwarded unchanged" "[ \$? -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/stats.out'"
stats=$(ls "$tmp"/stats.[0-9]*.csv 2>/dev/null | head -n 1)
check "stats: one file, named with the process id" "[ -n '$stats' ] && [ \$(ls '$tmp'/stats.*.csv | wc -l) -eq 1 ]"
want_stats="calls,hits,decision,provider,instance,entry,op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count"
check "stats: header is exact" "[ \"\$(head -n 1 '$stats')\" = '$want_stats' ]"
check "stats: every call is in a row (12)" \
  "awk -F, 'NR > 1 { c += \$1 } END { exit c != 12 }' '$stats'"
check "stats: decisions are hit/miss/pass/notused/deferred, no hits" \
  "awk -F, 'NR > 1 && (\$3 !~ /^(hit|miss|pass|notused|deferred)\$/ || \$2 != 0) { bad = 1 } END { exit bad }' '$stats'"
check "stats: 29 columns in every row" "awk -F, 'NF != 29 { bad = 1 } END { exit bad }' '$stats'"
check "stats: the cuBLASLt calls are one keyless pass row" \
  "grep -q '^2,0,pass,-,-,cublasLtMatmul,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-\$' '$stats'"
# two processes of one workload writing one path: the second adds its counts to the first's
for _ in 1 2; do
  GEMMTUNE_STATS="$tmp/shared_stats.csv" LD_PRELOAD="$SHIM" "$tmp/client" >/dev/null 2>>"$tmp/shared.err"
done
check "stats: two processes sharing a path add up (24 calls, same rows)" \
  "awk -F, 'NR > 1 { c += \$1; n++ } END { exit c != 24 || n != $(($(wc -l <"${stats:-/dev/null}") - 1)) }' '$tmp/shared_stats.csv'"

# Misspelt variables: one line each at the shim's start, naming the nearest known variable (the
# near-miss prefix GEMTUNE_ included); known ones of other readers and other tools' are not named;
# children forked after the start say nothing again; the calls are untouched.
GEMMTUNE_DB_FILE="$tmp/x.db" GEMTUNE_DB="$tmp/y.db" GEMMTUNE_SEED=3 GEMM_THREADS=2 \
  LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/typo.out" 2>"$tmp/typo.err"
check "misspelt variables: exit 0, arguments forwarded unchanged" \
  "[ \$? -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/typo.out'"
check "GEMMTUNE_DB_FILE is warned about once, naming GEMMTUNE_DB" \
  "[ \$(grep -c '^gemmtune: GEMMTUNE_DB_FILE is not a gemmtune variable and is ignored; did you mean GEMMTUNE_DB ' '$tmp/typo.err') -eq 1 ]"
check "GEMTUNE_DB (a near-miss prefix) is warned about once, naming GEMMTUNE_DB" \
  "[ \$(grep -c '^gemmtune: GEMTUNE_DB is not a gemmtune variable and is ignored; did you mean GEMMTUNE_DB ' '$tmp/typo.err') -eq 1 ]"
check "nothing else is said (GEMMTUNE_SEED is known, GEMM_THREADS is not ours)" \
  "[ \$(wc -l <'$tmp/typo.err') -eq 2 ]"
# A child forked after the shim started passes calls through and says nothing; one forked before
# the parent's first call starts the shim afresh, as any process does: at most a line per process.
GEMMTUNE_DBS="$tmp/x.db" GT_CLIENT_FORK=3 LD_PRELOAD="$SHIM" "$tmp/client" >/dev/null 2>"$tmp/typofork.err"
n_dbs=$(grep -c 'GEMMTUNE_DBS is not a gemmtune variable.*did you mean GEMMTUNE_DB ' "$tmp/typofork.err" || true)
check "forked children: GEMMTUNE_DBS said at most once per process (1 to 4 lines: $n_dbs)" \
  "[ $n_dbs -ge 1 ] && [ $n_dbs -le 4 ]"

echo "$pass passed, $failed failed"
if [ "$failed" -ne 0 ]; then
  for f in "$tmp"/*.err; do echo "--- $f"; cat "$f"; done
  exit 1
fi
exit 0
