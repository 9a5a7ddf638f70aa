// How the collector finds the threads it follows. The control thread scans /proc every
// interval, so a thread that lives a few milliseconds would be gone before it was found:
// a program running its work in many short threads showed a few percent of its CPU. So a
// Python thread also registers itself as it starts, and tells the collector as it ends,
// which lets the engines account for it up to its last moment (cpu_engine.cpp). A thread
// of a C library, which the scan alone finds, counts from its start when a scan finds it
// that the one before did not list (ThreadStart::born_while_profiled); the CPU engine then
// samples it at once and reads its clock at every tick for a while (cpu_engine.hpp).
#define Py_BUILD_CORE 1
#include <unistd.h>

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "../platform/signals.hpp"
#include "../platform/threads.hpp"
#include "collector.hpp"

namespace spyglass::cpython {

void Collector::thread_started(PyCodeObject* target) {
  if (!running_.load()) return;
  const shim::PauseThisThread paused;
  const platform::AllSignalsBlocked blocked;  // its first tick must not fire half-way
  std::lock_guard<std::mutex> lock(mutex_);
  if (!running_.load()) return;
  const pid_t tid = platform::current_tid();
  // The main thread never ends before the process does: a "thread" starting on it is a
  // green thread (gevent, eventlet) and must not unregister it when it ends.
  if (tid == getpid()) return;
  // A scan may have found the thread first (it exists before it gets here): it is still
  // a thread of its own, that will end itself.
  register_thread_locked(tid, /*by_itself=*/true, /*has_target=*/target != nullptr);
  ProfiledThread* thread = threads_.find(tid);
  if (thread == nullptr) return;
  thread->self_registered = true;
  if (target != nullptr) {
    RawFrame frame;
    frame.code = reinterpret_cast<uintptr_t>(target);
    collection_.resolve_frames(&frame, 1, &thread->target);
    thread->has_kind = true;
  }
  for (auto& engine : engines_) engine->thread_claimed(*thread);
  // Registering is the profiler's work, not the thread's: its CPU counts from here.
  ThreadSlot& slot = thread_slot_table()[thread->slot];
  const platform::CpuSplit now = platform::this_thread_cpu();
  slot.last_user_ns = now.user_ns;
  slot.last_system_ns = now.system_ns;
}

void Collector::thread_exiting() {
  if (!running_.load()) return;
  const shim::PauseThisThread paused;
  // The sampling signal must not land between reading the slot and releasing it.
  const platform::AllSignalsBlocked blocked;
  // The thread's CPU ends here: what follows is the profiler's work.
  ThreadEnd how;
  how.by_itself = true;
  how.cpu = platform::this_thread_cpu();
  std::lock_guard<std::mutex> lock(mutex_);
  const pid_t tid = platform::current_tid();
  const ProfiledThread* thread = threads_.find(tid);
  if (!running_.load() || thread == nullptr || !thread->self_registered) return;
  end_thread_locked(tid, how);
  threads_.mark_ended(tid);
}

void Collector::program_starting() {
  if (!running_.load()) return;
  const shim::PauseThisThread paused;
  const platform::AllSignalsBlocked blocked;  // the sampling handler reads what this sets
  std::lock_guard<std::mutex> lock(mutex_);
  const ProfiledThread* thread = threads_.find(platform::current_tid());
  if (!running_.load() || thread == nullptr) return;
  for (auto& engine : engines_) engine->program_starting(*thread);
}

void Collector::scan_threads_locked() {
  // Most ticks of most programs find the threads of the tick before: the listing is then
  // not read (a third of this thread's system time), nor compared with the last.
  std::vector<pid_t> tids;
  if (!platform::list_threads_if_changed(&tids)) return;
  if (tids.empty()) return;  // /proc unreadable for once: the last listing still stands
  const std::unordered_set<pid_t> alive(tids.begin(), tids.end());
  for (pid_t tid : threads_.gone(alive)) end_thread_locked(tid, ThreadEnd{});
  threads_.forget_ended_except(alive);
  std::sort(tids.begin(), tids.end());
  for (pid_t tid : tids) {
    const bool born =
        listed_once_ && !std::binary_search(listed_tids_.begin(), listed_tids_.end(), tid);
    register_thread_locked(tid, /*by_itself=*/false, /*has_target=*/false, born);
  }
  listed_tids_ = std::move(tids);
  listed_once_ = true;
}

void Collector::register_thread_locked(pid_t tid, bool by_itself, bool has_target,
                                       bool born_while_profiled) {
  if (threads_.find(tid) != nullptr || is_own_thread(tid) || threads_.has_ended(tid)) return;
  ProfiledThread* thread = threads_.add(tid);
  if (thread == nullptr) return;  // more live threads than slots: the rest go unprofiled
  ThreadStart how;
  how.by_itself = by_itself;
  how.has_target = has_target;
  how.born_while_profiled = born_while_profiled;
  if (by_itself) {
    how.cpu = platform::this_thread_cpu();
    how.cpu_ns = how.cpu.user_ns + how.cpu.system_ns;
  } else if (!platform::thread_cpu_ns(tid, &how.cpu_ns)) {  // exited meanwhile
    threads_.remove(tid);
    return;
  }
  how.wall_ns = platform::monotonic_ns();
  for (size_t i = 0; i < engines_.size(); ++i) {
    if (!engines_[i]->thread_started(*thread, how)) {
      for (size_t j = 0; j < i; ++j) engines_[j]->thread_ended(*thread, ThreadEnd{});
      threads_.remove(tid);
      return;
    }
  }
}

void Collector::end_thread_locked(pid_t tid, const ThreadEnd& how) {
  const ProfiledThread* thread = threads_.find(tid);
  if (thread == nullptr) return;
  for (auto& engine : engines_) engine->thread_ended(*thread, how);
  threads_.remove(tid);
}

bool Collector::is_own_thread(pid_t tid) const {
  for (size_t i = 0; i < own_count_; ++i) {
    if (own_tids_[i].load() == tid) return true;
  }
  return false;
}

}  // namespace spyglass::cpython
