#!/usr/bin/env bash
# The grouped_mm rows the grouped race (python/gemmtune/grouped) writes, without torch or a GPU: rows.py
# (the torch-free part) decides each tunable grouped key of a capture from fake timings as the
# race would and writes a DB. The rows' key cells are the shapes row's, so `gemmtune explain`
# finds the row for the captured key; `gemmtune merge` reads and combines the file with a DB tune
# wrote; a key the own instance does not win by tune's threshold, a wrong output and the
# marked and cuBLAS rows of the capture write nothing. Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }

# A capture as the shim writes it (tests/cli/test_preload_grouped.sh): two tunable grouped keys
# (weights [E][N][K] and [E][K][N]), a biased call marked not tunable and a cuBLAS key.
hdr='calls,time_us,share,entry,workspace,not_tunable,op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count'
fp8=',scale_a,scale_b,fast_accum,scale_d,amax_d'
printf '%s\n' "$hdr$fp8" \
  '3,36.000,0.500000,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,3584,2,1024,1024,1024,3584,8,3670016,0,0,none,1,sm_90,132,none,none,0,0,0' \
  '3,30.000,0.400000,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,N,N,1024,32,3584,1024,3584,1024,8,3670016,0,0,none,1,sm_90,132,none,none,0,0,0' \
  '1,5.000,0.050000,grouped_mm,0,bf16bf16_grouped_mm: a bias: no own kernel takes one yet,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,3584,16,1024,1024,1024,3584,8,3670016,0,0,none,1,sm_90,132,none,none,0,0,0' \
  '4,5.000,0.050000,cublasGemmEx,0,-,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,4096,16,4096,4096,4096,4096,1,0,0,0,none,1,sm_90,132,none,none,0,0,0' \
  '2,8.000,0.100000,grouped_mm,0,-,grouped_mm,f8e4m3fn,f8e4m3fn,bf16,bf16,f32,f32,T,N,4096,16,7168,7168,7168,4096,8,29360128,0,0,none,1,sm_90,132,outer_f32,outer_f32,0,0,0' \
  >"$TMP/cap.csv"
# A capture of a gemmtune from before fp8 keys: no fp8 columns (their defaults: no scaling).
printf '%s\n' "$hdr" \
  '2,20.000,1.000000,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,14336,32,4096,4096,4096,14336,8,58720256,0,0,none,1,sm_90,132' \
  >"$TMP/old.csv"

# The race's decisions from fake timings: per key, torch at 10 us (spread 1%), an own instance
# that agrees and one faster that disagrees with torch's output; KEY 1 wins by 1.25x, KEY 2 by
# 1.01x (below tune's 3%), the old capture's key by 1.6x.
cat >"$TMP/fake.py" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from gemmtune.grouped import rows as gr
assert "torch" not in sys.modules
shapes, out = sys.argv[2], sys.argv[3]
own_us = [float(t) for t in sys.argv[4].split(",")]
rows, keys = [], []
print(gr.TABLE_HEADER)
for (line, srow), t in zip(gr.grouped_keys(shapes), own_us):
    cells = gr.key_cells(srow)
    dt = "e4m3" if cells["a_type"] == "f8e4m3fn" else "bf16"  # the instances of the key's type
    results = [dict(instance="gt_sm90_grpd_%s_t64x16x128_s4_nk" % dt, time_us=t, spread_pct=0.8,
                    error=1e-3, agree=True),
               dict(instance="gt_sm90_grpd_%s_t64x8x128_s4_nk" % dt, time_us=t / 2,
                    spread_pct=0.5, error=0.5, agree=False)]
    row, outcome, best, note = gr.decide(cells, 10.0, 1.0, results, gr.DEFAULT_THRESHOLD_PCT,
                                         15, "NVIDIA H200", 139, 1980)
    if row:
        rows.append(row)
    keys.append(gr.key_text(cells))
    for text in gr.table_lines(line, cells, 10.0, best, outcome, row, note):
        print(text)
gr.write_db(out, rows, "NVIDIA H200", {"torch": "0.0-fake"})
with open(out + ".keys", "w") as f:
    f.write("\n".join(keys) + "\n")
try:
    gr.make_row(gr.key_cells(next(gr.grouped_keys(shapes))[1]), "x", 11.0, 10.0, 0, 1, 1, 0,
                "NVIDIA H200", 139)
    print("a row slower than torch was made")
except gr.RowError as e:
    print("refused: %s" % e)
PY

expect_exit 0 "rows written from fake timings" python3 "$TMP/fake.py" "$SRC/python" "$TMP/cap.csv" \
  "$TMP/g.db" 8.0,9.9,6.0
expect_grep "the winning key: improved, the gated instance" '^ +2  .* +10\.000 +8\.000 +1\.250  improved +grouped/gt_sm90_grpd_bf16_t64x16x128_s4_nk$'
expect_grep "the wrong output is no winner and is counted" '1 failed the gate'
expect_grep "a win below tune's threshold: unchanged" '^ +3  .*unchanged +-$'
expect_grep "with the reason" 'did not beat the baseline by 3\.0%'
expect_nogrep "the marked and cuBLAS rows are not raced" '^ +(4|5)  '
expect_grep "a row slower than torch is refused" '^refused: time 11 us is not below'
OUT_TXT=$(cat "$TMP/g.db")
expect_grep "format 3" '^#gemmtune-db 3$'
expect_grep "the device validator tune writes" '^#device=NVIDIA H200$'
expect_grep "one row: the key cells as captured, provider grouped, fp8 columns last" '^grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,3584,2,1024,1024,1024,3584,8,3670016,0,0,none,1,sm_90,132,grouped,gemmtune-grouped=1,gt_sm90_grpd_bf16_t64x16x128_s4_nk,8,10,1\.25,0\.001,0\.00782776,cold-graph,15,0\.8,1980,0,0,torch\._grouped_mm,NVIDIA H200,139,0,-,0,none,none,0,0,0$'
# The fp8 key (f8f8bf16_grouped_mm, rowwise scales): its baseline is torch's scaled function, its
# gate bound the fp8 one (2 u_bf16 + 8 * 2^-14 * sqrt(7168) = 0.0491524, gt_metric_bound's), its
# scales in the row.
expect_grep "the fp8 key's row: e4m3 types, an e4m3 instance, fp8 bound, torch's scaled path, outer scales" '^grouped_mm,f8e4m3fn,f8e4m3fn,bf16,bf16,f32,f32,T,N,4096,16,7168,.*,gt_sm90_grpd_e4m3_t64x16x128_s4_nk,.*,0\.0491524,cold-graph,.*,torch\._scaled_grouped_mm,NVIDIA H200,139,0,-,0,outer_f32,outer_f32,0,0,0$'
[ "$(grep -c '^grouped_mm,' "$TMP/g.db")" = 2 ] && ok "no row for the unchanged key" \
  || bad "no row for the unchanged key" "$(cat "$TMP/g.db")"

key1=$(sed -n 1p "$TMP/g.db.keys")
key2=$(sed -n 2p "$TMP/g.db.keys")
expect_exit 0 "explain finds the row for the captured key" "$GT" explain "$TMP/g.db" "$key1"
expect_grep "a hit on the grouped row" '^HIT  op=grouped_mm,.*m=3584,n=2,k=1024'
expect_grep "served by the own instance" 'provider=grouped instance=gt_sm90_grpd_bf16_t64x16x128_s4_nk lib=gemmtune-grouped=1'
expect_grep "against torch's path" 'vs baseline torch\._grouped_mm 10\.000 us \(1\.250x\)'
expect_exit 1 "the unchanged key misses" "$GT" explain "$TMP/g.db" "$key2"
expect_exit 0 "explain finds the fp8 row" "$GT" explain "$TMP/g.db" "$(sed -n 3p "$TMP/g.db.keys")"
expect_grep "against torch's scaled path" 'vs baseline torch\._scaled_grouped_mm 10\.000 us \(1\.667x\)'
expect_grep "the rowwise scales in the key" 'scale_a=outer_f32'
expect_grep "served by the own e4m3 instance" 'provider=grouped instance=gt_sm90_grpd_e4m3_t64x16x128_s4_nk'


expect_exit 0 "the old capture's key: rows written" python3 "$TMP/fake.py" "$SRC/python" \
  "$TMP/old.csv" "$TMP/old.db" 6.25
expect_exit 0 "explain: its key with the fp8 fields at their defaults hits" "$GT" explain \
  "$TMP/old.db" "$(cat "$TMP/old.db.keys")"
expect_exit 0 "merge reads and combines two grouped DBs of one device" "$GT" merge "$TMP/g.db" \
  "$TMP/old.db" -o "$TMP/both.db"
expect_grep "the three rows" '\(3 rows\)'

# Combined with a DB tune wrote (the host's providers here, so another device: --mixed says the
# mix is meant; without it merge refuses, naming the device validators).
printf 'model,proj,tokens,out_features,in_features\nt,a,8,192,128\n' >"$TMP/lin.csv"
expect_exit 0 "tune writes its DB" "$GT" tune --cpu --rounds 3 "$TMP/lin.csv" -o "$TMP/tuned.db"
expect_exit 65 "merge refuses rows of two devices unasked" "$GT" merge "$TMP/g.db" \
  "$TMP/tuned.db" -o "$TMP/final.db"
expect_grep "naming the device validators" '#device differs'
expect_exit 0 "merge combines them with tune's DB" "$GT" merge --mixed "$TMP/g.db" \
  "$TMP/tuned.db" -o "$TMP/final.db"
nt=$(grep -vc '^#' "$TMP/tuned.db")
nf=$(grep -vc '^#' "$TMP/final.db")
[ "$nf" = $((nt + 2)) ] && ok "the merged DB has tune's rows and the grouped ones" \
  || bad "the merged DB has tune's rows and the grouped ones" "$(cat "$TMP/final.db")"
expect_exit 0 "explain finds the grouped key in the merged DB" "$GT" explain "$TMP/final.db" "$key1"
expect_grep "still the own instance" 'provider=grouped instance=gt_sm90_grpd_bf16_t64x16x128_s4_nk'
finish
