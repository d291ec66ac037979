"""Races the grouped_mm keys of a gemmtune shapes file in a torch process: torch's own path for
the call (torch._grouped_mm, which on the H200 is at::cuda::detail::bf16bf16_grouped_mm: the
one-block prepare_grouped_gemm_data kernel, then CUTLASS's ptr-array kernel) and, with --lib,
every own grouped kernel instance that supports the key, writing a DB row for the keys an own
instance wins.

`gemmtune tune` runs this module for the grouped keys of its shapes file (python3 -m
gemmtune.grouped, src/tools/tune_grouped.c): the baseline is torch's function, which only a
process with torch can run, so the race replays it from torch on the captured key, the way the
key states it
(src/core/gt_grouped_key.h): groups = batch, N = m, K = k, routed rows = n (the bucket's upper
end) split evenly over the groups, the weight [E][N][K] seen transposed (transa T) or [E][K][N]
(transa N), with the key's leading dimensions and group stride. Inputs rotate among sets larger
than the L2 (cold, as gemmtune times), each candidate is graph-replayed (harness.py, the harness
bench/grouped_vs_torch.py uses), and outputs are checked against an fp32 product.

Without --lib, one line per key, the baseline only:

  key LINE groups=G rows=R N=N K=K layout=T baseline_us=X spread_pct=S err=E

With --lib libgemmtune_grouped.so --db OUT.db [--threshold PCT], each own instance's output
is gated against torch's (harness.py AGREE_TOL) and against the fp32 product (the key's normwise
bound, rows.py), and the fastest gated instance that beats torch by
more than max(PCT, torch's spread) (PCT: tune's default 3) becomes a row of OUT.db, provider
grouped; a key it does not win is "unchanged". One line per key in the layout of tune's table.
--results FILE adds one tab-separated line per key for the caller (tune): the shapes file's line,
the outcome (improved, unchanged, failed, skipped), baseline and best times in us (0: none), the
winner (provider/instance, or -) and the note. --lines L,... races only those lines of the file.

Exit status: 0; 1 when a key failed (torch or every launch); 77 no CUDA device; 3 torch cannot
be imported; 2 usage.
"""
import argparse
import statistics
import sys

try:
    import torch
except ImportError as _e:  # the caller (tune) reports this as the keys' reason
    sys.stderr.write("gemmtune.grouped: torch cannot be imported: %s\n" % _e)
    sys.exit(3)

from . import rows as gr
from .harness import (AGREE_TOL, decode_tile_hopeless, fill_e4m3, load_lib, operands_of,
                      rel_err, time_graph_samples)


def is_fp8(cells):
    """Whether the key is f8f8bf16_grouped_mm's (gt_grouped_key.h: e4m3 operands, rowwise
    scales, bf16 out)."""
    return cells["a_type"] == "f8e4m3fn"


class Operands:
    """One key's inputs as the key states them: sets rotated weight and activation copies (the
    first one is the one outputs are checked on), the even split of the routed rows, and the
    strides the own kernels take (elements). An fp8 key's operands are e4m3 values of randn * 2
    with one fp32 scale per routed row and one per group and output column (shared by the sets),
    and its baseline torch._scaled_grouped_mm."""

    def __init__(self, cells, sets):
        self.fp8 = is_fp8(cells)
        self.operands = 1 if self.fp8 else 0  # harness.operands_of's value for its instances
        self.fast_accum = cells.get("fast_accum", "0") == "1"
        self.g, self.n, self.k = int(cells["batch"]), int(cells["m"]), int(cells["k"])
        self.rows = int(cells["n"])
        lda, ldb, ldc = int(cells["lda"]), int(cells["ldb"]), int(cells["ldc"])
        sg = int(cells["stride_a"])
        g, n, k, rows = self.g, self.n, self.k, self.rows
        per, extra = divmod(rows, g)
        self.offs = torch.tensor([per * (i + 1) + min(i + 1, extra) for i in range(g)],
                                 dtype=torch.int32, device="cuda")
        self.active = min(g, rows)
        if cells["transa"] == "T":  # nn.Linear-style weights [E][N][K], passed transposed
            shape, self.sbk, self.sbn = (g, n, k), 1, lda
        else:
            shape, self.sbk, self.sbn = (g, k, n), lda, 1
        self.sbg, self.lda, self.ldd = sg, ldb, ldc
        self.sets = []
        dt = torch.float8_e4m3fn if self.fp8 else torch.bfloat16
        for _ in range(sets):
            x = torch.empty_strided((rows, k), (ldb, 1), device="cuda", dtype=dt)
            w = torch.empty_strided(shape, (sg, lda, 1), device="cuda", dtype=dt)
            if self.fp8:
                fill_e4m3(x)
                fill_e4m3(w)
            else:
                x.normal_()
                w.normal_()
            self.sets.append((x, w.transpose(-2, -1) if cells["transa"] == "T" else w))
        if self.fp8:
            self.sa = torch.rand(rows, device="cuda") * 0.5 + 0.5
            self.sb = torch.rand(g, n, device="cuda") * 0.01 + 0.005
        self.out = torch.empty_strided((rows, n), (ldc, 1), device="cuda", dtype=torch.bfloat16)

    def torch_call(self, i):
        x, w = self.sets[i % len(self.sets)]
        if self.fp8:
            return torch._scaled_grouped_mm(x, w, self.sa, self.sb, offs=self.offs,
                                            out_dtype=torch.bfloat16,
                                            use_fast_accum=self.fast_accum)
        return torch._grouped_mm(x, w, offs=self.offs)

    def own_call(self, lib, idx, i, check_only=False):
        """Launch (or, check_only, ask whether instance idx supports) the key on set i."""
        x, w = self.sets[i % len(self.sets)]
        if self.fp8:
            args = (idx, x.data_ptr(), w.data_ptr(), self.out.data_ptr(), self.offs.data_ptr(),
                    self.sa.data_ptr(), self.sb.data_ptr(), self.n, self.rows, self.n, self.k,
                    self.lda, self.ldd, self.sbg, self.sbn, self.g)
            if check_only:
                return lib.gtgb_supports_f8(*args)
            return lib.gtgb_launch_f8(*args, torch.cuda.current_stream().cuda_stream)
        args = (idx, x.data_ptr(), w.data_ptr(), self.out.data_ptr(), self.offs.data_ptr(), 0,
                self.rows, self.n, self.k, self.lda, self.ldd, self.sbg, self.sbk, self.sbn, 0,
                self.g)
        if check_only:
            return lib.gtgb_supports(*args)
        return lib.gtgb_launch(*args, torch.cuda.current_stream().cuda_stream)

    def fp32_ref(self):
        x, w = self.sets[0]
        ends = self.offs.tolist()
        parts = []
        for i in range(self.g):
            r0, r1 = (ends[i - 1] if i else 0), ends[i]
            y = x[r0:r1].float() @ w[i].float()
            if self.fp8:
                y = y * self.sa[r0:r1, None] * self.sb[i][None, :]
            parts.append(y)
        return torch.cat(parts)


def normwise(out, ref):
    return ((out.float() - ref).norm() / (ref.norm() or 1.0)).item()


def summary(us):
    """Median and robust spread (interquartile range over the median, percent) of samples."""
    med = statistics.median(us)
    q = statistics.quantiles(us, n=4) if len(us) > 1 else [med, med, med]
    return med, 100 * (q[2] - q[0]) / med


def sets_for(cells, l2):
    """Operand sets to rotate: past 3x the L2 and never fewer than two (with one, every call
    re-reads the experts the call before it streamed), fewer while over half the free memory."""
    g, n, k, rows = int(cells["batch"]), int(cells["m"]), int(cells["k"]), int(cells["n"])
    es = 1 if is_fp8(cells) else 2  # operand bytes; the output is bf16 either way
    one = es * (int(cells["stride_a"]) * g + rows * k) + 2 * rows * n
    sets = max(2, min(16, -(-3 * l2 // one)))
    free_b, _ = torch.cuda.mem_get_info()
    while sets > 1 and sets * one > free_b // 2:
        sets -= 1
    return sets


def race_own(lib, names, ops, ref32, ref_torch, iters, rounds, say):
    """Every own instance that supports the key, gated before it is timed (a wrong instance is
    reported and never the best) and the fastest checked once more after all the timing."""
    results = []
    for idx, name in enumerate(names):
        # The instances of the key's operands only (bf16, or e4m3 with rowwise scales).
        if operands_of(lib, idx) != ops.operands or decode_tile_hopeless(name, ops.rows,
                                                                         ops.active):
            continue
        if ops.own_call(lib, idx, 0, check_only=True) != 0:
            continue
        ops.out.fill_(0)
        s = ops.own_call(lib, idx, 0)
        torch.cuda.synchronize()
        if s != 0:
            say("  %s: launch status %d (%s)" % (name, s, lib.gtgb_error().decode()))
            continue
        agree_err = rel_err(ops.out, ref_torch, ops.rows)
        res = dict(instance=name, error=normwise(ops.out, ref32), agree=agree_err <= AGREE_TOL)
        if not res["agree"]:
            say("  %s: MISMATCH against torch (rel err %.3g)" % (name, agree_err))
            results.append(dict(res, time_us=float("inf"), spread_pct=0.0))
            continue
        status = []

        def own(i, idx=idx):
            s = ops.own_call(lib, idx, i)
            if s:
                status.append(s)

        try:
            us = time_graph_samples(own, iters, rounds)
        except RuntimeError as e:
            say("  %s: %s" % (name, e))
            continue
        if status:
            say("  %s: launch status %d (%s)" % (name, status[0], lib.gtgb_error().decode()))
            continue
        med, spread = summary(us)
        results.append(dict(res, time_us=med, spread_pct=spread))
    timed = [r for r in results if r["agree"]]
    if timed:
        best = min(timed, key=lambda r: r["time_us"])
        idx = names.index(best["instance"])
        ops.out.fill_(0)
        s = ops.own_call(lib, idx, 0)
        torch.cuda.synchronize()
        if s != 0 or rel_err(ops.out, ref_torch, ops.rows) > AGREE_TOL:
            say("  %s: disagrees with torch after timing" % best["instance"])
            best["agree"] = False
    return results


def sm_clock():
    """The SM clock now, MHz (0 when torch cannot read it: it asks NVML through pynvml)."""
    try:
        return int(torch.cuda.clock_rate(0))
    except Exception:  # noqa: BLE001 - any failure means "unknown", which the row can say
        return 0


class Results:
    """The --results file: one tab-separated line per key (tabs and newlines in notes become
    spaces), flushed as each key ends, so a caller that stops the race keeps what it finished."""

    def __init__(self, path):
        self.f = open(path, "w") if path else None

    def add(self, line, outcome, base_us=0.0, best_us=0.0, winner="-", note=""):
        if self.f:
            clean = " ".join(str(note).split())
            self.f.write("%d\t%s\t%.3f\t%.3f\t%s\t%s\n" % (line, outcome, base_us or 0.0,
                                                         best_us or 0.0, winner, clean))
            self.f.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m gemmtune.grouped",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes")
    ap.add_argument("--rounds", type=int, default=15, help="graph replays timed per candidate")
    ap.add_argument("--reps", type=int, default=20, help="calls per operand set per replay")
    ap.add_argument("--lib", help="libgemmtune_grouped.so: race the own instances too")
    ap.add_argument("--db", help="with --lib: write the rows won here")
    ap.add_argument("--threshold", type=float, default=gr.DEFAULT_THRESHOLD_PCT,
                    help="percent an own instance must beat torch by (default %(default)g, "
                    "as tune; torch's spread raises it)")
    ap.add_argument("--lines", help="race only these lines of the shapes file (comma-separated)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device (default 0)")
    ap.add_argument("--results", help="one tab-separated line per key here (see above)")
    a = ap.parse_args(argv)
    if bool(a.lib) != bool(a.db):
        ap.error("--lib and --db go together")
    try:
        want = set(int(x) for x in a.lines.split(",")) if a.lines else None
    except ValueError:
        ap.error("--lines: a comma-separated list of line numbers, not %r" % a.lines)
    if not torch.cuda.is_available():
        print("gemmtune.grouped: no CUDA device: skipped")
        return 77
    if not 0 <= a.device < torch.cuda.device_count():
        print("gemmtune.grouped: no CUDA device %d (this process sees %d)" % (
            a.device, torch.cuda.device_count()))
        return 77
    torch.cuda.set_device(a.device)
    out = Results(a.results)
    props = torch.cuda.get_device_properties(a.device)
    arch, sms = "sm_%d%d" % (props.major, props.minor), props.multi_processor_count
    mem_gib = props.total_memory >> 30  # gt_db_mem_gib: GiB rounded down
    l2 = props.L2_cache_size
    lib = load_lib(a.lib) if a.lib else None
    names = [lib.gtgb_name(i).decode() for i in range(lib.gtgb_count())] if lib else []
    if lib:
        print(gr.TABLE_HEADER)
    rows, counts, rc = [], {"improved": 0, "unchanged": 0, "failed": 0, "skipped": 0}, 0
    state = {"rc": rc}

    def one(line, shape_row):
        """One key's race; every outcome is printed and goes to the results file."""
        if want is not None and line not in want:
            return
        try:
            cells = gr.key_cells(shape_row)
        except gr.RowError as e:
            print("key %d: skipped: %s" % (line, e))
            out.add(line, "skipped", note=e)
            counts["skipped"] += 1
            return
        # A row is a claim about the device it was measured on: keys of another one are not raced.
        if lib and (cells["arch"], int(cells["sm_count"])) != (arch, sms):
            why = "captured on %s with %s SMs, this device is %s with %d" % (
                cells["arch"], cells["sm_count"], arch, sms)
            print("key %d: skipped: %s" % (line, why))
            out.add(line, "skipped", note=why)
            counts["skipped"] += 1
            return
        try:
            ops = Operands(cells, sets_for(cells, l2))
            iters = a.reps * len(ops.sets)
            ref32 = ops.fp32_ref()
            ref_torch = ops.torch_call(0).clone()
            err = normwise(ref_torch, ref32)
            base_us, base_spread = summary(time_graph_samples(ops.torch_call, iters, a.rounds))
        except RuntimeError as e:
            base = gr.baseline_name(cells)
            print("key %d: failed: %s: %s" % (line, base, e))
            out.add(line, "failed", note="%s: %s" % (base, e))
            counts["failed"] += 1
            state["rc"] = 1
            return
        if not lib:
            print("key %d groups=%d rows=%d N=%d K=%d layout=%s baseline_us=%.3f spread_pct=%.1f "
                  "err=%.2e" % (line, ops.g, ops.rows, ops.n, ops.k, cells["transa"], base_us,
                                base_spread, err), flush=True)
            return
        notes = []
        try:
            results = race_own(lib, names, ops, ref32, ref_torch, iters, a.rounds, notes.append)
        except RuntimeError as e:  # a CUDA error in torch's timing of an own kernel
            print("key %d: failed: %s" % (line, e))
            out.add(line, "failed", base_us, note=str(e))
            counts["failed"] += 1
            state["rc"] = 1
            del ops, ref32, ref_torch
            torch.cuda.empty_cache()
            return
        try:
            row, outcome, best, note = gr.decide(cells, base_us, base_spread, results,
                                                 a.threshold, a.rounds, props.name, mem_gib,
                                                 sm_clock())
        except gr.RowError as e:
            row, outcome, best, note = None, "failed", None, str(e)
            state["rc"] = 1
        if row:
            rows.append(row)
            # Written as each row is won: a race stopped later keeps the rows it finished.
            gr.write_db(a.db, rows, props.name, {"torch": torch.__version__})
        counts[outcome] += 1
        out.add(line, outcome, base_us, best["time_us"] if best else 0.0,
                "%s/%s" % (row["provider"], row["instance"]) if row else "-", note)
        for text in gr.table_lines(line, cells, base_us, best, outcome, row, note):
            print(text)
        for text in notes:
            print("%5s %s" % ("", text))
        sys.stdout.flush()
        del ops, ref32, ref_torch
        torch.cuda.empty_cache()

    for line, shape_row in gr.grouped_keys(a.shapes):
        try:
            one(line, shape_row)
        except Exception as e:  # noqa: BLE001 - one key's failure, named, never the whole race
            print("key %d: failed: %s: %s" % (line, type(e).__name__, e), flush=True)
            out.add(line, "failed", note="%s: %s" % (type(e).__name__, e))
            counts["failed"] += 1
            state["rc"] = 1
            torch.cuda.empty_cache()
    rc = state["rc"]
    if lib:
        gr.write_db(a.db, rows, props.name, {"torch": torch.__version__})
        print("%d improved, %d unchanged, %d failed, %d skipped; wrote %s (%d rows)" % (
            counts["improved"], counts["unchanged"], counts["failed"], counts["skipped"], a.db,
            len(rows)))
    return rc
