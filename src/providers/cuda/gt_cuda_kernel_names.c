/* The CUDA providers' kernels as a trace names them (gt_cuda_kernel_names.h). */
#define _GNU_SOURCE
#include "gt_cuda_kernel_names.h"

#include <stdio.h>
#include <string.h>

#include "kernels/gt_kernel_name.h"

_Static_assert(GT_KERNEL_SYMBOLS_MAX <= GT_ROW_KERNELS_MAX, "every own symbol fits a row's list");
_Static_assert(GT_KERNEL_SYMBOL_MAX <= GT_NAME_MAX, "an own symbol fits a row's entry");

/* ---- cuBLAS / cuBLASLt ------------------------------------------------------------------------ */

bool gt_cublas_row_kernels(const char *instance, const gt_problem_t *key, gt_row_kernels_t *out) {
  (void)instance;
  (void)key;
  memset(out, 0, sizeof *out);
  out->any = true;
  return true;
}

bool gt_cublas_owns_kernel(const char *kernel) {
  /* Prefixes, not substrings, where a library's other kernels share the word: CUTLASS-based
   * attention kernels ("fmha_cutlassF_...") are not GEMMs gemmtune can tune. */
  static const char *const prefixes[] = {"nvjet", "sm90_xmma", "cutlass"};
  static const char *const parts[] = {"gemm", "gemv", "splitkreduce"};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp(kernel, prefixes[i], strlen(prefixes[i])) == 0) return true;
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
    if (strcasestr(kernel, parts[i])) return true;
  return false;
}

/* cuBLAS names its kernels by configuration and by how the epilogue treats C, e.g.
 * nvjet_sm90_tst_64x8_64x16_2x4_h_bz_NNT (beta zero) vs ..._h_badd_NNT (C added in place) vs
 * ..._h_bx_NNT. The C treatment follows the call's pointers and beta, not the tuned config, so a
 * row calibrated with one treatment must recognise its kernel under another: tokens starting
 * with b compare equal. Other names match only exactly. */
static bool beta_token(const char *t, size_t n) { return n >= 2 && t[0] == 'b'; }

bool gt_cublas_same_kernel(const char *expected, const char *ran) {
  if (strcmp(expected, ran) == 0) return true;
  if (strncmp(expected, "nvjet_", 6) != 0 || strncmp(ran, "nvjet_", 6) != 0) return false;
  const char *a = expected, *b = ran;
  for (;;) {
    const char *ea = strchr(a, '_'), *eb = strchr(b, '_');
    size_t na = ea ? (size_t)(ea - a) : strlen(a), nb = eb ? (size_t)(eb - b) : strlen(b);
    bool same = na == nb && strncmp(a, b, na) == 0;
    if (!same && !(beta_token(a, na) && beta_token(b, nb))) return false;
    if (!ea || !eb) return !ea && !eb;
    a = ea + 1, b = eb + 1;
  }
}

/* ---- own kernels ------------------------------------------------------------------------------ */

bool gt_own_row_kernels(const char *instance, const gt_problem_t *key, gt_row_kernels_t *out) {
  (void)key;
  memset(out, 0, sizeof *out);
  char sym[GT_KERNEL_SYMBOLS_MAX][GT_KERNEL_SYMBOL_MAX];
  int n = gt_kernel_symbols(instance, sym, GT_KERNEL_SYMBOLS_MAX);
  if (n < 0) return false;
  for (int i = 0; i < n; i++) snprintf(out->sym[out->n++], sizeof out->sym[0], "%s", sym[i]);
  return true;
}

bool gt_own_owns_kernel(const char *kernel) { return gt_kernel_name_is_own(kernel); }
