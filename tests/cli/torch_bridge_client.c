/* Drives libgemmtune_torchmm.so without torch (test_torch_bridge.sh): loads a stand-in
 * libtorch_cuda.so RTLD_LOCAL as torch does (unless GT_NO_TORCH is set), then the bridge, and calls
 * the interposed function twice with placeholder arguments. The stand-in's "original" prints a
 * line; the shim's two entry points are defined here (the program is linked -rdynamic) and print
 * a line if the bridge ever calls them. Argument 1: the stand-in's path; 2: the bridge's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define SYM "_ZN2at4cuda6detail19bf16bf16_grouped_mmENS_6TensorES2_St8optionalIS2_ES4_RS2_"

int gemmtune_grouped_begin(const void *call, const void *ops, void *stream) {
  (void)call, (void)ops, (void)stream;
  printf("begin called\n");
  return 0;
}
void gemmtune_grouped_end(void) { printf("end called\n"); }

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  if (!getenv("GT_NO_TORCH") && !dlopen(argv[1], RTLD_NOW | RTLD_LOCAL)) {
    fprintf(stderr, "stand-in: %s\n", dlerror());
    return 2;
  }
  void *bridge = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!bridge) {
    fprintf(stderr, "bridge: %s\n", dlerror());
    return 2;
  }
  void (*fn)(void *, void *, void *, void *, void *) =
      (void (*)(void *, void *, void *, void *, void *))dlsym(bridge, SYM);
  if (!fn) return 3;
  int dummy[5];
  for (int i = 0; i < 2; i++) fn(&dummy[0], &dummy[1], &dummy[2], &dummy[3], &dummy[4]);
  printf("client done\n");
  fflush(stdout);
  return 0;
}
