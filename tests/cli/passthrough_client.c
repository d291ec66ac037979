/* Calls every entry point the preload shim defines, with distinctive argument values, against
 * the fake libraries of fake_cublas.c (test_preload_passthrough.sh). Its output must be the same
 * with and without the shim. GT_CLIENT_EXIT=N makes it exit N (the host's own status, which the
 * shim must leave alone: test_preload_hostile.sh); GT_CLIENT_FORK=N forks N children while a
 * thread keeps calling cublasGemmEx, each child making one call of its own (a child forked while
 * a shim lock is held must not deadlock). GT_CLIENT_DLSYM=1: against a cuBLAS that predates the
 * grouped and _64 entry points (fake_cublas.c -DFAKE_OLD), look those up with dlsym, as a
 * framework probing for a feature does, call what is found, and make one cublasGemmEx call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                 int at, int lda, const void *B, int bt, int ldb, const void *beta, void *C,
                 int ct, int ldc, int comp, int algo);
int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                               const void *A, int at, int lda, long long sa, const void *B, int bt,
                               int ldb, long long sb, const void *beta, void *C, int ct, int ldc,
                               long long sc, int batch, int comp, int algo);
int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
                   int ldc);
int cublasHgemm(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                int lda, const void *B, int ldb, const void *beta, void *C, int ldc);
int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *Ad, const void *B,
                   void *Bd, const void *beta, const void *C, void *Cd, void *D, void *Dd,
                   const void *algo, void *ws, size_t wss, void *stream);
int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, long long sa, const float *B, int ldb,
                              long long sb, const float *beta, float *C, int ldc, long long sc,
                              int batch);
int cublasHgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                              const void *A, int lda, long long sa, const void *B, int ldb,
                              long long sb, const void *beta, void *C, int ldc, long long sc,
                              int batch);
int cublasGemmBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                        const void *const A[], int at, int lda, const void *const B[], int bt,
                        int ldb, const void *beta, void *const C[], int ct, int ldc, int batch,
                        int comp, int algo);
int cublasGemmGroupedBatchedEx(void *h, const int ta[], const int tb[], const int m[],
                               const int n[], const int k[], const void *alpha,
                               const void *const A[], int at, const int lda[],
                               const void *const B[], int bt, const int ldb[], const void *beta,
                               void *const C[], int ct, const int ldc[], int groups,
                               const int size[], int comp);
int cublasGemmEx_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *alpha,
                    const void *A, int at, int64_t lda, const void *B, int bt, int64_t ldb,
                    const void *beta, void *C, int ct, int64_t ldc, int comp, int algo);
int cublasGemmStridedBatchedEx_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                  const void *alpha, const void *A, int at, int64_t lda,
                                  long long sa, const void *B, int bt, int64_t ldb, long long sb,
                                  const void *beta, void *C, int ct, int64_t ldc, long long sc,
                                  int64_t batch, int comp, int algo);
int cublasSgemm_v2_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                      const float *alpha, const float *A, int64_t lda, const float *B,
                      int64_t ldb, const float *beta, float *C, int64_t ldc);
int cublasHgemm_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *alpha,
                   const void *A, int64_t lda, const void *B, int64_t ldb, const void *beta,
                   void *C, int64_t ldc);
int cublasSgemmStridedBatched_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 const float *alpha, const float *A, int64_t lda, long long sa,
                                 const float *B, int64_t ldb, long long sb, const float *beta,
                                 float *C, int64_t ldc, long long sc, int64_t batch);
int cublasHgemmStridedBatched_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                 const void *alpha, const void *A, int64_t lda, long long sa,
                                 const void *B, int64_t ldb, long long sb, const void *beta,
                                 void *C, int64_t ldc, long long sc, int64_t batch);
int cublasGemmBatchedEx_64(void *h, int ta, int tb, int64_t m, int64_t n, int64_t k,
                           const void *alpha, const void *const A[], int at, int64_t lda,
                           const void *const B[], int bt, int64_t ldb, const void *beta,
                           void *const C[], int ct, int64_t ldc, int64_t batch, int comp,
                           int algo);
int cublasGemmGroupedBatchedEx_64(void *h, const int ta[], const int tb[], const int64_t m[],
                                  const int64_t n[], const int64_t k[], const void *alpha,
                                  const void *const A[], int at, const int64_t lda[],
                                  const void *const B[], int bt, const int64_t ldb[],
                                  const void *beta, void *const C[], int ct, const int64_t ldc[],
                                  int64_t groups, const int64_t size[], int comp);

#define P(x) ((void *)(uintptr_t)(x))

static atomic_int g_stop;

static int one_call(void) {
  float alpha = 1.0f, beta = 0.0f;
  return cublasGemmEx(P(0x1000), 1, 0, 4096, 16, 4096, &alpha, P(0xa000), 14, 4096, P(0xb000),
                      14, 4096, &beta, P(0xc000), 14, 4096, 68, -1);
}

static void *hammer(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop)) (void)one_call();
  return NULL;
}

/* Fork n children while another thread is inside the shim as often as it can be; every child
 * makes one call and exits. Returns the number of children that failed or did not end. */
static int fork_children(int n) {
  FILE *null = freopen("/dev/null", "w", stdout); /* the fake prints a line per call */
  (void)null;
  pthread_t t;
  pthread_create(&t, NULL, hammer, NULL);
  int bad = 0;
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid == 0) _exit(one_call() == 0 ? 0 : 1);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  atomic_store(&g_stop, 1);
  pthread_join(t, NULL);
  return bad;
}

/* The entry points added after the first five, once each (see main). */
static void newer_entry_points(void) {
  float alpha = 1.0f, beta = 0.0f;
  uint16_t halpha = 0x3c00, hbeta = 0;
  /* the _64 twin of main's first call: the same key */
  printf("rc=%d\n", cublasGemmEx_64(P(0x1000), 1, 0, 4096, 16, 4096, &alpha, P(0xa000), 14, 4096,
                                    P(0xb000), 14, 4096, &beta, P(0xc000), 14, 4096, 68, -1));
  printf("rc=%d\n", cublasGemmStridedBatchedEx_64(P(0x1000), 1, 0, 512, 8, 256, &alpha, P(0xa600),
                                                  14, 256, 131072LL, P(0xb600), 14, 256, 2048LL,
                                                  &beta, P(0xc600), 14, 512, 4096LL, 6, 68, -1));
  /* m beyond an int: keyed, marked */
  printf("rc=%d\n", cublasSgemm_v2_64(P(0x1000), 0, 0, 3000000000LL, 2, 2, &alpha, P(0xa700),
                                      3000000000LL, P(0xb700), 2, &beta, P(0xc700),
                                      3000000000LL));
  printf("rc=%d\n", cublasHgemm_64(P(0x1000), 0, 1, 128, 64, 32, &halpha, P(0xa800), 128,
                                   P(0xb800), 64, &hbeta, P(0xc800), 128));
  printf("rc=%d\n", cublasSgemmStridedBatched(P(0x1000), 0, 0, 64, 32, 16, &alpha, P(0xa900), 64,
                                              1024LL, P(0xb900), 16, 512LL, &beta, P(0xc900), 64,
                                              2048LL, 4));
  printf("rc=%d\n", cublasHgemmStridedBatched(P(0x1000), 1, 0, 96, 48, 64, &halpha, P(0xaa00), 64,
                                              6144LL, P(0xba00), 64, 3072LL, &hbeta, P(0xca00),
                                              96, 4608LL, 5));
  printf("rc=%d\n", cublasSgemmStridedBatched_64(P(0x1000), 0, 0, 80, 40, 20, &alpha, P(0xab00),
                                                 80, 1600LL, P(0xbb00), 20, 800LL, &beta,
                                                 P(0xcb00), 80, 3200LL, 2));
  printf("rc=%d\n", cublasHgemmStridedBatched_64(P(0x1000), 1, 0, 112, 56, 64, &halpha,
                                                 P(0xac00), 64, 7168LL, P(0xbc00), 64, 3584LL,
                                                 &hbeta, P(0xcc00), 112, 6272LL, 3));
  /* pointer arrays (device memory the shim never reads) */
  printf("rc=%d\n", cublasGemmBatchedEx(P(0x1000), 1, 0, 256, 32, 512, &alpha, P(0xad00), 14, 512,
                                        P(0xbd00), 14, 512, &beta, P(0xcd00), 14, 256, 4, 68, -1));
  printf("rc=%d\n", cublasGemmBatchedEx_64(P(0x1000), 1, 0, 320, 24, 640, &alpha, P(0xae00), 14,
                                           640, P(0xbe00), 14, 640, &beta, P(0xce00), 14, 320, 3,
                                           68, -1));
  /* two groups of their own shapes; beta 0 for the first, 1 for the second */
  const int ta[2] = {0, 1}, tb[2] = {0, 0}, gm[2] = {64, 128}, gn[2] = {8, 16}, gk[2] = {128, 256};
  const int glda[2] = {64, 256}, gldb[2] = {128, 256}, gldc[2] = {64, 128}, gsize[2] = {3, 2};
  const float galpha[2] = {1.0f, 1.0f}, gbeta[2] = {0.0f, 1.0f};
  printf("rc=%d\n", cublasGemmGroupedBatchedEx(P(0x1000), ta, tb, gm, gn, gk, galpha, P(0xaf00),
                                               14, glda, P(0xbf00), 14, gldb, gbeta, P(0xcf00),
                                               14, gldc, 2, gsize, 68));
  const int64_t wm[1] = {48}, wn[1] = {4}, wk[1] = {96}, wlda[1] = {48}, wldb[1] = {96},
                wldc[1] = {48}, wsize[1] = {7};
  printf("rc=%d\n", cublasGemmGroupedBatchedEx_64(P(0x1000), tb, tb, wm, wn, wk, galpha, P(0xa0f0),
                                                  14, wlda, P(0xb0f0), 14, wldb, gbeta, P(0xc0f0),
                                                  14, wldc, 1, wsize, 68));
  /* readable cuBLASLt descriptors (fake_cublas.c), on the legacy stream: a bf16 TN call (a
   * tunable key) and an fp8 one with tensorwise scale pointers (a tunable fp8 key) */
  printf("rc=%d\n", cublasLtMatmul(P(0x2000), P(0x2e00), &alpha, P(0xa410), P(0x3e00), P(0xb410),
                                   P(0x3e01), &beta, P(0xc410), P(0x3e02), P(0xd410), P(0x3e03),
                                   P(0x2600), P(0xe410), 1 << 20, NULL));
  printf("rc=%d\n", cublasLtMatmul(P(0x2000), P(0x2f00), &alpha, P(0xa420), P(0x3f00), P(0xb420),
                                   P(0x3f01), &beta, P(0xc420), P(0x3f02), P(0xd420), P(0x3f03),
                                   P(0x2600), P(0xe420), 1 << 20, NULL));
}

/* Against a cuBLAS without the grouped and _64 entry points: what dlsym finds is called. */
static int probe_missing(void) {
  static const char *const names[] = {"cublasGemmGroupedBatchedEx", "cublasGemmEx_64",
                                      "cublasSgemm_v2_64"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *fn = dlsym(RTLD_DEFAULT, names[i]);
    if (!fn) {
      printf("%s: absent\n", names[i]);
      continue;
    }
    int rc = -1;
    float alpha = 1.0f, beta = 0.0f;
    if (i == 0) {
      const int t[1] = {0}, d[1] = {64}, sz[1] = {1};
      rc = ((int (*)(void *, const int *, const int *, const int *, const int *, const int *,
                     const void *, const void *const *, int, const int *, const void *const *,
                     int, const int *, const void *, void *const *, int, const int *, int,
                     const int *, int))fn)(P(0x1000), t, t, d, d, d, &alpha, P(0xa000), 14, d,
                                          P(0xb000), 14, d, &beta, P(0xc000), 14, d, 1, sz, 68);
    } else if (i == 1) {
      rc = ((int (*)(void *, int, int, int64_t, int64_t, int64_t, const void *, const void *, int,
                     int64_t, const void *, int, int64_t, const void *, void *, int, int64_t, int,
                     int))fn)(P(0x1000), 0, 0, 64, 64, 64, &alpha, P(0xa000), 14, 64, P(0xb000),
                              14, 64, &beta, P(0xc000), 14, 64, 68, -1);
    } else {
      rc = ((int (*)(void *, int, int, int64_t, int64_t, int64_t, const float *, const float *,
                     int64_t, const float *, int64_t, const float *, float *, int64_t))fn)(
          P(0x1000), 0, 0, 64, 64, 64, &alpha, P(0xa000), 64, P(0xb000), 64, &beta, P(0xc000),
          64);
    }
    printf("%s: found, rc=%d\n", names[i], rc);
  }
  printf("rc=%d\n", one_call());
  return 0;
}

int main(void) {
  const char *forks = getenv("GT_CLIENT_FORK");
  if (forks && atoi(forks) > 0) {
    int bad = fork_children(atoi(forks));
    fprintf(stderr, "client: %d of %d children failed\n", bad, atoi(forks));
    if (bad) return 1;
    const char *e = getenv("GT_CLIENT_EXIT");
    return e ? atoi(e) : 0;
  }
  const char *probe = getenv("GT_CLIENT_DLSYM");
  if (probe && atoi(probe)) return probe_missing();
  float alpha = 1.0f, beta = 0.0f;
  uint16_t halpha = 0x3c00, hbeta = 0;
  for (int rep = 0; rep < 2; rep++) {
    printf("rc=%d\n", cublasGemmEx(P(0x1000), 1, 0, 4096, 16, 4096, &alpha, P(0xa000), 14, 4096,
                                   P(0xb000), 14, 4096, &beta, P(0xc000), 14, 4096, 68, -1));
    printf("rc=%d\n", cublasGemmStridedBatchedEx(P(0x1000), 0, 1, 128, 64, 256, &alpha, P(0xa100),
                                                 2, 128, 32768LL, P(0xb100), 2, 64, 16384LL, &beta,
                                                 P(0xc100), 2, 128, 8192LL, 3, 68, 99));
    printf("rc=%d\n", cublasSgemm_v2(P(0x1000), 0, 0, 320, 256, 128, &alpha, P(0xa200), 320,
                                     P(0xb200), 128, &beta, P(0xc200), 320));
    printf("rc=%d\n", cublasHgemm(P(0x1000), 1, 0, 256, 128, 512, &halpha, P(0xa300), 512,
                                  P(0xb300), 512, &hbeta, P(0xc300), 256));
    printf("rc=%d\n", cublasLtMatmul(P(0x2000), P(0x2100), &alpha, P(0xa400), P(0x2200),
                                     P(0xb400), P(0x2300), &beta, P(0xc400), P(0x2400),
                                     P(0xd400), P(0x2500), P(0x2600), P(0xe400), 1 << 20,
                                     P(0x2700)));
    /* device pointer mode is not readable here, but an explicit algorithm is: passed through */
    printf("rc=%d\n", cublasGemmEx(P(0x1000), 0, 0, 64, 64, 64, &alpha, P(0xa500), 0, 64,
                                   P(0xb500), 0, 64, &beta, P(0xc500), 0, 64, 68, 5));
    newer_entry_points();
  }
  const char *e = getenv("GT_CLIENT_EXIT");
  return e ? atoi(e) : 0;
}
