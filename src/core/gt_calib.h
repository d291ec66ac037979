/* Calibration: whether the GPUs that tuned the inputs of a merge ran at the same speed.
 *
 * Shards tune disjoint keys, so their rows' times say nothing about each other's GPU. So every
 * tune run also times a few reference measurements that every process of the same sweep can
 * compute identically: the baseline (today's path) of reference shapes chosen from the shapes
 * file alone (gt_calib_pick), once before its shapes and once after them (throttling during
 * the run shows as a difference). The times and their spreads go into the DB's validator lines:
 *
 *   #calibration=shard 3 of 8, device 3, host node1
 *   #calibration-ref1=ref 9f3a0c1b2d4e5f60 (bf16 TN 4096x1x4096, cold-graph), before 9.876 us spread 0.8%, after 9.901 us spread 0.9%
 *
 * Older readers take them as any validator; DBs without them (older gemmtune, tune
 * --no-calibration) are simply not compared. merge compares the inputs measured on one device
 * product (the same #device line) that share a reference (same key hash and timing method),
 * the times before the shapes with each other and the times after them with each other: an
 * input whose reference time is off the others' median by more than the combined spread (its
 * own plus the median input's, at least GT_CALIB_FLOOR_PCT) is named; where a named input and
 * an input that was not named hold the same key, the named input's row is dropped before the
 * merge arbitrates (a slow or throttled GPU must not decide for the rest). A reference that
 * ran slower after the shapes than before is said (the GPU slowed during its run), but only
 * the comparison with the other inputs names it: every GPU warms up over a run. */
#ifndef GT_CALIB_H
#define GT_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_db.h"
#include "gt_shapes.h"
#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reference shapes per run: one memory-bound and one compute-bound on a GPU, one on the host. */
#define GT_CALIB_MAX_REFS 2
/* The smallest difference merge names, percent: below it even a quiet GPU's run-to-run drift
 * (clocks, other tenants of the host) could produce it. */
#define GT_CALIB_FLOOR_PCT 2.0
/* The validator lines: the source line, and one per reference ("calibration-ref1", ...). */
#define GT_CALIB_VALIDATOR "calibration"

enum { GT_CALIB_BEFORE = 0, GT_CALIB_AFTER = 1, GT_CALIB_NPHASES = 2 };

/* One reference shape and its baseline's times. */
typedef struct gt_calib_ref {
  uint64_t hash;    /* gt_problem_hash of the reference key: what makes two references the same */
  char shape[48];   /* "bf16 TN 4096x1x4096" (m x n x k), for messages */
  char timing[24];  /* how it was timed ("cold-graph"): only like is compared with like */
  double us[GT_CALIB_NPHASES];         /* median, microseconds; 0 = not measured */
  double spread_pct[GT_CALIB_NPHASES]; /* robust spread of the samples, percent */
} gt_calib_ref_t;

/* One run's calibration: which process on which GPU, and its references. */
typedef struct gt_calib {
  int shard_i, shard_n; /* shard_n 0: the run was not a shard */
  char device[48];      /* the GPU as the machine numbers it (CUDA_VISIBLE_DEVICES entry or
                           ordinal), "host" for the host backend */
  char host[64];        /* host name */
  int nrefs;
  gt_calib_ref_t ref[GT_CALIB_MAX_REFS];
} gt_calib_t;

/* The reference shapes of a sweep, chosen from the shapes file and the device's roofline alone,
 * so every process of the sweep chooses the same ones: by roofline floor (max(FLOPs / peak,
 * bytes / bandwidth)), the cheapest memory-bound shape and the cheapest compute-bound one
 * (arithmetic intensity below or above the ridge), in that order, or only the cheapest shape of
 * all when max is 1 (the host backend, where the baseline is a naive loop and a compute-bound
 * shape would cost seconds). Ties go to the smaller key hash, then the earlier line. Writes up
 * to max indices into sh->v to idx and returns how many (0 for no shapes; 1 when every shape
 * falls in one regime). peak_tflops or peak_gbps <= 0: one regime, by FLOPs plus bytes. */
size_t gt_calib_pick(const gt_shapes_t *sh, double peak_tflops, double peak_gbps, size_t max,
                     size_t *idx);

/* A reference entry for shape p timed `timing`: its hash and description, no times yet. */
void gt_calib_ref_init(gt_calib_ref_t *r, const gt_problem_t *p, const char *timing);

/* Who measured: shard (shard_n 0: none), the CUDA ordinal the process used (-1: the host
 * backend) and CUDA_VISIBLE_DEVICES (NULL or "" unset), which turns the ordinal into the
 * machine's own number or UUID, and the host name. */
void gt_calib_set_source(gt_calib_t *c, int shard_i, int shard_n, int ordinal,
                         const char *visible, const char *host);

/* The calibration as validator lines of db (replacing db's own calibration lines). References
 * without a "before" time are left out. GT_ERR_NOMEM. */
gt_status_t gt_calib_store(gt_db_t *db, const gt_calib_t *c);
/* Read db's calibration lines into c. GT_ERR_NOT_FOUND when db has none; GT_ERR_DATA naming the
 * line when one does not parse (written by hand or by another tool). */
gt_status_t gt_calib_load(const gt_db_t *db, gt_calib_t *c);
/* Remove db's calibration lines: they describe the GPU of one run, never a merged DB's. */
void gt_calib_strip(gt_db_t *db);

/* How much slower a reference ran after the shapes than before them, percent (negative:
 * faster; the two spreads summed in *spread_pct when not NULL), or 0 without both times. tune
 * and merge say so when it is past max(GT_CALIB_FLOOR_PCT, the spreads). */
double gt_calib_drift_pct(const gt_calib_ref_t *r, double *spread_pct);

/* What merge concluded about one input. */
typedef struct gt_calib_verdict {
  bool calibrated; /* it carries readable calibration lines */
  bool compared;   /* another input shared one of its references (same device product) */
  bool flagged;    /* named: its rows never win over an unflagged input's for the same key */
  double dev_pct;  /* its largest deviation from the others, percent (+ slower) */
  char why[768];   /* flagged: the sentence naming it */
} gt_calib_verdict_t;

/* A line of merge's calibration report; warning lines name an input or a problem. */
typedef void (*gt_calib_report_fn)(void *ctx, bool warning, const char *line);

/* Compare the calibrations of n inputs (each DB's path names it) and fill v[0..n-1]: inputs are
 * compared within their device product (#device) and only where they share a reference. With
 * three or more measurements the median is the reference value; with two the faster one (two
 * cannot say which GPU is off; a slow one is the failure that matters). Reports a line per
 * named input (warning), one per unreadable calibration (warning), one per input whose
 * reference slowed during its run (gt_calib_drift_pct past its spreads), and a summary per
 * device product that had something to compare. */
void gt_calib_judge(const gt_db_t *dbs, size_t n, gt_calib_verdict_t *v, gt_calib_report_fn fn,
                    void *ctx);

/* Apply the verdicts before merging: from each flagged input, drop the rows whose key an
 * unflagged input also holds (each reported), so arbitration never picks the named input's
 * row over another's; and strip every input's calibration lines. GT_ERR_NOMEM (the inputs are
 * then partly applied: the caller stops). */
gt_status_t gt_calib_yield(gt_db_t *dbs, size_t n, const gt_calib_verdict_t *v,
                           gt_calib_report_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
