#!/usr/bin/env bash
# The layering of src/ (check_layers.py): no folder includes from a floor above its own, core
# includes from no other folder, and outside src/providers/ and src/kernels/ no string literal
# names a provider or holds an own-kernel family prefix. The checker must also fail: it runs on
# copies of src/ with one planted violation each, and on a copy with look-alikes that are not
# violations. Skipped (77) without python3.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null 2>&1; then
  echo "skip: python3 not found"
  exit 77
fi
CHECK="$(dirname "$0")/check_layers.py"

expect_exit 0 "src/ keeps its layers" python3 "$CHECK" "$SRC"
expect_grep "the providers' names are read from their tables" 'providers [a-z_,]*cublas,[a-z_,]*kernels'
expect_grep "the kernel prefixes are derived from the generator's data" 'kernel prefixes [a-z0-9_,]*gt_sm90_'

# plant NAME FILE TEXT [PATTERN]: a copy of src/ with TEXT appended to FILE must fail, naming
# the file (and PATTERN when given).
plant() {
  local name=$1 file=$2 text=$3 pattern=${4:-}
  local tree="$TMP/$name"
  mkdir -p "$tree"
  cp -r "$SRC/src" "$tree/src"
  printf '%s\n' "$text" >>"$tree/src/$file"
  expect_exit 1 "planted: $name" python3 "$CHECK" "$tree"
  expect_grep "planted: $name is reported at its file" "^src/$file:[0-9]+: ${pattern}"
  rm -rf "$tree"
}
plant core_includes_providers core/gt_metric.c '#include "providers/gt_provider.h"' \
  'core includes "providers/gt_provider.h"'
plant core_includes_platform_relative core/gt_metric.c '#include "../platform/gt_cudalib.h"' \
  'core includes'
plant providers_include_search providers/cpu.c '#include "search/gt_search.h"' \
  'providers \(floor 3\) includes "search/gt_search.h" from search \(floor 5\)'
plant verify_includes_runtime verify/gt_engage.c '#include "runtime/rt_engine.h"' \
  'verify \(floor 4\) includes'
plant runtime_includes_tools runtime/capture_csv.c '#include "tools/cli.h"' \
  'runtime \(floor 5\) includes'
plant cublas_literal tools/cmd_list.c 'static const char *k_planted = "cublas";' \
  'the string "cublas" names a provider'
plant kernels_literal runtime/preload_db.c 'static const char *k_planted = "kernels";' \
  'the string "kernels" names a provider'
plant kernel_prefix verify/gt_engage.c 'static const char *k_planted = "reduce: gt_sm90_splitk";' \
  'the string .* holds the kernel family prefix gt_sm90_'
plant cpu_outside_its_exceptions search/gt_search.c 'static const char *k_planted = "cpu";' \
  'the string "cpu" names a provider'

# The prefixes follow the generator's data: a space declaring another arch makes its prefix one.
mkdir -p "$TMP/newarch"
cp -r "$SRC/src" "$TMP/newarch/src"
python3 - "$TMP/newarch/src/kernels/space.json" <<'PY'
import json, sys
space = json.load(open(sys.argv[1]))
space["archs"]["sm100"] = {"target": "sm_100a", "max_smem": 232448}
space["families"]["wg"]["archs"].append("sm100")
json.dump(space, open(sys.argv[1], "w"))
PY
printf '%s\n' 'static const char *k_planted = "gt_sm100_wg_bf16";' >>"$TMP/newarch/src/tools/cmd_list.c"
expect_exit 1 "a prefix of an arch the space declares is reported" python3 "$CHECK" "$TMP/newarch"
expect_grep "the derived prefix is named" 'prefix gt_sm100_'
rm -rf "$TMP/newarch"

# A folder nobody put on a floor is a violation too.
mkdir -p "$TMP/newfolder"
cp -r "$SRC/src" "$TMP/newfolder/src"
mkdir "$TMP/newfolder/src/extras"
expect_exit 1 "a folder on no floor is reported" python3 "$CHECK" "$TMP/newfolder"
expect_grep "the folder is named" '^src/extras: a folder on no floor'
rm -rf "$TMP/newfolder"

# Look-alikes that break no rule: names in comments, longer literals that merely start with a
# provider's name, includes from the same folder or from below, and the owners' own literals.
mkdir -p "$TMP/fine"
cp -r "$SRC/src" "$TMP/fine/src"
cat >>"$TMP/fine/src/tools/cmd_list.c" <<'EOF'
/* the "cublas" provider and gt_sm90_ kernels may be named in comments */
// "kernels" and "gt_sm90_x" in a line comment
static const char *k_fine = "cublasGemmEx \"quoted\" cublasLt";
#include "core/gt_db.h"
#include "search/gt_search.h"
EOF
printf '%s\n' 'static const char *k_own = "gt_sm90_own";' >>"$TMP/fine/src/kernels/gt_kernel_name.c"
printf '%s\n' 'static const char *k_own = "cublas";' >>"$TMP/fine/src/providers/registry.c"
expect_exit 0 "look-alikes are not violations" python3 "$CHECK" "$TMP/fine"
rm -rf "$TMP/fine"

finish
