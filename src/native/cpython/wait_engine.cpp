#define Py_BUILD_CORE 1
#include "wait_engine.hpp"

#include <Python.h>

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "../platform/clock.hpp"
#include "collection.hpp"
#include "compat/interpreter.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

bool WaitEngine::thread_started(const ProfiledThread& thread, const ThreadStart& how) {
  WaitThread& w = threads_[thread.tid];
  w = WaitThread{};
  w.last_wall_ns = how.wall_ns;
  w.last_cpu_ns = how.cpu_ns;
  // Its time queued for a CPU before now is not to be taken off its waits from now on. A
  // thread registering itself has just started (its count is about zero): the system call
  // is left off the thread-start path.
  if (!how.by_itself) (void)platform::thread_run_delay_ns(thread.tid, &w.run_delay_ns);
  return true;
}

void WaitEngine::work() {
  if (++ticks_ % 100 == 0) {  // threads can gain a Python thread state later
    std::lock_guard<std::mutex> lock(ctx().lock);
    for (auto& [tid, w] : threads_) {
      if (w.python == 0) w.python = -1;
    }
  }
  charge_waits();
}

void WaitEngine::charge_waits() {
  bool need_gil = false;
  {
    std::lock_guard<std::mutex> lock(ctx().lock);
    const uint64_t now = platform::monotonic_ns();
    for (auto& [tid, w] : threads_) {
      uint64_t cpu = 0;
      if (!platform::thread_cpu_ns(tid, &cpu)) continue;
      const uint64_t wall = now - w.last_wall_ns;
      const uint64_t used = cpu > w.last_cpu_ns ? cpu - w.last_cpu_ns : 0;
      w.last_wall_ns = now;
      w.last_cpu_ns = cpu;
      if (w.python == 0) continue;  // native threads idle by design: not the user's wait
      uint64_t off_cpu = wall > used ? wall - used : 0;
      // Time off the CPU may have been spent queued for one (a loaded machine) rather
      // than waiting for anything of the thread's own: that is not the program's wait.
      // The kernel's count and ours are read at slightly different instants, so queued
      // time beyond this interval's off-CPU time is kept and taken off the next ones:
      // dropping it would leave every such skew counted as wait.
      uint64_t delay = 0;
      // (Read only for threads that ran: the kernel's file costs a system call, and a
      // sleeping thread's queued time, if any, is in the count when it runs again.)
      if (used > 0 && off_cpu > 0 && platform::thread_run_delay_ns(tid, &delay)) {
        w.queued_ns += delay > w.run_delay_ns ? delay - w.run_delay_ns : 0;
        w.run_delay_ns = delay;
        const uint64_t queued = std::min(off_cpu, w.queued_ns);
        off_cpu -= queued;
        w.queued_ns -= queued;
      }
      w.pending_wait_ns += off_cpu;
      if (w.pending_wait_ns >= interval_ns_ / 2) need_gil = true;
    }
    if (ctx().collection.wants_call_sites()) need_gil = true;
  }
  if (!need_gil || !ctx().running.load() || compat::is_finalizing()) return;

  // Holding the GIL freezes every other thread's frame stack (frames are pushed and popped
  // only under the GIL), so the blocked threads' stacks can be read safely from here.
  PyGILState_STATE gil = PyGILState_Ensure();
  if (ctx().running.load()) {
    std::lock_guard<std::mutex> lock(ctx().lock);
    ctx().collection.build_wanted_call_sites(bytecode_);
    std::unordered_set<pid_t> python_tids;
    for (PyThreadState* ts = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
         ts != nullptr; ts = PyThreadState_Next(ts)) {
      const pid_t tid = compat::native_tid(ts);
      auto it = threads_.find(tid);
      if (it == threads_.end()) continue;
      python_tids.insert(tid);
      WaitThread& w = it->second;
      w.python = 1;
      if (w.pending_wait_ns == 0) continue;
      SampleRecord& rec = scratch_;
      Leaf leaf;
      rec.kind = SampleKind::kWait;
      rec.tid = tid;
      rec.user_ns = rec.system_ns = 0;
      rec.wait_ns = w.pending_wait_ns;
      rec.depth = walk_stack(ts, rec.frames, &rec.truncated, &leaf);
      if (rec.depth > 0) (void)ctx().collection.add_sample(rec);
      w.pending_wait_ns = 0;
    }
    for (auto& [tid, w] : threads_) {
      if (python_tids.count(tid) == 0) {
        w.python = 0;
        w.pending_wait_ns = 0;
      }
    }
  }
  PyGILState_Release(gil);
}

}  // namespace spyglass::cpython
