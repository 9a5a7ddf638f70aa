#include "core/thread_kinds.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>

namespace spyglass {
namespace {

constexpr CpuClass kPy = CpuClass::kPython;
constexpr CpuClass kNat = CpuClass::kNative;
constexpr uint64_t kMs = 1'000'000;

Times user(uint64_t ns, uint64_t system = 0) {
  Times t;
  t.python_ns = ns;
  t.system_ns = system;
  return t;
}

uint64_t total(const std::vector<ThreadKinds::Pick>& picks) {
  uint64_t sum = 0;
  for (const auto& p : picks) sum += p.times.python_ns + p.times.native_ns + p.times.system_ns;
  return sum;
}

TEST(ThreadKinds, NothingToShareBeforeAThreadOfTheKindIsSeen) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  std::mt19937_64 rng(1);
  EXPECT_TRUE(kinds.share(7, 0, kMs, user(kMs), rng).empty());
  kinds.observe(8, kMs, 3, kPy, false);  // another kind
  EXPECT_TRUE(kinds.share(7, 0, kMs, user(kMs), rng).empty());
}

TEST(ThreadKinds, EachSpanOfCpuGoesWhereTheKindWasSeenThere) {
  // Threads spend their first 2 ms on stack 10 and the next 2 ms on stack 11, but were
  // seen far more often in the second part: how often does not matter, only where.
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  for (int i = 0; i < 4; ++i) kinds.observe(1, kMs / 2 + i * kMs / 4, 10, kPy, false);
  for (int i = 0; i < 40; ++i) kinds.observe(1, 2 * kMs + i * kMs / 20, 11, kPy, false);
  std::mt19937_64 rng(3);
  const auto picks = kinds.share(1, 0, 4 * kMs, user(4 * kMs, 400'000), rng);
  std::map<size_t, uint64_t> by_stack;
  for (const auto& p : picks) by_stack[p.stack] += p.times.python_ns;
  EXPECT_EQ(by_stack[10], 2 * kMs);
  EXPECT_EQ(by_stack[11], 2 * kMs);
  EXPECT_EQ(total(picks), 4 * kMs + 400'000);  // nothing lost to rounding
}

TEST(ThreadKinds, WithinASpanStacksAndClassesAreDrawnByTheirPoints) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  for (int i = 0; i < 2; ++i) kinds.observe(1, kMs + 1, 10, kPy, false);
  kinds.observe(1, kMs + 2, 10, kNat, false, {0x1234, 0x5678});
  kinds.observe(1, kMs + 3, 11, kPy, false);
  std::mt19937_64 rng(42);
  std::map<std::pair<size_t, CpuClass>, uint64_t> counts;
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) {
    const auto picks = kinds.share(1, kMs, kMs + 100, user(100), rng);
    ASSERT_EQ(picks.size(), 1u);
    ++counts[{picks[0].stack, picks[0].cls}];
    if (picks[0].cls == kNat) {
      EXPECT_EQ(picks[0].times.native_ns, 100u);
      ASSERT_NE(picks[0].chain, nullptr);
      EXPECT_EQ(*picks[0].chain, (std::vector<uintptr_t>{0x1234, 0x5678}));
    }
  }
  const auto share = [&](size_t stack, CpuClass cls) {
    return counts[std::make_pair(stack, cls)] / static_cast<double>(draws);
  };
  // 2:1:1 within a few standard deviations (sd of a share ~ 0.0025 over 40000 draws).
  EXPECT_NEAR(share(10, kPy), 0.5, 0.012);
  EXPECT_NEAR(share(10, kNat), 0.25, 0.012);
  EXPECT_NEAR(share(11, kPy), 0.25, 0.012);
}

TEST(ThreadKinds, CpuSeenInTheCollectorIsItsTime) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  kinds.observe(1, kMs / 4, 10, kPy, true);
  std::mt19937_64 rng(11);
  const auto picks = kinds.share(1, 0, kMs / 2, user(kMs / 2), rng);
  ASSERT_EQ(picks.size(), 1u);
  EXPECT_EQ(picks[0].times.python_ns, kMs / 2);
  EXPECT_EQ(picks[0].times.gc_ns, kMs / 2);
}

TEST(ThreadKinds, LongYoungPeriodsHaveWiderSpansNotMoreOfThem) {
  // 400 ms in at most 256 spans: a point 1 ms in and one 1.2 ms in share a span.
  ThreadKinds kinds;
  kinds.configure(400 * kMs);
  kinds.observe(1, kMs, 10, kPy, false);
  kinds.observe(1, 1200'000, 11, kPy, false);
  std::mt19937_64 rng(13);
  std::map<size_t, int> seen;
  for (int i = 0; i < 200; ++i) {
    const auto picks = kinds.share(1, 900'000, 900'001, user(1), rng);
    ASSERT_EQ(picks.size(), 1u);
    ++seen[picks[0].stack];
  }
  EXPECT_EQ(seen.size(), 2u);  // both drawn: one span
}

TEST(ThreadKinds, ASpanNotSeenYetTakesTheNearestSeen) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  kinds.observe(1, 10 * kMs, 10, kPy, false);
  kinds.observe(1, 30 * kMs, 11, kPy, false);
  std::mt19937_64 rng(5);
  const auto early = kinds.share(1, 0, kMs, user(kMs), rng);
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0].stack, 10u);
  // Positions past the young ones count as the last span's.
  const auto late = kinds.share(1, 60 * kMs, 61 * kMs, user(kMs), rng);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].stack, 11u);
}

TEST(ThreadKinds, HeldCpuIsSharedOutAtTheEnd) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  kinds.hold(5, 101, 0, 2 * kMs, user(2 * kMs, 200'000));
  for (uint64_t at : {kMs / 4, 3 * kMs / 4}) kinds.observe(5, at, 20, kPy, false);
  for (uint64_t at : {5 * kMs / 4, 7 * kMs / 4}) kinds.observe(5, at, 21, kNat, false, {0x42});
  std::mt19937_64 rng(7);
  const auto held = kinds.settle(rng);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_TRUE(held[0].seen);
  EXPECT_EQ(held[0].tid, 101);
  uint64_t python = 0;
  uint64_t native = 0;
  for (const auto& p : held[0].picks) {
    python += p.times.python_ns;
    native += p.times.native_ns;
    EXPECT_EQ(p.stack, p.cls == kPy ? 20u : 21u);
  }
  EXPECT_EQ(python, kMs);
  EXPECT_EQ(native, kMs);
  EXPECT_EQ(total(held[0].picks), 2 * kMs + 200'000);
  EXPECT_TRUE(kinds.settle(rng).empty());  // settled once
}

TEST(ThreadKinds, AKindNeverSeenKeepsItsHeldCpuWhole) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  kinds.hold(9, 7, 0, 2 * kMs, user(2 * kMs));
  std::mt19937_64 rng(9);
  const auto held = kinds.settle(rng);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_FALSE(held[0].seen);
  EXPECT_EQ(held[0].kind, 9u);
  EXPECT_TRUE(held[0].picks.empty());
  EXPECT_EQ(held[0].times.python_ns, 2 * kMs);
}

// A server whose threads' work changed half-way: the CPU used in each phase goes where the
// kind's threads were seen then, before and after, not where they were over the whole run.
TEST(ThreadKinds, CpuIsChargedWhereTheKindWasSeenAroundThatMoment) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  std::mt19937_64 rng(3);
  constexpr uint64_t kS = 1'000'000'000;
  const auto drawn = [&](uint64_t at_ns) {
    std::map<size_t, int> stacks;
    for (int i = 0; i < 2000; ++i)
      ++stacks[kinds.share(1, kMs, kMs + 1, user(1), rng, at_ns)[0].stack];
    return stacks;
  };
  for (uint64_t i = 0; i < 100; ++i) kinds.observe(1, kMs, 10, kPy, false, {}, i * kS / 100);
  EXPECT_EQ(drawn(kS / 2)[10], 2000);
  for (uint64_t i = 0; i < 100; ++i) kinds.observe(1, kMs, 11, kPy, false, {}, kS + i * kS / 100);
  EXPECT_EQ(drawn(3 * kS / 2)[11], 2000);
  // At the change: the points nearest, from both sides.
  EXPECT_NEAR(drawn(kS)[10] / 2000.0, 0.5, 0.1);
  // Points too old for any held CPU to draw from are gone (half of the first phase's).
  EXPECT_NEAR(drawn(ThreadKinds::kAnyTime)[10] / 2000.0, 50.0 / 150.0, 0.05);
}

// Short threads' last steps are seldom sampled: in the second phase their span had a few
// points in seconds, and its kNearest reached back into the first phase all through the
// second. A span seen within the window of the moment, the nearest in position, comes
// first; only when none was is an older point of the span's own drawn.
TEST(ThreadKinds, ASpanSeenSeldomDrawsFromItsNeighbourThenNotFromLongBefore) {
  ThreadKinds kinds;
  kinds.configure(4 * kMs);  // spans of 0.5 ms: 0-7
  std::mt19937_64 rng(11);
  constexpr uint64_t kS = 1'000'000'000;
  for (uint64_t i = 0; i < 40; ++i) {  // first phase: every span seen, often
    for (uint64_t span = 0; span < 8; ++span) {
      kinds.observe(1, span * kMs / 2 + 1, 10 + span, kPy, false, {}, i * kS / 40);
    }
  }
  // Second phase, from 2 s: span 7 seen at 2 s and 6 s only; span 6 all along.
  kinds.observe(1, 7 * kMs / 2 + 1, 27, kPy, false, {}, 2 * kS);
  kinds.observe(1, 7 * kMs / 2 + 1, 27, kPy, false, {}, 6 * kS);
  for (uint64_t i = 0; i < 40; ++i)
    kinds.observe(1, 6 * kMs / 2 + 1, 26, kPy, false, {}, 2 * kS + i * kS / 10);
  std::map<size_t, int> drawn;
  for (int i = 0; i < 1000; ++i) {
    ++drawn[kinds.share(1, 7 * kMs / 2, 7 * kMs / 2 + 1, user(1), rng, 4 * kS)[0].stack];
  }
  EXPECT_EQ(drawn[26], 1000) << "span 6, seen at that moment, not span 7's first phase";
  drawn.clear();
  for (int i = 0; i < 1000; ++i) {
    ++drawn[kinds.share(1, 7 * kMs / 2, 7 * kMs / 2 + 1, user(1), rng, 2 * kS + kS / 4)[0].stack];
  }
  EXPECT_EQ(drawn[27], 1000) << "its own span, seen within the window";
  // Long after every point: the nearest in time of the span's own, as before.
  drawn.clear();
  for (int i = 0; i < 1000; ++i) {
    ++drawn[kinds.share(1, 0, 1, user(1), rng, 20 * kS)[0].stack];
  }
  EXPECT_EQ(drawn[10], 1000);
}

TEST(ThreadKinds, HeldCpuIsSharedOutOnlyOnceItHasWaitedForLaterPoints) {
  ThreadKinds kinds;
  kinds.configure(40 * kMs);
  std::mt19937_64 rng(3);
  const uint64_t at = 10 * ThreadKinds::kDelayNs;
  kinds.hold(1, 7, 0, kMs, user(kMs), at);
  kinds.hold(2, 8, 0, kMs, user(kMs), at);  // a kind never seen: held until the end
  kinds.observe(1, kMs / 2, 10, kPy, false, {}, at + 1);
  EXPECT_TRUE(kinds.settle_due(at + ThreadKinds::kDelayNs - 1, rng).empty());
  const auto due = kinds.settle_due(at + ThreadKinds::kDelayNs, rng);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].tid, 7);
  ASSERT_EQ(due[0].picks.size(), 1u);
  EXPECT_EQ(due[0].picks[0].stack, 10u);
  EXPECT_TRUE(kinds.settle_due(100 * ThreadKinds::kDelayNs, rng).empty());
  const auto end = kinds.settle(rng);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_FALSE(end[0].seen);
  EXPECT_EQ(end[0].tid, 8);
}

}  // namespace
}  // namespace spyglass
