#!/usr/bin/env python3
"""An unmodified PyTorch client of batched GEMMs: torch.bmm and torch.baddbmm on attention-like
shapes, eager and replayed from CUDA graphs, the client of issue 17's capture check
(bench/capture_vs_trace.py) for cublasGemmStridedBatchedEx.

Every op of OPS runs --iters times eagerly (on a side stream, which is also the warm-up that
torch.cuda.graph wants), then is captured once in a torch.cuda.graph of its own and that graph
is replayed --replays times. So each op issues iters + replays GEMMs whose kernels run: iters
eagerly and one per replay. fp32 runs without TF32 (torch.backends.cuda.matmul.allow_tf32 =
False), so its key is a plain fp32 GEMM.

  batched_client.py [--iters 20] [--replays 10] [--json summary.json] [--profile trace.json]

--profile runs everything under torch.profiler (CPU and CUDA activities, record_shapes) and
writes its chrome trace: the reference trace of bench/capture_vs_trace.py. Per op a line
  gemmtune-manifest {"client": "batched_client", "label": "scores", "op": "bmm",
                     "dims": [[256, 256, 64], [256, 64, 256]], "eager_calls": 20,
                     "graph_calls_per_replay": 1, "graph_replays": 10, ...}
gives the torch op, its operands' sizes (as the profiler's "Input Dims" lists them) and the
calls it made; --json writes the same records. Exit status: 0 done, 2 no CUDA device or a
usage error.
"""
import argparse
import json
import sys

# (label, op, dtype, sizes, what). Sizes are the operands in torch's order: bmm (A, B^T-or-B),
# baddbmm (C, A, B). "kt" marks a B made as K.transpose(-1, -2) of a contiguous [batch, N, K]
# tensor, as attention scores use the key cache. The batch is sequences x heads.
OPS = [
    ("scores", "bmm", "bf16", ([256, 256, 64], "kt", [256, 64, 256]),
     "prefill scores Q K^T: 8 sequences x 32 heads, 256 tokens, head 64"),
    ("context", "bmm", "bf16", ([256, 256, 256], [256, 256, 64]),
     "prefill context P V: 8 sequences x 32 heads, 256 tokens, head 64"),
    ("decode_mask2d", "baddbmm", "bf16", ([16, 2048], [256, 16, 128], "kt", [256, 128, 2048]),
     "16 speculative tokens against 2048 cached, head 128, 2-D additive mask (broadcast C)"),
    ("scores_bias3d", "baddbmm", "bf16", ([128, 512, 512], [128, 512, 64], "kt",
                                          [128, 64, 512]),
     "prefill scores with a per-head 3-D position bias: 4 sequences x 32 heads, 512 tokens"),
    ("scores_fp32", "bmm", "f32", ([8, 512, 64], "kt", [8, 64, 512]),
     "fp32 scores, no TF32: 8 heads, 512 tokens, head 64"),
]


def log(msg):
    print(msg, flush=True)


def split_sizes(sizes):
    """The operands' sizes and which of them is a transposed view, from an OPS entry."""
    dims, transposed, mark = [], [], False
    for s in sizes:
        if s == "kt":
            mark = True
            continue
        dims.append(list(s))
        transposed.append(mark)
        mark = False
    return dims, transposed


def make_operands(dims, transposed, dtype, gen):
    import torch
    out = []
    for d, t in zip(dims, transposed):
        if t:  # a contiguous [batch, N, K] tensor seen as [batch, K, N]
            base = torch.randn(d[0], d[2], d[1], generator=gen, device="cuda", dtype=dtype)
            out.append(base.transpose(-1, -2))
        else:
            out.append(torch.randn(*d, generator=gen, device="cuda", dtype=dtype))
    return out


def op_fn(op, operands):
    import torch
    if op == "bmm":
        a, b = operands
        return lambda: torch.bmm(a, b)
    c, a, b = operands
    return lambda: torch.baddbmm(c, a, b, beta=1, alpha=1)


def run(args):
    import torch
    if not torch.cuda.is_available():
        log("batched_client: no CUDA device")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    types = {"bf16": torch.bfloat16, "f32": torch.float32}
    gen = torch.Generator(device="cuda")
    gen.manual_seed(4321)
    log("batched_client: torch %s on %s, %d eager calls per op, then one graph per op replayed "
        "%d times" % (torch.__version__, torch.cuda.get_device_name(0), args.iters,
                      args.replays))
    jobs = []
    for label, op, dt, sizes, what in OPS:
        dims, transposed = split_sizes(sizes)
        operands = make_operands(dims, transposed, types[dt], gen)
        jobs.append(dict(label=label, op=op, dtype=dt, dims=dims, what=what,
                         fn=op_fn(op, operands)))
    torch.cuda.synchronize()

    # Eager, on a side stream: the calls counted as eager, and the warm-up before capture.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for j in jobs:
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.iters):
                j["eager_out"] = j["fn"]()
            stop.record()
            stop.synchronize()
            j["eager_us"] = start.elapsed_time(stop) * 1000.0 / args.iters
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    # One graph per op, each replayed --replays times.
    for j in jobs:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            j["graph_out"] = j["fn"]()
        j["graph"] = g
    torch.cuda.synchronize()
    for j in jobs:
        for _ in range(args.replays):
            j["graph"].replay()
    torch.cuda.synchronize()

    records = []
    for j in jobs:
        same = bool(torch.equal(j["eager_out"], j["graph_out"]))
        log("%-14s %-7s %-4s %-40s %8.2f us eager; graph output %s eager's  (%s)"
            % (j["label"], j["op"], j["dtype"], " x ".join(str(d) for d in j["dims"]),
               j["eager_us"], "equals" if same else "DIFFERS from", j["what"]))
        rec = {"client": "batched_client", "label": j["label"], "op": j["op"],
               "dtype": j["dtype"], "dims": j["dims"], "eager_calls": args.iters,
               "graph_calls_per_replay": 1, "graph_replays": args.replays,
               "eager_us_mean": round(j["eager_us"], 3), "graph_equals_eager": same}
        records.append(rec)
        log("gemmtune-manifest " + json.dumps(rec))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"iters": args.iters, "replays": args.replays, "ops": records}, f,
                      indent=1)
    return 0


def profiled_run(args):
    """run(args) under torch.profiler, its chrome trace written to args.profile."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 record_shapes=True) as prof:
        rc = run(args)
    prof.export_chrome_trace(args.profile)
    log("profile: chrome trace written to %s" % args.profile)
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--iters", type=int, default=20, help="eager calls per op (default 20)")
    ap.add_argument("--replays", type=int, default=10,
                    help="replays of each op's graph (default 10)")
    ap.add_argument("--json", help="write the per-op records here")
    ap.add_argument("--profile", metavar="PATH",
                    help="run under torch.profiler and write its chrome trace to PATH")
    args = ap.parse_args()
    if args.iters < 1 or args.replays < 1:
        ap.error("--iters and --replays must be at least 1")
    return profiled_run(args) if args.profile else run(args)


if __name__ == "__main__":
    sys.exit(main())
