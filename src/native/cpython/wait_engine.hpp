// The wait engine: every interval it charges the time each Python thread spent off CPU
// (blocked, not queued for a CPU) to the line it is waiting on. Its look runs on the
// control thread's tick; a thread of its own takes the GIL when a look needs it, and runs
// the looks itself once an event loop is seen (the asyncio scan shares their state).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/kind_waits.hpp"
#include "../core/limits.hpp"
#include "../core/sample.hpp"
#include "../core/stack_depths.hpp"
#include "await_scan.hpp"
#include "engine.hpp"
#include "kept_thread_state.hpp"
#include "sampling_state.hpp"

typedef struct _ts PyThreadState;  // NOLINT: CPython's own spelling, without its headers

namespace spyglass::cpython {

class WaitEngine final : public Engine {
 public:
  // It also builds the call-site tables samples asked for (call_sites.hpp), the next time
  // it holds the GIL: `bytecode` says how to walk the interpreter's bytecode.
  WaitEngine(const EngineContext& context, uint64_t interval_ns, BytecodeFormat bytecode)
      : Engine(context),
        interval_ns_(interval_ns),
        bytecode_(std::move(bytecode)),
        awaits_(interval_ns) {}

  const char* name() const override { return "wait"; }
  void start(uint64_t start_ns) override;
  void finish() override;
  bool thread_started(const ProfiledThread& thread, const ThreadStart& how) override;
  void thread_ended(const ProfiledThread& thread, const ThreadEnd& how) override;
  void thread_claimed(const ProfiledThread& thread) override;
  bool has_worker() const override { return true; }
  const char* worker_name() const override { return "spyglass-wait"; }
  // Lock held, on the control thread every interval: look() there, until an event loop is
  // seen; true when work() is wanted.
  bool worker_on_call() const override { return true; }
  bool tick() override;
  // On the wait thread, after a tick that asked: the look, once an event loop is seen,
  // then the GIL taken to charge what is left and scan asyncio's tasks.
  void work() override;
  void worker_stopping() override { gil_state_.discard(); }
  void after_fork_child() override;

 private:
  static constexpr int kRecheck = -2;
  struct WaitThread {
    uint64_t last_wall_ns = 0;
    uint64_t last_cpu_ns = 0;
    uint64_t pending_wait_ns = 0;
    int python = -1;  // -1 unknown, 0 no Python thread state, 1 has one, kRecheck: 0 until
                      // the GIL is next taken
    uint64_t run_delay_ns = 0;        // time runnable but waiting for a CPU, when last read
    uint64_t queued_ns = 0;           // of it, what is still to be taken off its off-CPU time
    bool ran_unread = false;          // it ran since run_delay_ns was read (settle_queued)
    PyThreadState* tstate = nullptr;  // its thread state, once known
    int deferred_at = kNotDeferred;   // the tick its wait was left for one interval at: it
                                      // was not blocked
    int later = 0;                    // intervals in a row it ran while its stack was read
    bool has_kind = false;            // it runs a Python function: its kind's, kind_waits.hpp
    uint32_t kind = 0;
    uint64_t started_ns = 0;
    bool grown = false;         // no longer young: kYoungIntervals have passed since it started
    uint64_t loop_idle_ns = 0;  // a loop thread's wait in its loop, for its tasks' scan
    // Where a look last found it blocked, and when (ticks_), and when one last found it
    // running: see charge_where_it_blocked.
    size_t blocked_stack = SIZE_MAX;
    int blocked_tick = 0;
    uint64_t blocked_cpu_ns = 0;  // its CPU clock as that look read it (0: not read)
    int running_tick = -1;
  };
  // A thread of a kind this young is only noted where it is found blocked; what it waits
  // meanwhile is charged where its kind's notes say (kind_waits.hpp) when it grows out of
  // it or ends, which may be before the next interval.
  static constexpr int kYoungIntervals = 4;
  static constexpr int kNotDeferred = -2;
  // Its fault guard (platform/fault_guard.hpp): after the signal path's and the
  // allocator hooks' ranges.
  static constexpr uint32_t kWaitGuard = 2 * kMaxThreads;
  static constexpr int kMaxLater = 3;
  // How many intervals after a thread was last found blocked its wait may still be charged
  // there once it runs: past the deferrals and the tries at reading it still
  // (held_for_queueing, kMaxLater), which a thread computing between blocks goes through.
  static constexpr int kBlockedLately = 2 * (kMaxLater + 1);

  // Lock held: reads each thread's clock and charges what waits it can without the GIL;
  // true when the rest needs it. The asyncio scan (charge_awaits) changes the scanner's
  // state without the lock, so once an event loop is seen the look runs on the wait thread,
  // before the scan, as the scan does; before that, no scan runs.
  bool look();

  enum class Charged {
    kYes,
    kLater,         // not now: the thread is queued for a CPU, or ran while its stack was read
    kNeedsGil,      // its stack can be read only with the GIL held
    kWhereBlocked,  // it runs now: its wait goes where it was last found blocked
  };
  // Lock held: charges `w`'s pending wait to the line it is blocked on, its stack read
  // without the GIL, when that can be done safely (see the definition).
  Charged charge_blocked(pid_t tid, WaitThread& w, uint64_t cpu_ns);
  // Lock held: reads the stack `w` is blocked on into the scratch record, as charge_blocked
  // does, charging nothing (kYes: read).
  Charged read_blocked(pid_t tid, WaitThread& w, uint64_t cpu_ns);
  // Inside the fault guard: the package of the C function the innermost frame of a
  // blocked thread is calling, when it is a library's (library_waits.hpp); else 0, with
  // `*no_table` set to its code when that code's call-site table has no copy yet.
  uint64_t library_package(const Leaf& leaf, PyCodeObject** no_table) const;
  // library_package inside the fault guard, for a stack read with the GIL (0 if it faulted).
  uint64_t guarded_library_package(const Leaf& leaf, PyCodeObject** no_table) const;
  // Lock held: notes, or forgets, `tid` as blocked in a library's call at `stack`, as
  // blocked_package_ says of its latest read; `cpu_ns` is its CPU clock as read there,
  // `waited_ns` its wait not yet charged.
  void note_library_wait(pid_t tid, size_t stack, uint64_t cpu_ns, uint64_t waited_ns);
  // Lock held: the pending wait of a loop thread whose tasks are suspended, its stack in
  // `rec`: set aside for the tasks when the loop waits for an event, else charged where
  // the thread blocks (AwaitScanner::LoopWait).
  void settle_loop_wait(pid_t tid, WaitThread& w, const SampleRecord& rec);
  // Lock held: adds to `w`'s pending wait its time off its CPU over `wall_ns` in which it
  // used `used_ns`, less what it spent queued for a CPU.
  void accrue(pid_t tid, WaitThread& w, uint64_t wall_ns, uint64_t used_ns);
  void settle_queued(pid_t tid, WaitThread& w);
  // Lock held: a young thread of a kind found blocked has its stack noted for its kind.
  void note_young(pid_t tid, WaitThread& w);
  // Lock held: `wait_ns` of a thread of a kind, charged where the kind's notes say.
  void charge_by_kind(pid_t tid, const WaitThread& w, uint64_t wait_ns);
  // Lock held: whether `w`'s wait waits an interval more, as it may be time queued for a
  // CPU (the thread is not blocked now); each thread gets that interval once per charge.
  bool held_for_queueing(pid_t tid, WaitThread& w);
  // Lock held: `w`'s pending wait has been charged.
  static void charged(WaitThread& w);
  // Whether `w` runs now and was last found blocked in a call within kBlockedLately
  // intervals: its pending wait then goes there (charge_where_it_blocked).
  bool blocked_lately(const WaitThread& w) const;
  // Lock held: charges `w`'s pending wait where it was last found blocked in a call.
  void charge_where_it_blocked(pid_t tid, WaitThread& w);
  // Lock held: a look read `w` blocked at `stack`: remembered as where it blocks if it
  // stood on a call (`in_a_call`) and was not found running this interval (a thread that
  // waits for the GIL between two instructions, which our own taking of it causes, is
  // not where the thread blocks).
  void found_blocked_at(WaitThread& w, size_t stack, bool in_a_call, uint64_t cpu_ns) const;
  // Lock held: charges `w`'s pending wait where a look last found it blocked in a call,
  // without reading anything, if it has not run since (its CPU clock reads `cpu_ns`, as
  // it did then): true if so.
  bool charge_if_still_blocked(pid_t tid, WaitThread& w, uint64_t cpu_ns, uint64_t now_ns);

  // The scratch record, made a wait sample of `tid` (its stack still to be walked).
  SampleRecord& wait_record(pid_t tid, uint64_t wait_ns);
  // GIL held: scans asyncio's tasks and charges the suspended ones (await_scan.hpp).
  void charge_awaits();
  // Lock held: the tails of the tasks the last scan found (AwaitScanner::take_tails),
  // charged where that scan found them.
  void charge_tails(const std::unordered_map<pid_t, uint64_t>& tails);
  // Where the last scan that found tasks found them: a stack per await place, the tasks
  // there, and the tasks they stand for in all.
  struct AwaitPlace {
    pid_t tid = 0;
    size_t stack = 0;
    std::vector<std::pair<std::string, std::string>> tasks;  // (name, coroutine), those read
    double stands_for = 1.0;                                 // tasks each read one stands for
  };
  std::vector<AwaitPlace> await_places_;
  // Lock held: the part of each found task's charge that is its earlier place's
  // (Suspended::earlier), charged there when the last scan found it (one of
  // await_places_).
  void charge_earlier_places(std::vector<AwaitScanner::Suspended>* found);

  uint64_t interval_ns_;
  BytecodeFormat bytecode_;
  std::unordered_map<pid_t, WaitThread> threads_;  // guarded by the collector's lock
  SampleRecord scratch_;
  KindWaits kind_waits_;  // where young threads of each kind were found blocked
  std::unordered_map<uint32_t, FrameKey> kind_targets_;  // each kind's function
  size_t charged_stack_ = 0;                             // the stack charge_blocked() charged last
  uint64_t blocked_package_ = 0;  // the library the latest read found its thread calling
  bool read_in_call_ = false;     // whether the latest read found its thread on a call
  AwaitScanner awaits_;           // asyncio tasks' awaits, scanned with the GIL this engine takes
  KeptThreadState gil_state_;     // the worker's, to take the GIL with
  int ticks_ = 0;
  bool scan_awaits_ = false;  // a tick found the asyncio scan due (for work())
  // Whether the latest library_package() may answer otherwise for the same stack later (a
  // table not built yet, an object loaded since the ranges were): its thread is then read
  // again, not taken to be where it was (charge_if_still_blocked).
  mutable bool package_unsettled_ = false;
};

}  // namespace spyglass::cpython
