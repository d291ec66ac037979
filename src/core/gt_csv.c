/* The RFC 4180 field splitter (see gt_csv.h). One pass over the line with a write pointer that
 * never overtakes the read pointer, so quoted fields are unquoted where they lie. */
#include "gt_csv.h"

#include <string.h>

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static char *skip_blanks(char *p) {
  while (is_blank(*p)) p++;
  return p;
}

/* Unquote the quoted field that starts at *pp (on its opening '"') into its own bytes. On
 * success *pp is just past the closing quote and *end where the field's NUL goes. */
static bool unquote(char **pp, char **end) {
  char *w = *pp, *p = *pp + 1;
  for (;;) {
    if (!*p) return false;
    if (*p == '"') {
      if (p[1] != '"') break;
      p++; /* "" stands for one quote */
    }
    *w++ = *p++;
  }
  *pp = p + 1;
  *end = w;
  return true;
}

gt_status_t gt_csv_split(char *line, char **field, bool *quoted, int max, int *n, unsigned flags) {
  bool trim = (flags & GT_CSV_TRIM) != 0;
  size_t len = strlen(line);
  if (len && line[len - 1] == '\r') line[--len] = '\0'; /* CRLF: the '\n' is the caller's */
  int count = 0;
  for (char *p = line;;) {
    if (trim) p = skip_blanks(p);
    char *start = p, *end = p;
    bool q = *p == '"';
    if (q) {
      if (!unquote(&p, &end)) {
        *n = count;
        return gt_err_set(GT_ERR_DATA, "column %d: unterminated quoted field", count + 1);
      }
      if (trim) p = skip_blanks(p);
      if (*p && *p != ',') {
        *n = count;
        return gt_err_set(GT_ERR_DATA,
                          "column %d: text after the closing quote ('%.20s'): a quoted field ends "
                          "at its closing quote",
                          count + 1, p);
      }
    } else {
      while (*p && *p != ',') p++;
      end = p;
      if (trim)
        while (end > start && is_blank(end[-1])) end--;
    }
    bool more = *p == ','; /* read before the NUL below, which may land on this comma */
    *end = '\0';
    if (count < max) {
      field[count] = start;
      if (quoted) quoted[count] = q;
    }
    count++;
    if (!more) break;
    p++;
  }
  *n = count;
  return GT_OK;
}
