#!/usr/bin/env python3
"""Merge kernels_bench.csv files of one machine into one table's verdicts.

A full `kernels_bench --epilogue bias` no longer fits one stage's limit on every machine (the
twins double the candidates of a row), so a run is split with --filter/--tokens into parts, on the
same machine in the same session. This reads the parts' kernels_bench.csv files and prints what
kernels_bench prints at the end of a whole run: rows, the tuned geomean (max(1, base/own) per
row: a row is written only when own wins), own alone, by tokens, the fused-epilogue cost where the
files have it, and the bandwidth count over the large weights.

    python3 bench/kernels_merge.py part1/kernels_bench.csv part2/kernels_bench.csv ... \
        [--min-mb 100] [--tbs 4.3] [--csv merged.csv]

A key (label, tokens) found in two files is an error (exit 2): parts must not overlap. Files must
share the header (the same kernels_bench mode). Exit 0 otherwise; a file that cannot be read or
parsed exits 2 naming it and the line.
"""
import argparse
import csv
import math
import sys


def die(msg):
    print("kernels_merge: " + msg, file=sys.stderr)
    sys.exit(2)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def base_column(header, path):
    """The baseline's time: the first *_us column before best_us (lt_us, cublas_us)."""
    cols = [c for c in (header or []) if c.endswith("_us")]
    if not cols or cols[0] == "best_us" or "best_us" not in cols:
        die("%s: no baseline and best_us columns in the header (not a kernels_bench.csv)" % path)
    return cols[0]


def load(paths):
    header, base, rows, seen = None, None, [], {}
    for path in paths:
        try:
            with open(path, newline="") as f:
                rd = csv.DictReader(f)
                if header is None:
                    header = rd.fieldnames
                    base = base_column(header, path)
                elif rd.fieldnames != header:
                    die("%s: header differs from %s's" % (path, paths[0]))
                for line, r in enumerate(rd, start=2):
                    try:
                        key = (r["label"], int(r["tokens"]))
                        r["_base"] = float(r[base])
                        r["_own"] = float(r["best_us"])
                        r["_mb"] = float(r["weight_mb"])
                        r["_gbps"] = float(r["best_gbps"])
                    except (KeyError, ValueError, TypeError) as e:
                        die("%s:%d: not a kernels_bench row (%s)" % (path, line, e))
                    if key in seen:
                        die("%s:%d: %s at %d tokens is also in %s" %
                                 (path, line, key[0], key[1], seen[key]))
                    seen[key] = "%s:%d" % (path, line)
                    rows.append(r)
        except OSError as e:
            die("%s: %s" % (path, e.strerror))
    if not rows:
        die("no rows in %s" % " ".join(paths))
    return header, base, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv_files", nargs="+", metavar="kernels_bench.csv")
    ap.add_argument("--min-mb", type=float, default=100.0, help="large weights: MB (default 100)")
    ap.add_argument("--tbs", type=float, default=None,
                    help="bandwidth bar for the large weights, TB/s (default: none printed)")
    ap.add_argument("--csv", help="write the merged rows here")
    a = ap.parse_args()
    header, base, rows = load(a.csv_files)
    rows.sort(key=lambda r: (r["label"], int(r["tokens"])))
    ratio = [r["_base"] / r["_own"] for r in rows]
    print("%d rows from %d files (baseline column %s)" % (len(rows), len(a.csv_files), base))
    print("geomean of max(1, base/own) (tuned dispatch): %.3f" % geomean([max(1.0, x) for x in ratio]))
    print("geomean of base/own (best own alone):          %.3f" % geomean(ratio))
    for t in sorted({int(r["tokens"]) for r in rows}):
        rr = [x for r, x in zip(rows, ratio) if int(r["tokens"]) == t]
        print("tokens %4d: geomean base/own %.3f, tuned %.3f (%d rows)" %
              (t, geomean(rr), geomean([max(1.0, x) for x in rr]), len(rr)))
    slower = [(r["label"], r["tokens"], x) for r, x in zip(rows, ratio) if x < 1.0]
    print("rows where own is behind the baseline (tuned keeps the baseline): %d%s" %
          (len(slower), "".join("\n  %s %s tokens: %.3f" % s for s in slower)))
    if "fused_cost" in header:
        fc = [float(r["fused_cost"]) for r in rows if r["fused_cost"]]
        print("fused epilogue: geomean of twin/plain %.3f (%d rows)" % (geomean(fc), len(fc)))
    big = [r for r in rows if r["_mb"] >= a.min_mb]
    if big and a.tbs is not None:
        met = sum(r["_gbps"] >= a.tbs * 1000 for r in big)
        low = min(big, key=lambda r: r["_gbps"])
        print(">= %.2f TB/s on weights >= %g MB: %d of %d (lowest %.2f TB/s, %s tokens=%s)" %
              (a.tbs, a.min_mb, met, len(big), low["_gbps"] / 1000, low["label"], low["tokens"]))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
