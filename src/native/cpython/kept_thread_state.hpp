// A thread state that one thread of ours makes once and keeps, to take the GIL with.
//
// PyGILState_Ensure on a thread with no state makes one and links it into the
// interpreter's list; PyGILState_Release unlinks and frees it. Whatever walks that list
// without a lock then meets freed memory: faulthandler's watchdog does (its timed dumps,
// used by pytest's faulthandler_timeout), and under load a profiled program that dumped
// every 2 ms while spyglass took the GIL crashed in the dump about 1 run in 60. This state
// is made once, on first use, and freed only as its thread stops, out of the list; between
// uses it is out of the list (not freed), so that the program's own dumps show no thread
// of ours except while this thread waits for or holds the GIL. (It is put in and taken out
// with no thread state attached: on 3.13 the list's lock may be waited for only so.)
#pragma once

#include <atomic>
#include <cstdint>

typedef struct _ts PyThreadState;  // NOLINT: CPython's own spelling, without its headers

namespace spyglass::cpython {

class KeptThreadState {
 public:
  KeptThreadState() = default;
  KeptThreadState(const KeptThreadState&) = delete;
  KeptThreadState& operator=(const KeptThreadState&) = delete;

  // The owning thread, GIL not held: takes the GIL. False (nothing taken) when the
  // interpreter is finalizing or no state could be made.
  bool acquire();
  // The owning thread, after acquire(): lets the GIL go.
  void release();
  // The owning thread, GIL not held, as it stops: frees the state (taking the GIL for
  // that) without putting it back in the list. While finalizing it is left alone: the GIL
  // is not to be taken then.
  void discard();
  // A forked child: the owning thread is gone. os.fork() stops it first (discard), and a
  // fork from C leaves the state in the child's list, where it stays unused.
  void forget() { state_ = nullptr; }

  // States made by every KeptThreadState in this process (tests check there is no churn).
  static uint64_t made_count() { return made_.load(); }

 private:
  PyThreadState* state_ = nullptr;
  static std::atomic<uint64_t> made_;
};

}  // namespace spyglass::cpython
