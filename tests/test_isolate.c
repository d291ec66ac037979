/* Crash isolation (search/gt_isolate): a worker that exits is reported with its exit status, one
 * that crashes with its signal and its last announcement, one that goes silent is killed after the
 * silence limit (and blamed on what it announced), and one that streams messages has them
 * delivered whole and in order, a large one included, and is not killed while it keeps talking
 * even when the whole run outlasts the limit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "search/gt_isolate.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define N_STREAMED 40
#define BIG_LEN (200 * 1000) /* well over a pipe's atomic write and its buffer */

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* ---- workers -------------------------------------------------------------------------------- */

static int work_exit7(gt_isolate_chan_t *ch, void *arg) {
  gt_isolate_announce(ch, "about to exit");
  return 7;
}

static int work_crash(gt_isolate_chan_t *ch, void *arg) {
  gt_isolate_announce(ch, "first step");
  gt_isolate_announce(ch, "candidate crashy");
  /* cmocka's own SIGSEGV handler, inherited through fork, would turn the crash into a failed
   * test inside the worker: the worker must die of it as a real candidate would. */
  signal(SIGSEGV, SIG_DFL);
  volatile int *null = NULL;
  *null = 1;
  return 0;
}

static int work_silent(gt_isolate_chan_t *ch, void *arg) {
  gt_isolate_announce(ch, "candidate sleepy");
  sleep_s(30);
  return 0;
}

/* Messages 0..N-1 (message 20 is BIG_LEN bytes of a pattern), 50 ms apart (2 s in all, twice
 * the 1 s silence limit), then the answer "done". */
static int work_stream(gt_isolate_chan_t *ch, void *arg) {
  static char big[BIG_LEN];
  for (int i = 0; i < N_STREAMED; i++) {
    char b[32];
    int n = snprintf(b, sizeof b, "msg %d", i);
    if (i == 20) {
      for (size_t j = 0; j < sizeof big; j++) big[j] = (char)('a' + j % 26);
      if (gt_isolate_send(ch, big, sizeof big) != GT_OK) return 2;
    } else if (gt_isolate_send(ch, b, (size_t)n) != GT_OK) {
      return 2;
    }
    if (i % 10 == 0) gt_isolate_announce(ch, b);
    sleep_s(0.05);
  }
  return gt_isolate_send(ch, "done", 4) == GT_OK ? 0 : 2;
}

/* Answers, then lingers: the supervisor must not wait for it past the silence limit. */
static int work_answer_then_linger(gt_isolate_chan_t *ch, void *arg) {
  gt_isolate_send(ch, "done", 4);
  sleep_s(30);
  return 0;
}

/* ---- the supervisor's side ------------------------------------------------------------------ */

typedef struct seen {
  int n;          /* messages seen */
  bool in_order;  /* each was the one expected next */
  bool big_ok;    /* the large message arrived whole */
} seen_t;

static bool on_msg(void *ctx, const void *msg, size_t len) {
  seen_t *s = ctx;
  if (len == 4 && memcmp(msg, "done", 4) == 0) return true;
  if (s->n == 20) {
    bool ok = len == BIG_LEN;
    for (size_t j = 0; ok && j < len; j++) ok = ((const char *)msg)[j] == (char)('a' + j % 26);
    s->big_ok = ok;
  } else {
    char want[32];
    int n = snprintf(want, sizeof want, "msg %d", s->n);
    if (len != (size_t)n || memcmp(msg, want, len) != 0) s->in_order = false;
  }
  s->n++;
  return false;
}

typedef struct isolate_case {
  const char *name;
  gt_isolate_work_fn work;
  double silence_s;
  gt_isolate_how_t how;
  int status, signal; /* expected for EXITED / SIGNALED */
  bool answered;
  const char *last;   /* the last announcement */
  double max_s;       /* it must be over within this long */
} isolate_case_t;

static const isolate_case_t k_cases[] = {
    {"exit_reports_status", work_exit7, 5, GT_ISOLATE_EXITED, 7, 0, false, "about to exit", 5},
    {"crash_reports_signal_and_last_announcement", work_crash, 5, GT_ISOLATE_SIGNALED, 0, SIGSEGV,
     false, "candidate crashy", 5},
    {"silent_worker_is_killed_after_the_limit", work_silent, 0.5, GT_ISOLATE_SILENT, 0, 0, false,
     "candidate sleepy", 5},
    {"streamed_messages_arrive_whole_and_in_order", work_stream, 1.0, GT_ISOLATE_EXITED, 0, 0,
     true, "msg 30", 20},
    {"answered_worker_that_lingers_is_killed", work_answer_then_linger, 0.5, GT_ISOLATE_SILENT, 0,
     0, true, "", 5},
};

static void test_case(void **state) {
  const isolate_case_t *c = *state;
  seen_t seen = {0, true, false};
  gt_isolate_end_t end;
  assert_int_equal(gt_isolate_run(c->work, NULL, c->silence_s, on_msg, &seen, &end), GT_OK);
  if (end.how != c->how)
    print_error("%s: ended %s (status %d, signal %d), expected %s\n", c->name,
                gt_isolate_how_name(end.how), end.status, end.signal, gt_isolate_how_name(c->how));
  assert_int_equal(end.how, c->how);
  assert_int_equal(end.status, c->status);
  assert_int_equal(end.signal, c->signal);
  assert_int_equal(end.answered, c->answered);
  assert_string_equal(end.last, c->last);
  assert_true(end.elapsed_s < c->max_s);
  if (c->how == GT_ISOLATE_SILENT) assert_true(end.elapsed_s >= c->silence_s);
  if (c->work == work_stream) {
    assert_int_equal(seen.n, N_STREAMED);
    assert_true(seen.in_order);
    assert_true(seen.big_ok);
    assert_true(end.elapsed_s > c->silence_s); /* it outlasted the limit by talking */
  }
}

/* Sends on a NULL channel do nothing, so progress code runs unchanged in-process. */
static void test_null_channel_is_a_no_op(void **state) {
  assert_int_equal(gt_isolate_send(NULL, "x", 1), GT_OK);
  assert_int_equal(gt_isolate_announce(NULL, "x"), GT_OK);
}

static void test_how_names(void **state) {
  assert_string_equal(gt_isolate_how_name(GT_ISOLATE_EXITED), "exited");
  assert_string_equal(gt_isolate_how_name(GT_ISOLATE_SIGNALED), "crashed");
  assert_string_equal(gt_isolate_how_name(GT_ISOLATE_SILENT), "silent");
  assert_string_equal(gt_isolate_how_name(GT_ISOLATE__COUNT), "?");
}

int main(void) {
  struct CMUnitTest t[16];
  size_t n = 0;
  for (size_t i = 0; i < NELEM(k_cases); i++)
    t[n++] = (struct CMUnitTest){k_cases[i].name, test_case, NULL, NULL, (void *)&k_cases[i]};
  t[n++] = (struct CMUnitTest){"null_channel_is_a_no_op", test_null_channel_is_a_no_op, NULL, NULL, NULL};
  t[n++] = (struct CMUnitTest){"how_names", test_how_names, NULL, NULL, NULL};
  return _cmocka_run_group_tests("isolate", t, n, NULL, NULL);
}
