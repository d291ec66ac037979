#!/usr/bin/env python3
"""Merge kernels_bench.csv files of one machine into one table's verdicts.

A full `kernels_bench --epilogue bias` no longer fits one stage's limit on every machine (the
twins double the candidates of a row), so a run is split with --filter/--tokens into parts, on the
same machine in the same session. This reads the parts' kernels_bench.csv files and prints what
kernels_bench prints at the end of a whole run: rows, the tuned geomean (max(1, base/own) per
row: a row is written only when own wins), own alone, by tokens, the fused-epilogue cost where the
files have it, and the bandwidth count over the large weights.

    python3 bench/kernels_merge.py part1/kernels_bench.csv part2/kernels_bench.csv ... \
        [--min-mb 100] [--tbs 4.3] [--floor 4.8[,0] | --floor measured] [--csv merged.csv]

--floor TBPS[,FIXED_US]: a row's floor is the bytes it must move (those kernels_bench counts for
its GB/s: the weight, the activations and the output once each) at TBPS TB/s plus FIXED_US per
call. Printed: the
geomean of max(1, base/floor), the tuned geomean no kernel can beat at that floor (at the
datasheet bandwidth and no fixed cost, the ceiling of any speedup bar), and how far the tuned
dispatch and the best own kernel are from the floor, overall, by tokens and by weight.
--floor measured: each row's floor is the one `kernels_bench --floor` measured (floor_us: the
fastest read-only design moving the row's bytes, or the baseline or own instance where one was
faster), with the baseline and the best own instance timed beside it in the same bench
(floor_base_us, floor_best_us): base/floor is floor_base_us/floor_us, tuned min(floor_base_us,
floor_best_us)/floor_us; rows without a floor are counted and left out.
--bar G: whether the tuned geomean meets G, and with --floor whether the floor's ceiling allows G
at all (a ceiling below the bar: no kernel streaming no faster than the floor reaches it there).
One file (a whole run) is a merge of one part.

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


def parse_floor(text):
    """--floor TBPS[,FIXED_US] -> (bytes per us, fixed us, text); --floor measured -> (None, 0,
    text); a bad value exits 2 naming it."""
    if text == "measured":
        return None, 0.0, text
    parts = text.split(",")
    try:
        tbps = float(parts[0])
        fixed = float(parts[1]) if len(parts) == 2 else 0.0
    except ValueError:
        tbps, fixed = -1.0, -1.0
    if len(parts) > 2 or not tbps > 0 or not fixed >= 0:
        die("--floor %s: want TBPS[,FIXED_US], a bandwidth > 0 in TB/s and a fixed cost >= 0 in"
            " us (e.g. 4.8 or 4.62,1.5), or measured" % text)
    return tbps * 1e6, fixed, text


def row_floor(r, floor):
    """(base, tuned, own) over the row's floor, or None without one. The floor of a bandwidth
    floor is the bytes kernels_bench counts for the row (weight, activations and output once
    each: best_gbps x best_us) at that bandwidth plus the fixed cost, against the race's times;
    a measured floor (floor_us) is against the times taken beside it (floor_base_us,
    floor_best_us; the race's best_us where the own instance has none there)."""
    if floor[0] is None:
        try:
            f, fb = float(r["floor_us"]), float(r["floor_base_us"])
            fo = float(r["floor_best_us"])
        except (KeyError, ValueError, TypeError):
            return None
        if not (f > 0 and fb > 0):
            return None
        if not fo > 0:
            fo = r["_own"] * fb / r["_base"]
        return fb / f, min(fb, fo) / f, fo / f
    f = r["_gbps"] * r["_own"] * 1e3 / floor[0] + floor[1]
    return r["_base"] / f, min(r["_base"], r["_own"]) / f, r["_own"] / f


def print_floor(rows, floor, header):
    if floor[0] is None and "floor_us" not in header:
        die("--floor measured: the files have no floor_us column (run kernels_bench --floor)")
    fl = [row_floor(r, floor) for r in rows]
    left = sum(f is None for f in fl)
    rows, fl = [r for r, f in zip(rows, fl) if f is not None], [f for f in fl if f is not None]
    if left:
        print("floor %s: %d rows without a floor left out" % (floor[2], left))
    if not rows:
        return None
    ceiling = geomean([max(1.0, f[0]) for f in fl])
    print("floor %s: geomean of max(1, base/floor), the most any tuned dispatch reaches: %.3f" %
          (floor[2] if floor[0] is None else floor[2] + " TB/s[,us a call]", ceiling))
    print("  distance from the floor (time / floor): tuned %.3f, best own %.3f" % (
        geomean([f[1] for f in fl]), geomean([f[2] for f in fl])))
    if floor[0] is None and "floor_design_us" in header:
        beaten = [(r["label"], r["tokens"]) for r in rows
                  if r.get("floor_design_us") and float(r["floor_us"]) < float(r["floor_design_us"])]
        print("  rows where the baseline or own beat every design (their time is the floor): %d%s"
              % (len(beaten), "".join("\n    %s %s tokens" % b for b in beaten)))
    for what, key in (("tokens", lambda r: int(r["tokens"])), ("weight", lambda r: r["label"])):
        groups = {}
        for r, f in zip(rows, fl):
            groups.setdefault(key(r), []).append((f[1], f[2]))
        print("  by %s: %s" % (what, ", ".join(
            "%s %.3f/%.3f" % (g, geomean([x[0] for x in v]), geomean([x[1] for x in v]))
            for g, v in sorted(groups.items()))) + " (tuned/own)")
    return ceiling


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv_files", nargs="+", metavar="kernels_bench.csv")
    ap.add_argument("--min-mb", type=float, default=100.0, help="large weights: MB (default 100)")
    ap.add_argument("--tbs", type=float, default=None,
                    help="bandwidth bar for the large weights, TB/s (default: none printed)")
    ap.add_argument("--floor", metavar="TBPS[,FIXED_US]|measured",
                    help="also print the speedup a bandwidth floor allows and each row's"
                         " distance from it (measured: kernels_bench --floor's floor_us)")
    ap.add_argument("--bar", type=float, default=None,
                    help="a tuned-geomean target (e.g. 1.10): say whether the tuned geomean meets"
                         " it and, with --floor, whether the floor's ceiling allows it at all")
    ap.add_argument("--csv", help="write the merged rows here")
    a = ap.parse_args()
    if a.bar is not None and not a.bar > 0:
        die("--bar %s: want a geomean > 0 (e.g. 1.10)" % a.bar)
    floor = parse_floor(a.floor) if a.floor else None
    header, base, rows = load(a.csv_files)
    rows.sort(key=lambda r: (r["label"], int(r["tokens"])))
    ratio = [r["_base"] / r["_own"] for r in rows]
    print("%d rows from %d files (baseline column %s)" % (len(rows), len(a.csv_files), base))
    tuned = geomean([max(1.0, x) for x in ratio])
    print("geomean of max(1, base/own) (tuned dispatch): %.3f" % tuned)
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
    ceiling = print_floor(rows, floor, header) if floor else None
    if a.bar is not None:
        print("bar %.3f: tuned %.3f, %s%s" % (
            a.bar, tuned, "met" if tuned >= a.bar else "not met",
            "" if ceiling is None else
            "; the floor's ceiling %.3f %s" % (ceiling, "allows it" if ceiling >= a.bar else
                                               "is below it: no kernel streaming no faster than"
                                               " the floor reaches it on these rows")))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
