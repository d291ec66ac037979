/* The read floor of a GEMM key (bench/read_floor.cu): kernels that only move the bytes the key's
 * GEMM must move, loaded by name into a bench of the CUDA harness and timed like any candidate,
 * never gated (they compute nothing) and never raced by the search. kernels_bench --floor times
 * every design on every row and keeps the fastest as the row's measured floor. */
#ifndef GT_BENCH_READ_FLOOR_H
#define GT_BENCH_READ_FLOOR_H

#include <stddef.h>

#include "core/gt_problem.h"
#include "providers/gt_provider.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bytes the floor moves for problem p: the operands' spans (A, B; C only when beta != 0),
 * the bias vector of a biased key (D's type, bf16 for an fp8 D, as cuBLASLt takes it), D. */
typedef struct gt_read_floor_bytes {
  size_t a, b, c, bias, d;
} gt_read_floor_bytes_t;
gt_read_floor_bytes_t gt_read_floor_bytes(const gt_problem_t *p);

/* The designs, by index: names the provider's from_name takes. */
int gt_read_floor_count(void);
const char *gt_read_floor_name(int i);

extern const gt_provider_t gt_read_floor_provider;

#ifdef __cplusplus
}
#endif
#endif
