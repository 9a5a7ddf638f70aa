#include "core/memory_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>

#include "core/profile_memory.hpp"

namespace spyglass {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(MemoryStats, LaplaceRuleOfSuccession) {
  EXPECT_DOUBLE_EQ(MemoryStats::leak_likelihood(0, 0), 0.5);
  EXPECT_DOUBLE_EQ(MemoryStats::leak_likelihood(18, 0), 1.0 - 1.0 / 20.0);
  EXPECT_LT(MemoryStats::leak_likelihood(17, 0), 0.95);
  EXPECT_GE(MemoryStats::leak_likelihood(18, 0), 0.95);
  EXPECT_DOUBLE_EQ(MemoryStats::leak_likelihood(0, 1), 0.0);
  EXPECT_LT(MemoryStats::leak_likelihood(50, 49), 0.05);
}

// The hooks' side of the watch, replayed: each allocation sample takes the next slot.
struct Replay {
  MemoryStats stats;
  int64_t footprint = 0;
  int64_t peak = 0;
  uint32_t generation = 0;
  Replay() { stats.reset(0); }
  // Returns the watch (slot, generation) of an allocation sample.
  std::pair<int, uint32_t> alloc(size_t stack, int64_t bytes) {
    footprint += bytes;
    const bool new_peak = footprint > peak;
    peak = std::max(peak, footprint);
    ++generation;
    const int slot = static_cast<int>(generation % kWatchSlots);
    stats.add_net(stack, stack, true, 7, generation, bytes, footprint, new_peak, slot, generation);
    return {slot, generation};
  }
  void free_now(size_t stack, int64_t bytes, std::pair<int, uint32_t> watch) {
    stats.watched_freed(watch.first, watch.second);
    footprint -= bytes;
    stats.add_net(stack, stack, true, 7, generation, -bytes, footprint, false);
  }
};

TEST(MemoryStats, AStackThatKeepsItsBlocksIsALeakOneThatChurnsIsNot) {
  Replay r;
  // Stack 1 keeps a 1 MiB block per pass; stack 2 allocates 8 MiB and frees it at once.
  // The churn sets every new peak, the steady leak never does.
  for (int i = 0; i < 40; ++i) {
    r.alloc(1, kMiB);
    const auto watch = r.alloc(2, 8 * kMiB);
    r.free_now(3, 8 * kMiB, watch);
  }
  r.stats.finish();
  const StackMemory& leak = r.stats.stacks().at(1);
  const StackMemory& churn = r.stats.stacks().at(2);
  EXPECT_GE(leak.watched, 38u);
  EXPECT_EQ(leak.watched_freed, 0u);
  EXPECT_GE(MemoryStats::leak_likelihood(leak.watched, leak.watched_freed), 0.95);
  EXPECT_EQ(churn.watched, churn.watched_freed);
  EXPECT_LT(MemoryStats::leak_likelihood(churn.watched, churn.watched_freed), 0.05);
  EXPECT_EQ(leak.live_bytes, 40 * kMiB);
  EXPECT_EQ(r.stats.max_footprint_bytes(), 48 * kMiB);
  EXPECT_EQ(r.stats.max_footprint_stack(), 2u);
  EXPECT_EQ(r.stats.final_footprint_bytes(), 40 * kMiB);
}

TEST(MemoryStats, AStaleFreeOfAReusedSlotIsIgnored) {
  Replay r;
  const auto first = r.alloc(1, kMiB);
  for (int i = 0; i < kWatchSlots; ++i) r.alloc(2, 0);  // the slot goes to another sample
  r.stats.watched_freed(first.first, first.second);
  EXPECT_EQ(r.stats.stacks().at(1).watched_freed, 0u);
}

TEST(MemoryStats, ExecutionsAndTheirPeaks) {
  MemoryStats s;
  s.reset(0);
  // Thread 1: two samples on stack 5 (one execution adding 3 MiB), then stack 6, then 5.
  s.add_net(5, 5, true, 1, 1, 2 * kMiB, 2 * kMiB, true);
  s.add_net(5, 5, true, 1, 2, kMiB, 3 * kMiB, true);
  s.add_net(6, 6, true, 1, 3, -kMiB, 2 * kMiB, false);
  s.add_net(5, 5, true, 1, 4, kMiB, 3 * kMiB, false);
  // Another thread's sample on stack 5 does not end thread 1's execution.
  s.add_net(5, 5, false, 2, 5, kMiB, 4 * kMiB, true);
  s.finish();
  const ExecutionStats& five = s.executions().at(5);
  EXPECT_EQ(five.count, 3u);
  EXPECT_EQ(five.max_peak, 3 * kMiB);
  EXPECT_EQ(s.native_thread_alloc_bytes(), static_cast<uint64_t>(kMiB));
  const MemoryExtras m = summarize_memory({5, 6}, {5, 6}, s);
  EXPECT_EQ(m.executions, 4u);
  EXPECT_DOUBLE_EQ(m.peak_bytes, 3.0 * kMiB);
  EXPECT_EQ(m.timeline.size(), 5u);  // the footprint at each of their samples
  EXPECT_DOUBLE_EQ(m.timeline.back().value, 4.0 * kMiB);
}

}  // namespace
}  // namespace spyglass
