// The CPU engine: one CPU-time timer per thread, whose signal the handler
// (signal_handler.cpp) answers by writing a sample into the thread's ring; the engine
// drains the rings into the collection and accounts for the CPU a thread used between its
// last sample and its end.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <array>
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
#include "held_calls.hpp"
#include "library_waits.hpp"

namespace spyglass::cpython {

// A thread registering itself has a sample due this soon: in effect on the first scheduler
// tick that finds it running, since CPU-time timers are checked only on ticks.
inline constexpr uint64_t kFirstSampleNs = 1000;
// The program's first sample, once its __main__ starts (program_starting): on the first
// tick after this much of its CPU, past the bootstrap hook's own return and the program's
// first statements (tens of microseconds), where a tick would find no line of its work.
inline constexpr uint64_t kProgramFirstSampleNs = 200'000;
// A thread with a Python target gets that first-tick sample from a one-shot timer of its
// own, and its periodic timer starts at a uniformly random point of its first interval:
// its samples then fall anywhere in its work, and the first moments, which the periodic
// timer seldom sees (it is checked on ticks too), are seen by the first-tick one. While
// young, for this many intervals of its CPU (kYoungMinNs at least: an interval shorter than
// a tick has its samples a tick apart; kYoungMaxNs at most), its CPU is charged as its
// kind's is (core/thread_kinds.hpp).
inline constexpr uint64_t kYoungIntervals = 4;
inline constexpr uint64_t kYoungMinNs = 40'000'000;
inline constexpr uint64_t kYoungMaxNs = 400'000'000;

// The real-time signal the CPU timers send (-1 before the first run picked one): it stays
// the sampler's for the life of the process.
int sample_signal();

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
  void thread_claimed(const ProfiledThread& thread) override;
  void program_starting(const ProfiledThread& thread) override;
  void drain(Drain why) override;
  void code_dying(const void* code) override;
  void upkeep() override;
  bool upkeep_due() const override;
  void after_fork_child() override;
  void describe(RunInfo& run) const override;

 private:
  struct CpuThread {
    uint32_t slot = 0;
    platform::ThreadTimer timer;
    uint64_t dropped_base = 0;     // its ring's drops before it was ours
    uint64_t seen = 0;             // samples aggregated, held ones included
    bool upgrade_tried = false;    // its timer offered a perf clock (kUpgradeAfterSamples)
    size_t last_stack = SIZE_MAX;  // of its latest sample: where its CPU went last
    CpuClass last_class = CpuClass::kPython;
    // When it was last seen running native code under a Python frame (monotonic, as the
    // sample was taken), and where: what a native pool's samples are lent to.
    uint64_t native_at_ns = 0;
    size_t native_stack = SIZE_MAX;
    // The libraries (CodeRanges::library_package) that sample's native stack was in: a
    // pool's thread works for a caller inside the same library, not for one asleep in
    // time.sleep or joining a thread.
    std::array<uint64_t, 4> native_packages{};
    // A thread a scan found after it started in the run (a C library's): its CPU clock as
    // read at the latest tick, for its first kWatchNs. A scan finds such a thread gone
    // when it has ended, and its clock can no longer be read: what it used after its last
    // sample was lost (a quarter of the CPU of threads of 20 ms each).
    uint64_t watch_until_ns = 0;
    uint64_t watched_cpu_ns = 0;
    // Whether its first sample (in the run's code, not spyglass's) found it outside the
    // program's files: see cpu_remainder.cpp.
    bool first_seen = false;
    bool began_outside = false;
    platform::ThreadTimer first_tick;  // see kYoungIntervals
    uint64_t position_ns = 0;          // its CPU up to its latest sample (with a target)
    bool young = false;                // see kYoungIntervals
  };

  void rebuild_ranges();
  // Publishes new unwind tables with the objects holding `wanted` compiled; false when
  // there was nothing new to compile. Call with ranges_mutex_ held.
  // `every`: compile every loaded object's table, not only those `wanted`.
  bool publish_unwind_tables(const std::vector<uintptr_t>& wanted, bool every = false);
  void drain_slot(uint32_t slot);
  void aggregate(const SampleRecord& rec);
  // Lets go of the held samples whose tables are built and of those `must_go` picks.
  template <typename MustGo>
  void release_held(MustGo&& must_go) {
    held_.release(ctx().collection, must_go, [this](const HeldCalls::Held& h) { add_held(h); });
  }
  // A held sample's figures, added to its named stack; the latest of its thread's samples
  // still, it is where the thread's CPU went last.
  void add_held(const HeldCalls::Held& held);
  // Notes whether the thread's first sample, `rec`, found it in the program's files.
  void note_first(CpuThread& cpu, const SampleRecord& rec) const;
  // Notes where a thread's sample found it running native code under a Python frame.
  static void note_native(CpuThread& cpu, const SampleRecord& rec, size_t index);
  // The packages (CodeRanges::package_of) of `chain`'s functions.
  static std::vector<uint64_t> chain_packages(const std::vector<uintptr_t>& chain);
  // A sample of a thread running no Python (a BLAS or OpenMP pool): charged to the stack
  // of the Python thread that was running native code of the same library most recently,
  // within kLendIntervals; failing that, to where a thread was last found blocked in a call into
  // the same library, as lately (blocked_caller); false when neither was.
  bool lend_to_caller(const SampleRecord& rec, uint64_t now_ns, size_t* lent_to);
  // The stack of the thread found blocked, when `rec` was taken, in a call into the
  // package of one of `chain`'s functions (library_waits.hpp); false when none was.
  bool blocked_caller(const std::vector<uint64_t>& packages, const SampleRecord& rec,
                      uint64_t now_ns, size_t* stack) const;
  static constexpr uint64_t kLendIntervals = cpython::kLendIntervals;
  bool libc_table_wanted_ = false;  // see thread_started
  void release(CpuThread& cpu);
  // cpu_remainder.cpp: a thread's CPU since its last sample, charged as a sample. On the
  // thread itself, GIL held.
  void charge_remainder(const ProfiledThread& thread, CpuThread& cpu,
                        const platform::CpuSplit& now);
  // On the thread itself, GIL held, as it ends: its stack, less spyglass's own frames on
  // top of it (an empty one when none other is left); SIZE_MAX when it has no Python
  // thread state to read.
  size_t stack_at_end(pid_t tid);
  // A watched thread's CPU from its last sample to its clock's last reading, charged where
  // that sample went (for a library's thread, the caller it was lent to).
  void charge_watched(pid_t tid, CpuThread& cpu);
  // Reads the clocks of the threads watched (CpuThread::watch_until_ns).
  void read_watched_clocks(uint64_t now_ns);
  static constexpr uint64_t kWatchNs = 1'000'000'000;
  // A thread that lived this many samples past its young ones gets a perf clock instead of
  // its POSIX timer (platform/perf_clock.hpp): not one that lives a few milliseconds, whose
  // opening and closing it cost more than its work (a thread-per-request server's).
  static constexpr uint64_t kUpgradeAfterSamples = 3;
  // Shares out the young threads' CPU held long enough (`all`: at the end, all of it).
  void settle_thread_kinds(bool all);
  // A young thread's sample: seen where it was taken, its CPU charged as its kind's.
  void aggregate_young(const SampleRecord& rec, const ProfiledThread& thread, CpuThread& cpu);
  void disarm(CpuThread& cpu);
  // Arms `cpu`'s first-tick timer (see kYoungIntervals), its periodic one being armed, and
  // sets the periodic one to start at a random point of its first interval; false (the
  // timers as they were) when the first-tick one could not be armed.
  bool make_young(pid_t tid, uint32_t cookie, CpuThread& cpu);
  uint64_t young_ns() const {
    return std::clamp(kYoungIntervals * interval_ns_, kYoungMinNs, kYoungMaxNs);
  }
  // CPU a thread of `thread`'s kind used between two positions (its CPU since it started),
  // charged as its kind's threads were seen to use theirs there, around now: held a while
  // (until the end when none was seen yet).
  void charge_kind(const ProfiledThread& thread, uint64_t from_ns, uint64_t to_ns, uint64_t user_ns,
                   uint64_t system_ns);
  void add_picks(int32_t tid, const std::vector<ThreadKinds::Pick>& picks);

  uint64_t interval_ns_;
  std::vector<int> call_opcodes_;
  std::unordered_map<pid_t, CpuThread> threads_;
  std::mutex ranges_mutex_;
  // Older tables are kept: the handler may still be reading one.
  std::vector<std::unique_ptr<platform::CodeRanges>> ranges_;
  // Addresses native samples could not unwind from, for upkeep to compile their objects.
  mutable std::mutex unwind_mutex_;
  std::vector<uintptr_t> unwind_wanted_;
  // Set as the run ends: a table being compiled then is dropped, not waited for.
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> seen_unknown_hits_{0};     // upkeep's; read by upkeep_due
  unsigned long long seen_loader_generation_ = 0;  // of the objects last journalled
  unsigned long long seen_ranges_generation_ = 0;  // of the ranges last built
  uint64_t dropped_ = 0;
  ThreadKinds kinds_;
  std::unordered_map<uint32_t, FrameKey> kind_targets_;
  std::mt19937_64 rng_;
  HeldCalls held_;
};

}  // namespace spyglass::cpython
