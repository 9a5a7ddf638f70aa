// Await attribution for asyncio: while a task is suspended (at an `await`, an `async for`
// or an `async with`), the event loop's thread is idle or runs other tasks, so neither its
// CPU samples nor its wait say where the task waits. Every interval in which an event loop
// runs, the scan finds the loop's suspended tasks and charges each its await time since
// the last scan, on the stack of its await chain: the task's coroutine, the coroutine it
// awaits, and so on down to the innermost one's suspended line.
//
// A task found waiting on the same future as at the last scan waited all the time
// between. One suspended since then ran part of that time: it is charged the time less
// its share of the loop thread's CPU meanwhile, and of its time queued for a CPU (shared
// among the tasks that suspended anew). Charging every suspended task the whole time charged a
// task's own CPU as await: the scan takes the GIL when the loop gives it up, which is as a task
// suspends, so a task doing 8 ms of work between 2 ms sleeps showed 3 to 4 times its await.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/sample.hpp"

typedef struct _object PyObject;  // NOLINT: CPython's own spelling, without its headers

namespace spyglass::cpython {

class Collection;

class AwaitScanner {
 public:
  struct Suspended {
    pid_t tid = 0;  // the thread running its loop
    std::string name;
    std::string coroutine;
    std::vector<RawFrame> frames;  // outermost coroutine first
    uint64_t charge = 0;           // its await time since the last scan (as it stands for
                                   // the tasks not read, when a sample of them is)
    bool anew = false;             // suspended since the last scan
    uint64_t earlier = 0;          // of charge: where the last scan found it (see charge())
    double stands_for = 1.0;       // tasks it stands for (all / read)
  };

  // Where a loop thread found blocked stands, by its frames.
  enum class LoopWait {
    kIdle,    // in its loop, waiting for I/O or a timer: its tasks' wait, shared by the scan
    kInLoop,  // in a blocking call of a task or callback (a coroutine's time.sleep)
    kNoLoop,  // in no loop at all: the loop has ended (code after asyncio.run)
  };

  explicit AwaitScanner(uint64_t interval_ns) : interval_ns_(interval_ns) {}

  // Lock held, on the wait engine's thread (its looks run there once an event loop is seen,
  // and this is never true before): whether to scan at this tick. Never before a
  // sample has shown an event loop (a program without one pays nothing); every tick while
  // tasks are suspended and for kEagerScans scans after; every kIdleTicks ticks then; and
  // never sooner than the last scan's cost allows (rest_after).
  bool due(const Collection& collection, int tick) const;
  // Lock held: whether the last scan found tasks suspended on the loop `tid` runs; the
  // wait engine then leaves that thread's wait to be shared among them.
  bool holds(pid_t tid) const;
  // Lock held, no GIL needed: how a loop thread blocked on `frames` (innermost first)
  // stands. kIdle until a scan has looked up the loops' own functions. A loop thread's wait
  // used to be shared among its tasks wherever it blocked: a coroutine's 1 s of time.sleep
  // (the blocking call asyncio programs are profiled for) showed 0.01 s on its line.
  LoopWait classify(const RawFrame* frames, size_t depth, bool truncated) const;
  // Lock held: `tid` waited `ns` outside any loop (charged where it blocked): not its
  // loop's tasks' tail.
  void blocked_outside_loop(pid_t tid, uint64_t ns) { outside_ns_[tid] += ns; }
  // GIL held, the collector's lock not: the tasks suspended now, each with its charge.
  // `keep` gets a reference to every code object in their frames, to be let go once the
  // samples are added, outside the lock (a code's death takes it).
  void scan(std::vector<Suspended>* found, std::vector<PyObject*>* keep);
  // When a scan finds no task suspended after one that found some, those tasks' awaits
  // ended in between (or they are running): their tails, the time between less the loop
  // thread's busy time meanwhile (its CPU and time queued for one: the tasks ran then, or
  // the loop had ended), are charged where the last scan found them, and a task found
  // later on that loop is charged from this scan on. Without them each task's last
  // stretch went uncharged: with scans up to kMaxRestIntervals apart, 600 tasks that all
  // ended together lost up to 21 % of their awaits. Per loop thread; taken by the
  // caller, lock held; empty unless this scan found no task after one that found some.
  std::unordered_map<pid_t, uint64_t> take_tails() { return std::exchange(tails_, {}); }
  // Lock held, the scans over (the run stops): the tails of the tasks the last scan found,
  // up to `now`, if it found any.
  std::unordered_map<pid_t, uint64_t> tails_at(uint64_t now);
  // GIL held: lets go of the weak references the last scan kept (at each scan, and once
  // the scans are over: the run stopped).
  void release();
  // After a fork, in the child: the weak references are let go without the GIL (leaked).
  void reset() {
    tails_.clear();
    empty_scans_ = 0;
    last_scan_ns_ = 0;
    next_scan_ns_ = 0;
    loop_tids_.clear();
    waiting_.clear();
    loop_cpu_.clear();
    outside_ns_.clear();
  }

 private:
  static constexpr int kIdleTicks = 20;
  static constexpr int kEagerScans = 50;
  static constexpr size_t kMaxTasksPerScan = 256;
  // Scans take at most this share of the time (1 / 200), resting at most this many
  // intervals between two: see rest_after().
  static constexpr uint64_t kTimePerScanTime = 200;
  static constexpr uint64_t kMaxRestIntervals = 20;
  // A gap between two scans that found a task longer than this: where the task was in it
  // is not known (Suspended::earlier).
  static constexpr uint64_t kLongGapIntervals = 2;
  // The last loop a scan read, with what it found of it (a reference held for the scan).
  struct LoopSeen {
    PyObject* loop = nullptr;
    bool running = false;
    pid_t tid = 0;
  };
  // GIL held: the task's await chain, or false when it is not suspended.
  bool read_task(PyObject* task, Suspended* out, std::vector<PyObject*>* keep, LoopSeen* loop_seen);
  void rest_after(uint64_t cpu_before_ns);
  // GIL held: looks up the code objects of asyncio's and selectors' own loop functions,
  // until found (idle_codes_ empty until then; the scan imports nothing).
  void find_loop_codes();
  // The tails of the tasks on `loops` found by a scan at `from`, up to `now` (see
  // take_tails); those loops' clocks are then taken from `now`.
  std::unordered_map<pid_t, uint64_t> tails_since(uint64_t from, const std::vector<pid_t>& loops,
                                                  uint64_t now);
  // GIL held: whether `task` waits on the future it waited on at the last scan; notes, in
  // `waiting`, what it waits on now.
  bool waits_as_before(PyObject* task, std::unordered_map<uintptr_t, PyObject*>* waiting);
  // The charges of `found`, read from `read` of `all` suspended tasks at `now`, `elapsed`
  // since the last scan (`followed`: that scan came on time).
  void charge(std::vector<Suspended>* found, uint64_t now, uint64_t elapsed, bool followed,
              size_t read, size_t all);

  uint64_t interval_ns_;
  int empty_scans_ = 0;  // scans in a row that found no suspended task
  uint64_t last_scan_ns_ = 0;
  uint64_t next_scan_ns_ = 0;     // no scan before this (monotonic ns)
  std::vector<pid_t> loop_tids_;  // threads whose loops had suspended tasks, last scan
  std::minstd_rand rng_{12345};   // picks the tasks read when there are too many
  // Each task found suspended at the last scan: a weak reference to the future it waited on.
  std::unordered_map<uintptr_t, PyObject*> waiting_;
  std::unordered_map<pid_t, uint64_t> tails_;  // see take_tails
  // Each loop thread's CPU and time queued for a CPU, at the last scan that found tasks
  // suspended on it, and when that was.
  struct LoopClock {
    uint64_t busy_ns = 0;
    uint64_t at_ns = 0;
  };
  std::unordered_map<pid_t, LoopClock> loop_cpu_;
  // Code objects (kept for the life of the process) of a loop waiting for an event, as the
  // innermost frame: the selectors' select, the loop's _run_once, and asyncio.run's own
  // frame (a loop in C, uvloop, has no frame of its own); and of a loop running.
  std::vector<uintptr_t> idle_codes_;
  std::vector<uintptr_t> loop_codes_;
  std::unordered_map<pid_t, uint64_t> outside_ns_;  // see blocked_outside_loop, per scan
};

}  // namespace spyglass::cpython
