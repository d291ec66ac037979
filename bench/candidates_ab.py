#!/usr/bin/env python3
"""Same instance, two runs: what a kernel change was worth when the two builds could not race in
one process.

Reads two kernels_bench_candidates.csv files (BEFORE and AFTER, written by kernels_bench on the
same kind of GPU) and, for every (row, tokens, own instance) timed in both, divides the
instance's time by its run's baseline on the same row (the `cublas_gemmex_default` or
`cublaslt_heuristic_*` line), so a machine that is a few percent faster or slower overall does
not read as a kernel change. Prints one line per pair and the geomean by tokens and overall:
ratio > 1 means the AFTER build's instance is faster relative to the baseline.

Two runs still differ by a percent or two per family (the baseline's kernel moves too): read a
family the change does not touch with --family as the control for that drift.

The quick-race time is used (every candidate has one; only finalists have a median). Rows whose
baseline is missing in either file are skipped and counted.

  python3 bench/candidates_ab.py BEFORE.csv AFTER.csv [--family wg] [--tokens 16,32,64]
      [--by-split] [--quiet]

--by-split adds one summary line per (tokens, split-K of the instance): a change to the split
sum shows up on the ks2/ks4 instances only.
"""
import argparse
import csv
import math
import re
import sys


def load(path):
    """{(label, tokens): {name: quick_us}} from a kernels_bench_candidates.csv."""
    rows = {}
    try:
        with open(path, newline="") as f:
            for n, r in enumerate(csv.DictReader(f), start=2):
                try:
                    key = (r["label"], int(r["tokens"]))
                    t = float(r["quick_us"])
                except (KeyError, ValueError) as e:
                    sys.exit("%s:%d: not a kernels_bench candidates row (%s)" % (path, n, e))
                if math.isfinite(t) and t > 0:
                    rows.setdefault(key, {})[r["name"]] = t
    except OSError as e:
        sys.exit("%s: %s" % (path, e.strerror))
    return rows


def baseline(times):
    for name, t in times.items():
        if name == "cublas_gemmex_default" or name.startswith("cublaslt_heuristic"):
            return t
    return None


def family(name):
    # gt_sm90_<family>_...
    parts = name.split("_")
    return parts[2] if len(parts) > 2 and name.startswith("gt_") else None


def split(name):
    m = re.search(r"_ks(\d+)", name)
    return int(m.group(1)) if m else 1


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", help="kernels_bench_candidates.csv of the run without the change")
    ap.add_argument("after", help="kernels_bench_candidates.csv of the run with it")
    ap.add_argument("--family", help="only own instances of this family (wg, wgf8, decodetc, ...)")
    ap.add_argument("--tokens", help="only these token counts, comma-separated")
    ap.add_argument("--by-split", action="store_true",
                    help="also summarize by tokens and the instance's split-K")
    ap.add_argument("--quiet", action="store_true", help="summary lines only")
    a = ap.parse_args()
    tokens = None
    if a.tokens:
        try:
            tokens = {int(t) for t in a.tokens.split(",")}
        except ValueError:
            ap.error("--tokens: expected comma-separated integers, got %r" % a.tokens)
    b, c = load(a.before), load(a.after)
    pairs, skipped = [], 0
    for key in sorted(set(b) & set(c)):
        if tokens and key[1] not in tokens:
            continue
        bb, cb = baseline(b[key]), baseline(c[key])
        if not bb or not cb:
            skipped += 1
            continue
        for name in sorted(set(b[key]) & set(c[key])):
            if not name.startswith("gt_") or (a.family and family(name) != a.family):
                continue
            r = (b[key][name] / bb) / (c[key][name] / cb)
            pairs.append((key, name, b[key][name], bb, c[key][name], cb, r))
    if not pairs:
        sys.exit("no own instance timed in both files%s" % (
            " (%d rows without a baseline)" % skipped if skipped else ""))
    if not a.quiet:
        print("%-20s %6s %-62s %9s %9s %9s %9s %7s" % (
            "row", "tokens", "instance", "before", "base", "after", "base", "ratio"))
        for (label, t), name, x0, b0, x1, b1, r in pairs:
            print("%-20s %6d %-62s %9.2f %9.2f %9.2f %9.2f %7.3f" % (
                label, t, name, x0, b0, x1, b1, r))
    by_tok = {}
    for p in pairs:
        by_tok.setdefault(p[0][1], []).append(p[6])
    for t in sorted(by_tok):
        rs = by_tok[t]
        print("tokens %3d: geomean %.3f over %d pairs, %d faster, range %.3f-%.3f" % (
            t, geomean(rs), len(rs), sum(r > 1 for r in rs), min(rs), max(rs)))
    if a.by_split:
        by_ks = {}
        for p in pairs:
            by_ks.setdefault((p[0][1], split(p[1])), []).append(p[6])
        for (t, ks) in sorted(by_ks):
            rs = by_ks[(t, ks)]
            print("tokens %3d ks%d: geomean %.3f over %d pairs, %d faster" % (
                t, ks, geomean(rs), len(rs), sum(r > 1 for r in rs)))
    rs = [p[6] for p in pairs]
    print("all: geomean %.3f over %d pairs (%d faster)%s" % (
        geomean(rs), len(rs), sum(r > 1 for r in rs),
        "; %d rows skipped without a baseline" % skipped if skipped else ""))


if __name__ == "__main__":
    main()
