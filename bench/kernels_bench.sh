#!/usr/bin/env bash
# Own kernels vs cublasGemmEx on the llama3_8b/70b decode shapes (bench/decode_shapes.csv:
# tokens 1..64), on the GPU machine. Builds nothing: pass the build folder that holds
# bench/kernels_bench (default: ./build). Writes kernels_bench.csv,
# kernels_bench_candidates.csv and kernels_bench.txt under $OUT when it is set.
#
#   bash bench/kernels_bench.sh [BUILD_DIR] [kernels_bench options: --tokens 1,16 --filter 8b ...]
#   bash bench/kernels_bench.sh build --epilogue bias   # biased keys against the application's
#                                                       # cublasLtMatmul, and the fused bias's cost
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
[ $# -gt 0 ] && shift
bin="$build/bench/kernels_bench"
if [ ! -x "$bin" ]; then
  echo "kernels_bench.sh: $bin not found (build with the CUDA parts and add_subdirectory(bench))" >&2
  exit 2
fi
args=(--shapes "$here/decode_shapes.csv")
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  args+=(--out "$OUT")
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv 2>/dev/null || true
fi
echo "command: $bin ${args[*]} $*"
if [ -n "${OUT:-}" ]; then
  "$bin" "${args[@]}" "$@" | tee "$OUT/kernels_bench.txt"
else
  "$bin" "${args[@]}" "$@"
fi
