#!/usr/bin/env bash
# The cuBLASLt config space on this GPU, and an exhaustive search under a budget.
# Usage: bench/cublaslt_space.sh BUILD OUTDIR
set -uo pipefail
gt="$1/gemmtune"
out=$2
mkdir -p "$out"
for shape in 1,4096,4096 16,4096,4096 4096,4096,4096; do
  echo "== gemmtune list --exhaustive --providers cublaslt --linear $shape"
  "$gt" list --exhaustive --providers cublaslt --explain --linear "$shape" --format csv >"$out/space_$shape.csv"
  total=$(($(wc -l <"$out/space_$shape.csv") - 1))
  usable=$(grep -c ',candidate,' "$out/space_$shape.csv")
  echo "configs listed: $total, passing AlgoCheck (candidates): $usable"
  cut -d, -f4 "$out/space_$shape.csv" | sed 's/ [0-9].*//' | sort | uniq -c | sort -rn | head -5
done
printf 'model,proj,tokens,out_features,in_features\nx,o,16,4096,4096\nx,o,4096,4096,4096\n' >"$out/two.csv"
echo "== estimate, then an exhaustive tune with a 20 s prune budget per shape"
"$gt" tune "$out/two.csv" -o "$out/exh.db" --exhaustive --providers cublas,cublaslt --estimate
time "$gt" tune "$out/two.csv" -o "$out/exh.db" --exhaustive --providers cublas,cublaslt --budget 20
