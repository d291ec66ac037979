#!/usr/bin/env bash
# The shim's side of the torch bridge (gemmtune_grouped_begin/end), without a GPU
# (GEMMTUNE_TEST_DEVICE): grouped calls are keyed with the rows bucketed (17 and 32 rows are one
# key), counted per key and written by capture as grouped_mm rows with entry grouped_mm; a call
# the own kernels cannot serve (a bias) is its own row with the reason; with no DB row every call
# goes to torch's function (begin never says "served"); GEMMTUNE_STATS names the decision.
# Skipped (77) where the shim is not built.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

SHIM="$(dirname "$GT")/libgemmtune_preload.so"
[ -f "$SHIM" ] || { echo "skip: $SHIM not built (CUDA off?)"; exit 77; }
command -v cc >/dev/null || { echo "skip: no cc"; exit 77; }
cc -std=c11 -I"$SRC/src" -o "$TMP/client" "$SRC/tests/cli/grouped_client.c" -ldl

expect_exit 0 "the calls complete under capture" env GEMMTUNE_TEST_DEVICE=sm_90:132 \
  GEMMTUNE_CAPTURE="$TMP/cap.csv" GEMMTUNE_STATS="$TMP/stats.csv" LD_PRELOAD="$SHIM" "$TMP/client"
expect_nogrep "no call is served without a DB row" ': 1$'
expect_grep "every call goes to torch's function, ended by the bridge" '^rows 2: 2$'
OUT_TXT=$(cat "$TMP/cap.csv")
expect_grep "2 rows: one key of three calls" '^3,.*,grouped_mm,0,-,grouped_mm,bf16,bf16,bf16,bf16,f32,f32,T,N,3584,2,1024,1024,1024,3584,8,3670016,0,0,none,1,sm_90,132,none,none,0,0,0$'
expect_grep "17 and 32 rows: one bucket of three calls" '^3,.*,grouped_mm,0,-,grouped_mm,.*,T,N,3584,32,1024,'
expect_grep "the biased call: its own row with the reason" '^1,.*,grouped_mm,0,bf16bf16_grouped_mm: a bias: no own kernel takes one yet,grouped_mm,'
expect_exit 0 "shapes reads the capture back" "$GT" shapes "$TMP/cap.csv"
expect_grep "in torch's terms" 'grouped_mm groups=8 rows<=32 N=3584 K=1024'
OUT_TXT=$(cat "$TMP/stats.csv")
expect_grep "stats: the key missed, under torch's function name" '^3,0,miss,-,-,bf16bf16_grouped_mm,grouped_mm,'
finish
