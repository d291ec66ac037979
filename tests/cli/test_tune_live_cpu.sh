#!/usr/bin/env bash
# The live confirmation on the CPU providers, where it cannot run: a winner of a host provider is
# never reached through the runtime's dispatch, so tune writes it on the harness's numbers and
# says so (the shape's note, the table's live column, csv/json, the DB's live column, the
# summary), never silently; --no-live-confirm records 'off'; check --live says why it does not
# replay such a row; --help explains the step; the live columns survive merge, and a DB of the
# format before them still reads and is rewritten with them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$TMP/shapes.csv"
printf 'model,proj,tokens,out_features,in_features\nt,a,8,192,128\nt,b,64,256,128\n' >"$shapes"
db="$TMP/t.db"

# ---- --help -----------------------------------------------------------------------------------
expect_exit 0 "tune --help" "$GT" tune --help
expect_grep "help explains the confirmation" 'Before a winner is written it is confirmed live'
expect_grep "help names the entry points it is timed against" 'cublasLtMatmul with cuBLASLt.s heuristic algorithm'
expect_grep "help says what an unconfirmed winner becomes" "outcome 'unconfirmed', and the key's kept line"
expect_grep "help lists --no-live-confirm" '^  --no-live-confirm '
expect_exit 0 "check --help" "$GT" check --help
expect_grep "check's help: the plain side is the key's entry point" 'unmodified entry point the key was issued through'
expect_grep "check's help: epilogue rows are replayed" 'Epilogue rows \(bias, relu, gelu\)'

# ---- tune: skipped, with the reason --------------------------------------------------------------
expect_exit 0 "tune on the CPU providers" "$GT" tune --cpu --rounds 5 "$shapes" -o "$db"
expect_grep "the header says the host has no live confirmation" '; no live confirmation on the host \(no application call reaches it\)$'
expect_grep "the table has a live column" '^shape +label / mapping +baseline_us +best_us +speedup +live +outcome +winner$'
if ! grep -q '^gemm,' "$db"; then
  ok "skipped: tune found no improving candidate on this machine"
  finish
  exit $?
fi
expect_grep "an improved shape's live column says skip" '^ +[0-9]+ .* skip +improved +cpu/'
expect_grep "its note says why" '\| live confirmation skipped: cpu runs on the host: no application call reaches it through the runtime.s dispatch'
expect_grep "the summary counts it" '^Live confirmation of [0-9]+ winners? \(the runtime.s dispatch against the entry point, CUDA graphs\): [0-9]+ skipped \(written on the harness.s numbers\)$'
expect_grep "and gives the reason" '^  skipped because: cpu runs on the host'
expect_nogrep "nothing is called confirmed" 'confirmed live at|live geomean'
awk -F, '$1 == "gemm" { n++; if ($49 != "skipped" || $50 != 0 || $51 != 0 || $52 != 0) bad = 1 }
  END { exit bad || !n }' "$db" && ok "every row records live 'skipped' and no live times" \
  || bad "a row's live columns are wrong" "$(cat "$db")"

# ---- csv and json carry it ------------------------------------------------------------------------
expect_exit 0 "tune --format csv" "$GT" tune --cpu --rounds 5 --format csv "$shapes" -o "$TMP/csv.db"
expect_grep "csv header ends with the live columns" ',search,live,live_us,live_baseline_us,live_speedup$'
if grep -q '^gemm,' "$TMP/csv.db"; then
  expect_grep "an improved row's live cells" ',improved,cpu/[^,]*,.*,skipped,-,-,-$'
fi
expect_exit 0 "tune --format json" "$GT" tune --cpu --rounds 5 --format json "$shapes" -o "$TMP/json.db"
if grep -q '^gemm,' "$TMP/json.db"; then
  expect_grep "json names the live outcome" '"live": *"skipped"'
fi

# ---- --no-live-confirm ------------------------------------------------------------------------------
expect_exit 0 "tune --no-live-confirm" "$GT" tune --cpu --rounds 5 --no-live-confirm "$shapes" -o "$TMP/off.db"
expect_grep "the header says it is off" '; live confirmation off \(--no-live-confirm\)$'
if grep -q '^gemm,' "$TMP/off.db"; then
  expect_grep "the note says so" '\| live confirmation off \(--no-live-confirm\): written on the harness.s [0-9.]+x'
  expect_grep "the summary says so" ': [0-9]+ off \(--no-live-confirm; written on the harness.s numbers\)$'
  awk -F, '$1 == "gemm" { n++; if ($49 != "off" || $52 != 0) bad = 1 } END { exit bad || !n }' \
    "$TMP/off.db" && ok "the rows record live 'off'" || bad "live column with --no-live-confirm" "$(cat "$TMP/off.db")"
fi

# ---- check --live on a host row: not replayed, saying why -----------------------------------------
expect_exit 0 "check --live on the CPU DB" "$GT" check --cpu --rounds 5 --tolerance 400 --live "$db"
expect_grep "the live replay says why not" 'live: not replayed: cpu runs on the host'
expect_nogrep "no row fails live" 'fails live'

# ---- the columns survive merge; a format-3 DB reads and is rewritten with them --------------------
awk -F, -v OFS=, '$1 == "gemm" && !done { $49 = "confirmed"; $50 = 90; $51 = 100; $52 = 1.11111; done = 1 } { print }' \
  "$db" >"$TMP/confirmed.db"
expect_exit 0 "merge a DB with a confirmed row" "$GT" merge "$TMP/confirmed.db" -o "$TMP/merged.db"
grep -q ',confirmed,90,100,1.11111$' "$TMP/merged.db" && ok "merge keeps the live columns" \
  || bad "live columns lost in merge" "$(cat "$TMP/merged.db")"
line=$(grep '^gemm,' "$TMP/confirmed.db" | head -1)
lin="$(cut -d, -f11 <<<"$line"),$(cut -d, -f10 <<<"$line"),$(cut -d, -f12 <<<"$line")"
expect_exit 0 "explain a confirmed row" "$GT" explain "$TMP/confirmed.db" --cpu --linear "$lin"
expect_grep "explain gives its live times" '^  confirmed live: 90\.000 us served by the runtime vs 100\.000 us through the entry point \(1\.111x\)$'
expect_exit 0 "explain a skipped row" "$GT" explain "$db" --cpu --linear "$lin"
expect_grep "explain says it was skipped" '^  live confirmation: skipped when tuned'
awk -F, -v OFS=, '$1 == "gemm" && !done { $49 = "confirmed"; $50 = 110; $51 = 100; $52 = 0.909091; done = 1 } { print }' \
  "$db" >"$TMP/slower.db"
expect_exit 65 "a row slower live than its entry point is refused" "$GT" merge "$TMP/slower.db" -o "$TMP/never.db"
expect_grep "naming the field" "field 'live_us': 110 is not below live_baseline_us 100"
{ echo '#gemmtune-db 3'; tail -n +2 "$db" | sed -E '/^(op|gemm),/ s/(,[^,]*){4}$//'; } >"$TMP/v3.db"
expect_exit 0 "merge reads a format-3 DB" "$GT" merge "$TMP/v3.db" -o "$TMP/v4.db"
[ "$(head -1 "$TMP/v4.db")" = '#gemmtune-db 4' ] && grep -q ',-,0,0,0$' "$TMP/v4.db" \
  && ok "and writes it as format 4, its rows recording no confirmation" || bad "v3 -> v4" "$(cat "$TMP/v4.db")"
finish
