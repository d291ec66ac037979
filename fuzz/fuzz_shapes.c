/* The shapes-file reader (gt_shapes_parse): every shape it returns is a valid problem whose
 * operands can be sized without overflow; anything else is an error naming file:line. */
#include "core/gt_shapes.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  gt_problem_t defaults;
  gt_problem_init(&defaults);
  snprintf(defaults.arch, sizeof defaults.arch, "sm_90");
  defaults.sm_count = 132;
  gt_shapes_t sh;
  size_t merged = 0;
  if (gt_shapes_parse("fuzz.csv", text, &defaults, &sh, &merged) == GT_OK) {
    FUZZ_CHECK(sh.n > 0);
    for (size_t i = 0; i < sh.n; i++) {
      const gt_problem_t *p = &sh.v[i].p;
      FUZZ_CHECK(gt_problem_validate(p) == GT_OK);
      FUZZ_CHECK(gt_problem_operand_elems(p, 'A') > 0);
      FUZZ_CHECK(gt_problem_operand_elems(p, 'B') > 0);
      FUZZ_CHECK(gt_problem_operand_elems(p, 'C') > 0);
      FUZZ_CHECK(sh.v[i].calls >= 0 && sh.v[i].time_us >= 0 && sh.v[i].share >= 0);
      for (size_t j = 0; j < i && j < 8; j++) FUZZ_CHECK(!gt_problem_equal(p, &sh.v[j].p));
    }
    gt_shapes_free(&sh);
  }
  free(text);
  return 0;
}
