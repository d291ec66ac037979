/* One CSV record split into fields, RFC 4180 style: the one splitter every CSV reader of gemmtune
 * (shapes files, the tuned DB, the kernel trace, the shim's counters) goes through, so a quoted
 * cell means the same thing in every file.
 *
 *   plain,"with, comma","say ""hi""",,last      ->  plain | with, comma | say "hi" |  | last
 *
 * A record is one line: the caller splits the text on '\n' first (no writer of gemmtune puts a
 * line break inside a cell). Fields are separated by ','. A field whose first character is '"' is
 * quoted: it runs to the next '"' that is not doubled, "" inside it stands for one '"', and
 * nothing but the separator or the end of the line may follow the closing quote. A '"' anywhere
 * else in a field is an ordinary character (lenient where RFC 4180 is silent in practice, so a
 * strict reader still sees the quote and can name it). One CR at the end of the line is dropped.
 *
 * Fields are unquoted in place: each points into the caller's line, NUL-terminated, and nothing is
 * allocated. What a cell may contain beyond that (a comma, a quote, surrounding blanks) is each
 * reader's own rule: the DB reader, for one, refuses quoted cells because its writer never
 * quotes. */
#ifndef GT_CSV_H
#define GT_CSV_H

#include <stdbool.h>

#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of gt_csv_split. */
enum {
  /* Drop spaces and tabs around each field (outside its quotes): hand-written files write
   * "a, b". Blanks inside quotes are kept. Without it blanks are part of the field. */
  GT_CSV_TRIM = 1u << 0,
};

/* Split line (NUL-terminated, no '\n'; modified in place) into fields.
 * field: room for max pointers; field[i] is set for i < min(*n, max). quoted (may be NULL): room
 * for max flags; quoted[i] says whether field i was written in quotes. *n: the number of fields
 * in the record, counted past max (fields beyond max are checked but not stored), so a reader
 * can say "39 columns, expected 38". An empty line is one empty field; a trailing ',' ends the
 * record with an empty field.
 * Returns GT_OK, or GT_ERR_DATA for a quoted field with no closing quote ("column C: unterminated
 * quoted field") or with text after its closing quote ("column C: text after the closing quote
 * ..."); C is 1-based, *n is then the number of fields before the faulty one (C - 1), and line is
 * left partly unquoted. The message has no file:line: callers prefix their own. */
gt_status_t gt_csv_split(char *line, char **field, bool *quoted, int max, int *n, unsigned flags);

#ifdef __cplusplus
}
#endif
#endif
