#!/usr/bin/env bash
# Misuse that changes nothing says so (src/tools/cli_env.c over core/gt_envvars.c): a misspelt
# GEMMTUNE_* variable (GEMMTUNE_DB_FILE, GEMMTUNE_DBS, and the near-miss prefix GEMTUNE_DB) is
# named with the nearest known one by every command but run and capture (whose command's shim says
# it: test_preload_passthrough.sh); a shim variable set where no shim is loaded is named; run,
# capture and verify say when the command they start will not have the shim in effect (a
# launcher that drops the environment, a set-user-ID or static program, a script run by one, a
# shim path LD_PRELOAD splits) and when the environment's GEMMTUNE_DB or GEMMTUNE_CAPTURE is not
# what the command gets. The normal path prints nothing. The stand-in shim is an empty shared
# library (a C compiler is needed for it; without one those checks are skipped).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
shapes="$SRC/examples/small_cpu.csv"
unset GEMMTUNE_DB GEMMTUNE_CAPTURE GEMMTUNE_STATS GEMMTUNE_LOG LD_PRELOAD || true

# ---- misspelt variables ------------------------------------------------------------------------
for typo in GEMMTUNE_DB_FILE GEMMTUNE_DBS GEMTUNE_DB gemmtune_db; do
  expect_exit 0 "shapes runs with $typo set" env "$typo=/x.db" "$GT" shapes --cpu "$shapes"
  expect_grep "$typo is named with GEMMTUNE_DB" \
    "^gemmtune shapes: warning: $typo is not a gemmtune variable and is ignored; did you mean GEMMTUNE_DB "
done
expect_exit 0 "a misspelt variable is said once" env GEMMTUNE_LGO=1 "$GT" shapes --cpu "$shapes"
[ "$(grep -c 'GEMMTUNE_LGO is not' <<<"$OUT_TXT")" = 1 ] && ok "... exactly once, naming GEMMTUNE_LOG" \
  || bad "GEMMTUNE_LGO warned other than once" "$OUT_TXT"
expect_grep "the nearest of GEMMTUNE_LGO is GEMMTUNE_LOG" 'did you mean GEMMTUNE_LOG '
expect_exit 0 "known and other tools' variables" \
  env GEMMTUNE_SEED=3 GEMMTUNE_PROGRESS_S=5 GEMM_THREADS=2 "$GT" shapes --cpu "$shapes"
expect_nogrep "... are not warned about" 'warning'
expect_exit 0 "--help with a misspelt variable" env GEMMTUNE_DB_FILE=/x.db "$GT" shapes --help
expect_nogrep "... warns about nothing" 'warning'

# ---- a shim variable where no shim is loaded -----------------------------------------------------
expect_exit 0 "shapes with GEMMTUNE_DB set" env GEMMTUNE_DB=/x.db "$GT" shapes --cpu "$shapes"
expect_grep "says GEMMTUNE_DB does nothing here" \
  "warning: GEMMTUNE_DB is set, but this process does not have the preload shim loaded \(LD_PRELOAD is not set\)"
expect_grep "... and how to deploy" "deploy with 'gemmtune run --db DB -- CMD'"
printf 'model,proj,tokens,out_features,in_features\nt,a,1,64,64\n' >"$TMP/tiny.csv"
expect_exit 0 "tune with GEMMTUNE_DB and GEMMTUNE_STATS set" \
  env GEMMTUNE_DB=/x.db GEMMTUNE_STATS=/s.csv "$GT" tune --cpu --rounds 3 "$TMP/tiny.csv" -o "$TMP/t.db"
expect_grep "names both" 'warning: GEMMTUNE_DB, GEMMTUNE_STATS are set, but this process does not have the preload shim loaded'
expect_exit 0 "GEMMTUNE_LOG alone (the dispatch API reads it too)" env GEMMTUNE_LOG=1 "$GT" shapes --cpu "$shapes"
expect_nogrep "... is not a shim-only variable" 'warning'

# ---- run, capture, verify ------------------------------------------------------------------------
# An older DB (the header before the floor columns, no rows): it reads, and run deploys it.
{
  echo '#gemmtune-db 1'
  echo 'op,a_type,b_type,c_type,d_type,compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,stride_c,epilogue,beta_zero,arch,sm_count,provider,lib,instance,time_us,baseline_us,speedup,error,error_bound,timing,rounds,spread_pct,sm_clock_mhz,splitk_searched,throttled,baseline'
} >"$TMP/old.db"
CC=${CC:-cc}
mkdir -p "$TMP/lib" "$TMP/a b" "$TMP/bin"
if command -v "$CC" >/dev/null 2>&1 && echo 'int gt_stand_in;' >"$TMP/empty.c" &&
  "$CC" -shared -fPIC "$TMP/empty.c" -o "$TMP/lib/libgemmtune_preload.so" 2>/dev/null; then
  SHIM="$TMP/lib/libgemmtune_preload.so"
  cp "$SHIM" "$TMP/a b/libgemmtune_preload.so"
  expect_exit 0 "run of an ordinary command" "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- true
  [ -z "$OUT_TXT" ] && ok "... says nothing" || bad "the normal path printed something" "$OUT_TXT"
  expect_exit 0 "run with another GEMMTUNE_DB in the environment" \
    env GEMMTUNE_DB=/other.db "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- true
  expect_grep "says the command gets --db instead" 'note: GEMMTUNE_DB=/other.db from the environment is not what the command gets: run sets it to the --db list'
  expect_exit 0 "run with a misspelt variable" env GEMMTUNE_DB_FILE=/x.db "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- true
  expect_nogrep "... leaves it to the shim in the command" 'GEMMTUNE_DB_FILE'
  expect_exit 0 "run -- env -i" "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- env -i true
  expect_grep "says env -i empties the environment" 'warning: env -i starts the command with an empty environment, so the shim is not in effect there'
  printf '#!/bin/sh\nexit 0\n' >"$TMP/bin/sudo" && chmod +x "$TMP/bin/sudo"
  expect_exit 0 "run -- sudo" env PATH="$TMP/bin:$PATH" "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- sudo true
  expect_grep "says sudo resets the environment" 'warning: sudo resets the environment of what it starts'
  expect_exit 0 "run with a shim path holding a space" "$GT" run --db "$TMP/old.db" --lib "$TMP/a b/libgemmtune_preload.so" -- true
  expect_grep "says LD_PRELOAD splits it" "holds a ' ', at which LD_PRELOAD splits it"
  if printf 'int main(void){return 0;}\n' >"$TMP/st.c" && "$CC" -static "$TMP/st.c" -o "$TMP/static_true" 2>/dev/null; then
    expect_exit 0 "run of a static program" "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- "$TMP/static_true"
    expect_grep "says it is statically linked" 'static_true is statically linked: no loader runs, so LD_PRELOAD does nothing'
    printf '#!%s\n' "$TMP/static_true" >"$TMP/script" && chmod +x "$TMP/script"
    expect_exit 0 "run of a script a static program interprets" "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- "$TMP/script"
    expect_grep "names the interpreter" "script runs .*static_true, which is statically linked"
  else
    ok "static program: skipped (no static libc here)"
  fi
  if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    cp "$(type -P true)" "$TMP/bin/suid_true" && chown nobody "$TMP/bin/suid_true" && chmod 4755 "$TMP/bin/suid_true"
    chmod 755 "$TMP" "$TMP/bin"
    expect_exit 0 "run of a set-user-ID program of another owner" "$GT" run --db "$TMP/old.db" --lib "$SHIM" -- "$TMP/bin/suid_true"
    expect_grep "says the loader ignores LD_PRELOAD" 'suid_true is set-user-ID: the loader ignores LD_PRELOAD for it'
  elif [ -u /usr/bin/passwd ] && [ "$(id -u)" != 0 ]; then
    expect_exit 0 "run --help is unaffected" "$GT" run --help
    ok "set-user-ID: not run as root; /usr/bin/passwd is not executed here"
  else
    ok "set-user-ID: skipped"
  fi
  expect_exit 0 "capture -- env -i (the command's exit status)" \
    env GEMMTUNE_CAPTURE=/elsewhere.csv "$GT" capture -o "$TMP/cap.csv" --lib "$SHIM" -- env -i true
  expect_grep "capture says env -i empties the environment" 'gemmtune capture: warning: env -i starts the command'
  expect_grep "capture says GEMMTUNE_CAPTURE is replaced" 'note: GEMMTUNE_CAPTURE=/elsewhere.csv from the environment is not what the command gets: capture sets it to -o'
  expect_exit 1 "verify -- env -i (unverified)" \
    env GEMMTUNE_LOG=1 GEMMTUNE_DB_FILE=/x.db "$GT" verify --db "$TMP/old.db" --lib "$SHIM" --no-e2e -- env -i true
  expect_grep "verify says env -i empties the environment" 'gemmtune verify: warning: env -i starts the command'
  expect_grep "verify names the misspelt variable itself (the command's output goes to a log)" \
    'gemmtune verify: warning: GEMMTUNE_DB_FILE is not a gemmtune variable'
  expect_grep "verify says GEMMTUNE_LOG is set per run" 'note: GEMMTUNE_LOG=1 from the environment is not what the command gets: verify sets or clears it'
else
  ok "run, capture, verify: skipped (no C compiler for the stand-in shim)"
fi
finish
