"""The grouped_mm rows of a gemmtune DB, without torch: which keys of a shapes file are tunable,
the key cells a row must carry, the gate's bound, and the writer of a DB file in the current
format (src/core/gt_db.h: format 3, the fp8 key columns last). race.py times and
gates; this module turns its results into rows, and a CPU test drives it with fake timings
(tests/cli/test_grouped_rows.sh), so nothing here may import torch.

Why the key cells are copied from the shapes row, never recomputed: the runtime looks up the key
the shim builds for the live call (src/core/gt_grouped_key.h), which is what `capture` wrote.
Any recomputation here (a bucket, a leading dimension, a group stride) is a second copy of that
mapping that can drift from it, and a drifted key is a row that never hits.

The file is checked by gemmtune itself: `gemmtune merge OUT.db -o X.db` and
`gemmtune explain OUT.db KEY` read it with the strict reader, which is the contract.
"""
import csv
import datetime
import math
import os

DB_FORMAT_LINE = "#gemmtune-db 3"
# gt_key_field_names (src/core/gt_problem.c): the first 23 are the pre-fp8 key, the last five
# the fp8 fields, which format 3 appends after the result columns.
KEY_FIELDS_V2 = ["op", "a_type", "b_type", "c_type", "d_type", "compute", "scale_type", "transa",
                 "transb", "m", "n", "k", "lda", "ldb", "ldc", "batch", "stride_a", "stride_b",
                 "stride_c", "epilogue", "beta_zero", "arch", "sm_count"]
KEY_FIELDS_FP8 = ["scale_a", "scale_b", "fast_accum", "scale_d", "amax_d"]
# A shapes file of a gemmtune from before fp8 keys lacks these: its keys have no fp8 scaling,
# which is these values (the canonical spelling gt_problem_field_str prints).
FP8_DEFAULTS = {"scale_a": "none", "scale_b": "none", "fast_accum": "0", "scale_d": "0",
                "amax_d": "0"}
# gt_db_result_cols (src/core/gt_db.c), in order.
RESULT_COLS = ["provider", "lib", "instance", "time_us", "baseline_us", "speedup", "error",
               "error_bound", "timing", "rounds", "spread_pct", "sm_clock_mhz", "splitk_searched",
               "throttled", "baseline", "device", "device_mem_gib", "floor_us", "floor_bound",
               "floor_pct"]
HEADER = ",".join(KEY_FIELDS_V2 + RESULT_COLS + KEY_FIELDS_FP8)

PROVIDER = "grouped"                 # src/providers/cuda/grouped.c
PROVIDER_LIB = "gemmtune-grouped=1"  # its lib_version
BASELINE = "torch._grouped_mm"       # the path the row replaces (bf16bf16_grouped_mm)
BASELINE_FP8 = "torch._scaled_grouped_mm"  # an fp8 key's (f8f8bf16_grouped_mm)
TIMING = "cold-graph"                # rotated operand sets past the L2, CUDA-graph replays
# `gemmtune tune`'s default --threshold (gt_search.c: min_improvement 0.03), in percent.
DEFAULT_THRESHOLD_PCT = 3.0


class RowError(ValueError):
    """A shapes row or a result that cannot become a DB row (the message says why)."""


def grouped_keys(path):
    """(line, row) for every tunable grouped_mm row of a shapes file: line is the file line, row
    the CSV row as a dict. Rows marked not tunable (capture's not_tunable column) are left out:
    the runtime always serves them with torch's function."""
    with open(path, newline="") as f:
        # Comments and blank lines are not rows (csv skips blank ones itself, so they must go
        # here too, or the line numbers, which tune names keys by, drift after one).
        lines = [(i, l) for i, l in enumerate(f, start=1)
                 if not l.startswith("#") and l.strip()]
    if not lines:
        return
    numbers = [i for i, _ in lines]
    reader = csv.DictReader([l for _, l in lines])
    for j, row in enumerate(reader, start=1):
        if row.get("op") == "grouped_mm" and row.get("not_tunable", "-") in ("-", ""):
            yield numbers[j], row


def key_cells(row):
    """The 28 key cells of a row, copied from the shapes row as capture wrote them (the fp8
    fields at their defaults when the file predates them). RowError when a pre-fp8 field is
    missing: a hand-written file without strides states a key this module will not guess."""
    missing = [f for f in KEY_FIELDS_V2 if not row.get(f)]
    if missing:
        raise RowError("shapes row lacks key column%s %s (capture writes every one)" % (
            "s" if len(missing) > 1 else "", ", ".join(missing)))
    cells = {f: row[f] for f in KEY_FIELDS_V2}
    for f in KEY_FIELDS_FP8:
        cells[f] = row.get(f) or FP8_DEFAULTS[f]
    for f, v in cells.items():
        if not v or any(c in v for c in ',"\r\n') or v != v.strip():
            raise RowError("key column %s: '%s' is not a DB cell" % (f, v))
    return cells


def key_text(cells):
    """The key as gemmtune's KEY argument (`gemmtune explain DB KEY`): field=value,..."""
    return ",".join("%s=%s" % (f, cells[f]) for f in KEY_FIELDS_V2 + KEY_FIELDS_FP8)


def baseline_name(cells):
    """The torch function a key's row replaces."""
    return BASELINE_FP8 if cells["a_type"] == "f8e4m3fn" else BASELINE


def error_bound(cells):
    """The gate's normwise bound for the key, gt_metric_bound (src/core/gt_metric.c) for the two
    tunable grouped keys, f32 accumulation into a bf16 output: the output's rounding twice plus
    the sum's growth with K, whose unit is fp32's for bf16 operands and, for e4m3 ones (scaled
    rowwise), the roughly 14 bits Hopper's fp8 tensor cores keep in their adders (13 with fast
    accumulation; the reference dequantizes the same bytes exactly). RowError for other types
    (never tunable: the shim does not key them as such)."""
    bf16 = cells["a_type"] == cells["b_type"] == "bf16"
    fp8 = (cells["a_type"] == cells["b_type"] == "f8e4m3fn"
           and cells.get("scale_a") == cells.get("scale_b") == "outer_f32")
    if not ((bf16 or fp8) and cells["d_type"] == "bf16" and cells["compute"] == "f32"):
        raise RowError("no gate bound for %s x %s -> %s (compute %s)" % (
            cells["a_type"], cells["b_type"], cells["d_type"], cells["compute"]))
    u_out, u_acc = 2.0 ** -8, 2.0 ** -24
    if fp8:
        u_acc = 2.0 ** -13 if cells.get("fast_accum") == "1" else 2.0 ** -14
    return 2.0 * u_out + 8.0 * u_acc * math.sqrt(max(1, int(cells["k"]))) + 1e-12


def improves(own_us, base_us, threshold_pct, base_spread_pct):
    """Whether own_us beats base_us as `tune` requires (gt_stats_improves): the speedup exceeds
    1 + max(threshold, the baseline's own spread), so a win inside torch's scatter is no win."""
    t = max(threshold_pct, base_spread_pct if base_spread_pct == base_spread_pct else 0) / 100.0
    return own_us > 0 and base_us > 0 and base_us / own_us > 1.0 + t


def device_cell(name):
    """A product name as a DB cell (gt_db_device_name): commas, quotes and control characters
    become spaces, surrounding space is cut, "-" for none; at most 63 characters."""
    s = "".join(" " if c in ',"' or ord(c) < 0x20 or ord(c) == 0x7f else c for c in name or "")
    s = s.strip()[:63].rstrip()
    return s or "-"


def make_row(cells, instance, time_us, baseline_us, error, bound, rounds, spread_pct,
             device_name, device_mem_gib, sm_clock_mhz=0):
    """One DB row (a dict of every column) for a gated own instance faster than torch's path,
    checked as gt_db_row_check checks it. RowError when the row would be refused: not faster
    than its baseline, an error past its bound, bad counts. The floor columns are the
    documented unknown (0, '-', 0): the roofline lives in gemmtune, not here."""
    if not (time_us > 0 and baseline_us > 0 and time_us < baseline_us):
        raise RowError("time %.9g us is not below the baseline's %.9g us" % (time_us, baseline_us))
    if not (0 <= error <= bound):
        raise RowError("error %.6g is not within the bound %.6g" % (error, bound))
    if rounds < 1 or not spread_pct >= 0 or sm_clock_mhz < 0 or device_mem_gib < 0:
        raise RowError("rounds %d, spread %g, clock %d, memory %d: out of range" % (
            rounds, spread_pct, sm_clock_mhz, device_mem_gib))
    if any(c in instance for c in ',"\r\n ') or not instance:
        raise RowError("instance '%s' is not a DB cell" % instance)
    row = dict(cells)
    row.update(provider=PROVIDER, lib=PROVIDER_LIB, instance=instance, time_us=time_us,
               baseline_us=baseline_us, speedup=baseline_us / time_us, error=error,
               error_bound=bound, timing=TIMING, rounds=int(rounds), spread_pct=spread_pct,
               sm_clock_mhz=int(sm_clock_mhz), splitk_searched=0, throttled=0, baseline=baseline_name(cells),
               device=device_cell(device_name), device_mem_gib=int(device_mem_gib), floor_us=0.0,
               floor_bound="-", floor_pct=0.0)
    return row


def _cell(col, v):
    # The writer's number formats (gt_db_write.c): times %.9g, other doubles %.6g, ints as is.
    if col in ("time_us", "baseline_us", "floor_us"):
        return "%.9g" % v
    if col in ("speedup", "error", "error_bound", "spread_pct", "floor_pct"):
        return "%.6g" % v
    return str(v)


def format_row(row):
    """The row's line (no newline), columns in the file's order."""
    return ",".join(_cell(c, row[c]) for c in KEY_FIELDS_V2 + RESULT_COLS + KEY_FIELDS_FP8)


def write_db(path, rows, device_name, extra_validators=None):
    """Write rows as a gemmtune DB at path, atomically (a temporary file renamed over it), with
    the #device validator `tune` writes (so `merge` sees one device) and #updated. RowError for
    two rows of one key (the reader refuses the file). Rows are sorted by their key cells for
    stable diffs."""
    seen = {}
    for r in rows:
        k = key_text(r)
        if k in seen:
            raise RowError("two rows for one key %s" % k)
        seen[k] = r
    now = datetime.datetime.now(datetime.timezone.utc)
    vals = [("device", device_cell(device_name)), ("updated", now.strftime("%Y-%m-%dT%H:%M:%SZ"))]
    vals += list((extra_validators or {}).items())
    text = [DB_FORMAT_LINE] + ["#%s=%s" % (n, v) for n, v in vals] + [HEADER]
    text += [format_row(seen[k]) for k in sorted(seen)]
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write("\n".join(text) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def view(cells):
    """The key in torch's terms, as `gemmtune shapes` states it."""
    return "grouped_mm groups=%s rows<=%s N=%s K=%s layout=%s" % (
        cells["batch"], cells["n"], cells["m"], cells["k"], cells["transa"])


def decide(cells, baseline_us, baseline_spread_pct, results, threshold_pct, rounds, device_name,
           device_mem_gib, sm_clock_mhz=0):
    """The outcome of one key's race, as `tune` decides it: results is a list of dicts
    (instance, time_us, spread_pct, error: normwise against the fp32 product, agree: whether the
    output matched torch's), one per own instance timed. The fastest instance that agreed and
    kept its error within the bound becomes a row when it beats the baseline by more than
    max(threshold_pct, the baseline's spread). Returns (row or None, outcome, best, note):
    outcome "improved" or "unchanged", best the fastest gated result (None when none passed)."""
    bound = error_bound(cells)
    gated = [r for r in results if r["agree"] and 0 <= r["error"] <= bound]
    failed = len(results) - len(gated)
    best = min(gated, key=lambda r: r["time_us"]) if gated else None
    note = "%d failed the gate" % failed if failed else ""
    if best and improves(best["time_us"], baseline_us, threshold_pct, baseline_spread_pct):
        row = make_row(cells, best["instance"], best["time_us"], baseline_us, best["error"],
                       bound, rounds, best["spread_pct"], device_name, device_mem_gib,
                       sm_clock_mhz)
        return row, "improved", best, note
    t = max(threshold_pct, baseline_spread_pct)
    why = ("best %s %.3f us did not beat the baseline by %.1f%%" % (best["instance"],
           best["time_us"], t) if best else "no own instance passed the gate" if results
           else "no own instance accepts the key")
    return None, "unchanged", best, "%s%s%s" % (why, "; " if note else "", note)


TABLE_HEADER = "%5s  %-24.24s  %11s  %11s  %7s  %-9s  %s" % (
    "line", "shape", "baseline_us", "best_us", "speedup", "outcome", "winner")


def table_lines(line, cells, baseline_us, best, outcome, row, note):
    """The key's two lines in the layout of `tune`'s table: the numbers and the outcome, then
    the key in torch's terms and the note."""
    bus = "%.3f" % baseline_us if baseline_us and baseline_us > 0 else "-"
    bst = "%.3f" % best["time_us"] if best else "-"
    sp = "%.3f" % (baseline_us / best["time_us"]) if best and baseline_us else "-"
    winner = "%s/%s" % (row["provider"], row["instance"]) if row else "-"
    label = "g%s rows<=%s %sx%s" % (cells["batch"], cells["n"], cells["m"], cells["k"])
    return ("%5s  %-24.24s  %11s  %11s  %7s  %-9s  %s" % (line, label, bus, bst, sp, outcome,
                                                          winner),
            "%5s  %s%s%s" % ("", view(cells), "  | " if note else "", note))
