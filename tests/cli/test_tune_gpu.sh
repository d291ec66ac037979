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
finish
