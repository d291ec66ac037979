#!/usr/bin/env python3
"""Expand src/kernels/space.json into the own-kernel instances (python3 stdlib only).

Writes src/kernels/generated/:
  <family>[_<arch>]_<dtype>_<i>.cu  one `extern "C" __global__` kernel per instance, symbol =
                           instance name; the arch token is in the file name only when the family
                           builds for more than one architecture (each file compiles for one)
  <family>[_<arch>]_<dtype>_e_<i>.cu  the same for the epilogue twins (a family's "epilogue":
                           [false, true]): each plain instance's body with its EPI flag set,
                           named by the plain name + "_e"; in files of their own, so the plain
                           instances' files do not change when twins are added or removed
  splitk_reduce_<arch>.cu  the split-K reduce kernels of one architecture
                           (gt_<arch>_splitk_reduce_<type>)
  instances.c              the plain-C tables: architectures, then instances (name, parameters,
                           threads, dynamic shared memory)
  instances_fn.cu          kernel handles for cudaLaunchKernel, in the table's order, and the
                           reduce kernels' handles by name
  wgmma_ss.cuh             the wgmma.mma_async m64nNk16 wrappers for every N the wg and grouped
                           instances use
  wgmma_f8.cuh             the fp8 wgmma.mma_async m64nNk32 wrappers for every (A type, B type,
                           N) the wgf8 instances use (only when the space has wgf8 instances)
  <gfamily>_<dtype>_<i>.cu the grouped GEMM kernels (space.json's "grouped" section: families
                           grpd and grpp in gt_grp.cuh, grpv in gt_grpv.cuh), one
                           `extern "C" __global__` kernel per instance taking
                           gt_grouped_kargs_t, symbol = instance name
  grouped_instances.c      their plain-C table (name, family, layout, tile, threads, shared
                           memory; gt_grouped.h), written only when the space has that section
  grouped_fn.cu            their kernel handles, in the same order
  kernels.cmake            each kernel source and the CUDA architecture it is compiled for
                           (src/kernels/CMakeLists.txt builds one object library per architecture)

The architectures are data: space.json's "archs" table (name token, CUDA target, shared-memory
limit) and each family's "archs" list; nothing here names one. --space and --out generate another
space into another directory (tests/data/space_dummy_arch.json, a test-only architecture).

The generated files are committed, so a build needs no python. `--check` regenerates in memory
and exits 1 when a file on disk differs, is missing, or is stale (tests/cli/test_kernels_generated.sh).

Generation-time legality (a parameter set no problem could ever run) fails here with the reason;
problem- and device-dependent rules (alignment, shared-memory budget, spills, SM fill) are the
provider's, at enumeration.
"""
import argparse
import collections
import itertools
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SPACE = os.path.join(HERE, "space.json")
OUTDIR = os.path.join(HERE, "generated")
SPACE_REL = "src/kernels/space.json"
GENERATOR_REL = "src/kernels/gen_instances.py"
GENERATED_EXT = (".cu", ".c", ".cuh", ".cmake")

DTYPES = {"bf16": ("GT_DT_BF16", "gtk::bf16"), "f16": ("GT_DT_F16", "gtk::f16")}
# wgf8: the fp8 operand types (name token -> C enum, kernel tag, PTX type) and the D types.
F8TYPES = {"e4m3": ("GT_DT_F8E4M3FN", "gtk::e4m3", "e4m3"),
           "e5m2": ("GT_DT_F8E5M2", "gtk::e5m2", "e5m2")}
F8_OUT = {"bf16": ("GT_DT_BF16", "gtk::bf16"), "f16": ("GT_DT_F16", "gtk::f16"),
          "f32": ("GT_DT_F32", "gtk::f32")}
LAYOUTS = ("tn", "nn", "nt", "tt")
WG_TOKENS = (8, 16, 32, 64)  # wg BN; wg_swapped says which tiles swap the roles


class SpaceError(Exception):
    pass


def pow2(x):
    return x > 0 and (x & (x - 1)) == 0


def cbool(b):
    return "true" if b else "false"


# ---- architectures -----------------------------------------------------------------------------

# A CUDA target and what its code runs on (the CUDA compatibility rules, PTX included because
# CMake embeds it next to the SASS): sm_XYa holds arch-specific features and runs on X.Y only;
# sm_XYf family-specific ones and runs on X.y, y >= Y; plain sm_XY on any X.Y or later.
TARGET = re.compile(r"^sm_([1-9][0-9]*)([0-9])([af]?)$")
COMPAT = {"a": "GT_KARCH_EXACT", "f": "GT_KARCH_FAMILY", "": "GT_KARCH_FORWARD"}
TOKEN = re.compile(r"^sm[0-9]+[a-z]*$")


def load_archs(space):
    """The architecture table: token -> dict(token, target, cc, compat, max_smem, cmake)."""
    table = space.get("archs")
    if not isinstance(table, dict) or not table:
        raise SpaceError("archs: a table of architectures (token -> target, max_smem) is required")
    archs = {}
    for tok, spec in table.items():
        if not TOKEN.match(tok):
            raise SpaceError("archs: token %r is not 'sm' + digits (it is a name token)" % tok)
        unknown = set(spec) - {"target", "max_smem", "comment"}
        if unknown:
            raise SpaceError("archs %s: unknown keys %s" % (tok, sorted(unknown)))
        m = TARGET.match(str(spec.get("target", "")))
        if not m:
            raise SpaceError("archs %s: target %r is not a CUDA target such as sm_90a"
                             % (tok, spec.get("target")))
        smem = spec.get("max_smem")
        if not isinstance(smem, int) or smem <= 0:
            raise SpaceError("archs %s: max_smem (bytes of shared memory per block) is required"
                             % tok)
        archs[tok] = dict(token=tok, target=spec["target"], cc=(int(m.group(1)), int(m.group(2))),
                          compat=COMPAT[m.group(3)], max_smem=smem,
                          cmake=spec["target"][len("sm_"):])
    return archs


# ---- families ------------------------------------------------------------------------------------
#
# One function per family: it checks the family's rules on a parameter set p (the common keys,
# dtype, layout and ks, are checked before) and returns what differs between families: the name
# tokens after the layout, the table fields, threads, shared memory and the kernel body (its
# template and template arguments: make_instance adds the epilogue flag of a twin). The FAMILIES
# table at the end of this section is the only place that lists them.

def make_decode(p, tdt):
    nt, rw, wk, ku, v, pf = p["n"], p["r"], p["w"], p["u"], p["v"], p["p"]
    if p["layout"] != "tn":
        raise SpaceError("decode is TN only (nn.Linear)")
    if not (pow2(nt) and nt <= 8 and pow2(rw) and rw <= 16):
        raise SpaceError("decode: n and r are powers of two, n <= 8 (recursive-halving reduce)")
    if v not in (2, 4, 8):
        raise SpaceError("decode: v is 2, 4 or 8 elements")
    if wk < 1 or wk > 32 or ku < 1:
        raise SpaceError("decode: 1 <= w <= 32, u >= 1")
    # p: 1, the body's pre-wait L2 prefetch of the CTA's first K step (made for 16-byte rows, v8,
    # only); 0 (name token p0), none. A p0 instance with narrower loads would be its p1 twin.
    if pf not in (0, 1) or (pf == 0 and v != 8):
        raise SpaceError("decode: p is 1 (the pre-wait prefetch, the default) or 0 (none, v8"
                         " only: narrower loads never prefetch)")
    tokens = "n%d_r%d_w%d_u%d_ks%d_v%d" % (nt, rw, wk, ku, p["ks"], v)
    if pf == 0:
        tokens += "_p0"  # p1 is left out of the name
    return dict(tokens=tokens,
                row=dict(tile_m=rw, tile_n=nt, warps_k=wk, unroll=ku, vec=v, prefetch=pf),
                threads=32 * wk, smem=wk * nt * rw * 4,
                body=("gtk::decode_body", [tdt, nt, rw, wk, ku, v]),
                body_tail=["false"] if pf == 0 else [])


def decodetc_common(p, fam):
    """decodetc's tokens, table fields, threads and shared memory (dtf8 shares them)."""
    nt, mr, (wm, wk), ku, s, v, pf = p["n"], p["m"], p["w"], p["u"], p["s"], p["v"], p["p"]
    if p["layout"] != "tn":
        raise SpaceError("%s is TN only (nn.Linear)" % fam)
    if nt % 8 or nt < 8 or nt > 64:
        raise SpaceError("%s: n is a multiple of the mma N (8), at most 64" % fam)
    if mr not in (1, 2, 4) or wm < 1 or wk < 1 or wm * wk > 32 or ku < 1:
        raise SpaceError("%s: m in 1,2,4; 1 <= w <= 32 warps; u >= 1" % fam)
    if s not in (1, 2, 3):
        raise SpaceError("%s: s is 1 or 2 register stages, or 3 (2 plus an L2 prefetch"
                         " stage)" % fam)
    if pf < 0 or (pf > 0 and s == 3):
        raise SpaceError("%s: p (KB of each row prefetched before the dependent-launch"
                         " wait) is >= 0, and 0 with s3 (which prefetches its own way)" % fam)
    tokens = "n%d_m%d_w%dx%d_u%d_s%d_ks%d_v%d" % (nt, mr, wm, wk, ku, s, p["ks"], v)
    if pf:
        tokens += "_p%d" % pf  # p0 is left out of the name
    return dict(tokens=tokens,
                row=dict(tile_m=mr, tile_n=nt, warps_m=wm, warps_k=wk, unroll=ku, stages=s, vec=v,
                         prefetch=pf),
                threads=32 * wm * wk, smem=wk * nt * (wm * mr * 16 + 4) * 4,
                targs=[nt, mr, wm, wk, ku, s, pf])


def make_decodetc(p, tdt):
    if p["v"] != 8:
        raise SpaceError("decodetc: v is 8 (one 16-byte load feeds two mma's)")
    spec = decodetc_common(p, "decodetc")
    spec["body"] = ("gtk::decodetc_body", [tdt] + spec.pop("targs"))
    return spec


def f8_types(p, fam):
    """The [A, B, D] triple of an fp8 family (wgf8, dtf8), all three in the name."""
    types = p["types"]
    if not (isinstance(types, list) and len(types) == 3 and types[0] in F8TYPES
            and types[1] in F8TYPES and types[2] in F8_OUT):
        raise SpaceError("%s: types is [A, B, D]: A and B in %s, D in %s"
                         % (fam, sorted(F8TYPES), sorted(F8_OUT)))
    return types


def make_dtf8(p, _tdt):
    """dtf8 (gt_dtf8.cuh): decodetc's pipeline on fp8 operands, 16 K values per 16-byte load,
    no split across CTAs (the reduce kernel knows no scales)."""
    ta, tb, td = f8_types(p, "dtf8")
    if p["v"] != 16:
        raise SpaceError("dtf8: v is 16 (one 16-byte load of 1-byte elements feeds two mma's)")
    if p["ks"] != 1:
        raise SpaceError("dtf8: ks is 1 (its warps split K inside the CTA; the split-K reduce"
                         " kernel applies no fp8 scales)")
    spec = decodetc_common(p, "dtf8")
    spec["row"].update(dtype=ta, b_dtype=tb, d_dtype=td)
    spec.update(types="%s_%s_%s" % (ta, tb, td), file_type=ta,
                body=("gtk::dtf8_body", [F8TYPES[ta][1], F8TYPES[tb][1], F8_OUT[td][1]]
                      + spec.pop("targs")))
    return spec


def make_tc(p, tdt):
    (bm, bn, bk), (wm, wn), s, al, lay = p["t"], p["w"], p["s"], p["a"], p["layout"]
    if bm % (wm * 16) or bn % (wn * 16) or bk % 16:
        raise SpaceError("tc: warp tile must be a multiple of m16 x n16 (ldmatrix x4 pairs)"
                         " and BK of 16: t%dx%dx%d w%dx%d" % (bm, bn, bk, wm, wn))
    if s < 2:
        raise SpaceError("tc: at least 2 stages")
    if al not in (1, 8):
        raise SpaceError("tc: alignment a is 8 (cp.async 16 B) or 1 (scalar)")
    if wm * wn > 32:
        raise SpaceError("tc: at most 32 warps")
    ak = lay[0] == "t"   # A K-contiguous
    bkm = lay[1] == "n"  # B K-contiguous
    a_r, a_c = (bm, bk) if ak else (bk, bm)
    b_r, b_c = (bn, bk) if bkm else (bk, bn)
    return dict(tokens="t%dx%dx%d_w%dx%d_s%d_ks%d_a%d" % (bm, bn, bk, wm, wn, s, p["ks"], al),
                row=dict(tile_m=bm, tile_n=bn, tile_k=bk, warps_m=wm, warps_n=wn, stages=s,
                         vec=al),
                threads=32 * wm * wn, smem=s * (a_r * (a_c + 8) + b_r * (b_c + 8)) * 2,
                body=("gtk::tc_body", [tdt, cbool(ak), cbool(bkm), bm, bn, bk, wm, wn, s, al]))


def wg_swapped(bm, bn):
    """Swapped (gt_wg.cuh, SW): the tokens are wgmma's M (one m64 tile, rows past BN unused),
    the weight rows its N: BN 64, and BN 8, 16 or 32 with BM not a multiple of 64 (weight-row
    counts chosen for the grid, not for m64 blocks)."""
    return bn == 64 or (bn in (8, 16, 32) and bm % 64 != 0)


def check_wg_tile(p):
    """The wg rules on the tile, orientation and layout."""
    (bm, bn, bk), cw, lay = p["t"], p["w"], p["layout"]
    if bn not in WG_TOKENS:
        raise SpaceError("wg: BN is one of %s" % (WG_TOKENS,))
    swapped = wg_swapped(bm, bn)
    # Layout: weights M-major (nn, nt: A not transposed) and tokens N-major (nt, tt: B
    # transposed) are read as 64 x 64 boxes, 64 elements along M or N by 64 along K.
    if lay[0] == "n" and (bm % 64 or (swapped and (bm // cw) % 64)):
        raise SpaceError("wg: M-major weights (nn, nt) come in 64-row boxes: BM (and each"
                         " consumer warpgroup's share of it) a multiple of 64")
    if lay[1] == "t" and (bn != 64 or p["c"] != 1):
        raise SpaceError("wg: N-major tokens (nt, tt) come in 64-token boxes: BN 64 (the"
                         " tokens as wgmma's M) and no multicast")
    if swapped and (bm % 8 or not 8 <= bm <= 256):
        raise SpaceError("wg: swapped tiles (BN 64, or BN 8, 16 or 32 with BM not a multiple of 64)"
                         " take BM weight rows as wgmma's N: a multiple of 8, 8 to 256")
    if not swapped and bm not in (64, 128, 192, 256):
        raise SpaceError("wg: BM is 64, 128, 192 or 256 (m64 blocks of one warpgroup)")
    if bk not in (64, 128, 256):
        raise SpaceError("wg: BK is 64, 128 or 256 (1, 2 or 4 128-byte swizzle boxes)")


def check_wg_pipeline(p):
    """The wg rules on the ring, the prefetch, the cluster and the consumer warpgroups."""
    (bm, bn, _), st, ks, pf, cm, cw = p["t"], p["s"], p["ks"], p["p"], p["c"], p["w"]
    if pf < 1:
        raise SpaceError("wg: p (weight boxes prefetched into L2) is at least 1")
    if st < 2:
        raise SpaceError("wg: at least 2 stages")
    if not 1 <= ks <= 8:
        raise SpaceError("wg: ks is 1 to 8 (the CTAs of a split form one portable cluster)")
    if cm < 1 or cm * ks > 8 or bn % cm or (bn // cm) % 8:
        raise SpaceError("wg: c CTAs along M share the token tile by multicast: c * ks <= 8"
                         " (one portable cluster), BN / c a multiple of 8 token rows")
    if cw not in (1, 2):
        raise SpaceError("wg: w is 1 or 2 consumer warpgroups")
    if cw == 2 and (((bm // 2) % 8 or bm % 2) if wg_swapped(bm, bn) else (bm // 64) % 2):
        raise SpaceError("wg: two consumer warpgroups split the weight rows on 8-row swizzle"
                         " groups (swapped: BM/2 a multiple of 8; else an even number of"
                         " m64 blocks)")
    g = p["g"]
    check_persistent(p, "wg")
    check_weight_multicast(p, "wg")
    if not g and bn * (bm + 4) * 4 > st * (bm + bn) * 128:
        raise SpaceError("wg: the fp32 partial tile must fit in the stage ring")


def check_persistent(p, fam):
    """g: 1 for persistent CTAs (gt_wgp.cuh), each looping over weight tiles (0: one a CTA)."""
    g = p["g"]
    if g not in (0, 1):
        raise SpaceError("%s: g is 0 (one tile per CTA) or 1 (persistent CTAs)" % fam)
    if g and (p["ks"] != 1 or p["c"] != 1 or p["x"] != 1):
        raise SpaceError("%s: persistent CTAs (g1) take no split (ks 1) and no multicast (c 1,"
                         " x 1): each stores its tiles from registers" % fam)


def check_weight_multicast(p, fam):
    """x: CTAs along N of a cluster sharing the weight tile by TMA multicast (1: none)."""
    (bm, _, _), ks, cn = p["t"], p["ks"], p["x"]
    if cn == 1:
        return
    if cn not in (2, 4) or bm % cn or (bm // cn) % 8:
        raise SpaceError("%s: x CTAs along N share the weight tile by multicast: x is 2 or 4,"
                         " BM / x a multiple of 8 weight rows" % fam)
    if ks != 1 or p["layout"][0] != "t":
        raise SpaceError("%s: weight multicast (x) takes no split (ks 1) and K-major weights"
                         " (layout t.)" % fam)
    if p.get("c", 1) * cn > 8:
        raise SpaceError("%s: a c x x cluster is at most 8 CTAs (one portable cluster)" % fam)


def make_wg(p, tdt):
    check_wg_tile(p)
    check_wg_pipeline(p)
    (bm, bn, bk), st, ks, pf, cm, cw, lay = (p["t"], p["s"], p["ks"], p["p"], p["c"], p["w"],
                                            p["layout"])
    swapped = wg_swapped(bm, bn)
    tokens = "t%dx%dx%d_s%d_ks%d_p%d" % (bm, bn, bk, st, ks, pf)
    if cm > 1:
        tokens += "_c%d" % cm  # c1 is left out of the name
    cn = p["x"]
    if cn > 1:
        tokens += "_x%d" % cn  # x1 too
    if cw > 1:
        tokens += "_w%d" % cw  # w1 too
    g = p["g"]
    if g:
        tokens += "_g1"  # g0 too
    b_rows = 64 if swapped else bn  # a swapped B box holds a whole m64 tile of tokens
    lays = [cbool(lay[0] == "n"), cbool(lay[1] == "t")]
    # Persistent CTAs have a body and a header of their own (gt_wgp.cuh), so the one-tile
    # instances' sources and machine code stay as they are.
    body = (("gtk::wgp_body", [tdt, bm, bn, bk, st, pf, cbool(swapped), cw] + lays) if g else
            ("gtk::wg_body", [tdt, bm, bn, bk, st, ks, pf, cbool(swapped), cm, cw] + lays))
    row = dict(tile_m=bm, tile_n=bn, tile_k=bk, stages=st, vec=8, prefetch=pf, cluster_m=cm,
               consumers=cw, persistent=g)
    if cn > 1:
        row["cluster_n"] = cn
    return dict(tokens=tokens, header="gt_wgp.cuh" if g else None,
                row=row, body_tail=[cn] if cn > 1 else [],
                threads=128 * cw + 32,  # consumer warpgroups + one producer warp
                smem=st * (bm + b_rows) * bk * 2 + 1024,  # + slack to align the ring to 1 KB
                static_smem=16 * st,  # the full and empty mbarriers
                body=body,
                wgmma_n=bm // cw if swapped else bn)


def make_wgf8(p, _tdt):
    """wgf8 (gt_wgf8.cuh): the wg pipeline on fp8 operands, K-major only; `types` is the
    [A, B, D] triple, all three in the name (gt_sm90_wgf8_e4m3_e4m3_bf16_tn_...)."""
    types = f8_types(p, "wgf8")
    if p["layout"] != "tn":
        raise SpaceError("wgf8 is TN only: fp8 wgmma reads both operands K-major")
    (bm, bn, bk), st, ks, pf, cm, cw = p["t"], p["s"], p["ks"], p["p"], p["c"], p["w"]
    if bn not in WG_TOKENS:
        raise SpaceError("wgf8: BN is one of %s" % (WG_TOKENS,))
    swapped = wg_swapped(bm, bn)
    if swapped and (bm % 8 or not 8 <= bm <= 256):
        raise SpaceError("wgf8: swapped tiles take BM weight rows as wgmma's N: a multiple of 8,"
                         " 8 to 256")
    if not swapped and bm not in (64, 128, 192, 256):
        raise SpaceError("wgf8: BM is 64, 128, 192 or 256 (m64 blocks of one warpgroup)")
    # A 128-byte swizzle row is 128 one-byte elements: a slice is 1, 2 or 4 boxes along K.
    if bk not in (128, 256, 512):
        raise SpaceError("wgf8: BK is 128, 256 or 512 (1, 2 or 4 128-byte swizzle boxes)")
    if pf < 1 or st < 2:
        raise SpaceError("wgf8: p >= 1 weight boxes prefetched, at least 2 stages")
    if not 1 <= ks <= 8:
        raise SpaceError("wgf8: ks is 1 to 8 (the CTAs of a split form one portable cluster)")
    if cw not in (1, 2) or (cw == 2 and (((bm // 2) % 8 or bm % 2) if swapped
                                         else (bm // 64) % 2)):
        raise SpaceError("wgf8: w is 1 or 2 consumer warpgroups splitting the weight rows on"
                         " 8-row swizzle groups")
    if cm < 1 or bn % cm or (bn // cm) % 8 or (cm > 1 and ks != 1):
        raise SpaceError("wgf8: c CTAs along M share the token tile by multicast: BN / c a"
                         " multiple of 8 token rows, no split (ks 1)")
    b_rows = 64 if swapped else bn
    if bn * (bm + 4) * 4 > st * (bm + b_rows) * bk:
        raise SpaceError("wgf8: the fp32 partial tile must fit in the stage ring")
    check_weight_multicast(p, "wgf8")
    check_persistent(p, "wgf8")
    cn, g = p["x"], p["g"]
    ta, tb, td = types
    name_tokens = "t%dx%dx%d_s%d_ks%d_p%d" % (bm, bn, bk, st, ks, pf)
    if cm > 1:
        name_tokens += "_c%d" % cm  # c1 is left out of the name
    if cn > 1:
        name_tokens += "_x%d" % cn
    if cw > 1:
        name_tokens += "_w%d" % cw
    if g:
        name_tokens += "_g1"  # g0 is left out of the name
    # Swapped, the tokens are the instruction's A operand and the weights its B.
    f8 = (F8TYPES[tb][2], F8TYPES[ta][2], bm // cw) if swapped else (
        F8TYPES[ta][2], F8TYPES[tb][2], bn)
    row = dict(tile_m=bm, tile_n=bn, tile_k=bk, stages=st, vec=16, prefetch=pf, cluster_m=cm,
               consumers=cw, dtype=ta, b_dtype=tb, d_dtype=td)
    if cn > 1:
        row["cluster_n"] = cn
    if g:
        row["persistent"] = 1
    # Template arguments after EPI: the weight multicast's CN, then the token multicast's CM.
    tail = [cn, cm] if cm > 1 else [cn] if cn > 1 else []
    return dict(types="%s_%s_%s" % (ta, tb, td), file_type=ta, tokens=name_tokens,
                row=row, body_tail=tail,
                threads=128 * cw + 32,
                smem=st * (bm + b_rows) * bk + 1024,
                static_smem=16 * st,
                body=(("gtk::wgf8p_body", [F8TYPES[ta][1], F8TYPES[tb][1], F8_OUT[td][1], bm,
                                           bn, bk, st, pf, cbool(swapped), cw]) if g else
                      ("gtk::wgf8_body", [F8TYPES[ta][1], F8TYPES[tb][1], F8_OUT[td][1], bm, bn,
                                          bk, st, ks, pf, cbool(swapped), cw])),
                wgmma_f8=f8)


# keys: the parameters a group sets, in name order; make: the function above; header: the
# kernel template the generated files include; per_file: instances per generated .cu (the files
# compile in parallel, so several small files beat one big one on a multi-core build; each file
# also pays nvcc's fixed start-up cost); c_enum: the gt_kfamily_t value.
Family = collections.namedtuple("Family", "keys make header per_file c_enum")
FAMILIES = {
    "decode": Family(["dtype", "layout", "n", "r", "w", "u", "ks", "v", "p"], make_decode,
                     "gt_decode.cuh", 10, "GT_KFAM_DECODE"),
    "decodetc": Family(["dtype", "layout", "n", "m", "w", "u", "s", "ks", "v", "p"],
                       make_decodetc, "gt_decodetc.cuh", 7, "GT_KFAM_DECODETC"),
    "tc": Family(["dtype", "layout", "t", "w", "s", "ks", "a"], make_tc, "gt_tc.cuh", 5,
                 "GT_KFAM_TC"),
    "wg": Family(["dtype", "layout", "t", "s", "ks", "p", "c", "x", "w", "g"], make_wg,
                 "gt_wg.cuh", 6, "GT_KFAM_WG"),
    "wgf8": Family(["types", "layout", "t", "s", "ks", "p", "c", "x", "w", "g"], make_wgf8,
                   "gt_wgf8.cuh", 6, "GT_KFAM_WGF8"),
    "dtf8": Family(["types", "layout", "n", "m", "w", "u", "s", "ks", "v", "p"], make_dtf8,
                   "gt_dtf8.cuh", 7, "GT_KFAM_DTF8"),
}


# ---- grouped GEMM families (space.json "grouped") -----------------------------------------------
#
# torch._grouped_mm's 2-D x 3-D problem (gt_grouped_args.h), kernels in gt_grp.cuh. They take
# their own argument block and have their own table (grouped_instances.c, gt_grouped.h), so the
# dense provider never sees them. Names: gt_<arch>_<family>_<dtype>_<layout>_t<BM>x<BN>x<BK>_s<S>
# _ks<KS>, BM weight rows (output columns) x BN routed rows; layout enk: weights [E][N][K]
# (sbk == 1), ekn: [E][K][N] (sbn == 1).

GROUPED_LAYOUTS = {"enk": "GT_GROUPED_ENK", "ekn": "GT_GROUPED_EKN"}


# The grouped operand types: name token -> (C enum of the table, bytes per element, kernel tag of
# the operands: None for bf16, whose D and operands share gtk::bf16). e4m3 is torch's
# f8f8bf16_grouped_mm (rowwise scales, bf16 D): grpd, enk only (fp8 wgmma reads K-major only).
GROUPED_DTYPES = {"bf16": ("GT_DT_BF16", 2, None), "e4m3": ("GT_DT_F8E4M3FN", 1, "gtk::e4m3")}


def check_grp_common(p, fam):
    (bm, bn, bk), st, ks = p["t"], p["s"], p["ks"]
    if p["dtype"] not in GROUPED_DTYPES:
        raise SpaceError("%s: dtype is one of %s" % (fam, ", ".join(GROUPED_DTYPES)))
    es = GROUPED_DTYPES[p["dtype"]][1]
    if es == 1 and (fam != "grpd" or p["layout"] != "enk"):
        raise SpaceError("%s: e4m3 is grpd with enk weights only (fp8 wgmma reads both operands"
                         " K-major)" % fam)
    if p["layout"] not in GROUPED_LAYOUTS:
        raise SpaceError("%s: layout is one of %s" % (fam, ", ".join(GROUPED_LAYOUTS)))
    if bm not in (64, 128, 192, 256):
        raise SpaceError("%s: BM is 64, 128, 192 or 256 weight rows (64-row boxes, m64 blocks)"
                         % fam)
    box = 128 // es  # elements of one 128-byte swizzle row
    if bk not in (box, 2 * box, 4 * box):
        raise SpaceError("%s: BK is %d, %d or %d for %s (1, 2 or 4 128-byte swizzle boxes)"
                         % (fam, box, 2 * box, 4 * box, p["dtype"]))
    if st < 2:
        raise SpaceError("%s: at least 2 stages" % fam)
    if not 1 <= ks <= 8:
        raise SpaceError("%s: ks is 1 to 8 (the splits form one portable cluster)" % fam)
    if bn * (bm + 4) * 4 > st * (bm + bn) * bk * es:
        raise SpaceError("%s: the fp32 partial tile must fit in the stage ring" % fam)


def make_grp(p, fam, swapped):
    check_grp_common(p, fam)
    (bm, bn, bk), st, ks = p["t"], p["s"], p["ks"]
    if swapped:
        if bn not in (64, 128):
            raise SpaceError("grpp: BN is 64 or 128 routed rows (one m64 consumer warpgroup"
                             " per 64 rows)")
        if ks != 1:
            raise SpaceError("grpp: no split-K (prefill tiles have work enough)")
    elif bn not in WG_TOKENS:
        raise SpaceError("grpd: BN is one of %s routed rows (wgmma's N)" % (WG_TOKENS,))
    if p["dtype"] == "e4m3":
        # The promoting consumer (gt_grp.cuh's grp_f8_slice) holds acc and one or two partials:
        # MB * R fp32 registers each (MB = BM / 64 m64 blocks, R = BN / 2), two partials up to
        # MB * R = 32, one above; all of it within 128 registers a thread.
        acc = (bm // 64) * (bn // 2)
        if acc * (3 if acc <= 32 else 2) > 128:
            raise SpaceError("grpd e4m3: BM / 64 * BN / 2 = %d accumulators a thread; with the "
                             "promotion's partial that is over 128 registers (BM x BN at most "
                             "128 x 64 or 64 x 128)" % acc)
    nwg = bn // 64 if swapped else 1
    _, es, tag = GROUPED_DTYPES[p["dtype"]]
    targs = ["gtk::bf16", bm, bn, bk, st, ks, cbool(swapped), cbool(p["layout"] == "ekn")]
    return dict(tokens="t%dx%dx%d_s%d_ks%d" % (bm, bn, bk, st, ks),
                row=dict(tile_n=bm, tile_rows=bn, tile_k=bk, stages=st, splitk=ks, chunks=1),
                threads=128 * nwg + 32,
                smem=st * (bm + bn) * bk * es + 1024,
                static_smem=16 * st + 32,  # mbarriers and the slot
                body=("gtk::grp_body", targs + [tag] if tag else targs),
                wgmma_n=None if tag else bm if swapped else bn,
                wgmma_f8=(p["dtype"], p["dtype"], bn) if tag else None)


# grpv: the CUDA-core grouped decode (gt_grpv.cuh): a CTA of w warps computes r weight rows of
# one group against the n routed rows of one slot over the whole K (gt_decode.cuh's dot product),
# u 256-element vectors per warp batch in flight. No TMA, no shared-memory ring: many small CTAs,
# so no tail wave; c chunks of r weight rows a CTA in turn (one slot lookup for all of them).
# Name t<r>x<n>x<256u>_w<w>_c<c> (weight rows x routed rows x K per warp batch, warps, chunks).
def make_grpv(p):
    r, n, w, u, c = p["r"], p["n"], p["w"], p["u"], p["c"]
    if p["dtype"] != "bf16":
        raise SpaceError("grpv: bf16 only (torch's grouped_mm path this family replaces)")
    if p["layout"] != "enk":
        raise SpaceError("grpv: enk weights only (K contiguous: 16-byte loads along K)")
    if r not in (1, 2, 4, 8, 16) or n not in (1, 2, 4, 8):
        raise SpaceError("grpv: r is 1, 2, 4, 8 or 16 weight rows, n 1, 2, 4 or 8 routed rows")
    if w not in (1, 2, 4, 8, 16) or u not in (1, 2, 4, 8):
        raise SpaceError("grpv: w is 1 to 16 warps (a power of 2), u 1, 2, 4 or 8")
    if r * n > 64 or r * u > 32:
        raise SpaceError("grpv: r*n <= 64 partial sums and r*u <= 32 vectors in flight a lane")
    if c not in (1, 2, 4, 8, 16):
        raise SpaceError("grpv: c is 1, 2, 4, 8 or 16 chunks of r weight rows a CTA")
    return dict(tokens="t%dx%dx%d_w%d_c%d" % (r, n, 256 * u, w, c),
                row=dict(tile_n=r, tile_rows=n, tile_k=256 * u, stages=1, splitk=1, chunks=c),
                threads=32 * w,
                smem=w * n * r * 4,
                static_smem=32,  # the slot
                body=("gtk::grpv_body", ["gtk::bf16", n, r, w, u, c]),
                wgmma_n=None)


GFamily = collections.namedtuple("GFamily", "keys make header per_file c_enum")
GROUPED_FAMILIES = {
    "grpd": GFamily(["dtype", "layout", "t", "s", "ks"], lambda p: make_grp(p, "grpd", False),
                    "gt_grp.cuh", 4, "GT_GROUPED_DECODE"),
    "grpp": GFamily(["dtype", "layout", "t", "s", "ks"], lambda p: make_grp(p, "grpp", True),
                    "gt_grp.cuh", 2, "GT_GROUPED_PREFILL"),
    "grpv": GFamily(["dtype", "layout", "r", "n", "w", "u", "c"], make_grpv, "gt_grpv.cuh", 6,
                    "GT_GROUPED_VECTOR"),
}


def expand_grouped(space, archs, used_archs):
    """The grouped instances in declaration order (family, then architecture, then group)."""
    section = space.get("grouped")
    if section is None:
        return []
    out, seen = [], set()
    used = [a["token"] for a in used_archs]
    for fam, spec in section.get("families", {}).items():
        if fam not in GROUPED_FAMILIES:
            raise SpaceError("unknown grouped family %r (families: %s)"
                             % (fam, ", ".join(GROUPED_FAMILIES)))
        gf = GROUPED_FAMILIES[fam]
        for arch in family_archs(fam, spec, archs):
            if arch["token"] not in used:
                raise SpaceError("%s: arch %s has no dense instances (the grouped table indexes"
                                 " the dense table's architectures)" % (fam, arch["token"]))
            for gi, group in enumerate(spec["groups"]):
                merged = dict(spec.get("defaults", {}))
                merged.update(group)
                unknown = set(merged) - set(gf.keys)
                missing = [k for k in gf.keys if k not in merged]
                if unknown or missing:
                    raise SpaceError("%s group %d: unknown keys %s, missing keys %s"
                                     % (fam, gi, sorted(unknown), missing))
                for combo in itertools.product(*[merged[k] for k in gf.keys]):
                    pr = dict(zip(gf.keys, combo))
                    try:
                        spec_i = gf.make(pr)
                    except SpaceError as e:
                        raise SpaceError("%s group %d %s: %s" % (fam, gi, pr, e))
                    name = "gt_%s_%s_%s_%s_%s" % (arch["token"], fam, pr["dtype"], pr["layout"],
                                                  spec_i["tokens"])
                    if name in seen:
                        raise SpaceError("duplicate grouped instance %s" % name)
                    seen.add(name)
                    total = spec_i["smem"] + spec_i["static_smem"]
                    if total > arch["max_smem"]:
                        raise SpaceError("%s: %d bytes of shared memory exceed %s's %d"
                                         % (name, total, arch["target"], arch["max_smem"]))
                    tmpl, targs = spec_i["body"]
                    out.append(dict(name=name, family=fam, arch=arch["token"],
                                    dtype=pr["dtype"], layout=pr["layout"], row=spec_i["row"],
                                    threads=spec_i["threads"], smem=spec_i["smem"],
                                    body="%s<%s>(p);" % (tmpl, ", ".join(str(x) for x in targs)),
                                    wgmma_n=spec_i["wgmma_n"],
                                    wgmma_f8=spec_i.get("wgmma_f8")))
    return out


def grouped_kernel_file(header, inc, kheader, insts):
    lines = ["// " + header, '#include "%s/%s"' % (inc, kheader)]
    for i in insts:
        lines.append("")
        lines.append('extern "C" __global__ void __launch_bounds__(%d)' % i["threads"])
        lines.append("%s(const __grid_constant__ gt_grouped_kargs_t p) {" % i["name"])
        lines.append("  " + i["body"])
        lines.append("}")
    return "\n".join(lines) + "\n"


def grouped_files(header, inc, ginsts, archs, files, sources):
    """Adds the grouped kernel sources, table and handles to files (and sources)."""
    arch_index = {a["token"]: k for k, a in enumerate(archs)}
    groups = collections.OrderedDict()
    for i in ginsts:
        groups.setdefault((i["family"], i["arch"], i["dtype"]), []).append(i)
    multi = len({i["arch"] for i in ginsts}) > 1
    for (fam, arch, dt), group in groups.items():
        per = GROUPED_FAMILIES[fam].per_file
        stem = "%s_%s_%s" % (fam, arch, dt) if multi else "%s_%s" % (fam, dt)
        for j in range(0, len(group), per):
            fn = "%s_%d.cu" % (stem, j // per)
            files[fn] = grouped_kernel_file(header, inc, GROUPED_FAMILIES[fam].header,
                                           group[j:j + per])
            sources[arch].append(fn)
    lines = ["/* " + header + " */", '#include "%s/gt_grouped.h"' % inc, "",
             "const gt_grouped_instance_t gt_grouped_instances[] = {"]
    for i in ginsts:
        r = i["row"]
        lines.append('    {"%s", %s, %d, %s, %s,' % (
            i["name"], GROUPED_FAMILIES[i["family"]].c_enum, arch_index[i["arch"]],
            GROUPED_DTYPES[i["dtype"]][0], GROUPED_LAYOUTS[i["layout"]]))
        lines.append("     %d, %d, %d, %d, %d, %d, %d, %d}," % (
            r["tile_n"], r["tile_rows"], r["tile_k"], r["stages"], r["splitk"], r["chunks"],
            i["threads"], i["smem"]))
    lines.append("};")
    lines.append("const size_t gt_grouped_instance_count = %d;" % len(ginsts))
    files["grouped_instances.c"] = "\n".join(lines) + "\n"
    lines = ["// " + header, '#include "%s/gt_grouped_kargs.h"' % inc,
             '#include "%s/gt_grouped.h"' % inc, "", 'extern "C" {']
    for i in ginsts:
        lines.append("__global__ void %s(const __grid_constant__ gt_grouped_kargs_t p);"
                     % i["name"])
    lines.append("")
    lines.append("// Declared extern first: a namespace-scope const has internal linkage in C++.")
    lines.append("extern const void *const gt_grouped_fns[];")
    lines.append("extern const size_t gt_grouped_fn_count;")
    lines.append("const void *const gt_grouped_fns[] = {")
    for i in ginsts:
        lines.append("    (const void *)%s," % i["name"])
    lines.append("};")
    lines.append("const size_t gt_grouped_fn_count = %d;" % len(ginsts))
    lines.append('}  // extern "C"')
    files["grouped_fn.cu"] = "\n".join(lines) + "\n"


# ---- instances ----------------------------------------------------------------------------------

def check_common(p):
    if "dtype" in p and p["dtype"] not in DTYPES:
        raise SpaceError("dtype %r: own kernels take bf16 or f16" % p["dtype"])
    if p["layout"] not in LAYOUTS:
        raise SpaceError("layout %r" % p["layout"])
    if p["ks"] < 1:
        raise SpaceError("ks must be >= 1")


# The last name token of an epilogue twin (gt_kernel_name.c writes and parses the same).
EPI_TOKEN = "e"


def make_instance(fam, arch, p, epi=False):
    """Validate one parameter set of family fam for architecture arch (a load_archs row) and
    return its table row and kernel source; epi: the epilogue twin (the same kernel body with its
    EPI template flag set, named by the plain name and one more token)."""
    check_common(p)
    dt, lay = p.get("dtype"), p["layout"]
    spec = FAMILIES[fam].make(p, DTYPES[dt][1] if dt else None)
    # A family with several element types (wgf8, dtf8) names them all and sets dtype in its row.
    name = "gt_%s_%s_%s_%s_%s" % (arch["token"], fam, spec.get("types", dt), lay, spec["tokens"])
    if epi:
        name += "_" + EPI_TOKEN
    row = dict(family=fam, arch=arch["token"], dtype=dt, transa=lay[0], transb=lay[1], tile_m=0,
               tile_n=0, tile_k=0, warps_m=0, warps_n=0, warps_k=0, unroll=0, stages=0, vec=0,
               splitk=p["ks"], prefetch=0, cluster_m=0, consumers=0, persistent=0,
               epilogue=epi)
    row.update(spec["row"])
    threads, smem = spec["threads"], spec["smem"]
    # Static shared memory (declared in the kernel) counts against the limit too.
    total_smem = smem + spec.get("static_smem", 0)
    if threads > 1024:
        raise SpaceError("%s: %d threads per CTA" % (name, threads))
    if total_smem > arch["max_smem"]:
        raise SpaceError("%s: %d bytes of shared memory exceed %s's %d" % (
            name, total_smem, arch["target"], arch["max_smem"]))
    # A plain instance's body takes the template's default EPI = false, so its source text is
    # what it was before twins existed; a twin passes true as one more template argument.
    # Template arguments after EPI (wg's and wgf8's weight multicast, decode's p0) make EPI
    # explicit.
    tmpl, targs = spec["body"]
    tail = spec.get("body_tail", [])
    targs = targs + (["true"] if epi else ["false"] if tail else []) + tail
    body = "%s<%s>(a);" % (tmpl, ", ".join(str(x) for x in targs))
    return dict(name=name, row=row, threads=threads, smem=smem, body=body,
                header=spec.get("header") or FAMILIES[fam].header, wgmma_n=spec.get("wgmma_n"),
                wgmma_f8=spec.get("wgmma_f8"), file_type=spec.get("file_type", dt))


def family_epilogues(fam, spec):
    """The variants a family generates: its "epilogue" list ([false] when absent: plain
    instances only; [false, true]: every instance and its epilogue twin)."""
    listed = spec.get("epilogue", [False])
    if (not isinstance(listed, list) or not listed or any(not isinstance(x, bool) for x in listed)
            or len(set(listed)) != len(listed)):
        raise SpaceError("%s: epilogue is a list of distinct booleans ([false, true]: plain"
                         " instances and their epilogue twins)" % fam)
    return listed


def family_archs(fam, spec, archs):
    """The architectures a family builds for, in its declared order."""
    listed = spec.get("archs")
    if not isinstance(listed, list) or not listed:
        raise SpaceError("%s: archs (the architectures the family builds for) is required" % fam)
    for tok in listed:
        if tok not in archs:
            raise SpaceError("%s: arch %r is not in the archs table (%s)" % (
                fam, tok, ", ".join(sorted(archs))))
    if len(set(listed)) != len(listed):
        raise SpaceError("%s: arch listed twice in %s" % (fam, listed))
    return [archs[t] for t in listed]


# Keys a space may leave out of a family's defaults and groups, with the value they then take:
# parameters added after spaces existed (wg's and wgf8's g and x, wgf8's c, decode's p), so an
# older space file still expands.
OPTIONAL_KEYS = {"wg": {"g": [0], "x": [1]}, "wgf8": {"c": [1], "x": [1], "g": [0]},
                 "decode": {"p": [1]}}


def expand_group(fam, arch, gi, spec, group, epi):
    """The instances of one group of a family for one architecture (epi: their twins)."""
    keys = FAMILIES[fam].keys
    merged = dict(OPTIONAL_KEYS.get(fam, {}))
    merged.update(spec.get("defaults", {}))
    merged.update(group)
    unknown = set(merged) - set(keys)
    if unknown:
        raise SpaceError("%s group %d: unknown keys %s" % (fam, gi, sorted(unknown)))
    missing = [k for k in keys if k not in merged]
    if missing:
        raise SpaceError("%s group %d: missing keys %s" % (fam, gi, missing))
    out = []
    for combo in itertools.product(*[merged[k] for k in keys]):
        p = dict(zip(keys, combo))
        try:
            out.append(make_instance(fam, arch, p, epi))
        except SpaceError as e:
            raise SpaceError("%s group %d %s: %s" % (fam, gi, p, e))
    return out


def expand(space):
    """All instances, in table order, and the architectures they use, in table order."""
    archs = load_archs(space)
    out, seen = [], set()
    fam_archs = {}
    for fam, spec in space["families"].items():
        if fam not in FAMILIES:
            raise SpaceError("unknown family %r (families: %s)" % (fam, ", ".join(FAMILIES)))
        fam_archs[fam] = family_archs(fam, spec, archs)
        for epi in family_epilogues(fam, spec):
            for arch in fam_archs[fam]:
                for gi, group in enumerate(spec["groups"]):
                    for inst in expand_group(fam, arch, gi, spec, group, epi):
                        if inst["name"] in seen:
                            raise SpaceError("duplicate instance %s (%s group %d)" % (
                                inst["name"], fam, gi))
                        seen.add(inst["name"])
                        out.append(inst)
    # Table order: the plain instances first, in the order they had before twins existed
    # (family in declaration order, then the family's architectures, then dtype, then declaration
    # order), then the epilogue twins in the same order.
    fam_order = {f: i for i, f in enumerate(space["families"])}
    dt_order = {d: i for i, d in enumerate(list(DTYPES) + list(F8TYPES))}

    def key(ix):
        r = ix[1]["row"]
        arch_pos = [a["token"] for a in fam_archs[r["family"]]].index(r["arch"])
        return r["epilogue"], fam_order[r["family"]], arch_pos, dt_order[r["dtype"]], ix[0]
    out = [x for _, x in sorted(enumerate(out), key=key)]
    # The architectures some instance targets, in the archs table's order: the C table lists
    # only these, so every architecture it names has kernels (an entry no family uses yet is
    # left out, and its names do not parse).
    used = {i["row"]["arch"] for i in out}
    return out, [a for t, a in archs.items() if t in used], fam_archs


# ---- files ---------------------------------------------------------------------------------------

def kernel_file(header, inc, insts):
    hdrs = sorted(set(i["header"] for i in insts))
    lines = ["// " + header]
    lines += ['#include "%s/%s"' % (inc, h) for h in hdrs]
    for i in insts:
        lines.append("")
        lines.append('extern "C" __global__ void __launch_bounds__(%d)' % i["threads"])
        lines.append("%s(const __grid_constant__ gt_kargs_t a) {" % i["name"])
        lines.append("  " + i["body"])
        lines.append("}")
    return "\n".join(lines) + "\n"


def reduce_symbol(arch, dt):
    """The split-K reduce kernel's symbol (gt_kernel_reduce_symbol in gt_kernel_name.c)."""
    return "gt_%s_splitk_reduce_%s" % (arch["token"], dt)


def reduce_file(header, inc, arch):
    lines = ["// " + header,
             "// The split-K reduce kernels for %s (the body is gt_splitk_reduce.cuh)."
             % arch["target"],
             '#include "%s/gt_splitk_reduce.cuh"' % inc]
    for dt in DTYPES:
        lines.append("")
        lines.append('extern "C" __global__ void __launch_bounds__(GT_KREDUCE_THREADS)')
        lines.append("%s(const __grid_constant__ gt_kargs_t a) {" % reduce_symbol(arch, dt))
        lines.append("  gtk::splitk_reduce_body<%s>(a);" % DTYPES[dt][1])
        lines.append("}")
    return "\n".join(lines) + "\n"


C_TRANS = {"t": "GT_TRANS_T", "n": "GT_TRANS_N"}


def arch_rows(archs):
    lines = ["/* The architectures the instances below are built for (the space file's archs). */",
             "const gt_karch_t gt_karchs[] = {"]
    for a in archs:
        lines.append('    {"%s", "%s", %d, %d, %s, %d},' % (
            a["token"], a["target"], a["cc"][0], a["cc"][1], a["compat"], a["max_smem"]))
    lines.append("};")
    lines.append("const size_t gt_karch_count = %d;" % len(archs))
    return lines


def instance_rows(insts, arch_index):
    lines = ["const gt_kinstance_t gt_kinstances[] = {"]
    for i in insts:
        r = i["row"]
        lines.append('    {"%s",' % i["name"])
        lines.append("     {.family = %s, .arch = %d, .dtype = %s, .transa = %s, .transb = %s," % (
            FAMILIES[r["family"]].c_enum, arch_index[r["arch"]],
            (DTYPES.get(r["dtype"]) or F8TYPES[r["dtype"]])[0],
            C_TRANS[r["transa"]], C_TRANS[r["transb"]]))
        lines.append("      .tile_m = %d, .tile_n = %d, .tile_k = %d, .warps_m = %d, .warps_n = %d,"
                     " .warps_k = %d," % (r["tile_m"], r["tile_n"], r["tile_k"], r["warps_m"],
                                          r["warps_n"], r["warps_k"]))
        # .epilogue is written for twins only, so a plain row reads as it did before twins;
        # .b_dtype / .d_dtype for the families with several element types (wgf8, dtf8) only.
        types = ""
        if "b_dtype" in r:
            types = ", .b_dtype = %s, .d_dtype = %s" % (F8TYPES[r["b_dtype"]][0],
                                                        F8_OUT[r["d_dtype"]][0])
        lines.append("      .unroll = %d, .stages = %d, .vec = %d, .splitk = %d, .prefetch = %d,"
                     " .cluster_m = %d, .consumers = %d%s%s}," % (
                         r["unroll"], r["stages"], r["vec"], r["splitk"], r["prefetch"],
                         r["cluster_m"], r["consumers"], types,
                         (", .persistent = 1" if r["persistent"] else "") +
                         (", .cluster_n = %d" % r["cluster_n"] if r.get("cluster_n") else "") +
                         (", .epilogue = true" if r["epilogue"] else "")))
        lines.append("     %d, %d}," % (i["threads"], i["smem"]))
    lines.append("};")
    lines.append("const size_t gt_kinstance_count = %d;" % len(insts))
    return lines


def table_file(header, inc, insts, archs):
    arch_index = {a["token"]: k for k, a in enumerate(archs)}
    lines = ["/* " + header + " */",
             '#include "%s/gt_kernel_arch.h"' % inc,
             '#include "%s/gt_kernel_name.h"' % inc,
             ""]
    lines += arch_rows(archs)
    lines.append("")
    lines += instance_rows(insts, arch_index)
    return "\n".join(lines) + "\n"


def fn_file(header, inc, insts, archs):
    reduce_syms = [reduce_symbol(a, dt) for a in archs for dt in DTYPES]
    lines = ["// " + header,
             '#include "%s/gt_kernel_args.h"' % inc,
             '#include "%s/gt_kernel_fns.h"' % inc,
             "",
             'extern "C" {']
    for sym in [i["name"] for i in insts] + reduce_syms:
        lines.append("__global__ void %s(const __grid_constant__ gt_kargs_t a);" % sym)
    lines.append("")
    lines.append("const gt_kfn_t gt_kinstance_fns[] = {")
    for i in insts:
        lines.append('    {"%s", (const void *)%s},' % (i["name"], i["name"]))
    lines.append("};")
    lines.append("const size_t gt_kinstance_fn_count = %d;" % len(insts))
    lines.append("")
    lines.append("const gt_kfn_t gt_kreduce_fns[] = {")
    for sym in reduce_syms:
        lines.append('    {"%s", (const void *)%s},' % (sym, sym))
    lines.append("};")
    lines.append("const size_t gt_kreduce_fn_count = %d;" % len(reduce_syms))
    lines.append('}  // extern "C"')
    return "\n".join(lines) + "\n"


def wgmma_macro(n):
    """One inline-asm statement for wgmma.mma_async m64n<n>k16 (f32 += TY * TY, both operands
    shared-memory descriptors, TA / TB the transpose immediates: 1 = M- or N-major); an operand
    list has a fixed length, so there is one per N."""
    r = n // 2
    regs = ["%%%d" % i for i in range(r)]
    lines = ['asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"' % (r + 2),
             '             "wgmma.mma_async.sync.aligned.m64n%dk16.f32." TY "." TY " {"' % n]
    for j in range(0, r, 14):
        lines.append('             "%s%s"' % (", ".join(regs[j:j + 14]), ", " if j + 14 < r else ""))
    lines.append('             "}, %%%d, %%%d, p, 1, 1, %%%d, %%%d;\\n}\\n"'
                 % (r, r + 1, r + 3, r + 4))
    ops = ['"+f"(d[%d])' % i for i in range(r)]
    for j in range(0, r, 4):
        lines.append(("             : " if j == 0 else "               ") + ", ".join(ops[j:j + 4])
                     + ("," if j + 4 < r else ""))
    lines.append('             : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))')
    out = ["#define GT_WGMMA_N%d(TY)" % n] + lines
    w = max(len(x) for x in out) + 1
    return "\n".join(x.ljust(w) + "\\" if k < len(out) - 1 else x for k, x in enumerate(out))


def wgmma_file(header, ns):
    lines = ["// " + header,
             "// wgmma.mma_async m64nNk16 wrappers for N in %s (see gt_wgmma.cuh)." % (list(ns),),
             "#pragma once", ""]
    for n in ns:
        lines.append(wgmma_macro(n))
        lines.append("")
    for n in ns:
        for dt in ("bf16", "f16"):
            lines.append('GT_WGMMA_SS(%s, "%s", %d)' % (dt, dt, n))
    return "\n".join(lines) + "\n"


def wgmma_f8_macro(n):
    """One inline-asm statement for the fp8 wgmma.mma_async m64n<n>k32 (f32 = sd * f32 + PA * PB,
    sd the wrapper's scale-d (0: the accumulator starts from zero), both operands shared-memory
    descriptors, K-major: fp8 has no transpose immediates)."""
    r = n // 2
    regs = ["%%%d" % i for i in range(r)]
    lines = ['asm volatile("{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"' % (r + 2),
             '             "wgmma.mma_async.sync.aligned.m64n%dk32.f32." PA "." PB " {"' % n]
    for j in range(0, r, 14):
        lines.append('             "%s%s"' % (", ".join(regs[j:j + 14]), ", " if j + 14 < r else ""))
    lines.append('             "}, %%%d, %%%d, p, 1, 1;\\n}\\n"' % (r, r + 1))
    ops = ['"+f"(d[%d])' % i for i in range(r)]
    for j in range(0, r, 4):
        lines.append(("             : " if j == 0 else "               ") + ", ".join(ops[j:j + 4])
                     + ("," if j + 4 < r else ""))
    lines.append('             : "l"(da), "l"(db), "r"(sd))')
    out = ["#define GT_WGMMA_F8_N%d(PA, PB)" % n] + lines
    w = max(len(x) for x in out) + 1
    return "\n".join(x.ljust(w) + "\\" if k < len(out) - 1 else x for k, x in enumerate(out))


def wgmma_f8_file(header, uses):
    """uses: the (A PTX type, B PTX type, N) triples of the wgf8 instances."""
    ns = sorted({n for _, _, n in uses})
    lines = ["// " + header,
             "// fp8 wgmma.mma_async m64nNk32 wrappers for N in %s (see gt_wgf8.cuh)." % (ns,),
             "#pragma once", ""]
    for n in ns:
        lines.append(wgmma_f8_macro(n))
        lines.append("")
    tag = {v[2]: v[1][len("gtk::"):] for v in F8TYPES.values()}
    for pa, pb, n in sorted(uses):
        lines.append('GT_WGMMA_F8(%s, %s, "%s", "%s", %d)' % (tag[pa], tag[pb], pa, pb, n))
    return "\n".join(lines) + "\n"


def cmake_file(header, archs, sources):
    """The manifest: for each architecture its CMake CUDA architecture and its sources."""
    lines = ["# " + header,
             "# The CUDA architecture each generated kernel source is compiled for:",
             "# src/kernels/CMakeLists.txt builds one object library per entry of GT_KERNEL_ARCHS.",
             "set(GT_KERNEL_ARCHS %s)" % " ".join(a["token"] for a in archs),
             "set(GT_KERNEL_CUDA_ARCHS %s)" % " ".join(a["cmake"] for a in archs)]
    for a in archs:
        lines.append("set(GT_KERNEL_CUDA_ARCH_%s %s)" % (a["token"], a["cmake"]))
        lines.append("set(GT_KERNEL_SOURCES_%s" % a["token"])
        lines += ["    %s" % f for f in sources[a["token"]]]
        lines.append("    )")
    return "\n".join(lines) + "\n"


def kernel_files(header, inc, insts, fam_archs):
    """The kernel sources: {file name: text} and, per architecture, the files it compiles."""
    files, sources = {}, collections.defaultdict(list)
    by_group = collections.OrderedDict()
    for i in insts:
        r = i["row"]
        by_group.setdefault((r["family"], r["arch"], i["file_type"], r["epilogue"]), []).append(i)
    for (fam, arch, dt, epi), group in by_group.items():
        per = FAMILIES[fam].per_file
        # The arch token is in a file's name only when its family builds for several: a
        # single-architecture family's files keep their names when another family gains one.
        # Twins are in files of their own (<stem>_e_<i>.cu), so the plain instances' files are
        # the same text with or without them.
        stem = "%s_%s" % (fam, dt) if len(fam_archs[fam]) == 1 else "%s_%s_%s" % (fam, arch, dt)
        if epi:
            stem += "_" + EPI_TOKEN
        for j in range(0, len(group), per):
            fn = "%s_%d.cu" % (stem, j // per)
            files[fn] = kernel_file(header, inc, group[j:j + per])
            sources[arch].append(fn)
    return files, sources


def render(space, space_rel, outdir):
    """The dense instances, the grouped instances and every generated file for space as
    {file name: text}."""
    insts, archs, fam_archs = expand(space)
    header = "generated by %s from %s; do not edit" % (GENERATOR_REL, space_rel)
    inc = os.path.relpath(HERE, outdir)  # generated files include src/kernels/ headers
    files, sources = kernel_files(header, inc, insts, fam_archs)
    for a in archs:
        fn = "splitk_reduce_%s.cu" % a["token"]
        files[fn] = reduce_file(header, inc, a)
        sources[a["token"]].append(fn)
    ginsts = expand_grouped(space, load_archs(space), archs)
    if ginsts:
        grouped_files(header, inc, ginsts, archs, files, sources)
    files["instances.c"] = table_file(header, inc, insts, archs)
    files["instances_fn.cu"] = fn_file(header, inc, insts, archs)
    wgmma_ns = sorted({i["wgmma_n"] for i in insts + ginsts if i["wgmma_n"]})
    files["wgmma_ss.cuh"] = wgmma_file(header, wgmma_ns)
    f8_uses = {i["wgmma_f8"] for i in insts + ginsts if i["wgmma_f8"]}
    if f8_uses:
        files["wgmma_f8.cuh"] = wgmma_f8_file(header, f8_uses)
    files["kernels.cmake"] = cmake_file(header, archs, sources)
    return insts, ginsts, files


# ---- command line --------------------------------------------------------------------------------

def check(outdir, files, insts):
    existing = set()
    if os.path.isdir(outdir):
        existing = {f for f in os.listdir(outdir) if f.endswith(GENERATED_EXT)}
    bad = []
    for fn, text in sorted(files.items()):
        try:
            with open(os.path.join(outdir, fn)) as f:
                if f.read() != text:
                    bad.append("%s differs" % fn)
        except OSError:
            bad.append("%s missing" % fn)
    bad += ["%s is stale (not generated from the space file)" % fn
            for fn in sorted(existing - set(files))]
    if bad:
        for b in bad:
            print("gen_instances --check: " + b, file=sys.stderr)
        print("gen_instances --check: run python3 %s" % GENERATOR_REL, file=sys.stderr)
        return 1
    print("gen_instances --check: %d instances, %d files up to date" % (len(insts), len(files)))
    return 0


def write(outdir, files, insts):
    os.makedirs(outdir, exist_ok=True)
    existing = {f for f in os.listdir(outdir) if f.endswith(GENERATED_EXT)}
    for fn in sorted(existing - set(files)):
        os.remove(os.path.join(outdir, fn))
    for fn, text in sorted(files.items()):
        path = os.path.join(outdir, fn)
        try:
            with open(path) as f:
                if f.read() == text:
                    continue
        except OSError:
            pass
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    print("gen_instances: %d instances in %d files" % (len(insts), len(files)))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the output directory is not what the space file generates")
    ap.add_argument("--list", action="store_true", help="print instance names")
    ap.add_argument("--list-grouped", action="store_true",
                    help="print the grouped GEMM instance names")
    ap.add_argument("--space", default=SPACE, help="the space file (default: %s)" % SPACE_REL)
    ap.add_argument("--out", default=OUTDIR, help="the output directory (default: generated/)")
    args = ap.parse_args()
    space_path, outdir = os.path.abspath(args.space), os.path.abspath(args.out)
    # Generated files name their space file; the default one by its fixed repository path, so a
    # copy of src/kernels/ elsewhere (the check's own test) generates the same text.
    space_rel = SPACE_REL if space_path == SPACE else os.path.relpath(space_path, ROOT)
    try:
        with open(space_path) as f:
            space = json.load(f)
        insts, ginsts, files = render(space, space_rel, outdir)
    except (OSError, ValueError, SpaceError) as e:
        print("gen_instances: %s" % e, file=sys.stderr)
        return 2
    if args.list_grouped:
        for i in ginsts:
            print(i["name"])
        return 0
    if args.list:
        for i in insts:
            print(i["name"])
        return 0
    if args.check:
        return check(outdir, files, insts)
    return write(outdir, files, insts)


if __name__ == "__main__":
    sys.exit(main())
