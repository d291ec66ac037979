/* The correctness gate's metric: a candidate's output D against a reference computed with fp64
 * accumulation.
 *
 *   error    = ||D - D_ref||_F / ||D_ref||_F            (normwise relative error)
 *   bound    = c * u_out + c' * u_in * sqrt(K) ...      (gt_metric_bound: from types and K)
 *   mismatch = fraction of elements with |d - ref| > atol + rtol * |ref|
 *   nonfinite: NaN/Inf in D where the reference is finite
 *   unwritten: elements still holding the poison pattern (the candidate never wrote them)
 *
 * A candidate passes when error <= bound, mismatch <= max_mismatch, nonfinite == 0 and
 * unwritten == 0. */
#ifndef GT_METRIC_H
#define GT_METRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gt_problem.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gt_gate {
  double error;         /* normwise relative error */
  double bound;         /* error allowed */
  double mismatch_frac; /* fraction outside the elementwise tolerance */
  double max_mismatch;  /* allowed fraction */
  int64_t nonfinite;    /* NaN/Inf where the reference is finite */
  int64_t unwritten;    /* poisoned elements left untouched */
  int64_t checked;      /* elements compared */
  bool passed;
  char why[160];        /* "" when passed, else the first failing criterion */
} gt_gate_t;

/* Bound on the normwise relative error for a problem: grows with the unit roundoff of the
 * input/output/compute types and with sqrt(k). */
double gt_metric_bound(const gt_problem_t *p);
/* Elementwise tolerances used for the mismatch fraction. For float outputs atol is relative to the
 * RMS of the reference (an element is off when |d - ref| > atol * rms(ref) + rtol * |ref|); for
 * integer outputs it is absolute. */
void gt_metric_elem_tol(const gt_problem_t *p, double *atol, double *rtol);

/* Byte pattern written into outputs before a checked run, per type; chosen to be a value no
 * GEMM of our random inputs produces (a NaN payload for floats, INT_MIN-ish for ints). */
void gt_metric_poison(void *buf, gt_dtype_t t, size_t count);
bool gt_metric_is_poison(const void *buf, gt_dtype_t t, size_t i);

/* Streaming accumulation so host and device paths share one verdict. */
typedef struct gt_metric_acc {
  double diff2, ref2; /* sums of squares */
  int64_t mismatches, nonfinite, unwritten, checked;
  double atol, rtol;
} gt_metric_acc_t;

/* acc_init sets atol as if the reference had an RMS of 1 (see gt_metric_elem_tol); a caller that
 * streams elements and knows the reference's RMS calls gt_metric_acc_set_ref_rms before adding
 * them. gt_metric_compare does both itself. */
void gt_metric_acc_init(gt_metric_acc_t *a, const gt_problem_t *p);
void gt_metric_acc_set_ref_rms(gt_metric_acc_t *a, const gt_problem_t *p, double ref_rms);
/* Add one element: d is the candidate value (ignored when poisoned), ref the reference. */
void gt_metric_acc_add(gt_metric_acc_t *a, double d, double ref, bool poisoned);
/* Final verdict into g. */
void gt_metric_acc_finish(const gt_metric_acc_t *a, const gt_problem_t *p, gt_gate_t *g);

/* Compare a full host D (type p->d_type, column-major with ldc, batch) against ref (fp64,
 * tight m x n per batch item). */
void gt_metric_compare(const gt_problem_t *p, const void *D, const double *ref, gt_gate_t *g);

#ifdef __cplusplus
}
#endif
#endif
