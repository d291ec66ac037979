"""One column of bench/decode_vs_inductor.py in its own process: the rows it is given, timed in
the cold CUDA-graph harness the project measures with (python/gemmtune/grouped/harness.py), one JSON line
per row. The driver starts this as `decode_vs_inductor.py --worker COLUMN ...`:

  cublas    F.linear(x, W) in a plain process (no LD_PRELOAD): PyTorch's cublasGemmEx call
  gemmtune  the same F.linear in a process `gemmtune run --db DB` started, so the preload shim
            serves each call from the tuned DB (the driver checks the shim's stats file after)
  inductor  torch.compile(lambda x, w: F.linear(x, w), mode="max-autotune-no-cudagraphs",
            dynamic=False, fullgraph=True), compiled per row in a plain process, the compiled
            function captured in the same CUDA graph harness

W is [out_features, in_features] (the nn.Linear layout), bf16, x [tokens, in_features]. Every row
rotates sets of (x, W) whose total exceeds 3x the L2 (cold_copies), captures calls over them in
one CUDA graph and replays it 15 times: time per call = replay time / calls, one sample per
replay. The graph holds 20 calls, or as many as make a replay last 2 ms (graph_calls, at most
1000): a replay's own launch costs a few microseconds, which 20 calls of a 9 us GEMM would each
carry a share of (measured on the H200: +0.5 us a call, cuBLAS and the tuned kernel alike, against
the same calls in long graphs), while an application's decode step spreads it over hundreds of
kernels. Each column's output on the first set is checked against an fp32 product.

What Inductor picked is read three ways, since each misses something: the generated wrapper
code (torch._inductor.utils.run_and_get_code: the kernels it launches, a template's BLOCK_M/N/K,
num_stages, num_warps, or extern_kernels.mm = aten's cuBLAS call), the kernels' launchers after
the first run (the config a reduction's coordinate descent settled on: at 1 token Inductor
decomposes the mm into a multiply and a sum, no GEMM template at all) and the "AUTOTUNE mm(...)"
table select_algorithm.py writes to stderr in a cold compile (every choice's time). The code and
launchers are there in every round (the FX graph cache hands the code back too); the table only
in the round that compiled cold.

Nothing at module level imports torch: the text readers here run in the driver's CPU self-test.
"""
import json
import os
import re
import statistics
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ("cublas", "gemmtune", "inductor")
ITERS = 20          # calls captured in one CUDA graph, at least (graph_calls)
REPLAY_TARGET_US = 2000.0  # ... or as many as make one replay last this long
MAX_ITERS = 1000
REPS = 15           # graph replays timed, one sample each
WARM_MS = 200.0     # the timed graph replays this long first (at most WARM_MAX times): past the
WARM_MAX = 20       # power-limit ramp of compute-bound rows (time_graph_samples)
COLD_FACTOR = 3     # rotated operand sets must exceed this many times the L2
AGREE_TOL = 2e-2    # largest |out - fp32 product| / largest |fp32 product| (bf16 output)
INDUCTOR_MODE = "max-autotune-no-cudagraphs"
SHIM_NAME = "libgemmtune_preload"
DEVICE = "cuda"     # where measure_row puts its operands (a test may run it on "cpu")


def graph_calls(us_per_call, out_bytes):
    """Calls in the timed graph: ITERS, or enough for a REPLAY_TARGET_US replay at us_per_call
    (measured with ITERS), at most MAX_ITERS and no more outputs than 1 GB of graph memory."""
    want = ITERS
    if us_per_call > 0:
        want = max(ITERS, int(-(-REPLAY_TARGET_US // us_per_call)))
    want = min(want, MAX_ITERS, max(ITERS, (1 << 30) // max(1, out_bytes)))
    return want


def problem_bytes(tokens, out_f, in_f):
    """Bytes one call must move at least: W, x and the output once each, bf16."""
    return 2 * (out_f * in_f + tokens * in_f + tokens * out_f)


def cold_copies(set_bytes, l2_bytes, iters, free_bytes):
    """How many (x, W) sets to rotate over so that together they exceed COLD_FACTOR x the L2:
    the fewest that do and never fewer than two (with one, every call re-reads the weight the
    call before it streamed, and a kernel that finds that call's last bytes in L2 is timed
    faster than a model, which never issues one weight twice in a row, runs it), at most iters
    (more would not all be touched by one graph of iters calls), fewer while they would take
    over half the free memory; 0 when one set does not fit in half of it."""
    want = max(2, COLD_FACTOR * l2_bytes // set_bytes + 1)
    want = min(want, iters)
    while want > 0 and want * set_bytes > free_bytes // 2:
        want -= 1
    return want


def row_key(row):
    """The row's key in the driver and in result lines: OUTxINxTOKENS."""
    return "%dx%dx%d" % (row["out_features"], row["in_features"], row["tokens"])


def summarize_samples(samples):
    """Median microseconds per call and the spread (max - min) / median of one round."""
    med = statistics.median(samples)
    return med, (max(samples) - min(samples)) / med if med > 0 else 0.0


# --- reading what Inductor chose (pure text; the self-test feeds it samples) ---

_KERNEL_RE = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)', '''(.*?)''', device_str=",
                        re.S | re.M)
_EXTERN_RE = re.compile(r"extern_kernels\.(\w+)\(")
_CONSTEXPR_RE = re.compile(r"^\s*([A-Z_][A-Z0-9_]*) : tl\.constexpr = (.+?)\s*$", re.M)
_TEMPLATE_RE = re.compile(r"@triton_heuristics\.template\(\s*num_stages=(\d+),\s*num_warps=(\d+)")
# The template parameters that tell one GEMM config from another.
TEMPLATE_PARAMS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "EVEN_K", "USE_FAST_ACCUM")


def summarize_code(code):
    """The kernels Inductor's wrapper code launches: {"extern": [aten ops it calls through
    extern_kernels, e.g. "mm"], "kernels": [{"name", "kind": template|reduction|pointwise|
    persistent|other, "params": {BLOCK_M...} for a template, "num_stages", "num_warps"}]}."""
    kernels = []
    for m in _KERNEL_RE.finditer(code):
        name, src = m.group(1), m.group(3)
        kind = {"tem": "template", "red": "reduction", "poi": "pointwise",
                "per": "persistent"}.get(name.split("_")[1] if name.count("_") else "", "other")
        k = {"name": name, "kind": kind}
        t = _TEMPLATE_RE.search(src)
        if t:
            k["kind"] = "template"
            k["num_stages"], k["num_warps"] = int(t.group(1)), int(t.group(2))
            consts = dict(_CONSTEXPR_RE.findall(src))
            k["params"] = {p: consts[p] for p in TEMPLATE_PARAMS if p in consts}
        kernels.append(k)
    return {"extern": sorted(set(_EXTERN_RE.findall(code))), "kernels": kernels}


def parse_autotune(text):
    """The "AUTOTUNE op(sizes)" tables of select_algorithm.py's log_results in stderr text:
    [{"op", "sizes", "choices": [{"name", "ms", "pct", "desc"}] fastest first}]."""
    blocks, cur = [], None
    for line in text.splitlines():
        m = re.match(r"^AUTOTUNE (\w+)\((.*)\)\s*$", line)
        if m:
            cur = {"op": m.group(1), "sizes": m.group(2), "choices": []}
            blocks.append(cur)
            continue
        m = re.match(r"^  (\S+) ([0-9.]+) ms ([0-9.]+)% ?(.*)$", line)
        if cur is not None and m:
            cur["choices"].append({"name": m.group(1), "ms": float(m.group(2)),
                                   "pct": float(m.group(3)), "desc": m.group(4).strip()})
        elif cur is not None and not line.startswith(("strides:", "dtypes:", "  ")):
            cur = None
    return blocks


def choice_label(summary, runtime, autotune):
    """One line for the table: what Inductor runs for the row. A GEMM template with its tile
    ("triton_mm BLOCK_M=16 BLOCK_N=64 BLOCK_K=128 GROUP_M=8 stages=5 warps=4"), aten's cuBLAS
    call ("extern mm"), or the kernels a decomposed mm became with the config their autotuning
    picked at run time (runtime: kernel name -> config text)."""
    parts = []
    winner = next((b["choices"][0]["name"] for b in autotune if b["choices"]), None)
    for k in summary["kernels"]:
        if k["kind"] == "template":
            tile = " ".join("%s=%s" % (p, k["params"][p]) for p in TEMPLATE_PARAMS[:4]
                            if p in k["params"])
            name = winner if winner and winner.startswith("triton") else "triton_mm"
            parts.append("%s %s stages=%s warps=%s" % (name, tile, k["num_stages"],
                                                      k["num_warps"]))
        else:
            parts.append("%s[%s]" % (k["name"], runtime.get(k["name"], "config not seen")))
    parts += ["extern %s" % e for e in summary["extern"]]
    return " + ".join(parts) if parts else "no kernel found in the code"


# --- the torch side ---

class _StderrTee:
    """sys.stderr that also keeps what is written (select_algorithm.py writes its AUTOTUNE
    tables with sys.stderr.write in this process)."""

    def __init__(self):
        self.parts, self.orig = [], None

    def write(self, s):
        self.parts.append(s)
        return self.orig.write(s)

    def __getattr__(self, name):
        return getattr(self.orig, name)

    def __enter__(self):
        self.orig, sys.stderr = sys.stderr, self
        return self

    def __exit__(self, *exc):
        sys.stderr = self.orig

    def text(self):
        return "".join(self.parts)


def runtime_configs(modules):
    """Kernel name -> the config its launcher runs, for every Triton kernel (a CachingAutotuner
    bound in an Inductor output module's globals) of modules; after the first call that is the
    config autotuning or coordinate descent kept."""
    found = {}
    for mod in modules:
        for name, obj in list(vars(mod).items()):
            if not name.startswith("triton_"):
                continue
            launchers = getattr(obj, "launchers", None)
            if launchers is None:
                continue
            if len(launchers) != 1:
                found[name] = "%d configs, none picked yet" % len(launchers)
                continue
            cfg = launchers[0].config
            parts = ["%s=%s" % kv for kv in sorted(getattr(cfg, "kwargs", {}).items())]
            parts += ["num_warps=%s" % cfg.num_warps, "num_stages=%s" % cfg.num_stages]
            found[name] = ",".join(parts)
    return found


def compile_inductor(torch, F, x, w):
    """The row's Inductor function, compiled and run once on (x, w) outside any capture (so
    autotuning and coordinate descent are done), with what it chose. Raises when Inductor did
    not compile it (no output code: an eager fallback would time cuBLAS as Inductor)."""
    from torch._dynamo.utils import counters
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.utils import run_and_get_code
    fn = torch.compile(lambda a, b: F.linear(a, b), mode=INDUCTOR_MODE, dynamic=False,
                       fullgraph=True)
    n0 = len(PyCodeCache.modules)
    t0 = time.perf_counter()
    with _StderrTee() as tee:
        # run_and_get_code resets dynamo first, so each row compiles on its own (no recompile
        # limit across the rows' shapes) and hands back the wrapper code, cache hit or not.
        _, codes = run_and_get_code(fn, x, w)
        torch.cuda.synchronize()
    compile_s = time.perf_counter() - t0
    if not codes:
        raise RuntimeError("torch.compile gave no Inductor code for this row: not compiled")
    code = "\n".join(codes)
    summary = summarize_code(code)
    runtime = runtime_configs(PyCodeCache.modules[n0:])
    autotune = parse_autotune(tee.text())
    info = {"compile_s": compile_s, "code": summary, "runtime": runtime, "autotune": autotune,
            "choice": choice_label(summary, runtime, autotune),
            "graphs_compiled": counters["stats"]["unique_graphs"]}
    return fn, info, code


def rel_err(torch, out, x, w):
    """Largest |out - x @ W^T| over the largest |x @ W^T|, the product in fp32."""
    ref = torch.mm(x.float(), w.float().t())
    scale = ref.abs().max().item() or 1.0
    err = (out.float() - ref).abs().max().item() / scale
    del ref
    return err


def measure_row(torch, F, column, row, l2, time_graph_samples, code_dir):
    """One row of one column: operands, the function (compiled for inductor), its output
    checked, then the cold graph samples. Returns the result line's fields."""
    t, n, k = row["tokens"], row["out_features"], row["in_features"]
    set_bytes = problem_bytes(t, n, k)
    free_b, _ = torch.cuda.mem_get_info()
    copies = cold_copies(set_bytes, l2, ITERS, free_b)
    if copies == 0:
        raise RuntimeError("one operand set (%d bytes) does not fit in half the free memory (%d)"
                           % (set_bytes, free_b))
    gen = torch.Generator(device=DEVICE).manual_seed(1000003 * t + 7919 * n + k)
    ws = [torch.randn(n, k, device=DEVICE, dtype=torch.bfloat16, generator=gen).mul_(0.02)
          for _ in range(copies)]
    xs = [torch.randn(t, k, device=DEVICE, dtype=torch.bfloat16, generator=gen)
          for _ in range(copies)]
    rec = {"copies": copies, "cold_bytes": copies * set_bytes}
    fn = F.linear
    if column == "inductor":
        fn, info, code = compile_inductor(torch, F, xs[0], ws[0])
        rec.update(info)
        path = os.path.join(code_dir, "%s_t%d.py" % (row["label"].replace("/", "_"), t))
        if code_dir and not os.path.exists(path):
            with open(path, "w") as f:
                f.write(code)
    rec["rel_err"] = rel_err(torch, fn(xs[0], ws[0]), xs[0], ws[0])
    call = lambda i: fn(xs[i % copies], ws[i % copies])  # noqa: E731
    # A first graph of ITERS calls sizes the timed one; the timed graph warms up first.
    probe = time_graph_samples(call, ITERS, 3)
    iters = graph_calls(statistics.median(probe), 2 * t * n)
    samples = time_graph_samples(call, iters, REPS, warm_ms=WARM_MS, warm_max=WARM_MAX)
    rec["graph_calls"] = iters
    if column == "inductor":
        from torch._dynamo.utils import counters
        if counters["stats"]["unique_graphs"] != rec["graphs_compiled"]:
            raise RuntimeError("the Inductor function recompiled while it was timed")
    rec["samples_us"] = samples
    rec["median_us"], rec["spread"] = summarize_samples(samples)
    return rec


def shim_loaded():
    """Whether libgemmtune_preload.so is mapped into this process."""
    with open("/proc/self/maps") as f:
        return any(SHIM_NAME in line for line in f)


def _emit(out, rec):
    out.write(json.dumps(rec) + "\n")
    out.flush()


def _torch_or_none():
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print("worker: cannot import torch: %s" % e, file=sys.stderr)
        return None, None
    return torch, F


def run(column, rows, result_path, code_dir):
    """The real worker: every row of rows timed for column, one JSON line each into
    result_path, after a header line. Returns 0, 1 when a row failed (its line says why; the
    others still ran), 2 when the process is not set up as the column needs."""
    torch, F = _torch_or_none()
    if torch is None:
        return 2
    if not torch.cuda.is_available():
        print("worker %s: no CUDA device" % column, file=sys.stderr)
        return 2
    shim = shim_loaded()
    if shim != (column == "gemmtune"):
        print("worker %s: the preload shim is %s this process: the column needs it %s"
              % (column, "in" if shim else "not in", "in" if not shim else "out of"),
              file=sys.stderr)
        return 2
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    from gemmtune.grouped.harness import time_graph_samples
    props = torch.cuda.get_device_properties(0)
    l2 = props.L2_cache_size
    rc = 0
    with open(result_path, "w") as out:
        _emit(out, {"type": "worker", "column": column, "torch": torch.__version__,
                    "device": props.name, "l2_bytes": l2, "shim": shim, "pid": os.getpid()})
        for row in rows:
            rec = {"type": "row", "key": row_key(row)}
            t0 = time.perf_counter()
            try:
                with torch.no_grad():
                    rec.update(measure_row(torch, F, column, row, l2, time_graph_samples,
                                           code_dir))
            except Exception as e:  # the row fails loudly; the other rows still run
                traceback.print_exc()
                rec["error"] = "%s: %s" % (type(e).__name__, e)
                rc = 1
            rec["wall_s"] = time.perf_counter() - t0
            _emit(out, rec)
            print("%s %s: %s" % (column, rec["key"], rec.get("error") or "%.2f us" %
                                 rec["median_us"]), file=sys.stderr)
            torch.cuda.empty_cache()
    return rc


# --- the same protocol without torch or a GPU, for the driver's CPU test ---

STATS_HEADER = ("calls,hits,decision,provider,instance,entry,op,a_type,b_type,c_type,d_type,"
                "compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,"
                "stride_c,epilogue,beta_zero,arch,sm_count")


def parse_faults(spec):
    """--fake SPEC: comma-separated faults, each KIND:ARG (setup:COLUMN, crash:COLUMN,
    hang:COLUMN, unserved:KEY, wrong:COLUMN@KEY, slow:KEY), or "ok" for none."""
    faults = []
    for item in (spec or "").split(","):
        if item and item != "ok":
            kind, _, arg = item.partition(":")
            faults.append((kind, arg))
    return faults


def fake_us(column, row, served, rnd, faults):
    """Made-up microseconds per call: a fixed cost plus the bytes at a column's bandwidth
    (cuBLAS 4.2 TB/s + 5 us, gemmtune 4.75 TB/s + 2.5 us, Inductor 4.5 TB/s + 4 us), 0.3%
    slower each round; an unserved gemmtune row runs cuBLAS's time."""
    b = problem_bytes(row["tokens"], row["out_features"], row["in_features"])
    fixed, tbs = {"cublas": (5.0, 4.2), "gemmtune": (2.5, 4.75), "inductor": (4.0, 4.5)}[
        column if column != "gemmtune" or served else "cublas"]
    us = (fixed + b / (tbs * 1e6)) * (1 + 0.003 * (rnd - 1))
    if column == "gemmtune" and ("slow", row_key(row)) in faults:
        us *= 1.5
    return us


def write_fake_stats(path, rows, served_keys, faults):
    """The stats file the shim would write at exit (src/runtime/README.md): per key ITERS + 2
    calls (warm-up, the check, the captured ones), all hits for a key with a DB row unless a
    fault says unserved."""
    lines = [STATS_HEADER]
    for row in rows:
        key = row_key(row)
        calls = ITERS + 2
        hit = key in served_keys and ("unserved", key) not in faults
        decision = "hit" if hit else ("notused" if key in served_keys else "miss")
        prov = ("kernels", "gt_sm90_fake") if key in served_keys else ("-", "-")
        n, k, t = row["out_features"], row["in_features"], row["tokens"]
        lines.append("%d,%d,%s,%s,%s,cublasGemmEx,gemm,bf16,bf16,bf16,bf16,f32,f32,T,N,%d,%d,%d,"
                     "%d,%d,%d,1,0,0,0,none,1,sm_90,132" % (calls, calls if hit else 0, decision,
                                                           prov[0], prov[1], n, t, k, k, k, n))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run_fake(column, rows, result_path, spec, rnd, served_keys):
    """The worker's protocol with fake_us times: the header line, one line per row, the shim's
    stats file for the gemmtune column (GEMMTUNE_STATS, as the shim writes it at exit). The
    environment checks are the real worker's, by variables: the gemmtune column must have been
    started through `gemmtune run` (LD_PRELOAD and GEMMTUNE_DB set), the others without."""
    faults = parse_faults(spec)
    deployed = bool(os.environ.get("LD_PRELOAD")) and bool(os.environ.get("GEMMTUNE_DB"))
    if deployed != (column == "gemmtune") or ("setup", column) in faults:
        print("worker %s: the preload shim is %s this process" % (
            column, "in" if deployed else "not in"), file=sys.stderr)
        return 2
    with open(result_path, "w") as out:
        _emit(out, {"type": "worker", "column": column, "torch": "fake", "device": "fake",
                    "l2_bytes": 50 << 20, "shim": deployed, "pid": os.getpid()})
        if ("crash", column) in faults:
            print("worker %s: planted crash" % column, file=sys.stderr)
            os._exit(3)
        if ("hang", column) in faults:
            time.sleep(600)
        for row in rows:
            key = row_key(row)
            us = fake_us(column, row, key in served_keys and ("unserved", key) not in faults,
                         rnd, faults)
            samples = [us * (1 + 0.002 * (j - REPS // 2) / REPS) for j in range(REPS)]
            rec = {"type": "row", "key": key, "copies": 1, "samples_us": samples,
                   "rel_err": 0.5 if ("wrong", "%s@%s" % (column, key)) in faults else 2e-3}
            rec["median_us"], rec["spread"] = summarize_samples(samples)
            if column == "inductor":
                kern = "triton_red_fused_mul_sum_0" if row["tokens"] == 1 else None
                summary = {"extern": [], "kernels": [
                    {"name": kern, "kind": "reduction"} if kern else
                    {"name": "triton_tem_fused_mm_0", "kind": "template", "num_stages": 5,
                     "num_warps": 4, "params": {"BLOCK_M": "16", "BLOCK_N": "64",
                                                "BLOCK_K": "128", "GROUP_M": "8"}}]}
                runtime = {kern: "R0_BLOCK=2048,XBLOCK=1,num_warps=8,num_stages=1"} if kern else {}
                rec.update(compile_s=0.01 if rnd > 1 else 2.0, code=summary, runtime=runtime,
                           autotune=[], choice=choice_label(summary, runtime, []))
            _emit(out, rec)
    if column == "gemmtune":
        write_fake_stats(os.environ["GEMMTUNE_STATS"], rows, served_keys, faults)
    return 0
