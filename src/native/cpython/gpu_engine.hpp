// The GPU engine: a thread of its own reads NVML (platform/nvml.hpp) every interval and
// charges each reading to the stacks the program ran on the CPU side meanwhile. Made only
// when NVML opens; on a machine without it nothing is loaded and nothing runs. Nothing
// here is on the signal handler's or the allocator hooks' path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../core/gpu_stats.hpp"
#include "../platform/nvml.hpp"
#include "collection.hpp"
#include "engine.hpp"

namespace spyglass::cpython {

class GpuEngine final : public Engine {
 public:
  // Null, with the reason, when NVML cannot be opened here (no library, driver or device).
  static std::unique_ptr<GpuEngine> open(const EngineContext& context, uint64_t interval_ns,
                                         std::string* why);

  const char* name() const override { return "gpu"; }
  void start(uint64_t start_ns) override;
  void begin() override;
  void finish() override;
  void drain(Drain why) override;
  bool has_worker() const override { return true; }
  const char* worker_name() const override { return "spyglass-gpu"; }
  void work() override;
  void after_fork_child() override;

  const GpuStats& stats() const { return stats_; }

 private:
  GpuEngine(const EngineContext& context, uint64_t interval_ns)
      : Engine(context), interval_ns_(interval_ns) {}

  struct Reading {
    uint64_t dt_ns = 0;         // the time since the previous reading: what it stands for
    std::vector<double> util;   // per slot (GpuStats): %
    std::vector<double> bytes;  // per slot: memory in use
  };

  // Lock held: charges the readings taken so far to the samples drained so far (`final`:
  // the last time, whatever they are).
  void charge_locked(bool final);
  // Ticks with readings but less than half a sample's CPU waited through before the
  // readings are charged anyway (by CPU, or by waits if none): a quarter of a second at
  // the default interval, as on a loaded machine the thread driving the GPU may be
  // runnable but not running for a while.
  static constexpr int kPatienceTicks = 25;
  int ticks_waited_ = 0;

  platform::Nvml nvml_;
  GpuStats stats_;                // guarded by the collector's lock
  std::vector<Reading> pending_;  // the same
  // Samples not yet matched with a reading: stack index → CPU and wait time.
  std::unordered_map<size_t, std::pair<uint64_t, uint64_t>> unclaimed_;
  uint64_t interval_ns_;
  uint64_t start_ns_ = 0;
  uint64_t last_read_ns_ = 0;  // the worker's
  bool failed_ = false;        // the worker's: NVML failed, no more readings
};

}  // namespace spyglass::cpython
