/* The growable text buffer and the atomic file writer (see gt_fileio.h). */
#define _GNU_SOURCE
#include "gt_fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* ---- paths ---------------------------------------------------------- */

bool gt_file_dirname(const char *path, char *dir, size_t cap) {
  if ((size_t)snprintf(dir, cap, "%s", path) >= cap) return false;
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, cap, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  return true;
}

/* ---- reading ------------------------------------------------------------------------------ */

gt_status_t gt_file_read(const char *path, size_t max_bytes, unsigned flags, char **text,
                         size_t *len) {
  *text = NULL;
  *len = 0;
  const bool regular = flags & GT_FILE_REGULAR_ONLY;
  /* O_NONBLOCK: opening a FIFO with no writer would block forever; O_NOCTTY: a terminal named
   * here must not become the controlling one. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (regular ? O_NONBLOCK : 0));
  if (fd < 0)
    return gt_err_set(errno == ENOENT || errno == ENOTDIR ? GT_ERR_NOT_FOUND : GT_ERR_IO,
                      "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return gt_err_set(GT_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (S_ISDIR(st.st_mode) || (regular && !S_ISREG(st.st_mode))) {
    close(fd);
    return gt_err_set(GT_ERR_IO, "%s: %s", path,
                      S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file (refused)");
  }
  if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > (uint64_t)max_bytes) {
    close(fd);
    return gt_err_set(GT_ERR_DATA, "%s: %lld bytes, larger than the %zu this reader takes", path,
                      (long long)st.st_size, max_bytes);
  }
  if (regular) (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  /* By chunks rather than by the size, so pipes and /dev/stdin work where they are allowed;
   * max_bytes bounds what an endless source (/dev/zero) can cost. */
  size_t cap = 0, n = 0;
  char *buf = NULL;
  for (;;) {
    if (n + 1 >= cap) {
      /* Room for one byte past the limit, so a file of exactly max_bytes reads whole and one
       * byte more is seen as too large. */
      size_t ncap = cap ? 2 * cap : 65536;
      if (ncap > max_bytes + 2) ncap = max_bytes + 2;
      char *nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        close(fd);
        return gt_err_set(GT_ERR_NOMEM, "%s: out of memory reading", path);
      }
      buf = nb;
      cap = ncap;
    }
    ssize_t got = read(fd, buf + n, cap - n - 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int e = errno;
      free(buf);
      close(fd);
      return gt_err_set(GT_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    }
    if (got == 0) break;
    n += (size_t)got;
    if (n > max_bytes) {
      free(buf);
      close(fd);
      return gt_err_set(GT_ERR_DATA, "%s: larger than the %zu bytes this reader takes", path,
                        max_bytes);
    }
  }
  close(fd);
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return GT_OK;
}

/* ---- atomic file write -------------------------------------------------------------------- */

/* Temp files are PATH.tmp.PID.XXXXXX: the pid says whose it is, and the writer holds flock on it
 * until the rename, so a later writer can tell a dead writer's leftover from a live one's. */
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
    if ((size_t)snprintf(tmp, cap, "%s.tmp.%ld.%s", target, (long)getpid(), suffix) >= cap) {
      errno = ENAMETOOLONG;
      return -1;
    }
    /* What mkstemp does, but with mode 0666 so the umask applies to a new file as it would to
     * any file the user creates (mkstemp's 0600 would make a deployed DB unreadable to others). */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) {
      (void)flock(fd, LOCK_EX | LOCK_NB); /* fresh name: nobody else can hold it */
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  errno = EEXIST;
  return -1;
}

/* Remove temp files of path left by writers that died before their rename: the pid in the name
 * is gone and nobody holds the file's lock (a writer in another pid namespace still holds it). */
void gt_file_remove_stale_temps(const char *path) {
  char dir[PATH_MAX];
  if (!gt_file_dirname(path, dir, sizeof dir)) return;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  char prefix[NAME_MAX + 8];
  if ((size_t)snprintf(prefix, sizeof prefix, "%s.tmp.", base) >= sizeof prefix) return;
  size_t pl = strlen(prefix);
  DIR *d = opendir(dir);
  if (!d) return;
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, prefix, pl) != 0) continue;
    char *end;
    errno = 0;
    long pid = strtol(e->d_name + pl, &end, 10);
    if (errno || pid <= 0 || *end != '.' || strlen(end + 1) != 6) continue;
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0)
      (void)unlinkat(dfd, e->d_name, 0);
    close(fd);
  }
  closedir(d);
}

gt_status_t gt_file_write_atomic(const char *path, const char *data, size_t len) {
  if (!path || !*path) return gt_err_set(GT_ERR_USAGE, "no output path given");
  if (strlen(path) >= PATH_MAX) return gt_err_set(GT_ERR_IO, "%s: path too long", path);
  bool have_mode = false;
  mode_t mode = 0;
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode))
      return gt_err_set(GT_ERR_IO,
                        "%s: is a symbolic link; not replaced (write to the file it points at "
                        "by its own name)",
                        path);
    if (!S_ISREG(st.st_mode))
      return gt_err_set(GT_ERR_IO, "%s: exists and is not a regular file", path);
    have_mode = true;
    mode = st.st_mode & 07777;
  }
  gt_file_remove_stale_temps(path);

  char tmp[PATH_MAX + 40];
  int fd = open_temp(tmp, sizeof tmp, path);
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
  /* rename never follows a symlink at its destination: a link planted since the lstat above is
   * replaced itself, its target is left alone. */
  if (!step && rename(tmp, path) != 0) step = "rename", err = errno;
  if (step) unlink(tmp);
  (void)close(fd); /* after the rename: the lock marks the temp file live until then; the data
                      is on disk already (fsync) */
  if (step)
    return gt_err_set(GT_ERR_IO, "%s: not written (%s of %s failed: %s); the file is unchanged",
                      path, step, tmp, strerror(err));

  /* The rename is durable only once the directory entry is. Some filesystems cannot fsync a
   * directory (EINVAL); there is nothing more to do on those. */
  char dir[PATH_MAX];
  gt_file_dirname(path, dir, sizeof dir);
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
