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

/* Write a file atomically: a temp file PATH.tmp.XXXXXX created exclusively in the same directory
 * (so rename cannot cross filesystems), written, fsync'ed, renamed over path, then the directory
 * fsync'ed. A symlink at path is followed (its target is replaced). The file keeps the mode of
 * the file it replaces (new files: 0666 less umask). On any failure the temp file is removed and
 * path is untouched (GT_ERR_IO naming the path and the failing step). */
gt_status_t gt_file_write_atomic(const char *path, const char *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
