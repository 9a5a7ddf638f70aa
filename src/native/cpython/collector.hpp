// The collector: one run's owner. It follows the process's threads (registering them as
// the control thread's scans or the threads themselves find them), keeps the collection
// and its journal, handles fork, and drives the engines (engine.hpp) that sample: CPU time,
// waits, memory and copies.
#pragma once

#include <Python.h>
#include <sys/types.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../core/file_filter.hpp"
#include "../core/limits.hpp"
#include "../core/memory_stats.hpp"
#include "../core/profile_model.hpp"
#include "../core/stack_depths.hpp"
#include "../core/thread_registry.hpp"
#include "../shim/memory_hooks.hpp"
#include "collection.hpp"
#include "engine.hpp"

namespace spyglass::cpython {

class GpuEngine;
class MemoryEngine;

struct CollectorOptions {
  uint64_t interval_ns = kDefaultIntervalNs;
  std::vector<int> call_opcodes;  // opcode values that call out of the interpreter
  BytecodeFormat bytecode;        // how to walk bytecode, to find what calls are calling
  bool memory = false;            // allocation and copy profiling too
  shim::HookOptions memory_options;
  bool gpu = false;    // GPU utilisation and memory, when NVML opens (gpu_engine.hpp)
  FilterConfig scope;  // which code is the user's: memory executions are counted per line
                       // of it as samples arrive, and journals are attributed with it
  // A child process's run journal, appended every interval, so that a child killed
  // without warning still leaves all but its last interval (empty path: none).
  std::string journal_path;
  MetaMembers journal_meta;  // the Python layer's members, as for to_json
};

// Registers (once, GIL held) the os.fork() hooks that pause the active collector's threads.
void watch_python_forks();

class Collector {
 public:
  Collector() = default;
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Both with the GIL held. start() throws std::runtime_error when profiling is impossible.
  void start(const CollectorOptions& options);
  void stop();

  bool running() const { return running_.load(); }
  bool abandoned() const { return abandoned_; }
  double elapsed_s() const { return elapsed_s_; }
  double started_at() const { return started_at_; }
  const Collection& collection() const { return collection_; }
  // The memory figures that are not sums; null when memory is not profiled.
  const MemoryStats* memory() const;
  // Running, with the GIL: whether a line of the program would be called a leak if the
  // run stopped now (false when memory is not profiled).
  bool leaks_suspected();
  // The GPU figures; null when the GPU is not profiled (off, or no NVML here).
  const GpuStats* gpu() const;
  // The run as a profile describes it: its clock, and what each engine adds.
  RunInfo describe() const;

  // The active collector, if any, or null.
  static Collector* active();
  // Called (GIL held) by the code-death hook.
  void on_code_death(PyCodeObject* code);
  // collector_threads.cpp. Called (GIL held) by a Python thread as it starts and as it
  // ends, so that a short-lived thread is followed from its start and its CPU since its
  // last sample is not lost. `target`: the code the thread runs (its target, or its own
  // run()), or null; threads running the same target are one kind (core/thread_kinds.hpp).
  void thread_started(PyCodeObject* target);
  void thread_exiting();
  // Called (GIL held) on the main thread as the program's __main__ module starts to run:
  // the CPU engine samples it from its next scheduler tick (Engine::program_starting).
  void program_starting();
  // From an allocator hook, on any thread: memory records are filling faster than a tick
  // drains them; the control thread drains them now. Never blocks.
  void wake_for_records();

  // Fork handlers: keep the state consistent across fork; in the child the collector's
  // threads are gone, so it is abandoned without joining them.
  // own_threads.cpp: the collector's threads stop around os.fork() (GIL held).
  void pause_threads();
  void resume_threads();
  void lock_for_fork();
  void unlock_after_fork();
  void abandon_after_fork();

 private:
  // The control thread, the upkeep thread and one per engine that has a worker.
  static constexpr size_t kMaxOwnThreads = 8;

  void make_engines();
  // The control thread's period, and the wait engine's (limits.hpp, kMinTickNs).
  uint64_t tick_ns() const { return std::max(options_.interval_ns, kMinTickNs); }
  void start_threads();
  void join_threads();
  bool is_own_thread(pid_t tid) const;
  // Sleeps one period, returning early (false) as soon as the run is stopped or its
  // threads paused.
  bool sleep_unless_stopped(std::chrono::nanoseconds period);
  // The control thread's sleep until `deadline`: what woke it.
  enum class Wake { kStop, kTick, kRecords };
  Wake sleep_until(std::chrono::steady_clock::time_point deadline);
  void control_loop();
  // The engines' upkeep, off the control thread: it may take tens of milliseconds (unwind
  // tables compiled, objects listed and patched while an import holds the loader's lock),
  // and the control thread's drains of the memory hooks' ring must not wait for it. It
  // runs when the control thread finds an engine's upkeep due, else every kUpkeepEvery
  // ticks: woken every tick, the thread cost a run some 0.2 % of its CPU (a
  // wake-up, a preemption of the program on a busy CPU) to find nothing to do.
  void upkeep_loop(size_t index);
  // The upkeep thread's sleep, up to `longest`: false once the run is stopped or its
  // threads paused.
  bool sleep_until_upkeep(std::chrono::nanoseconds longest);
  // On the control thread, lock held: wakes the upkeep thread if an engine has work for it.
  void request_upkeep_locked();
  static constexpr int kUpkeepEvery = 10;
  void worker_loop(Engine& engine, size_t index);
  // On the control thread, lock held: the tick of each engine whose worker runs on call
  // (Engine::worker_on_call), waking the workers whose engines asked.
  void tick_engines_locked();
  // An on-call worker's sleep until its engine asks (its bit in work_wanted_): false once
  // the run is stopped or its threads paused.
  bool sleep_until_called(size_t index);
  void drain_locked(Drain why);
  void journal_tick_locked(bool last = false);
  // collector_threads.cpp
  void scan_threads_locked();
  void register_thread_locked(pid_t tid, bool by_itself, bool has_target = false,
                              bool born_while_profiled = false);
  void end_thread_locked(pid_t tid, const ThreadEnd& how);

  CollectorOptions options_;
  std::atomic<bool> running_{false};
  std::mutex mutex_;  // guards everything below; taken after the GIL, never before it
  Collection collection_;
  ThreadRegistry threads_;
  // The thread ids the latest scan listed (sorted), once a scan has run since start(): a
  // thread a scan lists that the one before did not started since.
  std::vector<pid_t> listed_tids_;
  bool listed_once_ = false;
  EngineContext context_{collection_, threads_, mutex_, running_};
  std::vector<std::unique_ptr<Engine>> engines_;  // in the order they start
  MemoryEngine* memory_ = nullptr;                // one of engines_, when memory is on
  GpuEngine* gpu_ = nullptr;                      // one of engines_, when NVML opened
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  std::condition_variable upkeep_wake_;  // the upkeep thread's, with wake_mutex_
  bool upkeep_wanted_ = false;           // guarded by wake_mutex_
  std::condition_variable work_wake_;    // the on-call workers', with wake_mutex_
  uint32_t work_wanted_ = 0;             // guarded by wake_mutex_: a bit per own thread
  bool threads_paused_ = false;          // guarded by wake_mutex_ (written with the GIL held)
  std::atomic<bool> records_wanted_{false};
  bool abandoned_ = false;
  uint64_t start_ns_ = 0;
  double started_at_ = 0;
  double elapsed_s_ = 0;
  std::thread control_;
  std::vector<std::thread> workers_;
  size_t own_count_ = 0;  // threads start_threads() starts
  std::array<std::atomic<pid_t>, kMaxOwnThreads> own_tids_{};
};

}  // namespace spyglass::cpython
