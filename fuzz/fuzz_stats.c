/* The shim's stats file, from both sides: `verify` reads it strictly (gt_shim_stats_parse), and
 * the shim, at a host process's exit, merges the file another process of the workload left
 * (gt_rt_stats_format with that text as prev), which must never fail on what it finds there. */
#include "fuzz_common.h"
#include "runtime/capture_csv.h"
#include "verify/gt_shim_stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  gt_shim_stats_t st;
  if (gt_shim_stats_parse("fuzz.stats", text, &st) == GT_OK) {
    for (size_t i = 0; i < st.n; i++) FUZZ_CHECK(st.v[i].hits <= st.v[i].calls);
    gt_shim_stats_t twice = {0};
    FUZZ_CHECK(gt_shim_stats_merge(&twice, &st) == GT_OK);
    FUZZ_CHECK(gt_shim_stats_merge(&twice, &st) == GT_OK);
    gt_shim_stats_free(&twice);
    gt_shim_stats_free(&st);
  }
  gt_rt_stats_rec_t rec = {.calls = 3, .hits = 1, .decision = "hit", .provider = "kernels",
                           .instance = "x", .entry = "cublasGemmEx", .keyed = true};
  gt_problem_init(&rec.key);
  rec.key.m = rec.key.n = rec.key.k = 8;
  gt_problem_fill_lds(&rec.key);
  char *out = NULL;
  size_t len = 0;
  FUZZ_CHECK(gt_rt_stats_format(&rec, 1, text, &out, &len) == GT_OK);
  FUZZ_CHECK(out && strlen(out) == len);
  free(out);
  free(text);
  return 0;
}
