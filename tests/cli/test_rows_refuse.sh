#!/usr/bin/env bash
# Rows record the device they were tuned on (product name and memory, beyond arch and SM count),
# and everything that would act on a row refuses one tuned on another product of this device's
# arch and SM count, naming both devices: explain (REFUSED, exit 1), check (not applicable; a DB
# none of whose rows applies checks nothing: exit 1), verify (not engaged). A DB from before
# identities (format 1) still reads and applies by what it records, with a note. All on the CPU
# providers: the host's CPU model and memory are its identity.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

printf 'model,proj,tokens,out_features,in_features\nt,a,16,256,256\n' >"$TMP/shapes.csv"
"$GT" tune --cpu --rounds 5 "$TMP/shapes.csv" -o "$TMP/db.csv" >"$TMP/tune.out" 2>&1 || true
if ! grep -q '^gemm,' "$TMP/db.csv" 2>/dev/null; then
  ok "skipped: tune found no improving candidate on this machine"
  finish
  exit $?
fi
row=$(grep '^gemm,' "$TMP/db.csv" | head -1)
dev=$(cut -d, -f39 <<<"$row")
gib=$(cut -d, -f40 <<<"$row")
m=$(cut -d, -f10 <<<"$row"); n=$(cut -d, -f11 <<<"$row"); k=$(cut -d, -f12 <<<"$row")
[ "$(head -1 "$TMP/db.csv")" = '#gemmtune-db 4' ] && ok "tune writes format 4" || bad "format line"
grep -q ',baseline,device,device_mem_gib,' "$TMP/db.csv" && ok "the header has the device columns after baseline" \
  || bad "header" "$(cat "$TMP/db.csv")"
[ -n "$dev" ] && [ "$dev" != "-" ] && [ "$gib" -gt 0 ] \
  && ok "the row records this machine's identity ($dev, $gib GiB)" || bad "identity" "$row"

# ---- another product of the same arch and SM count ---------------------------------------------
awk -F, -v OFS=, '/^gemm,/ { $39 = "Other CPU 9000"; $40 = 7 } { print }' "$TMP/db.csv" >"$TMP/other.csv"
refusal="rows tuned on Other CPU 9000 \\(7 GiB\\); this device is .* \\([0-9]+ GiB\\): not applied"

expect_exit 0 "explain: this device's row is a hit" "$GT" explain "$TMP/db.csv" --cpu --linear "$n,$m,$k"
expect_grep "HIT" '^HIT '
expect_exit 1 "explain: another product's row is refused (exit 1)" \
  "$GT" explain "$TMP/other.csv" --cpu --linear "$n,$m,$k"
expect_grep "REFUSED, naming both devices" "^REFUSED .*"
expect_grep "the refusal text" "^  $refusal"
expect_grep "said once for the DB on stderr" "gemmtune explain: .*other.csv: $refusal \\(1 of 1 rows\\)"
expect_exit 1 "explain csv: result 'refused'" \
  "$GT" explain "$TMP/other.csv" --cpu --linear "$n,$m,$k" --format csv
expect_grep "csv row" "^refused,.*$refusal"

expect_exit 1 "check: no row applies here: exit 1" "$GT" check --cpu --rounds 5 "$TMP/other.csv"
expect_grep "the row is not applicable, naming both devices" "not applicable .*|$refusal"
expect_grep "the note" "^ +$refusal"
expect_grep "nothing was checked" 'FAIL: no row of .*other.csv applies to this device'
printf '#gemmtune-db 4\n%s\n' "$(grep '^op,' "$TMP/db.csv")" >"$TMP/empty.csv"
expect_exit 1 "check: an empty DB checks nothing: exit 1" "$GT" check --cpu "$TMP/empty.csv"
expect_grep "says so" 'FAIL: .*empty.csv has no rows, so nothing was checked'
expect_exit 0 "check: this device's row replays: exit 0" \
  "$GT" check --cpu --rounds 5 --tolerance 400 "$TMP/db.csv"

# verify, with a stand-in workload that writes the shim's counters (no GPU needed: --lib /dev/null)
stats_hdr="calls,hits,decision,provider,instance,entry,$(grep '^op,' "$TMP/db.csv" | cut -d, -f1-23,44-48)"
printf '%s\n4,0,notused,-,-,cublasGemmEx,%s\n' "$stats_hdr" "$(cut -d, -f1-23,44-48 <<<"$row")" >"$TMP/stats.csv"
cat >"$TMP/standin.sh" <<'EOS'
#!/bin/sh
[ -n "$GEMMTUNE_STATS" ] && cp "$STANDIN_STATS" "$(printf '%s' "$GEMMTUNE_STATS" | sed "s/%p/$$/")"
exit 0
EOS
expect_exit 1 "verify: another product's row cannot engage: exit 1" env STANDIN_STATS="$TMP/stats.csv" \
  "$GT" verify --db "$TMP/other.csv" --no-e2e --lib /dev/null --trace-lib /dev/null -- sh "$TMP/standin.sh"
expect_grep "said once for the DB" "gemmtune verify: .*other.csv: $refusal"
expect_grep "the key is not engaged" '^\[not engaged\] '
expect_grep "and why" "the row is not for this device: $refusal"

# ---- a DB from before device identities (format 1) -------------------------------------------
to_v1() { # DEVICE_LINE IN OUT
  { echo '#gemmtune-db 1'; [ -n "$1" ] && echo "#device=$1"
    tail -n +2 "$2" | grep -v '^#device=' | sed -E 's/(,[^,]*){14}$//'; } >"$3"
}
to_v1 "$dev" "$TMP/db.csv" "$TMP/v1.csv"
expect_exit 0 "explain: a format-1 row of this device's name applies" \
  "$GT" explain "$TMP/v1.csv" --cpu --linear "$n,$m,$k"
expect_grep "HIT" '^HIT '
expect_grep "with a note that it records no identity" \
  "gemmtune explain: .*v1.csv: 1 of 1 rows do not record the device they were tuned on"
to_v1 "" "$TMP/db.csv" "$TMP/v1_nodev.csv"
expect_exit 0 "explain: a format-1 row without a #device line applies by arch and SM count" \
  "$GT" explain "$TMP/v1_nodev.csv" --cpu --linear "$n,$m,$k"
to_v1 "Other CPU 9000" "$TMP/db.csv" "$TMP/v1_other.csv"
expect_exit 1 "explain: a format-1 row named for another product is refused" \
  "$GT" explain "$TMP/v1_other.csv" --cpu --linear "$n,$m,$k"
expect_grep "naming it, memory not recorded" \
  "rows tuned on Other CPU 9000 \\(memory not recorded\\); this device is"
expect_exit 0 "check: a format-1 row replays" "$GT" check --cpu --rounds 5 --tolerance 400 "$TMP/v1.csv"
expect_exit 0 "merge rewrites a format-1 DB as format 4" "$GT" merge "$TMP/v1.csv" -o "$TMP/v2.csv"
[ "$(head -1 "$TMP/v2.csv")" = '#gemmtune-db 4' ] && grep -q ",$dev,0,0,-,0,none,none,0,0,0,-,0,0,0\$" "$TMP/v2.csv" \
  && ok "the name is kept, the memory is 0 (not recorded)" || bad "v1 -> v2" "$(cat "$TMP/v2.csv")"
finish
