/* A small JSON reader (gt_json.h): recursive descent over the text, one value at a time. */
#define _GNU_SOURCE
#include "gt_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
  const char *s, *p;
  char *err;
  size_t cap;
  bool failed;
} reader_t;

static bool fail(reader_t *r, const char *what) {
  if (!r->failed) snprintf(r->err, r->cap, "JSON: %s at byte %zu", what, (size_t)(r->p - r->s));
  r->failed = true;
  return false;
}

static void skip_ws(reader_t *r) {
  while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r') r->p++;
}

/* Append the UTF-8 form of code point c. */
static size_t put_utf8(char *o, unsigned c) {
  if (c < 0x80) return o[0] = (char)c, 1;
  if (c < 0x800) return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3F)), 2;
  o[0] = (char)(0xE0 | c >> 12);
  o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
  o[2] = (char)(0x80 | (c & 0x3F));
  return 3;
}

static bool parse_string(reader_t *r, char **out) {
  if (*r->p != '"') return fail(r, "expected a string");
  const char *start = ++r->p;
  size_t cap = 16;
  for (const char *q = start; *q && *q != '"'; q++) cap++;
  char *o = malloc(cap * 3), *w = o; /* an escape never grows past 3 bytes per input byte */
  if (!o) return fail(r, "out of memory");
  while (*r->p && *r->p != '"') {
    char c = *r->p++;
    if ((unsigned char)c < 0x20) return free(o), fail(r, "control character in a string");
    if (c != '\\') {
      *w++ = c;
      continue;
    }
    char e = *r->p++;
    switch (e) {
      case '"': case '\\': case '/': *w++ = e; break;
      case 'b': *w++ = '\b'; break;
      case 'f': *w++ = '\f'; break;
      case 'n': *w++ = '\n'; break;
      case 'r': *w++ = '\r'; break;
      case 't': *w++ = '\t'; break;
      case 'u': {
        unsigned v = 0;
        for (int i = 0; i < 4; i++, r->p++) {
          char h = *r->p;
          v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0'
                                  : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                  : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99);
          if (v > 0xFFFF) return free(o), fail(r, "bad \\u escape");
        }
        w += put_utf8(w, v);
        break;
      }
      default: return free(o), fail(r, "bad escape");
    }
  }
  if (*r->p != '"') return free(o), fail(r, "unterminated string");
  r->p++;
  *w = '\0';
  *out = o;
  return true;
}

static bool parse_value(reader_t *r, gt_json_t *v, int depth);

/* Grow v's arrays to hold one more item (and key, for objects). */
static gt_json_t *push(reader_t *r, gt_json_t *v, size_t *cap) {
  if (v->n == *cap) {
    *cap = *cap ? *cap * 2 : 8;
    gt_json_t *ni = realloc(v->items, *cap * sizeof *ni);
    if (!ni) return fail(r, "out of memory"), NULL;
    v->items = ni;
    if (v->type == GT_JSON_OBJ) {
      char **nk = realloc(v->keys, *cap * sizeof *nk);
      if (!nk) return fail(r, "out of memory"), NULL;
      v->keys = nk;
    }
  }
  gt_json_t *it = &v->items[v->n];
  memset(it, 0, sizeof *it);
  if (v->type == GT_JSON_OBJ) v->keys[v->n] = NULL;
  v->n++;
  return it;
}

static bool parse_container(reader_t *r, gt_json_t *v, int depth) {
  bool obj = *r->p == '{';
  char close = obj ? '}' : ']';
  v->type = obj ? GT_JSON_OBJ : GT_JSON_ARR;
  r->p++;
  skip_ws(r);
  if (*r->p == close) return r->p++, true;
  size_t cap = 0;
  for (;;) {
    skip_ws(r);
    char *key = NULL;
    if (obj) {
      if (!parse_string(r, &key)) return false;
      skip_ws(r);
      if (*r->p != ':') return free(key), fail(r, "expected ':'");
      r->p++;
    }
    gt_json_t *it = push(r, v, &cap);
    if (!it) return free(key), false;
    if (obj) v->keys[v->n - 1] = key;
    if (!parse_value(r, it, depth + 1)) return false;
    skip_ws(r);
    if (*r->p == ',') {
      r->p++;
      continue;
    }
    if (*r->p == close) return r->p++, true;
    return fail(r, obj ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static bool parse_value(reader_t *r, gt_json_t *v, int depth) {
  memset(v, 0, sizeof *v);
  if (depth > 64) return fail(r, "nested too deeply");
  skip_ws(r);
  char c = *r->p;
  if (c == '{' || c == '[') return parse_container(r, v, depth);
  if (c == '"') return v->type = GT_JSON_STR, parse_string(r, &v->str);
  static const struct { const char *word; gt_json_type_t t; bool b; } k_words[] = {
      {"true", GT_JSON_BOOL, true}, {"false", GT_JSON_BOOL, false}, {"null", GT_JSON_NULL, false}};
  for (size_t i = 0; i < 3; i++)
    if (strncmp(r->p, k_words[i].word, strlen(k_words[i].word)) == 0) {
      r->p += strlen(k_words[i].word);
      v->type = k_words[i].t;
      v->b = k_words[i].b;
      return true;
    }
  char *end;
  v->num = strtod(r->p, &end);
  if (end == r->p || !(c == '-' || (c >= '0' && c <= '9'))) return fail(r, "unexpected character");
  r->p = end;
  v->type = GT_JSON_NUM;
  return true;
}

bool gt_json_parse(const char *text, gt_json_t *out, char *err, size_t cap) {
  reader_t r = {text, text, err, cap, false};
  if (cap) err[0] = '\0';
  bool ok = parse_value(&r, out, 0);
  if (ok) {
    skip_ws(&r);
    if (*r.p) ok = fail(&r, "text after the value");
  }
  if (!ok) {
    gt_json_free(out);
    memset(out, 0, sizeof *out);
  }
  return ok;
}

void gt_json_free(gt_json_t *v) {
  if (!v) return;
  for (size_t i = 0; i < v->n; i++) {
    gt_json_free(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

const gt_json_t *gt_json_get(const gt_json_t *v, const char *key) {
  if (!v || v->type != GT_JSON_OBJ) return NULL;
  for (size_t i = 0; i < v->n; i++)
    if (v->keys[i] && strcmp(v->keys[i], key) == 0) return &v->items[i];
  return NULL;
}

double gt_json_num(const gt_json_t *v, double dflt) {
  return v && v->type == GT_JSON_NUM ? v->num : dflt;
}

const char *gt_json_str(const gt_json_t *v) {
  return v && v->type == GT_JSON_STR && v->str ? v->str : "";
}

bool gt_json_true(const gt_json_t *v) { return v && v->type == GT_JSON_BOOL && v->b; }
