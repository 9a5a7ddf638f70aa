#include "core/memory_stats.hpp"

#include <gtest/gtest.h>

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

TEST(MemoryStats, GrowingStackIsScoredAsLeakChurningStackIsNot) {
  MemoryStats s;
  s.reset(0);
  int64_t footprint = 0;
  // Stack 1 keeps every block: each sample sets a new peak, the watched block survives.
  for (int i = 0; i < 40; ++i) {
    footprint += kMiB;
    s.add_net(1, 1, true, 7, 1000 * i, kMiB, footprint, true);
  }
  // Stack 2 allocates 8 MiB and frees it at once, over and over.
  for (int i = 0; i < 40; ++i) {
    footprint += 8 * kMiB;
    const bool peak = i == 0;
    s.add_net(2, 2, true, 7, 100000 + 1000 * i, 8 * kMiB, footprint, peak);
    if (peak) s.watched_freed();
    footprint -= 8 * kMiB;
    s.add_net(3, 3, true, 7, 100000 + 1000 * i + 500, -8 * kMiB, footprint, false);
  }
  s.finish();
  const StackMemory& leak = s.stacks().at(1);
  const StackMemory& churn = s.stacks().at(2);
  EXPECT_GE(MemoryStats::leak_likelihood(leak.watched, leak.watched_freed), 0.95);
  EXPECT_LT(MemoryStats::leak_likelihood(churn.watched, churn.watched_freed), 0.5);
  EXPECT_EQ(leak.live_bytes, 40 * kMiB);
  EXPECT_EQ(s.max_footprint_bytes(), 48 * kMiB);
  EXPECT_EQ(s.max_footprint_stack(), 2u);
  EXPECT_EQ(s.final_footprint_bytes(), 40 * kMiB);
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
