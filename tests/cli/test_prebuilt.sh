#!/usr/bin/env bash
# bench/prebuilt.sh unpacks binaries only into the tree they were built from: an archive stamped
# with this tree's sources unpacks (executable), one stamped with other sources is refused (3)
# and leaves no binary behind, a member that climbs out of the folder is refused; bad arguments
# exit 2 naming what is wrong. Needs no GPU and no CUDA (the archives are made here).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
PB="$SRC/bench/prebuilt.sh"
# make_archive FILE STAMP [MEMBER]: a tar.xz like pack's (build/prebuilt.stamp and
# build/bench/kernels_bench), MEMBER an extra member name.
make_archive() {
  python3 - "$1" "$2" "${3:-}" <<'EOF'
import io, sys, tarfile
path, stamp, extra = sys.argv[1], sys.argv[2], sys.argv[3]
def add(t, name, data, mode):
    i = tarfile.TarInfo(name); i.size = len(data); i.mode = mode
    t.addfile(i, io.BytesIO(data))
with tarfile.open(path, "w:xz") as t:
    add(t, "build/prebuilt.stamp", ("stamp %s\ncommit test\n" % stamp).encode(), 0o644)
    add(t, "build/bench/kernels_bench", b"#!/bin/sh\necho prebuilt\n", 0o755)
    if extra:
        add(t, extra, b"x", 0o644)
EOF
}

expect_exit 2 "no arguments: usage" bash "$PB"
expect_grep "the usage names pack and unpack" 'prebuilt.sh unpack ARCHIVE BUILD'
expect_exit 2 "an archive that is not there" bash "$PB" unpack "$TMP/none.tar.xz" "$TMP/b0"
expect_grep "it names the archive" 'none.tar.xz not found'
mkdir -p "$TMP/notbuild"
expect_exit 2 "pack of a folder that is not a CMake build" bash "$PB" pack "$TMP/notbuild" "$TMP/x.tar.xz"
expect_grep "it names the folder" 'notbuild is not a CMake build folder'
expect_exit 2 "pack --cli without its archive: usage" bash "$PB" pack --cli "$TMP/notbuild"
expect_grep "the usage names --cli" 'pack \[--cli\] BUILD ARCHIVE'
mkdir -p "$TMP/cpuonly"
printf 'CMAKE_BUILD_TYPE:STRING=Release\nGT_CUDA:STRING=AUTO\n' >"$TMP/cpuonly/CMakeCache.txt"
expect_exit 2 "pack --cli of a build configured without CUDA" bash "$PB" pack --cli "$TMP/cpuonly" "$TMP/x.tar.xz"
expect_grep "it says the folder has no CUDA" 'cpuonly was configured without CUDA'
if [ ! -e "$TMP/x.tar.xz" ]; then ok "no archive is written"; else bad "$TMP/x.tar.xz written"; fi

stamp=$(bash "$PB" stamp)
if [[ "$stamp" =~ ^[0-9a-f]{16}$ ]]; then ok "the stamp is a 16-digit hash"; else bad "stamp '$stamp'"; fi
make_archive "$TMP/good.tar.xz" "$stamp"
expect_exit 0 "an archive of this tree unpacks" bash "$PB" unpack "$TMP/good.tar.xz" "$TMP/b1"
if [ -x "$TMP/b1/bench/kernels_bench" ] && [ "$("$TMP/b1/bench/kernels_bench")" = prebuilt ]; then
  ok "the binary lands executable under BUILD/bench"
else
  bad "no executable $TMP/b1/bench/kernels_bench"
fi

make_archive "$TMP/other.tar.xz" 0123456789abcdef build/gemmtune
# A CLI unpacked into the same folder earlier (another archive, another set) goes too: the
# folder must not mix binaries of two trees.
mkdir -p "$TMP/b2"
printf 'old\n' >"$TMP/b2/libgemmtune_preload.so"
expect_exit 3 "an archive of other sources is refused" bash "$PB" unpack "$TMP/other.tar.xz" "$TMP/b2"
expect_grep "it says why and what to do" 'built from other sources .*pack it again from this tree'
if [ ! -e "$TMP/b2/bench/kernels_bench" ] && [ ! -e "$TMP/b2/gemmtune" ] &&
  [ ! -e "$TMP/b2/libgemmtune_preload.so" ]; then
  ok "no binary of other sources is left (kernel set and CLI set)"
else
  bad "binaries left behind in $TMP/b2: $(ls "$TMP/b2" "$TMP/b2/bench" 2>/dev/null | tr '\n' ' ')"
fi

make_archive "$TMP/climb.tar.xz" "$stamp" "build/../../escaped"
expect_exit 1 "a member climbing out of BUILD is refused" bash "$PB" unpack "$TMP/climb.tar.xz" "$TMP/b3/x"
expect_grep "it names the member" 'refusing member build/../../escaped'
if [ ! -e "$TMP/escaped" ] && [ ! -e "$TMP/b3/escaped" ]; then ok "nothing is written outside BUILD"; else
  bad "a file escaped BUILD"
fi
finish
