#!/usr/bin/env python3
"""An unmodified transformers MoE model as a gemmtune workload (issue 24's acceptance client).

Builds a small Mixtral- or Qwen3-MoE-shaped model from a config written here (random weights, no
download), runs it with transformers' default experts implementation (torch._grouped_mm on the
H200), and reports for every step how far its bf16 logits are from an fp32 copy of the same model:

  prefill           eager forward of a prompt (batch 1, --prompt-len tokens)
  decode_bB         one decode-shaped step (B tokens of one position each) captured in a CUDA graph
                    and replayed --reps times; its time is printed as
                    "gemmtune-metric: decode_step_bB <us per replay> us" for `gemmtune verify`

Lines "moe-check: STEP err_vs_fp32=E" give the normwise relative error ||bf16 - fp32|| / ||fp32||
of the logits; --json FILE writes them as {"STEP": E, ...}. Under the shim with a tuned DB the
errors must stay of the plain bf16 run's size (bench/moe_e2e.sh compares the two runs).
"""
import argparse
import json
import time

import torch


def build(family, layers, seed):
    import transformers as tf
    if family == "mixtral":
        cfg = tf.MixtralConfig(vocab_size=4096, hidden_size=1024, intermediate_size=3584,
                               num_hidden_layers=layers, num_attention_heads=8,
                               num_key_value_heads=4, num_local_experts=8, num_experts_per_tok=2,
                               max_position_embeddings=1024)
        cls = tf.MixtralForCausalLM
    else:
        cfg = tf.Qwen3MoeConfig(vocab_size=4096, hidden_size=1024, intermediate_size=3072,
                                moe_intermediate_size=768, num_hidden_layers=layers,
                                num_attention_heads=8, num_key_value_heads=4, head_dim=128,
                                num_experts=16, num_experts_per_tok=8, decoder_sparse_step=1,
                                mlp_only_layers=[], max_position_embeddings=1024)
        cls = tf.Qwen3MoeForCausalLM
    torch.manual_seed(seed)
    ref = cls(cfg).to("cuda", torch.float32).eval()
    model = cls(cfg).to("cuda", torch.bfloat16).eval()
    model.load_state_dict({k: v.to(torch.bfloat16) for k, v in ref.state_dict().items()})
    return model, ref


def capture_step(forward):
    """forward() captured in a CUDA graph after two warm-up calls on a side stream (outside the
    capture, as serving engines do), replayed once: (the graph, forward's outputs, now filled)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            forward()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = forward()
    g.replay()
    torch.cuda.synchronize()
    return g, out


def print_replay_metric(g, reps, name):
    """Times reps replays of graph g and prints "gemmtune-metric: NAME <us per replay> us", the
    line `gemmtune verify` reads."""
    t0 = time.perf_counter()
    for _ in range(reps):
        g.replay()
    torch.cuda.synchronize()
    us = (time.perf_counter() - t0) / max(reps, 1) * 1e6
    print("gemmtune-metric: %s %.3f us" % (name, us), flush=True)


def rel_err(x, ref):
    x, ref = x.float(), ref.float()
    return (torch.linalg.vector_norm(x - ref) / torch.linalg.vector_norm(ref)).item()


@torch.inference_mode()
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", choices=["mixtral", "qwen3_moe"], default="mixtral")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", default="1,16", help="decode batch sizes (default 1,16)")
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--reps", type=int, default=50, help="graph replays timed (default 50)")
    ap.add_argument("--no-prefill", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", help="write the logits errors here")
    a = ap.parse_args()
    model, ref = build(a.family, a.layers, a.seed)
    errs = {}
    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    if not a.no_prefill:
        ids = torch.randint(0, 4096, (1, a.prompt_len), device="cuda", generator=gen)
        out = model(input_ids=ids, use_cache=False).logits
        errs["prefill"] = rel_err(out, ref(input_ids=ids, use_cache=False).logits)
        print("moe-check: prefill err_vs_fp32=%.4e" % errs["prefill"], flush=True)
    for b in [int(x) for x in a.batch.split(",") if x]:
        ids = torch.randint(0, 4096, (b, 1), device="cuda", generator=gen)
        g, static = capture_step(lambda: model(input_ids=ids, use_cache=False).logits)
        step = "decode_b%d" % b
        errs[step] = rel_err(static, ref(input_ids=ids, use_cache=False).logits)
        print("moe-check: %s err_vs_fp32=%.4e" % (step, errs[step]), flush=True)
        print_replay_metric(g, a.reps, "decode_step_b%d" % b)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(errs, f)


if __name__ == "__main__":
    main()
