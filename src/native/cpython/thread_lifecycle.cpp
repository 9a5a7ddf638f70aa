// Python threads tell the sampler when they start and end. The control thread finds new
// threads by scanning /proc every interval and samples each after an interval of its CPU,
// so a thread that lives a few milliseconds was never sampled at all: a program running
// its work in many short threads showed a few percent of its CPU. A thread registers
// itself as it starts, with its first sample after a fraction of an interval, and as it
// ends charges the CPU it used since its last sample to where that sample found it. CPU
// timers fire on scheduler ticks, so a thread of a few milliseconds may end before its
// first sample: its CPU then goes to the function it ran, on that function's first line.
#define Py_BUILD_CORE 1
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "../platform/signals.hpp"
#include "cpu_sampler.hpp"

namespace spyglass::cpython {

namespace {

// A short thread's first sample comes after this much of its CPU: early enough to find it
// at work, late enough to cost one signal per thread.
constexpr uint64_t kFirstSampleNs = 1'000'000;

}  // namespace

void CpuSampler::thread_started() {
  if (!running_.load()) return;
  const shim::PauseThisThread paused;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!running_.load()) return;
  const pid_t tid = platform::current_tid();
  // The main thread never ends before the process does: a "thread" starting on it is a
  // green thread (gevent, eventlet) and must not unregister it when it ends.
  if (tid == getpid()) return;
  // A scan may have found the thread first (it exists before it gets here): it is still
  // a thread of its own, that will end itself.
  register_thread_locked(tid, /*calling_thread=*/true,
                         std::min(kFirstSampleNs, options_.interval_ns));
  auto it = threads_.find(tid);
  if (it != threads_.end()) it->second.self_registered = true;
}

void CpuSampler::thread_exiting(PyCodeObject* target) {
  if (!running_.load()) return;
  const shim::PauseThisThread paused;
  // The sampling signal must not land between reading the slot and releasing it.
  const platform::AllSignalsBlocked blocked;
  std::lock_guard<std::mutex> lock(mutex_);
  const pid_t tid = platform::current_tid();
  auto it = threads_.find(tid);
  if (!running_.load() || it == threads_.end() || !it->second.self_registered) return;
  Registered& reg = it->second;
  platform::disarm_thread_cpu_timer(&reg.timer);
  drain_slot_locked(reg.slot);  // its samples so far, and with them its latest stack
  ThreadSlot& slot = thread_slot_table()[reg.slot];
  const platform::CpuSplit now = platform::this_thread_cpu();
  uint64_t user = 0;
  uint64_t system = 0;
  cpu_since_last_sample(slot, now.user_ns, now.system_ns, &user, &system);
  if (user + system > 0) {
    Times t;
    t.samples = 1;
    t.system_ns = system;
    (reg.last_class == CpuClass::kPython ? t.python_ns : t.native_ns) = user;
    if (reg.last_stack != SIZE_MAX) {
      // Added as any sample is, so that threads, files and the journal all see it.
      const StackEntry& last = stacks_.entries()[reg.last_stack];
      const std::vector<FrameKey> frames = last.frames;  // adding may move the entries
      add_stack_locked(frames.data(), static_cast<uint16_t>(frames.size()), last.truncated, tid, t);
    } else {
      // Never sampled: its target's first line, or no line at all.
      RawFrame frame;
      frame.code = reinterpret_cast<uintptr_t>(target);
      FrameKey key;
      const uint16_t depth = target != nullptr ? 1 : 0;
      if (depth != 0) resolve_frames_locked(&frame, 1, &key);
      add_stack_locked(&key, depth, false, tid, t);
    }
  }
  release_slot_locked(reg);
  threads_.erase(it);
  ended_.insert(tid);  // the kernel lists it a moment longer: the scan must not take it back
}

}  // namespace spyglass::cpython
