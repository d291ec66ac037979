# Shared by the report tests: a tuned DB from the CPU providers ($TMP/db.csv, with the shapes file
# $TMP/shapes.csv) and, through verify with a stand-in workload that writes the shim's counters and
# a kernel trace itself, the verify record $TMP/verify.json (engaged, with end-to-end metric
# lines). Sets HAVE_VERIFY=1 when the record could be made (a shape improved on this machine).
printf 'model,proj,tokens,out_features,in_features\nt,a,16,256,256\nt,b,8,512,256\n' >"$TMP/shapes.csv"
"$GT" tune --cpu --rounds 3 "$TMP/shapes.csv" -o "$TMP/db.csv" >"$TMP/tune.out" 2>&1 || true
HAVE_VERIFY=0
if grep -q '^gemm,' "$TMP/db.csv" 2>/dev/null; then
  INST=gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks2_v8
  awk -F, -v OFS=, -v inst="$INST" '/^gemm,/ && !done { $24 = "kernels"; $25 = "-"; $26 = inst; done = 1 } { print }' \
    "$TMP/db.csv" >"$TMP/kdb.csv"
  key=$(grep '^gemm,' "$TMP/kdb.csv" | grep "$INST" | cut -d, -f1-23,44-48)
  hdr="calls,hits,decision,provider,instance,entry,$(grep '^op,' "$TMP/kdb.csv" | cut -d, -f1-23,44-48)"
  printf '%s\n4,4,hit,kernels,%s,cublasGemmEx,%s\n' "$hdr" "$INST" "$key" >"$TMP/s-hit.csv"
  printf '#gemmtune-trace 1 status=ok pid=1 records=1204 dropped=0 total_ns=9000 reason=-\nname,calls,total_ns,min_ns,max_ns,stream_count,graph_launches\n%s,400,4000,10,10,1,396\ngt_sm90_splitk_reduce_bf16,400,1000,2,3,1,396\nelementwise,400,4000,7,8,1,396\n' \
    "$INST" >"$TMP/t-all.csv"
  cat >"$TMP/standin.sh" <<'EOS'
#!/bin/sh
s=$(printf '%s' "$GEMMTUNE_STATS" | sed "s/%p/$$/"); t=$(printf '%s' "$GEMMTUNE_TRACE" | sed "s/%p/$$/")
[ -n "$GEMMTUNE_STATS" ] && cp "$STANDIN_STATS" "$s"
[ -n "$GEMMTUNE_TRACE" ] && cp "$STANDIN_TRACE" "$t"
if [ -n "$GEMMTUNE_DB" ]; then echo "gemmtune-metric: step 1.00 ms"; else echo "gemmtune-metric: step 1.04 ms"; fi
exit 0
EOS
  if env STANDIN_STATS="$TMP/s-hit.csv" STANDIN_TRACE="$TMP/t-all.csv" "$GT" verify --db "$TMP/kdb.csv" \
       --runs 3 --warmup 0 --lib /dev/null --trace-lib /dev/null --json "$TMP/verify.json" \
       -- sh "$TMP/standin.sh" >"$TMP/verify.out" 2>&1; then
    HAVE_VERIFY=1
  fi
fi
