/* A scripted stand-in for NVIDIA's libnvidia-ml.so.1, exporting the entry points spyglass
 * resolves, so that the GPU engine's whole path runs on machines without a GPU.
 *
 * Set up by FAKE_NVML_CONFIG, comma-separated key=value pairs:
 *   devices=N       devices listed (default 1)
 *   per_process=0|1 whether per-process utilisation and memory are offered (default 1)
 *   other_util=P    utilisation (%) another process adds on every device (default 0)
 *   other_mb=M      memory (10^6 bytes) another process holds on every device (default 0)
 *   fail_after=N    after N utilisation readings every call fails: the GPU is lost
 *   sample_ms=N     per-process utilisation samples are made every N ms, as drivers make
 *                   them, rather than at every call (a call finding none new: NOT_FOUND)
 * The profiled program scripts what it does on the GPU over time by calling
 * fake_nvml_set(device, util_pct, bytes) through ctypes as it enters and leaves its lines
 * (dlopen of the same file in one process gives the same library, so spyglass reads it). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_DEVICES 8
#define SUCCESS 0
#define ERROR_UNINITIALIZED 1
#define ERROR_INVALID_ARGUMENT 2
#define ERROR_NOT_SUPPORTED 3
#define ERROR_NOT_FOUND 6
#define ERROR_INSUFFICIENT_SIZE 7
#define ERROR_GPU_IS_LOST 15
#define OTHER_PID 999999u

typedef struct {
  unsigned int gpu, memory;
} utilization_t;
typedef struct {
  unsigned long long total, free, used;
} memory_t;
typedef struct {
  unsigned int pid;
  unsigned long long time_stamp;
  unsigned int sm_util, mem_util, enc_util, dec_util;
} process_sample_t;
typedef struct {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
  unsigned long long used_gpu_cc_protected_memory;
} process_info_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int configured, devices = 1, per_process = 1;
static long fail_after = -1, readings;
static unsigned int other_util;
static unsigned long long other_bytes;
static unsigned int own_util[MAX_DEVICES];
static unsigned long long own_bytes[MAX_DEVICES];
static unsigned long long sample_us;
static unsigned long long sample_at[MAX_DEVICES];
static unsigned int sample_util[MAX_DEVICES];
static int init_count;
static int init_pid;
static const unsigned long long total_bytes = 16000000000ull;

static void configure(void) {
  if (configured) return;
  configured = 1;
  const char* text = getenv("FAKE_NVML_CONFIG");
  if (text == NULL) return;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", text);
  for (char* item = strtok(buf, ","); item != NULL; item = strtok(NULL, ",")) {
    char* eq = strchr(item, '=');
    if (eq == NULL) continue;
    *eq = '\0';
    long v = strtol(eq + 1, NULL, 10);
    if (strcmp(item, "devices") == 0) devices = v < 0 ? 0 : v > MAX_DEVICES ? MAX_DEVICES : (int)v;
    if (strcmp(item, "per_process") == 0) per_process = v != 0;
    if (strcmp(item, "other_util") == 0) other_util = (unsigned int)v;
    if (strcmp(item, "other_mb") == 0) other_bytes = (unsigned long long)v * 1000000ull;
    if (strcmp(item, "fail_after") == 0) fail_after = v;
    if (strcmp(item, "sample_ms") == 0) sample_us = (unsigned long long)v * 1000ull;
  }
}

static int lost(void) { return fail_after >= 0 && readings > fail_after; }

static long device_index(void* device) { return (long)(size_t)device - 1; }

static unsigned long long now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (unsigned long long)tv.tv_sec * 1000000ull + (unsigned long long)tv.tv_usec;
}

/* ------------------------------------------------------------- the script's controls */

void fake_nvml_set(int device, unsigned int util_pct, unsigned long long bytes) {
  pthread_mutex_lock(&lock);
  if (device >= 0 && device < MAX_DEVICES) {
    own_util[device] = util_pct;
    own_bytes[device] = bytes;
  }
  pthread_mutex_unlock(&lock);
}
int fake_nvml_init_count(void) { return init_count; }
int fake_nvml_init_pid(void) { return init_pid; }
long fake_nvml_readings(void) { return readings; }

/* ------------------------------------------------------------- NVML's entry points */

int nvmlInit_v2(void) {
  pthread_mutex_lock(&lock);
  configure();
  ++init_count;
  init_pid = (int)getpid();
  pthread_mutex_unlock(&lock);
  return SUCCESS;
}

int nvmlShutdown(void) { return SUCCESS; }

const char* nvmlErrorString(int result) {
  switch (result) {
    case SUCCESS: return "Success";
    case ERROR_GPU_IS_LOST: return "GPU is lost";
    case ERROR_NOT_SUPPORTED: return "Not Supported";
    default: return "Unknown Error";
  }
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (init_count == 0) return ERROR_UNINITIALIZED;
  if (lost()) return ERROR_GPU_IS_LOST;
  *count = (unsigned int)devices;
  return SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if ((int)index >= devices) return ERROR_INVALID_ARGUMENT;
  *device = (void*)(size_t)(index + 1);
  return SUCCESS;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  snprintf(name, length, "Fake GPU %ld", device_index(device));
  return SUCCESS;
}

int nvmlDeviceGetUtilizationRates(void* device, utilization_t* out) {
  long i = device_index(device);
  if (i < 0 || i >= devices) return ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&lock);
  ++readings;
  int failed = lost();
  unsigned int util = own_util[i] + other_util;
  pthread_mutex_unlock(&lock);
  if (failed) return ERROR_GPU_IS_LOST;
  out->gpu = util > 100 ? 100 : util;
  out->memory = 0;
  return SUCCESS;
}

int nvmlDeviceGetMemoryInfo(void* device, memory_t* out) {
  long i = device_index(device);
  if (i < 0 || i >= devices) return ERROR_INVALID_ARGUMENT;
  if (lost()) return ERROR_GPU_IS_LOST;
  pthread_mutex_lock(&lock);
  out->total = total_bytes;
  out->used = own_bytes[i] + other_bytes;
  out->free = out->total - out->used;
  pthread_mutex_unlock(&lock);
  return SUCCESS;
}

int nvmlDeviceGetProcessUtilization(void* device, process_sample_t* samples, unsigned int* count,
                                    unsigned long long last_seen) {
  long i = device_index(device);
  if (i < 0 || i >= devices) return ERROR_INVALID_ARGUMENT;
  if (!per_process) return ERROR_NOT_SUPPORTED;
  if (lost()) return ERROR_GPU_IS_LOST;
  pthread_mutex_lock(&lock);
  unsigned long long t = now_us();
  if (sample_us == 0 || t - sample_at[i] >= sample_us) {
    sample_at[i] = t;
    sample_util[i] = own_util[i];
  }
  t = sample_at[i];
  process_sample_t mine = {(unsigned int)getpid(), t, sample_util[i], 0, 0, 0};
  process_sample_t other = {OTHER_PID, t, other_util, 0, 0, 0};
  pthread_mutex_unlock(&lock);
  if (t <= last_seen) {
    *count = 0;
    return ERROR_NOT_FOUND;
  }
  if (samples == NULL || *count < 2) {
    *count = 2;
    return ERROR_INSUFFICIENT_SIZE;
  }
  samples[0] = other;
  samples[1] = mine;
  *count = 2;
  return SUCCESS;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count,
                                            process_info_t* infos) {
  long i = device_index(device);
  if (i < 0 || i >= devices) return ERROR_INVALID_ARGUMENT;
  if (!per_process) return ERROR_NOT_SUPPORTED;
  if (lost()) return ERROR_GPU_IS_LOST;
  if (infos == NULL || *count < 2) {
    *count = 2;
    return ERROR_INSUFFICIENT_SIZE;
  }
  pthread_mutex_lock(&lock);
  process_info_t other = {OTHER_PID, other_bytes, 0, 0, 0};
  process_info_t mine = {(unsigned int)getpid(), own_bytes[i], 0, 0, 0};
  pthread_mutex_unlock(&lock);
  infos[0] = other;
  infos[1] = mine;
  *count = 2;
  return SUCCESS;
}
