// NVIDIA's management library (NVML), loaded at run time: spyglass never links it, so it
// builds and runs where no driver is installed. Only the few entry points the GPU engine
// reads are resolved, with their types declared here (no CUDA headers at build time).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace spyglass::platform {

// The library dlopen()ed: libnvidia-ml.so.1, or the file the environment variable
// SPYGLASS_NVML_LIBRARY names (a test hook: the tests load a scripted fake).
const char* nvml_library_name();

struct GpuDevice {
  std::string name;
  uint64_t total_bytes = 0;
};

// One reading of one device, for one process.
struct GpuReading {
  double util_pct = 0;      // the process's share of the device's time, or the device's
  uint64_t used_bytes = 0;  // the process's memory on the device, or the device's
  bool util_own = false;    // util_pct is the process's own (per-process samples)
  bool memory_own = false;  // used_bytes is the process's own
};

class Nvml {
 public:
  Nvml() = default;
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // Loads the library (once per process) and initialises it for this process, finding its
  // devices. False, with the reason, when there is no library, no driver or no device.
  bool open(std::string* why);
  bool is_open() const { return open_; }
  const std::vector<GpuDevice>& devices() const { return devices_; }

  // Reads `device` for process `pid`. Returns 0, or the NVML error that ended the reading
  // (the driver gone, the GPU lost): the caller stops reading then.
  int read(size_t device, pid_t pid, GpuReading* out);
  std::string error_string(int code) const;
  // nvmlShutdown, if open (the library stays loaded).
  void close();
  // In a forked child: drops the parent's session without shutting it down.
  void forget() {
    open_ = false;
    handles_.clear();
  }

 private:
  bool open_ = false;
  std::vector<void*> handles_;  // nvmlDevice_t, per device
  std::vector<GpuDevice> devices_;
  std::vector<unsigned long long> last_seen_us_;
  std::vector<double> held_pct_;  // per device, the process's last utilisation
  std::vector<unsigned long long>
      held_at_us_;  // and when it was read  // per device, per-process samples read up to
  std::vector<char> scratch_;
};

}  // namespace spyglass::platform
