#!/usr/bin/env bash
# bench/candidates_ab.py: per instance, its time over its own run's baseline, BEFORE against
# AFTER. An instance 1.1x slower on a machine 2x slower overall reads 1.091 (faster); an instance in one
# file only, a row without a baseline and a family filter are left out; malformed input names
# the file and line. Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
AB="$SRC/bench/candidates_ab.py"
h=label,tokens,out,in,name,quick_us,median_us,spread,rounds
cat >"$TMP/b.csv" <<CSV
$h
m/o,64,4096,4096,cublas_gemmex_default,10.0,10.0,0.01,9
m/o,64,4096,4096,gt_sm90_wg_bf16_tn_t64x64x128_s6_ks2_p12,12.0,nan,nan,0
m/o,64,4096,4096,gt_sm90_wg_bf16_tn_t64x64x128_s6_ks1_p12,13.0,nan,nan,0
m/o,64,4096,4096,gt_sm90_decodetc_bf16_tn_n32_m1_w1x8_u1_s2_ks1_v8,14.0,nan,nan,0
m/o,64,4096,4096,gt_sm90_wg_bf16_tn_t64x64x64_s6_ks1_p12,15.0,nan,nan,0
m/q,1,6144,4096,gt_sm90_wg_bf16_tn_t64x8x64_s6_ks2_p6,9.0,nan,nan,0
CSV
cat >"$TMP/a.csv" <<CSV
$h
m/o,64,4096,4096,cublas_gemmex_default,20.0,20.0,0.01,9
m/o,64,4096,4096,gt_sm90_wg_bf16_tn_t64x64x128_s6_ks2_p12,22.0,nan,nan,0
m/o,64,4096,4096,gt_sm90_wg_bf16_tn_t64x64x128_s6_ks1_p12,26.0,nan,nan,0
m/o,64,4096,4096,gt_sm90_decodetc_bf16_tn_n32_m1_w1x8_u1_s2_ks1_v8,28.0,nan,nan,0
m/q,1,6144,4096,gt_sm90_wg_bf16_tn_t64x8x64_s6_ks2_p6,8.0,nan,nan,0
CSV
expect_exit 0 "--help" python3 "$AB" --help
expect_grep "it says what the ratio means" 'ratio > 1 means'
expect_exit 0 "an A/B of two files" python3 "$AB" "$TMP/b.csv" "$TMP/a.csv"
# ks2: (12/10) / (22/20) = 1.091; ks1: (13/10) / (26/20) = 1.000; decodetc 1.000.
expect_grep "the split instance: 1.1x on a machine 2x slower" 't64x64x128_s6_ks2_p12 +12\.00 +10\.00 +22\.00 +20\.00 +1\.091$'
expect_grep "one that moved with the machine reads 1.000" 't64x64x128_s6_ks1_p12 +13\.00 +10\.00 +26\.00 +20\.00 +1\.000$'
expect_nogrep "an instance in one file only is left out" 't64x64x64_s6_ks1'
expect_grep "a row without a baseline is skipped and counted" '1 rows skipped without a baseline'
expect_grep "the geomean over the three pairs" '^tokens  64: geomean 1\.029 over 3 pairs, 1 faster'
expect_exit 0 "--family and --by-split" python3 "$AB" "$TMP/b.csv" "$TMP/a.csv" --family wg --by-split --quiet
expect_grep "per split" '^tokens  64 ks2: geomean 1\.091 over 1 pairs, 1 faster$'
expect_grep "ks1 beside it" '^tokens  64 ks1: geomean 1\.000 over 1 pairs, 0 faster$'
expect_nogrep "--quiet prints no pair lines" 'gt_sm90'
expect_exit 1 "no pair in common says so" python3 "$AB" "$TMP/b.csv" "$TMP/a.csv" --family tc
expect_grep "... in words" 'no own instance timed in both files'
printf '%s\nm/o,sixty,4096,4096,x,1.0,nan,nan,0\n' "$h" >"$TMP/bad.csv"
expect_exit 1 "a malformed row" python3 "$AB" "$TMP/bad.csv" "$TMP/a.csv"
expect_grep "names the file and line" 'bad\.csv:2: not a kernels_bench candidates row'
expect_exit 1 "a missing file" python3 "$AB" "$TMP/none.csv" "$TMP/a.csv"
expect_grep "names it" 'none\.csv: No such file'
expect_exit 2 "a bad --tokens is a usage error" python3 "$AB" "$TMP/b.csv" "$TMP/a.csv" --tokens 1,x
finish
