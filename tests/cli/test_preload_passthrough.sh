#!/usr/bin/env bash
# The preload shim with stand-in cuBLAS libraries (fake_cublas.c, versioned like the real ones):
# it exports exactly the interposed entry points (every cuBLAS GEMM entry point: the Ex, batched,
# grouped, typed S/H and strided forms, the _64 twins, cublasLtMatmul) and does not link cuBLAS;
# every call it does not serve reaches the real function with every argument unchanged (with and
# without logging, capture, or a bad GEMMTUNE_DB); a bad DB path costs one warning line; the exit
# table counts every call. With GEMMTUNE_TEST_DEVICE (calls keyed as if from an sm_90 device when
# there is none), capture lists every key: tunable ones (the S/H strided forms, a _64 call as its
# 32-bit twin, a readable cuBLASLt call, an fp8 one with its tensorwise scales) and the ones
# marked not tunable with the reason (pointer-array and grouped batches, sizes beyond an int, an
# explicit algorithm);
# keys are decided although the stand-in's stream counts as capturing (a miss, a row that cannot
# run here), never left waiting. An entry point the application's cuBLAS lacks, found through
# dlsym, fails its call with one message and the process runs on. Runs without a GPU and with
# one. A misspelt GEMMTUNE_* variable costs one line naming the nearest known one.
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
mkdir -p "$tmp/old"
"$CC" -shared -fPIC -Wl,-soname,libcublas.so.13 -Wl,--version-script="$tmp/cublas.map" \
  "$SRC/tests/cli/fake_cublas.c" -o "$tmp/libcublas.so.13" &&
  "$CC" -shared -fPIC -DFAKE_LT -Wl,-soname,libcublasLt.so.13 \
    -Wl,--version-script="$tmp/cublasLt.map" "$SRC/tests/cli/fake_cublas.c" \
    -o "$tmp/libcublasLt.so.13" &&
  "$CC" -shared -fPIC -DFAKE_OLD -Wl,-soname,libcublas.so.13 \
    -Wl,--version-script="$tmp/cublas.map" "$SRC/tests/cli/fake_cublas.c" \
    -o "$tmp/old/libcublas.so.13" &&
  "$CC" -pthread "$SRC/tests/cli/passthrough_client.c" -o "$tmp/client" -L"$tmp" \
    -l:libcublas.so.13 -l:libcublasLt.so.13 -ldl -Wl,-z,lazy -Wl,-rpath,"$tmp" ||
  { echo "FAIL - building the stand-ins"; exit 1; }

want_exports="cublasGemmBatchedEx cublasGemmBatchedEx_64 cublasGemmEx cublasGemmEx_64"
want_exports="$want_exports cublasGemmGroupedBatchedEx cublasGemmGroupedBatchedEx_64"
want_exports="$want_exports cublasGemmStridedBatchedEx cublasGemmStridedBatchedEx_64 cublasHgemm"
want_exports="$want_exports cublasHgemmStridedBatched cublasHgemmStridedBatched_64 cublasHgemm_64"
want_exports="$want_exports cublasLtMatmul cublasSgemmStridedBatched cublasSgemmStridedBatched_64"
want_exports="$want_exports cublasSgemm_v2 cublasSgemm_v2_64"
# and the torch bridge's way in (runtime/gt_grouped_entry.h)
want_exports="$want_exports gemmtune_grouped_begin gemmtune_grouped_end "
exports=$(nm -D --defined-only "$SHIM" | awk '{print $3}' | LC_ALL=C sort | tr '\n' ' ')
check "exports exactly the cuBLAS GEMM entry points and the bridge's two calls ($exports)" "[ '$exports' = '$want_exports' ]"
check "exports carry no version node" "! readelf -V '$SHIM' | grep -q 'Version definition'"
check "does not link cuBLAS" "! readelf -d '$SHIM' | grep NEEDED | grep -qi cublas"

"$tmp/client" >"$tmp/plain.out" 2>&1
ncalls=40 # 20 calls, twice
check "stand-in client runs" "[ \$? -eq 0 ] && [ \$(grep -c '^real ' '$tmp/plain.out') -eq $ncalls ]"

LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/quiet.out" 2>"$tmp/quiet.err"
check "no GEMMTUNE_* set: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/quiet.out'"
check "no GEMMTUNE_* set: silent" "[ ! -s '$tmp/quiet.err' ]"

GEMMTUNE_LOG=1 GEMMTUNE_DB="$tmp/missing.csv" LD_PRELOAD="$SHIM" "$tmp/client" \
  >"$tmp/log.out" 2>"$tmp/log.err"
check "logging with a missing DB: exit 0" "[ \$? -eq 0 ]"
check "logging with a missing DB: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/log.out'"
check "the missing DB is warned about exactly once" \
  "[ \$(grep -c '^gemmtune: tuned DB skipped: $tmp/missing.csv' '$tmp/log.err') -eq 1 ]"
check "every call is counted in the exit table" "grep -q '^gemmtune: total: $ncalls calls, 0 served' '$tmp/log.err'"
# The stand-in's cublasLtMatmul gets a stream value no CUDA runtime knows: the shim must read the
# (unreadable) descriptor first and pass the call through without ever handing that stream to CUDA
# (with a GPU present, doing so crashes the process).
check "the unreadable cuBLASLt descriptor passes through, whatever its stream" \
  "grep -q 'gemmtune: *2 cublasLtMatmul calls passed through: matmul descriptor unreadable' '$tmp/log.err'"

# A DB tuned on an H100 SXM, loaded where the device is an H200 (both sm_90, 132 SMs; stated
# through GEMMTUNE_TEST_DEVICE, the stand-in for a GPU here): its rows are refused with one line
# naming both devices, one more line says the DB serves nothing on this device, and every call
# still reaches cuBLAS unchanged.
hdr="op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,instance,time_us,baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,sm_clock_mhz,splitk_searched,throttled,baseline,device,device_mem_gib,floor_us,floor_bound,floor_pct"
row="gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,1,4096,4096,4096,4096,1,0,0,0,none,1,sm_90,132,kernels,gemmtune-kernels=1,gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4,10.256889,12.5982223,1.22827,0.0016691,0.00784302,cold-graph,15,0.475405,1980,1,0,cublas_gemmex_default"
printf '#gemmtune-db 2\n#gemmtune=0.1.0\n%s\n%s,NVIDIA H100 80GB HBM3,79,0,-,0\n' "$hdr" "$row" >"$tmp/h100.db"
GEMMTUNE_DB="$tmp/h100.db" GEMMTUNE_TEST_DEVICE="NVIDIA H200;139;sm_90;132" LD_PRELOAD="$SHIM" \
  "$tmp/client" >"$tmp/h100.out" 2>"$tmp/h100.err"
check "a DB of another device: exit 0" "[ \$? -eq 0 ]"
check "a DB of another device: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/h100.out'"
check "a DB of another device: refused once, naming both devices" \
  "[ \$(grep -c '^gemmtune: GEMMTUNE_DB=$tmp/h100.db: 1 rows: rows tuned on NVIDIA H100 80GB HBM3 (79 GiB); this device is NVIDIA H200 (139 GiB): not applied (1 of 1 rows)\$' '$tmp/h100.err') -eq 1 ]"
check "a DB of another device: one line says no row is for this device, and whose rows it holds" \
  "[ \$(grep -c '^gemmtune: .*: no row is for device 0, NVIDIA H200 (139 GiB; sm_90, 132 SMs): its 1 row is for NVIDIA H100 80GB HBM3 (79 GiB; sm_90, 132 SMs); nothing is served\$' '$tmp/h100.err') -eq 1 ]"
# The same file from before device identities (format 1, the device by name only): applied by what
# it records, with one line saying so. On a host with a GPU the shim keys calls by that device
# (GEMMTUNE_TEST_DEVICE changes nothing there), so the file and the stated device name the GPU the
# test runs on: the check is about the missing identity, not about which GPU is in the machine.
v1_name="NVIDIA H200"
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -n 1)
  [ -n "$gpu_name" ] && v1_name=$gpu_name
fi
printf '#gemmtune-db 1\n#device=%s\n%s\n%s\n' "$v1_name" "${hdr%,device,device_mem_gib,floor_us,floor_bound,floor_pct}" "$row" >"$tmp/v1.db"
GEMMTUNE_DB="$tmp/v1.db" GEMMTUNE_TEST_DEVICE="$v1_name;139;sm_90;132" LD_PRELOAD="$SHIM" \
  "$tmp/client" >"$tmp/v1.out" 2>"$tmp/v1.err"
check "a format-1 DB: exit 0, arguments forwarded unchanged" "[ \$? -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/v1.out'"
check "a format-1 DB: applied with one line saying its rows record no identity" \
  "[ \$(grep -c 'not record the device .* applied here by arch and SM count' '$tmp/v1.err') -eq 1 ] && ! grep -q 'not applied' '$tmp/v1.err'"

GEMMTUNE_CAPTURE="$tmp/shapes.csv" LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/cap.out" 2>"$tmp/cap.err"
check "capture: exit 0" "[ \$? -eq 0 ]"
check "capture: arguments forwarded unchanged" "cmp -s '$tmp/plain.out' '$tmp/cap.out'"
check "capture: shapes file starts with the header" \
  "grep -v '^#' '$tmp/shapes.csv' | head -n 1 | grep -q '^calls,time_us,share,entry,workspace,not_tunable,op,a_type,'"

# GEMMTUNE_STATS: the exact header, every call in some row, only the five decisions, the
# descriptor-less cuBLASLt calls as one pass row without a key. "%p" becomes the process id. With
# the test device, so the readable cuBLASLt calls are keyed with or without a GPU.
export GEMMTUNE_TEST_DEVICE=sm_90:132
GEMMTUNE_STATS="$tmp/stats.%p.csv" LD_PRELOAD="$SHIM" "$tmp/client" >"$tmp/stats.out" 2>"$tmp/stats.err"
check "stats: exit 0, arguments forwarded unchanged" "[ \$? -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/stats.out'"
stats=$(ls "$tmp"/stats.[0-9]*.csv 2>/dev/null | head -n 1)
check "stats: one file, named with the process id" "[ -n '$stats' ] && [ \$(ls '$tmp'/stats.*.csv | wc -l) -eq 1 ]"
want_stats="calls,hits,decision,provider,instance,entry,op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,scale_a,scale_b,fast_accum,scale_d,amax_d"
check "stats: header is exact" "[ \"\$(head -n 1 '$stats')\" = '$want_stats' ]"
check "stats: every call is in a row, a grouped call's once per group ($ncalls + 2)" \
  "awk -F, 'NR > 1 { c += \$1 } END { exit c != $ncalls + 2 }' '$stats'"
check "stats: decisions are hit/miss/pass/notused/deferred, no hits" \
  "awk -F, 'NR > 1 && (\$3 !~ /^(hit|miss|pass|notused|deferred)\$/ || \$2 != 0) { bad = 1 } END { exit bad }' '$stats'"
check "stats: 34 columns in every row" "awk -F, 'NF != 34 { bad = 1 } END { exit bad }' '$stats'"
check "stats: the cuBLASLt calls are one keyless pass row" \
  "grep -q '^2,0,pass,-,-,cublasLtMatmul,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-,-\$' '$stats'"
# two processes of one workload writing one path: the second adds its counts to the first's
for _ in 1 2; do
  GEMMTUNE_STATS="$tmp/shared_stats.csv" LD_PRELOAD="$SHIM" "$tmp/client" >/dev/null 2>>"$tmp/shared.err"
done
check "stats: two processes sharing a path add up ($((2 * (ncalls + 2))) calls, same rows)" \
  "awk -F, 'NR > 1 { c += \$1; n++ } END { exit c != $((2 * (ncalls + 2))) || n != $(($(wc -l <"${stats:-/dev/null}") - 1)) }' '$tmp/shared_stats.csv'"
check "stats: a key that cannot be tuned is a pass row with its key (pointer-array batch)" \
  "grep -Eq '^2,0,pass,-,-,cublasGemmBatchedEx,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,256,32,512,' '$stats'"
check "stats: tunable keys are decided, never deferred (the stand-in's stream counts as capturing)" \
  "grep -q ',miss,-,-,cublasSgemmStridedBatched,' '$stats' && ! grep -q ',deferred,' '$stats'"

# Capture with the test device: every key, tunable or marked with its reason.
GEMMTUNE_CAPTURE="$tmp/keys.csv" GEMMTUNE_LOG=1 LD_PRELOAD="$SHIM" "$tmp/client" \
  >"$tmp/keys.out" 2>"$tmp/keys.err"
check "capture (test device): exit 0, arguments forwarded unchanged" \
  "[ \$? -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/keys.out'"
rows=$(grep -v '^#' "$tmp/keys.csv" 2>/dev/null | tail -n +2)
row() { grep -E "^$1" <<<"$rows" >/dev/null; } # calls,time,share,entry,workspace,not_tunable,KEY...
T=0,[0-9.]+,[0-9.]+ # calls (given), time and share
DEV='[^,]+,[^,]+'   # arch and sm_count: sm_90,132 from the test device, or this host's GPU
check "19 keys captured (12 tunable, 7 not tunable)" \
  "[ \$(wc -l <<<\"\$rows\") -eq 19 ] && [ \$(grep -c ',gemmex,0,-,\|,ltmatmul,[0-9]*,-,' <<<\"\$rows\") -eq 12 ]"
check "the _64 twin is the same key as cublasGemmEx (4 calls, tunable)" \
  "row '4,[0-9.]+,[0-9.]+,gemmex,0,-,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,16,4096,4096,4096,4096,1,0,0,0,none,1,$DEV'"
check "cublasSgemmStridedBatched is a tunable strided key" \
  "row '2,[0-9.]+,[0-9.]+,gemmex,0,-,gemm,f32,f32,f32,f32,f32,f32,N,N,64,32,16,64,16,64,4,1024,512,2048,none,1,$DEV'"
check "cublasHgemmStridedBatched is a tunable strided key (f16 compute)" \
  "row '2,[0-9.]+,[0-9.]+,gemmex,0,-,gemm,f16,f16,f16,f16,f16,f16,T,N,96,48,64,64,64,96,5,6144,3072,4608,none,1,$DEV'"
check "their _64 twins are tunable keys too" \
  "row '2,[0-9.]+,[0-9.]+,gemmex,0,-,gemm,f32,f32,f32,f32,f32,f32,N,N,80,40,20,' && row '2,[0-9.]+,[0-9.]+,gemmex,0,-,gemm,f16,f16,f16,f16,f16,f16,T,N,112,56,64,'"
check "cublasGemmStridedBatchedEx_64 and cublasHgemm_64 are tunable keys" \
  "row '2,[0-9.]+,[0-9.]+,gemmex,0,-,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,512,8,256,256,256,512,6,131072,2048,4096,' && row '2,[0-9.]+,[0-9.]+,gemmex,0,-,gemm,f16,f16,f16,f16,f16,f16,N,T,128,64,32,'"
check "a readable cuBLASLt call is a tunable key with its workspace" \
  "row '2,[0-9.]+,[0-9.]+,ltmatmul,1048576,-,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,1024,32,1024,1024,1024,1024,1,'"
check "cublasGemmBatchedEx: marked pointer-array batch, strides as if packed" \
  "row '2,[0-9.]+,[0-9.]+,gemmex,0,pointer-array batch \\(cublasGemmBatchedEx\\)[^,]*,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,256,32,512,512,512,256,4,131072,16384,8192,none,1,'"
check "cublasGemmBatchedEx_64: marked too" "row '2,[0-9.]+,[0-9.]+,gemmex,0,pointer-array batch[^,]*,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,320,24,640,'"
check "cublasGemmGroupedBatchedEx: one marked row per group, with its own beta" \
  "row '2,[0-9.]+,[0-9.]+,gemmex,0,grouped batch[^,]*,gemm,bf16,bf16,bf16,bf16,f32,f32,N,N,64,8,128,64,128,64,3,[0-9]+,[0-9]+,[0-9]+,none,1,' && row '2,[0-9.]+,[0-9.]+,gemmex,0,grouped batch[^,]*,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,128,16,256,256,256,128,2,[0-9]+,[0-9]+,[0-9]+,none,0,'"
check "cublasGemmGroupedBatchedEx_64: its group marked" "row '2,[0-9.]+,[0-9.]+,gemmex,0,grouped batch[^,]*,gemm,bf16,bf16,bf16,bf16,f32,f32,N,N,48,4,96,'"
check "the fp8 cuBLASLt call: a tunable key with its fp8 types and tensorwise A/B scales" \
  "row '2,[0-9.]+,[0-9.]+,ltmatmul,1048576,-,gemm,f8e4m3fn,f8e4m3fn,bf16,bf16,f32,f32,T,N,256,16,512,512,512,256,1,0,0,0,none,1,$DEV,tensor_f32,tensor_f32,0,0,0\$'"
check "an explicit algorithm: marked" "row '2,[0-9.]+,[0-9.]+,gemmex,0,non-default algo 5,gemm,f32,'"
check "a _64 call beyond an int: marked, keyed with its size" "row '2,[0-9.]+,[0-9.]+,gemmex,0,64-bit sizes beyond int[^,]*,gemm,f32,f32,f32,f32,f32,f32,N,N,3000000000,2,2,'"
check "capture log: tunable keys decided (miss), none left waiting under the simulated capture" \
  "grep -q '^gemmtune: miss cublasHgemmStridedBatched ' '$tmp/keys.err' && ! grep -q '^gemmtune: wait ' '$tmp/keys.err'"
check "capture log: a marked key is said once, as a pass with its reason" \
  "[ \$(grep -c '^gemmtune: pass cublasGemmBatchedEx: pointer-array batch' '$tmp/keys.err') -eq 1 ]"
check "exit table: marked keys are 'untunable' rows with their reason" \
  "grep -Eq '^gemmtune: +[0-9]+ +2 +0  untunable cublasGemmGroupedBatchedEx .*: grouped batch' '$tmp/keys.err'"
check "exit table: every call counted" "grep -q '^gemmtune: total: $ncalls calls, 0 served' '$tmp/keys.err'"
"$GEMMTUNE" shapes --cpu "$tmp/keys.csv" >"$tmp/keys.shapes" 2>&1
check "gemmtune shapes reads the capture and lists the 7 marked rows" \
  "grep -q '7 of 19 rows are not tunable' '$tmp/keys.shapes'"

# A row for the cublasGemmEx key whose provider cannot run on a GPU: decided (not used, said
# always) although every call of the stand-in counts as made under capture.
dev=$(grep -E ',gemmex,0,-,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,16,4096,' <<<"$rows" | awk -F, '{ print $28 "," $29 }')
{
  echo '#gemmtune-db 1'
  echo 'op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,instance,time_us,baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,sm_clock_mhz,splitk_searched,throttled,baseline'
  echo "gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,16,4096,4096,4096,4096,1,0,0,0,none,1,$dev,cpu,-,cpu_naive_bf16,1,2,2,0,0.01,cold,5,1,0,0,0,cpu_naive_bf16"
} >"$tmp/host.db"
GEMMTUNE_DB="$tmp/host.db" GEMMTUNE_STATS="$tmp/host_stats.csv" LD_PRELOAD="$SHIM" "$tmp/client" \
  >"$tmp/host.out" 2>"$tmp/host.err"
check "a DB row of a host provider: exit 0, arguments forwarded unchanged" \
  "[ \$? -eq 0 ] && cmp -s '$tmp/plain.out' '$tmp/host.out'"
check "the row is decided and reported not used, once" \
  "[ \$(grep -c '^gemmtune: not used cublasGemmEx .*runs on the host' '$tmp/host.err') -eq 1 ]"
check "stats: its 4 calls (the _64 twin's included) are notused" \
  "grep -q '^4,0,notused,cpu,cpu_naive_bf16,cublasGemmEx,' '$tmp/host_stats.csv'"
unset GEMMTUNE_TEST_DEVICE

# An entry point the application's cuBLAS lacks: the process finds the shim's through dlsym (as a
# framework probing for a feature would), its call fails with one message, the rest runs on.
LD_LIBRARY_PATH="$tmp/old" GT_CLIENT_DLSYM=1 "$tmp/client" >"$tmp/old_plain.out" 2>&1
check "an older cuBLAS: without the shim the new entry points are absent" \
  "[ \$? -eq 0 ] && [ \$(grep -c ': absent$' '$tmp/old_plain.out') -eq 3 ]"
LD_LIBRARY_PATH="$tmp/old" GT_CLIENT_DLSYM=1 GEMMTUNE_LOG=1 LD_PRELOAD="$SHIM" "$tmp/client" \
  >"$tmp/old_shim.out" 2>"$tmp/old_shim.err"
check "an older cuBLAS under the shim: the host runs to its end (exit 0)" \
  "[ \$? -eq 0 ] && grep -q '^rc=0$' '$tmp/old_shim.out' && grep -q '^real cublasGemmEx ' '$tmp/old_shim.out'"
check "the missing entry points' calls fail (status 1), nothing crashes" \
  "[ \$(grep -c ': found, rc=1$' '$tmp/old_shim.out') -eq 3 ]"
check "one message says which real function is missing" \
  "[ \$(grep -c 'cannot find the real cublasGemmGroupedBatchedEx' '$tmp/old_shim.err') -eq 1 ] && [ \$(grep -c 'cannot find the real' '$tmp/old_shim.err') -eq 1 ]"

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
