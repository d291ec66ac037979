#!/usr/bin/env bash
# Installs what building and testing gemmtune needs and a fresh Debian/Ubuntu machine may lack:
# a C compiler, make, CMake, cmocka, and clang for the fuzz targets (fuzz/run.sh: libFuzzer and
# the sanitizer runtimes come with Debian's clang). Does nothing when they are present. The CUDA toolkit is
# optional (without it the CPU parts build and test) and is never installed here.
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
