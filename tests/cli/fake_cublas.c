/* Stand-ins for libcublas.so.13 / libcublasLt.so.13 used by test_preload_passthrough.sh: each
 * entry point prints every argument it received, so the test can check that the preload shim
 * forwards calls it does not serve with every argument unchanged (pointers by value, the host
 * scalars alpha/beta and the host arrays of a grouped call by what they hold, since stack
 * addresses change from run to run). Built by the script with -DFAKE_LT for the cuBLASLt half,
 * and with -DFAKE_OLD for a cuBLAS that predates the grouped and _64 entry points (the shim
 * exports them anyway: a process whose cuBLAS lacks one must still run). No GPU involved.
 *
 * The cuBLASLt half reads back two descriptors (0x2e00: a bf16 TN 1024x32x1024 matmul; 0x2f00:
 * an fp8 e4m3 TN 256x16x512 one with A and B scale pointers set) and their layouts (0x3e00+i,
 * 0x3f00+i for A, B, C, D); every other descriptor is unreadable, as an opaque handle the shim
 * cannot query must be. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static float f(const void *p) { return p ? *(const float *)p : -999.0f; }
static unsigned h16(const void *p) { return p ? *(const uint16_t *)p : 0xdead; }

#ifndef FAKE_LT
int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                 int at, int lda, const void *B, int bt, int ldb, const void *beta, void *C,
                 int ct, int ldc, int comp, int algo) {
  printf("real cublasGemmEx h=%p ta=%d tb=%d m=%d n=%d k=%d alpha=%g A=%p at=%d lda=%d B=%p bt=%d "
         "ldb=%d beta=%g C=%p ct=%d ldc=%d comp=%d algo=%d\n",
         h, ta, tb, m, n, k, f(alpha), A, at, lda, B, bt, ldb, f(beta), C, ct, ldc, comp, algo);
  return 0;
}
int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                               const void *A, int at, int lda, long long sa, const void *B, int bt,
                               int ldb, long long sb, const void *beta, void *C, int ct, int ldc,
                               long long sc, int batch, int comp, int algo) {
  printf("real cublasGemmStridedBatchedEx h=%p ta=%d tb=%d m=%d n=%d k=%d alpha=%g A=%p at=%d "
         "lda=%d sa=%lld B=%p bt=%d ldb=%d sb=%lld beta=%g C=%p ct=%d ldc=%d sc=%lld batch=%d "
         "comp=%d algo=%d\n",
         h, ta, tb, m, n, k, f(alpha), A, at, lda, sa, B, bt, ldb, sb, f(beta), C, ct, ldc, sc,
         batch, comp, algo);
  return 0;
}
int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
                   int ldc) {
  printf("real cublasSgemm_v2 h=%p ta=%d tb=%d m=%d n=%d k=%d alpha=%g A=%p lda=%d B=%p ldb=%d "
         "beta=%g C=%p ldc=%d\n",
         h, ta, tb, m, n, k, f(alpha), (const void *)A, lda, (const void *)B, ldb, f(beta),
         (void *)C, ldc);
  return 0;
}
int cublasHgemm(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                int lda, const void *B, int ldb, const void *beta, void *C, int ldc) {
  printf("real cublasHgemm h=%p ta=%d tb=%d m=%d n=%d k=%d alpha=0x%04x A=%p lda=%d B=%p ldb=%d "
         "beta=0x%04x C=%p ldc=%d\n",
         h, ta, tb, m, n, k, h16(alpha), A, lda, B, ldb, h16(beta), C, ldc);
  return 0;
}
int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, long long sa, const float *B, int ldb,
                              long long sb, const float *beta, float *C, int ldc, long long sc,
                              int batch) {
  printf("real cublasSgemmStridedBatched h=%p ta=%d tb=%d m=%d n=%d k=%d alpha=%g A=%p lda=%d "
         "sa=%lld B=%p ldb=%d sb=%lld beta=%g C=%p ldc=%d sc=%lld batch=%d\n",
         h, ta, tb, m, n, k, f(alpha), (const void *)A, lda, sa, (const void *)B, ldb, sb,
         f(beta), (void *)C, ldc, sc, batch);
  return 0;
}
int cublasHgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                              const void *A, int lda, long long sa, const void *B, int ldb,
                              long long sb, const void *beta, void *C, int ldc, long long sc,
                              int batch) {
  printf("real cublasHgemmStridedBatched h=%p ta=%d tb=%d m=%d n=%d k=%d alpha=0x%04x A=%p "
         "lda=%d sa=%lld B=%p ldb=%d sb=%lld beta=0x%04x C=%p ldc=%d sc=%lld batch=%d\n",
         h, ta, tb, m, n, k, h16(alpha), A, lda, sa, B, ldb, sb, h16(beta), C, ldc, sc, batch);
  return 0;
}
int cublasGemmBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                        const void *const A[], int at, int lda, const void *const B[], int bt,
                        int ldb, const void *beta, void *const C[], int ct, int ldc, int batch,
                        int comp, int algo) {
  printf("real cublasGemmBatchedEx h=%p ta=%d tb=%d m=%d n=%d k=%d alpha=%g A=%p at=%d lda=%d "
         "B=%p bt=%d ldb=%d beta=%g C=%p ct=%d ldc=%d batch=%d comp=%d algo=%d\n",
         h, ta, tb, m, n, k, f(alpha), (const void *)A, at, lda, (const void *)B, bt, ldb,
         f(beta), (const void *)C, ct, ldc, batch, comp, algo);
  return 0;
}
/* A cuBLAS built before these existed leaves them out: -DFAKE_OLD. */
#ifndef FAKE_OLD
int cublasGemmGroupedBatchedEx(void *h, const int ta[], const int tb[], const int m[],
                               const int n[], const int k[], const void *alpha,
                               const void *const A[], int at, const int lda[],
                               const void *const B[], int bt, const int ldb[], const void *beta,
                               void *const C[], int ct, const int ldc[], int groups,
                               const int size[], int comp) {
  printf("real cublasGemmGroupedBatchedEx h=%p groups=%d A=%p B=%p C=%p at=%d bt=%d ct=%d "
         "comp=%d",
         h, groups, (const void *)A, (const void *)B, (const void *)C, at, bt, ct, comp);
  for (int g = 0; g < groups; g++)
    printf(" [%d: ta=%d tb=%d m=%d n=%d k=%d lda=%d ldb=%d ldc=%d size=%d alpha=%g beta=%g]", g,
           ta[g], tb[g], m[g], n[g], k[g], lda[g], ldb[g], ldc[g], size[g],
           f((const float *)alpha + g), f((const float *)beta + g));
  printf("\n");
  return 0;
}
int cublasGemmEx_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *alpha,
                    const void *A, int at, int64_t lda, const void *B, int bt, int64_t ldb,
                    const void *beta, void *C, int ct, int64_t ldc, int comp, int algo) {
  printf("real cublasGemmEx_64 h=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g A=%p at=%d "
         "lda=%lld B=%p bt=%d ldb=%lld beta=%g C=%p ct=%d ldc=%lld comp=%d algo=%d\n",
         h, ta, tb, (long long)m, (long long)n, (long long)k, f(alpha), A, at, (long long)lda, B,
         bt, (long long)ldb, f(beta), C, ct, (long long)ldc, comp, algo);
  return 0;
}
int cublasGemmStridedBatchedEx_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                  const void *alpha, const void *A, int at, int64_t lda,
                                  long long sa, const void *B, int bt, int64_t ldb, long long sb,
                                  const void *beta, void *C, int ct, int64_t ldc, long long sc,
                                  int64_t batch, int comp, int algo) {
  printf("real cublasGemmStridedBatchedEx_64 h=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g "
         "A=%p at=%d lda=%lld sa=%lld B=%p bt=%d ldb=%lld sb=%lld beta=%g C=%p ct=%d ldc=%lld "
         "sc=%lld batch=%lld comp=%d algo=%d\n",
         h, ta, tb, (long long)m, (long long)n, (long long)k, f(alpha), A, at, (long long)lda, sa,
         B, bt, (long long)ldb, sb, f(beta), C, ct, (long long)ldc, sc, (long long)batch, comp,
         algo);
  return 0;
}
int cublasSgemm_v2_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                      const float *alpha, const float *A, int64_t lda, const float *B,
                      int64_t ldb, const float *beta, float *C, int64_t ldc) {
  printf("real cublasSgemm_v2_64 h=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g A=%p lda=%lld "
         "B=%p ldb=%lld beta=%g C=%p ldc=%lld\n",
         h, ta, tb, (long long)m, (long long)n, (long long)k, f(alpha), (const void *)A,
         (long long)lda, (const void *)B, (long long)ldb, f(beta), (void *)C, (long long)ldc);
  return 0;
}
int cublasHgemm_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *alpha,
                   const void *A, int64_t lda, const void *B, int64_t ldb, const void *beta,
                   void *C, int64_t ldc) {
  printf("real cublasHgemm_64 h=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=0x%04x A=%p lda=%lld "
         "B=%p ldb=%lld beta=0x%04x C=%p ldc=%lld\n",
         h, ta, tb, (long long)m, (long long)n, (long long)k, h16(alpha), A, (long long)lda, B,
         (long long)ldb, h16(beta), C, (long long)ldc);
  return 0;
}
int cublasSgemmStridedBatched_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 const float *alpha, const float *A, int64_t lda, long long sa,
                                 const float *B, int64_t ldb, long long sb, const float *beta,
                                 float *C, int64_t ldc, long long sc, int64_t batch) {
  printf("real cublasSgemmStridedBatched_64 h=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g A=%p "
         "lda=%lld sa=%lld B=%p ldb=%lld sb=%lld beta=%g C=%p ldc=%lld sc=%lld batch=%lld\n",
         h, ta, tb, (long long)m, (long long)n, (long long)k, f(alpha), (const void *)A,
         (long long)lda, sa, (const void *)B, (long long)ldb, sb, f(beta), (void *)C,
         (long long)ldc, sc, (long long)batch);
  return 0;
}
int cublasHgemmStridedBatched_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 const void *alpha, const void *A, int64_t lda, long long sa,
                                 const void *B, int64_t ldb, long long sb, const void *beta,
                                 void *C, int64_t ldc, long long sc, int64_t batch) {
  printf("real cublasHgemmStridedBatched_64 h=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=0x%04x "
         "A=%p lda=%lld sa=%lld B=%p ldb=%lld sb=%lld beta=0x%04x C=%p ldc=%lld sc=%lld "
         "batch=%lld\n",
         h, ta, tb, (long long)m, (long long)n, (long long)k, h16(alpha), A, (long long)lda, sa, B,
         (long long)ldb, sb, h16(beta), C, (long long)ldc, sc, (long long)batch);
  return 0;
}
int cublasGemmBatchedEx_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const void *alpha, const void *const A[], int at, int64_t lda,
                           const void *const B[], int bt, int64_t ldb, const void *beta,
                           void *const C[], int ct, int64_t ldc, int64_t batch, int comp,
                           int algo) {
  printf("real cublasGemmBatchedEx_64 h=%p ta=%d tb=%d m=%lld n=%lld k=%lld alpha=%g A=%p at=%d "
         "lda=%lld B=%p bt=%d ldb=%lld beta=%g C=%p ct=%d ldc=%lld batch=%lld comp=%d algo=%d\n",
         h, ta, tb, (long long)m, (long long)n, (long long)k, f(alpha), (const void *)A, at,
         (long long)lda, (const void *)B, bt, (long long)ldb, f(beta), (const void *)C, ct,
         (long long)ldc, (long long)batch, comp, algo);
  return 0;
}
int cublasGemmGroupedBatchedEx_64(void *h, const int ta[], const int tb[], const int64_t m[],
                                  const int64_t n[], const int64_t k[], const void *alpha,
                                  const void *const A[], int at, const int64_t lda[],
                                  const void *const B[], int bt, const int64_t ldb[],
                                  const void *beta, void *const C[], int ct, const int64_t ldc[],
                                  int64_t groups, const int64_t size[], int comp) {
  printf("real cublasGemmGroupedBatchedEx_64 h=%p groups=%lld A=%p B=%p C=%p at=%d bt=%d ct=%d "
         "comp=%d",
         h, (long long)groups, (const void *)A, (const void *)B, (const void *)C, at, bt, ct,
         comp);
  for (int64_t g = 0; g < groups; g++)
    printf(" [%lld: ta=%d tb=%d m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld size=%lld "
           "alpha=%g beta=%g]",
           (long long)g, ta[g], tb[g], (long long)m[g], (long long)n[g], (long long)k[g],
           (long long)lda[g], (long long)ldb[g], (long long)ldc[g], (long long)size[g],
           f((const float *)alpha + g), f((const float *)beta + g));
  printf("\n");
  return 0;
}
#endif
/* The handle reports: legacy stream, host pointers, default math. */
int cublasGetStream_v2(void *h, void **s) { (void)h; *s = NULL; return 0; }
int cublasGetPointerMode_v2(void *h, int *m) { (void)h; *m = 0; return 0; }
int cublasGetMathMode(void *h, int *m) { (void)h; *m = 0; return 0; }
#else
int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *Ad, const void *B,
                   void *Bd, const void *beta, const void *C, void *Cd, void *D, void *Dd,
                   const void *algo, void *ws, size_t wss, void *stream) {
  printf("real cublasLtMatmul h=%p desc=%p alpha=%g A=%p Ad=%p B=%p Bd=%p beta=%g C=%p Cd=%p D=%p "
         "Dd=%p algo=%p ws=%p wss=%zu stream=%p\n",
         h, desc, f(alpha), A, Ad, B, Bd, f(beta), C, Cd, D, Dd, algo, ws, wss, stream);
  return 0;
}

/* One attribute value into the caller's buffer, as cuBLASLt's getters do. */
static int put(void *buf, size_t n, size_t *w, const void *v, size_t size) {
  if (w) *w = size;
  if (n < size) return 7; /* CUBLAS_STATUS_INVALID_VALUE */
  memcpy(buf, v, size);
  return 0;
}

/* The two readable descriptors; anything else cannot be read: the shim must pass it through. */
int cublasLtMatmulDescGetAttribute(void *d, int a, void *buf, size_t n, size_t *w) {
  const uintptr_t id = (uintptr_t)d;
  if (id != 0x2e00 && id != 0x2f00) return 7;
  const bool fp8 = id == 0x2f00;
  int32_t i32 = 0;
  uint32_t u32 = 0;
  int64_t i64 = 0;
  int8_t i8 = 0;
  const void *ptr = NULL;
  switch (a) {
    case 0: i32 = 68; return put(buf, n, w, &i32, 4);  /* CUBLAS_COMPUTE_32F */
    case 1: i32 = 0; return put(buf, n, w, &i32, 4);   /* scale CUDA_R_32F */
    case 2: i32 = 0; return put(buf, n, w, &i32, 4);   /* host pointer mode */
    case 3: i32 = 1; return put(buf, n, w, &i32, 4);   /* transa T */
    case 4: i32 = 0; return put(buf, n, w, &i32, 4);   /* transb N */
    case 5: i32 = 0; return put(buf, n, w, &i32, 4);   /* transc N */
    case 6: i32 = 2; return put(buf, n, w, &i32, 4);   /* fill mode full */
    case 7: u32 = 1; return put(buf, n, w, &u32, 4);   /* epilogue default */
    case 8: case 11: case 19: case 20: case 21: case 23: case 24: case 36: case 38:
      return put(buf, n, w, &ptr, sizeof ptr);          /* pointers not set */
    case 17: case 18:                                   /* A and B scale pointers */
      ptr = fp8 ? (const void *)(uintptr_t)(0x5000 + 0x100 * (a - 17)) : NULL;
      return put(buf, n, w, &ptr, sizeof ptr);
    case 10: case 14: return put(buf, n, w, &i64, 8);
    case 15: case 31: case 32: case 33: case 34: case 35: case 37: return put(buf, n, w, &i32, 4);
    case 25: return put(buf, n, w, &i8, 1);
    case 26: i32 = -1; return put(buf, n, w, &i32, 4);
    default: return 7;
  }
}

int cublasLtMatrixLayoutGetAttribute(void *l, int a, void *buf, size_t n, size_t *w) {
  const uintptr_t id = (uintptr_t)l;
  if ((id & ~(uintptr_t)3) != 0x3e00 && (id & ~(uintptr_t)3) != 0x3f00) return 7;
  const bool fp8 = (id & ~(uintptr_t)3) == 0x3f00;
  const int which = (int)(id & 3); /* A, B, C, D */
  /* TN: A is k x m, B k x n, C and D m x n (bf16 1024x32x1024, fp8 256x16x512) */
  const uint64_t m = fp8 ? 256 : 1024, nn = fp8 ? 16 : 32, k = fp8 ? 512 : 1024;
  const uint64_t rows = which < 2 ? k : m, cols = which == 0 ? m : nn;
  uint32_t type = which < 2 ? (fp8 ? 28u : 14u) : 14u; /* e4m3 or bf16 inputs, bf16 C and D */
  int32_t i32 = 0;
  int64_t i64 = 0;
  uint32_t u32 = 0;
  switch (a) {
    case 0: return put(buf, n, w, &type, 4);
    case 1: return put(buf, n, w, &i32, 4); /* column-major */
    case 2: return put(buf, n, w, &rows, 8);
    case 3: return put(buf, n, w, &cols, 8);
    case 4: i64 = (int64_t)rows; return put(buf, n, w, &i64, 8);
    case 5: i32 = 1; return put(buf, n, w, &i32, 4);
    case 6: case 7: return put(buf, n, w, &i64, 8);
    case 8: return put(buf, n, w, &u32, 4);
    default: return 7;
  }
}
#endif
