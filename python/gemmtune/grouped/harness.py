"""The one harness that races own grouped kernels against torch._grouped_mm in a torch process,
shared by bench/grouped_vs_torch.py (the MoE model table) and race.py (the keys of a shapes file,
writing DB rows): the ctypes surface of libgemmtune_grouped.so (src/kernels/gt_grouped_lib.c),
the cold CUDA-graph timing, the output comparison and the rule that skips decode tiles on
problems they cannot win. Kept in one place so both scripts time and gate the same way."""
import ctypes
import re
import statistics

import torch

# Largest difference on the routed rows, relative to the largest reference value, for an own
# output to agree with torch's.
AGREE_TOL = 2e-2


def load_lib(path):
    """libgemmtune_grouped.so with its function types set (pointers are device addresses as
    integers, the stream a cudaStream_t)."""
    lib = ctypes.CDLL(path)
    lib.gtgb_count.restype = ctypes.c_int
    lib.gtgb_name.restype = ctypes.c_char_p
    lib.gtgb_name.argtypes = [ctypes.c_int]
    lib.gtgb_error.restype = ctypes.c_char_p
    common = [ctypes.c_int] + [ctypes.c_uint64] * 5 + [ctypes.c_int64] * 9 + [ctypes.c_int32]
    lib.gtgb_supports.argtypes = common
    lib.gtgb_supports.restype = ctypes.c_int
    lib.gtgb_launch.argtypes = common + [ctypes.c_uint64]
    lib.gtgb_launch.restype = ctypes.c_int
    # The e4m3 forms (rowwise scales, bf16 out), where the library has them.
    if hasattr(lib, "gtgb_launch_f8"):
        lib.gtgb_operands.argtypes = [ctypes.c_int]
        lib.gtgb_operands.restype = ctypes.c_int
        f8 = ([ctypes.c_int] + [ctypes.c_uint64] * 6 + [ctypes.c_int64] * 8 + [ctypes.c_int32])
        lib.gtgb_supports_f8.argtypes = f8
        lib.gtgb_supports_f8.restype = ctypes.c_int
        lib.gtgb_launch_f8.argtypes = f8 + [ctypes.c_uint64]
        lib.gtgb_launch_f8.restype = ctypes.c_int
    return lib


def operands_of(lib, idx):
    """0 for a bf16 instance, 1 for an e4m3 one (rowwise scales); 0 for a library without them."""
    return lib.gtgb_operands(idx) if hasattr(lib, "gtgb_operands") else 0


def fill_e4m3(t):
    """Fills an e4m3 tensor of any strides with e4m3 values of randn * 2, a few leading indices
    (rows, or experts) at a time: the fp32 draw of a whole DeepSeek-V3 layer at once would be
    30 GB. Returns t."""
    per = max(1, t[0].numel() * 4) if t.shape[0] else 1
    step = max(1, (256 << 20) // per)
    for r in range(0, t.shape[0], step):
        part = t[r:r + step]
        part.copy_((torch.randn(part.shape, device=t.device) * 2.0).to(t.dtype))
    return t


def rel_err(out, ref, used):
    """Largest difference on the routed rows, relative to the largest reference value."""
    if used == 0:
        return 0.0
    scale = ref[:used].float().abs().max().item() or 1.0
    return (out[:used].float() - ref[:used].float()).abs().max().item() / scale


def time_graph_samples(fn_iter, iters, reps, warm_ms=0.0, warm_max=20):
    """Microseconds per call of fn_iter(i) captured iters times in one CUDA graph, one sample
    per replay (reps of them). Before the samples the graph replays back to back until warm_ms
    of them have passed or warm_max replays, whichever is first (at least one): a compute-bound
    call slows by 10-15% over its first ~150 ms as the GPU reaches its power limit, and samples
    taken in that ramp time a state no sustained workload runs in."""
    fn_iter(0)  # warm-up outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(iters):
            fn_iter(i)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def replay_ms():
        e0.record()
        graph.replay()
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1)

    warmed_ms, n = 0.0, 0
    while n == 0 or (warmed_ms < warm_ms and n < warm_max):
        warmed_ms += replay_ms()
        n += 1
    us = [replay_ms() * 1000.0 / iters for _ in range(reps)]
    del graph
    return us


def time_graph(fn_iter, iters, reps):
    """Median microseconds per call of fn_iter(i) captured iters times in one CUDA graph."""
    return statistics.median(time_graph_samples(fn_iter, iters, reps))


def decode_tile_hopeless(name, rows, active):
    """A decode tile (grpd, grpv) re-reads the group's weights for every BN rows: past 4 tiles
    per active group on average it cannot win, and at prefill it takes seconds."""
    bn = int(re.search(r"_t\d+x(\d+)x\d+_", name).group(1))
    decode = "_grpd_" in name or "_grpv_" in name
    return decode and active > 0 and rows > 4 * bn * active
