#!/usr/bin/env bash
# On the GPU: the gate rejects a planted fast-but-wrong candidate, and a planted faulting
# candidate (illegal address: the CUDA context is lost) does not stop the tune run.
# Exits 77 (skipped) where there is no usable GPU.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! grep -Eq '^cublas +cuda +ready' <<<"$("$GT" list 2>/dev/null)"; then
  echo "no usable GPU: skipped"
  exit 77
fi
export GEMMTUNE_TEST_PROVIDERS=1
expect_exit 0 "profile the planted wrong candidate against the baseline" \
  "$GT" profile --linear 16,4096,4096 --providers cublas,testonly_cuda --instance testonly_cuda_wrong --rounds 5
expect_grep "planted wrong candidate fails the gate on the GPU" 'failed-gate .*testonly_cuda_wrong'
expect_grep "baseline passes" 'passed .*cublas_gemmex_default'

shapes="$TMP/s.csv"
printf 'model,proj,tokens,out_features,in_features\ng,a,16,4096,4096\ng,b,1,6144,4096\n' >"$shapes"
expect_exit 0 "tune survives the planted fault" "$GT" tune "$shapes" -o "$TMP/g.db" --rounds 5 \
  --providers cublas,cublaslt,testonly_cuda
expect_grep "both shapes finished" 'Summary: 2 shapes tuned'
expect_grep "the faulting candidate is named and recorded" 'testonly_cuda_fault (faulted|crashed)'
expect_grep "no shape failed" ' 0 failed'
if grep -q testonly "$TMP/g.db"; then bad "a planted candidate reached the DB" "$(cat "$TMP/g.db")"; else ok "no planted candidate in the DB"; fi
expect_exit 0 "estimate prints a cost" "$GT" tune "$shapes" -o "$TMP/e.db" --estimate --exhaustive --providers cublas,cublaslt
expect_grep "estimate line" '^Estimate: about'
[ ! -e "$TMP/e.db" ] && ok "estimate writes nothing" || bad "estimate wrote a DB"
t0=$(date +%s)
expect_exit 0 "estimate of two shapes" "$GT" tune "$shapes" -o "$TMP/e.db" --estimate
[ $(($(date +%s) - t0)) -le 30 ] && ok "estimate costs seconds per shape" || bad "estimate took $(($(date +%s) - t0)) s"

# The cuBLAS a captured application loaded: tune loads the same copy, says so, and records it in
# the DB; a capture naming another version is a warning naming both.
lt=$("$GT" list 2>/dev/null | awk '$1 == "cublaslt" { print $4 }')
ltpath=$(ldconfig -p 2>/dev/null | awk '/libcublasLt\.so\.13 / { print $NF; exit }')
[ -z "$ltpath" ] && ltpath=$(ls /usr/local/cuda/lib64/libcublasLt.so.13 2>/dev/null || true)
if [ -n "$lt" ] && [ -n "$ltpath" ]; then
  printf '#gemmtune-capture %s path=%s\nmodel,proj,tokens,out_features,in_features\ng,a,16,4096,4096\n' \
    "$lt" "$ltpath" >"$TMP/cap.csv"
  expect_exit 0 "tune with a capture that names the library" "$GT" tune "$TMP/cap.csv" -o "$TMP/c.db" \
    --rounds 5 --providers cublas,cublaslt
  expect_grep "says it uses the application's cuBLASLt" "using the cuBLASLt the application loaded \(from the capture\): $lt"
  grep -q '^#cublaslt-lib=/' "$TMP/c.db" && ok "the DB records the library" || bad "no cublaslt-lib validator" "$(head -5 "$TMP/c.db")"
  printf '#gemmtune-capture cublaslt=1 path=%s\nmodel,proj,tokens,out_features,in_features\ng,a,16,4096,4096\n' \
    "$ltpath" >"$TMP/cap2.csv"
  expect_exit 0 "tune with a capture naming another version" "$GT" tune "$TMP/cap2.csv" -o "$TMP/c2.db" \
    --rounds 5 --providers cublas,cublaslt
  expect_grep "the mismatch is a warning naming both" "warning: the application loaded cublaslt=1 .* but tune loads $lt"
else
  ok "capture-library checks skipped: cuBLASLt version or path not found"
fi
finish
