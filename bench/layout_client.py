#!/usr/bin/env python3
"""A PyTorch client whose projections are `x @ W` with W stored [in_features, out_features].

That is the layout of GPT-2's Conv1D (and of weights ported from frameworks that keep [in, out]):
PyTorch hands cuBLAS an NN GEMM (the weights M-major), where nn.Linear's `x @ W.T` is TN. The
client runs a stack of llama3-8b-sized projections (qkv 4096->6144, o 4096->4096 reading a
strided slice of the qkv output, up 4096->14336, down 14336->4096) in bf16, replays one step as a
CUDA graph and prints

    gemmtune-metric: step_us <median us per replayed step> us

for `gemmtune verify`, then checks its own output against an fp32 copy of the same computation
(normwise relative error, printed; exit 1 above --tol). The reference runs on the CPU, so under
the gemmtune shim it never goes through a tuned kernel (and `capture` records only the bf16
GEMMs), while a wrong tuned kernel fails here.

    python3 bench/layout_client.py --batch 1,16 [--layers 1] [--reps 50] [--tol 3e-2]
"""
import argparse
import sys

import torch


def build(layers, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    dims = [(4096, 6144), (4096, 4096), (4096, 14336), (14336, 4096)]  # qkv, o, up, down
    return [[torch.randn(i, o, generator=g, device=device) / i ** 0.5 for i, o in dims]
            for _ in range(layers)]


def step(x, ws):
    for wqkv, wo, wup, wdown in ws:
        qkv = x @ wqkv                       # [t, 6144]
        x = x + qkv[:, :4096] @ wo           # a strided view: ldb 6144
        x = x + torch.nn.functional.silu(x @ wup) @ wdown
        x = x * (x.shape[-1] ** 0.5 / x.norm(dim=-1, keepdim=True))
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", default="1", help="comma-separated token counts (default 1)")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--reps", type=int, default=50, help="graph replays timed (default 50)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tol", type=float, default=3e-2,
                    help="largest normwise error against fp32 accepted (default 3e-2)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("layout_client: no CUDA device", file=sys.stderr)
        return 2
    dev = "cuda"
    w32 = build(a.layers, a.seed, dev)
    w16 = [[w.to(torch.bfloat16) for w in layer] for layer in w32]
    w32 = [[w.cpu() for w in layer] for layer in w32]  # the fp32 reference runs on the CPU
    worst = 0.0
    for b in [int(t) for t in a.batch.split(",")]:
        g = torch.Generator(device="cpu").manual_seed(a.seed + b)
        x32 = torch.randn(b, 4096, generator=g)
        x16 = x32.to(dev, torch.bfloat16)
        ref = step(x32, w32)
        # eager once (warm-up and the value checked), then the same step as a replayed graph
        y = step(x16, w16)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                step(x16, w16)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            yg = step(x16, w16)
        graph.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(a.reps):
                graph.replay()
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1) * 1e3 / a.reps)
        times.sort()
        err = max(((y.float().cpu() - ref).norm() / ref.norm()).item(),
                  ((yg.float().cpu() - ref).norm() / ref.norm()).item())
        worst = max(worst, err)
        print("batch %d: step %.1f us (median of 5 x %d replays), error vs fp32 %.3e"
              % (b, times[2], a.reps, err), flush=True)
        print("gemmtune-metric: step_us %.3f us" % times[2], flush=True)
    if worst > a.tol:
        print("layout_client: FAIL: error %.3e above --tol %.1e" % (worst, a.tol), flush=True)
        return 1
    print("layout_client: ok (worst error %.3e, tol %.1e)" % (worst, a.tol), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
