#!/usr/bin/env bash
# The roofline floor and the search budget it sets, on the CPU providers: tune prints each shape's
# floor with the baseline's and the winner's share of it and the rule that stopped its search, in
# the table and in csv/json, and DB rows record the floor; a shape whose baseline is at its floor
# (the host's roof planted low with GEMMTUNE_CPU_PEAK_*) gets the quick race only; the planted
# space that gains 1% per widening (GEMMTUNE_TEST_PROVIDERS=widen) ends after three widenings by
# the no-gain rule; --floor-threshold off, --search quick|full and --exhaustive do what they say;
# profile --prune gives every cut its reason; bench/floor_budget.sh's CPU dry run reports both runs;
# bad values are usage errors.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$TMP/shapes.csv"
printf 'model,proj,tokens,out_features,in_features\nt,a,1,192,128\nt,b,64,256,128\n' >"$shapes"
# (Each widening gains 1%: on a loaded machine the printed gain may read 1.1%, which the checks
# allow; the rule and the count of widenings are exact.)
# The widening problem: 64 tokens x 128 x 256 in bf16. The naive baseline takes several ms here,
# the planted candidates 300 us x 0.99^group (computing nothing: the gate rejects them);
# --max-candidates 1 leaves cpu its baseline alone.
printf 'model,proj,tokens,out_features,in_features\nw,x,64,128,256\n' >"$TMP/widen.csv"
WIDEN=(--cpu --rounds 3 --providers cpu,testonly --max-candidates 1 --widen-step 8)

# ---- floors in the output and in the DB ---------------------------------------------------------
expect_exit 0 "tune on the CPU providers" "$GT" tune --cpu --rounds 3 "$shapes" -o "$TMP/t.db"
expect_grep "each shape's floor, with the baseline's and the winner's share" \
  '^ +floor [0-9.e+]+ us: baseline [0-9.]+% and winner [0-9.]+% of the (bandwidth|compute) floor'
expect_grep "the host's roof is one the cpu has (the cpu space has nothing to widen into)" \
  '\| search: quick pass; stopped: space exhausted: the full space holds nothing the quick pass did not race'
expect_grep "the summary gives the tuned geomean" '^Tuned geomean: [0-9.]+x over 2 searched shapes'
expect_grep "the summary counts the rules" '^Search stopped by: space exhausted 2 \(0 widenings in all\)'
grep -q '^op,.*,device_mem_gib,floor_us,floor_bound,floor_pct,scale_a,scale_b,fast_accum,scale_d,amax_d,live,live_us,live_baseline_us,live_speedup$' "$TMP/t.db" && ok "the DB header has the floor columns, then the fp8 key columns, then the live ones" \
  || bad "no floor columns in the DB header" "$(head -5 "$TMP/t.db")"
awk -F, '$1=="gemm" { n++; if (!($41 > 0) || ($42 != "bandwidth" && $42 != "compute")) bad=1;
  want = 100 * $41 / $27; if ($43 < 0.999 * want || $43 > 1.001 * want) bad=1 }
  END { exit bad || !n }' "$TMP/t.db" && ok "every row records its floor, bound and the winner's share" \
  || bad "a row's floor columns are wrong" "$(cat "$TMP/t.db")"
expect_exit 0 "tune --format csv" "$GT" tune --cpu --rounds 3 --format csv "$shapes" -o "$TMP/csv.db"
expect_grep "csv carries the floor and the search" \
  '^shape,label,mapping,baseline_us,best_us,speedup,outcome,winner,note,floor_us,floor_bound,baseline_floor_pct,winner_floor_pct,search_stop,widenings,search,live,live_us,live_baseline_us,live_speedup$'
expect_grep "csv rows say the rule" ',space exhausted,0,search: quick pass'
expect_exit 0 "tune --format json" "$GT" tune --cpu --rounds 3 --format json "$shapes" -o "$TMP/json.db"
expect_grep "json carries the winner's share of the floor" '"winner_floor_pct": *[0-9.]+'
expect_grep "json names the rule" '"search_stop": *"space exhausted"'

# ---- the floor rule: a baseline at its floor gets the quick race only ---------------------------
expect_exit 0 "tune with the host's roof planted below every time" \
  env GEMMTUNE_TEST_PROVIDERS=widen GEMMTUNE_CPU_PEAK_GFLOPS=0.001 GEMMTUNE_CPU_PEAK_GBPS=0.001 \
  "$GT" tune "${WIDEN[@]}" "$TMP/widen.csv" -o "$TMP/floor.db"
expect_grep "the quick race only, by the floor rule" \
  '\| search: quick race only; stopped: floor: baseline at [0-9]+% of the (bandwidth|compute) floor .*the rule: within 10%'
expect_grep "the summary counts it" '^Search stopped by: floor 1 \(0 widenings in all\)'
expect_exit 0 "the same with --floor-threshold off" \
  env GEMMTUNE_TEST_PROVIDERS=widen GEMMTUNE_CPU_PEAK_GFLOPS=0.001 GEMMTUNE_CPU_PEAK_GBPS=0.001 \
  "$GT" tune "${WIDEN[@]}" --floor-threshold off "$TMP/widen.csv" -o "$TMP/floor_off.db"
expect_grep "... widens" 'search: quick pass \+ [0-9]+ widenings'

# ---- the no-gain rule: 1% per widening ends after three -------------------------------------------
expect_exit 0 "tune of the planted widening space" env GEMMTUNE_TEST_PROVIDERS=widen \
  "$GT" tune "${WIDEN[@]}" "$TMP/widen.csv" -o "$TMP/widen.db"
expect_grep "three widenings, then the no-gain rule" \
  'search: quick pass \+ 3 widenings \(\+56 candidates, 192 not searched\); stopped: no-gain: 3 widenings in a row gained under 2% \(1\.[0-9]%, 1\.[0-9]%, 1\.[0-9]%\)'
expect_nogrep "no planted candidate wins" 'improved +testonly'
expect_exit 0 "the same as json" env GEMMTUNE_TEST_PROVIDERS=widen \
  "$GT" tune "${WIDEN[@]}" --format json "$TMP/widen.csv" -o "$TMP/widen_json.db"
expect_grep "json: the rule" '"search_stop": *"no-gain"'
expect_grep "json: the widenings" '"widenings": *3'

# ---- one pass when asked --------------------------------------------------------------------------
expect_exit 0 "--search quick" env GEMMTUNE_TEST_PROVIDERS=widen \
  "$GT" tune "${WIDEN[@]}" --search quick "$TMP/widen.csv" -o "$TMP/quick.db"
expect_grep "the default space in one pass" '\| search: one pass over the default space'
expect_exit 0 "--search full" env GEMMTUNE_TEST_PROVIDERS=widen \
  "$GT" tune "${WIDEN[@]}" --search full "$TMP/widen.csv" -o "$TMP/full.db"
expect_grep "the full space in one pass" '\| search: one pass over the full space'

# ---- profile --prune: every cut says why ----------------------------------------------------------
expect_exit 0 "profile --prune" env GEMMTUNE_TEST_PROVIDERS=1 \
  "$GT" profile --cpu --rounds 3 --linear 64,256,512 --prune --finalists 2
expect_grep "pruned candidates say by how much" '^pruned .*[0-9.]+x the best quick time \([0-9.]+ us vs [0-9.]+ us, '
expect_grep "the floor line" '^Floor: [0-9.e+]+ us, (bandwidth|compute)-bound .*: baseline [0-9.]+% and best [0-9.]+% of the (bandwidth|compute) floor'
expect_grep "the search line" '^Search: '
expect_exit 0 "profile (every candidate)" "$GT" profile --cpu --rounds 3 --linear 8,128,128 --format csv
expect_grep "csv: the share of the floor and the floor per row" '^disposition,time_us,spread_pct,tflops,gbps,floor_pct,error,provider,instance,note,floor_us,floor_bound$'

# ---- bench/floor_budget.sh: its CPU dry run (on the H200 it compares the two over the corpus) ---
set +e
OUT_TXT=$(DRY=1 CORPUS="$shapes" bash "$SRC/bench/floor_budget.sh" "$TMP/fb" "$(dirname "$GT")" 2>&1)
fb=$?
set -e
[ "$fb" = 0 ] || [ "$fb" = 1 ] && ok "floor_budget.sh dry run ends with a verdict (exit $fb)" \
  || bad "floor_budget.sh dry run: exit $fb" "$OUT_TXT"
expect_grep "it prints the floor-aware run's time and geomean" '^  floor: total [0-9.]+ s, tuned geomean [0-9.]+x'
expect_grep "... and the plain run's" '^  plain: total [0-9.]+ s, tuned geomean [0-9.]+x'
expect_grep "... and the comparison" '^geomean: floor [0-9.]+x, plain [0-9.]+x: floor / plain = [0-9.]+'
[ -s "$TMP/fb/floor.out" ] && [ -s "$TMP/fb/plain.out" ] && ok "its logs are in the results folder" \
  || bad "floor_budget.sh left no logs" "$(ls "$TMP/fb")"

# ---- usage --------------------------------------------------------------------------------------
expect_exit 64 "--search bogus" "$GT" tune --cpu --search bogus "$shapes" -o "$TMP/x.db"
expect_grep "names the modes" 'floor, quick or full'
expect_exit 64 "--floor-threshold 100" "$GT" tune --cpu --floor-threshold 100 "$shapes" -o "$TMP/x.db"
expect_exit 64 "--floor-threshold abc" "$GT" tune --cpu --floor-threshold abc "$shapes" -o "$TMP/x.db"
expect_exit 64 "--widen-step 0" "$GT" tune --cpu --widen-step 0 "$shapes" -o "$TMP/x.db"
expect_exit 0 "tune --help" "$GT" tune --help
expect_grep "help: --search" '--search floor\|quick\|full'
expect_grep "help: --floor-threshold" '--floor-threshold PCT'
expect_grep "help: --widen-step" '--widen-step N'
finish
