/* Writing a text file that others read while it is replaced: the text is built in a growable
 * buffer, then put on disk atomically, so a reader (the preload shim loading a DB, `tune`
 * resuming from a shapes or stats file) sees the old file or the new one, never a torn one.
 * Used by the DB writer and by the runtime's capture and stats writers. */
#ifndef GT_FILEIO_H
#define GT_FILEIO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A growable NUL-terminated text buffer; `gt_textbuf_t b = {0};` is an empty one. An allocation
 * failure is sticky (oom) and later appends do nothing, so a writer checks once at the end
 * instead of after every append. p is NULL until the first append. */
typedef struct gt_textbuf {
  char *p;
  size_t len, cap;
  bool oom;
} gt_textbuf_t;

/* Append printf-formatted text. */
void gt_textbuf_printf(gt_textbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gt_textbuf_vprintf(gt_textbuf_t *b, const char *fmt, va_list ap);
/* Release the text and leave b empty. */
void gt_textbuf_free(gt_textbuf_t *b);

/* Write a file atomically: a temp file PATH.tmp.PID.XXXXXX created exclusively (O_EXCL,
 * O_NOFOLLOW) in the same directory (so rename cannot cross filesystems) and locked while it is
 * written, fsync'ed, renamed over path, then the directory fsync'ed. A symlink at path is refused
 * (GT_ERR_IO, nothing written): replacing the file a link points at is writing a file the caller
 * did not name, and a planted link would aim the write anywhere; write to the link's target
 * directly when that is meant. Anything else that is not a regular file is refused too. The file
 * keeps the mode of the file it replaces (new files: 0666 less umask). Temp files of writers that
 * died before their rename (kill -9) are removed on the way. On any failure the temp file is
 * removed and path is untouched (GT_ERR_IO naming the path and the failing step). */
gt_status_t gt_file_write_atomic(const char *path, const char *data, size_t len);

/* Remove the temp files gt_file_write_atomic left next to path in processes that died before
 * their rename (the pid in the name no longer runs and nobody holds the file's lock). Writers
 * call it before each write; a run that resumes after a kill calls it too. */
void gt_file_remove_stale_temps(const char *path);

/* How gt_file_read opens a file. */
enum {
  /* Refuse anything but a regular file (FIFO, device, directory, socket), opened non-blocking
   * so that a FIFO cannot stall the caller. What code inside a host process reads with. */
  GT_FILE_REGULAR_ONLY = 1u
};
/* Bytes the readers inside a host process (the shim's DB, capture and stats files) take at
 * most, and the CLI readers of DBs and shapes files. */
#define GT_FILE_MAX_HOST ((size_t)64 << 20)
#define GT_FILE_MAX_CLI ((size_t)1 << 30)

/* Read a whole file into a malloc'ed, NUL-terminated buffer (*len excludes the NUL; the text may
 * hold NUL bytes, which the parsers reject). A file larger than max_bytes is refused without
 * being read past the limit. A missing file (or a missing directory on the way) is
 * GT_ERR_NOT_FOUND (exit 66, "missing input"); another open or read failure GT_ERR_IO; a
 * directory, or with GT_FILE_REGULAR_ONLY any non-regular file, GT_ERR_IO; too large GT_ERR_DATA.
 * Messages start with the path. */
gt_status_t gt_file_read(const char *path, size_t max_bytes, unsigned flags, char **text,
                         size_t *len);

/* The directory part of path ("." when it has none), into dir. False when it does not fit. */
bool gt_file_dirname(const char *path, char *dir, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
