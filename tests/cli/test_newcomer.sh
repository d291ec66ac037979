#!/usr/bin/env bash
# What a new user meets first: every --help has Examples and lists only the options that apply;
# exit codes as the README documents them (a missing file 66, an unknown provider 64, capture the
# command's own); the no-GPU notice never before a usage error and never with --cpu; explain with
# partial keys and --format; progress lines with the run's ETA when stderr is not a terminal;
# --estimate and --budget; gemmtune run deploying a DB with nothing else changed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

# ---- help ---------------------------------------------------------------------------------------
for c in capture shapes baseline list profile tune merge explain check verify run report; do
  expect_exit 0 "$c --help" "$GT" "$c" --help
  expect_grep "$c --help has Examples" '^Examples:'
  expect_grep "$c --help gives exit codes" 'Exit status'
done
expect_exit 0 "top-level help" "$GT" --help
expect_grep "top-level help has Examples" '^Examples:'
expect_grep "report listed" '^  report '
"$GT" shapes --help >"$TMP/h" 2>&1
OUT_TXT=$(cat "$TMP/h")
expect_nogrep "shapes --help has no measurement options" '--rounds|--warm|--budget|--finalists|--providers'
expect_grep "shapes --help keeps the row defaults" '--dtype'
expect_exit 64 "shapes refuses --rounds" "$GT" shapes --rounds 5 "$SRC/examples/small_cpu.csv"
"$GT" list --help >"$TMP/h" 2>&1
OUT_TXT=$(cat "$TMP/h")
expect_nogrep "list --help has no timing options" '--rounds|--warm|--budget|--settle|--seed'
expect_grep "list --help has --providers" '--providers'
"$GT" explain --help >"$TMP/h" 2>&1
OUT_TXT=$(cat "$TMP/h")
expect_grep "explain --help has --format" '--format'

# ---- exit codes -----------------------------------------------------------------------------------
for c in "tune $TMP/nope.csv -o $TMP/x.db" "shapes $TMP/nope.csv" "baseline $TMP/nope.csv" \
         "explain $TMP/nope.db --linear 1,64,64" "merge $TMP/nope.db $TMP/nope2.db -o $TMP/m.db" \
         "check $TMP/nope.db" "report $TMP/nope.db -o $TMP/r.html" "run --db $TMP/nope.db -- true"; do
  # shellcheck disable=SC2086
  expect_exit 66 "missing file exits 66: ${c%% *}" "$GT" $c
  expect_grep "names the file (${c%% *})" 'nope.*No such file'
  expect_nogrep "no GPU notice before it (${c%% *})" 'no usable GPU'
done
expect_exit 64 "unknown provider exits 64" "$GT" tune "$SRC/examples/small_cpu.csv" -o "$TMP/x.db" --providers nosuch
expect_grep "names the provider and the known ones" "no provider 'nosuch'; this build has .*cpu"
expect_nogrep "no GPU notice before a usage error" 'no usable GPU'
expect_exit 64 "unknown provider in a list exits 64" "$GT" list --cpu --linear 1,64,64 --providers cpu,nosuch
expect_exit 64 "usage error exits 64 without a GPU notice" "$GT" profile --linear 1,2
expect_nogrep "no GPU notice before the usage error" 'no usable GPU'
expect_exit 0 "--cpu says nothing about the GPU" "$GT" shapes --cpu "$SRC/examples/small_cpu.csv"
expect_nogrep "no GPU notice with --cpu" 'no usable GPU'
if [ -f "$(dirname "$GT")/libgemmtune_preload.so" ]; then
  expect_exit 0 "capture of a command without GEMMs exits as the command did" "$GT" capture -o "$TMP/c.csv" -- true
  expect_grep "and says nothing was captured" 'no capture was written'
  expect_exit 3 "capture exits with the command's own status" "$GT" capture -o "$TMP/c.csv" -- sh -c 'exit 3'
else
  expect_exit 69 "capture without the shim exits 69" "$GT" capture -- true
fi

# ---- the row-major file format ---------------------------------------------------------------------
printf 'layout,M,N,K\n"mk,nk",16,256,256\n"km,kn",8,64,32\n' >"$TMP/rm.csv"
expect_exit 0 "row-major shapes file reads" "$GT" shapes --cpu "$TMP/rm.csv"
expect_grep "both rows mapped" 'km,kn M=8 N=64 K=32 -> NT'

# ---- tune: progress, estimate, budget --------------------------------------------------------------
printf 'model,proj,tokens,out_features,in_features\nt,a,8,256,256\nt,b,16,256,256\n' >"$TMP/s.csv"
set +e
GEMMTUNE_PROGRESS_S=0 "$GT" tune --cpu --rounds 3 "$TMP/s.csv" -o "$TMP/p.db" >"$TMP/p.out" 2>"$TMP/p.err"
rc=$?
set -e
[ "$rc" = 0 ] && ok "tune runs with stderr in a file" || bad "tune exited $rc" "$(cat "$TMP/p.err")"
OUT_TXT=$(cat "$TMP/p.err")
expect_grep "a progress line per shape, not on a terminal" '^gemmtune: \[2/2\] t/b: '
expect_grep "progress lines carry the run's ETA" '\| run [0-9]+s, ETA [0-9]+s'
set +e
"$GT" tune --cpu --rounds 3 "$TMP/s.csv" -o "$TMP/q.db" >"$TMP/q.out" 2>"$TMP/q.err"
set -e
n=$(grep -c '^gemmtune: ' "$TMP/q.err" || true)
[ "$n" -le 6 ] && ok "rate-limited: $n progress lines for 2 short shapes" || bad "$n progress lines" "$(cat "$TMP/q.err")"
t0=$(date +%s)
expect_exit 0 "--estimate" "$GT" tune --cpu "$TMP/s.csv" -o "$TMP/e.db" --estimate
[ $(($(date +%s) - t0)) -le 20 ] && ok "--estimate takes seconds" || bad "--estimate took $(($(date +%s) - t0)) s"
expect_grep "estimate summary" '^Estimate: about [0-9]+ s: .* prune passes and .* re-time rounds'
[ ! -e "$TMP/e.db" ] && ok "--estimate writes no DB" || bad "--estimate wrote a DB"
expect_exit 0 "--budget 0.000001" "$GT" tune --cpu --rounds 3 "$TMP/s.csv" -o "$TMP/b.db" --budget 0.000001
expect_grep "the candidates the budget left out are counted" 'prune pass stopped at --budget 0\.0 s: [0-9]+ of [0-9]+ candidates not reached'

# ---- explain: partial keys, --format -----------------------------------------------------------------
if grep -q '^gemm,' "$TMP/p.db"; then
  row=$(grep '^gemm,' "$TMP/p.db" | head -1)
  m=$(cut -d, -f10 <<<"$row"); n=$(cut -d, -f11 <<<"$row"); k=$(cut -d, -f12 <<<"$row")
  expect_exit 0 "a partial key hits (device from the DB)" "$GT" explain "$TMP/p.db" "transa=T,m=$m,n=$n,k=$k"
  expect_grep "HIT" '^HIT '
  expect_exit 0 "explain --format json" "$GT" explain "$TMP/p.db" --format json "transa=T,m=$m,n=$n,k=$k"
  expect_grep "json row" '"result": "hit"'
  expect_exit 1 "explain --format csv of a miss exits 1" "$GT" explain "$TMP/p.db" --format csv "transa=T,m=$m,n=$((n + 1)),k=$k"
  expect_grep "csv names the differing field" "^miss,.*n: $((n + 1)) vs $n"
else
  ok "explain checks skipped: no shape improved on this machine"
fi
expect_exit 64 "explain with a bad key exits 64" "$GT" explain "$TMP/p.db" "m=x"

# ---- run: LD_PRELOAD and GEMMTUNE_DB, nothing else -----------------------------------------------------
shim=$(ls /lib/x86_64-linux-gnu/libm.so.6 /usr/lib64/libm.so.6 2>/dev/null | head -1 || true)
if [ -n "$shim" ] && [ -f "$TMP/p.db" ]; then
  env -u LD_PRELOAD -u GEMMTUNE_DB env | sort >"$TMP/env.before"
  expect_exit 0 "run executes the command" env -u LD_PRELOAD -u GEMMTUNE_DB "$GT" run --db "$TMP/p.db" --lib "$shim" -- env
  sort <<<"$OUT_TXT" >"$TMP/env.after"
  changed=$(comm -13 "$TMP/env.before" "$TMP/env.after" | cut -d= -f1 | sort | tr '\n' ' ')
  [ "$changed" = "GEMMTUNE_DB LD_PRELOAD " ] && ok "run changes LD_PRELOAD and GEMMTUNE_DB only" \
    || bad "run changed: $changed" "$(comm -3 "$TMP/env.before" "$TMP/env.after")"
  expect_grep "GEMMTUNE_DB is absolute" "^GEMMTUNE_DB=/.*p\.db$"
  expect_exit 7 "run exits with the command's status" "$GT" run --db "$TMP/p.db" --lib "$shim" -- sh -c 'exit 7'
  printf 'not a db\n' >"$TMP/bad.db"
  expect_exit 65 "run refuses a malformed DB" "$GT" run --db "$TMP/bad.db" --lib "$shim" -- true
fi
expect_exit 64 "run without --db" "$GT" run -- true
finish
