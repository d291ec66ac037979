/* GPU telemetry through NVML, loaded with dlopen("libnvidia-ml.so.1") (the driver ships it; the
 * toolkit's nvml.h is not needed): SM clock, temperature, power, clock-event reasons and the other
 * processes on the GPU. Timings taken while the clocks were pulled down by heat or power are
 * flagged by the caller; a busy GPU is reported before a tuning run starts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "platform/gt_cudalib.h"
#include "gt_cuda_harness.h"

/* The few NVML declarations used, as nvml.h (driver 5xx) has them. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_CLOCK_SM 1
#define NVML_TEMPERATURE_GPU 0
/* nvmlProcessInfo_v2_t (also what the _v3 query fills). */
typedef struct nvml_process_info {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvml_process_info_t;

/* Clock-event reasons that mean the clocks were lowered by heat or power, not by idleness or an
 * application clock setting: SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake. */
#define NVML_EVENT_SW_POWER_CAP 0x4ull
#define NVML_EVENT_HW_SLOWDOWN 0x8ull
#define NVML_EVENT_SW_THERMAL 0x20ull
#define NVML_EVENT_HW_THERMAL 0x40ull
#define NVML_EVENT_HW_POWER_BRAKE 0x80ull
#define NVML_THROTTLE_MASK                                                       \
  (NVML_EVENT_SW_POWER_CAP | NVML_EVENT_HW_SLOWDOWN | NVML_EVENT_SW_THERMAL |    \
   NVML_EVENT_HW_THERMAL | NVML_EVENT_HW_POWER_BRAKE)

static struct {
  nvmlReturn_t (*Init)(void);
  const char *(*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*HandleByPciBusId)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*HandleByIndex)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*ClockInfo)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*Temperature)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*PowerUsage)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*EventReasons)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*Processes)(nvmlDevice_t, unsigned int *, nvml_process_info_t *);
} g_nvml;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static gt_status_t g_status = GT_ERR_LIBRARY;
static char g_msg[256];

#define GT_NVML_MAX_DEVICES 64
static nvmlDevice_t g_dev[GT_NVML_MAX_DEVICES];
static pthread_mutex_t g_dev_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *nvml_str(nvmlReturn_t r) {
  return g_nvml.ErrorString ? g_nvml.ErrorString(r) : "NVML error";
}

/* Return GT_ERR_LIBRARY with the NVML error when an NVML call fails. */
#define GT_NVML_CHECK(call)                                                              \
  do {                                                                                   \
    nvmlReturn_t gt_nvml_r_ = (call);                                                    \
    if (gt_nvml_r_ != NVML_SUCCESS)                                                      \
      return gt_err_set(GT_ERR_LIBRARY, "%s:%d: %s: NVML error %d (%s)", "nvml.c",       \
                        __LINE__, #call, gt_nvml_r_, nvml_str(gt_nvml_r_));              \
  } while (0)

static void *sym(void *h, const char *a, const char *b) {
  void *f = dlsym(h, a);
  return f || !b ? f : dlsym(h, b);
}

static void load_once(void) {
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g_msg, sizeof g_msg, "NVML unavailable: %s", dlerror());
    return;
  }
  g_nvml.Init = (nvmlReturn_t(*)(void))sym(h, "nvmlInit_v2", "nvmlInit");
  g_nvml.ErrorString = (const char *(*)(nvmlReturn_t))sym(h, "nvmlErrorString", NULL);
  g_nvml.HandleByPciBusId = (nvmlReturn_t(*)(const char *, nvmlDevice_t *))sym(
      h, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
  g_nvml.HandleByIndex = (nvmlReturn_t(*)(unsigned int, nvmlDevice_t *))sym(
      h, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  g_nvml.ClockInfo =
      (nvmlReturn_t(*)(nvmlDevice_t, int, unsigned int *))sym(h, "nvmlDeviceGetClockInfo", NULL);
  g_nvml.Temperature =
      (nvmlReturn_t(*)(nvmlDevice_t, int, unsigned int *))sym(h, "nvmlDeviceGetTemperature", NULL);
  g_nvml.PowerUsage =
      (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *))sym(h, "nvmlDeviceGetPowerUsage", NULL);
  /* "Throttle" was renamed "clocks event" (driver 535); either name reads the same bits. */
  g_nvml.EventReasons = (nvmlReturn_t(*)(nvmlDevice_t, unsigned long long *))sym(
      h, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
  g_nvml.Processes = (nvmlReturn_t(*)(nvmlDevice_t, unsigned int *, nvml_process_info_t *))sym(
      h, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2");
  if (!g_nvml.Init || (!g_nvml.HandleByPciBusId && !g_nvml.HandleByIndex)) {
    snprintf(g_msg, sizeof g_msg, "NVML: libnvidia-ml.so.1 lacks nvmlInit/device lookup");
    return;
  }
  nvmlReturn_t r = g_nvml.Init();
  if (r != NVML_SUCCESS) {
    snprintf(g_msg, sizeof g_msg, "NVML: nvmlInit failed: %d (%s)", r, nvml_str(r));
    return;
  }
  g_status = GT_OK;
}

gt_status_t gt_nvml_device(int device, void **handle) {
  *handle = NULL;
  pthread_once(&g_once, load_once);
  if (g_status != GT_OK) return gt_err_set(g_status, "%s", g_msg);
  if (device < 0 || device >= GT_NVML_MAX_DEVICES)
    return gt_err_set(GT_ERR_USAGE, "NVML: device %d out of range", device);
  pthread_mutex_lock(&g_dev_lock);
  nvmlDevice_t d = g_dev[device];
  pthread_mutex_unlock(&g_dev_lock);
  if (d) {
    *handle = d;
    return GT_OK;
  }
  /* CUDA and NVML number devices differently (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER); the PCI
   * bus id is the identity both agree on. */
  char bus[64];
  nvmlReturn_t r = -1;
  if (g_nvml.HandleByPciBusId && cudaDeviceGetPCIBusId(bus, sizeof bus, device) == cudaSuccess)
    r = g_nvml.HandleByPciBusId(bus, &d);
  if (r != NVML_SUCCESS && g_nvml.HandleByIndex && !getenv("CUDA_VISIBLE_DEVICES"))
    r = g_nvml.HandleByIndex((unsigned)device, &d);
  if (r != NVML_SUCCESS)
    return gt_err_set(GT_ERR_LIBRARY, "NVML: no handle for CUDA device %d: %d (%s)", device, r,
                      nvml_str(r));
  pthread_mutex_lock(&g_dev_lock);
  g_dev[device] = d;
  pthread_mutex_unlock(&g_dev_lock);
  *handle = d;
  return GT_OK;
}

gt_status_t gt_nvml_telemetry(void *handle, gt_telemetry_t *out) {
  memset(out, 0, sizeof *out);
  nvmlDevice_t d = handle;
  if (!d) return gt_err_set(GT_ERR_USAGE, "NVML: no device handle");
  unsigned int clock = 0, temp = 0, mw = 0;
  unsigned long long reasons = 0;
  if (g_nvml.ClockInfo) GT_NVML_CHECK(g_nvml.ClockInfo(d, NVML_CLOCK_SM, &clock));
  /* Temperature, power and reasons are not exposed on every board (or in every container):
   * a missing one leaves its field 0 rather than losing the clock. */
  if (g_nvml.Temperature && g_nvml.Temperature(d, NVML_TEMPERATURE_GPU, &temp) != NVML_SUCCESS)
    temp = 0;
  if (g_nvml.PowerUsage && g_nvml.PowerUsage(d, &mw) != NVML_SUCCESS) mw = 0;
  if (g_nvml.EventReasons && g_nvml.EventReasons(d, &reasons) != NVML_SUCCESS) reasons = 0;
  out->valid = true;
  out->sm_clock_mhz = (int)clock;
  out->temp_c = (int)temp;
  out->power_w = mw / 1000.0;
  out->event_reasons = reasons;
  out->throttled = (reasons & NVML_THROTTLE_MASK) != 0;
  return GT_OK;
}

int gt_nvml_busy_processes(void *handle) {
  nvmlDevice_t d = handle;
  if (!d || !g_nvml.Processes) return -1;
  nvml_process_info_t info[64];
  unsigned int n = sizeof info / sizeof info[0];
  nvmlReturn_t r = g_nvml.Processes(d, &n, info);
  if (r == NVML_ERROR_INSUFFICIENT_SIZE) return (int)n; /* more than 64: we are one at most */
  if (r != NVML_SUCCESS) return -1;
  int others = 0;
  unsigned int self = (unsigned int)getpid();
  for (unsigned int i = 0; i < n && i < sizeof info / sizeof info[0]; i++)
    if (info[i].pid != self) others++;
  return others;
}
