#!/usr/bin/env bash
# One call on the GPU machine: build, GPU tests, benchmarks. Stages run in the order given
# (default: build tests kernels probe21). Each stage's full log lands in $OUT/results.tgz; the
# tail of each is printed. Usage: bash bench/gpu_session.sh [build] [tests] [ktests] [kernels]
#   [layouts] [probe21] [torch] [verify] [biased] [fenced] [capfirst] [gtests] [multigpu_share]
#   [multigpu] [pyflow] [kernels_fp8] [fp8verify] [grouped] [moe] [inductor] [floor]
#   [capcheck] [honest] [placement] [livediag] [kernels_pgrid] [zoo] [kgates] ...
# capcheck (issue 17 b, c; after build, in the same call): `gemmtune capture` of three clients
# against an independent kernel trace of the same workload (bench/capture_vs_trace.py): the
# graph-captured llama decode step and bench/batched_client.py (torch.bmm / baddbmm, eager and
# in graphs) against their own torch.profiler trace, build-dev/batched_gemm
# (cublasGemmBatchedEx) against the kernel tracer; T_CAPCHECK (default 120 s) per client,
# reports under capcheck/ in results.tgz.
# Environment: OUT (results folder, default ./out), JOBS (build parallelism, default nproc),
# PREBUILT (an archive of bench/prebuilt.sh pack: the build stage unpacks it instead of building).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
work=$(mktemp -d)
build="$root/build-dev"
export PYTHONUNBUFFERED=1
# cmocka is not installed on the GPU image: a copy travels in .devdeps when present.
if [ -d "$root/.devdeps" ]; then
  export LD_LIBRARY_PATH="$root/.devdeps/lib:${LD_LIBRARY_PATH:-}"
  prefix=(-DCMAKE_PREFIX_PATH="$root/.devdeps")
else
  prefix=()
fi
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build tests kernels probe21)
summary="$work/summary.txt"
pack() { tar -C "$work" -czf "$OUT/results.tgz" . 2>/dev/null; cp "$summary" "$OUT/summary.txt" 2>/dev/null; }
trap pack EXIT
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
# run_stage NAME LIMIT_S CMD...: the stage is killed at LIMIT_S so a slow stage cannot take the
# results of the others with it; results are packed after every stage for the same reason.
run_stage() {
  local name=$1 limit=$2 rc
  shift 2
  echo "--- $name: $*" >>"$summary"
  bench_timed_step "$work" "$summary" "stage $name" "$name" "$limit" "$@"
  rc=$?
  pack
  return $rc
}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used \
    --format=csv
  nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv
  nvcc --version | tail -1
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)' 2>&1
} >"$work/env.txt" 2>&1
cat "$work/env.txt" | tee -a "$summary"
for s in "${stages[@]}"; do
  case "$s" in
    build)
      # PREBUILT=ARCHIVE (bench/prebuilt.sh pack): the benchmark and gate binaries built elsewhere
      # from this same tree, unpacked instead of building (seconds instead of about two minutes);
      # an archive of `pack --cli` holds the CLI, shim and tracer instead (the PyTorch clients'
      # stages: zoo, honest, inductor, biased, ...). ctest's stages need a build.
      if [ -n "${PREBUILT:-}" ]; then
        run_stage build ${T_BUILD:-240} bash "$root/bench/prebuilt.sh" unpack "$PREBUILT" "$build" || break
      else
        run_stage build ${T_BUILD:-240} bash -c "cmake -S '$root' -B '$build' -DGT_CUDA=ON ${prefix[*]} && cmake --build '$build' -j${JOBS:-$(nproc)}" || break
      fi ;;
    tests)
      TAIL=60 run_stage tests ${T_TESTS:-240} bash -c "cd '$build' && ctest --output-on-failure -j4 --timeout 600" ;;
    gtests)
      # Only the tests that need the GPU (the CPU ones run in CI).
      TAIL=80 run_stage gtests ${T_GTESTS:-240} bash -c "cd '$build' && ctest --output-on-failure -j4 --timeout 200 -R '${GTESTS_RE:-^gpu_|cli_test_preload|_gpu\$}'" ;;
    kgates)
      # The kernel gates run as binaries, not through ctest (so they also run from PREBUILT):
      # every own dense bf16/f16 instance, every fp8 instance, the grouped kernels.
      for g in ${KGATES:-gpu_test_kernels gpu_test_kernels_fp8}; do
        TAIL=30 run_stage "$g" ${T_KGATE:-300} "$build/$g"
      done ;;
    ktests)
      TAIL=60 run_stage ktests ${T_KTESTS:-180} bash -c "cd '$build' && ctest --output-on-failure -R 'gpu_test_kernels|test_kernel_names' --timeout 150" ;;
    kernels_bias)
      # Biased keys against the application's own cublasLtMatmul bias path, and the fused cost:
      # about 6 minutes on the H200 (73 of the 84 rows in 300 s on 2026-12-07, 1088 instances).
      # KB_ARGS: more kernels_bench options here and in kernels_fp8 (e.g. "--floor": each row's
      # measured read floor and the ceiling it allows).
      run_stage kernels_bias ${T_KERNELS:-480} env OUT="$work/kernels_bias" bash "$root/bench/kernels_bench.sh" "$build" --epilogue bias ${KB_ARGS:-} ;;
    kernels_fp8)
      # The fp8 instances (wgf8, dtf8), from the build stage's tree (nothing is built here): the
      # fp8 GPU gate (about a minute on an H100), then kernels_bench --dtype f8e4m3fn against
      # cuBLASLt's fp8 call with tensorwise and with outer-vector scales over the llama rows at
      # tokens 1..64 (about 45 s each). Logs under $OUT/kernels_fp8. A wgf8 kernel whose barrier
      # never completes traps after about 4 s (gt_wgf8.cuh), and each step is killed at its
      # limit, so a wrong kernel cannot hold the GPU.
      mkdir -p "$OUT/kernels_fp8"
      # T_FP8TEST=0 leaves the GPU gate out (the gtests stage runs it too).
      [ "${T_FP8TEST:-420}" = 0 ] ||
        TAIL=40 run_stage fp8_test ${T_FP8TEST:-420} bash -c "set -o pipefail; '$build/gpu_test_kernels_fp8' 2>&1 | tee '$OUT/kernels_fp8/gpu_test_kernels_fp8.log'"
      for sc in tensor outer; do
        TAIL=30 run_stage "kernels_fp8_$sc" ${T_KERNELS:-300} env OUT="$OUT/kernels_fp8/$sc" bash "$root/bench/kernels_bench.sh" "$build" --dtype f8e4m3fn --scale "$sc" --tokens 1,2,4,8,16,32,64 ${KB_ARGS:-}
      done ;;
    fp8verify)
      # Issue 16: the fp8 PyTorch client through capture, tune and verify (bench/fp8_verify.sh;
      # MODES=tensor,row,block adds DeepSeek-V3's blockwise scaling).
      TAIL=60 run_stage fp8verify ${T_FP8V:-500} bash "$root/bench/fp8_verify.sh" "$build" "$work/fp8" ;;
    kernels)
      # KERNELS_ARGS: kernels_bench options, e.g. "--tokens 1" (the 1-token decode instances).
      run_stage kernels ${T_KERNELS:-200} env OUT="$work/kernels" bash "$root/bench/kernels_bench.sh" "$build" ${KERNELS_ARGS:-} ;;
    probe21)
      TAIL=35 run_stage probe21 ${T_PROBE:-420} python3 "$root/bench/probe21_bench.py" "$build/gemmtune" "$work" ;;
    layouts)
      # The same shapes in the three other BLAS layouts (kernels_bench --layout), own vs cuBLAS.
      for lay in ${LAYOUTS:-nn tt nt}; do
        TAIL=20 run_stage "layout_$lay" ${T_KERNELS:-200} env OUT="$work/layout_$lay" bash "$root/bench/kernels_bench.sh" "$build" --layout "$lay" ${LAYOUT_ARGS:-}
      done ;;
    nnclient)
      TAIL=90 run_stage nnclient ${T_NNCLIENT:-420} bash "$root/bench/layout_verify.sh" "$build" "$work/nnclient" ;;
    kernels_pgrid)
      # The persistent (g1) instances' grid, A/B in one call: every resident CTA (the default)
      # against the balanced grid (GEMMTUNE_WG_PERSISTENT_GRID=balanced: the fewest CTAs that take
      # as many tiles each as the busiest resident one). KERNELS_ARGS as for `kernels`.
      for pg in resident balanced; do
        TAIL=25 run_stage "kernels_pgrid_$pg" ${T_KERNELS:-200} env GEMMTUNE_WG_PERSISTENT_GRID=$pg OUT="$work/kernels_pgrid_$pg" bash "$root/bench/kernels_bench.sh" "$build" ${KERNELS_ARGS:-}
      done ;;
    kernels_nopdl)
      TAIL=20 run_stage kernels_nopdl ${T_KERNELS:-200} env GEMMTUNE_KERNELS_PDL=0 OUT="$work/kernels_nopdl" bash "$root/bench/kernels_bench.sh" "$build" --filter 8b ;;
    fenced)
      # The same rows timed back to back (a GEMM's launch may overlap the previous GEMM's tail
      # through programmatic dependent launch) and fenced (a plain kernel before every launch,
      # as an application's norm or activation precedes its GEMM): how much of the own kernels'
      # lead is overlap an application does not give them.
      for mode in plain fenced; do
        flag=(); [ "$mode" = fenced ] && flag=(--fenced)
        TAIL=20 run_stage "kernels_$mode" ${T_KERNELS:-200} env OUT="$work/kernels_$mode" bash "$root/bench/kernels_bench.sh" "$build" --filter "${FENCE_FILTER:-70b}" --tokens "${FENCE_TOKENS:-1,8}" "${flag[@]}"
      done ;;
    makerun)
      TAIL=40 run_stage makerun ${T_MAKERUN:-150} bash "$root/examples/run.sh" "$build" ;;
    space)
      TAIL=40 run_stage space ${T_SPACE:-150} bash "$root/bench/cublaslt_space.sh" "$build" "$work/space" ;;
    torch)
      TAIL=60 run_stage torch ${T_TORCH:-300} bash "$root/bench/llama_capture_tune.sh" "$build" "$work/torch" ;;
    biased)
      # The models with biased Linears (Qwen2's q/k/v, GPT-2's Conv1D): capture -> tune -> run
      # under the shim, then verify reusing that DB, per family.
      for fam in ${FAMILIES:-qwen2 gpt2}; do
        TAIL=40 run_stage "${fam}_torch" ${T_TORCH:-300} env MODEL_ARGS="--family $fam" bash "$root/bench/llama_capture_tune.sh" "$build" "$work/$fam/torch"
        TAIL=60 run_stage "${fam}_verify" ${T_VERIFY:-300} env MODEL_ARGS="--family $fam" bash "$root/bench/llama_verify.sh" "$build" "$work/$fam/verify"
      done ;;
    zoo)
      # Models at widths no corpus file holds (bench/llama_model.py: SmolLM-135M's, Phi-3-mini's,
      # Gemma-2B's, OPT-1.3B's), each capture -> tune -> run under the shim -> logits and hits,
      # with an odd prompt length (ZOO_PROMPT_LEN, default 37) so prefill rows are odd too.
      for fam in ${ZOO:-smol phi3 gemma opt}; do
        TAIL=30 run_stage "zoo_$fam" ${T_ZOO:-200} env MODEL_ARGS="--family $fam" PROMPT_LEN="${ZOO_PROMPT_LEN:-37}" bash "$root/bench/llama_capture_tune.sh" "$build" "$work/zoo/$fam"
      done ;;
    multigpu_share)
      # Issue 20's plumbing on one GPU: two tune processes share GPU 0 under torchrun (else
      # mpirun), --shard auto, merge, the checks that need no second GPU (about a minute).
      TAIL=45 run_stage multigpu_share ${T_MULTIGPU_SHARE:-300} bash "$root/bench/multigpu_tune.sh" --share-one-gpu "$build" "$work/multigpu_share" ;;
    multigpu)
      # Issue 20's measured run: one tune process per GPU, merged, against one GPU, then verify
      # of the llama client under the merged DB on device 1. MG_DIR keeps the stages' files
      # across calls (STAGES="plan multi", then "one", then "compare verify").
      mg=${MG_DIR:-$work/multigpu}
      TAIL=60 run_stage multigpu ${T_MULTIGPU:-3000} bash "$root/bench/multigpu_tune.sh" "$build" "$mg" ${NGPU:-}
      [ "$mg" = "$work/multigpu" ] || cp -r "$mg" "$work/multigpu" 2>/dev/null ;;
    verify)
      TAIL=60 run_stage verify ${T_VERIFY:-300} bash "$root/bench/llama_verify.sh" "$build" "$work/verify" ;;
    pyflow)
      # Issue 21: pip install into a fresh venv, then python -m gemmtune capture/tune/run/verify
      # of the llama client with LD_LIBRARY_PATH unset (needs no build stage).
      TAIL=80 run_stage pyflow ${T_PYFLOW:-600} bash "$root/bench/pyflow_verify.sh" "$work/pyflow" ;;
    capfirst)
      # Every key's first call inside torch.cuda.graph: capture -> tune -> verify in the replays.
      TAIL=80 run_stage capfirst ${T_CAPFIRST:-600} bash "$root/bench/capture_first_verify.sh" "$build" "$work/capfirst" ;;
    grouped)
      # The grouped GEMM kernels: their GPU test, grouped_bench over the MoE shapes, and the
      # same kernels against torch._grouped_mm in one process (logs and CSVs in $OUT/grouped).
      gdir="$OUT/grouped"
      mkdir -p "$gdir"
      gpy=python3
      [ -x /opt/torch/.venv/bin/python ] && gpy=/opt/torch/.venv/bin/python
      # GROUPED_PARTS picks the parts (default "test bench torch"); "torch_nopdl" is the torch
      # comparison again with GEMMTUNE_GROUPED_PDL=0 (the launch without programmatic
      # serialization, to measure what it gives); GTORCH_ARGS go to grouped_vs_torch.py.
      for part in ${GROUPED_PARTS:-test bench torch}; do
        case "$part" in
          test) TAIL=40 run_stage grouped_test ${T_GTEST:-600} bash -c "set -o pipefail; cd '$build' && ctest --output-on-failure -R '^gpu_test_grouped\$' --timeout 600 2>&1 | tee '$gdir/test.log'" ;;
          bench) TAIL=60 run_stage grouped_bench ${T_GBENCH:-900} bash -c "set -o pipefail; '$build/grouped_bench' --csv '$gdir/grouped_bench.csv' 2>&1 | tee '$gdir/grouped_bench.log'" ;;
          torch) TAIL=60 run_stage grouped_torch ${T_GTORCH:-900} bash -c "set -o pipefail; '$gpy' '$root/bench/grouped_vs_torch.py' --lib '$build/libgemmtune_grouped.so' --csv '$gdir/grouped_vs_torch.csv' ${GTORCH_ARGS:-} 2>&1 | tee '$gdir/grouped_vs_torch.log'" ;;
          torch_nopdl) TAIL=60 run_stage grouped_torch_nopdl ${T_GTORCH:-900} bash -c "set -o pipefail; GEMMTUNE_GROUPED_PDL=0 '$gpy' '$root/bench/grouped_vs_torch.py' --lib '$build/libgemmtune_grouped.so' --csv '$gdir/grouped_vs_torch_nopdl.csv' ${GTORCH_ARGS:-} 2>&1 | tee '$gdir/grouped_vs_torch_nopdl.log'" ;;
          *) echo "gpu_session: unknown GROUPED_PARTS part '$part'" | tee -a "$summary" ;;
        esac
      done ;;
    moe)
      # Issue 24: transformers MoE models through torch._grouped_mm. The torch bridge must be built
      # against this machine's torch (python3's, found at configure time).
      [ -f "$build/libgemmtune_torchmm.so" ] ||
        run_stage moe_bridge ${T_BUILD:-240} bash -c "cmake -S '$root' -B '$build' -DGT_CUDA=ON ${prefix[*]} && cmake --build '$build' -j${JOBS:-$(nproc)} --target gemmtune_torchmm"
      TAIL=80 run_stage moe ${T_MOE:-900} bash "$root/bench/moe_e2e.sh" "$build" "$work/moe" ;;
    inductor)
      # Issue 22: the tuned dispatch against torch.compile(mode="max-autotune-no-cudagraphs")
      # and cuBLAS on the llama 8B/70B rows at tokens 1..64 (bench/decode_vs_inductor.py:
      # tune the rows, then rounds of one worker process per column; table, CSV, JSON, the
      # acceptance verdicts, Inductor's choices and code, all in results.tgz under inductor/).
      # Needs the build stage's tree, and a lent machine starts bare: run "build inductor" in
      # one call. One model fits one call (~6-7 min, most of it Inductor's autotuning):
      # INDUCTOR_ARGS defaults to "--shapes 8b"; run "--shapes 70b" in a second call, then
      # combine the two JSONs with decode_vs_inductor.py --merge. "--smoke" is a one-minute
      # check. Killed at its limit, it still writes what it measured. Issue 17's honesty run
      # (tune's recorded speedups against the application's, prefill rows too):
      # INDUCTOR_ARGS="--no-inductor --shapes 8b --tokens 1,2,4,8,16,32,64,512,2048".
      idir="$work/inductor"
      mkdir -p "$idir"
      ipy=python3
      [ -x /opt/torch/.venv/bin/python ] && ipy=/opt/torch/.venv/bin/python
      TAIL=${TAIL_INDUCTOR:-110} run_stage inductor ${T_INDUCTOR:-470} bash -c "set -o pipefail; '$ipy' '$root/bench/decode_vs_inductor.py' --gemmtune '$build/gemmtune' --out '$idir' ${INDUCTOR_ARGS:---shapes 8b} 2>&1 | tee '$idir/decode_vs_inductor.log'" ;;
    floor)
      # Issue 23: the floor-aware search budget against the plain full search (bench/floor_budget.sh)
      # on a subset of the llama corpus that fits one call: FLOOR_ROWS lists model:tokens,...
      # (default "llama3_8b:1,64 llama3_70b:8,1024", 23 shapes), FLOOR_TUNE_ARGS bounds both runs
      # alike (default "--budget 6": the plain run's whole space does not fit a call).
      fsub="$work/floor_subset.csv"
      head -n 1 "$root/examples/corpus/llama3_8b.csv" >"$fsub"
      for spec in ${FLOOR_ROWS:-llama3_8b:1,64 llama3_70b:8,1024}; do
        awk -F, -v toks="${spec#*:}" 'BEGIN { n = split(toks, t, ","); for (i = 1; i <= n; i++) want[t[i]] = 1 }
          NR > 1 && ($3 in want)' "$root/examples/corpus/${spec%%:*}.csv" >>"$fsub"
      done
      TAIL=40 run_stage floor ${T_FLOOR:-480} env CORPUS="$fsub" TUNE_ARGS="${FLOOR_TUNE_ARGS:---budget 6}" bash "$root/bench/floor_budget.sh" "$work/floor" "$build" ;;
    livediag)
      # Issue 17 (a): the live replay against the application, kernel by kernel, on the rows
      # where they disagree (bench/probe_live_vs_app.sh; LIVEDIAG_DB, default the 8B DB of
      # bench/results/honest/session_20261202b/tune_8b_2rounds; ROWS, K, LABEL as it says).
      TAIL=80 run_stage livediag ${T_LIVEDIAG:-200} bash "$root/bench/probe_live_vs_app.sh" "$build" "$work/livediag" "${LIVEDIAG_DB:-$root/bench/results/honest/session_20261202b/tune_8b_2rounds/tuned.db}" ;;
    placement)
      # Issue 17: cuBLAS's time for the same F.linear calls with the weight copies in separate
      # allocations against views into one (bench/probe_placement.py); torch only, no build.
      ppy=python3
      [ -x /opt/torch/.venv/bin/python ] && ppy=/opt/torch/.venv/bin/python
      mkdir -p "$work/placement"
      TAIL=20 run_stage placement ${T_PLACEMENT:-120} bash -c "'$ppy' '$root/bench/probe_placement.py' --json '$work/placement/placement.json' 2>&1 | tee '$work/placement/placement.txt'" ;;
    honest)
      # Issue 17 (a) without tuning again: the llama 8B and 70B rows (tokens 1..64 and the
      # prefill rows) timed plain and under the shim with the DBs tuned on the H200 before
      # (bench/results/honest/llama*/tuned.db), HONEST_ROUNDS rounds (default 3), then one table
      # and the verdicts over both (decode_vs_inductor.py --merge). About 3 minutes.
      hdir="$work/honest"
      mkdir -p "$hdir"
      hpy=python3
      [ -x /opt/torch/.venv/bin/python ] && hpy=/opt/torch/.venv/bin/python
      for m in ${HONEST_MODELS:-8b 70b}; do
        TAIL=20 run_stage "honest_$m" ${T_HONEST:-200} bash -c "set -o pipefail; '$hpy' '$root/bench/decode_vs_inductor.py' --gemmtune '$build/gemmtune' --out '$hdir/$m' --no-inductor --shapes $m --tokens 1,2,4,8,16,32,64,512,2048 --db '$root/bench/results/honest/llama$m/tuned.db' --rounds ${HONEST_ROUNDS:-3} 2>&1 | tee '$hdir/$m.log'"
      done
      TAIL=20 run_stage honest_merge 60 bash -c "'$hpy' '$root/bench/decode_vs_inductor.py' --merge '$hdir/8b/decode_vs_inductor.json' '$hdir/70b/decode_vs_inductor.json' --csv '$hdir/merged.csv' 2>&1 | tee '$hdir/merged.txt'" ;;
    capcheck)
      # Issue 17 (b, c): capture's shapes file against a kernel trace of the same workload, per
      # client: calls per key (graph replays included), GEMM time and its shares within 5%
      # (bench/capture_vs_trace.py: its table, verdicts and JSON under capcheck/<client>/).
      # Needs the build stage's tree: run "build capcheck" in one call.
      cdir="$work/capcheck"
      mkdir -p "$cdir"
      if [ ! -x "$build/gemmtune" ] || [ ! -x "$build/batched_gemm" ]; then
        echo "=== stage capcheck: no $build/gemmtune or batched_gemm: run the build stage first" | tee -a "$summary"
        continue
      fi
      cpy=python3
      [ -x /opt/torch/.venv/bin/python ] && cpy=/opt/torch/.venv/bin/python
      cvt="'$cpy' '$root/bench/capture_vs_trace.py' --gemmtune '$build/gemmtune' --run-timeout ${T_CAPCHECK:-120}"
      TAIL=${TAIL_CAPCHECK:-60} run_stage capcheck_llama ${T_CAPCHECK:-120} bash -c "set -o pipefail; $cvt --out '$cdir/llama' -- '$cpy' '$root/bench/llama_model.py' --batch 1 --graph --reps 10 2>&1 | tee '$cdir/llama.log'"
      TAIL=${TAIL_CAPCHECK:-60} run_stage capcheck_batched ${T_CAPCHECK:-120} bash -c "set -o pipefail; $cvt --out '$cdir/batched_client' -- '$cpy' '$root/bench/batched_client.py' 2>&1 | tee '$cdir/batched_client.log'"
      TAIL=${TAIL_CAPCHECK:-60} run_stage capcheck_batched_gemm ${T_CAPCHECK:-120} bash -c "set -o pipefail; $cvt --out '$cdir/batched_gemm' -- '$build/batched_gemm' 2>&1 | tee '$cdir/batched_gemm.log'" ;;
    *) echo "unknown stage $s" | tee -a "$summary" ;;
  esac
done
