#!/usr/bin/env bash
# The preload shim in an application that knows nothing of gemmtune (tests/gpu/shim_client.c,
# which links the real cuBLAS and calls cublasGemmEx, cublasGemmStridedBatchedEx, cublasSgemm_v2,
# cublasHgemm and cublasLtMatmul, some calls inside CUDA graph capture, one of them on a stream
# first used under capture, one in device pointer mode):
#   1. without the shim: reference checksums
#   2. gemmtune capture (GEMMTUNE_CAPTURE): results unchanged, one shapes row per distinct key
#   3. a DB naming a runnable candidate for every captured key (gt_fixture_db), one row poisoned
#      with a library version nobody has, plus a missing file in GEMMTUNE_DB
#   4. GEMMTUNE_DB + GEMMTUNE_LOG + GEMMTUNE_STATS: results within tolerance of 1, a hit line per
#      key with a row, the poisoned row reported and not used, the missing file warned about once,
#      pass-through of the device-pointer call (recorded under its key, marked not tunable), the
#      key first seen during graph capture decided there and served in the graph (its row was
#      prepared at the first call outside capture), an exit table whose hit rows count every call
#      as a hit (graph-captured calls included, also on a new stream), and a stats file saying
#      the same
#   5. a malformed DB alone: one warning, results unchanged
# Usage: bash test_preload.sh /path/to/gemmtune SRCDIR. Exits 77 (skipped) without a GPU.
set -u
GEMMTUNE=${1:?usage: test_preload.sh /path/to/gemmtune SRCDIR}
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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gt_preload.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
# The client's and the shim's stderr of every run, on failure: the test log is all a remote run
# brings back.
finish() {
  echo "$pass passed, $failed failed"
  if [ "$failed" -ne 0 ]; then
    for f in "$tmp"/*.err "$tmp"/fixture.out; do
      [ -s "$f" ] || continue
      echo "--- $(basename "$f") (last 40 lines)"
      tail -n 40 "$f"
    done
    echo "--- kept logs in $tmp.keep"
    cp -r "$tmp" "$tmp.keep"
    exit 1
  fi
  exit 0
}
# A run that failed shows why right away.
ran() { # name rc errfile
  if [ "$2" -eq 0 ]; then ok "$1"; else
    bad "$1 (exit $2)"
    grep -E 'shim_client:|gemmtune: (wait|not used|pass)|rror' "$3" | tail -n 15 | sed 's/^/  | /'
  fi
}

# Compare two checksum files: same cases, every sum within rel*asum (bf16/f16 outputs, different
# accumulation orders are allowed; an unwritten or misplaced output is not).
same_results() { # ref got rel
  awk -v rel="$3" '
    function abs(x) { return x < 0 ? -x : x }
    function val(s) { sub(/^[a-z]+=/, "", s); return s + 0 }
    FNR == NR { if ($1 == "case") { s[$2] = val($3); w[$2] = val($4); a[$2] = val($5); n++ } next }
    $1 == "case" {
      seen++
      if (!($2 in a)) { print "  unexpected case " $2; bad = 1; next }
      tol = rel * a[$2] + 1e-3
      if (abs(val($3) - s[$2]) > tol || abs(val($4) - w[$2]) > tol || abs(val($5) - a[$2]) > tol) {
        printf "  %s: sum %s vs %s, wsum %s vs %s, asum %s vs %s\n", $2, $3, s[$2], $4, w[$2], $5, a[$2]
        bad = 1
      }
    }
    END { if (seen != n) { print "  " seen " cases, reference has " n; bad = 1 } exit bad }
  ' "$1" "$2"
}

# 1. reference
"$CLIENT" >"$tmp/plain.out" 2>"$tmp/plain.err"
rc=$?
if [ $rc -eq 77 ]; then
  echo "SKIP: the client found no CUDA device"
  exit 77
fi
check "client runs without the shim" "[ $rc -eq 0 ]"
[ $rc -eq 0 ] || { cat "$tmp/plain.err"; finish; }
ncases=$(grep -c '^case ' "$tmp/plain.out")

# 2. capture, the way a user runs it (gemmtune capture sets LD_PRELOAD and GEMMTUNE_CAPTURE)
"$GEMMTUNE" capture --lib "$SHIM" -o "$tmp/shapes.csv" -- "$CLIENT" >"$tmp/cap.out" 2>"$tmp/cap.err"
rc=$?
ran "client runs under gemmtune capture" $rc "$tmp/cap.err"
check "capture mode leaves results unchanged" "same_results '$tmp/plain.out' '$tmp/cap.out' 0"
check "capture file written" "[ -s '$tmp/shapes.csv' ]"
header=$(grep -v '^#' "$tmp/shapes.csv" 2>/dev/null | head -n 1)
want_header="calls,time_us,share,entry,workspace,not_tunable,op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,scale_a,scale_b,fast_accum,scale_d,amax_d"
check "capture header is exact" "[ '$header' = '$want_header' ]"
# distinct keys: every case but graph_seen (same key as gemmex_linear16) and graph_stream2 (same
# key as gemmex_f32out); devptr's (pointer mode device) is marked not tunable
nkeys=$(($(grep -vc '^#' "$tmp/shapes.csv") - 1))
check "capture names the cuBLASLt the client loaded (version and path)" \
  "grep -Eq '^#gemmtune-capture cublaslt=[0-9]+ path=/.*libcublasLt' '$tmp/shapes.csv'"
check "capture names the cuBLAS the client loaded" \
  "grep -Eq '^#gemmtune-capture cublas=[0-9]+ path=/.*libcublas\.' '$tmp/shapes.csv'"
check "one capture row per distinct key ($nkeys, want $((ncases - 2)))" "[ $nkeys -eq $((ncases - 2)) ]"
# A captured call counts once per replay (the client replays each graph 3 times) when the kernel
# tracer counted them, once as an API call otherwise (the '#gemmtune-replays' line says which).
if grep -q '^#gemmtune-replays counted_by=cupti-graph-nodes' "$tmp/shapes.csv"; then
  lin=6 f32out=5 how="3 eager + 3 replays of the call captured"
else
  lin=4 f32out=3 how="3 eager + 1 captured call: replays not counted here"
  grep '^#gemmtune-replays' "$tmp/shapes.csv" | sed 's/^/  note: /'
fi
check "linear 16x4096x4096 captured with its $lin calls ($how)" \
  "grep -q '^$lin,[0-9.]*,[0-9.]*,gemmex,0,-,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,16,4096,4096,4096,4096,1,' '$tmp/shapes.csv'"
check "bf16->f32 512x64x1024 captured with its $f32out calls (2 eager + the call captured on a new stream)" \
  "grep -q '^$f32out,[0-9.]*,[0-9.]*,gemmex,0,-,gemm,bf16,bf16,f32,f32,f32,f32,T,N,512,64,1024,1024,1024,512,1,' '$tmp/shapes.csv'"
check "GPU time measured (some time_us > 0)" \
  "awk -F, '/^#/ { next } !h { h = 1; next } \$2 + 0 > 0 { t = 1 } END { exit !t }' '$tmp/shapes.csv'"
check "the device-pointer call is recorded under its key, marked not tunable (beta_zero 0)" \
  "grep -q '^1,[0-9.]*,[0-9.]*,gemmex,0,pointer mode device[^,]*,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,256,32,256,256,256,256,1,0,0,0,none,0,' '$tmp/shapes.csv'"

# 3. fixture DB (sgemm_nn has m=320: its row gets an impossible library dependency)
"$FIXTURE" "$tmp/shapes.csv" "$tmp/db.csv" --bad-lib-m 320 >"$tmp/fixture.out" 2>&1
rc=$?
check "fixture DB written" "[ $rc -eq 0 ] && [ -s '$tmp/db.csv' ]"
grep '^skip ' "$tmp/fixture.out" | sed 's/^/  note: /'

# 4. with the DB
GEMMTUNE_DB="$tmp/missing.csv:$tmp/db.csv" GEMMTUNE_LOG=1 GEMMTUNE_STATS="$tmp/stats.csv" \
  LD_PRELOAD="$SHIM" "$CLIENT" >"$tmp/hit.out" 2>"$tmp/hit.err"
rc=$?
ran "client runs under the shim with a DB" $rc "$tmp/hit.err"
check "results within tolerance of cuBLAS's" "same_results '$tmp/plain.out' '$tmp/hit.out' 0.02"
check "the missing DB file is warned about exactly once" \
  "[ \$(grep -c 'gemmtune: tuned DB skipped: $tmp/missing.csv' '$tmp/hit.err') -eq 1 ]"
nhit=$(grep -c '^gemmtune: hit ' "$tmp/hit.err")
# every row hits except the poisoned one (m=320); graph_new's (m=2048) too, although its only
# call is made under capture
nexpect=$(grep '^row ' "$tmp/fixture.out" | grep -vc ',m=320,')
check "one hit line per fixture row that can hit ($nhit, want $nexpect)" "[ $nhit -eq $nexpect ]"
for ep in cublasGemmEx cublasLtMatmul; do
  check "$ep hits" "grep -q '^gemmtune: hit $ep ' '$tmp/hit.err'"
done
check "the row for another library version is reported and not used" \
  "grep -q '^gemmtune: not used cublasSgemm_v2 .*cublaslt=1' '$tmp/hit.err'"
check "device pointer mode passes through" \
  "grep -q '^gemmtune: pass cublasGemmEx: pointer mode device' '$tmp/hit.err'"
check "a key first seen under graph capture is decided there: a hit, no wait" \
  "grep -q '^gemmtune: hit cublasGemmEx bf16 TN m=2048 n=8 k=2048 ' '$tmp/hit.err' && ! grep -q '^gemmtune: wait ' '$tmp/hit.err'"
check "exit table printed" "grep -q '^gemmtune: calls and hits per key' '$tmp/hit.err'"
check "every call of a hit key was served by the tuned candidate" \
  "awk '\$1 == \"gemmtune:\" && \$5 == \"hit\" { n++; if (\$3 != \$4) bad = 1 } END { exit bad || !n }' '$tmp/hit.err'"
check "the linear key's graph-captured call hit too (4 calls, 4 hits)" \
  "grep -Eq '^gemmtune: +0 +4 +4  hit +cublasGemmEx +bf16 TN m=4096 n=16 k=4096' '$tmp/hit.err'"
check "no crash or abort messages" "! grep -qiE 'segmentation|abort|core dumped' '$tmp/hit.err'"

# the same story in GEMMTUNE_STATS (the columns after the entry point are the key's)
K_LINEAR='gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,16,4096,4096,4096,4096,1,0,0,0,none,1,'
K_F32OUT='gemm,bf16,bf16,f32,f32,f32,f32,T,N,512,64,1024,1024,1024,512,1,0,0,0,none,1,'
K_NEW='gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,2048,8,2048,2048,2048,2048,1,0,0,0,none,1,'
K_SGEMM='gemm,f32,f32,f32,f32,f32,f32,N,N,320,256,256,320,256,320,1,0,0,0,none,1,'
check "stats: header is exact" \
  "[ \"\$(head -n 1 '$tmp/stats.csv')\" = 'calls,hits,decision,provider,instance,entry,${want_header#calls,time_us,share,entry,workspace,not_tunable,}' ]"
check "stats: the linear key hit on all 4 calls, named by its row" \
  "grep -Eq '^4,4,hit,[a-z]+,[a-z0-9_]+,cublasGemmEx,$K_LINEAR' '$tmp/stats.csv'"
check "stats: the key captured on a new stream hit on all 3 calls" \
  "grep -Eq '^3,3,hit,[a-z]+,[a-z0-9_]+,cublasGemmEx,$K_F32OUT' '$tmp/stats.csv'"
check "stats: the key only seen under capture hit in its graph" \
  "grep -Eq '^1,1,hit,[a-z]+,[a-z0-9_]+,cublasGemmEx,$K_NEW' '$tmp/stats.csv'"
check "stats: the poisoned row is notused and named" \
  "grep -Eq '^2,0,notused,[a-z]+,[a-z0-9_]+,cublasSgemm_v2,$K_SGEMM' '$tmp/stats.csv'"
check "stats: the device-pointer call is a pass row with its key" \
  "grep -q '^1,0,pass,-,-,cublasGemmEx,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,256,32,256,256,256,256,1,0,0,0,none,0,' '$tmp/stats.csv'"
check "stats: calls add up to the exit table's total" \
  "[ \$(awk -F, 'NR > 1 { c += \$1 } END { print c }' '$tmp/stats.csv') = \$(sed -n 's/^gemmtune: total: \([0-9]*\) calls.*/\1/p' '$tmp/hit.err') ]"

# 4b. the same rows said to be tuned on another product of this arch and SM count: refused at
# the device's first call with one line naming both devices, none served, results unchanged
awk -F, -v OFS=, '/^gemm,/ { $39 = "Some Other GPU"; $40 = 7 } { print }' "$tmp/db.csv" >"$tmp/other_dev.csv"
GEMMTUNE_DB="$tmp/other_dev.csv" LD_PRELOAD="$SHIM" "$CLIENT" >"$tmp/otherdev.out" 2>"$tmp/otherdev.err"
rc=$?
ran "client runs with a DB of another device" $rc "$tmp/otherdev.err"
check "another device's rows: one refusal line naming both devices" \
  "[ \$(grep -c 'rows tuned on Some Other GPU (7 GiB); this device is .* (.* GiB): not applied' '$tmp/otherdev.err') -eq 1 ]"
check "another device's rows: one line saying no row is for this device" \
  "[ \$(grep -c 'no row is for device 0, .*its .* rows* .* for Some Other GPU (7 GiB' '$tmp/otherdev.err') -eq 1 ]"
check "another device's rows: results unchanged" "same_results '$tmp/plain.out' '$tmp/otherdev.out' 0"
GEMMTUNE_DB="$tmp/other_dev.csv" GEMMTUNE_LOG=1 LD_PRELOAD="$SHIM" "$CLIENT" >/dev/null 2>"$tmp/otherdev_log.err"
check "another device's rows: no call served" "grep -q '^gemmtune: total: [0-9]* calls, 0 served' '$tmp/otherdev_log.err'"

# 5. a malformed DB alone
printf 'this is not a tuned DB\n' >"$tmp/garbage.csv"
GEMMTUNE_DB="$tmp/garbage.csv" LD_PRELOAD="$SHIM" "$CLIENT" >"$tmp/garbage.out" 2>"$tmp/garbage.err"
rc=$?
ran "client runs with a malformed DB" $rc "$tmp/garbage.err"
check "malformed DB: exactly one warning line" "[ \$(grep -c '^gemmtune:' '$tmp/garbage.err') -eq 1 ]"
check "malformed DB: results unchanged" "same_results '$tmp/plain.out' '$tmp/garbage.out' 0"

finish
