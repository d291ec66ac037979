#!/usr/bin/env bash
# Issue 21 acceptance on a GPU machine: the Python entry point, as a PyTorch user takes it.
#   a. pip install this checkout into a fresh venv (torch comes from the system site packages;
#      no build isolation, so no network is needed where scikit-build-core is installed)
#   b. with LD_LIBRARY_PATH unset, `python -m gemmtune capture` the llama client
#      (bench/llama_model.py: random weights, graph-captured decode step): the shapes file records
#      the cuBLAS/cuBLASLt torch loaded
#   c. `python -m gemmtune tune` the shapes: it must say it uses that library
#   d. `python -m gemmtune run --db DB -- client`: the client runs under the shim
#   e. `python -m gemmtune verify --db DB -- client`: PASS, and every cuBLASLt row engaged
# Usage: bash bench/pyflow_verify.sh OUTDIR. Environment: BATCH (default 1), TUNE_ARGS
# (default "--search quick --budget 3 --finalists 4 --rounds 9"), JOBS (build parallelism).
# Exit 0 pass, 1 fail, 2 setup error.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: pyflow_verify.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
export PYTHONUNBUFFERED=1
t0=$(date +%s)
stage() { echo "=== $* [$(($(date +%s) - t0)) s]"; }
die() { echo "SETUP ERROR: $*"; echo "RESULT: FAIL"; exit 2; }
BATCH=${BATCH:-1}
TUNE_ARGS=${TUNE_ARGS:---search quick --budget 3 --finalists 4 --rounds 9}
MODEL=$root/bench/llama_model.py

stage "a. pip install . into a fresh venv"
venv=$(mktemp -d)/venv  # outside OUTDIR: the results stay small
# The python3 here may itself be a venv (torch's); --system-site-packages would then reach the
# base interpreter's packages, not its: a .pth file hands the new venv the parent's site packages.
parent_site=$(python3 -c 'import site; print("\n".join(site.getsitepackages()))')
python3 -m venv --system-site-packages "$venv" || die "python3 -m venv failed"
vsite=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$parent_site" >"$vsite/_parent_site.pth"
# shellcheck disable=SC1091
source "$venv/bin/activate"
CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc)} timeout -k 5 400 \
  python -m pip install --no-build-isolation --no-deps --no-index "$root" >"$OUT/pip.log" 2>&1 ||
  { tail -n 40 "$OUT/pip.log"; die "pip install failed: $OUT/pip.log"; }
tail -n 2 "$OUT/pip.log"
cd "$OUT" || die "cd $OUT"
python -c 'import gemmtune, sys; print("package:", gemmtune.__file__)' || die "import gemmtune failed"
python -m gemmtune --version || die "python -m gemmtune --version failed"
unset LD_LIBRARY_PATH
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-<unset>}"
fail=0
client=(python3 "$MODEL" --batch "$BATCH" --prompt-len 16 --graph)

stage "b. python -m gemmtune capture"
timeout -k 5 150 python -m gemmtune capture -o "$OUT/shapes.csv" -- "${client[@]}" --reps 5 \
  >"$OUT/capture.log" 2>&1
rc=$?
tail -n 15 "$OUT/capture.log"
[ $rc -eq 0 ] && [ -s "$OUT/shapes.csv" ] || die "capture failed (exit $rc)"
grep '^#gemmtune-capture' "$OUT/shapes.csv" | sed 's/^/  /'
grep -q '^#gemmtune-capture cublaslt=' "$OUT/shapes.csv" || { echo "FAIL: the shapes file records no cuBLASLt"; fail=1; }

stage "c. python -m gemmtune tune ($TUNE_ARGS)"
# shellcheck disable=SC2086
timeout -k 5 200 python -m gemmtune tune "$OUT/shapes.csv" -o "$OUT/py.db" $TUNE_ARGS >"$OUT/tune.log" 2>&1
rc=$?
tail -n 20 "$OUT/tune.log"
[ $rc -le 1 ] && [ -s "$OUT/py.db" ] || die "tune failed (exit $rc)"

if grep -q "using the .* the application loaded" "$OUT/tune.log"; then
  grep "the application loaded" "$OUT/tune.log" | head -n 3 | sed 's/^/  said: /'
else
  echo "FAIL: tune did not say it uses the cuBLAS the application loaded"; fail=1
fi
if grep -q "warning: the application loaded" "$OUT/tune.log"; then
  echo "FAIL: tune warned of a library mismatch"; fail=1
fi

stage "d. python -m gemmtune run --db"
timeout -k 5 120 python -m gemmtune run --db "$OUT/py.db" -- "${client[@]}" --reps 20 >"$OUT/run.log" 2>&1
rc=$?
tail -n 6 "$OUT/run.log"
[ $rc -eq 0 ] || { echo "FAIL: run exited $rc"; fail=1; }

stage "e. python -m gemmtune verify --db"
timeout -k 5 240 python -m gemmtune verify --db "$OUT/py.db" --runs 3 --timeout 120 --json "$OUT/verify.json" \
  --keep "$OUT/verify" -- "${client[@]}" --reps 50 >"$OUT/verify.log" 2>&1
vrc=$?
grep -E '^(\[|PASS|FAIL|UNVERIFIED|GPU kernel time|Amdahl)' "$OUT/verify.log" | head -n 60
[ $vrc -eq 0 ] || { echo "FAIL: verify exited $vrc"; fail=1; }
python3 - "$OUT/verify.json" <<'PY' || fail=1
import json, sys
items = json.load(open(sys.argv[1]))["items"]
lt = [i for i in items if i["provider"] == "cublaslt" and i["issued"]]
bad = [i for i in lt if i["verdict"] != "engaged"]
byprov = {}
for i in items:
    if i["issued"]:
        byprov.setdefault(i["provider"], []).append(i["verdict"])
for p, v in sorted(byprov.items()):
    print("  rows issued, provider %-10s %d (%d engaged)" % (p, len(v), v.count("engaged")))
print("  cuBLASLt rows issued: %d, engaged: %d" % (len(lt), len(lt) - len(bad)))
for i in bad:
    print("  NOT ENGAGED:", i["key"], i["verdict"], i["why"])
sys.exit(1 if bad else 0)
PY
stage "summary"
echo "wall time: $(($(date +%s) - t0)) s"
if [ $fail -eq 0 ]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit $fail
