#include "core/thread_kinds.hpp"

#include <gtest/gtest.h>

#include <map>

namespace spyglass {
namespace {

TEST(ThreadKinds, NothingToChooseBeforeAThreadOfTheKindIsSampled) {
  ThreadKinds kinds;
  std::mt19937_64 rng(1);
  size_t stack = 99;
  EXPECT_FALSE(kinds.choose(7, rng, &stack));
  kinds.observe(8, 3, 1000);  // another kind
  EXPECT_FALSE(kinds.choose(7, rng, &stack));
  EXPECT_EQ(stack, 99u);
}

TEST(ThreadKinds, ChoosesStacksInProportionToTheirSampledCpu) {
  ThreadKinds kinds;
  kinds.observe(1, 10, 3'000'000);
  kinds.observe(1, 11, 1'000'000);
  kinds.observe(1, 10, 0);  // an empty sample changes nothing
  std::mt19937_64 rng(42);
  std::map<size_t, int> counts;
  const int draws = 40000;
  for (int i = 0; i < draws; ++i) {
    size_t stack = 0;
    ASSERT_TRUE(kinds.choose(1, rng, &stack));
    ++counts[stack];
  }
  ASSERT_EQ(counts.size(), 2u);
  // 3:1 within a few standard deviations (sd of the share ~ 0.002 over 40000 draws).
  EXPECT_NEAR(counts[10] / static_cast<double>(draws), 0.75, 0.01);
}

TEST(ThreadKinds, HeldCpuIsSharedOutLikeTheKindsSampledThreads) {
  ThreadKinds kinds;
  Times t;
  t.python_ns = 4'000'000;
  t.system_ns = 400'000;
  kinds.hold(5, 101, t);
  kinds.observe(5, 20, 1'000'000);
  kinds.observe(5, 21, 3'000'000);
  const auto shares = kinds.settle();
  ASSERT_EQ(shares.size(), 2u);
  uint64_t python = 0;
  for (const auto& s : shares) {
    EXPECT_TRUE(s.has_stack);
    EXPECT_EQ(s.tid, 101);
    EXPECT_EQ(s.times.python_ns, s.stack == 20 ? 1'000'000u : 3'000'000u);
    EXPECT_EQ(s.times.system_ns, s.stack == 20 ? 100'000u : 300'000u);
    python += s.times.python_ns;
  }
  EXPECT_EQ(python, t.python_ns);
  EXPECT_TRUE(kinds.settle().empty());  // settled once
}

TEST(ThreadKinds, AKindNeverSampledKeepsItsHeldCpuWhole) {
  ThreadKinds kinds;
  Times t;
  t.python_ns = 2'000'000;
  kinds.hold(9, 7, t);
  const auto shares = kinds.settle();
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_FALSE(shares[0].has_stack);
  EXPECT_EQ(shares[0].kind, 9u);
  EXPECT_EQ(shares[0].times.python_ns, 2'000'000u);
}

}  // namespace
}  // namespace spyglass
