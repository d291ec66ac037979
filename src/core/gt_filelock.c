/* The directory lock (gt_filelock.h). */
#define _GNU_SOURCE
#include "gt_filelock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "gt_fileio.h"

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

gt_status_t gt_file_lock_dir(const char *path, double timeout_s, int *fd) {
  *fd = -1;
  char dir[PATH_MAX];
  if (!gt_file_dirname(path, dir, sizeof dir))
    return gt_err_set(GT_ERR_IO, "%s: path too long", path);
  int lfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lfd < 0)
    return gt_err_set(GT_ERR_IO, "%s: cannot open its directory %s to lock it: %s", path, dir,
                      strerror(errno));
  /* Polled rather than blocking: a writer that hangs while holding the lock must cost the
   * others a clear message, not their own hang. Writers hold it for milliseconds. */
  double t0 = mono_now(), nap = 0.001;
  while (flock(lfd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    if (e == EINTR) continue;
    if (e != EWOULDBLOCK) {
      close(lfd);
      return gt_err_set(GT_ERR_IO, "%s: cannot lock directory %s: %s", path, dir, strerror(e));
    }
    if (mono_now() - t0 >= timeout_s) {
      close(lfd);
      return gt_err_set(GT_ERR_IO,
                        "%s: another process has held the lock on directory %s for %.0f s; "
                        "nothing written",
                        path, dir, timeout_s);
    }
    sleep_s(nap);
    if (nap < 0.05) nap *= 2;
  }
  *fd = lfd;
  return GT_OK;
}

double gt_file_lock_timeout_s(double default_s) {
  const char *v = getenv("GEMMTUNE_LOCK_TIMEOUT");
  char *end;
  double t = v && *v ? strtod(v, &end) : 0;
  return v && *v && !*end && t > 0 && t < 1e6 ? t : default_s;
}

void gt_file_unlock_dir(int fd) {
  if (fd < 0) return;
  (void)flock(fd, LOCK_UN);
  close(fd);
}

