#!/usr/bin/env python3
"""Does where a weight lies change cuBLAS's time? The same F.linear calls (eager cuBLAS, the
client's method: rotated copies past 3x the L2, one CUDA graph, median of 15 replays after a
200 ms warm-up), the copies either separate tensors (each its own allocation, as a model's
weights are and as bench/decode_worker.py makes them) or views into one tensor (one allocation,
as gemmtune's live replay carved them before it gave large sets their own). The two layouts
alternate, ROUNDS times each, in one process.

Usage: python3 bench/probe_placement.py [--rounds N] [--shapes OUTxINxTOKENS,...]
Prints one line per shape and layout (median of the round medians, their range) and the ratio
one/separate; --json PATH writes the numbers."""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))

DEFAULT_SHAPES = "6144x4096x4,6144x4096x8,6144x4096x16,6144x4096x1,14336x4096x2,128256x4096x512"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--json")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import decode_worker as dw
    from gemmtune.grouped.harness import time_graph_samples
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    out = []
    for spec in a.shapes.split(","):
        n, k, t = (int(v) for v in spec.split("x"))
        set_bytes = dw.problem_bytes(t, n, k)
        free_b, _ = torch.cuda.mem_get_info()
        copies = dw.cold_copies(set_bytes, l2, dw.ITERS, free_b)
        gen = torch.Generator(device="cuda").manual_seed(n * 31 + k * 7 + t)
        sep = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=gen).mul_(0.02)
               for _ in range(copies)]
        big = torch.randn(copies * n, k, device="cuda", dtype=torch.bfloat16,
                          generator=gen).mul_(0.02)
        one = [big[i * n:(i + 1) * n] for i in range(copies)]
        xs = [torch.randn(t, k, device="cuda", dtype=torch.bfloat16, generator=gen)
              for _ in range(copies)]
        probe = time_graph_samples(lambda i: F.linear(xs[i % copies], sep[i % copies]),
                                   dw.ITERS, 3)
        iters = dw.graph_calls(statistics.median(probe), 2 * t * n)
        meds = {"separate": [], "one": []}
        for r in range(a.rounds):
            for name in (("separate", "one") if r % 2 == 0 else ("one", "separate")):
                ws = sep if name == "separate" else one
                s = time_graph_samples(lambda i: F.linear(xs[i % copies], ws[i % copies]),
                                       iters, dw.REPS, warm_ms=dw.WARM_MS, warm_max=dw.WARM_MAX)
                meds[name].append(statistics.median(s))
        rec = {"shape": spec, "copies": copies, "graph_calls": iters,
               "weight_ptrs_mod_2MiB": [w.data_ptr() % (2 << 20) for w in sep],
               "rounds": meds}
        line = "%-18s %d copies %4d calls/graph" % (spec, copies, iters)
        for name in ("separate", "one"):
            m = meds[name]
            rec[name + "_us"] = statistics.median(m)
            line += "  %s %.2f us (%.2f-%.2f)" % (name, statistics.median(m), min(m), max(m))
        rec["one_over_separate"] = rec["one_us"] / rec["separate_us"]
        line += "  one/separate %.3f" % rec["one_over_separate"]
        print(line, flush=True)
        out.append(rec)
        del sep, big, one, xs
        torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
