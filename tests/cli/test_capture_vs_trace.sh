#!/usr/bin/env bash
# bench/capture_vs_trace.py without torch or a GPU: --help, its self-test (the GEMM kernel name
# rule, torch sizes to cuBLAS keys, attribution of eager and graph-replayed kernels in made-up
# kineto traces, union of problems sharing a kernel, the tracer files, every verdict passing and
# failing, the driver end to end with a stand-in gemmtune and client), and its usage errors.
# Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
CVT="$SRC/bench/capture_vs_trace.py"

expect_exit 0 "--help" python3 "$CVT" --help
expect_grep "it names both traces" 'CUDA_INJECTION64_PATH=libgemmtune_trace.so'
expect_grep "it says where the GEMM name rule comes from" 'gt_cublas_owns_kernel'
expect_grep "it lists the verdicts" 'calls per step'
expect_grep "and the exit status" '^Exit status: 0 every verdict passes'
expect_exit 0 "--selftest" python3 "$CVT" --selftest
expect_grep "every case passes" '^[0-9]+ passed, 0 failed$'
expect_grep "failing cases are among them" 'fails the total'
expect_nogrep "no case fails" '^FAIL'
expect_exit 2 "no --out is a usage error" python3 "$CVT" --gemmtune "$GT" -- true
expect_exit 2 "no client is a usage error" python3 "$CVT" --gemmtune "$GT" --out "$TMP/o"
expect_exit 2 "a missing gemmtune is a usage error" python3 "$CVT" --gemmtune "$TMP/nope" \
  --out "$TMP/o" -- true
expect_exit 2 "--no-run on an empty folder" python3 "$CVT" --no-run --out "$TMP"
expect_grep "says what is missing" 'holds no trace.json and no tracer file'
finish
