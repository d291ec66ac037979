#!/usr/bin/env bash
# merge arbitrates two rows for one key only beyond their combined recorded spread: a row 0.09%
# faster when the rows scatter by 2% and 9% is a tie ("tie within spread"), kept by the lower
# spread; a row 20% faster wins. The result is the same file whatever the order of the inputs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

hdr="op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,instance,time_us,baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,sm_clock_mhz,splitk_searched,throttled,baseline,device,device_mem_gib,floor_us,floor_bound,floor_pct"
key="gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,1,4096,4096,4096,4096,1,0,0,0,none,1,sm_90,132"
db() { # FILE INSTANCE TIME_US SPREAD_PCT
  local sp
  sp=$(awk -v t="$3" 'BEGIN { printf "%.6g", 12.5 / t }')
  printf '#gemmtune-db 2\n#gemmtune=0.1.0\n#device=NVIDIA H200\n%s\n%s,kernels,gemmtune-kernels=1,%s,%s,12.5,%s,0.0016691,0.00784302,cold-graph,15,%s,1980,1,0,cublas_gemmex_default,NVIDIA H200,139,0,-,0\n' \
    "$hdr" "$key" "$2" "$3" "$sp" "$4" >"$1"
}

# hole 5's numbers: the faster row by 0.09%, spreads 9% and 2%
db "$TMP/a.db" gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4 10 9
db "$TMP/b.db" gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8 10.009 2
expect_exit 0 "rows 0.09% apart with spreads 9% and 2% merge" "$GT" merge "$TMP/a.db" "$TMP/b.db" -o "$TMP/ab.db"
expect_grep "says tie within spread" 'tie within spread for .*differ by 0\.09%, within their combined spread 11\.00%'
expect_grep "keeps the lower spread" "kept .*b\\.db's \\(the lower spread\\)"
grep -q ',gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8,' "$TMP/ab.db" && ok "the slower, tighter row is kept" \
  || bad "kept row" "$(cat "$TMP/ab.db")"
expect_grep "the summary counts the tie" '1 ties within spread'
expect_exit 0 "the same inputs in the other order" "$GT" merge "$TMP/b.db" "$TMP/a.db" -o "$TMP/ba.db"
cmp -s "$TMP/ab.db" "$TMP/ba.db" && ok "same output bytes whatever the input order" \
  || bad "order changed the output" "$(diff "$TMP/ab.db" "$TMP/ba.db")"

# beyond the spread: 20% faster with spreads 9% and 2%
db "$TMP/c.db" gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks1_v8 12 2
expect_exit 0 "rows 20% apart merge" "$GT" merge "$TMP/c.db" "$TMP/a.db" -o "$TMP/ac.db"
expect_grep "the faster is kept beyond the spread" \
  'kept .*a\.db/gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4 10 us over .*c\.db/.* 12 us for .*\(20\.00% faster, beyond the combined spread 11\.00%\)'
grep -q ',gt_sm90_decode_bf16_tn_n1_r4_w4_u4_ks1_v4,' "$TMP/ac.db" && ok "the faster row is in the output" \
  || bad "kept row" "$(cat "$TMP/ac.db")"
expect_exit 0 "the other order" "$GT" merge "$TMP/a.db" "$TMP/c.db" -o "$TMP/ca.db"
cmp -s "$TMP/ac.db" "$TMP/ca.db" && ok "same output bytes" || bad "order changed the output"

# one key tuned on two products of one arch and SM count: not comparable (with --mixed too)
sed 's/,NVIDIA H200,139,0,-,0$/,NVIDIA H100 80GB HBM3,79,0,-,0/; s/^#device=.*/#device=NVIDIA H100 80GB HBM3/' \
  "$TMP/c.db" >"$TMP/h100.db"
expect_exit 65 "another device's row for the key: refused without --mixed" \
  "$GT" merge "$TMP/a.db" "$TMP/h100.db" -o "$TMP/x.db"
expect_grep "the #device lines differ" '#device differs'
expect_exit 65 "with --mixed: a conflict, nothing written" \
  "$GT" merge --mixed "$TMP/a.db" "$TMP/h100.db" -o "$TMP/x.db"
expect_grep "measured on different devices" 'conflict for .*measured on different devices'
[ ! -e "$TMP/x.db" ] && ok "nothing written" || bad "x.db written"
finish
