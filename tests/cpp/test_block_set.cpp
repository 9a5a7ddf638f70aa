// Tests of the hooks' address sets (shim/block_set.hpp): the sampled blocks' two tables.
#include "shim/block_set.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace spyglass::shim {
namespace {

// Block-like addresses: 16-byte aligned, spread over a 48-bit address space.
std::vector<uintptr_t> blocks(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uintptr_t> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(((rng() & 0xFFFFFFFFFFF0ull) | 0x100000ull));
  return out;
}

// Some 6.5 MiB: on the heap, zero-initialised as the hooks' static one is.
std::unique_ptr<SampledSet> fresh_set() { return std::make_unique<SampledSet>(); }

TEST(SampledSet, KeepsEachBlocksWeightAndIdUntilItIsErased) {
  auto set = fresh_set();
  const std::vector<uintptr_t> b = blocks(1000, 1);
  for (size_t i = 0; i < b.size(); ++i) ASSERT_TRUE(set->insert(b[i], {i * 10 + 7, uint32_t(i)}));
  EXPECT_FALSE(set->large_used()) << "a thousand live samples fit in the small table";
  for (size_t i = 0; i < b.size(); ++i) {
    ASSERT_TRUE(set->maybe_contains(b[i]));
    SampledSet::Entry e{};
    ASSERT_TRUE(set->erase(b[i], &e));
    EXPECT_EQ(e.weight, i * 10 + 7);
    EXPECT_EQ(e.id, uint32_t(i));
    EXPECT_FALSE(set->erase(b[i], &e)) << "erased twice";
  }
  for (uintptr_t p : b) EXPECT_FALSE(set->maybe_contains(p)) << "the filter kept an erased block";
}

TEST(SampledSet, TheFilterLetsFewBlocksThatWereNeverSampledThrough) {
  // Each free asks the filter; a "maybe" for a block never sampled costs a probe of the
  // table, most often a cache miss. With a thousand samples alive, one counter per block
  // let 6 % of such frees through; two in one cache line, 1.7 %.
  auto set = fresh_set();
  for (uintptr_t p : blocks(1000, 6)) ASSERT_TRUE(set->insert(p, {1, 1}));
  int passed = 0;
  const std::vector<uintptr_t> others = blocks(100000, 7);
  for (uintptr_t p : others) passed += set->maybe_contains(p) ? 1 : 0;
  EXPECT_LT(passed, 3000) << "of 100,000 blocks never sampled";
}

TEST(SampledSet, BlocksSharingAPlaceAddedAndTakenOffAtOnceAreAlwaysFoundWhileIn) {
  // Two threads each add a block, check that its free would look for it, and take it off,
  // over and over. The blocks share a place of the filter: a place's bit cleared by one
  // block's removal just after the other's addition set it would hide that block, whose
  // free would then go unseen (its bytes would stay counted for ever, as a leak).
  const uintptr_t a = 0x7f0000001000ull;
  const PlaceFilter::Places pa = PlaceFilter::places(a);
  uintptr_t b = a;
  for (uintptr_t k = 1; k < (uintptr_t{1} << 28); ++k) {
    const PlaceFilter::Places pb = PlaceFilter::places(a + 16 * k);
    if (pb.word == pa.word && pb.mask == pa.mask) {
      b = a + 16 * k;
      break;
    }
  }
  ASSERT_NE(b, a) << "no block found whose places are the first one's";
  auto set = fresh_set();
  std::atomic<int> hidden{0};
  std::atomic<int> ready{0};
  auto churn = [&](uintptr_t p) {
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    for (int i = 0; i < 200000; ++i) {
      if (!set->insert(p, {1, 1})) continue;
      if (!set->maybe_contains(p)) hidden.fetch_add(1);
      SampledSet::Entry e{};
      if (!set->erase(p, &e)) hidden.fetch_add(1);
    }
  };
  std::thread first(churn, a);
  std::thread second(churn, b);
  first.join();
  second.join();
  EXPECT_EQ(hidden.load(), 0);
  EXPECT_FALSE(set->maybe_contains(a)) << "both blocks are gone: their places are free";
}

TEST(SampledSet, BlocksThatDoNotFitTheSmallTableGoToTheLargeOneAndAreFoundThere) {
  auto set = fresh_set();
  // More than the small table has slots: the rest must land in the large table.
  const std::vector<uintptr_t> b = blocks(SampledSet::kSmallSlots + 20000, 2);
  size_t kept = 0;
  for (size_t i = 0; i < b.size(); ++i) kept += set->insert(b[i], {i + 1, uint32_t(i)}) ? 1 : 0;
  EXPECT_EQ(kept, b.size());
  EXPECT_TRUE(set->large_used());
  for (size_t i = 0; i < b.size(); ++i) {
    SampledSet::Entry e{};
    ASSERT_TRUE(set->erase(b[i], &e)) << "block " << i << " was inserted but is not found";
    EXPECT_EQ(e.weight, i + 1);
  }
  set->clear();
  EXPECT_FALSE(set->large_used());
  SampledSet::Entry e{};
  EXPECT_FALSE(set->erase(b[0], &e));
}

TEST(SampledSet, ChurnLeavesNoBlockBehindAndFindsNoneThatWasNotInserted) {
  // A long run: far more samples over time than slots, a few hundred alive at once.
  auto set = fresh_set();
  std::mt19937_64 rng(3);
  std::vector<uintptr_t> live = blocks(500, 4);
  for (uintptr_t p : live) ASSERT_TRUE(set->insert(p, {1, 1}));
  for (int i = 0; i < 400000; ++i) {
    const size_t k = rng() % live.size();
    SampledSet::Entry e{};
    ASSERT_TRUE(set->erase(live[k], &e));
    live[k] = (rng() & 0xFFFFFFFFFFF0ull) | 0x100000ull;
    ASSERT_TRUE(set->insert(live[k], {2, 2}));
  }
  EXPECT_FALSE(set->large_used()) << "tombstones pushed a small live set into the large table";
  for (uintptr_t p : blocks(20000, 5)) {
    SampledSet::Entry e{};
    EXPECT_FALSE(set->erase(p, &e));
  }
  for (uintptr_t p : live) {
    SampledSet::Entry e{};
    EXPECT_TRUE(set->erase(p, &e));
  }
}

TEST(SampledSet, ThreadsInsertingAndErasingAtOnceLoseNothing) {
  auto set = fresh_set();
  constexpr int kThreads = 4;
  constexpr size_t kEach = 12000;  // 48,000 in all: both tables in use
  std::atomic<int> lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<uintptr_t> mine = blocks(kEach, 100 + static_cast<uint64_t>(t));
      for (size_t i = 0; i < mine.size(); ++i) {
        if (!set->insert(mine[i], {i, uint32_t(t)})) lost.fetch_add(1);
      }
      for (size_t i = 0; i < mine.size(); ++i) {
        SampledSet::Entry e{};
        if (!set->erase(mine[i], &e) || e.weight != i || e.id != uint32_t(t)) lost.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(lost.load(), 0);
  EXPECT_TRUE(set->large_used());
}

}  // namespace
}  // namespace spyglass::shim
