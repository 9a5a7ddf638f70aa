#include "../nvml.hpp"

#include <dlfcn.h>
#include <sys/time.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace spyglass::platform {

namespace {

// NVML's C types, as its public header declares them.
using nvmlReturn = int;
using nvmlDevice = void*;
constexpr nvmlReturn kSuccess = 0;
constexpr nvmlReturn kNotSupported = 3;
constexpr nvmlReturn kNotFound = 6;
constexpr nvmlReturn kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ULL;
// How long a per-process utilisation sample stands for the process: about the longest
// period at which drivers make them.
constexpr unsigned long long kHoldUs = 1'000'000;

struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct ProcessUtilization {
  unsigned int pid;
  unsigned long long time_stamp;
  unsigned int sm_util;
  unsigned int mem_util;
  unsigned int enc_util;
  unsigned int dec_util;
};
// nvmlProcessInfo_t grew twice; each version of the call fills its own layout, and all
// begin with the pid and the memory used.
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
struct ProcessInfoV2 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
struct ProcessInfoV3 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
  unsigned long long used_gpu_cc_protected_memory;
};

struct Api {
  nvmlReturn (*init)() = nullptr;
  nvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn) = nullptr;
  nvmlReturn (*count)(unsigned int*) = nullptr;
  nvmlReturn (*handle)(unsigned int, nvmlDevice*) = nullptr;
  nvmlReturn (*name)(nvmlDevice, char*, unsigned int) = nullptr;
  nvmlReturn (*utilization)(nvmlDevice, Utilization*) = nullptr;
  nvmlReturn (*memory)(nvmlDevice, Memory*) = nullptr;
  nvmlReturn (*process_utilization)(nvmlDevice, ProcessUtilization*, unsigned int*,
                                    unsigned long long) = nullptr;
  nvmlReturn (*processes)(nvmlDevice, unsigned int*, void*) = nullptr;
  size_t process_info_size = 0;
};

template <typename F>
void resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
}

// Loads the library once per process; null when it is absent or lacks what is needed.
const Api* load_api(std::string* why) {
  static std::once_flag once;
  static Api api;
  static bool ok = false;
  static std::string failure;
  std::call_once(once, [] {
    void* lib = dlopen(nvml_library_name(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      failure = "no NVML library (" + std::string(nvml_library_name()) + ")";
      return;
    }
    resolve(lib, "nvmlInit_v2", &api.init);
    resolve(lib, "nvmlShutdown", &api.shutdown);
    resolve(lib, "nvmlErrorString", &api.error_string);
    resolve(lib, "nvmlDeviceGetCount_v2", &api.count);
    resolve(lib, "nvmlDeviceGetHandleByIndex_v2", &api.handle);
    resolve(lib, "nvmlDeviceGetName", &api.name);
    resolve(lib, "nvmlDeviceGetUtilizationRates", &api.utilization);
    resolve(lib, "nvmlDeviceGetMemoryInfo", &api.memory);
    resolve(lib, "nvmlDeviceGetProcessUtilization", &api.process_utilization);
    const std::pair<const char*, size_t> versions[] = {
        {"nvmlDeviceGetComputeRunningProcesses_v3", sizeof(ProcessInfoV3)},
        {"nvmlDeviceGetComputeRunningProcesses_v2", sizeof(ProcessInfoV2)},
        {"nvmlDeviceGetComputeRunningProcesses", sizeof(ProcessInfoV1)}};
    for (const auto& [symbol, size] : versions) {
      resolve(lib, symbol, &api.processes);
      if (api.processes != nullptr) {
        api.process_info_size = size;
        break;
      }
    }
    if (api.init == nullptr || api.count == nullptr || api.handle == nullptr ||
        api.utilization == nullptr || api.memory == nullptr) {
      failure = "the NVML library lacks the calls spyglass reads";
      return;  // left loaded: unloading a driver library is not safe
    }
    ok = true;
  });
  if (!ok && why != nullptr) *why = failure;
  return ok ? &api : nullptr;
}

unsigned long long now_us() {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  return static_cast<unsigned long long>(tv.tv_sec) * 1000000ULL +
         static_cast<unsigned long long>(tv.tv_usec);
}

}  // namespace

const char* nvml_library_name() {
  const char* name = std::getenv("SPYGLASS_NVML_LIBRARY");
  return name != nullptr && name[0] != '\0' ? name : "libnvidia-ml.so.1";
}

Nvml::~Nvml() { close(); }

bool Nvml::open(std::string* why) {
  close();
  const Api* api = load_api(why);
  if (api == nullptr) return false;
  // Initialised per process: a forked child's handles are its own (the parent's are not
  // valid there), so it opens anew.
  nvmlReturn r = api->init();
  if (r != kSuccess) {
    *why = "NVML did not start: " + error_string(r);
    return false;
  }
  unsigned int count = 0;
  r = api->count(&count);
  if (r != kSuccess || count == 0) {
    *why = r != kSuccess ? "NVML lists no devices: " + error_string(r) : "no GPU";
    if (api->shutdown != nullptr) (void)api->shutdown();
    return false;
  }
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice device = nullptr;
    if (api->handle(i, &device) != kSuccess) continue;
    GpuDevice info;
    char name[96] = {};
    if (api->name != nullptr && api->name(device, name, sizeof(name) - 1) == kSuccess) {
      info.name = name;
    }
    Memory memory{};
    if (api->memory(device, &memory) == kSuccess) info.total_bytes = memory.total;
    handles_.push_back(device);
    devices_.push_back(std::move(info));
  }
  if (handles_.empty()) {
    *why = "no GPU NVML could open";
    if (api->shutdown != nullptr) (void)api->shutdown();
    return false;
  }
  last_seen_us_.assign(handles_.size(), now_us());
  held_pct_.assign(handles_.size(), 0.0);
  held_at_us_.assign(handles_.size(), 0);
  open_ = true;
  return true;
}

void Nvml::close() {
  if (!open_) return;
  open_ = false;
  handles_.clear();
  devices_.clear();
  const Api* api = load_api(nullptr);
  if (api != nullptr && api->shutdown != nullptr) (void)api->shutdown();
}

std::string Nvml::error_string(int code) const {
  const Api* api = load_api(nullptr);
  const char* text =
      api != nullptr && api->error_string != nullptr ? api->error_string(code) : nullptr;
  std::string out = text != nullptr ? text : "error";
  return out + " (" + std::to_string(code) + ")";
}

int Nvml::read(size_t index, pid_t pid, GpuReading* out) {
  const Api* api = load_api(nullptr);
  if (!open_ || api == nullptr || index >= handles_.size()) return kNotFound;
  nvmlDevice device = handles_[index];
  *out = GpuReading{};

  Utilization util{};
  nvmlReturn r = api->utilization(device, &util);
  if (r != kSuccess) return r;
  out->util_pct = util.gpu;
  if (api->process_utilization != nullptr) {
    // The process's samples since the last reading: its SM share, averaged over them. The
    // driver makes them a few times a second, far less often than spyglass reads, so
    // between two the last one holds, for as long as such a period; after that, no
    // sample (NOT_FOUND included) means the process left the device idle.
    const unsigned long long since = last_seen_us_[index];
    unsigned int n = 0;
    r = api->process_utilization(device, nullptr, &n, since);
    if (r == kSuccess || r == kInsufficientSize || r == kNotFound) {
      double sum = 0;
      unsigned int mine = 0;
      if (r == kInsufficientSize && n > 0) {
        scratch_.assign(static_cast<size_t>(n) * sizeof(ProcessUtilization), 0);
        auto* samples = reinterpret_cast<ProcessUtilization*>(scratch_.data());
        r = api->process_utilization(device, samples, &n, since);
        if (r == kSuccess) {
          for (unsigned int i = 0; i < n; ++i) {
            last_seen_us_[index] = std::max(last_seen_us_[index], samples[i].time_stamp);
            if (samples[i].pid != static_cast<unsigned int>(pid)) continue;
            sum += samples[i].sm_util;
            ++mine;
          }
        }
      }
      if (r == kSuccess || r == kNotFound || r == kInsufficientSize) {
        const unsigned long long now = now_us();
        if (mine > 0) {
          held_pct_[index] = sum / mine;
          held_at_us_[index] = now;
        } else if (now - held_at_us_[index] > kHoldUs) {
          held_pct_[index] = 0;
        }
        out->util_pct = held_pct_[index];
        out->util_own = true;
      } else if (r != kNotSupported) {
        return r;
      }
    } else if (r != kNotSupported) {
      return r;
    }
  }

  Memory memory{};
  r = api->memory(device, &memory);
  if (r != kSuccess) return r;
  out->used_bytes = memory.used;
  if (api->processes != nullptr) {
    unsigned int n = 0;
    r = api->processes(device, &n, nullptr);
    if (r == kSuccess || r == kInsufficientSize) {
      uint64_t mine = 0;
      bool known = true;
      if (r == kInsufficientSize && n > 0) {
        n += 4;  // processes may start between the two calls
        scratch_.assign(static_cast<size_t>(n) * api->process_info_size, 0);
        r = api->processes(device, &n, scratch_.data());
        for (unsigned int i = 0; r == kSuccess && i < n; ++i) {
          // Every layout starts with the V1 members, at the same offsets.
          ProcessInfoV1 entry{};
          std::memcpy(&entry.pid, scratch_.data() + i * api->process_info_size, sizeof(entry.pid));
          std::memcpy(&entry.used_gpu_memory,
                      scratch_.data() + i * api->process_info_size +
                          offsetof(ProcessInfoV1, used_gpu_memory),
                      sizeof(entry.used_gpu_memory));
          if (entry.pid != static_cast<unsigned int>(pid)) continue;
          if (entry.used_gpu_memory == kValueNotAvailable) {
            known = false;  // some drivers (Windows WDDM, some vGPUs) do not tell
          } else {
            mine += entry.used_gpu_memory;
          }
        }
      }
      if (r == kSuccess && known) {
        out->used_bytes = mine;
        out->memory_own = true;
      } else if (r != kSuccess && r != kNotSupported && r != kInsufficientSize) {
        return r;
      }
    } else if (r != kNotSupported) {
      return r;
    }
  }
  return kSuccess;
}

}  // namespace spyglass::platform
