#!/usr/bin/env bash
# gemmtune verify and gemmtune check without a GPU: argument errors, a run that cannot be verified
# is never a pass (exit 1, "UNVERIFIED"), end-to-end measurement from 'gemmtune-metric:' lines,
# the tracer writing status=unverified instead of failing when libcupti cannot be loaded, and
# check on the CPU providers (a row that replays, a row for another device, a row whose candidate
# no longer exists).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
BIN=$(cd "$(dirname "$GT")" && pwd)
SHIM=${GEMMTUNE_PRELOAD_LIB:-$BIN/libgemmtune_preload.so}
TRACER=${GEMMTUNE_TRACE_LIB:-$BIN/libgemmtune_trace.so}
GT_TRACE_HDR=name,calls,total_ns,min_ns,max_ns,stream_count,graph_launches

# A real DB from the CPU providers (one tiny shape), and variants of it.
printf 'model,proj,tokens,out_features,in_features\nt,a,16,256,256\n' >"$TMP/shapes.csv"
"$GT" tune --cpu --rounds 5 "$TMP/shapes.csv" -o "$TMP/db.csv" >"$TMP/tune.out" 2>&1 || true
have_row=0
grep -q '^gemm,' "$TMP/db.csv" 2>/dev/null && have_row=1

# ---- verify: usage ------------------------------------------------------------------------------
expect_exit 0 "verify --help" "$GT" verify --help
expect_grep "help names the verdicts" 'not engaged'
expect_grep "help says unverified is not a pass" 'unverified is not a pass'
expect_exit 64 "verify without --db" "$GT" verify -- true
expect_grep "names the missing --db" '--db DB is required'
expect_exit 64 "verify without a command" "$GT" verify --db "$TMP/db.csv"
expect_grep "asks for the command" 'expected -- CMD'
expect_exit 64 "verify --runs 0" "$GT" verify --db "$TMP/db.csv" --runs 0 -- true
expect_exit 64 "verify --timeout -1" "$GT" verify --db "$TMP/db.csv" --timeout -1 -- true
expect_exit 64 "verify --format xml" "$GT" verify --db "$TMP/db.csv" --format xml -- true
expect_exit 64 "verify unknown option" "$GT" verify --db "$TMP/db.csv" --frob -- true
expect_exit 66 "verify with a missing DB" "$GT" verify --db "$TMP/nope.csv" -- true
expect_grep "names the missing DB" 'nope.csv'
printf '#gemmtune-db 1\nnot,a,header\n' >"$TMP/broken.csv"
expect_exit 65 "verify with a malformed DB" "$GT" verify --db "$TMP/broken.csv" -- true
expect_grep "names the DB line" 'broken.csv:2'

# ---- verify: a run that cannot be verified --------------------------------------------------------
if [ -f "$SHIM" ]; then
  # 'true' never calls cuBLAS: no counters from the shim, no trace: unverified, exit 1.
  expect_exit 1 "verify of a command that issues no GEMM exits 1" \
    "$GT" verify --db "$TMP/db.csv" --no-e2e -- true
  expect_grep "says UNVERIFIED" '^UNVERIFIED: '
  expect_grep "says why: no counters" "shim's counters are missing"
  expect_nogrep "never says PASS" '^PASS'
  expect_exit 1 "a command that fails makes verify fail" \
    "$GT" verify --db "$TMP/db.csv" --no-e2e -- sh -c 'echo boom >&2; exit 3'
  expect_grep "the command's exit status is reported" 'exited 3'
  expect_grep "the command's output is shown" '\| boom'
  # End to end from metric lines: identical runs, so the speedup is 1 and within the noise.
  expect_exit 1 "end to end runs (still unverified)" \
    "$GT" verify --db "$TMP/db.csv" --runs 3 --warmup 0 -- sh -c 'echo "gemmtune-metric: step 5 ms"'
  expect_grep "end to end uses the metric" "End to end \(3 runs each, interleaved, step in ms from 'gemmtune-metric:' lines\)"
  expect_grep "speedup 1.000x" 'speedup: +1\.000x'
  expect_grep "within the noise" 'within the noise'
  expect_exit 1 "end to end by wall time" "$GT" verify --db "$TMP/db.csv" --runs 2 --warmup 1 -- true
  expect_grep "wall time when no metric" 'wall time in s'
  expect_exit 1 "csv report still exits 1" \
    "$GT" verify --db "$TMP/db.csv" --no-e2e --format csv -- true
  expect_grep "csv header" '^verdict,calls,hits,kernel_runs,gpu_us,speedup,entry,key,provider,instance,expected,why'
  if [ "$have_row" = 1 ]; then
    expect_grep "the DB row is listed as not issued" '^not issued,'
  fi
  mkdir -p "$TMP/keep"
  expect_exit 1 "--keep keeps the logs" "$GT" verify --db "$TMP/db.csv" --no-e2e --keep "$TMP/keep" -- true
  [ -f "$TMP/keep/traced.log" ] && ok "traced run's log kept" || bad "no traced.log in --keep folder"
else
  expect_exit 69 "verify without the shim built exits 69" "$GT" verify --db "$TMP/db.csv" -- true
  expect_grep "names the shim" 'libgemmtune_preload.so'
fi

# ---- verify: the verdict from what a run leaves behind ----------------------------------------
# A stand-in workload writes the shim's counters and the tracer's file itself (GEMMTUNE_STATS,
# GEMMTUNE_TRACE, %p = its pid), so the whole report runs here without a GPU; --lib /dev/null
# stands in for the shim (the loader ignores it).
if [ "$have_row" = 1 ]; then
  INST=gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks2_v8
  awk -F, -v OFS=, -v inst="$INST" '/^gemm,/ { $24 = "kernels"; $25 = "-"; $26 = inst } { print }' \
    "$TMP/db.csv" >"$TMP/kdb.csv"
  key=$(grep '^gemm,' "$TMP/kdb.csv" | head -1 | cut -d, -f1-23,44-48)
  otherkey=$(echo "$key" | awk -F, -v OFS=, '{ $23 = 7; print }')
  stats_hdr="calls,hits,decision,provider,instance,entry,$(grep '^op,' "$TMP/kdb.csv" | cut -d, -f1-23,44-48)"
  printf '%s\n4,4,hit,kernels,%s,cublasGemmEx,%s\n' "$stats_hdr" "$INST" "$key" >"$TMP/s-hit.csv"
  printf '%s\n4,0,miss,-,-,cublasGemmEx,%s\n' "$stats_hdr" "$otherkey" >"$TMP/s-other.csv"
  printf '#gemmtune-trace 1 status=ok pid=1 records=1204 dropped=0 total_ns=9000 reason=-\n%s\n%s,400,4000,10,10,1,396\ngt_sm90_splitk_reduce_bf16,400,1000,2,3,1,396\nnvjet_sm90_tst_other,4,1000,250,250,1,0\nelementwise,400,3000,7,8,1,396\n' \
    "$GT_TRACE_HDR" "$INST" >"$TMP/t-all.csv"
  grep -v splitk_reduce "$TMP/t-all.csv" | sed 's/total_ns=9000/total_ns=8000/' >"$TMP/t-noreduce.csv"
  printf '#gemmtune-trace 1 status=unverified pid=1 reason=CUPTI is already in use by another tool\n%s\n' \
    "$GT_TRACE_HDR" >"$TMP/t-unv.csv"
  cat >"$TMP/standin.sh" <<'EOS'
#!/bin/sh
s=$(printf '%s' "$GEMMTUNE_STATS" | sed "s/%p/$$/"); t=$(printf '%s' "$GEMMTUNE_TRACE" | sed "s/%p/$$/")
[ -n "$GEMMTUNE_STATS" ] && cp "$STANDIN_STATS" "$s"
[ -n "$GEMMTUNE_TRACE" ] && cp "$STANDIN_TRACE" "$t"
exit 0
EOS
  standin() { # STATS TRACE EXPECTED_EXIT NAME
    expect_exit "$3" "$4" env STANDIN_STATS="$1" STANDIN_TRACE="$2" \
      "$GT" verify --db "$TMP/kdb.csv" --no-e2e --lib /dev/null --trace-lib /dev/null -- sh "$TMP/standin.sh"
  }
  standin "$TMP/s-hit.csv" "$TMP/t-all.csv" 0 "every call hit and the kernels ran: exit 0"
  expect_grep "PASS line" '^PASS: all 1 tuned keys the workload issued engaged'
  expect_grep "the key is engaged" '^\[engaged\] '
  expect_grep "the split-K reduce is expected too" 'expected kernel gt_sm90_splitk_reduce_bf16: ran 400 times \(396 from graphs\)'
  expect_grep "GEMM share of GPU time" 'GEMM kernels 66\.7%'
  expect_grep "Amdahl bound printed" '^Amdahl bound: the DB can make the GPU work at most [0-9.]+x faster'
  # the bound follows from the row's tune-time speedup, which depends on this machine
  bound=$(grep -oE 'at most [0-9.]+x faster' <<<"$OUT_TXT" | grep -oE '[0-9]+\.[0-9]+' | head -1)
  expect_grep "the other GEMM kernel is named" 'nvjet_sm90_tst_other'
  # End to end against the bound: a workload 4x the bound faster with the DB than without beats
  # it, and verify says the bound's inputs (tune's speedups) understated the gain; one half the
  # bound faster stays under it, and verify says nothing more.
  cat >"$TMP/standin-e2e.sh" <<'EOS'
#!/bin/sh
sh "$STANDIN_SH"
if [ -n "$GEMMTUNE_DB" ]; then echo "gemmtune-metric: step 1 ms"; else echo "gemmtune-metric: step $STANDIN_SLOW ms"; fi
EOS
  e2e_standin() { # SLOW_MS NAME
    expect_exit 0 "$2" env STANDIN_STATS="$TMP/s-hit.csv" STANDIN_TRACE="$TMP/t-all.csv" \
      STANDIN_SH="$TMP/standin.sh" STANDIN_SLOW="$1" \
      "$GT" verify --db "$TMP/kdb.csv" --runs 3 --warmup 0 --lib /dev/null --trace-lib /dev/null \
      -- sh "$TMP/standin-e2e.sh"
  }
  above=$(awk -v b="$bound" 'BEGIN { printf "%.3f", 4 * b }')
  under=$(awk -v b="$bound" 'BEGIN { printf "%.3f", b / 2 }')
  e2e_standin "$above" "end to end at 4x the bound ($above ms against 1 ms): exit 0"
  expect_grep "says the measurement beat the bound" \
    "^  above the bound even at the low quartile \\(${above%.*}\\.[0-9]+x > ${bound%.*}\\.[0-9]+x\\)"
  e2e_standin "$under" "end to end at half the bound ($under ms against 1 ms): exit 0"
  expect_grep "the speedup is measured" "speedup: +${under%.*}\\.[0-9]+x"
  expect_nogrep "no note under the bound" 'above the bound'
  standin "$TMP/s-hit.csv" "$TMP/t-noreduce.csv" 1 "the reduce kernel never ran: exit 1"
  expect_grep "partly engaged" '^\[partly\] '
  expect_grep "names the kernel that never ran" 'gt_sm90_splitk_reduce_bf16 never ran'
  standin "$TMP/s-other.csv" "$TMP/t-all.csv" 1 "keys from another device: exit 1"
  expect_grep "near miss" '^\[near miss\] '
  expect_grep "names the field" 'sm_count: 7 vs [0-9]+'
  expect_grep "FAIL line" '^FAIL: no DB row matched any of the 1 keys'
  standin "$TMP/s-hit.csv" "$TMP/t-unv.csv" 1 "CUPTI taken: exit 1"
  expect_grep "unverified, with the reason" '^UNVERIFIED: 1 of 1 tuned keys .*CUPTI is already in use'
  expect_exit 1 "json report" env STANDIN_STATS="$TMP/s-hit.csv" STANDIN_TRACE="$TMP/t-noreduce.csv" \
    "$GT" verify --db "$TMP/kdb.csv" --no-e2e --format json --lib /dev/null --trace-lib /dev/null -- sh "$TMP/standin.sh"
  expect_grep "json verdict" '"verdict": "partly"'
else
  ok "stand-in verdict checks skipped: tune found no improving candidate on this machine"
fi

# ---- the tracer on its own: never fails the process, says why it could not trace ---------------
if [ -f "$TRACER" ] && command -v python3 >/dev/null 2>&1; then
  INJECT='import ctypes, sys; print("rc", ctypes.CDLL(sys.argv[1]).InitializeInjection())'
  # InitializeInjection called as the driver would, in a process without CUDA
  expect_exit 0 "tracer without GEMMTUNE_TRACE does nothing" python3 -c "$INJECT" "$TRACER"
  expect_grep "returns 1" '^rc 1$'
  [ -z "$(ls "$TMP" | grep '^trace-')" ] && ok "no trace file without GEMMTUNE_TRACE" || bad "trace file written"
  expect_exit 0 "tracer with an unloadable libcupti" env GEMMTUNE_TRACE="$TMP/trace-%p.csv" \
    GEMMTUNE_CUPTI_LIB="$TMP/no-libcupti.so" python3 -c "$INJECT" "$TRACER"
  expect_grep "returns 1 anyway" '^rc 1$'
  f=$(ls "$TMP"/trace-*.csv 2>/dev/null | head -1)
  if [ -n "$f" ] && head -1 "$f" | grep -q '^#gemmtune-trace 1 status=unverified .*reason=GEMMTUNE_CUPTI_LIB=.*no-libcupti.so cannot be loaded'; then
    ok "trace says unverified and why (%p expanded: $(basename "$f"))"
  else
    bad "trace file missing or without the reason" "$(cat "$f" 2>/dev/null)"
  fi
  [ -z "$(ls "$TMP" | grep 'trace-.*tmp')" ] && ok "no temp files left by the tracer" || bad "tracer left temp files"
  # The whole path with a stand-in libcupti (fake_cupti.c): records aggregated, written at exit.
  cuinc=""
  for d in "${CUDA_HOME:-}/include" "$(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")/../include" \
           /usr/local/cuda/include; do
    [ -f "$d/cupti.h" ] && { cuinc=$d; break; }
  done
  if [ -n "$cuinc" ] && ${CC:-cc} -shared -fPIC -I"$cuinc" -o "$TMP/libfakecupti.so" \
       "$SRC/tests/cli/fake_cupti.c" 2>"$TMP/cc.err"; then
    rm -f "$TMP"/trace-*.csv
    expect_exit 0 "tracer with a working CUPTI" env GEMMTUNE_TRACE="$TMP/trace-ok.csv" \
      GEMMTUNE_CUPTI_LIB="$TMP/libfakecupti.so" FAKE_CUPTI_DROPPED=2 python3 -c "$INJECT" "$TRACER"
    t="$TMP/trace-ok.csv"
    head -1 "$t" 2>/dev/null | grep -q '^#gemmtune-trace 1 status=ok pid=[0-9]* records=4 dropped=2 total_ns=650 reason=-$' \
      && ok "trace written at exit: status ok, records, drops, total" || bad "trace status line" "$(cat "$t" 2>/dev/null)"
    grep -qx 'fake_gemm_kernel,3,600,100,300,2,2' "$t" 2>/dev/null \
      && ok "kernel aggregated: calls, time, min, max, streams, graph launches" || bad "kernel row" "$(cat "$t" 2>/dev/null)"
    [ "$(sed -n 3p "$t" 2>/dev/null | cut -d, -f1)" = fake_gemm_kernel ] && ok "rows sorted by time" || bad "row order" "$(cat "$t")"
    expect_exit 0 "a process that ends in _exit" env GEMMTUNE_TRACE="$TMP/trace-cut.csv" \
      GEMMTUNE_CUPTI_LIB="$TMP/libfakecupti.so" python3 -c "$INJECT; import os; os._exit(0)" "$TRACER"
    head -1 "$TMP/trace-cut.csv" 2>/dev/null | grep -q 'status=incomplete .*reason=the process ended without running its exit handlers' \
      && ok "leaves a trace that says incomplete" || bad "cut: trace" "$(cat "$TMP/trace-cut.csv" 2>/dev/null)"
    expect_exit 0 "tracer when another tool holds CUPTI" env GEMMTUNE_TRACE="$TMP/trace-taken.csv" \
      GEMMTUNE_CUPTI_LIB="$TMP/libfakecupti.so" FAKE_CUPTI_TAKEN=1 python3 -c "$INJECT" "$TRACER"
    head -1 "$TMP/trace-taken.csv" 2>/dev/null | grep -q 'status=unverified .*reason=CUPTI is already in use by another tool (Nsight Systems)' \
      && ok "unverified, naming the tool" || bad "taken: trace" "$(cat "$TMP/trace-taken.csv" 2>/dev/null)"
    grep -q 'gemmtune-trace: kernel trace unavailable: CUPTI is already in use' <<<"$OUT_TXT" \
      && ok "one line on stderr says so" || bad "no stderr line" "$OUT_TXT"
    # Calls' kernel time (capture's eager calls): a tagged thread's launches, a runtime launch
    # with a driver launch inside it (the kernel names either), an untagged launch left out.
    CALLS='import ctypes, sys
tr = ctypes.CDLL(sys.argv[1]); tr.InitializeInjection()
fk = ctypes.CDLL(sys.argv[2])
tag = tr.gemmtune_trace_call_tag; tag.argtypes = [ctypes.c_uint64]
api = fk.fake_cupti_api; api.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint32, ctypes.c_int]
times = tr.gemmtune_trace_call_times
times.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
print("tag", tag(0xA))
api(2, 211, 11, 0); api(1, 307, 12, 0); api(1, 307, 12, 1); api(2, 211, 11, 1)
tag(0xB); api(1, 652, 13, 0); api(1, 652, 13, 1)
api(2, 430, 16, 0); api(1, 652, 16, 0); api(1, 652, 16, 1); api(2, 430, 16, 1)
tag(0xC); api(1, 999, 15, 0); api(1, 999, 15, 1)
tag(0); api(2, 211, 14, 0); api(2, 211, 14, 1)
tags = (ctypes.c_uint64 * 3)(0xA, 0xB, 0xC); ns = (ctypes.c_uint64 * 3)(); kn = (ctypes.c_uint64 * 3)()
why = ctypes.create_string_buffer(300)
rc = times(tags, 3, ns, kn, why, 300)
print("times", rc, list(ns), list(kn), why.value.decode())'
    fake="$TMP/libfakecupti.so"
    expect_exit 0 "calls' kernels credited to their tags" env GEMMTUNE_TRACE="$TMP/trace-calls.csv" \
      GEMMTUNE_CUPTI_LIB="$fake" GEMMTUNE_TRACE_CALLS=1 FAKE_CUPTI_CALLBACKS=1 \
      FAKE_CUPTI_CALL_KERNELS="12:500,13:700,14:900,15:300,16:40" python3 -c "$CALLS" "$TRACER" "$fake"
    expect_grep "tagging is on" '^tag 0$'
    expect_grep "each tag's kernel time and count (a driver launch sharing its runtime launch's id is one launch); the untagged launch is nobody's" \
      '^times 0 \[500, 740, 0\] \[1, 2, 0\] $'
    expect_exit 0 "with whole API domains: a kernel named by any tagged call is its tag's" \
      env GEMMTUNE_TRACE="$TMP/trace-dom.csv" GEMMTUNE_CUPTI_LIB="$fake" GEMMTUNE_TRACE_CALLS=1 \
      FAKE_CUPTI_DOMAINS=1 FAKE_CUPTI_CALL_KERNELS="12:500,13:700,14:900,15:300,16:40" \
      python3 -c "$CALLS" "$TRACER" "$fake"
    expect_grep "... the one from an unlisted function too" '^times 0 \[500, 740, 300\] \[1, 2, 1\] $'
    expect_exit 0 "a tagged launch whose kernel never came" env GEMMTUNE_TRACE="$TMP/trace-lost.csv" \
      GEMMTUNE_CUPTI_LIB="$fake" GEMMTUNE_TRACE_CALLS=1 FAKE_CUPTI_CALLBACKS=1 \
      FAKE_CUPTI_CALL_KERNELS="13:700" python3 -c "$CALLS" "$TRACER" "$fake"
    expect_grep "makes the answer a refusal, saying why" \
      '^times -1 .*kernel launches of GEMM calls without a kernel record: 2$'
    expect_exit 0 "calls not timed without GEMMTUNE_TRACE_CALLS" env GEMMTUNE_TRACE="$TMP/trace-nc.csv" \
      GEMMTUNE_CUPTI_LIB="$fake" FAKE_CUPTI_CALLBACKS=1 python3 -c "$CALLS" "$TRACER" "$fake"
    expect_grep "the tag is refused" '^tag -1$'
    expect_grep "and the times too, with the reason" '^times -1 .*GEMMTUNE_TRACE_CALLS is not 1$'
    expect_exit 0 "calls not timed when CUPTI refuses the launch callbacks" \
      env GEMMTUNE_TRACE="$TMP/trace-nocb.csv" GEMMTUNE_CUPTI_LIB="$fake" GEMMTUNE_TRACE_CALLS=1 \
      python3 -c "$CALLS" "$TRACER" "$fake"
    expect_grep "refused with CUPTI's reason" '^times -1 .*cuptiEnableCallback\(runtime launch 211\)'
  else
    ok "stand-in CUPTI checks skipped: no cupti.h or no C compiler"
  fi
else
  ok "tracer checks skipped: libgemmtune_trace.so not built (CUDA off) or no python3"
fi

# ---- check ----------------------------------------------------------------------------------------
expect_exit 0 "check --help" "$GT" check --help
expect_exit 64 "check without a DB" "$GT" check
expect_exit 64 "check with a bad --tolerance" "$GT" check "$TMP/db.csv" --tolerance x
expect_exit 65 "check a malformed DB" "$GT" check "$TMP/broken.csv"
if [ "$have_row" = 1 ]; then
  # A generous tolerance: this asserts the replay path, not this machine's timing noise.
  expect_exit 0 "check replays the row" "$GT" check --cpu --rounds 5 --tolerance 400 "$TMP/db.csv"
  expect_grep "the row passes" '^ +1  passes '
  expect_grep "summary line" '^PASS: 1 rows on .*: 1 pass, 0 not applicable, 0 fail'
  # sm_count is key column 23, the instance column 26
  awk -F, -v OFS=, '/^gemm,/ { $23 = 9999 } { print }' "$TMP/db.csv" >"$TMP/other.csv"
  expect_exit 1 "a DB whose only row is for another device checks nothing: exit 1" \
    "$GT" check --cpu "$TMP/other.csv"
  expect_grep "not applicable names the field" 'not applicable'
  expect_grep "names sm_count" 'sm_count: 9999 vs [0-9]+ here'
  expect_grep "says nothing was checked, and why" 'FAIL: no row of .*other.csv applies to this device .*so nothing was checked'
  awk -F, -v OFS=, '/^gemm,/ { $26 = "cpu_nonexistent_bf16" } { print }' "$TMP/db.csv" >"$TMP/gone.csv"
  expect_exit 1 "a row whose candidate does not exist fails" "$GT" check --cpu "$TMP/gone.csv"
  expect_grep "says missing" '^ +1  missing '
  expect_exit 0 "check as csv" "$GT" check --cpu --format csv --tolerance 400 --rounds 5 "$TMP/db.csv"
  expect_grep "csv header" '^row,verdict,key,provider,instance,recorded_us,now_us,baseline_now_us,speedup_rec,speedup_now,note'
else
  ok "check replay skipped: tune found no improving candidate on this machine"
fi
finish
