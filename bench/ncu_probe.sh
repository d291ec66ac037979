#!/usr/bin/env bash
# Nsight Compute profile of chosen kernels on one benchmark row, to see what limits them (DRAM,
# L2, tensor pipe, stalls). Runs on the GPU machine; needs ncu and GPU performance counters.
# Usage: bash bench/ncu_probe.sh BUILD_DIR LABEL TOKENS OUT_DIR KERNEL_REGEX...
#   e.g. bash bench/ncu_probe.sh build-dev llama3_70b/qkv 64 out/ncu t192x64x64_s3_ks4 nvjet
# Each regex gets its own run of kernels_bench on that row; the 6th matching launch is profiled
# (its inputs are cold: the benchmark rotates through buffers larger than L2). SASS=1 also
# writes each kernel's per-instruction stall samples (the source page, SASS, as CSV).
# CLOCK=none profiles at the clocks the GPU picks itself (ncu's default, base, locks the SM
# clock, which slows an SM-bound kernel and not a DRAM-bound one: comparing the two tells them
# apart). The tensor-pipe activity and SM clock are always collected. Exit 77: no ncu.
set -uo pipefail
[ $# -ge 5 ] || { sed -n 2,7p "$0"; exit 2; }
build=$1 label=$2 tokens=$3 out=$4; shift 4
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "ncu_probe: no ncu on this machine" >&2; exit 77; }
mkdir -p "$out/bench"
rc=0
for re in "$@"; do
  f="$out/$(echo "$label-$tokens-$re" | tr -c 'A-Za-z0-9_.-' '_').txt"
  src=()
  [ "${SASS:-0}" = 1 ] && src=(--section SourceCounters --section WarpStateStats -f -o "${f%.txt}")
  timeout 180 "$ncu" "${src[@]}" --kernel-name "regex:$re" --launch-skip 5 --launch-count 1 \
    --clock-control "${CLOCK:-base}" \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
    "$build/bench/kernels_bench" --filter "$label" --tokens "$tokens" --rounds 1 --finalists 1 \
    --out "$out/bench" >"$f" 2>&1 || rc=1
  if [ "${SASS:-0}" = 1 ] && [ -f "${f%.txt}.ncu-rep" ]; then
    "$ncu" -i "${f%.txt}.ncu-rep" --page source --csv --print-source sass >"${f%.txt}.sass.csv" 2>&1
    "$ncu" -i "${f%.txt}.ncu-rep" --page details >"$f" 2>&1
  fi
  echo "== $re"; grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Hit|Compute \(SM\)|Executed Ipc|Issue Slots Busy|Achieved Occupancy|Registers Per|Block Limit|Warp Cycles Per Issued|One or More Eligible|Stall|ERR|sm__pipe_tensor|sm__cycles_elapsed" "$f" | head -40
done
exit $rc
