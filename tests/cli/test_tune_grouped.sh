#!/usr/bin/env bash
# tune races the grouped_mm keys of its shapes file in a torch process (src/tools/tune_grouped.c
# running `python3 -m gemmtune.grouped`), without torch or a GPU: GEMMTUNE_PYTHON names a stand-in
# interpreter that answers the race's command line as the real module does (the lines asked for,
# a results file, a DB written with the package's torch-free rows.py). A key the stand-in wins
# becomes a row of tune's DB (explain hits it, the summary counts it, the geomean includes it); a
# key it does not win is unchanged with a kept line; a key it fails is failed with its note; a key
# it never reports is failed. Where the race cannot run (no interpreter, torch not importable, no
# CUDA device for torch, a race past its time limit, --no-grouped, a run on the CPU providers)
# every grouped key is listed with that reason in its own words and the other shapes are tuned
# as before. The planted-provider switch (GEMMTUNE_TEST_PROVIDERS) lets the CPU run race them.
# Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
unset GEMMTUNE_PYTHON GEMMTUNE_GROUPED_LIB || true

hdr='calls,time_us,share,entry,workspace,not_tunable,op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count'
# Three tunable grouped keys (lines 2, 3, 4), a marked one and a plain GEMM of the host.
printf '%s\n' "$hdr" \
  '3,36.000,0.400000,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,3584,2,1024,1024,1024,3584,8,3670016,0,0,none,1,cpu,2' \
  '3,30.000,0.300000,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,N,N,1024,32,3584,1024,3584,1024,8,3670016,0,0,none,1,cpu,2' \
  '2,20.000,0.200000,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,14336,16,4096,4096,4096,14336,8,58720256,0,0,none,1,cpu,2' \
  '1,5.000,0.050000,grouped_mm,0,bf16bf16_grouped_mm: a bias: no own kernel takes one yet,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,3584,16,1024,1024,1024,3584,8,3670016,0,0,none,1,cpu,2' \
  '4,5.000,0.050000,host,0,-,gemm,f32,f32,f32,f32,f32,f32,T,N,64,8,64,64,64,64,1,0,0,0,none,1,cpu,2' \
  >"$TMP/cap.csv"
touch "$TMP/libgemmtune_grouped.so" # the stand-in never loads it; tune only needs to find it
export GEMMTUNE_GROUPED_LIB="$TMP/libgemmtune_grouped.so"

# The stand-in interpreter: `FAKEPY -m gemmtune.grouped SHAPES --lines L,.. --lib LIB --db DB
# --results TSV --device D --rounds R --threshold T`. FAKE_MODE picks the behaviour.
cat >"$TMP/fake_race.py" <<'PY'
import argparse, os, sys, time
sys.path.insert(0, os.environ["FAKE_PKG"])
from gemmtune.grouped import rows as gr
mode = os.environ.get("FAKE_MODE", "race")
if mode == "notorch":
    sys.stderr.write("gemmtune.grouped: torch cannot be imported: No module named 'torch'\n")
    sys.exit(3)
if mode == "nodevice":
    print("gemmtune.grouped: no CUDA device: skipped")
    sys.exit(77)
if mode == "hang":
    time.sleep(600)
if mode == "nomodule":
    sys.stderr.write("ModuleNotFoundError: No module named 'gemmtune'\n")
    sys.exit(1)
ap = argparse.ArgumentParser()
ap.add_argument("shapes")
for o in ("--lines", "--lib", "--db", "--results", "--device", "--rounds", "--threshold"):
    ap.add_argument(o)
a = ap.parse_args(sys.argv[3:])
assert sys.argv[1:3] == ["-m", "gemmtune.grouped"], sys.argv
with open(os.environ["FAKE_ARGS"], "w") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
want = [int(x) for x in a.lines.split(",")]
rows = []
res = open(a.results, "w")
# Line 2 is won (torch 10 us, own 8 us); line 3 not (9.9 us); line 4 fails; others unreported.
for line, srow in gr.grouped_keys(a.shapes):
    if line not in want or line > 4:
        continue
    cells = gr.key_cells(srow)
    if line == 4:
        res.write("%d\tfailed\t10.000\t0.000\t-\ttorch._grouped_mm: planted failure\n" % line)
        continue
    own = 8.0 if line == 2 and mode != "lose" else 9.9
    results = [dict(instance="gt_sm90_grpd_bf16_t64x16x128_s4_nk", time_us=own, spread_pct=0.8,
                    error=1e-3, agree=True)]
    row, outcome, best, note = gr.decide(cells, 10.0, 1.0, results, float(a.threshold),
                                         int(a.rounds), "NVIDIA H200", 139, 1980)
    if row:
        rows.append(row)
    res.write("%d\t%s\t%.3f\t%.3f\t%s\t%s\n" % (line, outcome, 10.0, best["time_us"],
              "grouped/" + row["instance"] if row else "-", note))
res.close()
gr.write_db(a.db, rows, "NVIDIA H200", {"torch": "0.0-fake"})
PY
printf '#!/usr/bin/env bash\nexec python3 "%s" "$@"\n' "$TMP/fake_race.py" >"$TMP/fakepy"
chmod +x "$TMP/fakepy"
export FAKE_PKG="$SRC/python" FAKE_ARGS="$TMP/args.txt"
race=(env GEMMTUNE_TEST_PROVIDERS=1 GEMMTUNE_PYTHON="$TMP/fakepy")

# ---- the race runs: rows, kept lines, failures ------------------------------------------------
expect_exit 1 "tune races the grouped keys (one planted failure: exit 1)" "${race[@]}" \
  "$GT" tune --cpu --rounds 3 --no-calibration "$TMP/cap.csv" -o "$TMP/t.db"
expect_grep "the won key is improved, the winner the own instance" '^ +1  .* +10\.000 +8\.000 +1\.250 +- +improved +grouped/gt_sm90_grpd_bf16_t64x16x128_s4_nk$'
expect_grep "its baseline named" 'baseline torch\._grouped_mm'
expect_grep "the key not won is unchanged, with the race's reason" '^ +2  .* +10\.000 +9\.900 +1\.010 +- +unchanged +-$'
expect_grep "... in the race's words" 'did not beat the baseline by 3\.0%'
expect_grep "the failed key is failed with its note" '^ +3  .* failed '
expect_grep "... the note" 'torch\._grouped_mm: planted failure'
expect_grep "the marked grouped key is listed with its own reason" 'not tunable: bf16bf16_grouped_mm: a bias'
expect_grep "the host GEMM is tuned as before" '^ +5  '
expect_grep "the summary counts the grouped keys" 'Summary: 4 shapes tuned in .*: [0-9]+ improved, [0-9]+ unchanged, 1 failed'
expect_grep "the failure is listed" '^  line 4 \(.*\): torch\._grouped_mm: planted failure'
args=$(cat "$TMP/args.txt")
grep -q -- '--lines 2,3,4 ' <<<"$args" && ok "the race is asked for the three tunable lines only" \
  || bad "the race's --lines" "$args"
grep -q -- "--lib $TMP/libgemmtune_grouped.so" <<<"$args" && grep -q -- '--rounds 3 ' <<<"$args" \
  && grep -q -- '--threshold 3$' <<<"$args" && ok "... with the library, tune's rounds and threshold" \
  || bad "the race's arguments" "$args"
OUT_TXT=$(cat "$TMP/t.db")
[ "$(grep -c '^grouped_mm,' "$TMP/t.db")" = 1 ] && ok "one grouped row in tune's DB" \
  || bad "one grouped row in tune's DB" "$OUT_TXT"
expect_grep "the row is the race's: provider grouped against torch" '^grouped_mm,.*,3584,2,1024,.*,grouped,gemmtune-grouped=1,gt_sm90_grpd_bf16_t64x16x128_s4_nk,8,10,1\.25,.*torch\._grouped_mm,'
expect_grep "the unchanged key has a kept line" '^#kept\.[0-9a-f]{16}='
key1=$(python3 -c '
import sys; sys.path.insert(0, sys.argv[1])
from gemmtune.grouped import rows as gr
print(gr.key_text(gr.key_cells(next(gr.grouped_keys(sys.argv[2]))[1])))' "$SRC/python" "$TMP/cap.csv")
expect_exit 0 "explain finds the row for the captured key" "$GT" explain "$TMP/t.db" "$key1"
expect_grep "served by the own grouped instance" 'provider=grouped instance=gt_sm90_grpd_bf16_t64x16x128_s4_nk'

# ---- a re-tune the own instance no longer wins retires its row ---------------------------------
expect_exit 1 "re-tune into the same DB, torch now fastest on line 2" env FAKE_MODE=lose \
  "${race[@]}" "$GT" tune --cpu --rounds 3 --no-calibration "$TMP/cap.csv" -o "$TMP/t.db"
expect_grep "the key's outcome is retired" '^ +1  .* retired +-$'
expect_grep "... saying which choice and why" 'retired: its choice grouped/gt_sm90_grpd_bf16_t64x16x128_s4_nk no longer beats torch: best'
expect_grep "... and the summary counts it" ', 1 rows retired'
OUT_TXT=$(cat "$TMP/t.db")
expect_nogrep "the row is gone from the DB" '^grouped_mm,'

# ---- a race that breaks: its keys fail, naming why -----------------------------------------------
expect_exit 1 "the package not importable" env FAKE_MODE=nomodule "${race[@]}" "$GT" tune --cpu \
  --rounds 3 --no-calibration "$TMP/cap.csv" -o "$TMP/nm.db"
[ "$(grep -cE '^ +[123]  .* failed ' <<<"$OUT_TXT")" = 3 ] && ok "... each grouped key failed" \
  || bad "each grouped key failed" "$OUT_TXT"
expect_grep "... with the interpreter's last words" "exited 1: ModuleNotFoundError: No module named 'gemmtune'"

# ---- the race cannot run: every grouped key says why, the rest is tuned -------------------------
expect_exit 0 "no interpreter" env GEMMTUNE_TEST_PROVIDERS=1 GEMMTUNE_PYTHON="$TMP/no-such-python" \
  "$GT" tune --cpu --rounds 3 --no-calibration "$TMP/cap.csv" -o "$TMP/n1.db"
expect_grep "... named, with the variable that picks it" "cannot run $TMP/no-such-python: .*GEMMTUNE_PYTHON"
[ "$(grep -c 'cannot run' <<<"$OUT_TXT")" = 3 ] && ok "... for each of the three keys" \
  || bad "the reason on each key" "$OUT_TXT"
expect_grep "... and the host GEMM still tuned" '^ +5  '
expect_exit 0 "torch not importable" env FAKE_MODE=notorch "${race[@]}" "$GT" tune --cpu --rounds 3 \
  --no-calibration "$TMP/cap.csv" -o "$TMP/n2.db"
expect_grep "... in the race's words" "torch cannot be imported: No module named 'torch'"
expect_exit 0 "no CUDA device for torch" env FAKE_MODE=nodevice "${race[@]}" "$GT" tune --cpu \
  --rounds 3 --no-calibration "$TMP/cap.csv" -o "$TMP/n3.db"
expect_grep "... said" 'raced in torch\): gemmtune\.grouped: no CUDA device: skipped'
expect_exit 1 "a race past its time limit is stopped" env FAKE_MODE=hang "${race[@]}" "$GT" tune --cpu \
  --rounds 3 --no-calibration --shape-timeout 1 "$TMP/cap.csv" -o "$TMP/n4.db"
expect_grep "... and its keys fail saying so" 'did not reach this key: stopped at its time limit \(4 s\)'
expect_exit 0 "no library" env GEMMTUNE_GROUPED_LIB="$TMP/none.so" "${race[@]}" "$GT" tune --cpu \
  --rounds 3 --no-calibration "$TMP/cap.csv" -o "$TMP/n5.db"
expect_grep "... said" "no libgemmtune_grouped\\.so at $TMP/none\\.so \\(GEMMTUNE_GROUPED_LIB\\)"
expect_exit 0 "--no-grouped lists them unraced" "${race[@]}" "$GT" tune --cpu --rounds 3 \
  --no-calibration --no-grouped "$TMP/cap.csv" -o "$TMP/n6.db"
expect_grep "... saying so" 'raced in torch\): not raced \(--no-grouped\)'
expect_exit 0 "the CPU providers do not start a torch process" env GEMMTUNE_PYTHON="$TMP/fakepy" \
  "$GT" tune --cpu --rounds 3 --no-calibration "$TMP/cap.csv" -o "$TMP/n7.db"
expect_grep "... and say why" 'this run is on the CPU providers \(the race needs the GPU\)'
expect_exit 0 "--help teaches it" "$GT" tune --help
expect_grep "... the grouped race" 'python3 -m gemmtune\.grouped; GEMMTUNE_PYTHON names'
expect_grep "... and --no-grouped" '^  --no-grouped '
finish
