/* A DB row replayed through the path an application takes (live_replay.c): the runtime engine's
 * dispatch (src/runtime/rt_engine.h, what the preload shim runs on a DB hit) serving the row on
 * the caller's stream, against the unmodified entry point the key was issued through, each
 * captured as one CUDA graph of many calls over rotated operands, each timed in warmed stretches
 * of its own, interleaved.
 * `tune` runs it on each winner before writing its row (the live confirmation, core/gt_live.h)
 * and `check --live` on each row that passes. */
#ifndef GT_LIVE_REPLAY_H
#define GT_LIVE_REPLAY_H

#include "core/gt_db.h"
#include "core/gt_live.h"

/* Replay row on CUDA device `device`, rounds timed replays of each path (0 = 15). The plain side
 * is the row's baseline (the entry point's default: cublasGemmEx with its default algorithm for
 * a GemmEx key, the application's cublasLtMatmul with the heuristic's algorithm, the key's
 * epilogue and bias for an Lt key), rebuilt from its name; the served side is a fresh engine
 * over a DB of this row alone. Operands: A, B, C/D (C is D where the entry point updates in
 * place), the bias vector and fp8 scales the key needs, in sets totalling at least 3x the L2
 * cache.
 *
 * Run it in a worker process, as tune and check do: a candidate that faults poisons the CUDA
 * context. Never fails: out->outcome says how it ended (gt_live_outcome_t) and out->why why
 * not DONE:
 *   SKIPPED  it cannot run here: a host provider's row (no application call reaches it through
 *            the runtime), a grouped_mm row, a build without CUDA, a baseline that cannot be
 *            rebuilt or prepared, the runtime not serving the row (its decision's reason), or a
 *            CUDA failure before the row's candidate ran;
 *   FAILED   the runtime's dispatch failed to run the row's candidate (its first call, its
 *            capture, or a timed replay once it had run). */
void gt_live_replay_row(const gt_db_row_t *row, int device, int rounds, gt_live_result_t *out);

#endif
