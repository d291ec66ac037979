#!/usr/bin/env bash
# gemmtune verify --json and gemmtune report: the record holds the verdicts, GPU time, the Amdahl
# bound and the end-to-end gain; the page is one self-contained HTML file (inline SVG, no script,
# nothing fetched) with the roofline, the speedup bars, the engagement table and the bound;
# missing or malformed inputs exit 66 and 65 and write nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/report_fixture.sh"

if [ "$HAVE_VERIFY" = 1 ]; then
  ok "verify --json of an engaged stand-in run exits 0"
  j="$TMP/verify.json"
  python3 - "$j" <<'EOP' && ok "the record is JSON with every part" || bad "verify.json" "$(cat "$j")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["format"] == "gemmtune-verify 1", r["format"]
assert r["pass"] is True and r["exit"] == 0
assert any(i["verdict"] == "engaged" for i in r["items"]), r["items"]
assert 0 < r["gpu"]["gemm_share"] <= 1 and r["gpu"]["amdahl_bound"] >= 1
assert r["e2e"]["measured"] is True and abs(r["e2e"]["speedup"] - 1.04) < 1e-6, r["e2e"]
EOP
  expect_exit 0 "report with the verify record and the shapes" "$GT" report "$TMP/kdb.csv" \
    --verify "$j" --shapes "$TMP/shapes.csv" -o "$TMP/report.html"
  expect_grep "says what it wrote" 'report: .*report.html \([0-9]+ keys, 1 roofline, engagement'
  OUT_TXT=$(cat "$TMP/report.html")
  expect_grep "an HTML page" '^<!DOCTYPE html>'
  expect_grep "a roofline per dtype" "aria-label='roofline bf16'"
  expect_grep "the compute and memory roofs" 'compute roof .*FLOP/s, memory roof .*B/s'
  expect_grep "speedup bars" "aria-label='speedup per key'"
  expect_grep "the engagement table" "<td class='v ok'>engaged</td>"
  expect_grep "the Amdahl chart" "aria-label='Amdahl bound and measured gain'"
  expect_grep "the measured gain" '1\.040x'
  expect_grep "labels from the shapes file" 't/a|t/b'
  expect_nogrep "no script" '<script'
  expect_nogrep "nothing fetched" "(src|href)=|url\\(|@import"
else
  ok "verify-record checks skipped: no shape improved on this machine"
fi

# Without a verify record: the DB alone, and the bound on GEMM time from captured shares.
expect_exit 0 "report of a DB alone" "$GT" report "$TMP/db.csv" -o "$TMP/alone.html"
OUT_TXT=$(cat "$TMP/alone.html")
expect_grep "says how to add the engagement" 'No verify record'
printf 'calls,time_us,share,m,n,k,transa\n10,90,0.9,256,16,256,T\n10,10,0.1,999,9,99,T\n' >"$TMP/cap.csv"
if grep -q ',256,16,256,' "$TMP/db.csv"; then
  expect_exit 0 "report with captured shares" "$GT" report "$TMP/db.csv" --shapes "$TMP/cap.csv" -o "$TMP/cap.html"
  OUT_TXT=$(cat "$TMP/cap.html")
  expect_grep "the bound on GEMM time from the shares" 'make the GEMM time at most <b>[0-9.]+x</b> faster \(1 of 2 shapes'
fi

# Inputs
expect_exit 64 "report without -o" "$GT" report "$TMP/db.csv"
expect_exit 66 "report of a missing DB" "$GT" report "$TMP/nope.db" -o "$TMP/x.html"
expect_exit 66 "report with a missing verify record" "$GT" report "$TMP/db.csv" --verify "$TMP/nope.json" -o "$TMP/x.html"
printf '{"format": "gemmtune-verify 1", "items": [' >"$TMP/torn.json"
expect_exit 65 "a torn verify record exits 65" "$GT" report "$TMP/db.csv" --verify "$TMP/torn.json" -o "$TMP/x.html"
expect_grep "names the byte" 'JSON: .* at byte [0-9]+'
printf '{"items": []}\n' >"$TMP/other.json"
expect_exit 65 "JSON that is not a verify record exits 65" "$GT" report "$TMP/db.csv" --verify "$TMP/other.json" -o "$TMP/x.html"
[ ! -e "$TMP/x.html" ] && ok "nothing written on an error" || bad "x.html written"
expect_exit 64 "--peak-tflops must be positive" "$GT" report "$TMP/db.csv" --peak-tflops 0 -o "$TMP/x.html"
finish
