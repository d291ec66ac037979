#!/usr/bin/env bash
# libgemmtune_torchmm.so, the torch bridge (built only where torch's headers were found; skipped,
# 77, otherwise): it exports exactly torch's two interposed functions, refers to nothing in torch's
# libraries (they are loaded RTLD_LOCAL: such a reference would not resolve), loads into a process
# without torch and leaves it alone, and without torch or with another torch version than it was
# built against it never reads a tensor: it says why once and forwards every call to the original.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

bridge="$(dirname "$GT")/libgemmtune_torchmm.so"
[ -f "$bridge" ] || { echo "skip: $bridge not built (no torch headers)"; exit 77; }
command -v cc >/dev/null && command -v nm >/dev/null || { echo "skip: no cc/nm"; exit 77; }
sym='_ZN2at4cuda6detail19bf16bf16_grouped_mmENS_6TensorES2_St8optionalIS2_ES4_RS2_'
sym8='_ZN2at4cuda6detail19f8f8bf16_grouped_mmENS_6TensorES2_S2_S2_St8optionalIS2_ES4_bRS2_'

expect_exit 0 "the bridge's dynamic symbols" nm -D --defined-only "$bridge"
expect_grep "it defines torch's bf16 grouped function" " T $sym\$"
expect_grep "and the fp8 one" " T $sym8\$"
OUT_TXT=$(nm -D --defined-only "$bridge" | grep -Ev ' (_init|_fini)$' | grep -v " $sym\$" | grep -v " $sym8\$" || true)
if [ -z "$OUT_TXT" ]; then ok "and exports nothing else"; else bad "and exports nothing else" "$OUT_TXT"; fi
OUT_TXT=$(nm -u "$bridge" | grep -E '_ZN(K)?[0-9]*(3c10|2at|6caffe2)' || true)
if [ -z "$OUT_TXT" ]; then ok "no reference into torch's libraries (loads under RTLD_NOW)"; else bad "no reference into torch's libraries" "$OUT_TXT"; fi

expect_exit 0 "preloaded into a process without torch" env LD_PRELOAD="$bridge" true
expect_nogrep "it says nothing there" '.'

# A stand-in libtorch_cuda.so (soname as torch's) whose "original" prints, with a version.py that
# is not the one the bridge was built against.
mkdir -p "$TMP/torch/lib"
printf '%s\n' '#include <stdio.h>' \
  "void orig(void *a, void *b, void *c, void *d, void *e) __asm__(\"$sym\");" \
  'void orig(void *a, void *b, void *c, void *d, void *e) { printf("original called\n"); }' \
  >"$TMP/fake.c"
cc -shared -fPIC -o "$TMP/torch/lib/libtorch_cuda.so" -Wl,-soname,libtorch_cuda.so "$TMP/fake.c"
# As torch's own version.py: __all__ names '__version__' before the assignment.
printf "%s\n" "__all__ = ['__version__', 'debug', 'cuda']" "__version__ = '0.0.0+standin'" \
  >"$TMP/torch/version.py"
cc -o "$TMP/client" -rdynamic "$SRC/tests/cli/torch_bridge_client.c" -ldl

expect_exit 0 "another torch version: the calls complete" "$TMP/client" "$TMP/torch/lib/libtorch_cuda.so" "$bridge"
expect_grep "each call goes to the original" 'original called'
OUT_N=$(grep -c 'original called' <<<"$OUT_TXT" || true)
if [ "$OUT_N" = 2 ]; then ok "both calls forwarded"; else bad "both calls forwarded ($OUT_N)" "$OUT_TXT"; fi
expect_grep "it says which torch it was built for and which runs" 'built against torch .*, running torch 0\.0\.0\+standin'
OUT_N=$(grep -c 'running torch' <<<"$OUT_TXT" || true)
if [ "$OUT_N" = 1 ]; then ok "once"; else bad "once ($OUT_N)" "$OUT_TXT"; fi
expect_nogrep "the shim is never asked (no tensor read)" 'begin called'

expect_exit 0 "no torch loaded: the calls return" env GT_NO_TORCH=1 "$TMP/client" - "$bridge"
expect_grep "saying the original is not there" 'bf16bf16_grouped_mm not found'
expect_nogrep "and nothing else runs" 'begin called|original called'
finish
