#include "core/timeline.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace spyglass {
namespace {

// The value of the step series at t (each point holds until the next); 0 before it.
double value_at_or_zero(const std::vector<TimePoint>& p, double t) {
  double v = 0;
  for (const TimePoint& q : p) {
    if (q.t > t) break;
    v = q.value;
  }
  return v;
}

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

TEST(Timeline, ThinningKeepsEndsExtremesAndEachStretchsLastValue) {
  // A random walk with one spike and one dip: both must survive, and the series' value at
  // the end of each of the stretches thinning works in is the exact one.
  std::vector<TimePoint> p;
  uint64_t x = 88172645463325252ull;
  double v = 0;
  for (int i = 0; i < 1000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v += static_cast<double>(x % 201) - 100.0;
    p.push_back({i * 0.01, i == 321 ? 1e9 : i == 654 ? -1e9 : v});
  }
  const size_t cap = 64;
  const auto r = thin_timeline(p, cap);
  ASSERT_LE(r.size(), cap);
  EXPECT_EQ(r.front().t, p.front().t);
  EXPECT_EQ(r.back().t, p.back().t);
  EXPECT_EQ(r.back().value, p.back().value);
  bool spike = false;
  bool dip = false;
  for (size_t i = 0; i < r.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(r[i - 1].t, r[i].t);
    }
    spike |= r[i].value == 1e9;
    dip |= r[i].value == -1e9;
  }
  EXPECT_TRUE(spike);
  EXPECT_TRUE(dip);
  const size_t stretches = (cap - 1) / 3;
  const double span = p.back().t - p.front().t;
  for (size_t b = 1; b < stretches; ++b) {
    const double end = p.front().t + span * static_cast<double>(b) / static_cast<double>(stretches);
    EXPECT_EQ(value_at_or_zero(r, end), value_at_or_zero(p, end)) << "stretch " << b;
  }
}

TEST(Timeline, ThinningASawtoothKeepsBothLevels) {
  // A line whose block is freed as soon as it is made: 0, w, 0, w, ... Both levels stay.
  BoundedTimeline t(128);
  for (int i = 0; i < 100000; ++i) t.add(i * 1e-4, (i % 2) * 65536.0);
  ASSERT_LT(t.points().size(), 256u);
  bool low = false;
  bool high = false;
  for (const TimePoint& q : t.points()) {
    low |= q.value == 0.0;
    high |= q.value == 65536.0;
  }
  EXPECT_TRUE(low && high);
  EXPECT_EQ(t.points().back().t, 99999 * 1e-4);
}

}  // namespace
}  // namespace spyglass
