/* Status names, exit-code mapping and the thread-local last-error message. */
#include "gt_status.h"

#include <stdio.h>

static _Thread_local char g_msg[1024];

static const struct {
  const char *name, *str;
  int exit_code; /* sysexits.h values, spelled out so the table reads on any libc */
} k_status[] = {
    [GT_OK] = {"GT_OK", "ok", 0},
    [GT_ERR_USAGE] = {"GT_ERR_USAGE", "usage error", 64},              /* EX_USAGE */
    [GT_ERR_DATA] = {"GT_ERR_DATA", "malformed input", 65},            /* EX_DATAERR */
    [GT_ERR_IO] = {"GT_ERR_IO", "i/o error", 74},                      /* EX_IOERR */
    [GT_ERR_NOMEM] = {"GT_ERR_NOMEM", "out of memory", 71},            /* EX_OSERR */
    [GT_ERR_UNSUPPORTED] = {"GT_ERR_UNSUPPORTED", "unsupported", 69},  /* EX_UNAVAILABLE */
    [GT_ERR_NOT_FOUND] = {"GT_ERR_NOT_FOUND", "not found", 66},        /* EX_NOINPUT */
    [GT_ERR_DEVICE] = {"GT_ERR_DEVICE", "device error", 69},           /* EX_UNAVAILABLE */
    [GT_ERR_LIBRARY] = {"GT_ERR_LIBRARY", "library error", 69},        /* EX_UNAVAILABLE */
    [GT_ERR_GATE] = {"GT_ERR_GATE", "failed the correctness gate", 1},
    [GT_ERR_TIMEOUT] = {"GT_ERR_TIMEOUT", "timed out", 75},            /* EX_TEMPFAIL */
    [GT_ERR_CONFLICT] = {"GT_ERR_CONFLICT", "conflicting facts", 65},  /* EX_DATAERR */
    [GT_ERR_INTERNAL] = {"GT_ERR_INTERNAL", "internal error", 70},     /* EX_SOFTWARE */
};

static int valid(gt_status_t s) {
  return (int)s >= 0 && (size_t)s < sizeof k_status / sizeof k_status[0];
}

const char *gt_status_name(gt_status_t s) { return valid(s) ? k_status[s].name : "GT_ERR_?"; }
const char *gt_status_str(gt_status_t s) { return valid(s) ? k_status[s].str : "unknown status"; }
int gt_status_exit_code(gt_status_t s) { return valid(s) ? k_status[s].exit_code : 70; }

gt_status_t gt_err_vset(gt_status_t s, const char *fmt, va_list ap) {
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  return s;
}

gt_status_t gt_err_set(gt_status_t s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gt_err_vset(s, fmt, ap);
  va_end(ap);
  return s;
}

const char *gt_err_msg(void) { return g_msg; }
void gt_err_clear(void) { g_msg[0] = '\0'; }
