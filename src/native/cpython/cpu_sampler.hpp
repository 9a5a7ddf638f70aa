// The CPU sampler: one CPU-time timer per thread, a control thread that registers threads
// and drains their sample rings, and a wait thread that charges off-CPU time to the line
// each blocked thread is waiting on.
#pragma once

#include <Python.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../core/journal.hpp"
#include "../core/memory_stats.hpp"
#include "../core/profile_model.hpp"
#include "../core/sample.hpp"
#include "../core/stack_depths.hpp"
#include "../core/stack_table.hpp"
#include "../core/thread_kinds.hpp"
#include "../platform/clock.hpp"
#include "../platform/code_ranges.hpp"
#include "../platform/threads.hpp"
#include "../shim/memory_hooks.hpp"
#include "code_registry.hpp"

namespace spyglass::cpython {

// A new Python thread's first sample is due this soon: in effect on the first scheduler
// tick that finds it running, since CPU-time timers are checked only on ticks.
inline constexpr uint64_t kFirstSampleNs = 1000;

struct SamplerOptions {
  uint64_t interval_ns = 10'000'000;
  std::vector<int> call_opcodes;  // opcode values that call out of the interpreter
  BytecodeFormat bytecode;        // how to walk bytecode, to find what calls are calling
  bool memory = false;            // allocation and copy profiling too
  shim::HookOptions memory_options;
  FilterConfig scope;  // which code is the user's: memory executions are counted per line
                       // of it as samples arrive, and journals are attributed with it
  // A child process's run journal, appended every interval, so that a child killed
  // without warning still leaves all but its last interval (empty path: none).
  std::string journal_path;
  std::string journal_meta;  // the Python layer's members, as for to_json
};

// Registers (once, GIL held) the os.fork() hooks that pause the active sampler's threads.
void watch_python_forks();

class CpuSampler {
 public:
  CpuSampler() = default;
  ~CpuSampler();
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  // Both with the GIL held. start() throws std::runtime_error when sampling is impossible.
  void start(const SamplerOptions& options);
  void stop();

  bool running() const { return running_.load(); }
  double elapsed_s() const { return elapsed_s_; }
  double started_at() const { return started_at_; }
  uint64_t interval_ns() const { return options_.interval_ns; }
  uint64_t dropped_samples() const { return dropped_; }
  const StackTable& stacks() const { return stacks_; }
  const CodeRegistry& codes() const { return codes_; }
  bool memory_profiled() const { return options_.memory; }
  const MemoryStats& memory() const { return memory_; }
  uint64_t dropped_memory_samples() const { return dropped_memory_; }
  std::vector<ThreadInfo> threads(const std::map<int32_t, std::string>& names) const;

  // Called (GIL held) by the code-death hook.
  void on_code_death(PyCodeObject* code);
  // The active sampler, if any, or null.
  static CpuSampler* active();
  // thread_lifecycle.cpp. Called (GIL held) by a Python thread as it starts and as it
  // ends, so that a short-lived thread is sampled from its start and its CPU since its
  // last sample is not lost. `target`: the code the thread runs (its target, or its own
  // run()), or null; threads running the same target are one kind (core/thread_kinds.hpp).
  void thread_started(PyCodeObject* target);
  void thread_exiting();
  // Fork handlers: keep the state consistent across fork; in the child the sampler's
  // threads are gone, so it is abandoned without joining them.
  // own_threads.cpp: the control and wait threads stop around os.fork() (GIL held).
  void pause_threads();
  void resume_threads();
  void lock_for_fork();
  void unlock_after_fork();
  void abandon_after_fork();
  bool abandoned() const { return abandoned_; }

 private:
  struct Registered {
    uint32_t slot;
    platform::ThreadTimer timer;
    uint64_t last_wall_ns;
    uint64_t last_cpu_ns;
    uint64_t pending_wait_ns = 0;
    int python = -1;  // -1 unknown, 0 no Python thread state, 1 has one
    uint64_t dropped_base = 0;
    size_t last_stack = SIZE_MAX;  // of its latest CPU sample: where its CPU went last
    CpuClass last_class = CpuClass::kPython;
    // Registered by thread_started(): only such a thread may end itself. (Under gevent a
    // "thread" is a greenlet on an OS thread that lives on.)
    bool self_registered = false;
    bool has_kind = false;
    FrameKey target;            // its target's first line; target.code_id is its kind
    uint64_t run_delay_ns = 0;  // time runnable but waiting for a CPU, when last read
  };

  void start_threads();
  void join_threads();
  // Sleeps one period, returning early (false) as soon as the sampler is stopped or its
  // threads paused.
  bool sleep_unless_stopped(std::chrono::nanoseconds period);
  void control_loop();
  void wait_loop();
  void scan_threads_locked();
  void register_thread_locked(pid_t tid, bool calling_thread, uint64_t first_sample_ns = 0);
  void release_slot_locked(Registered& reg);
  void drain_locked();
  void drain_slot_locked(uint32_t slot);
  // memory_drain.cpp. With `wait_for_claimed`, also waits for records other threads are
  // still writing.
  void drain_memory_locked(bool wait_for_claimed = false);
  // run_journal.cpp: the child's journal, and the frames and stacks it must learn of.
  void open_journal();
  void journal_tick_locked();
  void resolve_frames_locked(const RawFrame* frames, uint16_t depth, FrameKey* keys);
  size_t add_stack_locked(const FrameKey* keys, uint16_t depth, bool truncated, int32_t tid,
                          const Times& t);
  bool is_profiled_code(uint32_t id, PyCodeObject* code);
  bool is_internal_code(uint32_t id, PyCodeObject* code);
  void aggregate_locked(const SampleRecord& rec);
  void charge_waits();
  // With the GIL and mutex_: the call-site tables that samples asked for.
  void build_wanted_call_sites_locked();
  void flush_calling_thread_locked();
  // thread_lifecycle.cpp: a thread's CPU since its last sample, charged as a sample.
  void charge_remainder_locked(pid_t tid, Registered& reg, const platform::CpuSplit& now);
  void settle_thread_kinds_locked();
  void rebuild_ranges();

  SamplerOptions options_;
  std::atomic<bool> running_{false};
  std::mutex mutex_;  // guards everything below; taken after the GIL, never before it
  std::unordered_map<pid_t, Registered> threads_;
  std::unordered_set<pid_t> ended_;  // said they were ending, still listed by the kernel
  std::map<int32_t, Times> thread_times_;
  SampleRecord scratch_;  // for records made off the signal path (waits, final flush)
  std::mutex ranges_mutex_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool threads_paused_ = false;  // guarded by wake_mutex_ (written with the GIL held)
  bool abandoned_ = false;
  StackTable stacks_;
  CodeRegistry codes_;
  MemoryStats memory_;
  JournalWriter journal_;
  std::unique_ptr<FileFilter> scope_;
  std::vector<int8_t> profiled_code_;  // per code id: -1 not yet known, else the verdict
  std::vector<int8_t> internal_code_;  // the same for "spyglass's own code"
  std::unordered_set<PyCodeObject*> wanted_call_sites_;  // live codes sampled on a call
  uint64_t memory_dropped_base_ = 0;
  uint32_t memory_epoch_ = 0;
  uint64_t dropped_memory_ = 0;
  std::vector<std::unique_ptr<platform::CodeRanges>> ranges_;  // older ones kept: the
                                                               // handler may still read them
  uint64_t seen_unknown_hits_ = 0;
  uint64_t dropped_ = 0;
  ThreadKinds kinds_;
  std::unordered_map<uint32_t, FrameKey> kind_targets_;
  std::mt19937_64 rng_;
  int signo_ = -1;
  uint64_t start_ns_ = 0;
  double started_at_ = 0;
  double elapsed_s_ = 0;
  std::thread control_;
  std::thread waiter_;
  std::atomic<pid_t> control_tid_{0};
  std::atomic<pid_t> waiter_tid_{0};
};

}  // namespace spyglass::cpython
