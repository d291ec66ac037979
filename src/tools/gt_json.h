/* A small JSON reader for the records gemmtune itself writes (verify --json), read back by
 * `gemmtune report`. A whole document becomes a tree of values; strings are UTF-8 as written,
 * with \uXXXX escapes decoded. Not a general-purpose parser: numbers are doubles, objects keep
 * their keys in order, depth is limited to 64. */
#ifndef GT_JSON_H
#define GT_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum gt_json_type {
  GT_JSON_NULL = 0,
  GT_JSON_BOOL,
  GT_JSON_NUM,
  GT_JSON_STR,
  GT_JSON_ARR,
  GT_JSON_OBJ
} gt_json_type_t;

typedef struct gt_json {
  gt_json_type_t type;
  bool b;
  double num;
  char *str;              /* GT_JSON_STR */
  struct gt_json *items;  /* GT_JSON_ARR elements, GT_JSON_OBJ values */
  char **keys;            /* GT_JSON_OBJ keys, parallel to items */
  size_t n;
} gt_json_t;

/* Parse text (NUL-terminated) into *out. Returns false with a message naming the byte offset in
 * err on malformed input; *out is then empty. Free with gt_json_free either way. */
bool gt_json_parse(const char *text, gt_json_t *out, char *err, size_t cap);
void gt_json_free(gt_json_t *v);

/* The member `key` of an object, NULL when v is not an object or has no such member. */
const gt_json_t *gt_json_get(const gt_json_t *v, const char *key);
/* v's number (dflt when v is NULL or not a number), string ("" when not a string), truth. */
double gt_json_num(const gt_json_t *v, double dflt);
const char *gt_json_str(const gt_json_t *v);
bool gt_json_true(const gt_json_t *v);

#endif
