/* The calibration lines of a tuned DB (gt_calib_load), as merge reads them from every input: any
 * DB either yields a calibration that stores back to lines reading to the same one, or is
 * refused with a message (or has none); judging and applying it against itself never fails. */
#include "core/gt_calib.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gt_db_t db;
  if (gt_db_parse_buf("fuzz.db", (const char *)data, size, &db) != GT_OK) return 0;
  gt_calib_t c, back;
  if (gt_calib_load(&db, &c) == GT_OK) {
    FUZZ_CHECK(c.nrefs >= 0 && c.nrefs <= GT_CALIB_MAX_REFS);
    gt_db_t again;
    gt_db_init(&again);
    FUZZ_CHECK(gt_calib_store(&again, &c) == GT_OK);
    FUZZ_CHECK(gt_calib_load(&again, &back) == GT_OK);
    FUZZ_CHECK(back.nrefs == c.nrefs && back.shard_i == c.shard_i && back.shard_n == c.shard_n);
    for (int i = 0; i < c.nrefs; i++) FUZZ_CHECK(back.ref[i].hash == c.ref[i].hash);
    gt_db_free(&again);
  }
  /* Two copies of one input: the same calibration, so neither is named. */
  gt_db_t two[2];
  gt_calib_verdict_t v[2];
  gt_db_init(&two[0]);
  gt_db_init(&two[1]);
  FUZZ_CHECK(gt_db_copy(&two[0], &db) == GT_OK && gt_db_copy(&two[1], &db) == GT_OK);
  gt_calib_judge(two, 2, v, NULL, NULL);
  FUZZ_CHECK(!v[0].flagged || v[0].calibrated);
  FUZZ_CHECK(gt_calib_yield(two, 2, v, NULL, NULL) == GT_OK);
  FUZZ_CHECK(two[0].n == db.n && two[1].n == db.n);
  FUZZ_CHECK(gt_db_get_validator(&two[0], GT_CALIB_VALIDATOR) == NULL);
  gt_db_free(&two[0]);
  gt_db_free(&two[1]);
  gt_db_free(&db);
  return 0;
}
