/* Instance names, the DB's `instance` column and the kernel names a trace maps back: own-kernel
 * names (gt_kernel_name_parse), cuBLASLt config names (gt_cublaslt_name_parse) and the token
 * splitter under both. A name that parses is canonical: formatting its parameters gives it back. */
#include "core/gt_name.h"
#include "fuzz_common.h"
#include "kernels/gt_kernel_name.h"
#include "providers/cuda/gt_cublaslt_name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *name = fuzz_cstr(data, size);
  gt_name_tokens_t t;
  if (gt_name_split(name, &t) == GT_OK) {
    FUZZ_CHECK(t.n >= 1 && t.n <= GT_NAME_MAX_TOKENS);
    int64_t v[4];
    for (int i = 0; i < t.n; i++) (void)gt_name_param(t.tok[i], "t", v, 4);
  }
  gt_kparams_t kp;
  if (gt_kernel_name_parse(name, &kp) == GT_OK) {
    char back[256];
    FUZZ_CHECK(gt_kernel_name_format(&kp, back, sizeof back));
    FUZZ_CHECK(strcmp(back, name) == 0);
    char sym[GT_KERNEL_SYMBOLS_MAX][GT_KERNEL_SYMBOL_MAX];
    FUZZ_CHECK(gt_kernel_symbols(name, sym, GT_KERNEL_SYMBOLS_MAX) >= 1);
  }
  (void)gt_kernel_name_is_own(name);
  (void)gt_kinstance_find(name);
  gt_cublaslt_config_t c;
  if (gt_cublaslt_name_parse(name, &c) == GT_OK) {
    char back[256];
    FUZZ_CHECK(gt_cublaslt_name_format(&c, back, sizeof back) == GT_OK);
    FUZZ_CHECK(strcmp(back, name) == 0);
  }
  free(name);
  return 0;
}
