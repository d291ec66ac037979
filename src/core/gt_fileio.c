/* The growable text buffer and the atomic file writer (see gt_fileio.h). */
#define _GNU_SOURCE
#include "gt_fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- growable text buffer ----------------------------------------------------------------- */

void gt_textbuf_vprintf(gt_textbuf_t *b, const char *fmt, va_list ap) {
  if (b->oom) return;
  for (;;) {
    va_list aq;
    va_copy(aq, ap);
    size_t room = b->cap - b->len;
    int w = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, aq);
    va_end(aq);
    if (w < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)w < room) {
      b->len += (size_t)w;
      return;
    }
    size_t ncap = b->cap ? b->cap * 2 : 4096;
    while (ncap < b->len + (size_t)w + 1) ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

void gt_textbuf_printf(gt_textbuf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gt_textbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

void gt_textbuf_free(gt_textbuf_t *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* ---- atomic file write -------------------------------------------------------------------- */

static int open_temp(char *tmp, size_t cap, const char *target) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static _Atomic unsigned long counter;
  for (int attempt = 0; attempt < 100; attempt++) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                 (uint64_t)(++counter * 0x9E3779B97F4A7C15ull);
    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 27; /* splitmix finaliser */
    char suffix[7];
    for (int i = 0; i < 6; i++) suffix[i] = alphabet[(x >> (i * 6)) % (sizeof alphabet - 1)];
    suffix[6] = '\0';
    if ((size_t)snprintf(tmp, cap, "%s.tmp.%s", target, suffix) >= cap) {
      errno = ENAMETOOLONG;
      return -1;
    }
    /* What mkstemp does, but with mode 0666 so the umask applies to a new file as it would to
     * any file the user creates (mkstemp's 0600 would make a deployed DB unreadable to others). */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

gt_status_t gt_file_write_atomic(const char *path, const char *data, size_t len) {
  if (!path || !*path) return gt_err_set(GT_ERR_USAGE, "no output path given");
  /* Replace what a symlink points at, not the link: deployments often link a stable name to a
   * versioned DB. */
  char target[PATH_MAX];
  struct stat st;
  bool linked = lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(path, target);
  if (!linked && (size_t)snprintf(target, sizeof target, "%s", path) >= sizeof target)
    return gt_err_set(GT_ERR_IO, "%s: path too long", path);
  bool have_mode = false;
  mode_t mode = 0;
  if (stat(target, &st) == 0) {
    if (!S_ISREG(st.st_mode))
      return gt_err_set(GT_ERR_IO, "%s: exists and is not a regular file", path);
    have_mode = true;
    mode = st.st_mode & 07777;
  }

  char tmp[PATH_MAX + 16];
  int fd = open_temp(tmp, sizeof tmp, target);
  if (fd < 0)
    return gt_err_set(GT_ERR_IO, "%s: cannot create a temp file next to it: %s", path,
                      strerror(errno));
  const char *step = NULL;
  int err = 0;
  if (have_mode && fchmod(fd, mode) != 0) step = "chmod", err = errno;
  for (size_t off = 0; !step && off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) step = "write", err = w < 0 ? errno : EIO;
    else off += (size_t)w;
  }
  if (!step && fsync(fd) != 0) step = "fsync", err = errno;
  if (close(fd) != 0 && !step) step = "close", err = errno;
  if (!step && rename(tmp, target) != 0) step = "rename", err = errno;
  if (step) {
    unlink(tmp);
    return gt_err_set(GT_ERR_IO, "%s: not written (%s of %s failed: %s); the file is unchanged",
                      path, step, tmp, strerror(err));
  }

  /* The rename is durable only once the directory entry is. Some filesystems cannot fsync a
   * directory (EINVAL); there is nothing more to do on those. */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", target);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    int r = fsync(dfd);
    int e = errno;
    close(dfd);
    if (r != 0 && e != EINVAL && e != ENOTSUP)
      return gt_err_set(GT_ERR_IO, "%s: replaced, but syncing directory %s failed: %s", path, dir,
                        strerror(e));
  }
  return GT_OK;
}
