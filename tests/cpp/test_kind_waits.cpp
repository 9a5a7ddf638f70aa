#include "core/kind_waits.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace spyglass {
namespace {

uint64_t share_of(const std::vector<KindWaits::Share>& shares, size_t stack) {
  uint64_t sum = 0;
  for (const KindWaits::Share& s : shares) sum += s.stack == stack ? s.wait_ns : 0;
  return sum;
}

TEST(KindWaits, WaitsAreSplitAsTheKindWasFoundBlocked) {
  KindWaits waits;
  for (size_t i = 0; i < KindWaits::kNotes; ++i) waits.note(1, i % 4 == 0 ? 20 : 10);
  const std::vector<KindWaits::Share> shares = waits.split(1, 1'000'001);
  EXPECT_EQ(shares.size(), 2u);
  EXPECT_EQ(share_of(shares, 10) + share_of(shares, 20), 1'000'001u);  // nothing lost
  EXPECT_NEAR(static_cast<double>(share_of(shares, 20)), 250'000.0, 1.0);
  EXPECT_TRUE(waits.split(2, 5).empty());  // another kind, never noted
}

TEST(KindWaits, AWaitOfHoursIsSplitWithoutOverflow) {
  KindWaits waits;
  for (size_t i = 0; i < KindWaits::kNotes; ++i) waits.note(1, i < 16 ? 20 : 10);
  const uint64_t wait = uint64_t{1} << 62;
  const std::vector<KindWaits::Share> shares = waits.split(1, wait);
  EXPECT_EQ(share_of(shares, 20), wait / 4);
  EXPECT_EQ(share_of(shares, 10), wait / 4 * 3);
}

TEST(KindWaits, OnlyTheLatestNotesCount) {
  // A server whose traffic changed: what its threads do now is what they are charged.
  KindWaits waits;
  for (size_t i = 0; i < 10 * KindWaits::kNotes; ++i) waits.note(1, 10);
  for (size_t i = 0; i < KindWaits::kNotes; ++i) waits.note(1, 20);
  const std::vector<KindWaits::Share> shares = waits.split(1, 1000);
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_EQ(shares[0].stack, 20u);
  EXPECT_EQ(shares[0].wait_ns, 1000u);
}

TEST(KindWaits, HeldWaitsAreSplitAtTheEndOrLeftUnplaced) {
  KindWaits waits;
  waits.hold(1, 100, 5);
  waits.hold(2, 200, 7);
  waits.note(1, 30);  // kind 1 was seen after its wait was held; kind 2 never was
  std::map<uint32_t, KindWaits::Held> held;
  for (const KindWaits::Held& h : waits.settle()) held[h.kind] = h;
  ASSERT_EQ(held.size(), 2u);
  ASSERT_EQ(held[1].shares.size(), 1u);
  EXPECT_EQ(held[1].shares[0].stack, 30u);
  EXPECT_EQ(held[1].shares[0].wait_ns, 5u);
  EXPECT_EQ(held[1].tid, 100);
  EXPECT_TRUE(held[2].shares.empty());
  EXPECT_EQ(held[2].wait_ns, 7u);
  EXPECT_TRUE(waits.settle().empty());  // settled once
}

TEST(KindWaits, HeldWaitsPastTheCapAreSummedNotLost) {
  KindWaits waits;
  for (size_t i = 0; i < KindWaits::kMaxHeld + 10; ++i) waits.hold(1, 1, 2);
  uint64_t total = 0;
  size_t entries = 0;
  for (const KindWaits::Held& h : waits.settle()) {
    total += h.wait_ns;
    ++entries;
  }
  EXPECT_EQ(entries, KindWaits::kMaxHeld);
  EXPECT_EQ(total, 2 * (KindWaits::kMaxHeld + 10));
}

}  // namespace
}  // namespace spyglass
