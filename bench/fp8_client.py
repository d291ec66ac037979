#!/usr/bin/env python3
"""An fp8 PyTorch client for issue 16: torch._scaled_mm on e4m3 operands the way W8A8 serving
code calls it (weights quantized once, activations per step), tensorwise and rowwise scales, bf16
output, with and without a bias, at decode and prefill token counts, in a CUDA graph.

Per (mode, bias, tokens, layer) it checks the output against an fp64 product of the dequantized
operands and prints the largest relative error; then it captures one step of every such call in a
CUDA graph, replays it, and prints "gemmtune-metric: fp8_step X us" (what `gemmtune verify`
measures end to end). Exit 1 if an output is off by more than the fp8 bound.

    python3 bench/fp8_client.py [--tokens 1,16,256] [--reps 20] [--no-graph]
"""
import argparse
import statistics
import sys

import torch

F8 = torch.float8_e4m3fn
F8_MAX = 448.0
SHAPES = [(4096, 4096), (14336, 4096), (4096, 14336)]  # (out, in) of llama-3-8B-like Linears


def quant_tensor(x):
    s = (x.abs().max().float() / F8_MAX).clamp(min=1e-12)
    return (x / s).to(F8), s.reshape(())


def quant_rows(x):
    s = (x.abs().amax(dim=1, keepdim=True).float() / F8_MAX).clamp(min=1e-12)
    return (x / s).to(F8), s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,16,256")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--no-graph", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    tokens = [int(t) for t in a.tokens.split(",")]
    calls = []  # (label, fn, reference)
    worst = 0.0
    for (o, i) in SHAPES:
        w = torch.randn(o, i, device=dev) * 0.05
        bias = (torch.randn(o, device=dev) * 0.1).to(torch.bfloat16)
        wq_t, ws_t = quant_tensor(w)
        wq_r, ws_r = quant_rows(w)
        for t in tokens:
            x = torch.randn(t, i, device=dev)
            xq_t, xs_t = quant_tensor(x)
            xq_r, xs_r = quant_rows(x)
            for mode in ("tensor", "row"):
                xq, xs, wq, ws = (xq_t, xs_t, wq_t, ws_t) if mode == "tensor" else (xq_r, xs_r, wq_r, ws_r)
                sb = ws if mode == "tensor" else ws.reshape(1, o)
                for b in (None, bias):
                    def fn(xq=xq, wq=wq, xs=xs, sb=sb, b=b):
                        return torch._scaled_mm(xq, wq.t(), scale_a=xs, scale_b=sb, bias=b,
                                                out_dtype=torch.bfloat16)
                    ref = (xq.double() * xs.double()) @ (wq.double() * ws.double()).t()
                    if b is not None:
                        ref = ref + b.double()
                    got = fn().double()
                    err = ((got - ref).abs().max() / ref.abs().max().clamp(min=1e-30)).item()
                    worst = max(worst, err)
                    label = "%s%s t%d %dx%d" % (mode, "+bias" if b is not None else "", t, o, i)
                    calls.append((label, fn))
                    print("check %-28s max rel err %.2e" % (label, err))
    # bf16 output rounding (2^-8) dominates; fp8 products are exact in fp32, sums to K=14336.
    bound = 2.0 ** -7
    print("largest relative error %.2e (bound %.2e)" % (worst, bound))
    if a.no_graph:
        return 0 if worst <= bound else 1
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _, fn in calls:  # warm outside capture
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    outs = []
    with torch.cuda.graph(g):
        for _, fn in calls:
            outs.append(fn())
    times = []
    for _ in range(a.reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    med = statistics.median(times)
    print("graph (%d fp8 calls) replay median %.1f us (%d replays)" % (len(calls), med, a.reps))
    print("gemmtune-metric: fp8_step %.1f us" % med)
    return 0 if worst <= bound else 1


if __name__ == "__main__":
    sys.exit(main())
