// The CPU engine: one CPU-time timer per thread, whose signal the handler
// (signal_handler.cpp) answers by writing a sample into the thread's ring; the engine
// drains the rings into the collection and accounts for the CPU a thread used between its
// last sample and its end.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

#include "../core/sample.hpp"
#include "../core/thread_kinds.hpp"
#include "../platform/code_ranges.hpp"
#include "../platform/native_symbols.hpp"
#include "../platform/threads.hpp"
#include "../platform/unwind_tables.hpp"
#include "engine.hpp"

namespace spyglass::cpython {

// A thread registering itself has its first sample due this soon: in effect on the first
// scheduler tick that finds it running, since CPU-time timers are checked only on ticks.
inline constexpr uint64_t kFirstSampleNs = 1000;

class CpuEngine final : public Engine {
 public:
  CpuEngine(const EngineContext& context, uint64_t interval_ns, std::vector<int> call_opcodes);
  ~CpuEngine() override;

  const char* name() const override { return "cpu"; }
  void start(uint64_t start_ns) override;
  void stop() override;
  void finish() override;
  bool thread_started(const ProfiledThread& thread, const ThreadStart& how) override;
  void thread_ended(const ProfiledThread& thread, const ThreadEnd& how) override;
  void drain(Drain why) override;
  void upkeep() override;
  void after_fork_child() override;
  void describe(RunInfo& run) const override;

 private:
  struct CpuThread {
    uint32_t slot = 0;
    platform::ThreadTimer timer;
    uint64_t dropped_base = 0;     // its ring's drops before it was ours
    size_t last_stack = SIZE_MAX;  // of its latest sample: where its CPU went last
    CpuClass last_class = CpuClass::kPython;
  };

  void rebuild_ranges();
  // Publishes new unwind tables with the objects holding `wanted` compiled; false when
  // there was nothing new to compile. Call with ranges_mutex_ held.
  // `every`: compile every loaded object's table, not only those `wanted`.
  bool publish_unwind_tables(const std::vector<uintptr_t>& wanted, bool every = false);
  void drain_slot(uint32_t slot);
  void aggregate(const SampleRecord& rec);
  void release(CpuThread& cpu);
  // cpu_remainder.cpp: a thread's CPU since its last sample, charged as a sample.
  void charge_remainder(const ProfiledThread& thread, CpuThread& cpu,
                        const platform::CpuSplit& now);
  void settle_thread_kinds();

  uint64_t interval_ns_;
  std::vector<int> call_opcodes_;
  std::unordered_map<pid_t, CpuThread> threads_;
  std::mutex ranges_mutex_;
  // Older tables are kept: the handler may still be reading one.
  std::vector<std::unique_ptr<platform::CodeRanges>> ranges_;
  // Addresses native samples could not unwind from, for upkeep to compile their objects.
  std::mutex unwind_mutex_;
  std::vector<uintptr_t> unwind_wanted_;
  // Set as the run ends: a table being compiled then is dropped, not waited for.
  std::atomic<bool> stopping_{false};
  uint64_t seen_unknown_hits_ = 0;
  unsigned long long seen_loader_generation_ = 0;  // of the objects last journalled
  uint64_t dropped_ = 0;
  ThreadKinds kinds_;
  std::unordered_map<uint32_t, FrameKey> kind_targets_;
  std::mt19937_64 rng_;
};

}  // namespace spyglass::cpython
