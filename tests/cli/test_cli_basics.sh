#!/usr/bin/env bash
# Every subcommand answers --help; --version; bad usage exits 64; list shows providers.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
expect_exit 0 "--version" "$GT" --version
expect_grep "version printed" '^gemmtune [0-9]+\.[0-9]+\.[0-9]+'
for c in capture shapes baseline list profile tune merge explain; do
  expect_exit 0 "$c --help" "$GT" "$c" --help
  expect_grep "$c --help shows usage" "Usage: gemmtune $c"
done
expect_exit 64 "unknown command exits 64" "$GT" frobnicate
expect_exit 64 "unknown option exits 64" "$GT" tune --no-such-option x
expect_exit 64 "tune without -o exits 64" "$GT" tune "$SRC/examples/small_cpu.csv"
expect_exit 64 "bad --linear exits 64" "$GT" list --linear 1,2
expect_exit 0 "list providers" "$GT" list
expect_grep "cpu provider listed as ready" '^cpu +host +ready'
expect_grep "reference provider listed" '^reference'
expect_exit 0 "list candidates for a problem" "$GT" list --cpu --linear 16,256,256 --explain
expect_grep "mapping printed" 'linear tokens=16 out=256 in=256 -> BLAS TN m=256 n=16 k=256'
expect_grep "excluded candidate has a reason" 'excluded +gate reference'
expect_exit 0 "list as json" "$GT" list --cpu --linear 16,256,256 --format json
expect_grep "json output" '"candidate": "cpu_naive'
expect_exit 0 "rowmajor mapping" "$GT" list --cpu --rowmajor km,kn,8,64,32
expect_grep "km,kn maps to NT" 'row-major km,kn M=8 N=64 K=32 -> BLAS NT m=64 n=8 k=32 lda=64 ldb=8 ldc=64'
expect_exit 64 "fnuz type refused" "$GT" list --cpu --linear 1,16,16 --dtype e4m3fnuz
expect_grep "fnuz named as AMD dialect" 'FNUZ'
expect_exit 0 "shapes on the corpus format" "$GT" shapes --cpu "$SRC/examples/small_cpu.csv"
expect_grep "shapes prints regime" 'memory|compute'
finish
