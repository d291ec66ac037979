/* Key text (gt_problem_parse_key), as `explain DB KEY` and `--key` read it: a key that parses
 * and validates prints back to text that parses to the same key, and sizes without overflow. */
#include "core/gt_problem.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_cstr(data, size);
  gt_problem_t p;
  gt_problem_init(&p);
  if (gt_problem_parse_key(text, &p) == GT_OK) {
    gt_problem_fill_lds(&p);
    if (gt_problem_validate(&p) == GT_OK) {
      char key[1024], desc[256], diff[1024];
      gt_problem_format_key(&p, key, sizeof key);
      gt_problem_t q;
      gt_problem_init(&q);
      FUZZ_CHECK(gt_problem_parse_key(key, &q) == GT_OK);
      FUZZ_CHECK(gt_problem_equal(&p, &q));
      FUZZ_CHECK(gt_problem_hash(&p) == gt_problem_hash(&q));
      FUZZ_CHECK(gt_problem_operand_elems(&p, 'A') > 0);
      FUZZ_CHECK(gt_problem_operand_elems(&p, 'B') > 0);
      FUZZ_CHECK(gt_problem_operand_elems(&p, 'D') > 0);
      gt_problem_describe(&p, desc, sizeof desc);
      gt_problem_t init;
      gt_problem_init(&init);
      gt_problem_diff_str(&p, &init, diff, sizeof diff);
      (void)gt_problem_flops(&p);
      (void)gt_problem_min_bytes(&p);
    }
  }
  free(text);
  return 0;
}
