#!/usr/bin/env bash
# Calibration on the CPU providers: every shard of one sweep times the same reference shape
# before and after its shapes and writes it in its #calibration lines (tune --no-calibration
# writes none); merge says nothing alarming about consistent shards (one summary line), names a
# planted slow shard with its deviation, the median and the spreads, keeps a row of an unnamed
# shard over the named shard's faster row for the same key (the faster row wins without the
# flag, and with merge --no-calibration), shows the naming line under -q, writes no calibration
# line into the merged DB, and says nothing about DBs that carry none. Host timings on a shared
# machine are too noisy to assert on, so the test writes the times it judges into the lines,
# as a slow GPU would have: the lines' format is what tune writes and the test checks that too.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

S=$TMP/shapes.csv
{ echo model,proj,tokens,out_features,in_features; printf '%s\n' \
  cpu,a,8,256,256 cpu,b,16,256,128 cpu,c,32,128,256 cpu,d,24,128,128 cpu,e,64,64,256 \
  cpu,f,16,128,256 cpu,g,32,256,128; } >"$S"
TUNE=(--cpu --warm --rounds 5 --finalists 3)
P=$TMP/parts/tuned

for i in 0 1 2; do
  expect_exit 0 "shard $i of 3 tunes" "$GT" tune "$S" -o "$P.db" --shard "$i/3" "${TUNE[@]}"
done
expect_grep "tune says what the reference took before and after its shapes" \
  'calibration after the shapes \(the baseline of 1 reference shape, [0-9.]+ s\): bf16 TN 128x24x128 [0-9.e+]+ us \(spread [0-9.]+%, [-+][0-9.]+% vs before\)'
for i in 0 1 2; do
  f=$P.shard-$i-of-3.db
  grep -qx "#calibration=shard $i of 3, device host, host $(hostname | tr ' ,' '__')" "$f" \
    && ok "shard $i: its #calibration line names the shard, the device and the host" \
    || bad "shard $i: #calibration line" "$(grep '^#' "$f")"
  grep -Eq '^#calibration-ref1=ref [0-9a-f]{16} \(bf16 TN 128x24x128, warm-host\), before [0-9.e+]+ us spread [0-9.]+%, after [0-9.e+]+ us spread [0-9.]+%$' "$f" \
    && ok "shard $i: the reference's times before and after, with their spreads" \
    || bad "shard $i: #calibration-ref1 line" "$(grep '^#' "$f")"
done
refs=$(grep -ho '^#calibration-ref1=ref [0-9a-f]*' "$P".shard-*-of-3.db | sort -u | wc -l)
[ "$refs" = 1 ] && ok "every shard chose the same reference shape" || bad "$refs different references"

expect_exit 0 "tune --no-calibration" "$GT" tune "$S" -o "$TMP/nocal.db" --shard 0/3 "${TUNE[@]}" --no-calibration
expect_nogrep "--no-calibration times no reference" 'calibration'
f=$TMP/nocal.shard-0-of-3.db
grep -q '^#calibration' "$f" && bad "--no-calibration wrote calibration lines" "$(grep '^#' "$f")" \
  || ok "--no-calibration writes no calibration line"

# set_times SHARD US: the shard's reference at US microseconds before and after, spread 1%.
set_times() {
  sed -i -E "s/(^#calibration-ref1=ref [0-9a-f]+ \([^)]*\)), .*/\1, before $2 us spread 1.00%, after $2 us spread 1.00%/" \
    "$P.shard-$1-of-3.db"
}
# A row for a key shard 0 holds, planted into shard 2 twice as fast (instance cpu_planted).
key_row=$(grep -m1 '^gemm,' "$P.shard-0-of-3.db")
key=$(cut -d, -f1-23 <<<"$key_row")
awk -F, -v OFS=, '{ $26 = "cpu_planted"; $27 = $27 / 2; $29 = $28 / $27; if ($41 > 0) $43 = 100 * $41 / $27; print }' <<<"$key_row" >"$TMP/planted.row"
cp "$P.shard-2-of-3.db" "$TMP/shard2.orig"
cat "$TMP/planted.row" >>"$P.shard-2-of-3.db"
winner() { grep "^$key," "$1" | cut -d, -f26; }

for i in 0 1 2; do set_times "$i" 1000; done
expect_exit 0 "merge of consistent shards" "$GT" merge "$TMP/parts" -o "$TMP/ok.db"
expect_grep "consistent shards: one summary line" '^calibration: 3 inputs on .* agree: every reference GEMM within 0.0% of the others'
expect_nogrep "consistent shards: no shard is named" 'ran [0-9.]+% (slower|faster) than|named above'
[ "$(winner "$TMP/ok.db")" = cpu_planted ] && ok "without a named shard the faster row wins" \
  || bad "the faster row lost" "$OUT_TXT"
grep -q '^#calibration' "$TMP/ok.db" && bad "the merged DB carries calibration lines" "$(head -8 "$TMP/ok.db")" \
  || ok "the merged DB carries no calibration line"

set_times 2 1500
expect_exit 0 "merge with a planted slow shard" "$GT" merge "$TMP/parts" -o "$TMP/slow.db"
expect_grep "the slow shard is named, with the median, the spreads and the threshold" \
  "^calibration: $TMP/parts/tuned.shard-2-of-3.db \\(shard 2 of 3, device host, host [^)]*\\): its reference GEMM \\(bf16 TN 128x24x128\\) ran 50.0% slower than the median of 3 inputs before their shapes \\(spreads 1.0-1.0%, threshold 2.0%\\): a slow or busy host"
expect_grep "the summary counts it" '^calibration: 1 of 3 inputs on .* named above'
expect_grep "the conflicting row's decision is said" \
  "^calibration: kept $TMP/parts/tuned.shard-0-of-3.db/[a-z0-9_]+ [0-9.e+]+ us over $TMP/parts/tuned.shard-2-of-3.db/cpu_planted"
w=$(winner "$TMP/slow.db")
[ -n "$w" ] && [ "$w" != cpu_planted ] && ok "the named shard's faster row loses to the other shard's ($w)" \
  || bad "the named shard's row won ($w)" "$OUT_TXT"
[ "$(grep -c '^gemm,' "$TMP/slow.db")" = "$(grep -c '^gemm,' "$TMP/ok.db")" ] \
  && ok "every key is still in the merged DB" || bad "rows lost" "$(cat "$TMP/slow.db")"

expect_exit 0 "merge -q with the slow shard" "$GT" merge -q "$TMP/parts" -o "$TMP/slowq.db"
expect_grep "-q still names the slow shard" 'tuned.shard-2-of-3.db \(shard 2 of 3.*ran 50.0% slower'
expect_nogrep "-q leaves out the summary and the decisions" 'named above|calibration: kept'

expect_exit 0 "merge --no-calibration" "$GT" merge --no-calibration "$TMP/parts" -o "$TMP/nocheck.db"
expect_nogrep "--no-calibration compares nothing" 'calibration'
[ "$(winner "$TMP/nocheck.db")" = cpu_planted ] && ok "--no-calibration: the faster row wins as before" \
  || bad "--no-calibration changed the arbitration" "$OUT_TXT"

# DBs of an older gemmtune (no calibration lines): merged as before, not a word about it.
mkdir -p "$TMP/old"
for i in 0 1; do grep -v '^#calibration' "$P.shard-$i-of-3.db" >"$TMP/old/$i.db"; done
expect_exit 0 "merge of DBs without calibration lines" "$GT" merge "$TMP/old" -o "$TMP/old.db"
expect_nogrep "nothing is said about calibration" 'calibration'

# One calibrated input among uncalibrated ones is said, never named.
cp "$TMP/shard2.orig" "$TMP/old/2.db"
expect_exit 0 "merge with one calibrated input" "$GT" merge "$TMP/old" -o "$TMP/old2.db"
expect_grep "the inputs without calibration lines are counted" '^calibration: 2 inputs without calibration lines'
finish
