// The per-thread state the sampler keeps, in a fixed table that is never freed: a queued
// timer signal can still arrive after its thread was unregistered, and the handler must
// then find valid memory that tells it to ignore the signal.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "limits.hpp"
#include "sample.hpp"
#include "spsc_ring.hpp"

namespace spyglass {

inline constexpr uint32_t kMaxThreadSlots = kMaxThreads;
inline constexpr uint32_t kSlotIndexBits = 12;  // a cookie's low bits: the slot's index
static_assert((uint32_t{1} << kSlotIndexBits) == kMaxThreadSlots);
inline constexpr size_t kRingCapacity = 32;  // records; ~0.3 s of samples at 10 ms

struct ThreadSlot {
  // Non-zero while the slot belongs to a live, sampled thread: (generation << 12) | index,
  // handed to the kernel as the timer's si_value so stale signals are recognised.
  std::atomic<uint32_t> cookie{0};
  std::atomic<uint32_t> busy{0};  // handlers running on this slot right now
  pid_t tid = 0;
  uint32_t generation = 0;
  std::unique_ptr<SpscRing<SampleRecord>> ring;

  // Written only by the handler on the slot's own thread.
  bool primed = false;
  uint64_t last_user_ns = 0;
  uint64_t last_system_ns = 0;
  // Written by the registering thread before the timer is armed.
  uint64_t baseline_cpu_ns = 0;
};

// The user and system CPU a thread used since its slot last accounted for it, given its
// clocks now. Before its first sample the registering thread could only read its total CPU
// (the baseline), so that delta is split in the proportions of the thread's whole life.
// Async-signal-safe: the sample handler calls it.
inline void cpu_since_last_sample(const ThreadSlot& slot, uint64_t user_now, uint64_t system_now,
                                  uint64_t* user, uint64_t* system) {
  if (slot.primed) {
    *user = user_now > slot.last_user_ns ? user_now - slot.last_user_ns : 0;
    *system = system_now > slot.last_system_ns ? system_now - slot.last_system_ns : 0;
    return;
  }
  const uint64_t total = user_now + system_now;
  const uint64_t delta = total > slot.baseline_cpu_ns ? total - slot.baseline_cpu_ns : 0;
  *system = total > 0 ? static_cast<uint64_t>(static_cast<double>(delta) *
                                              static_cast<double>(system_now) /
                                              static_cast<double>(total))
                      : 0;
  *user = delta - *system;
}

// The CPU since the thread's last sample (as cpu_since_last_sample), the clocks `now`
// becoming the last sample's. Async-signal-safe: the sample handler calls it.
inline void take_cpu_since_last_sample(ThreadSlot& slot, uint64_t user_now, uint64_t system_now,
                                       uint64_t* user, uint64_t* system) {
  cpu_since_last_sample(slot, user_now, system_now, user, system);
  slot.primed = true;
  slot.last_user_ns = user_now;
  slot.last_system_ns = system_now;
}

// The ring's next record for a CPU sample taken with the thread's clocks at `now`, its
// user_ns and system_ns set to the CPU since the last sample that found room; nullptr when
// the ring is full. A full ring (its drain held up: the control thread kept off the CPUs,
// or blocked in a write) drops the sample but not its CPU: the clocks are not taken, so the
// next sample that finds room carries that time, and the thread's and the run's CPU stay
// what the kernel counted. Async-signal-safe: the sample handler calls it.
inline SampleRecord* reserve_cpu_sample(ThreadSlot& slot, uint64_t user_now, uint64_t system_now) {
  SampleRecord* rec = slot.ring->reserve();
  if (rec == nullptr) return nullptr;
  take_cpu_since_last_sample(slot, user_now, system_now, &rec->user_ns, &rec->system_ns);
  return rec;
}

inline uint32_t make_cookie(uint32_t generation, uint32_t index) {
  return (generation << kSlotIndexBits) | index;
}
inline uint32_t cookie_index(uint32_t cookie) { return cookie & (kMaxThreadSlots - 1); }
// Set in the cookie of a thread's first-tick timer (cpu_engine.hpp). Generations stay below
// it (thread_registry.cpp), so it never collides with a periodic timer's cookie.
inline constexpr uint32_t kFirstTickFlag = uint32_t{1} << 31;

// The process-wide table, reached by the signal handler without locks.
ThreadSlot* thread_slot_table();

}  // namespace spyglass
