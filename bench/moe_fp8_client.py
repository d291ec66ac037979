#!/usr/bin/env python3
"""An fp8 Mixture-of-Experts layer as a gemmtune workload: torch._scaled_grouped_mm with rowwise
scales (at::cuda::detail::f8f8bf16_grouped_mm on sm_90), the call fp8 MoE stacks built on
torchao / torchtitan make, driven the way bench/moe_e2e.py drives a transformers model, so
bench/moe_e2e.sh runs capture -> tune -> verify -> outputs on it (MODEL=bench/moe_fp8_client.py
FAMILIES="deepseek_v3 qwen3_moe").

One layer: tokens routed top-k among the experts, activations quantized per row to e4m3 (scale =
row amax / 448), then

  h = _scaled_grouped_mm(x8, w_gate_up8^T, sx, s_gate_up, offs)    # bf16 [rows][2I]
  a = silu(h[:, :I]) * h[:, I:], quantized per row again
  y = _scaled_grouped_mm(a8, w_down8^T, sa, s_down, offs)          # bf16 [rows][D]

with expert weights [E][N][K] e4m3 quantized per output channel (s_* [E][N], fp32). Steps, as
moe_e2e.py names them:

  prefill      eager, --prompt-len tokens
  decode_bB    B tokens captured in a CUDA graph and replayed --reps times; its time is printed as
               "gemmtune-metric: decode_step_bB <us per replay> us" for `gemmtune verify`

"moe-check: STEP err_vs_fp32=E" is the larger of the two GEMMs' normwise relative errors, each
against the fp32 product of the same quantized inputs (x8 and sx for h, the run's own a8 and sa
for y) and the dequantized weights; --json FILE writes {"STEP": E, ...}. Under the shim with a
tuned DB the errors must stay of the plain run's size.
"""
import argparse
import json

import torch
import torch.nn.functional as F

from moe_e2e import capture_step, print_replay_metric  # bench/: the same graph step and metric

FAMILIES = {  # experts, top-k, hidden D, expert intermediate I (one MoE layer of the model)
    "deepseek_v3": (256, 8, 7168, 2048),
    "qwen3_moe": (128, 8, 2048, 768),
    "mixtral": (8, 2, 4096, 14336),
}
E4M3_MAX = 448.0


def quant_rows(t):
    """e4m3 rows of t and their fp32 scales (amax / 448 each)."""
    s = (t.float().abs().amax(dim=1).clamp(min=1e-12) / E4M3_MAX)
    return (t.float() / s[:, None]).to(torch.float8_e4m3fn), s.contiguous()


def quant_weights(experts, n, k, gen):
    """[E][N][K] e4m3 weights quantized per output channel, their [E][N] scales, made a few
    experts at a time (a whole DeepSeek-V3 layer in fp32 would be tens of GB)."""
    w8 = torch.empty(experts, n, k, device="cuda", dtype=torch.float8_e4m3fn)
    s = torch.empty(experts, n, device="cuda")
    step = max(1, (256 << 20) // (n * k * 4))
    for e in range(0, experts, step):
        w = torch.randn(min(step, experts - e), n, k, device="cuda", generator=gen) * 0.02
        s[e:e + step] = w.abs().amax(dim=2).clamp(min=1e-12) / E4M3_MAX
        w8[e:e + step] = (w / s[e:e + step, :, None]).to(torch.float8_e4m3fn)
    return w8, s


class Layer:
    def __init__(self, family, seed):
        self.experts, self.topk, self.d, self.i = FAMILIES[family]
        gen = torch.Generator(device="cuda").manual_seed(seed)
        self.wgu, self.sgu = quant_weights(self.experts, 2 * self.i, self.d, gen)
        self.wdn, self.sdn = quant_weights(self.experts, self.d, self.i, gen)

    def route(self, x):
        """Rows sorted by expert (each token top-k times) and offs, as an MoE layer builds them;
        nothing here waits for the host, so the step can be captured in a CUDA graph. The router
        scores are the token's first E features (no GEMM: the workload's GEMMs are the experts')."""
        pick = x[:, :self.experts].float().topk(self.topk, dim=1).indices.flatten()
        order = pick.argsort(stable=True)
        counts = torch.zeros(self.experts, device="cuda", dtype=torch.int64).scatter_add_(
            0, pick, torch.ones_like(pick))
        offs = torch.cumsum(counts, 0).to(torch.int32)
        rows = x[:, None, :].expand(-1, self.topk, -1).reshape(-1, x.shape[1])[order]
        return rows, offs

    def forward(self, x):
        rows, offs = self.route(x)
        x8, sx = quant_rows(rows)
        h = torch._scaled_grouped_mm(x8, self.wgu.transpose(-2, -1), sx, self.sgu, offs=offs,
                                     out_dtype=torch.bfloat16)
        a = F.silu(h[:, :self.i]) * h[:, self.i:]
        a8, sa = quant_rows(a)
        y = torch._scaled_grouped_mm(a8, self.wdn.transpose(-2, -1), sa, self.sdn, offs=offs,
                                     out_dtype=torch.bfloat16)
        return y, (x8, sx, h, a8, sa, offs)

    def error(self, y, saved):
        """The larger normwise relative error of the two GEMMs against fp32 products of the
        same quantized inputs and the dequantized weights: h (gate+up) from x8, y (down) from
        the run's own a8. Each measures one GEMM alone, so a wrong kernel in either shows."""
        x8, sx, h, a8, sa, offs = saved
        ends = offs.tolist()
        eh = ey = 0.0
        nh = ny = 0.0
        for g in range(self.experts):
            r0, r1 = (ends[g - 1] if g else 0), ends[g]
            if r1 == r0:
                continue
            wgu = self.wgu[g].float() * self.sgu[g][:, None]
            wdn = self.wdn[g].float() * self.sdn[g][:, None]
            href = (x8[r0:r1].float() * sx[r0:r1, None]) @ wgu.t()
            yref = (a8[r0:r1].float() * sa[r0:r1, None]) @ wdn.t()
            eh += (h[r0:r1].float() - href).pow(2).sum().item()
            nh += href.pow(2).sum().item()
            ey += (y[r0:r1].float() - yref).pow(2).sum().item()
            ny += yref.pow(2).sum().item()
        return max((eh / max(nh, 1e-60)) ** 0.5, (ey / max(ny, 1e-60)) ** 0.5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", choices=sorted(FAMILIES), default="deepseek_v3")
    ap.add_argument("--batch", default="1,16", help="decode batch sizes (default 1,16)")
    ap.add_argument("--prompt-len", type=int, default=256)
    ap.add_argument("--reps", type=int, default=50, help="graph replays timed (default 50)")
    ap.add_argument("--no-prefill", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", help="write the errors here")
    a = ap.parse_args()
    layer = Layer(a.family, a.seed)
    gen = torch.Generator(device="cuda").manual_seed(a.seed + 1)
    errs = {}
    if not a.no_prefill:
        x = torch.randn(a.prompt_len, layer.d, device="cuda", generator=gen, dtype=torch.bfloat16)
        y, saved = layer.forward(x)
        errs["prefill"] = layer.error(y, saved)
        print("moe-check: prefill err_vs_fp32=%.4e" % errs["prefill"], flush=True)
    for b in [int(v) for v in a.batch.split(",") if v]:
        x = torch.randn(b, layer.d, device="cuda", generator=gen, dtype=torch.bfloat16)
        g, (y, saved) = capture_step(lambda: layer.forward(x))
        step = "decode_b%d" % b
        errs[step] = layer.error(y, saved)
        print("moe-check: %s err_vs_fp32=%.4e" % (step, errs[step]), flush=True)
        print_replay_metric(g, a.reps, "decode_step_b%d" % b)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(errs, f)


if __name__ == "__main__":
    main()
