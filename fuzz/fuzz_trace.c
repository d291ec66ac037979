/* The kernel trace file `verify` reads (gt_trace_parse): what parses formats back to text that
 * parses to the same totals, and merges with itself. */
#include "fuzz_common.h"
#include "verify/gt_trace_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  gt_trace_t t;
  if (gt_trace_parse("fuzz.trace", text, &t) == GT_OK) {
    size_t len = 0;
    char *back = gt_trace_format(&t, &len);
    FUZZ_CHECK(back != NULL);
    gt_trace_t u;
    FUZZ_CHECK(gt_trace_parse("back.trace", back, &u) == GT_OK);
    FUZZ_CHECK(u.n == t.n && u.total_ns == t.total_ns && u.records == t.records);
    FUZZ_CHECK(gt_trace_merge(&u, &t) == GT_OK);
    for (size_t i = 0; i < t.n; i++) FUZZ_CHECK(gt_trace_find(&u, t.k[i].name) != NULL);
    gt_trace_free(&u);
    free(back);
    gt_trace_free(&t);
  }
  free(text);
  return 0;
}
