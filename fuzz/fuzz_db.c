/* The tuned-DB reader (gt_db_parse_buf): any bytes either parse into rows that every check of
 * the writer accepts, or fail with a message; lookups, misses and merges of what parsed work. */
#include "core/gt_db.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gt_db_t db;
  if (gt_db_parse_buf("fuzz.db", (const char *)data, size, &db) != GT_OK) {
    FUZZ_CHECK(db.n == 0);
    return 0;
  }
  for (size_t i = 0; i < db.n; i++) {
    FUZZ_CHECK(gt_db_row_check(&db.rows[i]) == GT_OK);
    FUZZ_CHECK(gt_db_lookup(&db, &db.rows[i].key) == &db.rows[i]);
    FUZZ_CHECK(gt_problem_operand_elems(&db.rows[i].key, 'A') > 0);
    FUZZ_CHECK(gt_problem_operand_elems(&db.rows[i].key, 'C') > 0);
  }
  if (db.n) {
    gt_problem_t miss = db.rows[0].key;
    miss.sm_count ^= 1; /* another device: a miss with one differing field */
    gt_db_near_t near[3];
    size_t nn = gt_db_explain(&db, &miss, near, 3);
    FUZZ_CHECK(nn <= 3);
  }
  /* A DB merged with itself: every key collides with a row measured the same way. */
  gt_db_t copy;
  gt_db_init(&copy);
  FUZZ_CHECK(gt_db_copy(&copy, &db) == GT_OK);
  FUZZ_CHECK(gt_db_merge(&copy, &db, false, false, NULL, NULL) == GT_OK);
  FUZZ_CHECK(copy.n == db.n);
  gt_db_free(&copy);
  gt_db_free(&db);
  return 0;
}
