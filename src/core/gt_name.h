/* Instance names: generated from parameters, parsed back to them.
 *
 * A name is a sequence of '_'-separated tokens. Fixed tokens (family, arch, types, layout) are
 * plain words; parameters are a short tag followed by one or more integers joined by 'x':
 * "t128x64x64" (tile), "s4" (stages), "sk2" (split-K), "cl2x1" (cluster). Providers build names
 * with gt_name_append and parse them with gt_name_split + gt_name_param, so every name round-trips.
 * Example: gt_sm90_decode_bf16_tn_r4_ks512_v8_s2 */
#ifndef GT_NAME_H
#define GT_NAME_H

#include <stdbool.h>
#include <stdint.h>

#include "gt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GT_NAME_MAX_TOKENS 24

typedef struct gt_name_tokens {
  int n;
  char tok[GT_NAME_MAX_TOKENS][48];
} gt_name_tokens_t;

/* Append "_" (unless buf is empty) and the printf-formatted token. Returns false on overflow. */
bool gt_name_append(char *buf, int cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Split a name into tokens. Fails on empty tokens, too many or too long tokens. */
gt_status_t gt_name_split(const char *name, gt_name_tokens_t *out);

/* Parse token `tok` as `tag` followed by up to max integers separated by 'x'
 * ("t128x64x64" with tag "t" -> {128,64,64}). Returns the count parsed, or -1 when the token does
 * not start with tag followed by a digit, or is malformed. */
int gt_name_param(const char *tok, const char *tag, int64_t *vals, int max);

#ifdef __cplusplus
}
#endif
#endif
