#!/usr/bin/env bash
# The preload shim in a host process whose GEMMTUNE_DB, GEMMTUNE_CAPTURE or GEMMTUNE_STATS names
# something hostile or careless: a FIFO, /dev/zero, a directory, an unreadable file, a 1 GB
# (sparse) file, a symlink, a path too long to hold. Every run ends in bounded time with the
# host's own exit status and its calls forwarded unchanged, the shim says one warning line about
# the variable, and nothing that is not the shim's own file is replaced. A child forked while
# another thread is inside the shim makes its own call and exits. Runs with the stand-in cuBLAS
# of test_preload_passthrough.sh, no GPU needed; exits 77 when the shim is not built (CUDA off).
# Usage: bash test_preload_hostile.sh /path/to/gemmtune SRCDIR
set -u
GEMMTUNE=${1:?usage: test_preload_hostile.sh /path/to/gemmtune SRCDIR}
SRC=${2:?usage: test_preload_hostile.sh /path/to/gemmtune SRCDIR}
BIN=$(cd "$(dirname "$GEMMTUNE")" && pwd)
SHIM=${GEMMTUNE_PRELOAD_LIB:-$BIN/libgemmtune_preload.so}
CC=${CC:-cc}
[ -f "$SHIM" ] || { echo "SKIP: $SHIM not built (CUDA off?)"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "SKIP: no C compiler ($CC)"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout(1)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gt_hostile.XXXXXX")
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0
failed=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; [ -n "${2:-}" ] && sed 's/^/       /' <<<"$2"; failed=$((failed + 1)); }

echo 'libcublas.so.13 { global: *; };' >"$tmp/cublas.map"
echo 'libcublasLt.so.13 { global: *; };' >"$tmp/cublasLt.map"
"$CC" -shared -fPIC -Wl,-soname,libcublas.so.13 -Wl,--version-script="$tmp/cublas.map" \
  "$SRC/tests/cli/fake_cublas.c" -o "$tmp/libcublas.so.13" &&
  "$CC" -shared -fPIC -DFAKE_LT -Wl,-soname,libcublasLt.so.13 \
    -Wl,--version-script="$tmp/cublasLt.map" "$SRC/tests/cli/fake_cublas.c" \
    -o "$tmp/libcublasLt.so.13" &&
  "$CC" -pthread "$SRC/tests/cli/passthrough_client.c" -o "$tmp/client" -L"$tmp" \
    -l:libcublas.so.13 -l:libcublasLt.so.13 -Wl,-rpath,"$tmp" ||
  { echo "FAIL - building the stand-ins"; exit 1; }
"$tmp/client" >"$tmp/plain.out" 2>&1 || { echo "FAIL - the stand-in client does not run"; exit 1; }

# The hostile paths. An unreadable file is one whose read fails: mode 000 for a user, and for
# root (who reads mode 000) /proc/self/mem, whose reads at offset 0 fail.
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"
echo "not yours" >"$tmp/unreadable"
chmod 000 "$tmp/unreadable"
unreadable="$tmp/unreadable"
[ -r "$unreadable" ] && unreadable=/proc/self/mem
truncate -s 1G "$tmp/big"
echo "the victim's own text" >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/link"
long="$tmp/$(printf 'x%.0s' $(seq 1 5000))"
cases=("fifo:$tmp/fifo" "devzero:/dev/zero" "directory:$tmp/dir" "unreadable:$unreadable"
       "1GB-sparse:$tmp/big" "symlink:$tmp/link" "too-long:$long")

# run VAR NAME PATH: the client under the shim with VAR=PATH, at most 20 s, exit status 42.
run() {
  local var=$1 name=$2 path=$3 prefix
  case "$var" in
    GEMMTUNE_DB) prefix='tuned DB|GEMMTUNE_DB' ;;
    GEMMTUNE_CAPTURE) prefix='capture|GEMMTUNE_CAPTURE' ;;
    GEMMTUNE_STATS) prefix='stats|GEMMTUNE_STATS' ;;
  esac
  local t0=$SECONDS
  env "$var=$path" GT_CLIENT_EXIT=42 LD_PRELOAD="$SHIM" timeout 20 "$tmp/client" \
    >"$tmp/run.out" 2>"$tmp/run.err"
  local rc=$? took=$((SECONDS - t0))
  local what="$var=$name"
  if [ "$rc" = 42 ] && [ "$took" -lt 15 ]; then ok "$what: the host's own exit status (42) in ${took} s"
  else bad "$what: exit $rc after $took s (want 42, bounded)" "$(cat "$tmp/run.err")"; fi
  cmp -s "$tmp/plain.out" "$tmp/run.out" && ok "$what: calls forwarded unchanged" ||
    bad "$what: calls changed" "$(diff "$tmp/plain.out" "$tmp/run.out" | head -5)"
  local n
  n=$(grep -Ec "^gemmtune: ($prefix)" "$tmp/run.err")
  [ "$n" = 1 ] && ok "$what: one warning line" || bad "$what: $n warning lines (want 1)" "$(cat "$tmp/run.err")"
}
for var in GEMMTUNE_DB GEMMTUNE_CAPTURE GEMMTUNE_STATS; do
  for c in "${cases[@]}"; do run "$var" "${c%%:*}" "${c#*:}"; done
done
[ "$(cat "$tmp/victim")" = "the victim's own text" ] && [ -L "$tmp/link" ] &&
  ok "the symlink's target is never replaced" || bad "the symlink's target was replaced"
[ "$(stat -c %s "$tmp/big")" = 1073741824 ] && ok "the 1 GB file is left as it was" || bad "the 1 GB file changed"
[ -p "$tmp/fifo" ] && [ -d "$tmp/dir" ] && ok "the FIFO and the directory are left in place" ||
  bad "the FIFO or the directory was replaced"
[ -z "$(ls "$tmp" | grep '\.tmp\.')" ] && ok "no temp files left" || bad "temp files left" "$(ls "$tmp")"

# A file at the capture or stats path that is not the shim's own is not replaced.
echo "somebody's notes" >"$tmp/notes.txt"
for var in GEMMTUNE_CAPTURE GEMMTUNE_STATS; do
  env "$var=$tmp/notes.txt" GT_CLIENT_EXIT=42 LD_PRELOAD="$SHIM" timeout 20 "$tmp/client" \
    >/dev/null 2>"$tmp/run.err"
  rc=$?
  [ "$rc" = 42 ] && [ "$(cat "$tmp/notes.txt")" = "somebody's notes" ] &&
    ok "$var naming another file: exit 42, the file left alone" ||
    bad "$var naming another file: exit $rc, file now '$(head -c 60 "$tmp/notes.txt")'" "$(cat "$tmp/run.err")"
done

# Forking while another thread is inside the shim: every child makes its call and exits. (Before
# the fork handler, about one child in a few hundred forked with the state lock held and hung.)
GEMMTUNE_LOG=1 GT_CLIENT_FORK=1000 GT_CLIENT_EXIT=42 LD_PRELOAD="$SHIM" timeout 60 "$tmp/client" \
  >/dev/null 2>"$tmp/fork.err"
rc=$?
[ "$rc" = 42 ] && ok "1000 children forked while a thread calls through the shim: none deadlocks" ||
  bad "fork test: exit $rc (124 = a child hung)" "$(tail -5 "$tmp/fork.err")"

echo "$pass passed, $failed failed"
[ "$failed" = 0 ]
