#!/usr/bin/env bash
# Copies what the GPU machine lacks for building the tests (cmocka's header and library) into
# .devdeps/, which bench/gpu_session.sh puts on CMAKE_PREFIX_PATH and LD_LIBRARY_PATH. Run once on
# the development machine after `make test` installed cmocka; keep .devdeps out of git
# (echo /.devdeps/ >> .git/info/exclude) and carry it with the GPU call.
set -euo pipefail
cd "$(dirname "$0")/.."
inc=$(ls /usr/include/cmocka.h /usr/local/include/cmocka.h 2>/dev/null | head -1)
lib=$(ls /usr/lib/*/libcmocka.so.0* /usr/local/lib/libcmocka.so.0* 2>/dev/null | head -1)
if [ -z "$inc" ] || [ -z "$lib" ]; then
  echo "prepare-device-deps: cmocka not installed here (run 'make test' or scripts/install-deps.sh first)" >&2
  exit 1
fi
mkdir -p .devdeps/include .devdeps/lib
cp "$inc" .devdeps/include/
cp -P "$(dirname "$lib")"/libcmocka.so* .devdeps/lib/
grep -qx '/.devdeps/' .git/info/exclude 2>/dev/null || echo '/.devdeps/' >> .git/info/exclude
echo "prepare-device-deps: .devdeps ready"
