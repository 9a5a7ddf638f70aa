#include "core/timeline.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace spyglass {
namespace {

std::vector<TimePoint> ramp_with_spike(size_t n, size_t spike_at) {
  std::vector<TimePoint> p;
  for (size_t i = 0; i < n; ++i) {
    p.push_back({static_cast<double>(i), i == spike_at ? 1000.0 : static_cast<double>(i)});
  }
  return p;
}

TEST(Timeline, ShortSeriesAreKeptAsIs) {
  const auto p = ramp_with_spike(5, 2);
  EXPECT_EQ(reduce_timeline(p, 10).size(), 5u);
}

TEST(Timeline, ReductionKeepsEndsAndPeaksWithinTheCap) {
  const auto p = ramp_with_spike(1000, 617);
  const auto r = reduce_timeline(p, 20);
  ASSERT_EQ(r.size(), 20u);
  EXPECT_EQ(r.front().t, 0.0);
  EXPECT_EQ(r.back().t, 999.0);
  bool spike = false;
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_LT(r[i - 1].t, r[i].t);
    if (r[i].value == 1000.0) spike = true;
  }
  EXPECT_TRUE(spike);
}

TEST(Timeline, AStraightLineNeedsOnlyItsEnds) {
  std::vector<TimePoint> p;
  for (int i = 0; i < 100; ++i) p.push_back({double(i), 2.0 * i});
  const auto r = reduce_timeline(p, 50);
  // Every interior point lies on the chord: the extra ones add nothing, but the cap is a
  // cap, not a target, so any number up to it is acceptable as long as ends are kept.
  ASSERT_GE(r.size(), 2u);
  EXPECT_LE(r.size(), 50u);
  EXPECT_EQ(r.front().t, 0.0);
  EXPECT_EQ(r.back().t, 99.0);
}

TEST(Timeline, BoundedTimelineNeverGrowsPastTwiceItsKeep) {
  BoundedTimeline t(16);
  for (int i = 0; i < 10000; ++i) t.add(i, std::sin(i / 10.0));
  EXPECT_LT(t.points().size(), 32u);
  EXPECT_EQ(t.points().back().t, 9999.0);
}

}  // namespace
}  // namespace spyglass
