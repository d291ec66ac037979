#!/usr/bin/env bash
# Installs what building and testing gemmtune needs and a fresh Debian/Ubuntu machine may lack:
# a C compiler, make, CMake, cmocka, clang for the fuzz targets (fuzz/run.sh: libFuzzer and
# the sanitizer runtimes come with Debian's clang), and the launchers the scale-out recipes are
# tested with (docs/scale-out.md: Open MPI's mpirun, GNU parallel). Does nothing when they are
# present. The CUDA toolkit is optional (without it the CPU parts build and test) and is never
# installed here.
set -euo pipefail
need=()
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
if ! { [ -f /usr/include/cmocka.h ] || [ -f /usr/local/include/cmocka.h ]; }; then
  need+=(libcmocka-dev)
fi
command -v python3 >/dev/null 2>&1 || need+=(python3)
# libFuzzer ships with clang's runtime; check for it, not just the compiler.
have_fuzzer=0
for rt in /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a; do
  [ -f "$rt" ] && have_fuzzer=1
done
if ! command -v clang >/dev/null 2>&1 || [ "$have_fuzzer" = 0 ]; then
  need+=(clang)
fi
# The scale-out recipe tests (tests/cli/test_scaleout_*.sh) skip without them.
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
# moreutils has a `parallel` of its own, with other options: the recipes need GNU parallel.
# (A here-string, not a pipe: under pipefail grep -q's early exit can fail the pipeline.)
grep -q 'GNU parallel' <<<"$(parallel --version 2>/dev/null || true)" || need+=(parallel)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${need[*]}"
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=sudo; else
    echo "install-deps: need root (or sudo) to install: ${need[*]}" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no apt-get here; please install: ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq "${need[@]}"
