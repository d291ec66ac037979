#!/usr/bin/env python3
"""Times the baseline of every grouped_mm key of a gemmtune shapes file: torch's own path for the
call (torch._grouped_mm, which on the H200 is at::cuda::detail::bf16bf16_grouped_mm: the one-block
prepare_grouped_gemm_data kernel, then CUTLASS's ptr-array kernel).

`gemmtune tune` cannot run that baseline (it is torch's function; the tuning process has no torch),
so this harness replays it from torch on the captured key, the way the key states it
(src/core/gt_grouped_key.h): groups = batch, N = m, K = k, routed rows = n (the bucket's upper
end) split evenly over the groups, the weight [E][N][K] seen transposed (transa T) or [E][K][N]
(transa N). Inputs rotate among sets larger than the L2 (cold, as gemmtune times), each step is
graph-replayed, and the output is checked against an fp32 product. One line per key:

  key LINE groups=G rows=R N=N K=K layout=T baseline_us=X spread_pct=S err=E
"""
import argparse
import csv
import statistics

import torch


def grouped_keys(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("#")]
    for i, row in enumerate(csv.DictReader(lines), start=2):
        if row.get("op") == "grouped_mm" and row.get("not_tunable", "-") in ("-", ""):
            yield i, row


def operands(row, sets):
    g, n, k, rows = int(row["batch"]), int(row["m"]), int(row["k"]), int(row["n"])
    per, extra = divmod(rows, g)
    offs = torch.tensor([per * (i + 1) + min(i + 1, extra) for i in range(g)], dtype=torch.int32,
                        device="cuda")
    out = []
    for _ in range(sets):
        a = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
        if row["transa"] == "T":  # nn.Linear-style weights [E][N][K], passed transposed
            w = torch.randn(g, n, k, device="cuda", dtype=torch.bfloat16).transpose(-2, -1)
        else:
            w = torch.randn(g, k, n, device="cuda", dtype=torch.bfloat16)
        out.append((a, w))
    return out, offs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shapes")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--reps", type=int, default=20, help="replays per round")
    a = ap.parse_args()
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for line, row in grouped_keys(a.shapes):
        g, n, k, rows = int(row["batch"]), int(row["m"]), int(row["k"]), int(row["n"])
        one = 2 * (g * n * k + rows * k + rows * n)
        sets = max(1, min(16, -(-3 * l2 // one)))
        ops, offs = operands(row, sets)
        a0, w0 = ops[0]
        ref = torch.cat([a0[(offs[i - 1] if i else 0):offs[i]].float() @ w0[i].float()
                         for i in range(g)])
        err = ((torch._grouped_mm(a0, w0, offs=offs).float() - ref).norm() / ref.norm()).item()
        graph = torch.cuda.CUDAGraph()
        torch._grouped_mm(a0, w0, offs=offs)  # warm-up outside the capture
        with torch.cuda.graph(graph):
            for _ in range(a.reps):
                for x, w in ops:
                    torch._grouped_mm(x, w, offs=offs)
        times = []
        for _ in range(a.rounds):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            graph.replay()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e3 / (a.reps * len(ops)))
        med = statistics.median(times)
        q = statistics.quantiles(times, n=4) if len(times) > 1 else [med, med, med]
        print("key %d groups=%d rows=%d N=%d K=%d layout=%s baseline_us=%.3f spread_pct=%.1f "
              "err=%.2e" % (line, g, rows, n, k, row["transa"], med,
                            100 * (q[2] - q[0]) / med, err), flush=True)


if __name__ == "__main__":
    main()
