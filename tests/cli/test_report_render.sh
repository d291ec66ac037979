#!/usr/bin/env bash
# The report as a person sees it: headless Chromium renders the page to a PNG, which must be the
# page (not blank: many pixels differ from the background, in several colours) and tall enough to
# hold every section. Exits 77 (skipped) without Chromium (Debian's `chromium`; .ci/run
# installs it).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "no chromium: skipped"
  exit 77
fi
source "$(dirname "$0")/report_fixture.sh"
db="$TMP/db.csv"
args=()
if [ "$HAVE_VERIFY" = 1 ]; then db="$TMP/kdb.csv"; args=(--verify "$TMP/verify.json"); fi
expect_exit 0 "report" "$GT" report "$db" "${args[@]}" --shapes "$TMP/shapes.csv" -o "$TMP/report.html"
png="$TMP/report.png"
set +e
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --user-data-dir="$TMP/profile" --window-size=1100,2200 --screenshot="$png" "file://$TMP/report.html" \
  >"$TMP/chromium.log" 2>&1
rc=$?
set -e
[ "$rc" = 0 ] && [ -s "$png" ] && ok "chromium rendered the page to a PNG" || bad "chromium exited $rc" "$(tail -5 "$TMP/chromium.log")"
if [ -s "$png" ]; then
  OUT_TXT=$(python3 "$SRC/tests/cli/png_stats.py" "$png" 2>&1) && ok "PNG decoded: $OUT_TXT" || bad "PNG not decoded" "$OUT_TXT"
  read -r w h inked colours <<<"$OUT_TXT"
  [ "${inked:-0}" -ge 20000 ] && ok "not blank: $inked pixels differ from the background" || bad "blank page: $inked inked pixels"
  [ "${colours:-0}" -ge 6 ] && ok "drawn in $colours colours (text, roofs, points, bars)" || bad "only $colours colours"
  [ "${h:-0}" -ge 1000 ] && ok "the page is ${h}px tall" || bad "page height $h"
  # GT_REPORT_PNG_DIR=DIR keeps the picture (to look at, or to commit as an example)
  if [ -n "${GT_REPORT_PNG_DIR:-}" ]; then
    mkdir -p "$GT_REPORT_PNG_DIR" && cp "$png" "$TMP/report.html" "$GT_REPORT_PNG_DIR/"
  fi
fi
finish
