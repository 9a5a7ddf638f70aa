// The CPU of a thread's first intervals, and what a thread used after its last sample.
// While a thread with a target is young, its samples tell where its kind's threads spend
// their CPU at each position, and its CPU is charged from that (core/thread_kinds.hpp); a
// thread that never got a sample is charged the same way.
//
// An older thread's last partial interval goes where its last sample found it, or where
// the thread ends. A sample is charged the CPU since the one before, so each part of a
// thread's work gains, on average, the tail of the part before it and loses its own tail
// to the part after. A thread whose first sample found it in the program's code has
// nothing before that first part: its last part keeps its own tail, and the program's
// lines add up to the thread's CPU. One whose first sample found it outside the program
// (multiprocessing's spawn bootstrap, a forkserver's child unpickling its task, pytest's
// start-up) gave the program's first part the tail of that start-up: its last part's
// tail goes out again, where the thread ends. Kept, it was half an interval too much on
// the worker of each process started with "spawn" or "forkserver", with its process's
// exit besides: +9 to +20 % for processes of 40 ms (tests/integration/test_children.py).
// A thread that no sample found in the run's code (a program shorter than the profiler's
// first tick, whose one sample fell in spyglass's own start) also has it charged where it
// ends: lost, such a run showed no CPU at all.
#define Py_BUILD_CORE 1
#include <Python.h>

#include <vector>

#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "collection.hpp"
#include "compat/interpreter.hpp"
#include "cpu_engine.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

void CpuEngine::add_picks(int32_t tid, const std::vector<ThreadKinds::Pick>& picks) {
  Collection& collection = ctx().collection;
  for (const ThreadKinds::Pick& pick : picks) {
    collection.add_to_stack(pick.stack, tid, pick.times);
    if (pick.chain != nullptr) {
      collection.add_native_cost(pick.stack, *pick.chain, pick.times.native_ns);
    }
  }
}

void CpuEngine::charge_kind(const ProfiledThread& thread, uint64_t from_ns, uint64_t to_ns,
                            uint64_t user_ns, uint64_t system_ns) {
  if (user_ns + system_ns == 0) return;
  Times t;
  t.python_ns = user_ns;  // user time: its class is that of where it is charged
  t.system_ns = system_ns;
  // Shared out once the points around now are known (thread_kinds.hpp): at a later tick.
  const uint32_t kind = thread.target.code_id;
  kinds_.hold(kind, thread.tid, from_ns, to_ns, t, platform::monotonic_ns());
  kind_targets_.emplace(kind, thread.target);
}

void CpuEngine::aggregate_young(const SampleRecord& rec, const ProfiledThread& thread,
                                CpuThread& cpu) {
  const uint64_t from = cpu.position_ns;
  cpu.position_ns += rec.user_ns + rec.system_ns;
  // Counted where it was seen; its CPU goes where its kind's goes at this position.
  const size_t index = ctx().collection.add_sample(rec, /*with_cpu=*/false);
  if (index == Collection::kNotAdded) return;
  cpu.last_stack = index;
  cpu.last_class = rec.cpu_class;
  note_native(cpu, rec, index);
  if (rec.first_tick) platform::disarm_thread_cpu_timer(&cpu.first_tick);  // spent
  kinds_.observe(thread.target.code_id, cpu.position_ns, index, rec.cpu_class, rec.in_gc,
                 native_chain(rec), platform::monotonic_ns());
  charge_kind(thread, from, cpu.position_ns, rec.user_ns, rec.system_ns);
  if (cpu.position_ns >= young_ns()) cpu.young = false;
}

size_t CpuEngine::stack_at_end(pid_t tid) {
  // Thread states are being torn down; a thread with none has no Python frame to read.
  if (compat::is_finalizing()) return SIZE_MAX;
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (ts == nullptr) return SIZE_MAX;
  SampleRecord rec;
  rec.tid = tid;
  Leaf leaf;
  // Its own frames, under the GIL: none of them can change while they are read.
  rec.depth = walk_stack(ts, rec.frames, &rec.truncated, &leaf);
  return ctx().collection.name_stack_below_own(rec);
}

void CpuEngine::charge_remainder(const ProfiledThread& thread, CpuThread& cpu,
                                 const platform::CpuSplit& now) {
  ThreadSlot& slot = thread_slot_table()[cpu.slot];
  uint64_t user = 0;
  uint64_t system = 0;
  take_cpu_since_last_sample(slot, now.user_ns, now.system_ns, &user, &system);
  if (user + system == 0) return;
  if (thread.has_kind && (cpu.young || cpu.last_stack == SIZE_MAX)) {
    const uint64_t from = cpu.position_ns;
    cpu.position_ns += user + system;
    charge_kind(thread, from, cpu.position_ns, user, system);
    return;
  }
  // A thread with a target had its first part charged by its kind's, from the first
  // moment (aggregate_young): nothing was gained there.
  const bool out_again = cpu.last_stack == SIZE_MAX || (cpu.began_outside && !thread.has_kind);
  const size_t end = out_again ? stack_at_end(thread.tid) : SIZE_MAX;
  const size_t stack = end != SIZE_MAX ? end : cpu.last_stack;
  if (stack == SIZE_MAX) return;  // no stack to charge it to, nor a kind to ask
  Times t;
  t.samples = 1;
  t.system_ns = system;
  (cpu.last_class == CpuClass::kPython ? t.python_ns : t.native_ns) = user;
  // Added as any sample is, so that threads, files and the journal all see it.
  ctx().collection.add_to_stack(stack, thread.tid, t);
}

void CpuEngine::read_watched_clocks(uint64_t now_ns) {
  for (auto& [tid, cpu] : threads_) {
    if (cpu.watch_until_ns == 0) continue;
    uint64_t ns = 0;
    if (platform::thread_cpu_ns(tid, &ns)) cpu.watched_cpu_ns = ns;
    // Old enough that a last partial interval is little of its work: no longer watched.
    if (now_ns > cpu.watch_until_ns) cpu.watch_until_ns = 0;
  }
}

void CpuEngine::charge_watched(pid_t tid, CpuThread& cpu) {
  if (cpu.watch_until_ns == 0 || cpu.last_stack == SIZE_MAX) return;
  cpu.watch_until_ns = 0;
  const ThreadSlot& slot = thread_slot_table()[cpu.slot];
  // What its samples have accounted for: its clocks at the latest one, or before any, the
  // CPU it had when found (0: born in the run, counted from its start).
  const uint64_t sampled =
      slot.primed ? slot.last_user_ns + slot.last_system_ns : slot.baseline_cpu_ns;
  if (cpu.watched_cpu_ns <= sampled) return;
  Times t;
  t.samples = 1;
  (cpu.last_class == CpuClass::kPython ? t.python_ns : t.native_ns) = cpu.watched_cpu_ns - sampled;
  ctx().collection.add_to_stack(cpu.last_stack, tid, t);
}

void CpuEngine::settle_thread_kinds(bool all) {
  Collection& collection = ctx().collection;
  const uint64_t now = all ? ThreadKinds::kAnyTime : platform::monotonic_ns();
  for (const ThreadKinds::Held& held : kinds_.settle_due(now, rng_)) {
    if (held.seen) {
      add_picks(held.tid, held.picks);
    } else {
      // No thread of its kind was ever seen: a few ticks of CPU at most.
      const FrameKey target = kind_targets_[held.kind];
      collection.add_stack(&target, 1, false, held.tid, held.times);
    }
  }
}

}  // namespace spyglass::cpython
