/* The engagement verdict of `gemmtune verify`: given the tuned DB, the shim's counters (which keys
 * the workload issued, how many calls a tuned candidate served) and the kernel trace (what the GPU
 * actually ran), decide per key whether the tuned choice engaged, and summarise what it can be
 * worth end to end.
 *
 * A key engages when every call hit AND the kernels the row runs per call ran at least as many
 * times as the calls that hit. With CUDA graphs the shim sees a call once, at capture, while the
 * trace sees every replay, so a tuned key's kernels run at least `hits` times, usually many more:
 * ">= hits" is the test. When several keys expect the same kernel, it must have run at least as
 * often as their hits together.
 *
 * Expected kernels: the row's provider says which kernels a call launches (gt_provider_row_kernels:
 * for own kernels the instance name is the kernel symbol, plus the split-K reduce where one runs).
 * Where the library picks its kernels at run time (cuBLAS, cuBLASLt) the caller calibrates: it
 * runs the row's candidate alone under the tracer and gt_engage_expected_from_trace picks that
 * provider's kernels out of the trace. Verify names no provider and no kernel: which kernels are
 * GEMMs, and which differently named kernels are the same one, the provider table answers.
 *
 * Pure C; CPU tests cover every verdict. */
#ifndef GT_ENGAGE_H
#define GT_ENGAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/gt_db.h"
#include "core/gt_problem.h"
#include "core/gt_status.h"
#include "gt_shim_stats.h"
#include "gt_trace_file.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- kernel names ---------------------------------------------------------------------------- */

/* Whether a traced kernel `ran` is the kernel `expected`: equal names, or names the owning
 * provider calls the same kernel (gt_provider_same_kernel: cuBLAS names that differ only in how
 * the epilogue treats C, which follows the call's pointers and beta, not the tuned choice). */
bool gt_engage_kernel_match(const char *expected, const char *ran);
/* The traced launches of `expected`: every traced kernel that matches it, summed into *sum (whose
 * name is borrowed from expected). NULL when none ran. */
const gt_trace_kernel_t *gt_engage_trace_match(const gt_trace_t *t, const char *expected,
                                               gt_trace_kernel_t *sum);

/* True when a kernel name alone says it is a GEMM: one of a provider's GEMM kernels
 * (gt_provider_owns_kernel with no provider named). */
bool gt_engage_is_gemm_name(const char *name);

#define GT_KSET_MAX 8

/* A small set of kernel names (owned strings). */
typedef struct gt_kset {
  char *names[GT_KSET_MAX];
  int n;
} gt_kset_t;

/* Add a copy of name (duplicates ignored). GT_ERR_UNSUPPORTED when the set is full. */
gt_status_t gt_kset_add(gt_kset_t *s, const char *name);
bool gt_kset_has(const gt_kset_t *s, const char *name);
/* Whether any kernel of s matches the traced kernel `ran` (gt_engage_kernel_match). */
bool gt_kset_matches(const gt_kset_t *s, const char *ran);
void gt_kset_free(gt_kset_t *s);
/* "a, b" into buf. */
void gt_kset_str(const gt_kset_t *s, char *buf, size_t cap);

/* Expected kernels of a row whose kernel names follow from the row itself: the exact symbols its
 * provider lists (gt_provider_row_kernels). Returns false, leaving out empty, when the provider
 * picks its kernels at run time (calibrate: gt_engage_expected_from_trace) or cannot say. */
bool gt_engage_expected_from_row(const gt_db_row_t *row, gt_kset_t *out);

/* Expected kernels of a row of `provider` from a calibration trace (a process that ran its one
 * candidate on the harness): the kernels in it that the provider owns (gt_provider_owns_kernel,
 * so the harness's fill and poison kernels are left out) launched at least half as often as the
 * most-launched of them, so one-time set-up kernels are left out too. GT_ERR_NOT_FOUND when the
 * trace holds no such kernel; GT_ERR_UNSUPPORTED when the trace is not ok (reason in the
 * message). */
gt_status_t gt_engage_expected_from_trace(const gt_trace_t *t, const char *provider,
                                          gt_kset_t *out);

/* ---- verdicts ---------------------------------------------------------------------------------- */

typedef enum gt_engage_verdict {
  GT_ENGAGE_ENGAGED = 0, /* every call hit and the expected kernels ran */
  GT_ENGAGE_PARTLY,      /* some calls hit, or the expected kernels ran fewer times than hits */
  GT_ENGAGE_NOT,         /* a row exists for the key but the tuned choice never ran */
  GT_ENGAGE_UNVERIFIED,  /* the shim served calls but what ran cannot be checked (no trace,
                            expected kernels unknown) */
  GT_ENGAGE_NEAR_MISS,   /* no row for the key, but a row for the same shape differs in another
                            field (device, types, layout): the mismatch the DB was meant to avoid */
  GT_ENGAGE_UNTUNED,     /* no row for the key (tune found no winner, or never saw it) */
  GT_ENGAGE_NOT_ISSUED,  /* a DB row no call of the workload matched */
  GT_ENGAGE__COUNT
} gt_engage_verdict_t;

/* "engaged", "partly", "not engaged", "unverified", "near miss", "untuned", "not issued". */
const char *gt_engage_verdict_name(gt_engage_verdict_t v);

/* One line of the report: an issued key (with or without a row) or a row never issued. */
typedef struct gt_engage_item {
  /* inputs, filled by gt_engage_build */
  gt_problem_t key;
  bool issued;                 /* the workload issued this key (shim counters) */
  uint64_t calls, hits;
  gt_shim_decision_t decision; /* issued keys only */
  char entry[48];
  const gt_db_row_t *row;      /* the DB row for the key (NULL: none) */
  /* input filled by the caller before judging, for issued keys with a row */
  gt_kset_t expected;
  bool expected_known;
  char expected_why[256];      /* why the expected kernels are unknown */
  char shim_note[400];         /* the shim's own explanation (its log), when the caller has one */
  char refused[400];           /* the row was tuned on another product of this device's arch and
                                  SM count, so the runtime refuses it here: the refusal text
                                  (gt_db_refusal_str); "" when the row applies */
  /* outputs of gt_engage_judge */
  gt_engage_verdict_t verdict;
  char why[768];
  uint64_t kernel_runs;        /* fewest launches of any expected kernel (0 none) */
  double gpu_ns;               /* GPU time of the expected kernels attributed to this key */
} gt_engage_item_t;

typedef struct gt_engage_report {
  gt_engage_item_t *items;
  size_t n;
  size_t count[GT_ENGAGE__COUNT];
  size_t tuned_issued;     /* issued keys with a row */
  bool trace_ok;           /* the trace can be trusted */
  char trace_why[GT_TRACE_REASON_MAX + 64];
  /* GPU time (from the trace, a run with the DB in place) */
  double total_ns;         /* every kernel */
  double gemm_ns;          /* kernels expected by a row or a provider's GEMM kernels */
  double gemm_share;       /* gemm_ns / total_ns */
  double tuned_ns;         /* expected kernels of engaged (or partly engaged) keys */
  double tuned_speedup;    /* their rows' speedups weighted by each key's GPU time */
  double tuned_share_base; /* share of the tuned keys in GPU time had they run the baseline */
  double amdahl_gain;      /* best end-to-end gain from the DB: 1 / (1 - f (1 - 1/s)) */
  double gemm_ceiling;     /* gain if every GEMM took no time at all */
  /* outcome */
  bool pass;               /* every issued tuned key engaged, no near miss, a trace, >= 1 row */
  bool unverified;         /* the outcome could not be established (no trace, no counters) */
  char summary[512];       /* one line: what passed or what failed */
} gt_engage_report_t;

/* Items for the report: one per key in stats (with its exact DB row, if any), then one per DB row
 * whose key the workload never issued, in DB order. Expected sets are empty; the caller fills
 * them for items with issued && row before judging. rep is output only. */
gt_status_t gt_engage_build(const gt_db_t *db, const gt_shim_stats_t *stats,
                            gt_engage_report_t *rep);

/* Decide every item's verdict and the summary. trace may be NULL (no trace at all); a trace whose
 * state is not ok makes hits unverifiable. Keys without a row are explained with gt_db_explain.
 * stats_ok false: the shim's counters are missing (then nothing is known about the keys). */
void gt_engage_judge(const gt_db_t *db, const gt_trace_t *trace, bool stats_ok,
                     const char *stats_why, gt_engage_report_t *rep);

void gt_engage_report_free(gt_engage_report_t *rep);

/* ---- end to end -------------------------------------------------------------------------------- */

/* Parse one output line "gemmtune-metric: <name> <value> <unit>" (leading blanks allowed).
 * Returns true and fills name/unit (truncated to their caps) and value when it is one. */
bool gt_engage_parse_metric(const char *line, char *name, size_t name_cap, double *value,
                            char *unit, size_t unit_cap);
/* Whether a larger value of a metric with this unit is better: rates ("tok/s", "GB/s") are,
 * times ("ms", "us/step") are not. */
bool gt_engage_metric_higher_better(const char *unit);

typedef struct gt_e2e {
  size_t n_with, n_without;
  double med_with, med_without;
  double q25_with, q75_with, q25_without, q75_without;
  double speedup;      /* > 1: the DB made it faster */
  double speedup_lo;   /* from the quartiles: the least favourable pairing */
  double speedup_hi;   /* the most favourable */
  bool significant;    /* the interval excludes 1 */
} gt_e2e_t;

/* Summarise interleaved samples (with the DB, without). higher_better: the values are rates.
 * speedup = without/with for times, with/without for rates; the interval pairs the quartiles
 * (for times: [q25(without)/q75(with), q75(without)/q25(with)]). GT_ERR_USAGE when a side has
 * no sample. */
gt_status_t gt_engage_e2e(const double *with, size_t n_with, const double *without,
                          size_t n_without, bool higher_better, gt_e2e_t *out);

#ifdef __cplusplus
}
#endif
#endif
