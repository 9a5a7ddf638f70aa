// GPU figures as the GPU engine gathers them: each reading of the devices (utilisation,
// memory in use) is charged to the stacks that were running on the CPU side while it was
// taken, in proportion to their share of that time. No NVML here: the engine reads it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "timeline.hpp"

namespace spyglass {

// What one stack, line, function or the whole run saw of one device (or of all of them).
struct GpuFigures {
  double observed_ns = 0;  // time it ran while the GPU was read
  double busy_ns = 0;      // of that, weighted by the GPU's utilisation: GPU-busy time
  double mem_byte_ns = 0;  // memory in use, integrated over observed_ns
  double peak_bytes = 0;   // the most memory in use in a reading charged to it

  void charge(double ns, double util_pct, double bytes);
  GpuFigures& operator+=(const GpuFigures& o);
};

struct GpuDeviceInfo {
  std::string name;
  double total_bytes = 0;
  // Whether every reading gave the process's own figures rather than the device's.
  bool util_own = true;
  bool memory_own = true;
};

// Per stack, slot 0 is every device together (utilisation averaged over the devices,
// memory summed) and slot 1 + i is device i.
class GpuStats {
 public:
  void set_devices(std::vector<GpuDeviceInfo> devices);
  const std::vector<GpuDeviceInfo>& devices() const { return devices_; }
  std::vector<GpuDeviceInfo>& devices() { return devices_; }
  size_t slots() const { return devices_.size() + 1; }

  // Charges `ns` of one reading (per slot: utilisation and bytes) to a stack, or to no
  // stack (kNoStack: nothing of the program ran on the CPU meanwhile).
  static constexpr size_t kNoStack = static_cast<size_t>(-1);
  void charge(size_t stack, double ns, const std::vector<double>& util_pct,
              const std::vector<double>& bytes);
  // Memory in use on all devices at `t_s` seconds into the run.
  void add_memory_point(double t_s, double bytes) { timeline_.add(t_s, bytes); }
  // Why sampling ended early (the driver failing), empty when it did not.
  void set_note(std::string note) { note_ = std::move(note); }

  // Null when the stack got nothing.
  const GpuFigures* stack(size_t index) const;
  const std::vector<GpuFigures>& run() const { return run_; }
  const std::vector<GpuFigures>& unattributed() const { return unattributed_; }
  const std::vector<TimePoint>& timeline() const { return timeline_.points(); }
  const std::string& note() const { return note_; }

 private:
  std::vector<GpuDeviceInfo> devices_;
  std::vector<std::vector<GpuFigures>> stacks_;  // [stack][slot]; empty: nothing charged
  std::vector<GpuFigures> run_;
  std::vector<GpuFigures> unattributed_;
  BoundedTimeline timeline_;
  std::string note_;
};

}  // namespace spyglass
