"""What PyTorch issues to cuBLAS for the Linear-with-bias family of calls.

Runs each case eagerly (twice) and, for the ones serving engines capture, once more inside
torch.cuda.graph, so that a run under `gemmtune capture` (or with CUBLASLT_LOG_LEVEL=5) shows the
entry point, epilogue, bias type, alpha/beta, C/D and workspace of every call. Prints one line per
case with the output's error against an fp64 CPU reference, so the probe also shows that each path
computes what it claims.

Usage: python3 bench/epilogue_probe.py [--tokens 1,16,512] [--out 4096] [--in 4096]
"""
import argparse

import torch
import torch.nn.functional as F


def ref_linear(x, w, b, act=None):
    y = x.double().cpu() @ w.double().cpu().t()
    if b is not None:
        y = y + b.double().cpu()
    if act == "gelu_tanh":
        y = F.gelu(y, approximate="tanh")
    elif act == "relu":
        y = torch.relu(y)
    return y


def err(y, r):
    return ((y.double().cpu() - r).norm() / r.norm()).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", default="1,16,512")
    ap.add_argument("--out", type=int, default=4096)
    ap.add_argument("--in", dest="inp", type=int, default=4096)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    O, I = a.out, a.inp
    cases = []
    for t in [int(v) for v in a.tokens.split(",")]:
        for dt in (torch.bfloat16, torch.float16, torch.float32):
            x = torch.randn(t, I, device=dev, dtype=dt)
            w = torch.randn(O, I, device=dev, dtype=dt) / I ** 0.5
            b = torch.randn(O, device=dev, dtype=dt)
            name = str(dt).split(".")[-1]
            cases.append((f"F.linear+bias {name} t={t}", lambda x=x, w=w, b=b: F.linear(x, w, b),
                          lambda x=x, w=w, b=b: ref_linear(x, w, b)))
            if dt == torch.float32:
                def tf32(x=x, w=w, b=b):
                    torch.backends.cuda.matmul.allow_tf32 = True
                    try:
                        return F.linear(x, w, b)
                    finally:
                        torch.backends.cuda.matmul.allow_tf32 = False
                cases.append((f"F.linear+bias float32(tf32) t={t}", tf32,
                              lambda x=x, w=w, b=b: ref_linear(x, w, b)))
        x = torch.randn(t, I, device=dev, dtype=torch.bfloat16)
        w = torch.randn(O, I, device=dev, dtype=torch.bfloat16) / I ** 0.5
        b = torch.randn(O, device=dev, dtype=torch.bfloat16)
        c2 = torch.randn(t, O, device=dev, dtype=torch.bfloat16)
        cases.append((f"addmm 1-D bias bf16 t={t}", lambda x=x, w=w, b=b: torch.addmm(b, x, w.t()),
                      lambda x=x, w=w, b=b: ref_linear(x, w, b)))
        cases.append((f"addmm 2-D input bf16 t={t}",
                      lambda x=x, w=w, c2=c2: torch.addmm(c2, x, w.t()),
                      lambda x=x, w=w, c2=c2: ref_linear(x, w, None) + c2.double().cpu()))
        cases.append((f"addmm 2-D input beta=0.5 alpha=2 bf16 t={t}",
                      lambda x=x, w=w, c2=c2: torch.addmm(c2, x, w.t(), beta=0.5, alpha=2.0),
                      lambda x=x, w=w, c2=c2: 2.0 * ref_linear(x, w, None) + 0.5 * c2.double().cpu()))
        cases.append((f"_addmm_activation gelu bf16 t={t}",
                      lambda x=x, w=w, b=b: torch._addmm_activation(b, x, w.t(), use_gelu=True),
                      lambda x=x, w=w, b=b: ref_linear(x, w, b, "gelu_tanh")))
        cases.append((f"_addmm_activation relu bf16 t={t}",
                      lambda x=x, w=w, b=b: torch._addmm_activation(b, x, w.t()),
                      lambda x=x, w=w, b=b: ref_linear(x, w, b, "relu")))
        # GPT-2's Conv1D: addmm(bias, x, W) with W stored [in, out].
        wc = (torch.randn(I, O, device=dev, dtype=torch.bfloat16) / I ** 0.5)
        cases.append((f"Conv1D addmm(b, x, W[in,out]) bf16 t={t}",
                      lambda x=x, wc=wc, b=b: torch.addmm(b, x, wc),
                      lambda x=x, wc=wc, b=b: ref_linear(x, wc.t(), b)))
    for name, fn, ref in cases:
        y = fn()
        y = fn()
        torch.cuda.synchronize()
        print(f"case {name}: out {tuple(y.shape)} {y.dtype} err {err(y, ref()):.3e}", flush=True)
    # A biased Linear inside a CUDA graph: the shim sees it once, at capture.
    x = torch.randn(16, I, device=dev, dtype=torch.bfloat16)
    w = torch.randn(O, I, device=dev, dtype=torch.bfloat16) / I ** 0.5
    b = torch.randn(O, device=dev, dtype=torch.bfloat16)
    F.linear(x, w, b)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            y = F.linear(x, w, b)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    print(f"case graph F.linear+bias bf16 t=16: err {err(y, ref_linear(x, w, b)):.3e}", flush=True)


if __name__ == "__main__":
    main()
