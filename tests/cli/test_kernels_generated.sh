#!/usr/bin/env bash
# The committed own-kernel sources in src/kernels/generated/ are exactly what
# src/kernels/gen_instances.py generates from src/kernels/space.json (a build needs no python, so
# a stale generated file would otherwise go unnoticed); illegal parameter sets are refused; and
# a second, test-only architecture (tests/data/space_dummy_arch.json) generates, names its
# kernels, parses and is refused on a device without it. Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 not found"
  exit 77
fi
expect_exit 0 "generated kernels are up to date" python3 "$SRC/src/kernels/gen_instances.py" --check
expect_grep "check names the instance count" 'instances, [0-9]+ files up to date'
# A stale copy must be caught: check a copy of the tree with one generated file edited.
cp -r "$SRC/src/kernels" "$TMP/kernels"
printf '// edited\n' >> "$TMP/kernels/generated/instances.c"
expect_exit 1 "an edited generated file is reported" python3 "$TMP/kernels/gen_instances.py" --check
expect_grep "the edited file is named" 'instances.c differs'
rm "$TMP/kernels/generated/instances_fn.cu"
expect_exit 1 "a missing generated file is reported" python3 "$TMP/kernels/gen_instances.py" --check
expect_grep "the missing file is named" 'instances_fn.cu missing'
# An illegal parameter set fails generation with the family, group and rule named.
illegal() { # illegal NAME FAMILY GROUP_JSON PATTERN
  cp -r "$SRC/src/kernels" "$TMP/bad_$1"
  python3 - "$TMP/bad_$1/space.json" "$2" "$3" <<'PY'
import json, sys
path, fam, group = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
space = json.load(open(path))
fams = space["families"] if fam in space["families"] else space["grouped"]["families"]
fams[fam]["groups"].append(group)
json.dump(space, open(path, "w"))
PY
  expect_exit 2 "$1 is refused" python3 "$TMP/bad_$1/gen_instances.py" --list
  expect_grep "$1: the rule is named" "$4"
}
illegal decodetc_prefetch_with_s3 decodetc \
  '{"n": [8], "m": [1], "w": [[1, 8]], "u": [2], "s": [3], "p": [2]}' 'decodetc group [0-9]+ .*0 with s3'
illegal wg_multicast_cluster_too_big wg \
  '{"t": [[64, 64, 64]], "s": [4], "ks": [4], "p": [4], "c": [4]}' 'wg group [0-9]+ .*c \* ks <= 8'
illegal wg_multicast_partial_swizzle_group wg \
  '{"t": [[64, 16, 64]], "s": [4], "ks": [1], "p": [4], "c": [4]}' 'BN / c a multiple of 8'
illegal wg_two_multicasts_over_eight_ctas wg \
  '{"t": [[64, 32, 128]], "s": [4], "ks": [1], "p": [8], "c": [4], "x": [4]}' 'at most 8 CTAs'
illegal wgf8_token_multicast_with_split wgf8 \
  '{"t": [[64, 32, 256]], "s": [4], "ks": [2], "p": [8], "c": [2]}' 'no split \(ks 1\)'
illegal decode_p0_with_narrow_loads decode \
  '{"n": [1], "r": [4], "w": [4], "u": [4], "v": [4], "p": [0]}' 'decode group [0-9]+ .*v8 only'
illegal wg_two_warpgroups_odd_split wg \
  '{"t": [[40, 64, 64]], "s": [4], "ks": [1], "p": [4], "w": [2]}' 'two consumer warpgroups'
illegal grpd_e4m3_tile_over_promotion_registers grpd \
  '{"t": [[256, 64, 128]], "s": [4], "ks": [1], "dtype": ["e4m3"]}' 'over 128 registers'

# ---- epilogue twins ---------------------------------------------------------------------------
# Every instance of space.json has its epilogue twin (the plain name + "_e"), listed after all
# plain instances, generated into files of their own: the plain files hold no twin and no
# kernel body with its epilogue flag set.
GEN="$SRC/src/kernels/gen_instances.py"
expect_exit 0 "the instances are listed" python3 "$GEN" --list
LIST=$OUT_TXT
expect_exit 0 "every plain instance has one twin, listed after every plain instance" \
  python3 - "$LIST" <<'PY'
import sys
names = sys.argv[1].split()
plain = [n for n in names if not n.endswith("_e")]
twins = [n for n in names if n.endswith("_e")]
assert plain and twins == [n + "_e" for n in plain], "twins are not the plain list + _e"
assert names == plain + twins, "a plain instance after a twin"
print("%d plain instances, %d twins" % (len(plain), len(twins)))
PY
expect_grep "the counts are printed" '^[0-9]+ plain instances, [0-9]+ twins$'
OUT_TXT=$(cat "$SRC"/src/kernels/generated/*_e_*.cu)
expect_grep "a twin's body sets the epilogue flag" \
  '^  gtk::decode_body<gtk::bf16, 1, 4, 4, 2, 8, true>\(a\);$'
expect_grep "a twin's symbol is its name" '^gt_sm90_wg_bf16_tn_t64x8x256_s2_ks1_p8_e\('
expect_exit 0 "each twin is its plain instance's body plus the flag, in a twins' file" \
  python3 - "$SRC/src/kernels/generated" <<'PY'
import glob, os, re, sys
body = {}  # kernel name -> (file, body)
for f in glob.glob(os.path.join(sys.argv[1], "*.cu")):
    text = open(f).read()
    for name, b in re.findall(r"^(gt_\w+)\(const __grid_constant__ gt_kargs_t a\) \{\n  (.*)$",
                              text, re.M):
        body[name] = (os.path.basename(f), b)
twins = [n for n in body if n.endswith("_e")]
assert twins
for t in twins:
    tf, tb = body[t]
    pf, pb = body[t[:-2]]
    assert re.search(r"_e_[0-9]+\.cu$", tf), "%s is in %s" % (t, tf)
    assert not re.search(r"_e_[0-9]+\.cu$", pf), "%s is in %s" % (t[:-2], pf)
    # The flag is the template's last argument; in a weight-multicast instance (wg's and
    # wgf8's x token) the cluster width follows it, in a wgf8 token-multicast one (c) the
    # weight and token widths, in a decode p0 one the prefetch flag (false), so the plain body
    # has an explicit false.
    tailed = (re.search(r"_x\d+(_|$)", t[:-2]) or ("_wgf8_" in t and re.search(r"_c\d+(_|$)", t))
              or ("_decode_" in t and t[:-2].endswith("_p0")))
    tail = tailed and re.fullmatch(r"(.*), false((?:, (?:\d+|false))+)>\(a\);", pb)
    want = ("%s, true%s>(a);" % tail.groups()) if tail else pb.replace(">(a);", ", true>(a);")
    assert tb == want, "%s: %s vs %s" % (t, tb, pb)
print("%d twins checked against their plain instances" % len(twins))
PY
expect_grep "every twin was checked" '^[0-9]+ twins checked'
# A space without the key generates plain instances only; a malformed value is refused.
epi_space() { # epi_space NAME VALUE_JSON
  python3 - "$SRC/src/kernels/space.json" "$TMP/epi_$1.json" "$2" <<'PY'
import json, sys
space = json.load(open(sys.argv[1]))
for fam in space["families"].values():
    if sys.argv[3] == "absent":
        fam.pop("epilogue", None)
    else:
        fam["epilogue"] = json.loads(sys.argv[3])
json.dump(space, open(sys.argv[2], "w"))
PY
}
epi_space absent absent
expect_exit 0 "a space without epilogue lists" python3 "$GEN" --space "$TMP/epi_absent.json" --list
expect_nogrep "it has no twins" '_e$'
PLAIN_ONLY=$(grep -c . <<<"$OUT_TXT")
TWINS_TOO=$(grep -c . <<<"$LIST")
if [ $((2 * PLAIN_ONLY)) = "$TWINS_TOO" ]; then ok "twins double the instances ($PLAIN_ONLY -> $TWINS_TOO)"
else bad "twins double the instances ($PLAIN_ONLY -> $TWINS_TOO)"; fi
epi_space not_bool '[false, 1]'
expect_exit 2 "a non-boolean epilogue value is refused" \
  python3 "$GEN" --space "$TMP/epi_not_bool.json" --list
expect_grep "the rule is named" 'epilogue is a list of distinct booleans'

# ---- the architecture is data: a second, test-only architecture ---------------------------------
# tests/data/space_dummy_arch.json adds sm99 (target sm_99a, compute capability 9.9, 99 KB of
# shared memory) beside sm90: decode builds for both, wg for sm90 only. Nothing outside the
# space file names it.
DUMMY="$SRC/tests/data/space_dummy_arch.json"
PROBE="$(dirname "$GT")/gt_karch_probe"
expect_exit 0 "the dummy architecture's committed table is up to date" \
  python3 "$SRC/src/kernels/gen_instances.py" --space "$DUMMY" --out "$SRC/tests/data/dummy_arch" \
  --check
expect_exit 0 "the dummy space generates" \
  python3 "$SRC/src/kernels/gen_instances.py" --space "$DUMMY" --out "$TMP/dummy"
expect_exit 0 "the dummy space lists its instances" \
  python3 "$SRC/src/kernels/gen_instances.py" --space "$DUMMY" --list
expect_grep "a family names each architecture it builds for" \
  '^gt_sm99_decode_bf16_tn_n1_r4_w4_u2_ks2_v8$'
expect_grep "the sm90 names are unchanged beside it" '^gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks2_v8$'
expect_nogrep "a family builds only for the architectures it lists" '^gt_sm99_wg_'
OUT_TXT=$(cat "$TMP/dummy/kernels.cmake")
expect_grep "the manifest compiles the sm99 files for 99a" 'set\(GT_KERNEL_CUDA_ARCH_sm99 99a\)'
OUT_TXT=$(tr '\n' ' ' <"$TMP/dummy/kernels.cmake") # one line, for the list below
expect_grep "the sm99 files are listed under sm99" \
  'GT_KERNEL_SOURCES_sm99[[:space:]]+decode_sm99_bf16_0.cu[[:space:]]+splitk_reduce_sm99.cu'
OUT_TXT=$(cat "$TMP/dummy/decode_sm99_bf16_0.cu" "$TMP/dummy/splitk_reduce_sm99.cu")
expect_grep "the kernel symbol carries the arch token" \
  '^gt_sm99_decode_bf16_tn_n1_r4_w4_u2_ks1_v8\('
expect_grep "the split-K reduce kernels are generated per architecture" \
  '^gt_sm99_splitk_reduce_bf16\('
# The naming and device code, compiled against the dummy table (gt_karch_probe).
expect_exit 0 "every dummy-table instance round-trips through the name code" "$PROBE" list
expect_grep "the table carries sm99's target and limit" '^arch sm99 sm_99a cc 9.9 max_smem 101376$'
expect_grep "an sm99 instance targets sm_99a" '^gt_sm99_decode_bf16_tn_n1_r4_w4_u2_ks1_v8 sm_99a$'
NAME99=gt_sm99_decode_bf16_tn_n1_r4_w4_u2_ks2_v8
expect_exit 0 "an sm99 name parses" "$PROBE" parse "$NAME99"
expect_grep "its architecture is sm99" "^$NAME99: arch sm99 \\(sm_99a\\)$"
expect_grep "its reduce kernel is sm99's" "^$NAME99: reduce gt_sm99_splitk_reduce_bf16$"
expect_exit 1 "an sm99 instance is refused on a 9.0 device" "$PROBE" parse "$NAME99" 9.0
expect_grep "the refusal names the architecture" \
  'refused on sm_90: built for sm_99a .*device is sm_90'
expect_exit 0 "an sm99 instance runs on a 9.9 device" "$PROBE" parse "$NAME99" 9.9
expect_exit 1 "an sm90 instance is refused on the 9.9 device" \
  "$PROBE" parse gt_sm90_decode_bf16_tn_n1_r4_w4_u2_ks2_v8 9.9
expect_grep "that refusal names sm_90a" 'refused on sm_99: built for sm_90a'
expect_exit 2 "a token of no architecture in the table does not parse" \
  "$PROBE" parse gt_sm98_decode_bf16_tn_n1_r4_w4_u2_ks2_v8
expect_grep "the message lists the table's tokens" 'arch one of sm90, sm99'
# Each architecture's shared-memory limit applies to its own instances: a decodetc tile of
# 135168 bytes fits sm90 (227 KB) and is refused for sm99 (99 KB).
arch_limit() { # arch_limit NAME ARCHS_JSON
  python3 - "$DUMMY" "$TMP/limit_$1.json" "$2" <<'PY'
import json, sys
space = json.load(open(sys.argv[1]))
space["families"]["decodetc"] = {
    "archs": json.loads(sys.argv[3]),
    "defaults": {"dtype": ["bf16"], "layout": ["tn"], "ks": [1], "v": [8], "p": [0]},
    "groups": [{"n": [64], "m": [4], "w": [[2, 4]], "u": [1], "s": [1]}]}
json.dump(space, open(sys.argv[2], "w"))
PY
}
arch_limit sm90 '["sm90"]'
expect_exit 0 "a tile within sm90's shared memory generates" \
  python3 "$SRC/src/kernels/gen_instances.py" --space "$TMP/limit_sm90.json" --list
arch_limit sm99 '["sm90", "sm99"]'
expect_exit 2 "the same tile for sm99 is refused" \
  python3 "$SRC/src/kernels/gen_instances.py" --space "$TMP/limit_sm99.json" --list
expect_grep "sm99's limit is named" \
  "gt_sm99_decodetc_.*135168 bytes of shared memory exceed sm_99a's 101376"
# A family listing an architecture the table lacks is refused.
python3 - "$DUMMY" "$TMP/no_arch.json" <<'PY'
import json, sys
space = json.load(open(sys.argv[1]))
space["families"]["wg"]["archs"] = ["sm100"]
json.dump(space, open(sys.argv[2], "w"))
PY
expect_exit 2 "an architecture missing from the table is refused" \
  python3 "$SRC/src/kernels/gen_instances.py" --space "$TMP/no_arch.json" --list
expect_grep "the missing architecture is named" "wg: arch 'sm100' is not in the archs table"
finish
