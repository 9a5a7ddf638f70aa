#include "core/thread_slots.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

namespace spyglass {
namespace {

constexpr uint64_t kMs = 1000 * 1000;

// Takes a sample 10 ms of user and 1 ms of system time after the previous one, as the
// handler would; returns whether the ring had room.
bool sample(ThreadSlot& slot, uint64_t* user_clock, uint64_t* system_clock) {
  *user_clock += 10 * kMs;
  *system_clock += 1 * kMs;
  SampleRecord* rec = reserve_cpu_sample(slot, *user_clock, *system_clock);
  if (rec == nullptr) return false;
  slot.ring->commit();
  return true;
}

TEST(ThreadSlots, ASampleDroppedOnAFullRingLeavesItsCpuToTheNextOne) {
  ThreadSlot slot;
  slot.ring = std::make_unique<SpscRing<SampleRecord>>(kRingCapacity);
  slot.primed = true;
  uint64_t user = 0;
  uint64_t system = 0;
  for (size_t i = 0; i < kRingCapacity; ++i) ASSERT_TRUE(sample(slot, &user, &system));
  const int dropped = 5;
  for (int i = 0; i < dropped; ++i) EXPECT_FALSE(sample(slot, &user, &system));
  EXPECT_EQ(slot.ring->dropped(), static_cast<uint64_t>(dropped));

  uint64_t drained_user = 0;
  uint64_t drained_system = 0;
  while (const SampleRecord* rec = slot.ring->front()) {
    EXPECT_EQ(rec->user_ns, 10 * kMs);
    drained_user += rec->user_ns;
    drained_system += rec->system_ns;
    slot.ring->pop();
  }
  ASSERT_TRUE(sample(slot, &user, &system));
  const SampleRecord* next = slot.ring->front();
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->user_ns, (1 + dropped) * 10 * kMs);
  EXPECT_EQ(next->system_ns, (1 + dropped) * kMs);
  // Every nanosecond the clocks moved is in some record.
  EXPECT_EQ(drained_user + next->user_ns, user);
  EXPECT_EQ(drained_system + next->system_ns, system);
}

TEST(ThreadSlots, TheFirstSampleTakesTheCpuSinceTheBaselineInTheLifesProportions) {
  ThreadSlot slot;
  slot.ring = std::make_unique<SpscRing<SampleRecord>>(kRingCapacity);
  slot.primed = false;
  slot.baseline_cpu_ns = 60 * kMs;  // read by the registering thread
  // 100 ms in all by the first sample, a quarter of it system time.
  SampleRecord* rec = reserve_cpu_sample(slot, 75 * kMs, 25 * kMs);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->user_ns + rec->system_ns, 40 * kMs);
  EXPECT_EQ(rec->system_ns, 10 * kMs);
  EXPECT_TRUE(slot.primed);
}

}  // namespace
}  // namespace spyglass
