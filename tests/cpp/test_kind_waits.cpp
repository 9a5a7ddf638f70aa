#include "core/kind_waits.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace spyglass {
namespace {

TEST(KindWaits, DrawsFollowWhereTheKindWasFoundBlocked) {
  KindWaits waits;
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < KindWaits::kNotes; ++i) waits.note(1, i % 4 == 0 ? 20 : 10);
  std::map<size_t, int> drawn;
  size_t stack = 0;
  for (int i = 0; i < 40000; ++i) {
    ASSERT_TRUE(waits.draw(1, rng, &stack));
    ++drawn[stack];
  }
  EXPECT_EQ(drawn.size(), 2u);
  EXPECT_NEAR(drawn[10] / 40000.0, 0.75, 0.02);
  EXPECT_FALSE(waits.draw(2, rng, &stack));  // another kind, never noted
}

TEST(KindWaits, OnlyTheLatestNotesCount) {
  // A server whose traffic changed: what its threads do now is what they are charged.
  KindWaits waits;
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < 10 * KindWaits::kNotes; ++i) waits.note(1, 10);
  for (size_t i = 0; i < KindWaits::kNotes; ++i) waits.note(1, 20);
  size_t stack = 0;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(waits.draw(1, rng, &stack));
    ASSERT_EQ(stack, 20u);
  }
}

TEST(KindWaits, HeldWaitsAreDrawnAtTheEndOrLeftUndrawn) {
  KindWaits waits;
  std::mt19937_64 rng(7);
  waits.hold(1, 100, 5);
  waits.hold(2, 200, 7);
  waits.note(1, 30);  // kind 1 was seen after its wait was held; kind 2 never was
  std::map<uint32_t, KindWaits::Held> held;
  for (const KindWaits::Held& h : waits.settle(rng)) held[h.kind] = h;
  ASSERT_EQ(held.size(), 2u);
  EXPECT_TRUE(held[1].drawn);
  EXPECT_EQ(held[1].stack, 30u);
  EXPECT_EQ(held[1].wait_ns, 5u);
  EXPECT_EQ(held[1].tid, 100);
  EXPECT_FALSE(held[2].drawn);
  EXPECT_EQ(held[2].wait_ns, 7u);
  EXPECT_TRUE(waits.settle(rng).empty());  // settled once
}

TEST(KindWaits, HeldWaitsPastTheCapAreSummedNotLost) {
  KindWaits waits;
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < KindWaits::kMaxHeld + 10; ++i) waits.hold(1, 1, 2);
  uint64_t total = 0;
  size_t entries = 0;
  for (const KindWaits::Held& h : waits.settle(rng)) {
    total += h.wait_ns;
    ++entries;
  }
  EXPECT_EQ(entries, KindWaits::kMaxHeld);
  EXPECT_EQ(total, 2 * (KindWaits::kMaxHeld + 10));
}

}  // namespace
}  // namespace spyglass
