#!/usr/bin/env python3
"""A PyTorch client whose every GEMM key is first issued inside a CUDA graph capture.

Serving engines capture one graph per batch size at start-up, and a batch size whose first call
happens inside torch.cuda.graph is the case the gemmtune shim must decide inside the capture (a
key it left undecided would stay on cuBLAS for the life of the graph). The client builds
llama3-8b-sized projections (qkv 4096->6144, o 4096->4096 reading a strided slice of the qkv
output, gate_up 4096->28672, down 14336->4096) in bf16, called as nn.Linear calls them
(F.linear without bias: cuBLAS TN through cublasGemmEx), and for each batch size captures one
decode step with torch.cuda.graph without running that step (or any GEMM of its shapes) first.
It then replays every graph, times the replays and prints, per batch size,

    gemmtune-metric: step_us_bB <median us per replay> us

for `gemmtune verify`, and checks each graph's output against an fp32 copy of the computation
on the CPU (normwise relative error, printed; exit 1 above --tol): a wrong tuned kernel fails
here, and the reference never goes through the shim.

Before capturing, one GEMM of a shape the step never issues runs eagerly (--warmup-gemm, the
default), as any process that loaded weights or warmed up once does: PyTorch creates its cuBLAS
handle and workspace there (doing that inside a capture would break it), and the shim prepares
the DB's rows at that first call outside capture, so every row is served in the graphs. With
--no-warmup-gemm only torch.cuda.current_blas_handle() runs before the captures (no GEMM at all
outside capture): rows of gemmtune's own kernels are still served in the graphs; cuBLASLt rows
cannot be prepared during a capture by a thread that has no cuBLASLt handle yet, and say so
with GEMMTUNE_LOG=1 (their calls run cuBLAS).

    python3 bench/capture_first_graph.py --batch 1,2,4,8 [--layers 1] [--reps 50] [--tol 3e-2]
    gemmtune verify --db tuned.db -- python3 bench/capture_first_graph.py --batch 4
"""
import argparse
import sys

import torch
import torch.nn.functional as F

DIMS = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]  # (out, in): qkv, o, gate_up, down


def build(layers, seed):
    g = torch.Generator().manual_seed(seed)
    return [[torch.randn(o, i, generator=g) / i ** 0.5 for o, i in DIMS] for _ in range(layers)]


def step(x, ws):
    for wqkv, wo, wgu, wdown in ws:
        qkv = F.linear(x, wqkv)                       # [t, 6144]
        x = x + F.linear(qkv[:, :4096], wo)           # a strided view: ldb 6144
        gu = F.linear(x, wgu)                         # [t, 28672]
        x = x + F.linear(F.silu(gu[:, :14336]) * gu[:, 14336:], wdown)
        x = x * (x.shape[-1] ** 0.5 / x.norm(dim=-1, keepdim=True))
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", default="1,4", help="comma-separated token counts (default 1,4)")
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--reps", type=int, default=50, help="graph replays timed (default 50)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tol", type=float, default=3e-2,
                    help="largest normwise error against fp32 accepted (default 3e-2)")
    ap.add_argument("--warmup-gemm", dest="warmup", action="store_true", default=True,
                    help="one eager GEMM of an unrelated shape before capturing (default)")
    ap.add_argument("--no-warmup-gemm", dest="warmup", action="store_false",
                    help="no GEMM at all outside capture")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("capture_first_graph: no CUDA device", file=sys.stderr)
        return 2
    dev = "cuda"
    w32 = build(a.layers, a.seed)
    w16 = [[w.to(dev, torch.bfloat16) for w in layer] for layer in w32]
    batches = [int(t) for t in a.batch.split(",")]
    if a.warmup:
        # 8 x 64 x 64: a shape no projection of the step has
        t = torch.ones(8, 64, device=dev, dtype=torch.bfloat16)
        (t @ t.T).sum().item()
    else:
        torch.cuda.current_blas_handle()  # the handle and its workspace, without a GEMM
    torch.cuda.synchronize()

    # Every graph captured before any replay: each batch size's keys are first seen in capture.
    # A graph holds no reference to the tensors it reads: each graph's input stays in `graphs`
    # with it, or its memory goes back to the allocator when x16 is rebound and a later
    # allocation (the next batch's input, y.float() below) overwrites what the replay reads.
    graphs = []
    for b in batches:
        g = torch.Generator().manual_seed(a.seed + b)
        x32 = torch.randn(b, 4096, generator=g)
        x16 = x32.to(dev, torch.bfloat16)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = step(x16, w16)
        graphs.append((b, x32, x16, y, graph))
        print("batch %d: captured (first calls of its keys inside the capture)" % b, flush=True)

    worst = 0.0
    for b, x32, _x16, y, graph in graphs:
        graph.replay()
        torch.cuda.synchronize()
        ref = step(x32, w32)
        err = ((y.float().cpu() - ref).norm() / ref.norm()).item()
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
        worst = max(worst, err)
        print("batch %d: step %.1f us (median of 5 x %d replays), error vs fp32 %.3e"
              % (b, times[2], a.reps, err), flush=True)
        print("gemmtune-metric: step_us_b%d %.3f us" % (b, times[2]), flush=True)
    if worst > a.tol:
        print("capture_first_graph: FAIL: error %.3e above --tol %.1e" % (worst, a.tol), flush=True)
        return 1
    print("capture_first_graph: ok (worst error %.3e, tol %.1e)" % (worst, a.tol), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
