#!/usr/bin/env bash
# bench/kernels_merge.py: parts of a kernels_bench run merged into the whole run's verdicts. The
# tuned geomean takes max(1, base/own) per row and own alone the plain ratio; a key in two parts,
# a file that is not a kernels_bench.csv and a missing file exit 2 naming the file (and line).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
KM="$SRC/bench/kernels_merge.py"
hdr=label,tokens,out,in,weight_mb,lt_us,lt_spread,best_us,best_spread,best_name,ratio,best_gbps,lt_gbps,own_raced,own_gate_failed,epilogue,twin_pair_us,twin_pair_spread,plain_pair_us,plain_pair_spread,plain_name,fused_cost
printf '%s\n%s\n' "$hdr" "a/x,1,8192,8192,134.2,12.1,0.01,10.0,0.01,k1,1.21,4400,3600,9,0,bias,10,0,9.9,0,k1p,1.02" >"$TMP/p1.csv"
printf '%s\n%s\n' "$hdr" "a/x,64,8192,8192,134.2,8.1,0.01,10.0,0.01,k2,0.81,3900,4200,9,0,bias,10,0,10,0,k2p,1.00" >"$TMP/p2.csv"
expect_exit 0 "two parts merge" python3 "$KM" "$TMP/p1.csv" "$TMP/p2.csv" --tbs 4.3 --csv "$TMP/m.csv"
expect_grep "both rows counted" '^2 rows from 2 files \(baseline column lt_us\)'
expect_grep "tuned: a row behind the baseline counts as 1" 'tuned dispatch\): 1\.100'
expect_grep "own alone: the plain ratios" 'best own alone\): +0\.990'
expect_grep "the row behind is listed" 'a/x 64 tokens: 0\.810'
expect_grep "the fused cost is the geomean of the parts'" 'twin/plain 1\.010 \(2 rows\)'
expect_grep "the bandwidth count" '>= 4\.30 TB/s on weights >= 100 MB: 1 of 2 \(lowest 3\.90 TB/s'
if [ "$(wc -l <"$TMP/m.csv")" = 3 ]; then ok "the merged CSV has both rows"; else bad "merged CSV"; fi
# --floor: row 1 moves 4400 GB/s x 10 us = 44 MB (11 us at 4 TB/s), row 2 39 MB (9.75 us).
expect_exit 0 "a floor of 4 TB/s" python3 "$KM" "$TMP/p1.csv" "$TMP/p2.csv" --floor 4
expect_grep "the most a tuned dispatch reaches: sqrt(12.1/11 x 1)" 'the most any tuned dispatch reaches: 1\.049'
expect_grep "distance: tuned min(base, own), own alone" 'tuned 0\.869, best own 0\.966'
expect_grep "by tokens" 'by tokens: 1 0\.909/0\.909, 64 0\.831/1\.026'
expect_exit 0 "a floor with a fixed cost a call" python3 "$KM" "$TMP/p1.csv" --floor 4,1
expect_grep "the fixed cost adds to the floor: 12.1/12" 'reaches: 1\.008'
expect_exit 2 "a floor that is not TBPS[,US]" python3 "$KM" "$TMP/p1.csv" --floor 4,x
expect_grep "it names the option and the form" '--floor 4,x: want TBPS\[,FIXED_US\]'
expect_exit 2 "a zero bandwidth" python3 "$KM" "$TMP/p1.csv" --floor 0
# --floor measured: kernels_bench --floor's columns. Row 1: the fastest design took 10 us, the
# own instance 9.9 beside it (so 9.9 is the floor, the row counted as beaten), the baseline 11;
# row 2 has no floor (NaN: not measured) and is left out.
fhdr="$hdr,floor_us,floor_name,floor_base_us,floor_best_us,floor_gbps,floor_design_us"
printf '%s\n%s\n%s\n' "$fhdr" \
  "a/x,1,8192,8192,134.2,12.1,0.01,10.0,0.01,k1,1.21,4400,3600,9,0,bias,10,0,9.9,0,k1p,1.02,9.9,k1,11.0,9.9,4444,10.0" \
  "a/x,64,8192,8192,134.2,8.1,0.01,10.0,0.01,k2,0.81,3900,4200,9,0,bias,10,0,10,0,k2p,1.00,nan,,nan,nan,nan,nan" \
  >"$TMP/f.csv"
expect_exit 0 "a measured floor" python3 "$KM" "$TMP/f.csv" --floor measured
expect_grep "the row without a floor is counted and left out" 'floor measured: 1 rows without a floor left out'
expect_grep "base/floor from the floor's own bench: 11/9.9" 'reaches: 1\.111'
expect_grep "distances from the times beside the floor: 9.9/9.9" 'tuned 1\.000, best own 1\.000'
expect_grep "a row whose own instance beat every design is listed" 'beat every design \(their time is the floor\): 1'
expect_exit 0 "a bar above the measured ceiling" python3 "$KM" "$TMP/f.csv" --floor measured --bar 1.2
expect_grep "the bar is judged against the tuned geomean and the ceiling" 'bar 1\.200: tuned 1\.100, not met; the floor.s ceiling 1\.111 is below it'
expect_exit 0 "a bar without a floor" python3 "$KM" "$TMP/p1.csv" "$TMP/p2.csv" --bar 1.15
expect_grep "only the tuned geomean is judged" 'bar 1\.150: tuned 1\.100, not met$'
expect_exit 2 "a bar that is not a geomean" python3 "$KM" "$TMP/p1.csv" --bar -1
expect_exit 2 "a measured floor asked of files without one" python3 "$KM" "$TMP/p1.csv" --floor measured
expect_grep "it says which option to run" 'no floor_us column \(run kernels_bench --floor\)'
expect_exit 2 "a key in two parts" python3 "$KM" "$TMP/p1.csv" "$TMP/p1.csv"
expect_grep "it names both places" 'p1.csv:2: a/x at 1 tokens is also in .*p1.csv:2'
printf 'label,tokens\nx,1\n' >"$TMP/other.csv"
expect_exit 2 "a file that is not a kernels_bench.csv" python3 "$KM" "$TMP/other.csv"
expect_grep "it names the file" 'other.csv: no baseline and best_us columns'
expect_exit 2 "a missing file" python3 "$KM" "$TMP/none.csv"
expect_grep "it names the missing file" 'none.csv: No such file'
finish
