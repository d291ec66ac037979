/* Calls the five entry points the preload shim defines, with distinctive argument values, against
 * the fake libraries of fake_cublas.c (test_preload_passthrough.sh). Its output must be the same
 * with and without the shim. GT_CLIENT_EXIT=N makes it exit N (the host's own status, which the
 * shim must leave alone: test_preload_hostile.sh); GT_CLIENT_FORK=N forks N children while a
 * thread keeps calling cublasGemmEx, each child making one call of its own (a child forked while
 * a shim lock is held must not deadlock). */
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

int main(void) {
  const char *forks = getenv("GT_CLIENT_FORK");
  if (forks && atoi(forks) > 0) {
    int bad = fork_children(atoi(forks));
    fprintf(stderr, "client: %d of %d children failed\n", bad, atoi(forks));
    if (bad) return 1;
    const char *e = getenv("GT_CLIENT_EXIT");
    return e ? atoi(e) : 0;
  }
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
  }
  const char *e = getenv("GT_CLIENT_EXIT");
  return e ? atoi(e) : 0;
}
