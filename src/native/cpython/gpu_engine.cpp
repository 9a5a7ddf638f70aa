#include "gpu_engine.hpp"

#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "../platform/clock.hpp"

namespace spyglass::cpython {

std::unique_ptr<GpuEngine> GpuEngine::open(const EngineContext& context, uint64_t interval_ns,
                                           std::string* why) {
  std::unique_ptr<GpuEngine> engine(new GpuEngine(context, interval_ns));
  if (!engine->nvml_.open(why)) return nullptr;
  std::vector<GpuDeviceInfo> devices;
  for (const platform::GpuDevice& d : engine->nvml_.devices()) {
    GpuDeviceInfo info;
    info.name = d.name;
    info.total_bytes = static_cast<double>(d.total_bytes);
    devices.push_back(std::move(info));
  }
  engine->stats_.set_devices(std::move(devices));
  return engine;
}

void GpuEngine::start(uint64_t start_ns) {
  start_ns_ = start_ns;
  last_read_ns_ = start_ns;
}

void GpuEngine::begin() {
  std::lock_guard<std::mutex> lock(ctx().lock);
  ctx().collection.keep_recent(true);
}

void GpuEngine::work() {
  if (failed_) return;
  const size_t n = nvml_.devices().size();
  Reading reading;
  reading.util.assign(n + 1, 0.0);
  reading.bytes.assign(n + 1, 0.0);
  std::vector<platform::GpuReading> raw(n);
  int error = 0;
  const pid_t pid = getpid();
  for (size_t i = 0; i < n && error == 0; ++i) error = nvml_.read(i, pid, &raw[i]);
  const uint64_t now = platform::monotonic_ns();
  std::lock_guard<std::mutex> lock(ctx().lock);
  if (error != 0) {
    failed_ = true;
    char when[32];
    std::snprintf(when, sizeof(when), "%.2f", static_cast<double>(now - start_ns_) / 1e9);
    // A first reading failing is a GPU NVML cannot read this way (a MIG instance has no
    // device-wide utilisation), not a driver going away.
    const bool first = last_read_ns_ == start_ns_;
    stats_.set_note(first ? "NVML could not read the GPU (" + nvml_.error_string(error) +
                                "): no GPU figures"
                          : "NVML stopped answering " + std::string(when) + " s into the run (" +
                                nvml_.error_string(error) + "): the GPU figures end there");
    return;
  }
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    reading.util[i + 1] = raw[i].util_pct;
    reading.bytes[i + 1] = static_cast<double>(raw[i].used_bytes);
    reading.util[0] += raw[i].util_pct / static_cast<double>(n);
    total += static_cast<double>(raw[i].used_bytes);
    GpuDeviceInfo& d = stats_.devices()[i];
    d.util_own = d.util_own && raw[i].util_own;
    d.memory_own = d.memory_own && raw[i].memory_own;
  }
  reading.bytes[0] = total;
  reading.dt_ns = now - last_read_ns_;
  last_read_ns_ = now;
  stats_.add_memory_point(static_cast<double>(now - start_ns_) / 1e9, total);
  pending_.push_back(std::move(reading));
}

void GpuEngine::drain(Drain why) {
  // A code object dying needs nothing of this engine: stack indices outlive codes.
  if (why == Drain::kTick) charge_locked(false);
}

void GpuEngine::charge_locked(bool final) {
  for (const Collection::Recent& r : ctx().collection.take_recent()) {
    auto& [cpu, wait] = unclaimed_[r.stack];
    cpu += r.cpu_ns;
    wait += r.wait_ns;
  }
  if (pending_.empty()) return;  // the samples wait for the next reading
  // A reading stands for the time since the previous one; what ran on the CPU side then
  // shares it by CPU time. A thread idling in a sleep or on a lock takes no CPU, so the
  // line driving the GPU gets the reading, not the threads waiting beside it. Only when
  // nothing ran at all (every thread blocked, e.g. in a synchronising call that sleeps)
  // do the waiting lines share it, by their wait.
  uint64_t cpu_total = 0;
  uint64_t wait_total = 0;
  for (const auto& [stack, t] : unclaimed_) {
    cpu_total += t.first;
    wait_total += t.second;
  }
  // A CPU-bound thread's samples may reach the collection ticks after its neighbours'
  // waits or a starting thread's sliver of CPU (its sample is due after an interval of its
  // CPU, not of wall time): until about one sample's worth of CPU is in, the readings wait.
  if (cpu_total < interval_ns_ / 2 && !final && ++ticks_waited_ < kPatienceTicks) return;
  ticks_waited_ = 0;
  const bool by_cpu = cpu_total > 0;
  const double total = static_cast<double>(by_cpu ? cpu_total : wait_total);
  for (const Reading& reading : pending_) {
    const double dt = static_cast<double>(reading.dt_ns);
    if (total <= 0) {
      stats_.charge(GpuStats::kNoStack, dt, reading.util, reading.bytes);
      continue;
    }
    for (const auto& [stack, t] : unclaimed_) {
      const double weight = static_cast<double>(by_cpu ? t.first : t.second) / total;
      if (weight > 0) stats_.charge(stack, dt * weight, reading.util, reading.bytes);
    }
  }
  pending_.clear();
  unclaimed_.clear();
}

void GpuEngine::finish() {
  charge_locked(true);
  ctx().collection.keep_recent(false);
  nvml_.close();
}

void GpuEngine::after_fork_child() {
  // The parent's NVML session is not the child's: a profiler the child starts opens its
  // own, and this one must not shut the inherited one down.
  nvml_.forget();
  failed_ = true;
  pending_.clear();
  unclaimed_.clear();
}

}  // namespace spyglass::cpython
