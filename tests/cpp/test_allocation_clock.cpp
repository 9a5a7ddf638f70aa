#include "core/allocation_clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace spyglass {
namespace {

TEST(AllocationClock, SplitsTheAllocationsBetweenTwoTimesIntoEqualShares) {
  AllocationClock clock;
  // 80 allocations in the first second, 20 in the next ten.
  for (int i = 1; i <= 80; ++i) clock.tick(i / 80.0);
  for (int i = 1; i <= 20; ++i) clock.tick(1.0 + i / 2.0);
  const std::vector<double> at = clock.split(0.0, 11.0, 5, 10);
  ASSERT_EQ(at.size(), 5u);
  EXPECT_DOUBLE_EQ(at[0], 20 / 80.0);  // the 20th allocation completes the first fifth
  EXPECT_DOUBLE_EQ(at[1], 40 / 80.0);
  EXPECT_DOUBLE_EQ(at[2], 60 / 80.0);
  EXPECT_DOUBLE_EQ(at[3], 1.0);
  EXPECT_DOUBLE_EQ(at[4], 11.0);  // the last is always the end
}

TEST(AllocationClock, OnlyTheAllocationsBetweenTheTwoTimesCount) {
  AllocationClock clock;
  for (int i = 0; i < 100; ++i) clock.tick(i);
  const std::vector<double> at = clock.split(50.0, 89.5, 4, 8);
  EXPECT_DOUBLE_EQ(at[0], 59.0);  // 40 ticks, 50..89: the 10th is 59
  EXPECT_DOUBLE_EQ(at[1], 69.0);
  EXPECT_DOUBLE_EQ(at[2], 79.0);
  EXPECT_DOUBLE_EQ(at[3], 89.5);
}

TEST(AllocationClock, TooFewAllocationsGiveEvenSeconds) {
  AllocationClock clock;
  clock.tick(1.0);
  clock.tick(1.1);
  EXPECT_EQ(clock.split(0.0, 4.0, 4, 8), (std::vector<double>{1.0, 2.0, 3.0, 4.0}));
}

TEST(AllocationClock, StaysBoundedAndKeepsItsSharesOverALongRun) {
  AllocationClock clock;
  // Ten times as many allocations in the second half of the run as in the first.
  for (int i = 0; i < 100000; ++i) clock.tick(i * 1e-4);          // 0 to 10 s
  for (int i = 0; i < 1000000; ++i) clock.tick(10.0 + i * 1e-5);  // 10 to 20 s
  std::string bytes;
  ByteWriter out(&bytes);
  clock.save(out);
  EXPECT_LE(bytes.size(), AllocationClock::kKept * 8 + 64);
  const std::vector<double> at = clock.split(0.0, 20.0, 11, 22);
  EXPECT_NEAR(at[0], 10.0, 0.05);  // the first eleventh is the first half's 100,000
  EXPECT_NEAR(at[5], 15.0, 0.05);
}

TEST(AllocationClock, SaveAndLoadKeepTheShares) {
  AllocationClock clock;
  for (int i = 0; i < 10000; ++i) clock.tick(i * i * 1e-6);
  std::string bytes;
  ByteWriter out(&bytes);
  clock.save(out);
  AllocationClock copy;
  ByteReader in(bytes);
  ASSERT_TRUE(copy.load(in));
  EXPECT_EQ(copy.split(0, 100, 16, 32), clock.split(0, 100, 16, 32));
  for (int i = 0; i < 5000; ++i) {  // and it goes on counting where it left off
    clock.tick(100.0 + i);
    copy.tick(100.0 + i);
  }
  EXPECT_EQ(copy.split(0, 6000, 16, 32), clock.split(0, 6000, 16, 32));
  ByteReader cut(std::string_view(bytes).substr(0, bytes.size() - 3));
  EXPECT_FALSE(AllocationClock().load(cut));
}

// A cache's misses: the line judged makes 6 of every 7 allocations while it fills (the
// first second), then the rest of the program goes on alone, at the same pace of work.
TEST(AllocationClock, SplitOthersLeavesTheJudgedLinesOwnAllocationsOut) {
  AllocationClock clock;
  std::vector<double> own_times;
  for (int i = 0; i < 70; ++i) {
    const double t = i / 70.0;
    clock.tick(t);
    if (i % 7 != 0) own_times.push_back(t);
  }
  for (int i = 1; i <= 30; ++i) clock.tick(1.0 + i / 10.0);  // to 4 s
  const auto own = [&own_times](double t) {
    return static_cast<double>(std::upper_bound(own_times.begin(), own_times.end(), t) -
                               own_times.begin());
  };
  // Of the rest's 40, the first 10 are done as the line stops: a quarter, at 0.9 s.
  const std::vector<double> at = clock.split_others(0.0, 4.0, 4, 8, own);
  EXPECT_NEAR(at[0], 0.9, 0.02);
  EXPECT_NEAR(at[1], 2.0, 0.11);
  EXPECT_DOUBLE_EQ(at[3], 4.0);
  // Counted with its own, the line's growth fills most of the clock.
  EXPECT_LT(clock.split(0.0, 4.0, 4, 8)[1], 1.0);
  // No other allocations: the whole clock, as split() has it.
  const auto all = [&clock](double t) { return t < 1.0 ? t * 70.0 : 70.0 + (t - 1.0) * 10.0; };
  EXPECT_EQ(clock.split_others(0.0, 4.0, 4, 8, all), clock.split(0.0, 4.0, 4, 8));
}

}  // namespace
}  // namespace spyglass
