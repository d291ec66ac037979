#!/usr/bin/env python3
"""A transformers decoder model with random weights: the unmodified PyTorch workload that
bench/llama_capture_tune.sh and bench/llama_verify.sh deploy gemmtune into.

--family picks the model (4 layers, bf16, SDPA attention; nothing is downloaded):
  llama  LlamaForCausalLM (hidden 4096, intermediate 14336, 32 heads, 8 KV heads, vocab 128256):
         no Linear has a bias, every GEMM is cublasGemmEx.
  qwen2  Qwen2ForCausalLM with Qwen2-7B's widths (hidden 3584, intermediate 18944, 28 heads,
         4 KV heads, vocab 152064): the q/k/v projections carry biases (cublasLtMatmul with the
         bias epilogue), the rest does not.
  gpt2   GPT2LMHeadModel at a 7B width (n_embd 4096, 32 heads, n_inner 16384, vocab 50257):
         every projection is a Conv1D, addmm(bias, x, W) with W stored [in, out] (NN layout, bias
         epilogue), and the tied lm_head has no bias.
  smol, phi3, gemma, opt  widths no corpus file holds, to check the loop on shapes it was never
         tuned to: SmolLM-135M's (hidden 576 in 9 heads of 64, 3 KV heads: a 192-row k/v
         projection, vocab 49152, tied), Phi-3-mini's (fused qkv 9216x3072 and gate_up
         16384x3072, vocab 32064), Gemma-2B's (head_dim 256, one KV head: 256x2048 k/v, GeGLU
         16384, vocab 256000, tied) and OPT-1.3B's (every Linear biased, ReLU, learned positions).
Weights come from a seeded CUDA generator, prompts from a seeded CPU generator, so two processes
build the same model and feed it the same tokens: their logits differ only by what the GEMMs
computed.

Per batch size (--batch 1,16): an eager prefill of --prompt-len tokens (DynamicCache, logits of the
last position only, as generate() asks) and one decode step with a fixed token. With --graph, also
a 1-token decode step captured with torch.cuda.graph against a StaticCache (a 4D mask covers the
filled slots, the cache position is reset before each replay) and replayed --reps times; the
median replay time (CUDA events) is reported. When the StaticCache step cannot be captured, a plain
1-token forward without a cache is captured instead, and the output says which one ran.

  llama_model.py --batch 1,16 [--graph] [--fp32-ref] [--save logits.pt] [--profile trace.json]
  llama_model.py --compare REF.pt GOT.pt [--tol 1e-2] [--json out.json]
  llama_model.py --check-hits DB.csv STATS.csv [--json out.json]

--save writes the logits (bf16, as the model produced them) and, with --fp32-ref, the logits of an
fp32 copy of the same model, which --compare uses to show the inherent bf16 error next to the
error between two runs. --check-hits reads a tuned DB and a GEMMTUNE_STATS file and requires a
hit on every call of every tuned key. --profile runs everything under torch.profiler (CPU and
CUDA activities, record_shapes) and writes its chrome trace, the reference trace of
bench/capture_vs_trace.py. With --graph, a line per batch
  gemmtune-manifest {"client": "llama_model", "batch": 1, ..., "graph_replays_total": 11}
says how often the captured step ran (the timed --reps replays and the final one), as does the
--json summary (graph_replays_total). Exit status: 0 pass, 1 fail, 2 usage or setup error.
"""
import argparse
import csv
import json
import re
import statistics
import sys
import time

KEY_FIELDS = ["op", "a_type", "b_type", "c_type", "d_type", "compute", "scale_type", "transa",
              "transb", "m", "n", "k", "lda", "ldb", "ldc", "batch", "stride_a", "stride_b",
              "stride_c", "epilogue", "beta_zero", "arch", "sm_count",
              "scale_a", "scale_b", "fast_accum", "scale_d", "amax_d"]
# The fp8 fields are absent from files written before them (DB format 2): their defaults.
KEY_DEFAULTS = {"scale_a": "none", "scale_b": "none", "fast_accum": "0", "scale_d": "0",
                "amax_d": "0"}


def log(msg):
    print(msg, flush=True)


# ---- the model --------------------------------------------------------------------------------

# The models; --tiny shrinks each to check the script itself on any machine (--device cpu).
FAMILIES = {
    "llama": dict(cls="LlamaForCausalLM", config="LlamaConfig",
                  dims=dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                            num_key_value_heads=8, vocab_size=128256),
                  tiny=dict(hidden_size=256, intermediate_size=512, num_attention_heads=8,
                            num_key_value_heads=2, vocab_size=1024),
                  extra=dict(max_position_embeddings=4096, tie_word_embeddings=False)),
    "qwen2": dict(cls="Qwen2ForCausalLM", config="Qwen2Config",
                  dims=dict(hidden_size=3584, intermediate_size=18944, num_attention_heads=28,
                            num_key_value_heads=4, vocab_size=152064),
                  tiny=dict(hidden_size=256, intermediate_size=512, num_attention_heads=8,
                            num_key_value_heads=2, vocab_size=1024),
                  extra=dict(max_position_embeddings=4096, tie_word_embeddings=False)),
    "gpt2": dict(cls="GPT2LMHeadModel", config="GPT2Config",
                 dims=dict(n_embd=4096, n_head=32, n_inner=16384, vocab_size=50257),
                 tiny=dict(n_embd=256, n_head=8, n_inner=1024, vocab_size=1024),
                 extra=dict(n_positions=4096)),
    # Families with widths outside the llama corpus, for a check on shapes nothing was tuned to.
    "smol": dict(cls="LlamaForCausalLM", config="LlamaConfig",
                 dims=dict(hidden_size=576, intermediate_size=1536, num_attention_heads=9,
                           num_key_value_heads=3, vocab_size=49152),
                 tiny=dict(hidden_size=192, intermediate_size=512, num_attention_heads=3,
                           num_key_value_heads=1, vocab_size=1024),
                 extra=dict(max_position_embeddings=2048, tie_word_embeddings=True)),
    "phi3": dict(cls="Phi3ForCausalLM", config="Phi3Config",
                 dims=dict(hidden_size=3072, intermediate_size=8192, num_attention_heads=32,
                           num_key_value_heads=32, vocab_size=32064),
                 tiny=dict(hidden_size=256, intermediate_size=512, num_attention_heads=8,
                           num_key_value_heads=8, vocab_size=1024),
                 extra=dict(max_position_embeddings=4096, pad_token_id=0, bos_token_id=1,
                            eos_token_id=2, tie_word_embeddings=False)),
    "gemma": dict(cls="GemmaForCausalLM", config="GemmaConfig",
                  dims=dict(hidden_size=2048, intermediate_size=16384, num_attention_heads=8,
                            num_key_value_heads=1, head_dim=256, vocab_size=256000),
                  tiny=dict(hidden_size=256, intermediate_size=1024, num_attention_heads=4,
                            num_key_value_heads=1, head_dim=64, vocab_size=1024),
                  extra=dict(max_position_embeddings=4096)),
    "opt": dict(cls="OPTForCausalLM", config="OPTConfig",
                dims=dict(hidden_size=2048, word_embed_proj_dim=2048, ffn_dim=8192,
                          num_attention_heads=32, vocab_size=50272),
                tiny=dict(hidden_size=256, word_embed_proj_dim=256, ffn_dim=1024,
                          num_attention_heads=8, vocab_size=1024),
                extra=dict(max_position_embeddings=2048, pad_token_id=1)),
}
FAMILY = "llama"
DEVICE = "cuda"


def build_model(layers, seed, tiny):
    import torch
    import transformers
    fam = FAMILIES[FAMILY]
    dims = fam["tiny"] if tiny else fam["dims"]
    layer_key = "n_layer" if FAMILY == "gpt2" else "num_hidden_layers"
    cfg = getattr(transformers, fam["config"])(**{layer_key: layers}, attn_implementation="sdpa",
                                               **fam["extra"], **dims)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(DEVICE):
            model = getattr(transformers, fam["cls"])(cfg)
    finally:
        torch.set_default_dtype(prev)
    # Our own initialisation, in a fixed order from a seeded generator: the model is the same in
    # every process whatever transformers' own init does. Matrices N(0, 0.02) (the config's
    # initializer_range), biases N(0, 0.02) too (a zero bias would hide a kernel that drops it),
    # norm weights 1.
    gen = torch.Generator(device=DEVICE)
    gen.manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if p.dim() >= 2 or name.endswith("bias"):
                p.normal_(0.0, 0.02, generator=gen)
            else:
                p.fill_(1.0)
            if p.dtype != torch.bfloat16:
                p.data = p.data.to(torch.bfloat16)
    # Buffers keep their dtype (the rotary inv_freq stays fp32, as in a checkpoint-loaded model).
    return model.eval()


def weights_checksum(model):
    import torch
    with torch.no_grad():
        s = 0.0
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            s += float(p.float().abs().sum()) * (1 + len(name) % 7)
    return s


def inputs_for(batch, prompt_len, vocab, seed):
    import torch
    g = torch.Generator(device="cpu")
    g.manual_seed(seed * 1000 + batch)
    prompt = torch.randint(0, vocab, (batch, prompt_len), generator=g)
    nxt = torch.randint(0, vocab, (batch, 1), generator=g)
    return prompt.to(DEVICE), nxt.to(DEVICE)


def keep_last(model):
    """logits_to_keep=1 where the model takes it (not every family does)."""
    import inspect
    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}


def eager_step(model, prompt, nxt):
    """Prefill, then one decode step. Returns (prefill last-position logits, decode logits).
    logits_to_keep=1: only the last prefill position goes through lm_head, as generate() does."""
    import torch
    with torch.no_grad():
        out = model(input_ids=prompt, use_cache=True, **keep_last(model))
        prefill = out.logits[:, -1, :].clone()
        out2 = model(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
        decode = out2.logits[:, -1, :].clone()
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return prefill, decode


def checksum(t):
    f = t.float()
    return {"sum": float(f.sum()), "abs_sum": float(f.abs().sum()),
            "first": [round(float(x), 5) for x in f.flatten()[:4]]}


# ---- graph capture of a decode step ------------------------------------------------------------

def capture_and_replay(step, reset, reps):
    """Warm up on a side stream, capture step() with torch.cuda.graph, replay reps times.
    Returns (output of the last replay, replay times in us)."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            reset()
            step()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    reset()
    with torch.cuda.graph(graph):
        out = step()
    times = []
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        reset()  # a few tiny kernels, outside the timed region
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1000.0)
    reset()
    graph.replay()
    torch.cuda.synchronize()
    return out[:, -1, :].clone(), times


def graph_static(model, prompt, nxt, reps):
    import torch
    from transformers import StaticCache
    batch, plen = prompt.shape
    length = plen + 1
    cache = StaticCache(config=model.config, max_cache_len=length)
    # no_grad, not inference_mode: the cache is reset in place between replays, which inference
    # tensors allow only inside inference mode.
    with torch.no_grad():
        model(input_ids=prompt, past_key_values=cache, use_cache=True, **keep_last(model))
    layers = getattr(cache, "layers", None)
    if not layers or not all(hasattr(l, "cumulative_length") for l in layers):
        raise RuntimeError("StaticCache has no per-layer cumulative_length to reset")
    # A prepared 4D mask is used as-is: no mask construction (and no host sync) inside capture.
    mask = torch.zeros(batch, 1, 1, length, dtype=torch.bool, device=DEVICE)
    mask[..., :plen + 1] = True
    ids = nxt.clone()

    def reset():
        for l in layers:
            l.cumulative_length.fill_(plen)

    def step():
        with torch.no_grad():
            return model(input_ids=ids, past_key_values=cache, use_cache=True,
                         attention_mask=mask).logits
    return capture_and_replay(step, reset, reps)


def graph_nocache(model, nxt, reps):
    import torch
    ids = nxt.clone()

    def step():
        with torch.no_grad():
            return model(input_ids=ids, use_cache=False).logits
    return capture_and_replay(step, lambda: None, reps)


def graph_step(model, prompt, nxt, reps, cache_mode):
    if cache_mode in ("auto", "static"):
        try:
            out, times = graph_static(model, prompt, nxt, reps)
            return out, times, "static-cache decode step"
        except Exception as e:  # noqa: BLE001 - any failure means: use the fallback
            if cache_mode == "static":
                raise
            log("graph: StaticCache step not capturable here (%s: %s); capturing a 1-token "
                "forward without a cache" % (type(e).__name__, str(e).splitlines()[0][:200]))
            import torch
            torch.cuda.synchronize()
    out, times = graph_nocache(model, nxt, reps)
    return out, times, "1-token forward, no cache"


# ---- run ---------------------------------------------------------------------------------------

def run(args):
    import torch
    global DEVICE, FAMILY
    DEVICE = args.device
    FAMILY = args.family
    if DEVICE == "cuda" and not torch.cuda.is_available():
        log("no CUDA device")
        return 2
    if args.graph and DEVICE != "cuda":
        log("--graph needs --device cuda")
        return 2
    t0 = time.time()
    batches = [int(b) for b in args.batch.split(",") if b]
    model = build_model(args.layers, args.seed, args.tiny)
    wsum = weights_checksum(model)
    log("model: " + FAMILIES[FAMILY]["cls"] + ", %d layers, %.2fB parameters, bf16, weights checksum %.6e, "
        "built in %.1f s (torch %s)" % (args.layers, sum(p.numel() for p in model.parameters()) / 1e9,
                                       wsum, time.time() - t0, torch.__version__))
    saved = {"weights_checksum": wsum, "batches": batches, "prompt_len": args.prompt_len}
    summary = {"weights_checksum": wsum, "runs": []}
    vocab = model.config.vocab_size
    ref = None
    if args.fp32_ref:
        import copy
        ref = copy.deepcopy(model).float().eval()
    for b in batches:
        prompt, nxt = inputs_for(b, args.prompt_len, vocab, args.seed)
        t1 = time.time()
        prefill, decode = eager_step(model, prompt, nxt)
        rec = {"batch": b, "prefill": checksum(prefill), "decode": checksum(decode),
               "eager_s": round(time.time() - t1, 3)}
        log("batch %d: prefill %d tokens + 1 decode step: decode logits sum %.6e abs %.6e first %s"
            % (b, args.prompt_len, rec["decode"]["sum"], rec["decode"]["abs_sum"],
               rec["decode"]["first"]))
        saved["b%d_prefill" % b] = prefill.cpu()
        saved["b%d_decode" % b] = decode.cpu()
        if ref is not None:
            rp, rd = eager_step(ref, prompt, nxt)
            saved["b%d_prefill_fp32" % b] = rp.cpu()
            saved["b%d_decode_fp32" % b] = rd.cpu()
        if args.graph:
            try:
                gout, times, what = graph_step(model, prompt, nxt, args.reps, args.cache)
            except Exception as e:  # noqa: BLE001 - reported; the eager results still count
                log("batch %d: graph capture failed: %s: %s" % (b, type(e).__name__,
                                                                str(e).splitlines()[0][:300]))
                rec["graph"] = "failed"
                summary["runs"].append(rec)
                continue
            med = statistics.median(times)
            # capture_and_replay replays the graph once more after the timed replays.
            rec.update(graph=what, replay_us_median=round(med, 2),
                       replay_us_min=round(min(times), 2), replays=len(times),
                       graph_replays_total=len(times) + 1)
            saved["b%d_graph" % b] = gout.cpu()
            saved["b%d_graph_kind" % b] = what
            agree = ""
            if what.startswith("static"):
                d = (gout.float() - decode.float()).norm() / decode.float().norm()
                rec["graph_vs_eager_rel_err"] = float(d)
                agree = ", vs eager decode rel err %.2e" % float(d)
            log("batch %d: graph (%s) replay median %.1f us (min %.1f, %d replays)%s"
                % (b, what, med, min(times), len(times), agree))
            log("gemmtune-manifest " + json.dumps(
                {"client": "llama_model", "family": FAMILY, "batch": b, "graph": what,
                 "timed_replays": len(times), "graph_replays_total": len(times) + 1}))
        summary["runs"].append(rec)
    if args.save:
        torch.save(saved, args.save)
        log("saved logits to %s" % args.save)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    log("done in %.1f s" % (time.time() - t0))
    return 0


# ---- compare two runs --------------------------------------------------------------------------

def rel_err(a, b):
    """Normwise relative error of a against the reference b, and the max abs difference."""
    a, b = a.double(), b.double()
    nb = float(b.norm())
    return (float((a - b).norm()) / nb if nb > 0 else float("inf"),
            float((a - b).abs().max()))


def compare(args):
    import torch
    ref = torch.load(args.compare[0], weights_only=False)
    got = torch.load(args.compare[1], weights_only=False)
    ok = True
    out = {"tol": args.tol, "rows": []}
    if abs(ref["weights_checksum"] - got["weights_checksum"]) > 1e-6 * abs(ref["weights_checksum"]):
        log("FAIL: the two runs built different models (weights checksum %.9e vs %.9e)"
            % (ref["weights_checksum"], got["weights_checksum"]))
        return 1
    log("%-14s %12s %12s %12s %12s %10s  %s" % ("logits", "rel_err", "max_abs", "bf16_vs_fp32",
                                                 "tuned_vs_fp32", "top1_same", "verdict"))
    outputs = sorted(k for k in ref if re.match(r"^b\d+_(prefill|decode|graph)$", k))
    if not outputs:
        log("FAIL: %s holds no logits" % args.compare[0])
        return 1
    for name in outputs:
        if name not in got:
            log("%-14s missing in %s" % (name, args.compare[1]))
            ok = False
            continue
        r, g = ref[name], got[name]
        if r.shape != g.shape:
            log("%-14s shapes differ: %s vs %s" % (name, tuple(r.shape), tuple(g.shape)))
            ok = False
            continue
        err, mx = rel_err(g, r)
        top1 = float((g.float().argmax(-1) == r.float().argmax(-1)).float().mean())
        inherent = tuned = None
        # The graph replays the same decode step as the eager run, so it shares its fp32 reference.
        fp32 = name + "_fp32"
        if fp32 not in ref and name.endswith("_graph"):
            fp32 = name[: -len("_graph")] + "_decode_fp32"
        if fp32 in ref and ref[fp32].shape == r.shape:
            inherent, _ = rel_err(r, ref[fp32])
            tuned, _ = rel_err(g, ref[fp32])
        finite = bool(torch.isfinite(g.float()).all())
        # Graph outputs are informational when the two runs captured different things.
        gated = not name.endswith("_graph") or ref.get(name + "_kind") == got.get(name + "_kind")
        # The tuned run passes when it is within --tol of the plain run, or, where an fp32 copy of
        # the model was run, when it is no further from that fp32 reference than the plain bf16
        # run is (with 25% slack): a tuned GEMM may round differently from cuBLAS, but it must
        # not be less accurate than the path it replaces. A wrong GEMM is O(1) off either way.
        good = finite and (err < args.tol or
                           (tuned is not None and tuned <= 1.25 * inherent))
        if gated and not good:
            ok = False
        verdict = ("ok" if good else "FAIL") if gated else "info"
        log("%-14s %12.3e %12.3e %12s %12s %10.3f  %s" % (
            name, err, mx, "%.3e" % inherent if inherent is not None else "-",
            "%.3e" % tuned if tuned is not None else "-", top1, verdict))
        out["rows"].append({"logits": name, "rel_err": err, "max_abs": mx, "top1_same": top1,
                            "bf16_vs_fp32_rel_err": inherent, "tuned_vs_fp32_rel_err": tuned,
                            "gated": gated, "ok": good})
    out["pass"] = ok
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    log("logits: %s (every gated output within %g of the plain run, or no further from the fp32 "
        "model than the plain bf16 run, +25%%)" % ("PASS" if ok else "FAIL", args.tol))
    return 0 if ok else 1


# ---- tuned keys vs what the shim did -----------------------------------------------------------

def read_db_keys(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("#") and l.strip()]
    rows = list(csv.DictReader(lines))
    return [(tuple(r.get(k, KEY_DEFAULTS.get(k)) for k in KEY_FIELDS), r.get("provider", "-"), r.get("instance", "-"),
             r.get("speedup", "")) for r in rows]


def describe(key):
    k = dict(zip(KEY_FIELDS, key))
    return "%s%s m=%s n=%s k=%s" % (k["transa"], k["transb"], k["m"], k["n"], k["k"])


def check_hits(args):
    db = read_db_keys(args.check_hits[0])
    with open(args.check_hits[1]) as f:
        stats = list(csv.DictReader(f))
    by_key = {}
    for r in stats:
        key = tuple(r.get(k, KEY_DEFAULTS.get(k)) for k in KEY_FIELDS)
        e = by_key.setdefault(key, {"calls": 0, "hits": 0, "decisions": set(), "entries": set()})
        e["calls"] += int(r["calls"])
        e["hits"] += int(r["hits"])
        e["decisions"].add(r["decision"])
        e["entries"].add(r["entry"])
    ok = bool(db)
    out = {"tuned_rows": len(db), "keys": []}
    log("%-28s %-10s %8s %8s  %-9s %s" % ("tuned key", "speedup", "calls", "hits", "decision",
                                           "row"))
    for key, prov, inst, speedup in db:
        e = by_key.get(key)
        calls = e["calls"] if e else 0
        hits = e["hits"] if e else 0
        dec = "/".join(sorted(e["decisions"])) if e else "not called"
        good = e is not None and calls > 0 and hits == calls and e["decisions"] == {"hit"}
        ok = ok and good
        log("%-28s %-10s %8d %8d  %-9s %s/%s%s" % (describe(key), speedup, calls, hits, dec, prov,
                                                   inst, "" if good else "   <- FAIL"))
        out["keys"].append({"key": dict(zip(KEY_FIELDS, key)), "provider": prov, "instance": inst,
                            "calls": calls, "hits": hits, "decision": dec, "ok": good})
    total_calls = sum(int(r["calls"]) for r in stats)
    total_hits = sum(int(r["hits"]) for r in stats)
    other = {}
    for r in stats:
        other[r["decision"]] = other.get(r["decision"], 0) + int(r["calls"])
    log("all GEMM calls under the shim: %d, served by tuned candidates: %d (%.1f%%); by decision: %s"
        % (total_calls, total_hits, 100.0 * total_hits / total_calls if total_calls else 0.0,
           ", ".join("%s %d" % kv for kv in sorted(other.items()))))
    if not db:
        log("hits: FAIL (the tuned DB has no rows: nothing was deployed)")
    else:
        log("hits: %s (every call of every tuned key served by its tuned candidate)" %
            ("PASS" if ok else "FAIL"))
    out.update({"pass": ok, "total_calls": total_calls, "total_hits": total_hits,
                "by_decision": other})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if ok else 1


def profiled_run(args):
    """run(args) under torch.profiler, its chrome trace written to args.profile."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities, record_shapes=True) as prof:
        rc = run(args)
    prof.export_chrome_trace(args.profile)
    log("profile: chrome trace written to %s" % args.profile)
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", default="1", help="comma-separated batch sizes (default 1)")
    ap.add_argument("--prompt-len", type=int, default=16, help="prefill tokens (default 16)")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="llama",
                    help="the model (default llama; qwen2 has biased q/k/v, gpt2 Conv1D with bias; "
                         "smol, phi3, gemma, opt: widths outside the corpus)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--tiny", action="store_true",
                    help="a small model with the same structure, to check this script")
    ap.add_argument("--device", default="cuda", help="cuda (default), or cpu with --tiny")
    ap.add_argument("--graph", action="store_true",
                    help="also capture a 1-token decode step with torch.cuda.graph and time replays")
    ap.add_argument("--cache", choices=("auto", "static", "none"), default="auto",
                    help="graph mode: StaticCache decode step, a no-cache forward, or static "
                         "falling back to none (default)")
    ap.add_argument("--reps", type=int, default=50, help="graph replays timed (default 50)")
    ap.add_argument("--fp32-ref", action="store_true",
                    help="also save the logits of an fp32 copy of the model")
    ap.add_argument("--save", help="write the logits to this .pt file")
    ap.add_argument("--json", help="write a machine-readable summary here")
    ap.add_argument("--profile", metavar="PATH",
                    help="run under torch.profiler (CPU and CUDA, record_shapes) and write its "
                         "chrome trace to PATH")
    ap.add_argument("--compare", nargs=2, metavar=("REF", "GOT"))
    ap.add_argument("--tol", type=float, default=1e-2,
                    help="--compare: normwise relative error bound (default 1e-2)")
    ap.add_argument("--check-hits", nargs=2, metavar=("DB", "STATS"))
    args = ap.parse_args()
    try:
        if args.compare:
            return compare(args)
        if args.check_hits:
            return check_hits(args)
        if args.profile:
            return profiled_run(args)
        return run(args)
    except FileNotFoundError as e:
        log("error: %s" % e)
        return 2


if __name__ == "__main__":
    sys.exit(main())
