// The CPU a thread used after its last sample: charged, as it ends, where that sample found
// it. A thread so short that no tick found it running is charged as its kind's sampled
// threads were (core/thread_kinds.hpp), once the run knows them.
#define Py_BUILD_CORE 1
#include <vector>

#include "../core/thread_slots.hpp"
#include "collection.hpp"
#include "cpu_engine.hpp"

namespace spyglass::cpython {

void CpuEngine::charge_remainder(const ProfiledThread& thread, CpuThread& cpu,
                                 const platform::CpuSplit& now) {
  ThreadSlot& slot = thread_slot_table()[cpu.slot];
  uint64_t user = 0;
  uint64_t system = 0;
  take_cpu_since_last_sample(slot, now.user_ns, now.system_ns, &user, &system);
  if (user + system == 0) return;
  Times t;
  t.samples = 1;
  t.system_ns = system;
  size_t stack = cpu.last_stack;
  if (stack == SIZE_MAX && thread.has_kind && !kinds_.choose(thread.target.code_id, rng_, &stack)) {
    t.python_ns = user;  // no sample to tell the interpreter from native code apart
    kinds_.hold(thread.target.code_id, thread.tid, t);
    kind_targets_.emplace(thread.target.code_id, thread.target);
    return;
  }
  if (stack == SIZE_MAX) return;  // no stack to charge it to, nor a kind to ask
  (cpu.last_class == CpuClass::kPython ? t.python_ns : t.native_ns) = user;
  // Added as any sample is, so that threads, files and the journal all see it.
  Collection& collection = ctx().collection;
  const StackEntry& entry = collection.stacks().entries()[stack];
  const std::vector<FrameKey> frames = entry.frames;  // adding may move the entries
  collection.add_stack(frames.data(), static_cast<uint16_t>(frames.size()), entry.truncated,
                       thread.tid, t);
}

void CpuEngine::settle_thread_kinds() {
  Collection& collection = ctx().collection;
  for (const ThreadKinds::Share& share : kinds_.settle()) {
    if (share.has_stack) {
      const StackEntry& entry = collection.stacks().entries()[share.stack];
      const std::vector<FrameKey> frames = entry.frames;
      collection.add_stack(frames.data(), static_cast<uint16_t>(frames.size()), entry.truncated,
                           share.tid, share.times);
    } else {
      // No thread of its kind was ever sampled: a few ticks of CPU at most.
      const FrameKey target = kind_targets_[share.kind];
      collection.add_stack(&target, 1, false, share.tid, share.times);
    }
  }
}

}  // namespace spyglass::cpython
