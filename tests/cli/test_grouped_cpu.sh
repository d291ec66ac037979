#!/usr/bin/env bash
# Grouped GEMM keys (torch._grouped_mm, MoE experts) as `gemmtune capture` writes them: `shapes`
# states each in torch's terms and in the BLAS key it maps to, with its FLOPs counted once per
# routed row; `tune` lists each, saying in its own words why this run cannot race it (its baseline
# is torch's own function), writes no row for it and does not calibrate on it.
# CPU only.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

cap="$TMP/grouped.csv"
hdr='calls,time_us,share,entry,workspace,not_tunable,op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count'
printf '%s\n' "$hdr" \
  '64,640.000,0.900000,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,14336,32,4096,4096,4096,14336,8,58720256,0,0,none,1,cpu,2' \
  '2,30.000,0.100000,grouped_mm,0,bf16bf16_grouped_mm: a bias: no own kernel takes one yet,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,14336,16,4096,4096,4096,14336,8,58720256,0,0,none,1,cpu,2' \
  >"$cap"

expect_exit 0 "shapes reads grouped keys" "$GT" shapes --cpu "$cap"
expect_grep "a grouped key in torch's terms and the BLAS key" 'grouped_mm groups=8 rows<=32 N=14336 K=4096 -> TN m=14336 n=32 k=4096'
expect_grep "FLOPs once per routed row (2*14336*32*4096)" ' 3\.758 '
expect_grep "a marked grouped key says why" 'no: bf16bf16_grouped_mm: a bias'

db="$TMP/g.db"
expect_exit 0 "tune lists grouped keys" "$GT" tune --cpu --rounds 3 "$cap" -o "$db"
expect_grep "the baseline is named in its own words" "baseline torch's own function, raced in torch"
expect_grep "and why this run does not race it" 'this run is on the CPU providers'
expect_nogrep "no calibration on a grouped key" 'calibration: .*grouped'
expect_grep "nothing written" '\(0 rows\)'

# A hand-written grouped key without stride columns: B's and D's strides stay 0 (split rows).
printf '%s\n' 'op,transa,transb,m,n,k,batch,arch,sm_count' 'grouped_mm,T,N,256,16,128,4,cpu,2' >"$TMP/hand.csv"
expect_exit 0 "a hand-written grouped key reads" "$GT" shapes --cpu "$TMP/hand.csv"
expect_grep "with the grouped view" 'grouped_mm groups=4 rows<=16 N=256 K=128'

finish
