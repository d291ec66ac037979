#!/usr/bin/env bash
# Benchmark and gate binaries built on one machine, run on another: a lent GPU machine starts
# bare, and building the tree there costs about two minutes of its time per call. The binaries
# below need only the CUDA driver and the cuBLAS/cuBLASLt they load at run time, so a tree built
# here (CUDA 13.0, sm_90a, like the GPU machine's) can travel with the call.
#
#   bash bench/prebuilt.sh pack [--cli] BUILD ARCHIVE  # strip, pack (tar.xz), stamp BUILD's binaries
#   bash bench/prebuilt.sh unpack ARCHIVE BUILD        # on the GPU machine: into BUILD, after
#                                                      # checking the stamp against this tree
#   bash bench/prebuilt.sh stamp                       # this tree's stamp
#
# The stamp is a hash of every file the binaries are compiled from (src/, include/, the CMake
# files, bench/*.c, *.cu and *.h, tests/gpu/, tests/gt_testutil.*). `unpack` refuses (exit 3) an
# archive whose stamp differs from the tree it is run in, so a number is never measured with
# binaries from other sources than the ones committed beside it. Two sets, one archive each (both
# together exceed what a call carries beside the tree):
#   default: bench/kernels_bench, grouped_bench, libgemmtune_grouped.so and the kernel gates
#     gpu_test_kernels, gpu_test_kernels_fp8, gpu_test_grouped (run them directly: ctest's files
#     name the building machine's paths); about 24 MB;
#   --cli: the gemmtune CLI, the preload shim libgemmtune_preload.so and the kernel tracer
#     libgemmtune_trace.so, what the PyTorch clients' stages need (capture, tune, verify, the
#     zoo, honest and inductor stages of gpu_session.sh); about 24 MB.
# The kernel images repeat across the binaries, so an archive is packed with a dictionary larger
# than any one of them. Pass the archive's folder in the device call's `carry` when it is
# git-ignored; gpu_session.sh's build stage unpacks PREBUILT=ARCHIVE instead of building.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kernel_files=(bench/kernels_bench grouped_bench libgemmtune_grouped.so gpu_test_kernels
  gpu_test_kernels_fp8 gpu_test_grouped)
kernel_targets=(kernels_bench grouped_bench gemmtune_grouped gpu_test_kernels gpu_test_kernels_fp8
  gpu_test_grouped)
cli_files=(gemmtune libgemmtune_preload.so libgemmtune_trace.so)
cli_targets=(gemmtune gemmtune_preload gemmtune_trace)

usage() {
  sed -n '7,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

stamp() {
  (cd "$root" && {
    # Source files only: an ignored file here (a __pycache__, an editor's backup) does not
    # travel to the GPU machine and must not change the stamp.
    find src include tests/gpu -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
      -o -name '*.cuh' -o -name '*.cpp' -o -name '*.map' -o -name '*.json' -o -name '*.py' \
      -o -name '*.cmake' -o -name '*.in' -o -name CMakeLists.txt \) -not -path '*/__pycache__/*'
    ls CMakeLists.txt bench/CMakeLists.txt bench/*.c bench/*.cu bench/*.h tests/gt_testutil.c \
      tests/gt_testutil.h
  } | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
}

pack() {
  local set=$1 build=$2 archive=$3 tmp f
  local -a files targets
  if [ "$set" = cli ]; then
    files=("${cli_files[@]}") targets=("${cli_targets[@]}")
  else
    files=("${kernel_files[@]}") targets=("${kernel_targets[@]}")
  fi
  [ -f "$build/CMakeCache.txt" ] || { echo "prebuilt.sh: $build is not a CMake build folder" >&2; exit 2; }
  # The binaries must be those of this tree: build them (a no-op when they are up to date). A
  # folder configured without CUDA has none of the kernel set's targets, and its CLI has no
  # kernels of its own.
  grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=.' "$build/CMakeCache.txt" ||
    { echo "prebuilt.sh: $build was configured without CUDA (no CMAKE_CUDA_COMPILER)" >&2; exit 2; }
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null ||
    { echo "prebuilt.sh: building ${targets[*]} in $build failed" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/build/bench"
  for f in "${files[@]}"; do
    [ -f "$build/$f" ] || { echo "prebuilt.sh: $build/$f was not built" >&2; exit 2; }
    cp "$build/$f" "$tmp/build/$f"
    strip "$tmp/build/$f"
  done
  { echo "stamp $(stamp)"
    echo "set ${set}"
    echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    grep -E '^(CMAKE_BUILD_TYPE|GT_CUDA|GT_CUDA_ARCHS|CMAKE_CUDA_COMPILER):' \
      "$build/CMakeCache.txt" || true
    "${CUDACXX:-nvcc}" --version 2>/dev/null | tail -1 || true
  } >"$tmp/build/prebuilt.stamp"
  mkdir -p "$(dirname "$archive")"
  # One LZMA block over the whole tar (xz's threaded mode cuts blocks at 3 x dict), so the
  # kernel images the binaries share are stored once.
  tar -C "$tmp" -cf - build | xz -T1 --lzma2=preset=6,dict=512MiB >"$archive.part"
  mv "$archive.part" "$archive"
  echo "prebuilt.sh: $archive ($(du -h "$archive" | cut -f1)), $(head -1 "$tmp/build/prebuilt.stamp")"
}

unpack() {
  local archive=$1 build=$2 want got
  [ -f "$archive" ] || { echo "prebuilt.sh: $archive not found" >&2; exit 2; }
  mkdir -p "$build"
  # Python's tarfile reads .tar.xz where no xz binary is installed.
  python3 - "$archive" "$build" <<'EOF'
import os, sys, tarfile
archive, dest = sys.argv[1], sys.argv[2]
with tarfile.open(archive) as t:
    members = []
    for m in t.getmembers():
        name = m.name.split("/", 1)[1] if "/" in m.name else ""
        if m.isdir() and ".." not in m.name.split("/"):
            continue
        if not name or name.startswith("/") or ".." in name.split("/") or not m.isfile():
            sys.exit("prebuilt.sh: %s: refusing member %s" % (archive, m.name))
        members.append((m, name))
    for m, name in members:
        path = os.path.join(dest, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with t.extractfile(m) as src, open(path + ".part", "wb") as out:
            out.write(src.read())
        os.chmod(path + ".part", m.mode & 0o755)
        os.replace(path + ".part", path)
EOF
  want=$(stamp)
  got=$(sed -n 's/^stamp //p' "$build/prebuilt.stamp")
  if [ "$got" != "$want" ]; then
    echo "prebuilt.sh: $archive was built from other sources (stamp $got, this tree $want):" \
      "pack it again from this tree" >&2
    rm -f "${kernel_files[@]/#/$build/}" "${cli_files[@]/#/$build/}"
    exit 3
  fi
  echo "prebuilt.sh: unpacked into $build:"
  sed 's/^/  /' "$build/prebuilt.stamp"
}

case "${1:-}" in
  pack)
    if [ "${2:-}" = --cli ]; then
      [ $# -eq 4 ] || usage
      pack cli "$3" "$4"
    else
      [ $# -eq 3 ] || usage
      pack kernels "$2" "$3"
    fi ;;
  unpack) [ $# -eq 3 ] || usage; unpack "$2" "$3" ;;
  stamp) [ $# -eq 1 ] || usage; stamp ;;
  -h | --help) usage ;;
  *) usage ;;
esac
