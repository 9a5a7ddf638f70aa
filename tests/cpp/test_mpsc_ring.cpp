#include "core/mpsc_ring.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace spyglass {
namespace {

bool push(MpscRing<uint64_t>& ring, uint64_t v) {
  uint64_t ticket = 0;
  uint64_t* cell = ring.claim(&ticket);
  if (cell == nullptr) return false;
  *cell = v;
  ring.publish(ticket);
  return true;
}

TEST(MpscRing, FifoAndFullDrops) {
  MpscRing<uint64_t> ring(4);
  EXPECT_EQ(ring.capacity(), 4u);
  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(push(ring, i));
  EXPECT_FALSE(push(ring, 99));
  EXPECT_EQ(ring.dropped(), 1u);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_NE(ring.front(), nullptr);
    EXPECT_EQ(*ring.front(), i);
    ring.pop();
  }
  EXPECT_EQ(ring.front(), nullptr);
  EXPECT_TRUE(push(ring, 7));  // wraps around
  EXPECT_EQ(*ring.front(), 7u);
}

TEST(MpscRing, BacklogIsWhatIsClaimedAndNotConsumed) {
  MpscRing<uint64_t> ring(8);
  EXPECT_EQ(ring.backlog(), 0u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_TRUE(push(ring, i));
  EXPECT_EQ(ring.backlog(), 5u);
  ring.pop();
  ring.pop();
  EXPECT_EQ(ring.backlog(), 3u);
  for (uint64_t i = 0; i < 9; ++i) push(ring, i);  // fills it; the rest are dropped
  EXPECT_EQ(ring.backlog(), 8u);
  ring.reset(8);
  EXPECT_EQ(ring.backlog(), 0u);
}

TEST(MpscRing, UnpublishedCellHoldsBackTheConsumer) {
  MpscRing<uint64_t> ring(8);
  uint64_t first = 0;
  uint64_t* cell = ring.claim(&first);
  ASSERT_NE(cell, nullptr);
  EXPECT_TRUE(push(ring, 2));
  EXPECT_EQ(ring.front(), nullptr);  // the first claim is not published yet
  *cell = 1;
  ring.publish(first);
  ASSERT_NE(ring.front(), nullptr);
  EXPECT_EQ(*ring.front(), 1u);
}

TEST(MpscRing, ResetForgetsHalfWrittenCells) {
  MpscRing<uint64_t> ring(8);
  uint64_t ticket = 0;
  ASSERT_NE(ring.claim(&ticket), nullptr);  // a producer that died before publishing
  ring.reset(8);
  EXPECT_TRUE(push(ring, 5));
  ASSERT_NE(ring.front(), nullptr);
  EXPECT_EQ(*ring.front(), 5u);
}

TEST(MpscRing, ManyProducersLoseNothingWhenDrained) {
  MpscRing<uint64_t> ring(256);
  constexpr int kThreads = 4;
  constexpr uint64_t kEach = 20000;
  std::atomic<int> done{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (uint64_t i = 0; i < kEach; ++i) {
        while (!push(ring, (static_cast<uint64_t>(t) << 32) | i)) std::this_thread::yield();
      }
      done.fetch_add(1);
    });
  }
  std::vector<uint64_t> next(kThreads, 0);
  uint64_t received = 0;
  while (received < kThreads * kEach) {
    const uint64_t* v = ring.front();
    if (v == nullptr) {
      std::this_thread::yield();
      continue;
    }
    const auto t = static_cast<size_t>(*v >> 32);
    ASSERT_LT(t, next.size());
    EXPECT_EQ(*v & 0xffffffffu, next[t]);  // each producer's records stay in order
    ++next[t];
    ring.pop();
    ++received;
  }
  for (auto& p : producers) p.join();
  EXPECT_EQ(done.load(), kThreads);
  EXPECT_EQ(ring.front(), nullptr);
}

}  // namespace
}  // namespace spyglass
