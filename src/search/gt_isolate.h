/* Crash isolation: run a function in a forked worker process and watch it from the calling
 * (supervisor) process. On a GPU a candidate that faults leaves a sticky error in the whole CUDA
 * context and one that hangs never returns; run in a worker, either costs only that worker, and
 * the supervisor learns how it ended and what it was doing at the time.
 *
 * The worker talks back through a pipe in framed records, so a message may hold any bytes (a
 * result struct, a text line) and any length up to GT_ISOLATE_MSG_MAX:
 *   - announcements (gt_isolate_announce): "what I am about to do"; the supervisor keeps only
 *     the last one, which is what a crash or a hang is blamed on;
 *   - messages (gt_isolate_send): handed to the supervisor's callback in order.
 * Every record resets the silence clock: a worker that sends nothing for longer than the silence
 * limit is taken to hang and is killed (SIGKILL).
 *
 * The supervisor must not hold state that fork cannot copy safely (an initialised CUDA context):
 * tune and check never initialise CUDA in the supervisor for this reason. */
#ifndef GT_ISOLATE_H
#define GT_ISOLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest message or announcement one record carries. */
#define GT_ISOLATE_MSG_MAX (1u << 20)

/* The worker's end of the pipe. NULL is accepted by the send functions and does nothing, so code
 * that reports progress can run unchanged in-process (no worker). */
typedef struct gt_isolate_chan gt_isolate_chan_t;

/* Runs in the worker; its return value is the worker's exit status (0-255). */
typedef int (*gt_isolate_work_fn)(gt_isolate_chan_t *ch, void *arg);
/* Runs in the supervisor for each message, in the order sent. Returns true when this message
 * was the answer the supervisor waited for: it then stops listening and reaps the worker. */
typedef bool (*gt_isolate_msg_fn)(void *ctx, const void *msg, size_t len);

typedef enum gt_isolate_how {
  GT_ISOLATE_EXITED = 0, /* the worker exited by itself: status is its exit status */
  GT_ISOLATE_SIGNALED,   /* a signal ended it (a crash: SIGSEGV, SIGABRT, ...): signal says which */
  GT_ISOLATE_SILENT,     /* silent for longer than the limit (or it sent what cannot be a
                            record): the supervisor killed it */
  GT_ISOLATE__COUNT
} gt_isolate_how_t;

/* "exited", "crashed", "silent". */
const char *gt_isolate_how_name(gt_isolate_how_t how);

/* How a worker ended. */
typedef struct gt_isolate_end {
  gt_isolate_how_t how;
  int status;       /* exit status (GT_ISOLATE_EXITED), else 0 */
  int signal;       /* the signal (GT_ISOLATE_SIGNALED), else 0 */
  bool answered;    /* the callback returned true for one of its messages */
  char last[256];   /* the last announcement, "" when it announced nothing */
  double elapsed_s; /* from fork to reaping */
} gt_isolate_end_t;

/* Fork, run work(ch, arg) in the child and _exit with its return value; in the parent, deliver
 * the child's messages to on_msg (optional) until it answers, closes the pipe or stays silent for
 * more than silence_s seconds (<= 0: no limit), then reap it: a silent worker is killed, and one
 * that has answered but does not exit within silence_s is killed too (its answer stands). *end
 * says how it ended. Returns GT_OK whenever a worker ran, however it ended; GT_ERR_IO only when
 * none could be started (pipe or fork failed; the message says which). stdio buffers are flushed
 * before the fork so the worker does not repeat the supervisor's pending output. */
gt_status_t gt_isolate_run(gt_isolate_work_fn work, void *arg, double silence_s,
                           gt_isolate_msg_fn on_msg, void *ctx, gt_isolate_end_t *end);

/* Worker side: send one message of len bytes (len <= GT_ISOLATE_MSG_MAX). GT_ERR_IO when the
 * supervisor is gone or len is too large; GT_OK (and nothing sent) when ch is NULL. */
gt_status_t gt_isolate_send(gt_isolate_chan_t *ch, const void *msg, size_t len);
/* Worker side: announce what the worker is about to do (text, truncated to fit end->last); the
 * supervisor blames a crash or hang on the last announcement. Nothing happens when ch is NULL. */
gt_status_t gt_isolate_announce(gt_isolate_chan_t *ch, const char *what);

#ifdef __cplusplus
}
#endif
#endif
