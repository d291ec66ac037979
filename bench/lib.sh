# shellcheck shell=bash
# The prologue the PyTorch benchmarks share (llama_capture_tune.sh, llama_verify.sh,
# layout_verify.sh, capture_first_verify.sh): sourced, never run. It sets up the build and output folders, the stage and
# die helpers, and finds the cuBLAS, cuBLASLt and CUPTI libraries the torch wheel loads, which is
# what tune must race against: cuBLASLt rows record the library version, and the kernels a
# configuration runs are that version's.
#
#   source "$(dirname "$0")/lib.sh"
#   bench_setup llama_verify.sh "$@"        # BUILD OUTDIR from the command line
#   bench_torch_probe "$OUT/torch_env.txt" transformers || die "..."
#   lt_dir=$(bench_torch_lib_dir "$OUT/torch_env.txt" libcublasLt)

# bench_setup NAME BUILD OUTDIR: BUILD and OUT made absolute (OUT created), root (the source
# tree), GT, SHIM and TRACER (the built gemmtune, preload shim and tracer), t0 (for stage), and
# unbuffered Python output so the logs interleave in order. A missing argument stops the script
# with NAME's usage line.
# shellcheck disable=SC2034 # the variables are the sourcing script's
bench_setup() {
  local name=$1
  shift
  BUILD=${1:?usage: $name BUILD OUTDIR}
  OUT=${2:?usage: $name BUILD OUTDIR}
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  BUILD=$(cd "$BUILD" && pwd)
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  GT=$BUILD/gemmtune
  SHIM=$BUILD/libgemmtune_preload.so
  TRACER=$BUILD/libgemmtune_trace.so
  export PYTHONUNBUFFERED=1
  t0=$(date +%s)
}

# stage TEXT: a stage heading with the seconds since bench_setup.
stage() { echo "=== $* [$(($(date +%s) - t0)) s]"; }

# die TEXT: a setup error (not a measured failure): say so, end with the result line every run
# ends with, exit 2.
die() {
  echo "SETUP ERROR: $*"
  echo "RESULT: FAIL"
  exit 2
}

# bench_timed_step LOGDIR SUMMARY HEADING NAME LIMIT CMD...: the step of a one-call GPU session
# (gpu_session.sh's stages, ab_session.sh's builds, gates and runs). CMD runs under a LIMIT-second
# timeout (killed 5 s later), its whole output in LOGDIR/NAME.log; "=== HEADING (limit LIMIT s)"
# before, "=== HEADING: rc=R in S s" and the log's last TAIL (default 25) lines after, on stdout
# and appended to SUMMARY. Returns CMD's status (124 or 137 when the limit ended it), so a slow
# step cannot take the results of the others with it.
bench_timed_step() {
  local dir=$1 summary=$2 heading=$3 name=$4 limit=$5 t0 rc
  shift 5
  t0=$(date +%s)
  echo "=== $heading (limit ${limit}s)" | tee -a "$summary"
  timeout -k 5 "$limit" "$@" >"$dir/$name.log" 2>&1
  rc=$?
  echo "=== $heading: rc=$rc in $(($(date +%s) - t0)) s" | tee -a "$summary"
  tail -n "${TAIL:-25}" "$dir/$name.log" | tee -a "$summary"
  return $rc
}

# bench_torch_probe FILE [MODULE...]: in python3, import torch and each MODULE, run a bf16 matmul
# on the GPU, and write to FILE the versions, the device, and one "lib PATH" line per cuBLAS,
# cuBLASLt or CUPTI library the process then has mapped. Returns python's exit status (non-zero
# when torch, a MODULE or the GPU is missing; FILE then holds the traceback).
bench_torch_probe() {
  local file=$1
  shift
  python3 - "$@" >"$file" 2>&1 <<'EOF'
import importlib, sys
import torch
versions = ["torch", torch.__version__]
for name in sys.argv[1:]:
    versions += [name, importlib.import_module(name).__version__]
a = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
(a @ a).sum().item()
print(*versions, "device", torch.cuda.get_device_name(0))
for l in sorted({l.split()[-1] for l in open("/proc/self/maps")
                 if "libcublas" in l or "libcupti" in l}):
    print("lib", l)
EOF
}

# bench_torch_lib_dir FILE LIB: the folder of the first LIB.so* (e.g. libcublasLt) among FILE's
# "lib PATH" lines; empty when it is not there.
bench_torch_lib_dir() {
  sed -n "s|^lib \(.*\)/$2\.so.*|\1|p" "$1" | head -n 1
}
