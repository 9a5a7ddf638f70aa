// Python threads tell the sampler when they start and end. The control thread finds new
// threads by scanning /proc every interval, so a thread that lives a few milliseconds
// would be gone before it was found: a program running its work in many short threads
// showed a few percent of its CPU. A thread registers itself as it starts, its first
// sample due on the first scheduler tick that finds it running, and as it ends charges
// the CPU it used since its last sample to where that sample found it. A thread that no
// tick found running is charged as its kind's sampled threads were (core/thread_kinds.hpp).
#define Py_BUILD_CORE 1
#include <unistd.h>

#include <vector>

#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "../platform/signals.hpp"
#include "cpu_sampler.hpp"

namespace spyglass::cpython {

void CpuSampler::thread_started(PyCodeObject* target) {
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
  register_thread_locked(tid, /*calling_thread=*/true, kFirstSampleNs);
  auto it = threads_.find(tid);
  if (it == threads_.end()) return;
  Registered& reg = it->second;
  reg.self_registered = true;
  if (target != nullptr) {
    RawFrame frame;
    frame.code = reinterpret_cast<uintptr_t>(target);
    resolve_frames_locked(&frame, 1, &reg.target);
    reg.has_kind = true;
    kind_targets_.emplace(reg.target.code_id, reg.target);
  }
  // Registering is the profiler's work, not the thread's: its CPU counts from here.
  ThreadSlot& slot = thread_slot_table()[reg.slot];
  const platform::CpuSplit now = platform::this_thread_cpu();
  slot.last_user_ns = now.user_ns;
  slot.last_system_ns = now.system_ns;
}

void CpuSampler::thread_exiting() {
  if (!running_.load()) return;
  const shim::PauseThisThread paused;
  // The sampling signal must not land between reading the slot and releasing it.
  const platform::AllSignalsBlocked blocked;
  // The thread's CPU ends here: what follows is the profiler's work.
  const platform::CpuSplit now = platform::this_thread_cpu();
  std::lock_guard<std::mutex> lock(mutex_);
  const pid_t tid = platform::current_tid();
  auto it = threads_.find(tid);
  if (!running_.load() || it == threads_.end() || !it->second.self_registered) return;
  Registered& reg = it->second;
  platform::disarm_thread_cpu_timer(&reg.timer);
  drain_slot_locked(reg.slot);  // its samples so far, and with them its latest stack
  charge_remainder_locked(tid, reg, now);
  release_slot_locked(reg);
  threads_.erase(it);
  ended_.insert(tid);  // the kernel lists it a moment longer: the scan must not take it back
}

void CpuSampler::charge_remainder_locked(pid_t tid, Registered& reg,
                                         const platform::CpuSplit& now) {
  ThreadSlot& slot = thread_slot_table()[reg.slot];
  uint64_t user = 0;
  uint64_t system = 0;
  cpu_since_last_sample(slot, now.user_ns, now.system_ns, &user, &system);
  slot.primed = true;
  slot.last_user_ns = now.user_ns;
  slot.last_system_ns = now.system_ns;
  if (user + system == 0) return;
  Times t;
  t.samples = 1;
  t.system_ns = system;
  size_t stack = reg.last_stack;
  if (stack == SIZE_MAX && reg.has_kind && !kinds_.choose(reg.target.code_id, rng_, &stack)) {
    t.python_ns = user;  // no sample to tell the interpreter from native code apart
    kinds_.hold(reg.target.code_id, tid, t);
    return;
  }
  if (stack == SIZE_MAX) return;  // no stack to charge it to, nor a kind to ask
  (reg.last_class == CpuClass::kPython ? t.python_ns : t.native_ns) = user;
  // Added as any sample is, so that threads, files and the journal all see it.
  const StackEntry& entry = stacks_.entries()[stack];
  const std::vector<FrameKey> frames = entry.frames;  // adding may move the entries
  add_stack_locked(frames.data(), static_cast<uint16_t>(frames.size()), entry.truncated, tid, t);
}

void CpuSampler::settle_thread_kinds_locked() {
  for (const ThreadKinds::Share& share : kinds_.settle()) {
    if (share.has_stack) {
      const StackEntry& entry = stacks_.entries()[share.stack];
      const std::vector<FrameKey> frames = entry.frames;
      add_stack_locked(frames.data(), static_cast<uint16_t>(frames.size()), entry.truncated,
                       share.tid, share.times);
    } else {
      // No thread of its kind was ever sampled: a few ticks of CPU at most.
      const FrameKey target = kind_targets_[share.kind];
      add_stack_locked(&target, 1, false, share.tid, share.times);
    }
  }
}

}  // namespace spyglass::cpython
