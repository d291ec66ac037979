#!/usr/bin/env bash
# The GNU parallel recipe of docs/scale-out.md on the CPU providers: 8 jobs, each its shard by
# number, then merge; the merged DB has the same keys and winners' providers as one process
# over the same shapes and seed (scaleout_lib.sh says why that comparison is deterministic).
# Skipped (77) without GNU parallel; CI installs it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/scaleout_lib.sh"
if ! grep -q 'GNU parallel' <<<"$(parallel --version 2>/dev/null || true)"; then
  echo "skip: no GNU parallel (apt-get install parallel)"
  exit 77
fi
# GNU parallel asks for a citation once per user; the notice is not what this test reads.
export HOME=$TMP/home
mkdir -p "$HOME/.parallel" && touch "$HOME/.parallel/will-cite"

reference
run_recipe parallel
shards_of parallel 8
compare parallel
finish
