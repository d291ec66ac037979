#!/usr/bin/env bash
# Shards and merge as a new user meets them, on the CPU providers: shards given one -o write
# their own DBs (derived names, an empty shard's DB too), merge takes one input, a folder, and
# gives the same bytes whatever the argument order; it refuses DBs of different devices or
# libraries naming both values (unless --mixed); --prefer follows the order given; the llama
# 8B corpus splits 8 ways with the largest shard within 1.25x of the mean; --shard auto says
# which variables it read and which device it took.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
# A launcher around the test run (ctest under srun or mpirun) must not number these processes.
for v in $(compgen -e | grep -E '^(SLURM_|OMPI_|PMI_|PMIX_)' || true); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK MPI_LOCALRANKID CUDA_VISIBLE_DEVICES
opts=(--cpu --warm --rounds 5 --finalists 3)
shapes=$TMP/shapes.csv
# Two shapes over three shards: one shard is empty. Each clearly beats the naive baseline.
printf 'model,proj,tokens,out_features,in_features\nc,a,8,256,256\nc,b,16,256,128\n' >"$shapes"
rows() { grep -c '^gemm,' "$1" || true; }

# ---- three shards, one -o --------------------------------------------------------------------
expect_exit 0 "the 3-way plan prints" "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/plan.db" --estimate --shard 3
empty=$(awk '/^  shard [0-9]+: 0 shapes/ { sub(":", "", $2); print $2; exit }' <<<"$OUT_TXT")
[ -n "$empty" ] && ok "the plan leaves one shard empty (shard $empty)" || bad "no empty shard in the plan" "$OUT_TXT"
[ ! -e "$TMP/plan.db" ] && [ -z "$(ls "$TMP" | grep plan)" ] && ok "the plan writes nothing" || bad "the plan wrote a file" "$(ls "$TMP")"
for i in 0 1 2; do
  expect_exit 0 "shard $i/3 tunes" "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/parts/tuned.db" --shard "$i/3"
  expect_grep "shard $i/3 names its own DB" "DB: $TMP/parts/tuned.shard-$i-of-3.db \\("
done
[ ! -e "$TMP/parts/tuned.db" ] && ok "no shard wrote the -o name itself" || bad "a shard wrote parts/tuned.db"
total=0
for i in 0 1 2; do total=$((total + $(rows "$TMP/parts/tuned.shard-$i-of-3.db"))); done
[ "$total" = 2 ] && ok "three shards with one -o keep both rows between them (derived names)" \
  || bad "the shards hold $total rows, want 2" "$(cat "$TMP"/parts/*)"

# ---- the empty shard -------------------------------------------------------------------------
e=$TMP/parts/tuned.shard-$empty-of-3.db
if [ -f "$e" ] && head -1 "$e" | grep -qx '#gemmtune-db 4' && grep -q '^#device=' "$e" \
   && grep -q '^op,a_type,' "$e" && [ "$(rows "$e")" = 0 ]; then
  ok "the empty shard wrote a valid DB: format line, device, header, no rows"
else
  bad "the empty shard's DB" "$(cat "$e" 2>&1)"
fi
expect_exit 0 "merge accepts the empty shard alone" "$GT" merge "$e" -o "$TMP/empty-merged.db"
expect_grep "and says it has no rows" 'merged 1 DBs into .* \(0 rows\)'

# ---- one input, a folder, any order ----------------------------------------------------------
full=0; [ "$empty" = 0 ] && full=1
expect_exit 0 "merge of a single input" "$GT" merge "$TMP/parts/tuned.shard-$full-of-3.db" -o "$TMP/single.db"
cmp -s <(grep '^gemm,' "$TMP/single.db") <(grep '^gemm,' "$TMP/parts/tuned.shard-$full-of-3.db") \
  && ok "a single input's rows are copied unchanged" || bad "single-input merge changed rows"
expect_exit 0 "merge of a folder" "$GT" merge "$TMP/parts" -o "$TMP/folder.db"
[ "$(rows "$TMP/folder.db")" = 2 ] && ok "the folder's merge holds every shard's row" || bad "folder merge rows" "$(cat "$TMP/folder.db")"
p=$TMP/parts/tuned.shard
"$GT" merge -q "$p-2-of-3.db" "$p-0-of-3.db" "$p-1-of-3.db" -o "$TMP/o201.db"
"$GT" merge -q "$p-1-of-3.db" "$p-2-of-3.db" "$p-0-of-3.db" -o "$TMP/o120.db"
"$GT" merge -q "$p-0-of-3.db" "$p-1-of-3.db" "$p-2-of-3.db" "$p-0-of-3.db" -o "$TMP/o012.db"
"$GT" merge -q "$TMP/parts/" -o "$TMP/o-folder.db"
same=1
for f in o201 o120 o012 o-folder; do cmp -s "$TMP/folder.db" "$TMP/$f.db" || same=0; done
[ "$same" = 1 ] && ok "merge writes the same bytes whatever the argument order (and for the folder)" \
  || bad "merge depends on the argument order" "$(for f in folder o201 o120 o012 o-folder; do echo "== $f"; cat "$TMP/$f.db"; done)"

# ---- two processes, one -o, at once ----------------------------------------------------------
mkdir -p "$TMP/two"
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/two/t.db" --shard auto >"$TMP/two/$r.out" 2>&1 &
done
wait
[ -f "$TMP/two/t.shard-0-of-2.db" ] && [ -f "$TMP/two/t.shard-1-of-2.db" ] && [ ! -e "$TMP/two/t.db" ] \
  && ok "two concurrent shards given the same -o write two DBs" || bad "two shards, one -o" "$(ls "$TMP/two"; cat "$TMP"/two/*.out)"
expect_exit 0 "their merge" "$GT" merge "$TMP/two" -o "$TMP/two-merged.db"
[ "$(rows "$TMP/two-merged.db")" = 2 ] && ok "the two shards' merge has both rows" || bad "two-shard merge" "$(cat "$TMP/two-merged.db")"
grep -q 'shard 1 of 2 from torchrun (RANK=1 WORLD_SIZE=2)' "$TMP/two/1.out" \
  && ok "--shard auto prints the variables it read" || bad "--shard auto's variables" "$(cat "$TMP/two/1.out")"

# ---- devices and libraries -------------------------------------------------------------------
sed 's/^#device=.*/#device=NVIDIA H200/' "$TMP/folder.db" >"$TMP/h200.db"
expect_exit 65 "merge refuses DBs of two devices" "$GT" merge "$TMP/folder.db" "$TMP/h200.db" -o "$TMP/mixed.db"
dev=$(grep '^#device=' "$TMP/folder.db" | cut -d= -f2-)
# The name as a literal in the pattern: a CPU's name has parentheses ("Intel(R) Xeon(R) ...").
dev_re=$(printf '%s' "$dev" | sed 's/[][\.*^$()+?{}|]/\\&/g')
expect_grep "naming both devices and files" "#device differs: '$dev_re' in $TMP/folder.db, 'NVIDIA H200' in $TMP/h200.db"
expect_grep "and saying how to merge them anyway" '--mixed merges them anyway'
[ ! -e "$TMP/mixed.db" ] && ok "a refused merge writes nothing" || bad "a refused merge wrote its output"
expect_exit 0 "--mixed merges them" "$GT" merge --mixed "$TMP/folder.db" "$TMP/h200.db" -o "$TMP/mixed.db"
{ sed -n '1,3p' "$TMP/folder.db"; echo '#cublaslt-lib=/opt/a/libcublasLt.so.13'; sed -n '4,$p' "$TMP/folder.db"; } >"$TMP/lib-a.db"
sed 's|^#cublaslt-lib=.*|#cublaslt-lib=/opt/b/libcublasLt.so.12|' "$TMP/lib-a.db" >"$TMP/lib-b.db"
expect_exit 65 "merge refuses DBs of two cuBLASLt libraries" "$GT" merge "$TMP/lib-b.db" "$TMP/lib-a.db" -o "$TMP/mixed-lib.db"
expect_grep "naming both libraries" "#cublaslt-lib differs: '/opt/a/libcublasLt.so.13' in $TMP/lib-a.db, '/opt/b/libcublasLt.so.12' in $TMP/lib-b.db"
expect_exit 0 "a DB without the library line merges with one that has it" "$GT" merge "$TMP/folder.db" "$TMP/lib-a.db" -o "$TMP/lib-one.db"

# ---- conflicts: --prefer follows the order given, not the paths' ---------------------------
row=$(grep -m1 '^gemm,' "$TMP/folder.db")
head_lines=$(grep -v '^gemm,' "$TMP/folder.db")
{ echo "$head_lines"; awk -F, -v OFS=, '{ $26 = "cpu_old"; $32 = "host-warm-old"; print }' <<<"$row"; } >"$TMP/z_old.db"
{ echo "$head_lines"; awk -F, -v OFS=, '{ $26 = "cpu_new"; print }' <<<"$row"; } >"$TMP/a_new.db"
expect_exit 65 "rows timed differently conflict" "$GT" merge "$TMP/z_old.db" "$TMP/a_new.db" -o "$TMP/conf.db"
expect_grep "the conflict names both facts" 'conflict for .*cpu_old.*cpu_new|conflict for .*cpu_new.*cpu_old'
expect_exit 0 "--prefer last resolves it" "$GT" merge "$TMP/z_old.db" "$TMP/a_new.db" -o "$TMP/conf.db" --prefer last
grep -q ',cpu_new,' "$TMP/conf.db" && ok "--prefer last keeps the input given last (a_new.db, first by path)" \
  || bad "--prefer last kept the wrong row" "$(cat "$TMP/conf.db")"

# ---- the llama 8B plan over 8 shards ---------------------------------------------------------
# The plan is computed on the tuning device's roofline; these are the H200's datasheet rates
# (989 dense bf16 TFLOP/s, 4.8 TB/s), the machine the corpus is tuned on. On this host's own
# roofline one prefill shape costs more than a mean shard, and no split can beat that.
corpus=$SRC/examples/corpus/llama3_8b.csv
expect_exit 0 "--estimate --shard 8 on the llama 8B corpus" env GEMMTUNE_CPU_PEAK_GFLOPS=989000 \
  GEMMTUNE_CPU_PEAK_GBPS=4800 "$GT" tune --cpu "$corpus" -o "$TMP/llama.db" --estimate --shard 8
plan=$OUT_TXT
nshapes=$(($(grep -c . "$corpus") - 1))
read -r k shapes_seen mx mean <<<"$(awk '/^  shard [0-9]+: [0-9]+ shapes, cost / {
    k++; n += $3; c = $6 + 0; s += c; if (c > m) m = c } END { printf "%d %d %.4f %.4f\n", k, n, m, s / k }' <<<"$plan")"
[ "$k" = 8 ] && [ "$shapes_seen" = "$nshapes" ] && ok "the plan lists 8 shards holding all $nshapes shapes" \
  || bad "the plan lists $k shards and $shapes_seen of $nshapes shapes" "$plan"
awk -v m="$mx" -v a="$mean" 'BEGIN { exit !(m <= 1.25 * a) }' \
  && ok "the largest shard ($mx) is within 1.25x of the mean ($mean)" || bad "largest shard $mx vs mean $mean" "$plan"
expect_grep "the plan's header says the same ratio" 'largest [0-9.]+, mean [0-9.]+, (0\.|1\.[01]|1\.2[0-5])[0-9]*x the mean'
[ ! -e "$TMP/llama.db" ] && ok "the estimate wrote no DB" || bad "the estimate wrote a DB"

# ---- usage ------------------------------------------------------------------------------------
expect_exit 64 "--shard N without --estimate is a usage error" "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/u.db" --shard 3
expect_exit 64 "--shard 3/3 is a usage error" "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/u.db" --shard 3/3
expect_exit 64 "--shard auto without a launcher is a usage error" "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/u.db" --shard auto
expect_grep "naming the variables it looked for" 'looked for RANK and WORLD_SIZE, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID'
expect_exit 64 "--shard with -o naming a folder is a usage error" "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/parts/" --shard 0/2
expect_exit 0 "--shard 0/1 tunes everything" "$GT" tune "${opts[@]}" "$shapes" -o "$TMP/one/t.db" --shard 0/1
[ -f "$TMP/one/t.shard-0-of-1.db" ] && [ "$(rows "$TMP/one/t.shard-0-of-1.db")" = 2 ] \
  && ok "one shard of one is named like any other" || bad "--shard 0/1" "$(ls "$TMP/one")"

# ---- the device a rank takes ------------------------------------------------------------------
# Not on the host (--cpu: no GPU to pick), and with a shapes file that is not there: the shard
# line is printed while the options are read, before anything could touch a GPU of this machine.
nope=$TMP/no-such-shapes.csv
expect_exit 66 "--shard auto under mpirun's variables" env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 \
  OMPI_COMM_WORLD_LOCAL_RANK=1 CUDA_VISIBLE_DEVICES=4,5 "$GT" tune "$nope" -o "$TMP/d.db" --shard auto
expect_grep "local rank 1 of CUDA_VISIBLE_DEVICES=4,5 is device 1" 'shard 1 of 2 from openmpi \(OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1\); CUDA device 1 \(local rank 1, CUDA_VISIBLE_DEVICES=4,5\)'
expect_exit 66 "--shard auto under srun --gpus-per-task=1's variables" env SLURM_PROCID=3 SLURM_NTASKS=4 \
  SLURM_LOCALID=3 CUDA_VISIBLE_DEVICES=3 "$GT" tune "$nope" -o "$TMP/d.db" --shard auto
expect_grep "one device listed is device 0" 'shard 3 of 4 from slurm .*; CUDA device 0 \(local rank 3, CUDA_VISIBLE_DEVICES=3\)'
expect_exit 66 "--shard auto under torchrun's variables" env RANK=6 WORLD_SIZE=8 LOCAL_RANK=6 \
  "$GT" tune "$nope" -o "$TMP/d.db" --shard auto
expect_grep "CUDA_VISIBLE_DEVICES unset: the local rank is the device" 'shard 6 of 8 from torchrun \(RANK=6 WORLD_SIZE=8 LOCAL_RANK=6\); CUDA device 6 \(local rank 6\)$'
expect_exit 66 "--device overrides the local rank" env LOCAL_RANK=1 RANK=1 WORLD_SIZE=2 \
  "$GT" tune --device 0 "$nope" -o "$TMP/d.db" --shard auto
expect_grep "the shard is still the launcher's" 'shard 1 of 2 from torchrun'
expect_nogrep "but no device is picked for the rank" 'CUDA device'
expect_exit 66 "--cpu picks no device" env LOCAL_RANK=1 RANK=1 WORLD_SIZE=2 \
  "$GT" tune --cpu "$nope" -o "$TMP/d.db" --shard auto
expect_nogrep "and names none" 'CUDA device'
expect_exit 66 "four ranks on two listed devices" env OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 \
  OMPI_COMM_WORLD_LOCAL_RANK=3 CUDA_VISIBLE_DEVICES=0,1 "$GT" tune "$nope" -o "$TMP/d.db" --shard auto
expect_grep "share them and say so" 'warning: local rank 3 shares CUDA device 1 with local rank 1'
finish
