/* A stand-in libcupti for test_verify_cpu.sh: lets libgemmtune_trace.so run its whole path
 * (subscribe, register buffers, enable, flush at exit, read records, count drops) in a process
 * without a GPU. Loaded through GEMMTUNE_CUPTI_LIB. On flush it hands the tracer one buffer of
 * kernel records in the real CUpti_ActivityKernel10 layout:
 *   fake_gemm_kernel  x3 (durations 100, 200, 300 ns; 2 of them from a graph replay; streams 7, 9)
 *   fake_elementwise  x1 (50 ns)
 * Environment: FAKE_CUPTI_TAKEN=1 makes subscribing fail as when Nsight Systems holds CUPTI;
 * FAKE_CUPTI_DROPPED=N reports N dropped records.
 *
 * Calls' kernel time (the tracer's gemmtune_trace_call_*): FAKE_CUPTI_CALLBACKS=1 lets
 * cuptiEnableCallback succeed, FAKE_CUPTI_DOMAINS=1 cuptiEnableDomain, fake_cupti_api() (called
 * by the test) invokes the subscriber's callback as an API entry or exit with a correlation id
 * would (for what is enabled), and FAKE_CUPTI_CALL_KERNELS="corr:ns,..." adds a kernel record
 * "fake_call_kernel" per pair (not from a graph) to the flushed buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static CUpti_CallbackFunc g_cb;
static void *g_cb_ud;

CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
  *s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}

static CUptiResult subscribe(char *other, size_t cap) {
  const char *t = getenv("FAKE_CUPTI_TAKEN");
  if (t && *t == '1') {
    if (other && cap) {
      strncpy(other, "Nsight Systems", cap - 1);
      other[cap - 1] = '\0';
    }
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *u) {
  g_cb = f, g_cb_ud = u;
  *s = (CUpti_SubscriberHandle)1;
  return subscribe(NULL, 0);
}

CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc f, void *u,
                              CUpti_SubscriberParams *p) {
  g_cb = f, g_cb_ud = u;
  *s = (CUpti_SubscriberHandle)1;
  return subscribe(p ? p->oldSubscriberName : NULL, p ? p->oldSubscriberSize : 0);
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                           CUpti_BuffersCallbackCompleteFunc done) {
  g_req = req;
  g_done = done;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  return k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_KIND;
}

/* What is enabled, as CUPTI keeps it: callbacks come only for those. */
static struct {
  int domain, cbid;
} g_on[64];
static int g_non, g_domain_on[8];

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain d,
                                CUpti_CallbackId id) {
  (void)s;
  const char *c = getenv("FAKE_CUPTI_CALLBACKS");
  if (!c || *c != '1') return CUPTI_ERROR_NOT_SUPPORTED;
  if (enable && g_non < 64) g_on[g_non].domain = (int)d, g_on[g_non++].cbid = (int)id;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain d) {
  (void)s;
  const char *c = getenv("FAKE_CUPTI_DOMAINS");
  if (!c || *c != '1') return CUPTI_ERROR_NOT_SUPPORTED;
  if ((int)d >= 0 && (int)d < 8) g_domain_on[d] = (int)enable;
  return CUPTI_SUCCESS;
}

static int enabled(int domain, int cbid) {
  if (domain >= 0 && domain < 8 && g_domain_on[domain]) return 1;
  for (int i = 0; i < g_non; i++)
    if (g_on[i].domain == domain && g_on[i].cbid == cbid) return 1;
  return 0;
}

/* The test's stand-in for an API call: the subscriber's callback at entry (exit_site 0) or exit. */
void fake_cupti_api(int domain, int cbid, uint32_t corr, int exit_site) {
  CUpti_CallbackData cb;
  memset(&cb, 0, sizeof cb);
  cb.callbackSite = exit_site ? CUPTI_API_EXIT : CUPTI_API_ENTER;
  cb.correlationId = corr;
  if (g_cb && enabled(domain, cbid))
    g_cb(g_cb_ud, (CUpti_CallbackDomain)domain, (CUpti_CallbackId)cbid, &cb);
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec) {
  uint8_t *next = *rec ? (uint8_t *)*rec + sizeof(CUpti_ActivityKernel10) : buf;
  if (next + sizeof(CUpti_ActivityKernel10) > buf + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = (CUpti_Activity *)next;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t stream, size_t *dropped) {
  (void)c, (void)stream;
  const char *d = getenv("FAKE_CUPTI_DROPPED");
  *dropped = d ? (size_t)atol(d) : 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  if (!g_req || !g_done) return CUPTI_ERROR_NOT_INITIALIZED;
  uint8_t *buf = NULL;
  size_t size = 0, maxn = 0;
  g_req(&buf, &size, &maxn);
  static const struct {
    const char *name;
    uint64_t ns;
    uint32_t stream, graph;
  } k[] = {{"fake_gemm_kernel", 100, 7, 0},
           {"fake_gemm_kernel", 200, 7, 3},
           {"fake_gemm_kernel", 300, 9, 3},
           {"fake_elementwise", 50, 7, 0}};
  size_t n = sizeof k / sizeof k[0];
  if (!buf || size < (n + 64) * sizeof(CUpti_ActivityKernel10)) return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < n; i++) {
    CUpti_ActivityKernel10 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.name = k[i].name;
    r.start = 1000 * (i + 1);
    r.end = r.start + k[i].ns;
    r.streamId = k[i].stream;
    r.graphId = k[i].graph;
    memcpy(buf + i * sizeof r, &r, sizeof r);
  }
  /* The calls' kernels, once (a second flush hands only the fixed four again). */
  static int calls_done;
  const char *ck = getenv("FAKE_CUPTI_CALL_KERNELS");
  size_t total = n;
  for (const char *p = ck; p && *p && !calls_done && total < n + 64;) {
    unsigned corr = 0;
    unsigned long long ns = 0;
    int used = 0;
    if (sscanf(p, "%u:%llu%n", &corr, &ns, &used) != 2) break;
    CUpti_ActivityKernel10 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.name = "fake_call_kernel";
    r.start = 100000 + 1000 * total;
    r.end = r.start + ns;
    r.streamId = 7;
    r.correlationId = corr;
    memcpy(buf + total++ * sizeof r, &r, sizeof r);
    p += used;
    if (*p == ',') p++;
  }
  calls_done = 1;
  g_done(NULL, 0, buf, size, total * sizeof(CUpti_ActivityKernel10));
  return CUPTI_SUCCESS;
}
