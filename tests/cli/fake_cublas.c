/* Stand-ins for libcublas.so.13 / libcublasLt.so.13 used by test_preload_passthrough.sh: each
 * entry point prints every argument it received, so the test can check that the preload shim
 * forwards calls it does not serve with every argument unchanged (pointers by value, the host
 * scalars alpha/beta by what they point to, since stack addresses change from run to run). Built
 * twice by the script, with -DFAKE_LT for the cuBLASLt half. No GPU involved. */
#include <stdint.h>
#include <stdio.h>

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
/* Descriptors cannot be read: the shim must pass the call through. */
int cublasLtMatmulDescGetAttribute(void *d, int a, void *buf, size_t n, size_t *w) {
  (void)d, (void)a, (void)buf, (void)n, (void)w;
  return 7; /* CUBLAS_STATUS_INVALID_VALUE */
}
int cublasLtMatrixLayoutGetAttribute(void *l, int a, void *buf, size_t n, size_t *w) {
  (void)l, (void)a, (void)buf, (void)n, (void)w;
  return 7;
}
#endif
