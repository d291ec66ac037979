#!/usr/bin/env python3
"""The checks of a sharded tuning run against the same run in one process (bench/multigpu_tune.sh).

Reads the shard DBs (--parts), their merge (--merged), the one-process DB (--one), the logs
(--logs: tune-rank*.log, tune-one.log, merge.log) and the two wall times, and prints one line
per check:

  CHECK shards-disjoint   every key in at most one shard DB, and the merged DB is their union
  CHECK shapes-once       the shards tuned every shape of the file exactly once between them
  CHECK calibration-lines every shard DB carries its #calibration lines
  CHECK devices           each rank took the GPU it should (rank r: device r; sharing: 0)
  CHECK keys              the merged DB has the same keys as the one-process DB
  CHECK times             for keys both wrote, the winners' times agree within their combined
                          spread (at least 2%: the floor merge's calibration uses)
  CHECK speedup           one-process wall time / sharded wall time >= target x processes
  CHECK calibration       merge named no input as a slow or throttled GPU

Each line says PASS, FAIL, or INFO (measured, but not required in this mode: --require lists
the required checks). Exit 0 when every required check passed, 1 otherwise, 2 on bad input.
--json writes every check and the rows that disagree.
"""
import argparse
import glob
import json
import os
import re
import sys

KEY_COLS = 23  # the key columns of a DB row (src/core/gt_db.h)
FLOOR_PCT = 2.0  # GT_CALIB_FLOOR_PCT


def read_db(path):
    """{key: row dict} and the validator lines of a tuned DB."""
    rows, vals = {}, {}
    header = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                name, _, value = line[1:].partition("=")
                vals[name] = value
            elif header is None:
                header = line.split(",")
            elif line:
                cells = line.split(",")
                row = dict(zip(header, cells))
                rows[",".join(cells[:KEY_COLS])] = row
    return rows, vals


def short_key(key):
    """'bf16 TN 4096x16x4096' from a key's cells."""
    c = key.split(",")
    return "%s %s%s %sx%sx%s" % (c[1], c[7], c[8], c[9], c[10], c[11])


def log_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def check_shards(parts, merged):
    seen, dup = {}, []
    for path, (rows, _) in parts.items():
        for k in rows:
            if k in seen:
                dup.append((short_key(k), seen[k], path))
            seen[k] = path
    missing = sorted(set(seen) - set(merged))
    extra = sorted(set(merged) - set(seen))
    ok = not dup and not missing and not extra
    detail = "%d shard DBs, %d rows between them, merged %d" % (len(parts), len(seen), len(merged))
    if dup:
        detail += "; in two shards: " + ", ".join("%s (%s, %s)" % d for d in dup[:5])
    if missing or extra:
        detail += "; merged differs from the union: %d missing, %d extra" % (len(missing), len(extra))
    return ok, detail, {"duplicates": dup, "missing": missing, "extra": extra}


def count_shapes(shapes):
    n = 0
    with open(shapes) as f:
        for i, line in enumerate(f):
            if i > 0 and line.strip() and not line.startswith("#"):
                n += 1
    return n


def check_shapes_once(logs, shapes):
    tuned = []
    for path in sorted(glob.glob(os.path.join(logs, "tune-rank*.log"))):
        m = re.search(r"^Summary: (\d+) shapes tuned", log_text(path), re.M)
        tuned.append(int(m.group(1)) if m else -1)
    one = re.search(r"^Summary: (\d+) shapes tuned", log_text(os.path.join(logs, "tune-one.log")), re.M)
    want = int(one.group(1)) if one else count_shapes(shapes)
    ok = bool(tuned) and -1 not in tuned and sum(tuned) == want
    return ok, "ranks tuned %s = %d shapes of %d" % ("+".join(map(str, tuned)), sum(tuned), want), {}


def check_calib_lines(parts):
    bad = [p for p, (_, v) in parts.items() if "calibration" not in v or "calibration-ref1" not in v]
    return not bad and bool(parts), "%d of %d shard DBs carry #calibration lines" % (
        len(parts) - len(bad), len(parts)), {"without": bad}


def check_devices(logs, share, visible):
    """Each rank's first line names the GPU it took: rank r the r-th (listed) device, or 0
    for every rank when they share GPU 0."""
    seen, bad = [], []
    vis = [v for v in (visible or "").split(",") if v]
    for path in sorted(glob.glob(os.path.join(logs, "tune-rank*.log"))):
        m = re.search(r"CUDA device (\d+) \(local rank (\d+)", log_text(path))
        if not m:
            bad.append("%s: no device line" % os.path.basename(path))
            continue
        dev, local = int(m.group(1)), int(m.group(2))
        want = 0 if share or len(vis) == 1 else (local % len(vis) if vis else local)
        seen.append("rank %d: device %d" % (local, dev))
        if dev != want:
            bad.append("local rank %d took device %d, want %d" % (local, dev, want))
    return not bad and bool(seen), "; ".join(seen + bad), {"problems": bad}


def check_keys(merged, one):
    only_m = sorted(set(merged) - set(one))
    only_o = sorted(set(one) - set(merged))
    detail = "merged %d rows, one process %d, %d in both" % (len(merged), len(one), len(set(merged) & set(one)))

    def speedups(keys, rows):
        return ", ".join("%s %sx" % (short_key(k), rows[k]["speedup"]) for k in keys[:6])
    if only_m:
        detail += "; only sharded: " + speedups(only_m, merged)
    if only_o:
        detail += "; only one process: " + speedups(only_o, one)
    return not only_m and not only_o, detail, {"only_merged": only_m, "only_one": only_o}


def check_times(merged, one):
    both = sorted(set(merged) & set(one))
    within_spread = within_floor = same_inst = 0
    off = []
    for k in both:
        a, b = merged[k], one[k]
        ta, tb = float(a["time_us"]), float(b["time_us"])
        spread = float(a["spread_pct"]) + float(b["spread_pct"])
        diff = 100.0 * abs(ta - tb) / min(ta, tb)
        within_spread += diff <= spread
        within_floor += diff <= max(FLOOR_PCT, spread)
        same_inst += a["instance"] == b["instance"]
        if diff > max(FLOOR_PCT, spread):
            off.append({"key": short_key(k), "sharded_us": ta, "one_us": tb, "diff_pct": round(diff, 2),
                        "spreads_pct": round(spread, 2), "sharded": a["instance"], "one": b["instance"]})
    detail = "%d rows in both: %d within their spreads, %d within max(spreads, %.0f%%), same instance %d" % (
        len(both), within_spread, within_floor, FLOOR_PCT, same_inst)
    for o in off[:6]:
        detail += "; %s %.3f vs %.3f us (%.1f%%, spreads %.1f%%)" % (
            o["key"], o["sharded_us"], o["one_us"], o["diff_pct"], o["spreads_pct"])
    return bool(both) and not off, detail, {"disagree": off}


def check_speedup(wall_multi, wall_one, nproc, target):
    if not (wall_multi > 0 and wall_one > 0):
        return False, "wall times missing", {}
    s = wall_one / wall_multi
    want = target * nproc
    return s >= want, "one process %.1f s, %d processes %.1f s: %.2fx (target %.2fx = %.1f x %d)" % (
        wall_one, nproc, wall_multi, s, want, target, nproc), {"speedup": s, "target": want}


def check_calibration(logs):
    text = log_text(os.path.join(logs, "merge.log"))
    lines = [l for l in text.splitlines() if l.startswith("calibration:")]
    named = [l for l in lines if re.search(r"\): its reference GEMM .* ran [0-9.]+% (slower|faster) than", l)]
    summary = [l for l in lines if " agree" in l or "named above" in l]
    detail = "; ".join(summary) if summary else "no calibration summary in merge.log"
    if named:
        detail += " | " + " | ".join(named)
    return bool(summary) and not named, detail, {"named": named, "lines": lines}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", required=True)
    ap.add_argument("--merged", required=True)
    ap.add_argument("--one")
    ap.add_argument("--logs", required=True)
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--nproc", type=int, required=True)
    ap.add_argument("--wall-multi", type=float, default=0)
    ap.add_argument("--wall-one", type=float, default=0)
    ap.add_argument("--target", type=float, default=0.8)
    ap.add_argument("--share", action="store_true", help="the ranks shared GPU 0")
    ap.add_argument("--visible", default=os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    ap.add_argument("--require", default="shards-disjoint,shapes-once,calibration-lines")
    ap.add_argument("--skip", default="", help="checks not to run (devices on the CPU)")
    ap.add_argument("--json")
    a = ap.parse_args()
    try:
        parts = {p: read_db(p) for p in sorted(glob.glob(os.path.join(a.parts, "*.db")))}
        merged = read_db(a.merged)[0]
        one = read_db(a.one)[0] if a.one and os.path.exists(a.one) else None
    except (OSError, ValueError) as e:
        print("multigpu_check: %s" % e, file=sys.stderr)
        return 2
    checks = [
        ("shards-disjoint", lambda: check_shards(parts, merged)),
        ("shapes-once", lambda: check_shapes_once(a.logs, a.shapes)),
        ("calibration-lines", lambda: check_calib_lines(parts)),
        ("devices", lambda: check_devices(a.logs, a.share, a.visible)),
        ("keys", lambda: check_keys(merged, one) if one is not None else (False, "no one-process DB", {})),
        ("times", lambda: check_times(merged, one) if one is not None else (False, "no one-process DB", {})),
        ("speedup", lambda: check_speedup(a.wall_multi, a.wall_one, a.nproc, a.target)),
        ("calibration", lambda: check_calibration(a.logs)),
    ]
    required, skip = set(a.require.split(",")), set(filter(None, a.skip.split(",")))
    record, failed = {}, 0
    for name, fn in checks:
        if name in skip:
            continue
        ok, detail, extra = fn()
        verdict = "PASS" if ok else "FAIL" if name in required else "INFO"
        failed += verdict == "FAIL"
        print("CHECK %-17s %s - %s" % (name, verdict, detail))
        record[name] = dict(extra, ok=ok, required=name in required, detail=detail)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(record, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
