#!/usr/bin/env bash
# bench/decode_vs_inductor.py without torch or a GPU: --help, the self-test of its torch-free
# parts (rows, cold sets, rounds, ratios, verdicts on synthetic timings, the stats, DB, tune and
# Inductor-code readers, CSV/JSON), and the driver's plumbing end to end with fake workers
# (--fake: made-up times, the worker protocol and the shim's stats file): a stand-in gemmtune
# whose `tune` writes a DB the real reader accepts and whose `run` is the real `gemmtune run`
# (deploying libm as the "shim"), so the gemmtune column really goes through `run` and the plain
# columns really run without LD_PRELOAD. Planted faults: a key not served, a wrong output, a slow
# row, a crashing, hanging or misconfigured worker, a malformed DB. Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
DVI="$SRC/bench/decode_vs_inductor.py"

expect_exit 0 "--help" python3 "$DVI" --help
expect_grep "it names the columns" 'max-autotune-no-cudagraphs'
expect_grep "it says how noise is counted" "two columns' spreads added"
expect_grep "and the exit status" '^Exit status: 0 it ran'
expect_exit 0 "--selftest" python3 "$DVI" --selftest
expect_grep "every case passes" '^[0-9]+ passed, 0 failed$'
expect_nogrep "no case fails" '^FAIL'
expect_exit 0 "--plan of the full set" python3 "$DVI" --plan --shapes all
expect_grep "84 rows" '^decode_vs_inductor: 84 rows'
expect_grep "over the 8-minute budget, and what to do" 'over the 8-minute budget.*--merge'
expect_exit 0 "--plan --smoke" python3 "$DVI" --plan --smoke
expect_grep "4 rows, one round" '^decode_vs_inductor: 4 rows \(smoke\), 1 rounds'
expect_exit 2 "an unknown --shapes is a usage error" python3 "$DVI" --plan --shapes 13b
expect_exit 2 "a bad --tokens is a usage error" python3 "$DVI" --plan --tokens 1,x
expect_exit 2 "--rounds 0 is a usage error" python3 "$DVI" --plan --rounds 0
expect_exit 0 "--tokens picks the counts" python3 "$DVI" --plan --shapes 70b --tokens 1,2
expect_grep "12 rows" '^decode_vs_inductor: 12 rows \(--shapes 70b, tokens 1,2\), 3 rounds'
expect_exit 2 "no gemmtune binary: setup error" python3 "$DVI" --fake ok --smoke \
  --gemmtune "$TMP/nope" --out "$TMP/nope.out"
expect_grep "saying so" 'SETUP ERROR: gemmtune binary not found'

shim=$(ls /lib/x86_64-linux-gnu/libm.so.6 /usr/lib64/libm.so.6 /lib64/libm.so.6 2>/dev/null | head -1 || true)
if [ -z "$shim" ]; then
  echo "no libm to deploy as a stand-in shim: the end-to-end checks are skipped"
  finish
  exit $?
fi

# The stand-in gemmtune: tune writes a row for every shape but those at 64 tokens (cuBLAS kept)
# in the DB format `gemmtune run` reads strictly, and tune's --format csv table.
cat >"$TMP/gemmtune" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
case "$1" in
  tune)
    shapes=$2; shift 2; db=""
    while [ $# -gt 0 ]; do case "$1" in -o) db=$2; shift 2 ;; *) shift ;; esac; done
    python3 - "$shapes" "$db" <<'PY'
import csv, sys
shapes, db = sys.argv[1], sys.argv[2]
hdr = ("op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,"
       "stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,instance,time_us,"
       "baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,sm_clock_mhz,"
       "splitk_searched,throttled,baseline,device,device_mem_gib,floor_us,floor_bound,floor_pct,"
       "scale_a,scale_b,fast_accum,scale_d,amax_d")
out = ["#gemmtune-db 3", "#gemmtune=0.1.0", "#device=NVIDIA H200", hdr]
print("shape,label,mapping,baseline_us,best_us,speedup,outcome,winner,note")
for i, r in enumerate(csv.DictReader(open(shapes)), 1):
    t, m, k = int(r["tokens"]), int(r["out_features"]), int(r["in_features"])
    mapping = "linear tokens=%d out=%d in=%d -> TN m=%d n=%d k=%d" % (t, m, k, m, t, k)
    label = "%s/%s" % (r["model"], r["proj"])
    if t == 64:
        print("%d,%s,%s,12,11.9,1.008,unchanged,-,did not beat the baseline by 3.0%%" % (i, label, mapping))
        continue
    print("%d,%s,%s,12,10,1.2,improved,kernels/gt_sm90_fake_t%d," % (i, label, mapping, t))
    out.append("gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,%d,%d,%d,%d,%d,%d,1,0,0,0,none,1,sm_90,132,"
               "kernels,gemmtune-kernels=1,gt_sm90_fake_t%d,10.0,12.0,1.2,0.0016691,0.00784302,"
               "cold-graph,15,0.47,1980,1,0,cublas_gemmex_default,NVIDIA H200,139,6.99392,"
               "bandwidth,69.9392,none,none,0,0,0" % (m, t, k, k, k, m, t))
open(db, "w").write("\n".join(out) + "\n")
PY
    echo "Summary: stand-in tune" >&2 ;;
  run) shift; exec "$REAL_GT" run "$@" ;;
  *) echo "stand-in gemmtune: $1 is not faked" >&2; exit 64 ;;
esac
EOF
chmod +x "$TMP/gemmtune"
export REAL_GT="$GT"
run() { python3 "$DVI" --gemmtune "$TMP/gemmtune" --lib "$shim" "$@"; }

expect_exit 0 "a fake run: 8b at tokens 1 and 64, two rounds" run --fake ok --shapes 8b \
  --tokens 1,64 --rounds 2 --out "$TMP/ok"
expect_grep "the estimate comes first" '^estimate: ~'
expect_grep "tune ran over the rows" '^tune: .* tune .*/ok/shapes\.csv -o .*/ok/tuned\.db --format csv'
expect_grep "the DB's rows counted" 'tuned\.db: 6 of 12 rows have a tuned row'
order=$(grep -o '^round [0-9]/[0-9] [a-z]*' <<<"$OUT_TXT" | tr '\n' ' ')
[ "$order" = "round 1/2 cublas round 1/2 gemmtune round 1/2 inductor round 2/2 cublas round 2/2 gemmtune round 2/2 inductor " ] \
  && ok "rounds alternate the three columns, in one order" \
  || bad "rounds alternate the three columns, in one order" "$order"
expect_grep "the shim's stats were read" 'round 2/2 gemmtune: 12 of 12 rows in .* exit 0, shim stats read'
expect_grep "a tuned row, served" '^llama3_8b/o +1 +33\.6 .* 1\.198 +1\.358 .* yes$'
expect_grep "its winner from the DB" 'gemmtune: kernels/gt_sm90_fake_t1 \(tuned 1\.200x\) \| inductor: triton_red_fused_mul_sum_0\[R0_BLOCK=2048'
expect_grep "a kept row is cuBLAS through the shim" '^llama3_8b/o +64 .* 1\.000 .* no row  SLOWER$'
expect_grep "named as tune's decision" 'gemmtune: cublas \(tune kept it\) \| inductor: triton_mm BLOCK_M=16'
expect_grep "the every-row verdict fails on the kept rows" 'every row >= 0\.99x inductor +6 ok, 0 within noise, 6 slower.*: FAIL$'
expect_grep "a partial selection says so" 'PARTIAL: 12 of the 84'
expect_grep "the rows Inductor wins, with its choice" '^  llama3_8b/o tokens 64: 0\.8[0-9]+x: triton_mm BLOCK_M=16 BLOCK_N=64 BLOCK_K=128'
expect_grep "the files" "wrote .*/ok/decode_vs_inductor\.json"
OUT_TXT=$(head -1 "$TMP/ok/decode_vs_inductor.csv")
expect_grep "CSV header" '^model,proj,tokens,out_features,in_features,weight_mb,cublas_us,gemmtune_us,inductor_us,speedup_vs_inductor'
[ "$(wc -l <"$TMP/ok/decode_vs_inductor.csv")" = 13 ] && ok "a CSV line per row" \
  || bad "a CSV line per row" "$(cat "$TMP/ok/decode_vs_inductor.csv")"
expect_exit 0 "the JSON holds every round of every column" python3 -c "
import json, sys
d = json.load(open('$TMP/ok/decode_vs_inductor.json'))
r = d['rows'][0]
assert len(d['rows']) == 12 and d['meta']['rounds'] == 2, d['meta']
assert all(len(r['per_round'][c]) == 2 for c in ('cublas', 'gemmtune', 'inductor')), r
assert [v['verdict'] for v in d['verdicts']][1] in ('PASS', 'FAIL')
"
[ -s "$TMP/ok/results/r1_gemmtune_stats.csv" ] && ok "the gemmtune worker wrote its stats file" \
  || bad "the gemmtune worker wrote its stats file"

# Issue 17's honesty run: cuBLAS and gemmtune only, the recorded speedups against the application's.
expect_exit 0 "--no-inductor: two columns" run --fake ok --shapes 8b --tokens 1,64 --no-inductor \
  --out "$TMP/noind"
order=$(grep -o '^round [0-9]/[0-9] [a-z]*' <<<"$OUT_TXT" | tr '\n' ' ')
[ "$order" = "round 1/3 cublas round 1/3 gemmtune round 2/3 cublas round 2/3 gemmtune round 3/3 cublas round 3/3 gemmtune " ] \
  && ok "... no Inductor worker runs" || bad "... no Inductor worker runs" "$order"
expect_grep "... its verdicts are n/a" 'every row >= 0\.99x inductor +not measured \(--no-inductor\): n/a$'
expect_grep "... tune's recorded speedup against the application's, per written row" "tune's speedup within 3% of the application's on >= 90% of rows +[0-9]+ of 6 written rows \\(0 recorded as confirmed live, 6 on the harness's numbers\\); farthest "
expect_grep "... and no written row slower" 'no written row slower in the application than plain +0 of 6 written rows slower: PASS$'
# A run cut by its time limit: --from-results reports what its files hold; a round whose gemmtune
# worker wrote no stats (cut before exit) proves nothing served and is left out, saying so.
cp -r "$TMP/noind" "$TMP/cut"
rm -f "$TMP/cut/results/r3_gemmtune_stats.csv" "$TMP/cut/decode_vs_inductor.json"
expect_exit 0 "--from-results re-reports a cut run" python3 "$DVI" --from-results "$TMP/cut" --no-inductor
expect_grep "... round 3's gemmtune rows left out, and why" "round 3's gemmtune rows left out \\(the worker was cut before the shim wrote its stats\\)"
expect_grep "... the honesty verdicts over what is left" 'no written row slower in the application than plain +0 of 6 written rows slower: PASS$'
[ -f "$TMP/cut/decode_vs_inductor.json" ] && ok "... and writes the JSON" || bad "... no JSON" "$(ls "$TMP/cut")"
expect_exit 0 "a key the shim did not serve" run --fake unserved:4096x4096x1 --smoke --out "$TMP/uns"
expect_grep "is NOT SERVED, with no gemmtune time" '^llama3_8b/o +1 +33\.6 +[0-9.]+ +NOT SERVED '
expect_grep "saying why" 'NOT SERVED: round 1: 0 of 22 calls served \(notused\)'
expect_grep "and fails the verdicts" 'every row >= 0\.99x inductor .*\(1 of them not served\).*: FAIL$'
expect_exit 0 "a wrong output" run --fake wrong:inductor@28672x4096x16 --smoke --out "$TMP/wrong"
expect_grep "is no time" '^llama3_8b/gate_up +16 .* yes  MISMATCH inductor$'
expect_grep "and fails" 'outputs agree with the fp32 product +3 of 4 rows; llama3_8b/gate_up tokens 16: MISMATCH inductor: FAIL$'
expect_exit 0 "a tuned row slower than Inductor" run --fake slow:4096x4096x16 --smoke --out "$TMP/slow"
expect_grep "is SLOWER" '^llama3_8b/o +16 .* yes  SLOWER$'
expect_exit 1 "a crashing worker" run --fake crash:inductor --smoke --out "$TMP/crash"
expect_grep "is loud" 'ERROR: round 1 inductor worker: exit 3, 4 rows missing'
expect_grep "and the rows lack its time" "PROBLEM: 4 rows lack a column's time"
expect_exit 1 "a hanging worker" run --fake hang:cublas --smoke --worker-timeout 2 --out "$TMP/hang"
expect_grep "is killed at --worker-timeout" 'round 1/1 cublas  : 0 of 4 rows in [0-9.]+ s, exit 124'
expect_exit 2 "a worker without its setup" run --fake setup:gemmtune --smoke --out "$TMP/setup"
expect_grep "is a setup error" 'SETUP ERROR: the gemmtune worker could not start as its column needs \(exit 2\)'
printf 'not a db\n' >"$TMP/bad.db"
expect_exit 2 "a malformed --db" run --fake ok --smoke --db "$TMP/bad.db" --out "$TMP/baddb"
expect_grep "stops at gemmtune run" 'SETUP ERROR: the gemmtune worker could not start .*\(exit 65\)'
expect_exit 0 "--db: no tune" run --fake ok --smoke --db "$TMP/ok/tuned.db" --out "$TMP/db"
expect_nogrep "tune did not run" '^tune:'
[ ! -e "$TMP/db/tune.log" ] && ok "no tune log" || bad "no tune log"

expect_exit 0 "the 70b rows at one token" run --fake ok --shapes 70b --tokens 1 --rounds 1 --out "$TMP/m70"
expect_exit 0 "the 8b rows at one token" run --fake ok --shapes 8b --tokens 1 --rounds 1 --out "$TMP/m8"
expect_exit 0 "--merge" python3 "$DVI" --merge "$TMP/m70/decode_vs_inductor.json" \
  "$TMP/m8/decode_vs_inductor.json" --csv "$TMP/merged.csv"
order=$(grep -o '^llama3_[0-9]*b/qkv' <<<"$OUT_TXT" | tr '\n' ' ')
[ "$order" = "llama3_8b/qkv llama3_70b/qkv " ] && ok "the union, in file order" \
  || bad "the union, in file order" "$order"
expect_grep "verdicts over the union" 'acceptance over 12 rows \(PARTIAL: 12 of the 84'
[ "$(wc -l <"$TMP/merged.csv")" = 13 ] && ok "merged CSV" || bad "merged CSV" "$(cat "$TMP/merged.csv")"
expect_exit 2 "--merge refuses a row twice" python3 "$DVI" --merge "$TMP/m8/decode_vs_inductor.json" \
  "$TMP/m8/decode_vs_inductor.json"
expect_grep "naming it" 'merge: llama3_8b/qkv tokens 1 is in'
finish
