#!/usr/bin/env python3
"""Checks `gemmtune capture`'s shapes file against an independent kernel trace of the same workload.

capture counts every cuBLAS GEMM call a process makes, by key, with its GPU time (a call made
under CUDA graph capture once per replay, its time taken from the replayed kernels). This runs
the client twice and compares that file with what the GPU ran (issue 17's acceptance, items b
and c):

  1. gemmtune capture -o OUT/shapes.csv -- CLIENT...
  2. the reference trace, without the shim:
       kineto  CLIENT... --profile OUT/trace.json: the client's own torch.profiler run (CPU and
               CUDA activities, record_shapes), a CUPTI trace written by PyTorch's kineto
       tracer  CUDA_INJECTION64_PATH=libgemmtune_trace.so GEMMTUNE_TRACE=OUT/trace.%p CLIENT...:
               gemmtune's kernel tracer, a plain CUPTI activity record of every kernel by name
               (src/runtime/trace/README.md), which knows nothing of capture's attribution
     --trace picks one; the default is kineto for a Python client (the command is python* or a
     .py file), tracer otherwise.

GEMM kernels are told by name with the rule of gt_cublas_owns_kernel
(src/providers/cuda/gt_cuda_kernel_names.c): a name starting nvjet, sm90_xmma or cutlass, or
containing gemm, gemv or splitkreduce in any case, applied to the name as the trace spells it.

Totals (both traces): captured GEMM time is the sum of time_us over the shapes file (rows marked
not_tunable included), trace GEMM time the sum of the GEMM kernels' durations.

Per key (kineto): every GEMM kernel is attributed to a BLAS problem (m, n, k, batch, A's type in
cuBLAS's column-major terms):
  - an eager kernel through its "External id" to the CPU op of that id (cat cpu_op, its "Input
    Dims" and "Input type"): aten::mm, addmm, _addmm_activation, _scaled_mm, bmm, baddbmm; when
    the id names another op, the innermost such op whose time span holds the kernel's launch
    (the cuda_runtime/cuda_driver event of the same "correlation") on the same thread; then
    aten::matmul or aten::linear the same two ways, when no inner op is there. torch's sizes map
    as PyTorch calls cuBLAS (aten/src/ATen/native/cuda/Blas.cpp):
      mm [[M,K],[K,N]], addmm [C,[M,K],[K,N]]      -> m=N n=M k=K batch=1
      bmm [[B,M,K],[B,K,N]], baddbmm [C,[B,M,K],[B,K,N]] -> m=N n=M k=K batch=B, except N=1:
                                                     m=M n=1 (a [B,M,1] result is column-major)
  - a kernel replayed from a CUDA graph has no op (its launch is cudaGraphLaunch; newer kineto
    also gives it a nonzero "graph id"): it is attributed by its fingerprint (kernel name, grid,
    block) to the problems whose eager kernels had it (the clients run every graphed shape
    eagerly too). A fingerprint seen for two problems makes them one group (union-find); the
    comparison is per group. A GEMM kernel no rule places is listed, with its time.
  - calls in the trace: the problem's eager op instances, plus its graph executions: the replayed
    kernels whose fingerprint is a call's first GEMM kernel in the eager instances (a call may
    launch two, gemm + splitKreduce: the kernels per call column says so). A GEMM kernel with
    neither an op nor a graph launch ("unlinked") is placed by fingerprint the same way.
The shapes file's rows are grouped by (m, n, k, batch, a_type) onto those problems (a row whose
key matches only with m and n swapped is placed there and says so).

Verdicts (PASS / FAIL / n/a), each with its numbers:
  total GEMM time        captured within --tol (5%) of the trace's
  calls per group        the shapes file's calls equal the trace's, in every group (kineto)
  time share per group   each group's share of GEMM time within --tol relative of the trace's,
                         for groups holding at least --min-share (2%) of it (kineto)
  graph replays counted  the file's '#gemmtune-replays' line says counted_by=cupti-graph-nodes
                         when GEMM kernels ran from graphs
  replayed calls         that line's replays= equals the trace's graph executions (kineto)
  calls per step         with the client's replay count R (its manifest): every group's graph
                         executions are R x calls per step, and replays = captured_calls x R
  manifest calls         per problem the client states (eager calls, calls per replay, replays),
                         the shapes file's calls equal eager + per-replay x replays
  keys listed            every problem the client states has a row, tunable or with its reason
Clients state what they ran on stdout, one line per record:
  gemmtune-manifest {"graph_replays_total": 11, ...}                         (llama_model.py)
  gemmtune-manifest {"op": "bmm", "dims": [[...], [...]], "dtype": "bf16",
                     "eager_calls": 20, "graph_calls_per_replay": 1, "graph_replays": 10}
  gemmtune-manifest {"m": 512, "n": 512, "k": 64, "batch": 64, "eager_calls": 20, ...}  (C)

Output: the shapes file's '#gemmtune-eager' line (how capture timed calls outside graphs), a
table per group on stdout, the unattributed kernels, the shapes file's rows, the verdict lines;
--json (default OUT/capture_vs_trace.json) holds all of it. The runs' logs are OUT/capture.log
and OUT/trace_run.log; a kineto trace is kept as OUT/trace.json.gz once read.

Examples:
  capture_vs_trace.py --gemmtune build/gemmtune --out /tmp/cvt/llama -- \\
      python3 bench/llama_model.py --batch 1 --graph --reps 10
  capture_vs_trace.py --gemmtune build/gemmtune --out /tmp/cvt/bmm -- \\
      python3 bench/batched_client.py
  capture_vs_trace.py --gemmtune build/gemmtune --out /tmp/cvt/c -- build/batched_gemm --iters 20
  capture_vs_trace.py --no-run --out /tmp/cvt/llama      # compare the files of an earlier run
  capture_vs_trace.py --selftest                         # no GPU, no torch

Exit status: 0 every verdict passes; 1 a verdict fails; 2 a run failed, a file could not be
read, or a usage error.
"""
import argparse
import collections
import csv
import glob
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

TOL = 0.05
MIN_SHARE = 0.02
MANIFEST_PREFIX = "gemmtune-manifest "
TRACE_FORMAT_LINE = "#gemmtune-trace 1"
TRACE_HEADER = "name,calls,total_ns,min_ns,max_ns,stream_count,graph_launches"


class RunError(Exception):
    """A run failed or a file cannot be read: exit 2."""


# ---- GEMM kernels by name --------------------------------------------------------------------

# gt_cublas_owns_kernel (src/providers/cuda/gt_cuda_kernel_names.c): prefixes compared as is
# (CUTLASS-based attention kernels such as fmha_cutlassF_... are not GEMMs), parts in any case.
GEMM_PREFIXES = ("nvjet", "sm90_xmma", "cutlass")
GEMM_PARTS = ("gemm", "gemv", "splitkreduce")


def is_gemm_kernel(name):
    return name.startswith(GEMM_PREFIXES) or any(p in name.lower() for p in GEMM_PARTS)


# ---- torch ops to cuBLAS problems ------------------------------------------------------------

# The op's A and B among its "Input Dims" (C, bias and scalars are the others).
BLAS_OPS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::_addmm_activation": (1, 2),
            "aten::_scaled_mm": (0, 1), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}
WRAPPER_OPS = {"aten::matmul": (0, 1), "aten::linear": (0, 1)}
TORCH_TYPES = {"c10::bfloat16": "bf16", "c10::half": "f16", "float": "f32", "double": "f64",
               "c10::float8_e4m3fn": "f8e4m3fn", "c10::float8_e5m2": "f8e5m2",
               "signed char": "i8", "int": "i32"}


def _sizes(d):
    return isinstance(d, list) and all(isinstance(x, int) and x >= 0 for x in d)


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def _mm(a, b):
    """mm/addmm: a [M,K], b [K,N]; torch's result is row-major, so cuBLAS gets m=N n=M."""
    if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
        return None
    return (b[1], a[0], a[1], 1)


def _bmm(a, b):
    """bmm/baddbmm: a [B,M,K], b [B,K,N]. baddbmm_out_cuda_impl takes a result whose last size is
    1 as column-major (no transpose): m=M n=1; otherwise it transposes: m=N n=M."""
    if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
        return None
    bsz, m_, k_, n_ = a[0], a[1], a[2], b[2]
    return (m_, n_, k_, bsz) if n_ == 1 else (n_, m_, k_, bsz)


def blas_problem(op, dims, types=None):
    """The cuBLAS problem (m, n, k, batch, dtype) of a torch op from its Input Dims, or None.
    dtype is A's type in gemmtune's spelling, None when the trace does not say."""
    idx = BLAS_OPS.get(op) or WRAPPER_OPS.get(op)
    if idx is None or not isinstance(dims, list) or len(dims) <= max(idx):
        return None
    a, b = dims[idx[0]], dims[idx[1]]
    if not _sizes(a) or not _sizes(b):
        return None
    if op == "aten::linear":  # x [..., K] @ w[N, K]^T
        key = (b[0], _prod(a[:-1]), a[-1], 1) if len(a) >= 1 and len(b) == 2 and \
            a[-1] == b[1] else None
    elif op == "aten::matmul":
        if len(a) == 2 and len(b) == 2:
            key = _mm(a, b)
        elif len(a) >= 3 and len(b) == 2 and a[-1] == b[0]:  # folded into one mm
            key = (b[1], _prod(a[:-1]), a[-1], 1)
        elif len(a) >= 3 and len(b) >= 3 and a[:-2] == b[:-2]:
            key = _bmm([_prod(a[:-2])] + a[-2:], [_prod(b[:-2])] + b[-2:])
        else:
            key = None
    elif op in ("aten::bmm", "aten::baddbmm"):
        key = _bmm(a, b)
    else:
        key = _mm(a, b)
    if key is None:
        return None
    dtype = None
    if isinstance(types, list) and len(types) > idx[0] and isinstance(types[idx[0]], str):
        dtype = TORCH_TYPES.get(types[idx[0]].lower())
    return key + (dtype,)


def describe_problem(p, ops=()):
    m, n, k, b, dt = p
    head = "/".join(sorted(o.replace("aten::", "") for o in ops)) if ops else "blas"
    return "%s %s m=%d n=%d k=%d%s" % (head, dt or "?", m, n, k, " batch=%d" % b if b != 1 else "")


# ---- the shapes file -------------------------------------------------------------------------

def parse_kv(text):
    """'counted_by=x captured_calls=3 reason=free text' -> dict; reason runs to the end."""
    out = {}
    rest = text.strip()
    while rest:
        m = re.match(r"(\w+)=", rest)
        if not m:
            break
        key = m.group(1)
        rest = rest[m.end():]
        if key == "reason":
            out[key] = rest
            break
        val, _, rest = rest.partition(" ")
        out[key] = val
        rest = rest.lstrip()
    return out


def read_shapes(path):
    """(rows, meta) of a capture file: rows with calls, time_us and the key columns by name."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise RunError("cannot read the shapes file: %s" % e)
    meta, body = {}, []
    for line in text.splitlines():
        if line.startswith("#gemmtune-replays "):
            meta["replays"] = parse_kv(line[len("#gemmtune-replays "):])
        elif line.startswith("#gemmtune-eager "):  # how calls outside capture were timed
            meta["eager"] = parse_kv(line[len("#gemmtune-eager "):])
        elif line.startswith("#gemmtune-capture "):
            meta.setdefault("libraries", []).append(line[len("#gemmtune-capture "):])
        elif line.startswith("#") or not line.strip():
            continue
        else:
            body.append(line)
    if not body:
        raise RunError("%s has no header" % path)
    reader = csv.DictReader(body)
    need = ("calls", "time_us", "m", "n", "k", "batch")
    missing = [c for c in need if c not in (reader.fieldnames or [])]
    if missing:
        raise RunError("%s: header lacks %s" % (path, ", ".join(missing)))
    rows = []
    for i, r in enumerate(reader, 2):
        try:
            row = {"calls": int(r["calls"]), "time_us": float(r["time_us"]),
                   "m": int(r["m"]), "n": int(r["n"]), "k": int(r["k"]),
                   "batch": int(r["batch"])}
        except (TypeError, ValueError):
            raise RunError("%s: row %d is malformed: %s" % (path, i, r))
        row.update({c: r.get(c) or "-" for c in ("entry", "not_tunable", "a_type", "transa",
                                                  "transb", "epilogue")})
        rows.append(row)
    return rows, meta


def row_text(r):
    batch = " batch=%d" % r["batch"] if r["batch"] != 1 else ""
    return "%s %s%s m=%d n=%d k=%d%s" % (r["a_type"], r["transa"], r["transb"], r["m"], r["n"],
                                         r["k"], batch)


# ---- gemmtune's tracer files -----------------------------------------------------------------

def read_tracer(paths):
    """Per kernel name {calls, total_ns, graph_launches}, summed over the files (processes)."""
    if not paths:
        raise RunError("no tracer file was written (is libgemmtune_trace.so the injected "
                       "library, and did the client initialise CUDA?)")
    kernels = {}
    for p in paths:
        try:
            with open(p) as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise RunError("cannot read %s: %s" % (p, e))
        if not lines or not lines[0].startswith(TRACE_FORMAT_LINE):
            raise RunError("%s is not a gemmtune trace file" % p)
        head = parse_kv(lines[0][len(TRACE_FORMAT_LINE):])
        if head.get("status") != "ok":
            raise RunError("%s: status=%s: %s" % (p, head.get("status"), head.get("reason", "")))
        if len(lines) < 2 or lines[1] != TRACE_HEADER:
            raise RunError("%s: unexpected header %r" % (p, lines[1] if len(lines) > 1 else ""))
        for rec in csv.reader(lines[2:]):
            if not rec:
                continue
            try:
                name, calls, total, graph = rec[0], int(rec[1]), int(rec[2]), int(rec[6])
            except (IndexError, ValueError):
                raise RunError("%s: malformed row %r" % (p, rec))
            k = kernels.setdefault(name, {"calls": 0, "total_ns": 0, "graph_launches": 0})
            k["calls"] += calls
            k["total_ns"] += total
            k["graph_launches"] += graph
    return kernels


# ---- kineto's chrome trace -------------------------------------------------------------------

def _norm(key):
    return re.sub(r"[\s_]", "", key).lower()


def arg(args, *names):
    """args[name] for the first of names present, matching case, blanks and underscores
    loosely ("External id", "external_id", "graph node id", "graphNodeId")."""
    if not isinstance(args, dict):
        return None
    normed = {_norm(k): v for k, v in args.items()}
    for n in names:
        v = normed.get(_norm(n))
        if v is not None:
            return v
    return None


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def load_kineto(path):
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise RunError("cannot read the kineto trace %s: %s" % (path, e))
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise RunError("%s has no traceEvents list" % path)
    return events


class UnionFind:
    def __init__(self):
        self.up = {}

    def find(self, x):
        self.up.setdefault(x, x)
        while self.up[x] != x:
            self.up[x] = self.up[self.up[x]]
            x = self.up[x]
        return x

    def union(self, a, b):
        ra, rb = sorted((self.find(a), self.find(b)), key=repr)
        if ra != rb:
            self.up[rb] = ra


def _innermost(spans, pid, tid, ts):
    """The shortest op of spans[(pid, tid)] (sorted by start) whose span holds ts."""
    best = None
    for s in spans.get((pid, tid), ()):
        if s["ts"] > ts:
            break
        if s["ts"] <= ts <= s["ts"] + s["dur"] and (best is None or s["dur"] < best["dur"]):
            best = s
    return best


def _scan(events):
    """The events attribution needs: CPU ops by External id and by thread, launches by
    correlation, the GEMM kernels, and a count of what the trace offered."""
    st = {"ops_by_ext": collections.defaultdict(list), "launches": {}, "kernels": [],
          "spans": collections.defaultdict(list),       # (pid, tid) -> BLAS ops
          "wrap_spans": collections.defaultdict(list),  # (pid, tid) -> matmul/linear
          "fields": {"kernel_args": set(), "cpu_op_with_dims": 0, "cpu_ops": 0,
                     "graph_by_id": 0, "graph_by_launch": 0}}
    fields = st["fields"]
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = str(e.get("cat", "")).lower()
        args = e.get("args") or {}
        name = str(e.get("name", ""))
        try:
            ts, dur = float(e.get("ts", 0)), float(e.get("dur", 0) or 0)
        except (TypeError, ValueError):
            continue
        if cat in ("cpu_op", "operator"):
            fields["cpu_ops"] += 1
            op = {"name": name, "dims": arg(args, "Input Dims"), "types": arg(args, "Input type"),
                  "ts": ts, "dur": dur, "pid": e.get("pid"), "tid": e.get("tid"),
                  "ext": _int(arg(args, "External id"))}
            fields["cpu_op_with_dims"] += op["dims"] is not None
            if op["ext"]:
                st["ops_by_ext"][op["ext"]].append(op)
            if name in BLAS_OPS:
                st["spans"][(op["pid"], op["tid"])].append(op)
            elif name in WRAPPER_OPS:
                st["wrap_spans"][(op["pid"], op["tid"])].append(op)
        elif cat in ("cuda_runtime", "cuda_driver", "runtime", "driver"):
            corr = _int(arg(args, "correlation"))
            if corr is not None:
                st["launches"][corr] = {"name": name, "pid": e.get("pid"), "tid": e.get("tid"),
                                        "ts": ts}
        elif cat == "kernel" and is_gemm_kernel(name):
            fields["kernel_args"].update(args.keys())
            grid, block = arg(args, "grid"), arg(args, "block")
            st["kernels"].append({"name": name, "ts": ts, "dur": dur,
                                  "ext": _int(arg(args, "External id")),
                                  "corr": _int(arg(args, "correlation")),
                                  "graph_id": _int(arg(args, "graph id", "graphId")),
                                  "fp": (name, tuple(grid) if isinstance(grid, list) else grid,
                                         tuple(block) if isinstance(block, list) else block)})
    for d in (st["spans"], st["wrap_spans"]):
        for lst in d.values():
            lst.sort(key=lambda s: s["ts"])
    return st


def _resolve(st, k):
    """The CPU op an eager kernel belongs to, and how it was found: a BLAS op by External id,
    else the innermost BLAS op around its launch, then the same for matmul/linear."""
    launch = st["launches"].get(k["corr"]) if k["corr"] is not None else None
    cands = st["ops_by_ext"].get(k["ext"], []) if k["ext"] else []
    for table, spans in ((BLAS_OPS, st["spans"]), (WRAPPER_OPS, st["wrap_spans"])):
        for op in cands:
            if op["name"] in table:
                return op, "external id"
        if launch:
            op = _innermost(spans, launch["pid"], launch["tid"], launch["ts"])
            if op:
                return op, "enclosing op"
    return None, None


def _split_kernels(st):
    """The GEMM kernels as eager instances per problem (problem -> op -> kernels), kernels
    replayed from graphs, kernels linked to nothing, and those that cannot be placed."""
    instances = collections.defaultdict(lambda: collections.defaultdict(list))
    out = {"instances": instances, "op_names": collections.defaultdict(set), "replayed": [],
           "unlinked": [], "unattributed": [], "how": collections.Counter()}
    fields = st["fields"]
    for k in st["kernels"]:
        launch = st["launches"].get(k["corr"]) if k["corr"] is not None else None
        by_id = k["graph_id"] is not None and k["graph_id"] != 0
        by_launch = launch is not None and "graphlaunch" in launch["name"].lower()
        if by_id or by_launch:
            fields["graph_by_id"] += by_id
            fields["graph_by_launch"] += by_launch
            out["replayed"].append(k)
            continue
        op, via = _resolve(st, k)
        if op is None:
            out["unlinked"].append(k)
            continue
        prob = blas_problem(op["name"], op["dims"], op["types"])
        if prob is None:
            out["unattributed"].append(dict(k, why="%s without usable Input Dims (%s)"
                                            % (op["name"], op["dims"])))
            continue
        out["how"][via] += 1
        instances[prob][id(op)].append(k)
        out["op_names"][prob].add(op["name"])
    return out


def _fingerprints(instances):
    """Per fingerprint the problems whose eager kernels had it, how often it was seen and how
    often as a call's first kernel; problems sharing one are united."""
    fp_owner = collections.defaultdict(set)
    fp_seen, fp_first = collections.Counter(), collections.Counter()
    uf = UnionFind()
    for prob, inst in instances.items():
        uf.find(prob)
        for ks in inst.values():
            ks.sort(key=lambda k: k["ts"])
            fp_first[ks[0]["fp"]] += 1
            for k in ks:
                fp_seen[k["fp"]] += 1
                fp_owner[k["fp"]].add(prob)
    for owners in fp_owner.values():
        owners = sorted(owners, key=repr)
        for o in owners[1:]:
            uf.union(owners[0], o)
    return fp_owner, fp_seen, fp_first, uf


def _new_group():
    return {"problems": [], "ops": set(), "eager_calls": 0, "eager_kernels": 0, "eager_us": 0.0,
            "graph_calls": 0.0, "graph_kernels": 0, "graph_us": 0.0, "unlinked_calls": 0.0,
            "unlinked_kernels": 0, "unlinked_us": 0.0}


def attribute_kineto(events):
    """Every GEMM kernel of a kineto trace attributed to a BLAS problem, grouped.

    Returns a dict: groups (root problem -> group record), problem_group (problem -> root),
    unattributed (list), total_us (all GEMM kernels), fields (what the trace offered)."""
    st = _scan(events)
    sp = _split_kernels(st)
    fp_owner, fp_seen, fp_first, uf = _fingerprints(sp["instances"])
    groups = collections.defaultdict(_new_group)
    for prob, inst in sp["instances"].items():
        g = groups[uf.find(prob)]
        g["problems"].append(prob)
        g["ops"] |= sp["op_names"][prob]
        g["eager_calls"] += len(inst)
        for ks in inst.values():
            g["eager_kernels"] += len(ks)
            g["eager_us"] += sum(k["dur"] for k in ks)
    # Replayed and unlinked kernels by fingerprint; a call is counted at its first kernel.
    by_name = collections.defaultdict(set)
    for fp, owners in fp_owner.items():
        by_name[fp[0]] |= owners
    for kind, lst in (("graph", sp["replayed"]), ("unlinked", sp["unlinked"])):
        for k in lst:
            owners = fp_owner.get(k["fp"])
            if not owners:
                near = sorted(by_name.get(k["name"], ()), key=repr)
                sp["unattributed"].append(dict(k, why="%s kernel whose (name, grid, block) no "
                                               "eager BLAS op ran%s" % (
                                                   "graph-replayed" if kind == "graph"
                                                   else "unlinked",
                                                   "; eager %s ran this name with another grid "
                                                   "or block" % ", ".join(
                                                       describe_problem(p, sp["op_names"][p])
                                                       for p in near) if near else "")))
                continue
            g = groups[uf.find(next(iter(owners)))]
            g[kind + "_kernels"] += 1
            g[kind + "_us"] += k["dur"]
            g[kind + "_calls"] += fp_first[k["fp"]] / fp_seen[k["fp"]]
    for g in groups.values():
        g["problems"].sort(key=repr)
        g["trace_calls"] = g["eager_calls"] + g["graph_calls"] + g["unlinked_calls"]
        g["trace_us"] = g["eager_us"] + g["graph_us"] + g["unlinked_us"]
        g["kernels_per_call"] = g["eager_kernels"] / g["eager_calls"] if g["eager_calls"] else None
    fields = st["fields"]
    fields["kernel_args"] = sorted(fields["kernel_args"])
    fields["attributed_by"] = dict(sp["how"])
    fields["replayed_kernels"] = len(sp["replayed"])
    fields["unlinked_kernels"] = len(sp["unlinked"])
    return {"groups": dict(groups), "problem_group": {p: uf.find(p) for p in sp["instances"]},
            "unattributed": sp["unattributed"], "kernels": len(st["kernels"]),
            "total_us": sum(k["dur"] for k in st["kernels"]), "fields": fields}


# ---- comparison ------------------------------------------------------------------------------

def _dtype_ok(want, have):
    return want is None or have is None or have == "-" or want == have


def place_rows(rows, problems):
    """Each shapes row's problem among `problems`: (m, n, k, batch) and a compatible A type, else
    the same with m and n swapped (noted); None when the trace has no such problem."""
    out = []
    for r in rows:
        hit, note = None, ""
        for swapped in (False, True):
            m, n = (r["n"], r["m"]) if swapped else (r["m"], r["n"])
            for p in problems:
                if p[:4] == (m, n, r["k"], r["batch"]) and _dtype_ok(p[4], r["a_type"]):
                    hit = p
                    break
            if hit:
                note = "matched with m and n swapped" if swapped else ""
                break
        out.append((hit, note))
    return out


def verdict(name, ok, detail):
    """ok: True, False or None (n/a)."""
    return {"name": name, "verdict": "n/a" if ok is None else ("PASS" if ok else "FAIL"),
            "detail": detail}


def _rel(a, b):
    return abs(a - b) / b if b else (0.0 if a == 0 else float("inf"))


def manifest_problems(manifest):
    """The problems a client states: (problem, expected calls, record)."""
    out = []
    for rec in manifest:
        if not all(k in rec for k in ("eager_calls", "graph_calls_per_replay", "graph_replays")):
            continue
        if all(k in rec for k in ("m", "n", "k", "batch")):
            prob = (int(rec["m"]), int(rec["n"]), int(rec["k"]), int(rec["batch"]),
                    rec.get("dtype"))
        else:
            op = rec.get("op", "")
            prob = blas_problem(op if op.startswith("aten::") else "aten::" + op, rec.get("dims"))
            if prob is None:
                continue
            prob = prob[:4] + (rec.get("dtype"),)
        expected = int(rec["eager_calls"]) + int(rec["graph_calls_per_replay"]) * \
            int(rec["graph_replays"])
        out.append((prob, expected, rec))
    return out


def replay_count(manifest):
    """The client's graph replays per graph, when every graph it states ran as often."""
    counts = set()
    for rec in manifest:
        if "graph_replays_total" in rec:
            counts.add(int(rec["graph_replays_total"]))
        elif "graph_replays" in rec:
            counts.add(int(rec["graph_replays"]))
    return counts.pop() if len(counts) == 1 else None


def analyze(rows, meta, mode, trace, manifest, tol=TOL, min_share=MIN_SHARE):
    """The comparison of a shapes file (rows, meta) with a trace (attribute_kineto's result, or
    read_tracer's kernels), with the client's manifest records. Returns the report dict."""
    rep = {"mode": mode, "tol": tol, "min_share": min_share, "verdicts": [], "groups": [],
           "unattributed": [], "rows": [], "manifest": manifest}
    cap_total = sum(r["time_us"] for r in rows)
    R = replay_count(manifest)
    trace_total, graph_kernels = _trace_totals(mode, trace, rep)
    rep.update(capture_us=cap_total, capture_calls=sum(r["calls"] for r in rows),
               trace_us=trace_total, trace_graph_kernels=graph_kernels,
               replays_line=meta.get("replays", {}), eager_line=meta.get("eager"), replays=R)
    if trace_total <= 0:
        rep["verdicts"].append(verdict("total GEMM time", False, "the trace holds no GEMM kernel"))
    else:
        d = (cap_total - trace_total) / trace_total
        rep["verdicts"].append(verdict("total GEMM time", abs(d) <= tol,
                                       "capture %.1f us vs trace %.1f us (%+.1f%%, bound %g%%)"
                                       % (cap_total, trace_total, 100 * d, 100 * tol)))
    placed = _group_verdicts(rows, trace, rep, R) if mode == "kineto" else []
    _replay_verdicts(rep, R)
    _manifest_verdicts(rep, rows, trace, manifest_problems(manifest))
    for r, (prob, note) in zip(rows, placed or [(None, "")] * len(rows)):
        rep["rows"].append(dict(r, placed=list(prob) if prob else None, note=note))
    rep["pass"] = all(v["verdict"] != "FAIL" for v in rep["verdicts"])
    return rep


def _trace_totals(mode, trace, rep):
    """(GEMM time in us, GEMM kernels replayed from graphs) of the trace; the tracer's GEMM
    kernels by name go into rep."""
    if mode == "kineto":
        rep["fields"] = trace["fields"]
        rep["trace_kernels_n"] = trace["kernels"]
        return trace["total_us"], trace["fields"]["replayed_kernels"]
    gemm = {n: k for n, k in trace.items() if is_gemm_kernel(n)}
    rep["trace_kernels"] = [{"name": n, "calls": k["calls"], "graph_launches": k["graph_launches"],
                             "time_us": k["total_ns"] / 1000.0}
                            for n, k in sorted(gemm.items(), key=lambda kv: -kv[1]["total_ns"])]
    rep["trace_gemm_launches"] = sum(k["calls"] for k in gemm.values())
    return (sum(k["total_ns"] for k in gemm.values()) / 1000.0,
            sum(k["graph_launches"] for k in gemm.values()))


def _capture_only_group(key):
    return {"problems": [key[1:]], "ops": set(), "eager_calls": 0, "graph_calls": 0.0,
            "unlinked_calls": 0.0, "trace_calls": 0.0, "trace_us": 0.0, "eager_kernels": 0,
            "graph_kernels": 0, "unlinked_kernels": 0, "kernels_per_call": None,
            "capture_calls": 0, "capture_us": 0.0, "rows": [], "capture_only": True}


def _group_table(rows, trace):
    """The trace's groups with the shapes file's rows placed on them (a row the trace has no
    problem for makes a group of its own), and each row's placement."""
    pg = trace["problem_group"]
    placed = place_rows(rows, list(pg))
    table = {root: dict(g, capture_calls=0, capture_us=0.0, rows=[])
             for root, g in trace["groups"].items()}
    for r, (prob, note) in zip(rows, placed):
        if prob is None:
            key = ("capture only", r["m"], r["n"], r["k"], r["batch"], r["a_type"])
            g = table.setdefault(key, _capture_only_group(key))
        else:
            g = table[pg[prob]]
        g["capture_calls"] += r["calls"]
        g["capture_us"] += r["time_us"]
        g["rows"].append(dict(r, note=note))
    return table, placed


def _group_verdicts(rows, trace, rep, R):
    """Calls and time shares per group (kineto); the groups and the unattributed kernels go into
    rep. Returns the rows' placements."""
    tol, min_share, trace_total, cap_total = (rep["tol"], rep["min_share"], rep["trace_us"],
                                              rep["capture_us"])
    table, placed = _group_table(rows, trace)
    bad_calls, bad_share, bad_step, checked = [], [], [], 0
    for _, g in sorted(table.items(), key=lambda kv: -max(kv[1]["trace_us"],
                                                          kv[1]["capture_us"])):
        tc = g["trace_calls"]
        g["label"] = " + ".join(describe_problem(p, g["ops"]) for p in g["problems"])
        g["trace_share"] = g["trace_us"] / trace_total if trace_total else 0.0
        g["capture_share"] = g["capture_us"] / cap_total if cap_total else 0.0
        g["calls_ok"] = abs(tc - round(tc)) < 0.01 and round(tc) == g["capture_calls"]
        if not g["calls_ok"]:
            bad_calls.append("%s: capture %d vs trace %s" % (g["label"], g["capture_calls"],
                                                             _num(tc)))
        g["share_checked"] = max(g["trace_share"], g["capture_share"]) >= min_share
        g["share_rel"] = _rel(g["capture_share"], g["trace_share"])
        g["share_ok"] = (not g["share_checked"]) or g["share_rel"] <= tol
        checked += g["share_checked"]
        if not g["share_ok"]:
            bad_share.append("%s: capture %.2f%% vs trace %.2f%%" % (
                g["label"], 100 * g["capture_share"], 100 * g["trace_share"]))
        g["per_step"] = (g["graph_calls"] / R) if R and g["graph_calls"] else None
        if g["per_step"] is not None and abs(g["per_step"] - round(g["per_step"])) > 0.01:
            bad_step.append("%s: %s graph executions for %d replays" % (
                g["label"], _num(g["graph_calls"]), R))
        g["ops"] = sorted(g["ops"])
        g["problems"] = [list(p) for p in g["problems"]]
        rep["groups"].append(g)
    n = len(rep["groups"])
    rep["verdicts"].append(verdict("calls per group", not bad_calls, "%d of %d groups agree%s" % (
        n - len(bad_calls), n, "; " + "; ".join(bad_calls) if bad_calls else "")))
    rep["verdicts"].append(verdict(
        "time share per group", not bad_share if checked else None,
        "%d groups with >= %g%% of GEMM time, %d within %g%% relative%s"
        % (checked, 100 * min_share, checked - len(bad_share), 100 * tol,
           "; " + "; ".join(bad_share) if bad_share else "")))
    rep["unattributed"] = [{"name": k["name"], "grid": k["fp"][1], "block": k["fp"][2],
                            "dur_us": k["dur"], "why": k["why"]} for k in trace["unattributed"]]
    rep["trace_graph_calls"] = sum(g["graph_calls"] for g in rep["groups"])
    rep["bad_step"] = bad_step
    return placed


def _replay_verdicts(rep, R):
    """How capture counted graph replays, against the trace and the client's replay count."""
    V, meta, mode = rep["verdicts"], rep["replays_line"], rep["mode"]
    graph_kernels, trace_graph_calls = rep["trace_graph_kernels"], rep.get("trace_graph_calls")
    bad_step = rep.pop("bad_step", [])
    counted = meta.get("counted_by")
    captured = _int(meta.get("captured_calls")) or 0
    if graph_kernels == 0 and captured == 0:
        V.append(verdict("graph replays counted", None,
                         "no GEMM kernel ran from a graph and capture saw no call under capture"))
    else:
        V.append(verdict("graph replays counted", counted == "cupti-graph-nodes",
                         "#gemmtune-replays %s; %d GEMM kernels ran from graphs in the trace"
                         % (" ".join("%s=%s" % kv for kv in meta.items()) or "(no line)",
                            graph_kernels)))
    file_replays = _int(meta.get("replays"))
    if mode == "kineto" and counted == "cupti-graph-nodes":
        V.append(verdict("replayed calls", file_replays is not None and trace_graph_calls is not
                         None and abs(trace_graph_calls - file_replays) < 0.01,
                         "shapes file replays=%s, trace graph executions %s"
                         % (file_replays, _num(trace_graph_calls))))
    else:
        V.append(verdict("replayed calls", None, "needs a kineto trace and replays counted by "
                         "cupti-graph-nodes"))
    if not R or not (graph_kernels or captured):
        V.append(verdict("calls per step", None, "the client states no graph replay count"
                         if not R else "no graph ran"))
        return
    parts, ok = [], not bad_step
    if counted == "cupti-graph-nodes" and file_replays is not None:
        good = file_replays == captured * R
        ok = ok and good
        parts.append("%d graph replays: shapes file replays=%d %s captured_calls=%d x %d" % (
            R, file_replays, "=" if good else "!=", captured, R))
    if mode == "kineto":
        steps = [g for g in rep["groups"] if g.get("per_step") is not None]
        parts.append("%d groups replayed, %d of them a whole number of calls per step "
                     "(the table's step column)" % (len(steps), len(steps) - len(bad_step)))
        parts.extend(bad_step)
    V.append(verdict("calls per step", ok, "; ".join(parts) or "nothing to compare"))


def _manifest_verdicts(rep, rows, trace, mp):
    """The shapes file against what the client says it ran (mp: manifest_problems)."""
    V = rep["verdicts"]
    if not mp:
        V.append(verdict("manifest calls", None, "the client states no problems"))
        V.append(verdict("keys listed", None, "the client states no problems"))
        return
    want = collections.OrderedDict()
    for prob, expected, rec in mp:
        e = want.setdefault(prob, {"expected": 0, "labels": []})
        e["expected"] += expected
        e["labels"].append(str(rec.get("label", "")))
    bad, unlisted, lines = [], [], []
    for prob, e in want.items():
        mine = [r for r in rows if (r["m"], r["n"], r["k"], r["batch"]) == prob[:4] and
                _dtype_ok(prob[4], r["a_type"])]
        got = sum(r["calls"] for r in mine)
        label = "/".join(e["labels"]) + " " + describe_problem(prob)
        if not mine:
            unlisted.append(label)
        if got != e["expected"]:
            bad.append("%s: capture %d vs client %d" % (label, got, e["expected"]))
        traced = None
        if rep["mode"] == "kineto":
            hit = place_rows([{"m": prob[0], "n": prob[1], "k": prob[2], "batch": prob[3],
                               "a_type": prob[4] or "-"}], list(trace["problem_group"]))[0][0]
            g = next((g for g in rep["groups"] if hit is not None and list(hit) in g["problems"]),
                     None)
            traced = g["trace_calls"] if g else None
        lines.append({"problem": list(prob), "labels": e["labels"], "expected": e["expected"],
                      "capture_calls": got, "trace_group_calls": traced,
                      "rows": [{"entry": r["entry"], "key": row_text(r),
                                "not_tunable": r["not_tunable"]} for r in mine]})
    rep["manifest_check"] = lines
    V.append(verdict("manifest calls", not bad, "%d of %d problems as the client states%s"
                     % (len(want) - len(bad), len(want), "; " + "; ".join(bad) if bad else "")))
    V.append(verdict("keys listed", not unlisted, "%d of %d problems have a row%s"
                     % (len(want) - len(unlisted), len(want),
                        "; missing: " + "; ".join(unlisted) if unlisted else "")))


def _num(x):
    if x is None:
        return "-"
    return "%d" % round(x) if abs(x - round(x)) < 0.01 else "%.2f" % x


# ---- report ----------------------------------------------------------------------------------

def print_report(rep, out=sys.stdout):
    w = out.write
    w("capture_vs_trace: %s trace; capture %.1f us in %d calls, trace %.1f us of GEMM kernels\n"
      % (rep["mode"], rep["capture_us"], rep["capture_calls"], rep["trace_us"]))
    if rep.get("eager_line"):
        w("capture: calls outside graph capture: #gemmtune-eager %s\n" % " ".join(
            "%s=%s" % kv for kv in rep["eager_line"].items()))
    if rep["mode"] == "kineto":
        f = rep.get("fields", {})
        if f:
            w("kineto: %d cpu ops (%d with Input Dims); GEMM kernels %d: attributed eagerly %s, "
              "replayed from graphs %d (by graph id %d, by cudaGraphLaunch %d), unlinked %d; "
              "kernel args seen: %s\n" % (
                  f["cpu_ops"], f["cpu_op_with_dims"], rep.get("trace_kernels_n", 0),
                  ", ".join("%d by %s" % (v, k) for k, v in sorted(f["attributed_by"].items()))
                  or "0", f["replayed_kernels"], f["graph_by_id"], f["graph_by_launch"],
                  f["unlinked_kernels"], ", ".join(f["kernel_args"]) or "-"))
        w("%-58s %7s %7s %6s %5s %7s %7s %10s %10s %7s %7s %6s  %s\n" % (
            "group (trace problems)", "eager", "graph", "k/call", "step", "trace", "capture",
            "trace_us", "capture_us", "t_share", "c_share", "rel", "verdict"))
        for g in rep["groups"]:
            flags = []
            if not g["calls_ok"]:
                flags.append("CALLS")
            if g["share_checked"] and not g["share_ok"]:
                flags.append("SHARE")
            label = g["label"] if len(g["label"]) <= 58 else g["label"][:55] + "..."
            w("%-58s %7d %7s %6s %5s %7s %7d %10.1f %10.1f %6.2f%% %6.2f%% %6s  %s\n" % (
                label, g["eager_calls"], _num(g["graph_calls"] + g["unlinked_calls"]),
                "%.2f" % g["kernels_per_call"] if g["kernels_per_call"] else "-",
                _num(g["per_step"]), _num(g["trace_calls"]), g["capture_calls"], g["trace_us"],
                g["capture_us"], 100 * g["trace_share"], 100 * g["capture_share"],
                "%.1f%%" % (100 * g["share_rel"]) if g["share_rel"] != float("inf") else "inf",
                " ".join(flags) or ("ok" if g["share_checked"] else "ok (share < min)")))
            if label != g["label"]:
                w("    problems: %s\n" % g["label"])
            for r in g["rows"]:
                w("    row: %8d calls %10.1f us  %-22s %s%s%s\n" % (
                    r["calls"], r["time_us"], r["entry"], row_text(r),
                    "" if r["not_tunable"] == "-" else "  | not tunable: " + r["not_tunable"],
                    "  (" + r["note"] + ")" if r["note"] else ""))
            if g.get("unlinked_kernels"):
                w("    note: %d of its kernels were not linked to an op and not from a graph "
                  "launch; counted by fingerprint\n" % g["unlinked_kernels"])
        if rep["unattributed"]:
            agg = collections.OrderedDict()
            for k in rep["unattributed"]:
                key = (k["name"], str(k["grid"]), str(k["block"]), k["why"])
                a = agg.setdefault(key, [0, 0.0])
                a[0] += 1
                a[1] += k["dur_us"]
            tot = sum(a[1] for a in agg.values())
            w("unattributed GEMM kernels: %d, %.1f us (%.2f%% of the trace's GEMM time)\n" % (
                len(rep["unattributed"]), tot, 100 * tot / rep["trace_us"] if rep["trace_us"]
                else 0))
            for (name, grid, block, why), (n, us) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
                w("  %6d x %10.1f us  %s grid %s block %s: %s\n" % (n, us, name[:100], grid,
                                                                  block, why))
        else:
            w("unattributed GEMM kernels: none\n")
    else:
        w("tracer: GEMM kernels by name (%d launches, %d from graphs):\n"
          % (rep["trace_gemm_launches"], rep["trace_graph_kernels"]))
        for k in rep["trace_kernels"]:
            w("  %8d calls (%d graph) %10.1f us  %s\n" % (k["calls"], k["graph_launches"],
                                                        k["time_us"], k["name"][:110]))
        w("shapes file rows:\n")
        for r in rep["rows"]:
            w("  %8d calls %10.1f us  %-22s %s%s\n" % (
                r["calls"], r["time_us"], r["entry"], row_text(r),
                "" if r["not_tunable"] == "-" else "  | not tunable: " + r["not_tunable"]))
    for m in rep.get("manifest_check", []):
        traced = m.get("trace_group_calls")
        rows = "; ".join("%s %s (%s)" % (r["entry"], r["key"], "tunable" if r["not_tunable"] == "-"
                                         else "not tunable: " + r["not_tunable"])
                         for r in m["rows"])
        w("client: %-40s expected %6d calls, capture %6d%s; rows: %s\n" % (
            "/".join(m["labels"]) + " " + describe_problem(tuple(m["problem"])), m["expected"],
            m["capture_calls"], "" if traced is None else ", trace %s (its group)" % _num(traced),
            rows or "none"))
    for v in rep["verdicts"]:
        w("%-4s %s: %s\n" % (v["verdict"], v["name"], v["detail"]))
    w("capture_vs_trace: %s\n" % ("PASS" if rep["pass"] else "FAIL"))


# ---- runs ------------------------------------------------------------------------------------

def client_kind(cmd):
    base = os.path.basename(cmd[0])
    return "kineto" if base.startswith("python") or cmd[0].endswith(".py") else "tracer"


def clean_env(extra=None):
    """The environment without gemmtune's shim and without another CUDA injection."""
    env = dict(os.environ)
    for k in ("GEMMTUNE_CAPTURE", "GEMMTUNE_DB", "GEMMTUNE_STATS", "GEMMTUNE_TRACE",
              "GEMMTUNE_TRACE_CALLS", "CUDA_INJECTION64_PATH"):
        env.pop(k, None)
    pre = [p for p in env.get("LD_PRELOAD", "").split(":") if p and "libgemmtune" not in p]
    if pre:
        env["LD_PRELOAD"] = ":".join(pre)
    else:
        env.pop("LD_PRELOAD", None)
    env.update(extra or {})
    return env


_child = []  # the client run now in progress, killed with its session when this script is


def _kill_child(signum, _frame):
    for p in _child:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
    raise SystemExit(128 + signum)


def run_logged(argv, env, log_path, timeout):
    """Run argv with stdout and stderr to log_path, in a session of its own (gemmtune capture
    forks the client) that is killed at timeout, or when this script is terminated.
    Returns the exit status (124 on timeout)."""
    with open(log_path, "w") as log:
        log.write("$ %s\n" % " ".join(argv))
        log.flush()
        try:
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
        except OSError as e:
            log.write("cannot run: %s\n" % e)
            return 127
        _child.append(p)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            log.write("killed after %s s\n" % timeout)
            return 124
        finally:
            _child.remove(p)


def read_manifest(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                i = line.find(MANIFEST_PREFIX)
                if i < 0:
                    continue
                try:
                    rec = json.loads(line[i + len(MANIFEST_PREFIX):])
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    out.append(rec)
    except OSError:
        pass
    return out


def tracer_files(out):
    return sorted(p for p in glob.glob(os.path.join(out, "trace.*"))
                  if re.search(r"/trace\.\d+$", p))


def _tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def do_runs(args, mode):
    out = args.out
    os.makedirs(out, exist_ok=True)
    shapes = os.path.join(out, "shapes.csv")
    for p in [shapes, os.path.join(out, "trace.json"), os.path.join(out, "trace.json.gz")] + \
            tracer_files(out):
        if os.path.exists(p):
            os.unlink(p)
    cap_log = os.path.join(out, "capture.log")
    rc = run_logged([args.gemmtune, "capture", "-o", shapes, "--"] + args.cmd, clean_env(),
                    cap_log, args.run_timeout)
    print("run 1 (capture): exit %d, log %s" % (rc, cap_log), flush=True)
    if rc != 0:
        raise RunError("the capture run exited %d:\n%s" % (rc, _tail(cap_log)))
    trace_log = os.path.join(out, "trace_run.log")
    if mode == "kineto":
        argv = args.cmd + ["--profile", os.path.join(out, "trace.json")]
        env = clean_env()
    else:
        lib = args.tracer_lib
        if not os.path.exists(lib):
            raise RunError("the kernel tracer %s does not exist (--tracer-lib)" % lib)
        argv = list(args.cmd)
        env = clean_env({"CUDA_INJECTION64_PATH": os.path.abspath(lib),
                         "GEMMTUNE_TRACE": os.path.join(os.path.abspath(out), "trace.%p")})
    rc = run_logged(argv, env, trace_log, args.run_timeout)
    print("run 2 (%s trace): exit %d, log %s" % (mode, rc, trace_log), flush=True)
    if rc != 0:
        raise RunError("the trace run exited %d:\n%s" % (rc, _tail(trace_log)))


def compare_files(args, mode):
    out = args.out
    rows, meta = read_shapes(os.path.join(out, "shapes.csv"))
    manifest = read_manifest(os.path.join(out, "trace_run.log"))
    cap_manifest = read_manifest(os.path.join(out, "capture.log"))
    if not manifest:
        manifest = cap_manifest
    elif cap_manifest and _manifest_counts(cap_manifest) != _manifest_counts(manifest):
        print("note: the two runs' manifests differ; the trace run's is used", flush=True)
    if mode == "kineto":
        path = os.path.join(out, "trace.json")
        if not os.path.exists(path) and os.path.exists(path + ".gz"):
            path += ".gz"
        trace = attribute_kineto(load_kineto(path))
        rep = analyze(rows, meta, mode, trace, manifest, args.tol, args.min_share)
        if not path.endswith(".gz"):
            path = _gzip_in_place(path)
        rep["trace_file"] = path
    else:
        files = tracer_files(out)
        rep = analyze(rows, meta, mode, read_tracer(files), manifest, args.tol, args.min_share)
        rep["trace_file"] = files
    rep["shapes_file"] = os.path.join(out, "shapes.csv")
    rep["command"] = args.cmd
    return rep


def _gzip_in_place(path):
    """path compressed to path.gz (a llama trace is tens of MB of JSON); path.gz returned."""
    with open(path, "rb") as fin, gzip.open(path + ".gz", "wb") as fout:
        shutil.copyfileobj(fin, fout)
    os.unlink(path)
    return path + ".gz"


def _manifest_counts(man):
    keys = ("label", "op", "m", "n", "k", "batch", "eager_calls", "graph_calls_per_replay",
            "graph_replays", "graph_replays_total")
    return sorted(json.dumps({k: r.get(k) for k in keys}, sort_keys=True) for r in man)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k) if not isinstance(k, str) else k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and x == float("inf"):
        return None
    return x


# ---- self-test -------------------------------------------------------------------------------

SHAPES_HEADER = ("calls,time_us,share,entry,workspace,not_tunable,op,a_type,b_type,c_type,d_type,"
                 "compute,scale_type,transa,transb,m,n,k,lda,ldb,ldc,batch,stride_a,stride_b,"
                 "stride_c,epilogue,beta_zero,arch,sm_count,scale_a,scale_b,fast_accum,scale_d,"
                 "amax_d")


def _shape_line(calls, us, m, n, k, batch=1, a="bf16", entry="gemmex", why="-", ta="T", tb="N"):
    return ("%d,%.3f,0.1,%s,0,%s,gemm,%s,%s,%s,%s,f32,f32,%s,%s,%d,%d,%d,%d,%d,%d,%d,0,0,0,none,1,"
            "sm_90,132,none,none,0,0,0" % (calls, us, entry, why, a, a, a, a, ta, tb, m, n, k, k,
                                           k, m, batch))


def _write_shapes(path, lines, replays="counted_by=cupti-graph-nodes captured_calls=3 "
                  "identified=3 replays=9", eager="timed_by=cupti-kernels tagged_calls=12"):
    with open(path, "w") as f:
        f.write("#gemmtune-capture cublas=130100 path=/x/libcublas.so.13\n")
        if replays:
            f.write("#gemmtune-replays %s\n" % replays)
        if eager:
            f.write("#gemmtune-eager %s\n" % eager)
        f.write(SHAPES_HEADER + "\n")
        for l in lines:
            f.write(l + "\n")


class _Trace:
    """A kineto trace under construction: ops, their launches and kernels, graph replays."""

    def __init__(self, graph_field=True):
        self.ev, self.t, self.ext, self.corr = [], 1000.0, 0, 0
        self.graph_field = graph_field

    def _kernel(self, name, dur, grid, block, ext, corr, graph=False):
        args = {"correlation": corr, "grid": list(grid), "block": list(block), "stream": 7,
                "device": 0}
        if ext:
            args["External id"] = ext
        if self.graph_field:
            args["graph id"] = 5 if graph else 0
        self.ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                        "ts": self.t + 3, "dur": dur, "args": args})

    def op(self, name, dims, types, kernels, wrap=None, link_to=None):
        """One op instance launching kernels [(name, dur, grid, block)]; wrap: outer ops;
        link_to: the name of an inner non-BLAS op the kernels' External id names instead."""
        t0 = self.t
        outer = []
        for w in wrap or ():
            self.ext += 1
            outer.append((w, self.ext))
        self.ext += 1
        me = self.ext
        inner = None
        if link_to:
            self.ext += 1
            inner = self.ext
        for k in kernels:
            self.corr += 1
            self.ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                            "pid": 1, "tid": 1, "ts": self.t + 1, "dur": 2,
                            "args": {"External id": inner or me, "correlation": self.corr}})
            self._kernel(k[0], k[1], k[2], k[3], inner or me, self.corr)
            self.t += 5
        self.t += 2
        for w, e in outer:
            self.ev.append({"ph": "X", "cat": "cpu_op", "name": w, "pid": 1, "tid": 1, "ts": t0,
                            "dur": self.t - t0 + 1, "args": {"External id": e,
                                                             "Input Dims": dims[:2]}})
        self.ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
                        "ts": t0 + 0.5, "dur": self.t - t0,
                        "args": {"External id": me, "Input Dims": dims, "Input type": types}})
        if inner:
            self.ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 1,
                            "tid": 1, "ts": t0 + 0.6, "dur": 1.0,
                            "args": {"External id": inner, "Input Dims": []}})
        self.t += 10

    def replay(self, kernels, link="launch"):
        """One graph launch running kernels; link: 'launch' (cudaGraphLaunch correlation and
        graph id), 'none' (no runtime event, no graph id: an unlinked kernel)."""
        self.corr += 1
        if link == "launch":
            self.ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch",
                            "pid": 1, "tid": 1, "ts": self.t, "dur": 4,
                            "args": {"correlation": self.corr, "cbid": 311}})
        for k in kernels:
            if link == "launch":
                self._kernel(k[0], k[1], k[2], k[3], None, self.corr, graph=True)
            else:
                self.ev.append({"ph": "X", "cat": "kernel", "name": k[0], "pid": 0, "tid": 7,
                                "ts": self.t + 3, "dur": k[1],
                                "args": {"grid": list(k[2]), "block": list(k[3])}})
            self.t += 5
        self.t += 10

    def noise(self):
        self.ev.append({"ph": "X", "cat": "kernel", "name":
                        "void at::native::elementwise_kernel<128, 4>(int)", "pid": 0, "tid": 7,
                        "ts": self.t, "dur": 50.0, "args": {"correlation": 0, "grid": [1, 1, 1],
                                                            "block": [128, 1, 1]}})
        self.ev.append({"ph": "X", "cat": "kernel", "name": "fmha_cutlassF_bf16_aligned_64x64",
                        "pid": 0, "tid": 7, "ts": self.t, "dur": 70.0,
                        "args": {"correlation": 0, "grid": [4, 1, 1], "block": [128, 1, 1]}})
        self.t += 100

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"schemaVersion": 1, "traceEvents": self.ev}, f)


BF = ["c10::BFloat16", "c10::BFloat16"]
K_UP = ("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", 30.0, (112, 1, 1), (384, 1, 1))
K_O_GEMM = ("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT", 8.0, (8, 1, 4), (384, 1, 1))
K_O_RED = ("void cublasLt::splitKreduce_kernel<32, 16, int, float>(...)", 2.0, (8, 1, 1),
           (256, 1, 1))
K_ROT = ("void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4>(...)", 3.0, (1, 1, 1), (128, 1, 1))


def _llama_like(path, graph_field=True, extra_unattributed=False, unlinked=False):
    """4 eager calls of an up projection (1 kernel) and an o projection (gemm + splitKreduce),
    2 of a degenerate fp32 bmm; 3 graph replays of a step with 2 up calls and 1 o call."""
    t = _Trace(graph_field)
    for i in range(4):
        t.op("aten::mm", [[1, 4096], [4096, 14336]], BF, [K_UP], wrap=["aten::linear",
                                                                       "aten::matmul"])
        t.op("aten::mm", [[1, 4096], [4096, 1024]], BF, [K_O_GEMM, K_O_RED],
             link_to="aten::copy_" if i == 0 else None)
    for _ in range(2):
        t.op("aten::bmm", [[1, 64, 1], [1, 1, 1]], ["float", "float"], [K_ROT])
    t.noise()
    for _ in range(3):
        t.replay([K_UP, K_O_GEMM, K_O_RED, K_UP], link="launch" if not unlinked else "none")
    if extra_unattributed:
        t.replay([("nvjet_sm90_tst_128x8_other_TNT", 40.0, (56, 1, 1), (384, 1, 1)),
                  (K_UP[0], 30.0, (56, 1, 1), K_UP[3])])
    t.write(path)
    # trace time: up 4*30 + 6*30 = 300; o 4*10 + 3*10 = 70; rot 6
    return {"up": (10, 300.0), "o": (7, 70.0), "rot": (2, 6.0)}


def _llama_shapes(path, want, scale=None, calls_delta=None, replays=None):
    scale, calls_delta = scale or {}, calls_delta or {}
    lines = [_shape_line(want["up"][0] + calls_delta.get("up", 0),
                         want["up"][1] * scale.get("up", 1.01), 14336, 1, 4096),
             _shape_line(want["o"][0] + calls_delta.get("o", 0),
                         want["o"][1] * scale.get("o", 0.99), 1024, 1, 4096),
             _shape_line(want["rot"][0], want["rot"][1], 64, 1, 1, a="f32")]
    _write_shapes(path, lines, replays if replays is not None else
                  "counted_by=cupti-graph-nodes captured_calls=3 identified=3 replays=9")


def _verdicts(rep):
    return {v["name"]: v["verdict"] for v in rep["verdicts"]}


def _case_llama(tmp, graph_field=True, extra_unattributed=False, unlinked=False, **shape_kw):
    """The llama-like trace and its shapes file (shape_kw: _llama_shapes's faults), compared."""
    tj, sc = os.path.join(tmp, "t.json"), os.path.join(tmp, "s.csv")
    want = _llama_like(tj, graph_field=graph_field, extra_unattributed=extra_unattributed,
                       unlinked=unlinked)
    _llama_shapes(sc, want, **shape_kw)
    rows, meta = read_shapes(sc)
    tr = attribute_kineto(load_kineto(tj))
    return analyze(rows, meta, "kineto", tr, [{"graph_replays_total": 3}])


def _group(rep, m):
    return next(g for g in rep["groups"] if g["problems"][0][0] == m)


def _tracer_case(tmp, scale=1.0, calls=(30, 30), replays="counted_by=cupti-graph-nodes "
                 "captured_calls=2 identified=2 replays=20", reason="pointer-array batch"):
    tdir = os.path.join(tmp, "tr")
    os.makedirs(tdir, exist_ok=True)
    for p in tracer_files(tdir):
        os.unlink(p)
    rows = [("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_TNT", 30, 300000, 10),
            ("void gemmk1_kernel<int, __nv_bfloat16, 256, 5>(...)", 30, 150000, 10),
            ("void at::native::vectorized_elementwise_kernel<4>(...)", 5, 999000, 0)]
    for pid, part in ((101, rows[:2]), (102, rows[2:])):
        with open(os.path.join(tdir, "trace.%d" % pid), "w") as f:
            f.write("#gemmtune-trace 1 status=ok pid=%d records=65 dropped=0 total_ns=%d "
                    "reason=-\n%s\n" % (pid, sum(r[2] for r in part), TRACE_HEADER))
            for name, c, ns, g in part:
                f.write('"%s",%d,%d,%d,%d,1,%d\n' % (name, c, ns, ns // c, ns // c, g))
    sc = os.path.join(tmp, "s.csv")
    _write_shapes(sc, [_shape_line(calls[0], 300.0 * scale, 512, 512, 64, 64, entry="gemmex",
                                   why=reason),
                       _shape_line(calls[1], 150.0 * scale, 64, 512, 512, 64, entry="gemmex",
                                   why=reason, ta="N")], replays)
    man = [{"label": "scores", "m": 512, "n": 512, "k": 64, "batch": 64, "dtype": "bf16",
            "eager_calls": 20, "graph_calls_per_replay": 1, "graph_replays": 10},
           {"label": "context", "m": 64, "n": 512, "k": 512, "batch": 64, "dtype": "bf16",
            "eager_calls": 20, "graph_calls_per_replay": 1, "graph_replays": 10}]
    rows_, meta = read_shapes(sc)
    return analyze(rows_, meta, "tracer", read_tracer(tracer_files(tdir)), man)


def _batched_case(tmp):
    """bmm and baddbmm with a fingerprint shared by two problems (one group), and a manifest."""
    t = _Trace()
    k1 = ("nvjet_sm90_tst_128x128_64x4_1x1_h_bz_NNT", 20.0, (2, 2, 256), (384, 1, 1))
    k2 = ("nvjet_sm90_tst_128x128_64x4_1x1_h_badd_NNT", 25.0, (16, 1, 256), (384, 1, 1))
    for _ in range(2):
        t.op("aten::bmm", [[256, 256, 64], [256, 64, 256]], BF, [k1])
        t.op("aten::baddbmm", [[16, 2048], [256, 16, 128], [256, 128, 2048], [], []],
             BF + ["", ""], [k2])
        # another problem running k1's very fingerprint: grouped with the bmm
        t.op("aten::bmm", [[256, 128, 64], [256, 64, 512]], BF, [k1])
    for _ in range(3):
        t.replay([k1, k2])
    tj, sc = os.path.join(tmp, "b.json"), os.path.join(tmp, "b.csv")
    t.write(tj)
    _write_shapes(sc, [_shape_line(5, 100.0, 256, 256, 64, 256, entry="gemmstridedbatchedex"),
                       _shape_line(5, 125.0, 2048, 16, 128, 256, entry="gemmstridedbatchedex"),
                       _shape_line(2, 40.0, 512, 128, 64, 256, entry="gemmstridedbatchedex")],
                  "counted_by=cupti-graph-nodes captured_calls=2 identified=2 replays=6")
    man = [{"label": "scores", "op": "bmm", "dims": [[256, 256, 64], [256, 64, 256]],
            "dtype": "bf16", "eager_calls": 2, "graph_calls_per_replay": 1, "graph_replays": 3},
           {"label": "mask2d", "op": "baddbmm",
            "dims": [[16, 2048], [256, 16, 128], [256, 128, 2048]], "dtype": "bf16",
            "eager_calls": 2, "graph_calls_per_replay": 1, "graph_replays": 3}]
    rows, meta = read_shapes(sc)
    return analyze(rows, meta, "kineto", attribute_kineto(load_kineto(tj)), man)


def _fake_tools(tmp):
    """A stand-in gemmtune (capture writes a canned shapes file and runs the command) and a
    stand-in client (with --profile it writes a canned kineto trace; with GEMMTUNE_TRACE, a
    tracer file), both Python, to run the driver end to end."""
    canned = os.path.join(tmp, "canned")
    os.makedirs(canned, exist_ok=True)
    want = _llama_like(os.path.join(canned, "trace.json"))
    _llama_shapes(os.path.join(canned, "shapes.csv"), want)
    gt = os.path.join(tmp, "gemmtune")
    with open(gt, "w") as f:
        f.write("#!%s\nimport os, shutil, subprocess, sys\n"
                "a = sys.argv[1:]\nassert a[0] == 'capture' and a[1] == '-o' and a[3] == '--', a\n"
                "assert 'CUDA_INJECTION64_PATH' not in os.environ\n"
                "rc = subprocess.call(a[4:])\n"
                "shutil.copy(os.path.join(%r, 'shapes.csv'), a[2])\nsys.exit(rc)\n"
                % (sys.executable, canned))
    client = os.path.join(tmp, "client.py")
    with open(client, "w") as f:
        f.write("import os, shutil, sys\n"
                "print('gemmtune-manifest {\"graph_replays_total\": 3}', flush=True)\n"
                "if '--profile' in sys.argv:\n"
                "    assert 'LD_PRELOAD' not in os.environ or 'libgemmtune' not in "
                "os.environ['LD_PRELOAD']\n"
                "    shutil.copy(os.path.join(%r, 'trace.json'), sys.argv[sys.argv.index("
                "'--profile') + 1])\n"
                "if os.environ.get('GEMMTUNE_TRACE'):\n"
                "    assert os.environ['CUDA_INJECTION64_PATH'].endswith('tracer.so')\n"
                "    p = os.environ['GEMMTUNE_TRACE'].replace('%%p', str(os.getpid()))\n"
                "    open(p, 'w').write('#gemmtune-trace 1 status=ok pid=1 records=1 dropped=0 "
                "total_ns=376000 reason=-\\n%s\\nnvjet_x,13,376000,1,90000,1,6\\n')\n"
                "sys.exit(int(os.environ.get('FAKE_CLIENT_RC', '0')))\n"
                % (canned, TRACE_HEADER))
    for p in (gt, client):
        os.chmod(p, 0o755)
    lib = os.path.join(tmp, "tracer.so")
    open(lib, "w").close()
    return gt, client, lib


def _driver(argv, env=None):
    p = subprocess.run([sys.executable, os.path.abspath(__file__)] + argv,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout


def _selftest_cases(tmp):
    v = _verdicts
    gt, client, lib = _fake_tools(tmp)
    return [
        ("GEMM kernel names follow gt_cublas_owns_kernel", lambda: [is_gemm_kernel(n) for n in (
            "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", "sm90_xmma_gemm_bf16bf16_bf16f32",
            "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8",
            "void cublasLt::splitKreduce_kernel<32, 16>", "void gemv2T_kernel_val<int>",
            "_ZN8internal5gemvx6kernelIiiEEvT_", "ampere_bf16_s16816GEMM_x",
            "fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "void at::native::elementwise_kernel<>",
            "void pytorch_flash::flash_fwd_kernel<>", "Cutlass_like_but_capital")] ==
         [True] * 7 + [False] * 4),
        ("mm maps to m=N n=M k=K", lambda: blas_problem(
            "aten::mm", [[16, 4096], [4096, 14336]], BF) == (14336, 16, 4096, 1, "bf16")),
        ("addmm takes A and B after the bias", lambda: blas_problem(
            "aten::addmm", [[1024], [8, 512], [512, 1024], [], []]) == (1024, 8, 512, 1, None)),
        ("bmm maps to m=N n=M with the batch", lambda: blas_problem(
            "aten::bmm", [[32, 128, 64], [32, 64, 128]], BF) == (128, 128, 64, 32, "bf16")),
        ("bmm with N=1 stays column-major: m=M n=1", lambda: blas_problem(
            "aten::bmm", [[1, 64, 1], [1, 1, 1]], ["float", "float"]) == (64, 1, 1, 1, "f32")),
        ("baddbmm with a 2-D C", lambda: blas_problem(
            "aten::baddbmm", [[16, 2048], [256, 16, 128], [256, 128, 2048], [], []],
            BF + ["", ""]) == (2048, 16, 128, 256, "bf16")),
        ("linear and matmul wrappers", lambda: blas_problem(
            "aten::linear", [[2, 8, 4096], [1024, 4096]]) == (1024, 16, 4096, 1, None) and
         blas_problem("aten::matmul", [[4, 8, 64, 32], [4, 8, 32, 16]]) == (16, 64, 32, 32, None)
         and blas_problem("aten::mm", [[2, 3], [4, 5]]) is None and
         blas_problem("aten::add", [[2, 3], [3, 4]]) is None),
        ("the shapes file's preamble lines are read", lambda: read_shapes(_llama_shapes_file(
            tmp))[1]["eager"] == {"timed_by": "cupti-kernels", "tagged_calls": "12"}),
        ("#gemmtune-replays reason runs to the end of the line", lambda: parse_kv(
            "counted_by=api-calls captured_calls=40 reason=no kernel tracer (x=1 y)") == {
                "counted_by": "api-calls", "captured_calls": "40",
                "reason": "no kernel tracer (x=1 y)"}),
        ("llama-like: every verdict passes", lambda: _case_llama(tmp)["pass"] and
         v(_case_llama(tmp)) == {"total GEMM time": "PASS", "calls per group": "PASS",
                                  "time share per group": "PASS",
                                  "graph replays counted": "PASS", "replayed calls": "PASS",
                                  "calls per step": "PASS", "manifest calls": "n/a",
                                  "keys listed": "n/a"}),
        ("llama-like: eager + graph calls, kernels per call, calls per step", lambda: [
            (g["eager_calls"], _num(g["graph_calls"]), g["kernels_per_call"],
             _num(g["per_step"])) for g in (_group(_case_llama(tmp), m)
                                            for m in (14336, 1024, 64))] ==
         [(4, "6", 1.0, "2"), (4, "3", 2.0, "1"), (2, "0", 1.0, "-")]),
        ("llama-like: a kernel whose id names aten::copy_ goes to the enclosing mm", lambda:
         _case_llama(tmp)["fields"]["attributed_by"] == {"external id": 12, "enclosing op": 2}),
        ("llama-like: graph kernels found by cudaGraphLaunch alone (no graph id field)",
         lambda: _case_llama(tmp, graph_field=False)["pass"]),
        ("llama-like: one call missing in the shapes file fails calls", lambda: v(_case_llama(
            tmp, calls_delta={"o": -1}))["calls per group"] == "FAIL"),
        ("llama-like: the o row 20% heavy fails its share but not the total", lambda: (lambda r: (
            v(r)["time share per group"], v(r)["total GEMM time"]))(_case_llama(
                tmp, scale={"o": 1.2})) == ("FAIL", "PASS")),
        ("llama-like: all rows 8% heavy fail the total only", lambda: (lambda r: (
            v(r)["total GEMM time"], v(r)["time share per group"]))(_case_llama(
                tmp, scale={"up": 1.08, "o": 1.08})) == ("FAIL", "PASS")),
        ("llama-like: replays counted as API calls fail", lambda: (lambda r: (
            v(r)["graph replays counted"], v(r)["replayed calls"]))(_case_llama(
                tmp, replays="counted_by=api-calls captured_calls=3 reason=no tracer")) ==
         ("FAIL", "n/a")),
        ("llama-like: replays= not captured_calls x replays fails calls per step", lambda: v(
            _case_llama(tmp, replays="counted_by=cupti-graph-nodes captured_calls=4 "
                        "identified=4 replays=9"))["calls per step"] == "FAIL"),
        ("unseen graph kernels are listed, named after a near one, and break the total",
         lambda: (lambda r: (
             [k["dur_us"] for k in r["unattributed"]], "eager mm bf16 m=14336 n=1 k=4096 ran "
             "this name" in r["unattributed"][1]["why"], v(r)["total GEMM time"],
             v(r)["replayed calls"]))(_case_llama(tmp, extra_unattributed=True)) ==
         ([40.0, 30.0], True, "FAIL", "PASS")),
        ("unlinked kernels (no id, no launch) are counted by fingerprint", lambda: (lambda r: (
            _num(_group(r, 14336)["unlinked_calls"]), _num(_group(r, 14336)["graph_calls"]),
            _num(_group(r, 1024)["unlinked_calls"]), r["fields"]["unlinked_kernels"],
            v(r)["calls per group"]))(_case_llama(tmp, unlinked=True)) ==
         ("6", "0", "3", 12, "PASS")),
        ("batched: a shared fingerprint makes one group of two problems", lambda: (lambda r: (
            len(r["groups"]), sorted(len(g["problems"]) for g in r["groups"]),
            [(_num(g["trace_calls"]), g["capture_calls"]) for g in r["groups"]]))(
                _batched_case(tmp)) == (2, [1, 2], [("7", 7), ("5", 5)])),
        ("batched: calls, shares, manifest, keys listed pass", lambda: v(_batched_case(tmp)) == {
            "total GEMM time": "PASS", "calls per group": "PASS", "time share per group": "PASS",
            "graph replays counted": "PASS", "replayed calls": "PASS", "calls per step": "PASS",
            "manifest calls": "PASS", "keys listed": "PASS"}),
        ("a row the trace lacks is its own group and fails calls", lambda: (lambda r: (
            v(r)["calls per group"], any(g.get("capture_only") for g in r["groups"])))(
                _capture_only_case(tmp)) == ("FAIL", True)),
        ("a row with m and n swapped is placed and noted", lambda: place_rows(
            [{"m": 1, "n": 64, "k": 1, "batch": 1, "a_type": "f32"}],
            [(64, 1, 1, 1, "f32")]) == [((64, 1, 1, 1, "f32"), "matched with m and n swapped")]),
        ("the A type tells two problems of one shape apart", lambda: place_rows(
            [{"m": 8, "n": 8, "k": 8, "batch": 2, "a_type": "f32"}],
            [(8, 8, 8, 2, "bf16"), (8, 8, 8, 2, "f32")])[0][0] == (8, 8, 8, 2, "f32")),
        ("tracer: totals and the manifest pass, two files merged", lambda: (lambda r: (
            r["pass"], round(r["trace_us"], 3), r["trace_gemm_launches"], v(r)))(_tracer_case(
                tmp)) == (True, 450.0, 60, {
                    "total GEMM time": "PASS", "graph replays counted": "PASS",
                    "replayed calls": "n/a", "calls per step": "PASS", "manifest calls": "PASS",
                    "keys listed": "PASS"})),
        ("tracer: 10% more captured time fails the total", lambda: v(_tracer_case(
            tmp, scale=1.10))["total GEMM time"] == "FAIL"),
        ("tracer: a shape short of the client's calls fails the manifest", lambda: v(
            _tracer_case(tmp, calls=(30, 29)))["manifest calls"] == "FAIL"),
        ("tracer: a file with status=unverified is a run error", lambda: _raises(
            lambda: read_tracer([_write(os.path.join(tmp, "trace.9"),
                                        "#gemmtune-trace 1 status=unverified pid=9 records=0 "
                                        "dropped=0 total_ns=0 reason=CUPTI held\n")]),
            "CUPTI held")),
        ("shapes file without its key columns is a run error", lambda: _raises(
            lambda: read_shapes(_write(os.path.join(tmp, "bad.csv"), "calls,time_us\n1,2\n")),
            "header lacks")),
        ("driver: kineto end to end passes, files written", lambda: (lambda rc_out: rc_out[0] == 0
         and "capture_vs_trace: PASS" in rc_out[1] and os.path.exists(os.path.join(
             tmp, "e2e", "capture_vs_trace.json")) and os.path.exists(os.path.join(
                 tmp, "e2e", "trace_run.log")))(_driver(
                     ["--gemmtune", gt, "--out", os.path.join(tmp, "e2e"), "--", sys.executable,
                      client]))),
        ("driver: the JSON holds the verdicts, the trace is kept gzipped", lambda: [
            v_["verdict"] for v_ in json.load(open(os.path.join(
                tmp, "e2e", "capture_vs_trace.json")))["verdicts"]][:3] == ["PASS"] * 3 and
         os.path.exists(os.path.join(tmp, "e2e", "trace.json.gz")) and
         not os.path.exists(os.path.join(tmp, "e2e", "trace.json"))),
        ("driver: --no-run compares the files again", lambda: (lambda rc_out: (
            rc_out[0], "kineto trace" in rc_out[1]))(_driver(
                ["--no-run", "--out", os.path.join(tmp, "e2e")])) == (0, True)),
        ("driver: --trace tracer injects the tracer and reads its file", lambda: (lambda rc_out: (
            rc_out[0], "tracer trace" in rc_out[1]))(_driver(
                ["--gemmtune", gt, "--out", os.path.join(tmp, "e2e_t"), "--trace", "tracer",
                 "--tracer-lib", lib, "--", sys.executable, client])) == (0, True)),
        ("driver: a failing client run exits 2", lambda: (lambda rc_out: (
            rc_out[0], "the capture run exited 3" in rc_out[1]))(_driver(
                ["--gemmtune", gt, "--out", os.path.join(tmp, "e2e_f"), "--", sys.executable,
                 client], {"FAKE_CLIENT_RC": "3"})) == (2, True)),
        ("driver: no command is a usage error", lambda: _driver(
            ["--gemmtune", gt, "--out", os.path.join(tmp, "x")])[0] == 2),
        ("every report prints, with its verdict lines", lambda: all(
            _prints(r) for r in (_case_llama(tmp, extra_unattributed=True),
                                 _case_llama(tmp, unlinked=True), _batched_case(tmp),
                                 _tracer_case(tmp), _capture_only_case(tmp)))),
        ("no torch was imported", lambda: "torch" not in sys.modules),
    ]


def _capture_only_case(tmp):
    rows, meta = read_shapes(_llama_shapes_file(tmp))
    rows.append(dict(rows[0], m=999, n=7, calls=4, time_us=1.0))
    return analyze(rows, meta, "kineto", attribute_kineto(load_kineto(os.path.join(
        tmp, "t.json"))), [])


def _llama_shapes_file(tmp):
    want = _llama_like(os.path.join(tmp, "t.json"))
    path = os.path.join(tmp, "s.csv")
    _llama_shapes(path, want)
    return path


def _prints(rep):
    import io
    buf = io.StringIO()
    print_report(rep, buf)
    text = buf.getvalue()
    json.dumps(_jsonable(rep))
    return all(("%s %s:" % (v["verdict"].ljust(4), v["name"])) in text for v in rep["verdicts"])


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def _raises(fn, text):
    try:
        fn()
    except RunError as e:
        return text in str(e)
    return False


def selftest():
    import selftest_cases
    return selftest_cases.run(_selftest_cases, "capture_vs_trace_selftest.")


# ---- command line ----------------------------------------------------------------------------

def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    first, _, rest = __doc__.partition("\n\n")
    ap = argparse.ArgumentParser(prog="capture_vs_trace.py", description=first, epilog=rest,
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="%(prog)s [options] --gemmtune GEMMTUNE --out DIR -- "
                                       "CLIENT [ARGS...]")
    ap.add_argument("--gemmtune", help="the gemmtune binary (its capture command)")
    ap.add_argument("--out", help="folder for the shapes file, the trace, the logs and the JSON")
    ap.add_argument("--trace", choices=("kineto", "tracer"),
                    help="the reference trace (default: kineto for a Python client, else tracer)")
    ap.add_argument("--tracer-lib", help="libgemmtune_trace.so for --trace tracer (default: "
                    "GEMMTUNE_TRACE_LIB, else next to --gemmtune)")
    ap.add_argument("--tol", type=float, default=TOL,
                    help="time bound, relative (default %g)" % TOL)
    ap.add_argument("--min-share", type=float, default=MIN_SHARE,
                    help="groups below this share of GEMM time skip the share verdict "
                         "(default %g)" % MIN_SHARE)
    ap.add_argument("--json", help="the report as JSON (default OUT/capture_vs_trace.json)")
    ap.add_argument("--run-timeout", type=float, default=600,
                    help="seconds each run may take before it is killed (default 600)")
    ap.add_argument("--no-run", action="store_true",
                    help="compare the files an earlier run left in --out")
    ap.add_argument("--selftest", action="store_true",
                    help="check the attribution, grouping and verdicts on made-up files")
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest()
    if not args.out:
        ap.print_usage(sys.stderr)
        print("capture_vs_trace.py: --out is required", file=sys.stderr)
        return 2
    args.cmd = cmd
    if not args.no_run:
        if not cmd:
            ap.print_usage(sys.stderr)
            print("capture_vs_trace.py: give the client after --", file=sys.stderr)
            return 2
        if not args.gemmtune or not os.access(args.gemmtune, os.X_OK):
            print("capture_vs_trace.py: --gemmtune %s is not an executable" % args.gemmtune,
                  file=sys.stderr)
            return 2
    mode = args.trace or (client_kind(cmd) if cmd else None)
    if mode is None:  # --no-run: whichever trace the earlier run left
        if glob.glob(os.path.join(args.out, "trace.json*")):
            mode = "kineto"
        elif tracer_files(args.out):
            mode = "tracer"
        else:
            print("capture_vs_trace.py: %s holds no trace.json and no tracer file" % args.out,
                  file=sys.stderr)
            return 2
    if mode == "tracer" and not args.tracer_lib:
        env_lib = os.environ.get("GEMMTUNE_TRACE_LIB")
        args.tracer_lib = env_lib or os.path.join(
            os.path.dirname(os.path.realpath(args.gemmtune or ".")), "libgemmtune_trace.so")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _kill_child)
    try:
        if not args.no_run:
            do_runs(args, mode)
        rep = compare_files(args, mode)
    except RunError as e:
        print("RUN FAILURE: %s" % e, flush=True)
        return 2
    print_report(rep)
    path = args.json or os.path.join(args.out, "capture_vs_trace.json")
    with open(path, "w") as f:
        json.dump(_jsonable(rep), f, indent=1)
    print("wrote %s" % path)
    return 0 if rep["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
