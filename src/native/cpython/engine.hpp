// A source of samples behind one small interface, as async-profiler's engines are: the
// collector (collector.hpp) owns the threads, the run journal and fork handling, and tells
// each engine when the run starts and stops, when a thread starts or ends, when the process
// forks, and when to drain what it gathered into the collection. CPU timers, waits, memory,
// copies and the GPU (where NVML loads) are engines today; a native unwinder is one more.
//
// Engines do their sampling on their own paths (a signal handler, allocator hooks, a
// thread of their own); nothing here is called on those paths, so the interface costs the
// hot paths nothing.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "../core/profile_model.hpp"
#include "../core/stack_table.hpp"
#include "../core/thread_registry.hpp"
#include "../platform/clock.hpp"

namespace spyglass::cpython {

class Collection;

// What registering a thread measured of it.
struct ThreadStart {
  bool by_itself = false;   // the thread registers itself: its clocks are read directly
  bool has_target = false;  // by_itself: it runs a Python function, its kind (thread_kinds.hpp)
  platform::CpuSplit cpu;   // by_itself: its user and system CPU so far
  uint64_t cpu_ns = 0;      // its whole CPU so far
  uint64_t wall_ns = 0;     // the monotonic clock then
  // Found by a scan that listed it for the first time, the one before not: it started
  // since, while the run was being profiled, and all of its CPU so far is the run's.
  bool born_while_profiled = false;
};

// How a thread leaves the collector.
struct ThreadEnd {
  // The thread says it is ending (on itself, GIL held); otherwise it is gone or refused.
  bool by_itself = false;
  platform::CpuSplit cpu;  // by_itself: its clocks as it ended
};

// Why the collector asks for a drain (always with its lock held).
enum class Drain {
  kTick,       // the control thread's, every interval
  kCodeDeath,  // a code object is about to die: nothing collected may still name it
  kRecords,    // memory records are filling faster than ticks drain them (memory only)
  kFinal,      // the run ends (GIL held, the collector's threads joined), before finish()
};

// What the collector lends its engines.
struct EngineContext {
  Collection& collection;
  const ThreadRegistry& threads;
  // The collector's lock: it guards the collection, the registry and every engine's state
  // kept per thread. Taken after the GIL, never before it.
  std::mutex& lock;
  const std::atomic<bool>& running;
};

class Engine {
 public:
  explicit Engine(const EngineContext& context) : ctx_(context) {}
  virtual ~Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  virtual const char* name() const = 0;

  // GIL held, before any thread is registered: get ready (tables, handlers). Throws
  // std::runtime_error when the engine cannot run here.
  virtual void start(uint64_t /*start_ns*/) {}
  // GIL held, every thread registered and the collector's threads running: start
  // producing. Throws std::runtime_error when it cannot; the run is then stopped.
  virtual void begin() {}
  // GIL held, the run ending: stop producing (the collector's threads are still running).
  virtual void stop() {}
  // Lock held, the collector's threads joined: the last drain. Afterwards the engine holds
  // nothing per thread; what it describes (describe()) is final.
  virtual void finish() {}

  // Lock held. Returning false refuses the thread: no engine follows it then.
  virtual bool thread_started(const ProfiledThread& /*thread*/, const ThreadStart& /*how*/) {
    return true;
  }
  virtual void thread_ended(const ProfiledThread& /*thread*/, const ThreadEnd& /*how*/) {}
  // Lock held, on the thread itself: it has registered itself, perhaps after a scan of the
  // collector's found it (thread_started then saw it from outside).
  virtual void thread_claimed(const ProfiledThread& /*thread*/) {}
  // Lock held, GIL held, on the thread itself with signals blocked: the program's own code
  // begins on it now (its __main__ module's first line); what ran before was start-up.
  virtual void program_starting(const ProfiledThread& /*thread*/) {}

  // Lock held: moves what the engine gathered into the collection.
  virtual void drain(Drain /*why*/) {}
  // Lock held, after the kCodeDeath drain: `code` (a PyCodeObject) is about to die, and
  // nothing held may name it after this.
  virtual void code_dying(const void* /*code*/) {}
  // The collector's upkeep thread, lock not held: upkeep that must hold up neither the
  // threads waiting for the lock nor the control thread's drains (patching newly loaded
  // objects, compiling unwind tables, rebuilding tables). It runs while the control thread
  // drains: when an engine says upkeep_due() at a tick, else every kUpkeepEvery intervals.
  virtual void upkeep() {}
  // Lock held, on the control thread at each tick: whether upkeep has work now.
  virtual bool upkeep_due() const { return false; }
  // An engine with a thread of its own (has_worker()) gets work() called on it every
  // interval, or when its tick() asks (worker_on_call() below), lock not held. The
  // collector starts, pauses and joins that thread.
  virtual bool has_worker() const { return false; }
  // That thread's name, as `top -H`, gdb and /proc show it (15 characters at most).
  virtual const char* worker_name() const { return "spyglass-worker"; }
  virtual void work() {}
  // An engine whose worker has work only now and then says so here: the control thread
  // then calls tick() at each of its ticks, lock held, and work() runs on the engine's
  // thread only after a tick() that returned true. A thread woken every interval costs
  // the run tens of microseconds of CPU each time (the wake-up, and on a busy CPU the
  // program's preemption) whether it finds work or not: half of the wait thread's CPU.
  virtual bool worker_on_call() const { return false; }
  virtual bool tick() { return false; }
  // On that thread, lock not held, as it stops (the run ends or a fork pauses it).
  virtual void worker_stopping() {}

  // pthread_atfork, the collector's lock held from before_fork() to after_fork_parent().
  // In the child only the forking thread exists: the engine forgets the parent's threads.
  virtual void before_fork() {}
  virtual void after_fork_parent() {}
  virtual void after_fork_child() {}

  // Its part of the run's description: what it dropped, the rates it sampled at.
  virtual void describe(RunInfo& /*run*/) const {}

 protected:
  const EngineContext& ctx() const { return ctx_; }

 private:
  EngineContext ctx_;
};

}  // namespace spyglass::cpython
