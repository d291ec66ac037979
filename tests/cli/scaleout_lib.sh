# Helpers of the scale-out recipe tests (test_scaleout_*.sh), sourced after lib.sh.
#
# Each recipe is taken verbatim from docs/scale-out.md (the fenced block after a line
# `<!-- recipe: NAME -->`) and run in a fresh folder holding shapes.csv, with `gemmtune` on PATH
# standing for the installed binary: this build's, on the CPU providers with short timing. Its
# merged tuned.db is compared with one process's DB over the same shapes and seed.
#
# What the comparison can prove on the host: on the CPU only the `cpu` provider races
# (`reference` never does, `testonly` is off), so the provider column is `cpu` by construction;
# what the recipes really prove is that every shape landed in exactly one shard and came back
# through the merge: the same keys, each once. The corpus makes that deterministic: every shape
# beats the naive baseline by 15x or more even with 8 processes on 2 cores, far past the 3%
# and noise margin a row needs, so no shape's row comes and goes with timing noise. Instances
# are not compared: near-tied CPU instances (cpu_pack vs cpu_blk_*) swap between runs.

# A launcher around the test run (ctest under srun or mpirun) must not number our processes.
for v in $(compgen -e | grep -E '^(SLURM_|OMPI_|PMI_|PMIX_|TORCHELASTIC_)' || true); do unset "$v"; done
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MPI_LOCALRANKID CUDA_VISIBLE_DEVICES

DOC=$SRC/docs/scale-out.md
BIN=$TMP/bin
mkdir -p "$BIN"
# `gemmtune` as the recipes call it.
cat >"$BIN/gemmtune" <<EOF
#!/bin/sh
# The installed gemmtune, as the recipes name it: this build, CPU providers, short timing.
if [ "\$1" = tune ]; then shift; exec "$GT" tune --cpu --warm --rounds 5 --finalists 3 "\$@"; fi
exec "$GT" "\$@"
EOF
chmod +x "$BIN/gemmtune"
export PATH=$BIN:$PATH

# recipe NAME: the recipe's lines, from the fenced block after its marker (empty when missing).
recipe() {
  awk -v want="<!-- recipe: $1 -->" '
    $0 == want { found = 1; next }
    found && !inside && /^```/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }' "$DOC"
}

# workdir NAME: a fresh folder with the CPU corpus as shapes.csv; prints its path.
workdir() {
  local d=$TMP/$1
  mkdir -p "$d"
  { echo model,proj,tokens,out_features,in_features; printf '%s\n' \
    cpu,a,8,256,256 cpu,b,16,256,128 cpu,c,32,128,256 cpu,d,24,128,128 cpu,e,64,64,256 \
    cpu,f,16,128,256 cpu,g,32,256,128; } >"$d/shapes.csv"
  echo "$d"
}
CORPUS_SHAPES=7

# reference: one process over the corpus; its DB is $TMP/one/tuned.db.
reference() {
  local d
  d=$(workdir one)
  expect_exit 0 "one process tunes the corpus" bash -c "cd '$d' && gemmtune tune shapes.csv -o tuned.db"
}

# keys DB: each row's key (the first 23 columns) and winner's provider (column 24), sorted.
keys() { grep '^gemm,' "$1" | cut -d, -f1-24 | sort; }

# run_recipe NAME [FILE]: run the recipe NAME in its own folder (or, with FILE, write the
# recipe there first and run the recipe NAME-submit); requires exit 0. Output in $OUT_TXT.
run_recipe() {
  local name=$1 d text
  d=$(workdir "$name")
  text=$(recipe "$name")
  if [ -z "$text" ]; then
    bad "recipe '$name' is in docs/scale-out.md"
    return 0
  fi
  ok "recipe '$name' is in docs/scale-out.md"
  if [ -n "${2:-}" ]; then
    printf '%s\n' "$text" >"$d/$2"
    text=$(recipe "$name-submit")
    [ -n "$text" ] || { bad "recipe '$name-submit' is in docs/scale-out.md"; return 0; }
  fi
  printf '%s\n' "$text" >"$d/recipe.sh"
  expect_exit 0 "recipe '$name' runs" bash -c "cd '$d' && bash -euo pipefail recipe.sh"
}

# compare NAME: the recipe's merged tuned.db against the one process's.
compare() {
  local name=$1 m=$TMP/$1/tuned.db o=$TMP/one/tuned.db
  if [ ! -f "$m" ]; then
    bad "$name: the merged tuned.db exists" "$(ls -R "$TMP/$name")"
    return 0
  fi
  local nm no
  nm=$(keys "$m" | wc -l)
  no=$(keys "$o" | wc -l)
  [ "$no" = "$CORPUS_SHAPES" ] && ok "one process wrote a row for each of the $CORPUS_SHAPES shapes" \
    || bad "one process wrote $no rows of $CORPUS_SHAPES" "$(cat "$o")"
  if cmp -s <(keys "$m") <(keys "$o"); then
    ok "$name: the merged DB has the same $nm keys and winners' providers as one process"
  else
    bad "$name: keys or providers differ from one process" "$(diff <(keys "$o") <(keys "$m"))"
  fi
  [ "$(keys "$m" | cut -d, -f1-23 | uniq -d | wc -l)" = 0 ] && ok "$name: every key once" \
    || bad "$name: a key appears twice" "$(cat "$m")"
  local same
  same=$(join -t'|' <(grep '^gemm,' "$o" | awk -F, '{ k = $1; for (i = 2; i <= 23; i++) k = k "," $i; print k "|" $26 }' | sort) \
                    <(grep '^gemm,' "$m" | awk -F, '{ k = $1; for (i = 2; i <= 23; i++) k = k "," $i; print k "|" $26 }' | sort) \
         | awk -F'|' '$2 == $3' | wc -l)
  echo "# $name: the same instance won on $same of $nm keys (not asserted: near-tied CPU instances swap)"
}

# shards_of NAME N: the recipe left N shard DBs, parts/tuned.shard-I-of-N.db, I = 0..N-1.
shards_of() {
  local name=$1 n=$2 i missing=0
  for ((i = 0; i < n; i++)); do
    [ -f "$TMP/$name/parts/tuned.shard-$i-of-$n.db" ] || missing=$((missing + 1))
  done
  [ "$missing" = 0 ] && ok "$name: all $n shards wrote their DB (empty ones too)" \
    || bad "$name: $missing of $n shard DBs missing" "$(ls "$TMP/$name/parts" 2>&1)"
}
