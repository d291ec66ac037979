/* Loading a colon-separated list of tuned DBs into one, one warning per bad file (preload_db.h). */
#include "preload_db.h"

#include "core/gt_fileio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A warning must stay one line even when a parser message quotes a broken row. */
static void warn_line(gt_rt_warn_fn warn, void *ctx, const char *fmt, const char *a,
                      const char *b) {
  if (!warn) return;
  char line[1024];
  snprintf(line, sizeof line, fmt, a, b);
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  warn(ctx, line);
}

/* Take one file's rows. A key already present came from an earlier file and wins. */
static gt_status_t take_rows(gt_db_t *db, const gt_db_t *file, gt_rt_db_load_report_t *rep) {
  for (size_t i = 0; i < file->n; i++) {
    if (gt_db_lookup(db, &file->rows[i].key)) {
      rep->rows_shadowed++;
      continue;
    }
    gt_status_t s = gt_db_put(db, &file->rows[i]);
    if (s != GT_OK) return s;
  }
  return GT_OK;
}

gt_status_t gt_rt_db_load_list(const char *paths, gt_db_t *db, gt_rt_warn_fn warn, void *ctx,
                               gt_rt_db_load_report_t *rep) {
  gt_rt_db_load_report_t local;
  if (!rep) rep = &local;
  memset(rep, 0, sizeof *rep);
  gt_status_t first = GT_OK;
  char first_msg[1024] = "";
  if (!paths) paths = "";
  const char *p = paths;
  while (*p) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0) {
      char *path = strndup(p, len);
      gt_status_t s;
      char msg[1024];
      if (!path) {
        s = gt_err_set(GT_ERR_NOMEM, "out of memory");
        snprintf(msg, sizeof msg, "%s", gt_err_msg());
        warn_line(warn, ctx, "tuned DB list: %s%s", msg, "");
      } else {
        gt_db_t file;
        gt_db_init(&file);
        /* Inside a host process: a regular file of bounded size only, opened non-blocking, so a
         * FIFO, /dev/zero or a huge file named by mistake costs one warning, not a hang or
         * gigabytes of the application's memory. */
        char *text = NULL;
        size_t len = 0;
        s = gt_file_read(path, GT_FILE_MAX_HOST, GT_FILE_REGULAR_ONLY, &text, &len);
        if (s == GT_OK) s = gt_db_parse_buf(path, text, len, &file);
        free(text);
        if (s == GT_OK) {
          /* Stage into a copy so a failure part-way leaves db as it was (the file is skipped
           * whole, never half-taken). */
          gt_db_t staged;
          gt_db_init(&staged);
          for (size_t i = 0; s == GT_OK && i < db->n; i++) s = gt_db_put(&staged, &db->rows[i]);
          gt_rt_db_load_report_t r2 = *rep;
          if (s == GT_OK) s = take_rows(&staged, &file, &r2);
          if (s == GT_OK) {
            gt_db_t old = *db;
            /* Validators of db are kept: the merged DB describes the first files read. */
            staged.validators = old.validators;
            staged.nval = old.nval;
            staged.capval = old.capval;
            old.validators = NULL;
            old.nval = old.capval = 0;
            snprintf(staged.path, sizeof staged.path, "%s", old.path);
            gt_db_free(&old);
            *db = staged;
            *rep = r2;
          } else {
            gt_db_free(&staged);
          }
          gt_db_free(&file);
        }
        if (s != GT_OK) {
          snprintf(msg, sizeof msg, "%s", gt_err_msg());
          /* gt_db_read's messages already start with the path; others get it prepended. */
          if (strncmp(msg, path, strlen(path)) == 0)
            warn_line(warn, ctx, "tuned DB skipped: %s%s", msg, "");
          else
            warn_line(warn, ctx, "tuned DB skipped: %s: %s", path, msg);
        }
        free(path);
      }
      if (s == GT_OK) {
        rep->files_ok++;
      } else {
        rep->files_bad++;
        if (first == GT_OK) {
          first = s;
          snprintf(first_msg, sizeof first_msg, "%s", gt_err_msg());
        }
      }
    }
    if (!end) break;
    p = end + 1;
  }
  rep->rows = db->n;
  if (first != GT_OK) return gt_err_set(first, "%s", first_msg);
  return GT_OK;
}
