#include "core/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/sample.hpp"

namespace spyglass {
namespace {

bool push(SpscRing<uint64_t>& ring, uint64_t v) {
  uint64_t* slot = ring.reserve();
  if (slot == nullptr) return false;
  *slot = v;
  ring.commit();
  return true;
}

bool pop(SpscRing<uint64_t>& ring, uint64_t* out) {
  const uint64_t* v = ring.front();
  if (v == nullptr) return false;
  *out = *v;
  ring.pop();
  return true;
}

TEST(SpscRingTest, StartsEmpty) {
  SpscRing<uint64_t> ring(8);
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.front(), nullptr);
  EXPECT_EQ(ring.capacity(), 8u);
  EXPECT_EQ(ring.dropped(), 0u);
}

TEST(SpscRingTest, FifoOrder) {
  SpscRing<uint64_t> ring(8);
  for (uint64_t v = 1; v <= 5; ++v) ASSERT_TRUE(push(ring, v * 10));
  EXPECT_FALSE(ring.empty());
  for (uint64_t v = 1; v <= 5; ++v) {
    uint64_t got = 0;
    ASSERT_TRUE(pop(ring, &got));
    EXPECT_EQ(got, v * 10);
  }
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.front(), nullptr);
  EXPECT_EQ(ring.dropped(), 0u);
}

TEST(SpscRingTest, FrontDoesNotConsume) {
  SpscRing<uint64_t> ring(4);
  ASSERT_TRUE(push(ring, 1));
  ASSERT_TRUE(push(ring, 2));
  ASSERT_NE(ring.front(), nullptr);
  EXPECT_EQ(*ring.front(), 1u);
  EXPECT_EQ(*ring.front(), 1u);
  ring.pop();
  EXPECT_EQ(*ring.front(), 2u);
}

TEST(SpscRingTest, ReserveWithoutCommitPublishesNothing) {
  SpscRing<uint64_t> ring(4);
  uint64_t* slot = ring.reserve();
  ASSERT_NE(slot, nullptr);
  *slot = 99;
  EXPECT_TRUE(ring.empty());
  EXPECT_EQ(ring.front(), nullptr);
  EXPECT_EQ(ring.reserve(), slot);  // the same slot is offered again
  ring.commit();
  ASSERT_NE(ring.front(), nullptr);
  EXPECT_EQ(*ring.front(), 99u);
}

TEST(SpscRingTest, FullRingDropsAndCounts) {
  SpscRing<uint64_t> ring(4);
  for (uint64_t v = 0; v < 4; ++v) ASSERT_TRUE(push(ring, v));
  EXPECT_EQ(ring.reserve(), nullptr);
  EXPECT_EQ(ring.dropped(), 1u);
  EXPECT_FALSE(push(ring, 100));
  EXPECT_FALSE(push(ring, 101));
  EXPECT_EQ(ring.dropped(), 3u);

  // What was queued is intact and in order.
  uint64_t got = 0;
  ASSERT_TRUE(pop(ring, &got));
  EXPECT_EQ(got, 0u);
  // One slot free again: exactly one push succeeds.
  EXPECT_TRUE(push(ring, 4));
  EXPECT_FALSE(push(ring, 5));
  EXPECT_EQ(ring.dropped(), 4u);
  for (uint64_t expect = 1; expect <= 4; ++expect) {
    ASSERT_TRUE(pop(ring, &got));
    EXPECT_EQ(got, expect);
  }
  EXPECT_TRUE(ring.empty());
}

TEST(SpscRingTest, CapacityOne) {
  SpscRing<uint64_t> ring(1);
  EXPECT_EQ(ring.capacity(), 1u);
  EXPECT_TRUE(push(ring, 7));
  EXPECT_FALSE(push(ring, 8));
  EXPECT_EQ(ring.dropped(), 1u);
  uint64_t got = 0;
  ASSERT_TRUE(pop(ring, &got));
  EXPECT_EQ(got, 7u);
  EXPECT_TRUE(push(ring, 9));
  ASSERT_TRUE(pop(ring, &got));
  EXPECT_EQ(got, 9u);
}

TEST(SpscRingTest, WrapsAroundManyTimes) {
  SpscRing<uint64_t> ring(4);
  uint64_t next_in = 0;
  uint64_t next_out = 0;
  for (int round = 0; round < 25000; ++round) {
    // Push 1..4 records (as many as fit), then drain all but round % 2 of them, so head
    // and tail drift across the slots instead of always restarting at slot 0.
    const uint64_t room = ring.capacity() - (next_in - next_out);
    const uint64_t batch = std::min<uint64_t>(1 + static_cast<uint64_t>(round) % 4, room);
    for (uint64_t k = 0; k < batch; ++k) ASSERT_TRUE(push(ring, next_in++));
    const uint64_t keep = static_cast<uint64_t>(round) % 2;
    while (next_in - next_out > keep) {
      uint64_t got = 0;
      ASSERT_TRUE(pop(ring, &got));
      ASSERT_EQ(got, next_out++);
    }
  }
  uint64_t got = 0;
  while (pop(ring, &got)) ASSERT_EQ(got, next_out++);
  EXPECT_EQ(next_out, next_in);
  EXPECT_GT(next_in, 4u * 10000u);
  EXPECT_EQ(ring.dropped(), 0u);
}

TEST(SpscRingTest, HoldsSampleRecords) {
  SpscRing<SampleRecord> ring(2);
  SampleRecord* r = ring.reserve();
  ASSERT_NE(r, nullptr);
  r->tid = 42;
  r->depth = 2;
  r->frames[0].code = 0x1234;
  r->frames[1].instr_offset = 16;
  r->truncated = true;
  ring.commit();
  const SampleRecord* got = ring.front();
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->tid, 42);
  EXPECT_EQ(got->depth, 2);
  EXPECT_EQ(got->frames[0].code, 0x1234u);
  EXPECT_EQ(got->frames[1].instr_offset, 16);
  EXPECT_TRUE(got->truncated);
  EXPECT_EQ(got->frames[2].instr_offset, -1);  // value-initialised slots
}

// A record whose consistency reveals a torn read.
struct Item {
  uint64_t seq;
  uint64_t check;    // seq * kMul
  uint64_t inverse;  // ~seq
};
constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;

struct StressResult {
  uint64_t received = 0;
  uint64_t gaps = 0;  // sequence numbers skipped by the consumer
  uint64_t out_of_order = 0;
  uint64_t torn = 0;
  uint64_t producer_drops = 0;  // failed reserve() calls seen by the producer
};

// The producer pushes 0..n-1; when `retry` it spins until each push succeeds, otherwise it
// drops what does not fit.
StressResult run_stress(size_t capacity, uint64_t n, bool retry) {
  SpscRing<Item> ring(capacity);
  std::atomic<bool> done{false};
  StressResult r;

  std::thread producer([&] {
    for (uint64_t seq = 0; seq < n; ++seq) {
      while (true) {
        Item* slot = ring.reserve();
        if (slot != nullptr) {
          slot->seq = seq;
          slot->check = seq * kMul;
          slot->inverse = ~seq;
          ring.commit();
          break;
        }
        ++r.producer_drops;
        // Give the consumer a chance either way, so that drops and deliveries interleave.
        std::this_thread::yield();
        if (!retry) break;
      }
    }
    done.store(true, std::memory_order_release);
  });

  uint64_t expected_next = 0;
  while (true) {
    const Item* item = ring.front();
    if (item == nullptr) {
      if (done.load(std::memory_order_acquire) && ring.empty()) break;
      std::this_thread::yield();  // let the producer run even on a single free core
      continue;
    }
    const Item copy = *item;
    ring.pop();
    ++r.received;
    if (copy.check != copy.seq * kMul || copy.inverse != ~copy.seq) ++r.torn;
    if (copy.seq < expected_next) {
      ++r.out_of_order;
    } else {
      r.gaps += copy.seq - expected_next;
      expected_next = copy.seq + 1;
    }
  }
  producer.join();
  // Anything the producer sent after the last record received would be a gap too.
  r.gaps += n - expected_next;
  EXPECT_EQ(ring.dropped(), r.producer_drops);
  return r;
}

TEST(SpscRingStressTest, DroppingProducerLosesOnlyCountedRecords) {
  constexpr uint64_t kN = 1000000;
  const StressResult r = run_stress(64, kN, /*retry=*/false);
  EXPECT_EQ(r.torn, 0u);
  EXPECT_EQ(r.out_of_order, 0u);
  EXPECT_EQ(r.received + r.producer_drops, kN);
  EXPECT_EQ(r.gaps, r.producer_drops) << "records lost beyond the counted drops";
  EXPECT_GT(r.received, 0u);
}

TEST(SpscRingStressTest, RetryingProducerLosesNothing) {
  constexpr uint64_t kN = 1000000;
  const StressResult r = run_stress(256, kN, /*retry=*/true);
  EXPECT_EQ(r.torn, 0u);
  EXPECT_EQ(r.out_of_order, 0u);
  EXPECT_EQ(r.received, kN);
  EXPECT_EQ(r.gaps, 0u);
}

}  // namespace
}  // namespace spyglass

namespace spyglass {
namespace {

TEST(SpscRingTest, CapacityIsRoundedUpToAPowerOfTwo) {
  SpscRing<uint64_t> ring(6);
  EXPECT_EQ(ring.capacity(), 8u);
  for (uint64_t i = 0; i < 8; ++i) EXPECT_TRUE(push(ring, i));
  EXPECT_FALSE(push(ring, 8));
  uint64_t got = 0;
  for (uint64_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(pop(ring, &got));
    EXPECT_EQ(got, i);  // no two records share a slot
  }
}

}  // namespace
}  // namespace spyglass
