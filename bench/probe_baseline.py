#!/usr/bin/env python3
"""Is the cuBLAS call an application makes the call tune races against?

For each shape, the same cublasGemmEx problem is issued three ways inside CUDA graphs over
rotated weights (at least 3x the L2 cache), and each graph is replayed alternately:
  torch    F.linear, as a PyTorch model issues it (torch's handle, stream, workspace)
  thandle  cublasGemmEx through ctypes on torch's own handle (current_blas_handle)
  fresh    cublasGemmEx through ctypes on a handle of our own with a 32 MiB workspace, as tune's
           baseline and its live replay call it
and, with --slab, the same operands carved out of one allocation per operand (every copy at a
256-byte aligned offset of a single torch.empty, as tune's live replay allocates them) instead of one
allocation per copy (as a model's weights are):
  tslab    F.linear on the slab copies
  slab     the fresh handle's cublasGemmEx on the slab copies
so a gap between tune's live replay and the application can be put down to (or cleared of) where
the operands sit in memory, with the call itself unchanged.
Prints per-call time (median of the replays) and the cuBLAS kernels each way ran (torch.profiler),
so a gap between the application's baseline and tune's can be placed: a different kernel
(handle state) or the same kernel timed differently (context).

Usage: python3 bench/probe_baseline.py [--shapes M,N,K ...] [--replays 15] [--slab] [--json out.json]
"""
import argparse
import ctypes
import json
import statistics
import sys

import torch
import torch.nn.functional as F

CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUDA_R_16BF = 14
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1


def libcublas():
    torch.ones(8, 8, device="cuda", dtype=torch.bfloat16) @ torch.ones(8, 8, device="cuda",
                                                                      dtype=torch.bfloat16)
    torch.cuda.synchronize()
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if "/libcublas.so" in p:
                return p
    raise SystemExit("probe_baseline: no libcublas mapped after a torch matmul")


def slab_copies(copies, align=256):
    """The copies (same shape and dtype) again, as views of one allocation at align-byte
    offsets, with the same values."""
    t0 = copies[0]
    nbytes = t0.numel() * t0.element_size()
    stride = -(-nbytes // align) * align
    slab = torch.empty(stride * len(copies), dtype=torch.uint8, device=t0.device)
    out = []
    for i, t in enumerate(copies):
        v = slab[i * stride:i * stride + nbytes].view(t0.dtype).view(t0.shape)
        v.copy_(t)
        out.append(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", nargs="*", default=["6144,4,4096", "6144,8,4096",
                                                    "128256,1,4096", "8192,1,28672",
                                                    "4096,1,14336", "14336,1,4096"],
                    help="M,N,K with M the out features, N the tokens, K the in features")
    ap.add_argument("--replays", type=int, default=15)
    ap.add_argument("--slab", action="store_true",
                    help="also time the copies carved out of one allocation per operand")
    ap.add_argument("--json")
    a = ap.parse_args()
    path = libcublas()
    lib = ctypes.CDLL(path)
    lib.cublasGemmEx.restype = ctypes.c_int
    vp, ci = ctypes.c_void_p, ctypes.c_int
    lib.cublasGemmEx.argtypes = [vp, ci, ci, ci, ci, ci, vp, vp, ci, ci, vp, ci, ci, vp, vp, ci,
                                 ci, ci, ci]
    th = ctypes.c_void_p(torch.cuda.current_blas_handle())
    mode = ctypes.c_int(-1)
    lib.cublasGetMathMode(th, ctypes.byref(mode))
    own = ctypes.c_void_p()
    assert lib.cublasCreate_v2(ctypes.byref(own)) == 0
    ws = torch.empty(32 << 20, dtype=torch.uint8, device="cuda")
    ver = ctypes.c_int()
    lib.cublasGetVersion_v2(own, ctypes.byref(ver))
    print("libcublas %s version %d; torch handle math mode %d; torch %s" % (
        path, ver.value, mode.value, torch.__version__))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    alpha = ctypes.c_float(1.0)
    beta = ctypes.c_float(0.0)
    out = []
    for s in a.shapes:
        m, n, k = (int(v) for v in s.split(","))
        wbytes = m * k * 2
        copies = max(2, -(-3 * l2 // wbytes))
        W = [torch.randn(m, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        X = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        Y = [torch.empty(n, m, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        if a.slab:
            SW, SX, SY = (slab_copies(t) for t in (W, X, Y))
        stream = torch.cuda.Stream()
        # The stream once, then the workspace: cublasSetStream resets the workspace to cuBLAS's
        # default pool.
        lib.cublasSetStream_v2(own, ctypes.c_void_p(stream.cuda_stream))
        lib.cublasSetWorkspace_v2(own, ctypes.c_void_p(ws.data_ptr()), ctypes.c_size_t(ws.numel()))

        def ct(handle, i, w=W, x=X, y=Y):
            st = lib.cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, ctypes.byref(alpha),
                                  ctypes.c_void_p(w[i].data_ptr()), CUDA_R_16BF, k,
                                  ctypes.c_void_p(x[i].data_ptr()), CUDA_R_16BF, k,
                                  ctypes.byref(beta), ctypes.c_void_p(y[i].data_ptr()),
                                  CUDA_R_16BF, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
            assert st == 0, st
            return y[i]

        ways = {
            "torch": lambda i: F.linear(X[i], W[i]),
            "thandle": lambda i: ct(ctypes.c_void_p(torch.cuda.current_blas_handle()), i),
            "fresh": lambda i: ct(own, i),
        }
        if a.slab:
            ways["tslab"] = lambda i: F.linear(SX[i], SW[i])
            ways["slab"] = lambda i: ct(own, i, SW, SX, SY)
        # calls per graph: a replay of about 2 ms
        t_est = max(wbytes / 4.0e12, 4e-6)
        calls = max(copies, min(1000, int(2e-3 / t_est)))
        graphs = {}
        for name, fn in ways.items():
            with torch.cuda.stream(stream):
                for i in range(copies):
                    fn(i)
                stream.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, stream=stream):
                    for c in range(calls):
                        fn(c % copies)
            graphs[name] = g
        ref = torch.mm(X[0], W[0].t()).float()
        for name, fn in ways.items():
            with torch.cuda.stream(stream):
                y = fn(0)
            stream.synchronize()
            err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
            assert err < 1e-2, (name, err)
        times = {name: [] for name in ways}
        order = list(ways)
        for r in range(a.replays):
            for name in (order if r % 2 == 0 else order[::-1]):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                with torch.cuda.stream(stream):
                    e0.record()
                    graphs[name].replay()
                    e1.record()
                e1.synchronize()
                times[name].append(e0.elapsed_time(e1) * 1e3 / calls)
        kern = {}
        for name in ways:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                with torch.cuda.stream(stream):
                    graphs[name].replay()
                stream.synchronize()
            ks = {}
            for ev in prof.events():
                if ev.device_type == torch.autograd.DeviceType.CUDA:
                    d = ks.setdefault(ev.name, [0, 0.0])
                    d[0] += 1
                    d[1] += ev.device_time
            kern[name] = {kn: {"launches": v[0], "us_per_call": v[1] / calls}
                          for kn, v in ks.items()}
        row = {"m": m, "n": n, "k": k, "copies": copies, "calls": calls,
               "median_us": {w: statistics.median(t) for w, t in times.items()},
               "spread_pct": {w: 100 * (max(t) - min(t)) / statistics.median(t)
                              for w, t in times.items()},
               "kernels": kern}
        out.append(row)
        print("m=%d n=%d k=%d (%d copies, %d calls/graph): %s" % (
            m, n, k, copies, calls, "  ".join("%s %.2f us (spread %.1f%%)" % (
                w, row["median_us"][w], row["spread_pct"][w]) for w in ways)))
        for w in ways:
            for kn, v in kern[w].items():
                print("    %-8s %4d x %-90s %.2f us/call" % (w, v["launches"], kn[:90],
                                                          v["us_per_call"]))
        del W, X, Y, graphs
        if a.slab:
            del SW, SX, SY
        torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"lib": path, "version": ver.value, "math_mode": mode.value,
                       "rows": out}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
