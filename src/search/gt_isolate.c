/* Crash isolation (see gt_isolate.h): the worker's records, the supervisor's watch loop, and how
 * the worker ended. */
#define _GNU_SOURCE
#include "gt_isolate.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A record on the pipe: this header, then len bytes. */
enum { REC_MESSAGE = 1, REC_ANNOUNCE = 2 };
typedef struct rec_header {
  uint32_t kind, len;
} rec_header_t;

struct gt_isolate_chan {
  int fd;
};

static const char *const k_how[GT_ISOLATE__COUNT] = {
    [GT_ISOLATE_EXITED] = "exited", [GT_ISOLATE_SIGNALED] = "crashed",
    [GT_ISOLATE_SILENT] = "silent"};

const char *gt_isolate_how_name(gt_isolate_how_t how) {
  return (unsigned)how < GT_ISOLATE__COUNT ? k_how[how] : "?";
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- worker side -------------------------------------------------------------------------- */

static bool write_all(int fd, const void *p, size_t n) {
  const char *s = p;
  while (n) {
    ssize_t w = write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    s += w, n -= (size_t)w;
  }
  return true;
}

static gt_status_t send_record(gt_isolate_chan_t *ch, uint32_t kind, const void *msg,
                               size_t len) {
  if (!ch) return GT_OK;
  if (len > GT_ISOLATE_MSG_MAX)
    return gt_err_set(GT_ERR_IO, "isolate: a message of %zu bytes is over the %u-byte limit", len,
                      GT_ISOLATE_MSG_MAX);
  rec_header_t h = {kind, (uint32_t)len};
  /* Header and body go out in one write when they fit in the pipe's atomic size, so the records
   * of a worker's threads never interleave mid-record. */
  char small[4096];
  if (sizeof h + len <= sizeof small) {
    memcpy(small, &h, sizeof h);
    if (len) memcpy(small + sizeof h, msg, len);
    if (!write_all(ch->fd, small, sizeof h + len))
      return gt_err_set(GT_ERR_IO, "isolate: the supervisor is gone: %s", strerror(errno));
    return GT_OK;
  }
  if (!write_all(ch->fd, &h, sizeof h) || !write_all(ch->fd, msg, len))
    return gt_err_set(GT_ERR_IO, "isolate: the supervisor is gone: %s", strerror(errno));
  return GT_OK;
}

gt_status_t gt_isolate_send(gt_isolate_chan_t *ch, const void *msg, size_t len) {
  return send_record(ch, REC_MESSAGE, msg, len);
}

gt_status_t gt_isolate_announce(gt_isolate_chan_t *ch, const char *what) {
  size_t n = strlen(what);
  if (n >= sizeof ((gt_isolate_end_t *)0)->last) n = sizeof ((gt_isolate_end_t *)0)->last - 1;
  return send_record(ch, REC_ANNOUNCE, what, n);
}

static _Noreturn void worker_main(int fd, gt_isolate_work_fn work, void *arg) {
  /* A supervisor that stopped listening must turn sends into errors, not kill the worker. */
  signal(SIGPIPE, SIG_IGN);
  gt_isolate_chan_t ch = {fd};
  int rc = work(&ch, arg);
  fflush(NULL);
  close(fd);
  /* _exit: the worker shares the supervisor's atexit handlers and stdio state, which are the
   * supervisor's to run, not the worker's. */
  _exit(rc & 0xff);
}

/* ---- supervisor side ---------------------------------------------------------------------- */

typedef struct watch {
  int fd;
  double silence_s;
  gt_isolate_msg_fn on_msg;
  void *ctx;
  gt_isolate_end_t *end;
  char *buf; /* bytes read and not yet delivered */
  size_t len, cap;
} watch_t;

/* Deliver every complete record in w->buf. Returns 1 when the answer came, -1 on a record that
 * cannot be (a corrupt header), 0 otherwise. */
static int deliver(watch_t *w) {
  size_t at = 0;
  int rc = 0;
  while (rc == 0 && w->len - at >= sizeof(rec_header_t)) {
    rec_header_t h;
    memcpy(&h, w->buf + at, sizeof h);
    if ((h.kind != REC_MESSAGE && h.kind != REC_ANNOUNCE) || h.len > GT_ISOLATE_MSG_MAX) {
      rc = -1;
      break;
    }
    if (w->len - at - sizeof h < h.len) break; /* the rest has not arrived yet */
    const char *body = w->buf + at + sizeof h;
    if (h.kind == REC_ANNOUNCE) {
      size_t n = h.len < sizeof w->end->last ? h.len : sizeof w->end->last - 1;
      memcpy(w->end->last, body, n);
      w->end->last[n] = '\0';
    } else if (w->on_msg && w->on_msg(w->ctx, body, h.len)) {
      w->end->answered = true;
      rc = 1;
    }
    at += sizeof h + h.len;
  }
  memmove(w->buf, w->buf + at, w->len - at);
  w->len -= at;
  return rc;
}

/* Read records until the answer, end of file, silence or a corrupt record. Returns true when the
 * worker must be killed: it stayed silent past the limit, or what it sent cannot be a record (a
 * worker that scribbled over its own pipe is as lost as a silent one). */
static bool watch_worker(watch_t *w) {
  double last = now_s();
  for (;;) {
    int wait_ms = -1;
    if (w->silence_s > 0) {
      double left = w->silence_s - (now_s() - last);
      if (left <= 0) return true;
      wait_ms = left < 60 ? (int)(left * 1000) + 1 : 60000;
    }
    struct pollfd p = {w->fd, POLLIN, 0};
    int pr = poll(&p, 1, wait_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) return true;
    if (pr == 0) continue; /* the deadline is checked at the top */
    if (w->cap - w->len < 65536) {
      size_t cap = w->cap ? w->cap * 2 : 65536 + sizeof(rec_header_t);
      char *nb = realloc(w->buf, cap);
      if (!nb) return true;
      w->buf = nb, w->cap = cap;
    }
    ssize_t n = read(w->fd, w->buf + w->len, w->cap - w->len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false; /* end of file: the worker exited (or closed its end) */
    last = now_s();
    w->len += (size_t)n;
    int d = deliver(w);
    if (d > 0) return false;
    if (d < 0) return true;
  }
}

/* Wait up to limit_s (<= 0: for ever) for pid to exit; kill it when it does not. Returns whether
 * it had to be killed. */
static bool reap(pid_t pid, double limit_s, int *st) {
  double t0 = now_s();
  for (;;) {
    pid_t r = waitpid(pid, st, limit_s > 0 ? WNOHANG : 0);
    if (r == pid) return false;
    if (r < 0 && errno != EINTR) return false;
    if (limit_s > 0 && now_s() - t0 > limit_s) {
      kill(pid, SIGKILL);
      while (waitpid(pid, st, 0) < 0 && errno == EINTR) {
      }
      return true;
    }
    if (r == 0) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
}

gt_status_t gt_isolate_run(gt_isolate_work_fn work, void *arg, double silence_s,
                           gt_isolate_msg_fn on_msg, void *ctx, gt_isolate_end_t *end) {
  memset(end, 0, sizeof *end);
  int pfd[2];
  if (pipe(pfd)) return gt_err_set(GT_ERR_IO, "pipe: %s", strerror(errno));
  fflush(NULL);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(pfd[0]);
    close(pfd[1]);
    return gt_err_set(GT_ERR_IO, "fork: %s", strerror(e));
  }
  if (pid == 0) {
    close(pfd[0]);
    worker_main(pfd[1], work, arg);
  }
  close(pfd[1]);
  watch_t w = {pfd[0], silence_s, on_msg, ctx, end, NULL, 0, 0};
  bool silent = watch_worker(&w);
  free(w.buf);
  /* Closed before reaping: a worker still writing after its answer gets EPIPE, not a full pipe
   * to block on. */
  close(pfd[0]);
  int st = 0;
  if (silent) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  } else {
    /* After its answer a worker only has to exit; one that lingers is killed, and the answer
     * stands. After end of file it has exited or is about to. */
    silent = reap(pid, end->answered ? silence_s : 0, &st);
  }
  end->elapsed_s = now_s() - t0;
  if (silent) end->how = GT_ISOLATE_SILENT;
  else if (WIFSIGNALED(st)) end->how = GT_ISOLATE_SIGNALED, end->signal = WTERMSIG(st);
  else end->how = GT_ISOLATE_EXITED, end->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return GT_OK;
}
