#include "core/stack_table.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/times.hpp"

namespace spyglass {
namespace {

using Frames = std::vector<FrameKey>;

Times make_times(uint64_t python_ns, uint64_t native_ns, uint64_t system_ns, uint64_t wait_ns,
                 uint64_t samples) {
  Times t;
  t.python_ns = python_ns;
  t.native_ns = native_ns;
  t.system_ns = system_ns;
  t.wait_ns = wait_ns;
  t.samples = samples;
  return t;
}

void expect_times_eq(const Times& actual, const Times& expected) {
  EXPECT_EQ(actual.python_ns, expected.python_ns);
  EXPECT_EQ(actual.native_ns, expected.native_ns);
  EXPECT_EQ(actual.system_ns, expected.system_ns);
  EXPECT_EQ(actual.wait_ns, expected.wait_ns);
  EXPECT_EQ(actual.samples, expected.samples);
}

void add(StackTable& table, const Frames& frames, bool truncated, const Times& t) {
  table.add(frames.data(), frames.size(), truncated, t);
}

// The entry holding exactly (frames, truncated), or nullptr.
const StackEntry* find(const StackTable& table, const Frames& frames, bool truncated) {
  for (const StackEntry& e : table.entries()) {
    if (e.truncated == truncated && e.frames == frames) return &e;
  }
  return nullptr;
}

Times sum_all(const StackTable& table) {
  Times total;
  for (const StackEntry& e : table.entries()) total += e.times;
  return total;
}

TEST(TimesTest, AccumulatesEveryField) {
  Times a = make_times(1, 2, 3, 4, 5);
  a += make_times(10, 20, 30, 40, 50);
  expect_times_eq(a, make_times(11, 22, 33, 44, 55));
  EXPECT_EQ(a.cpu_ns(), 66u);
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(Times{}.empty());
  EXPECT_FALSE(make_times(0, 0, 0, 1, 0).empty());
  EXPECT_FALSE(make_times(0, 0, 0, 0, 1).empty());
}

TEST(StackTableTest, StartsEmpty) {
  StackTable table;
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(table.entries().empty());
}

TEST(StackTableTest, IdenticalStacksAggregate) {
  StackTable table;
  const Frames stack = {{7, 12}, {3, 40}, {1, 2}};
  add(table, stack, false, make_times(100, 10, 1, 0, 1));
  add(table, stack, false, make_times(200, 20, 2, 0, 1));
  add(table, stack, false, make_times(0, 0, 0, 5000, 0));
  ASSERT_EQ(table.size(), 1u);
  const StackEntry& e = table.entries()[0];
  EXPECT_EQ(e.frames, stack);  // kept innermost first, as given
  EXPECT_FALSE(e.truncated);
  expect_times_eq(e.times, make_times(300, 30, 3, 5000, 2));
}

TEST(StackTableTest, DifferentLinesDoNotAggregate) {
  StackTable table;
  add(table, {{1, 10}, {2, 20}}, false, make_times(1, 0, 0, 0, 1));
  add(table, {{1, 11}, {2, 20}}, false, make_times(2, 0, 0, 0, 1));  // innermost line differs
  add(table, {{1, 10}, {2, 21}}, false, make_times(4, 0, 0, 0, 1));  // outer line differs
  ASSERT_EQ(table.size(), 3u);
  expect_times_eq(find(table, {{1, 10}, {2, 20}}, false)->times, make_times(1, 0, 0, 0, 1));
  expect_times_eq(find(table, {{1, 11}, {2, 20}}, false)->times, make_times(2, 0, 0, 0, 1));
  expect_times_eq(find(table, {{1, 10}, {2, 21}}, false)->times, make_times(4, 0, 0, 0, 1));
}

TEST(StackTableTest, DifferentCodesDoNotAggregate) {
  StackTable table;
  add(table, {{1, 10}}, false, make_times(1, 0, 0, 0, 1));
  add(table, {{2, 10}}, false, make_times(2, 0, 0, 0, 1));
  // Swapping code and line must not collide either.
  add(table, {{10, 1}}, false, make_times(4, 0, 0, 0, 1));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(find(table, {{1, 10}}, false)->times.python_ns, 1u);
  EXPECT_EQ(find(table, {{2, 10}}, false)->times.python_ns, 2u);
  EXPECT_EQ(find(table, {{10, 1}}, false)->times.python_ns, 4u);
}

TEST(StackTableTest, OrderAndDepthMatter) {
  StackTable table;
  add(table, {{1, 1}, {2, 2}}, false, make_times(1, 0, 0, 0, 1));
  add(table, {{2, 2}, {1, 1}}, false, make_times(2, 0, 0, 0, 1));          // reversed
  add(table, {{1, 1}, {2, 2}, {3, 3}}, false, make_times(4, 0, 0, 0, 1));  // deeper
  add(table, {{1, 1}}, false, make_times(8, 0, 0, 0, 1));                  // prefix
  ASSERT_EQ(table.size(), 4u);
  EXPECT_EQ(sum_all(table).python_ns, 15u);
}

TEST(StackTableTest, TruncationFlagDoesNotAggregate) {
  StackTable table;
  const Frames stack = {{5, 50}, {6, 60}};
  add(table, stack, false, make_times(1, 0, 0, 0, 1));
  add(table, stack, true, make_times(2, 0, 0, 0, 1));
  add(table, stack, true, make_times(4, 0, 0, 0, 1));
  ASSERT_EQ(table.size(), 2u);
  const StackEntry* full = find(table, stack, false);
  const StackEntry* cut = find(table, stack, true);
  ASSERT_NE(full, nullptr);
  ASSERT_NE(cut, nullptr);
  EXPECT_EQ(full->times.python_ns, 1u);
  EXPECT_EQ(cut->times.python_ns, 6u);
  EXPECT_EQ(cut->times.samples, 2u);
}

TEST(StackTableTest, TruncatedTwinsNeverMergeWhateverTheirBuckets) {
  // In small tables a stack and its truncated twin often share a hash bucket; they must
  // still be told apart.
  for (uint32_t code = 0; code < 300; ++code) {
    StackTable table;
    const Frames stack = {{code, static_cast<int32_t>(code * 7)}, {code + 1, 1}};
    add(table, stack, false, make_times(1, 0, 0, 0, 1));
    add(table, stack, true, make_times(2, 0, 0, 0, 1));
    ASSERT_EQ(table.size(), 2u) << "code " << code;
    ASSERT_NE(find(table, stack, false), nullptr);
    EXPECT_EQ(find(table, stack, false)->times.python_ns, 1u) << "code " << code;
    ASSERT_NE(find(table, stack, true), nullptr);
    EXPECT_EQ(find(table, stack, true)->times.python_ns, 2u) << "code " << code;
  }
}

TEST(StackTableTest, EmptyStackIsAnEntryOfItsOwn) {
  StackTable table;
  add(table, {}, false, make_times(0, 7, 0, 0, 1));
  add(table, {}, false, make_times(0, 3, 1, 0, 1));
  add(table, {{1, 1}}, false, make_times(1, 0, 0, 0, 1));
  ASSERT_EQ(table.size(), 2u);
  const StackEntry* empty = find(table, {}, false);
  ASSERT_NE(empty, nullptr);
  expect_times_eq(empty->times, make_times(0, 10, 1, 0, 2));
}

TEST(StackTableTest, NegativeAndZeroLinesAreDistinct) {
  StackTable table;
  add(table, {{1, -1}}, false, make_times(1, 0, 0, 0, 1));
  add(table, {{1, 0}}, false, make_times(2, 0, 0, 0, 1));
  add(table, {{1, -1}}, false, make_times(4, 0, 0, 0, 1));
  ASSERT_EQ(table.size(), 2u);
  EXPECT_EQ(find(table, {{1, -1}}, false)->times.python_ns, 5u);
  EXPECT_EQ(find(table, {{1, 0}}, false)->times.python_ns, 2u);
}

TEST(StackTableTest, ClearForgetsEverything) {
  StackTable table;
  const Frames stack = {{1, 1}};
  add(table, stack, false, make_times(5, 0, 0, 0, 1));
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  add(table, stack, false, make_times(3, 0, 0, 0, 1));
  ASSERT_EQ(table.size(), 1u);
  expect_times_eq(table.entries()[0].times, make_times(3, 0, 0, 0, 1));
}

TEST(StackTableTest, MatchesAReferenceModelOnRandomStacks) {
  // Many stacks drawn from a small vocabulary, so there are plenty of repeats.
  std::mt19937 rng(4242);
  std::uniform_int_distribution<int> depth_dist(0, 6);
  std::uniform_int_distribution<uint32_t> code_dist(0, 3);
  std::uniform_int_distribution<int32_t> line_dist(1, 3);
  std::uniform_int_distribution<uint64_t> ns_dist(0, 1000000);
  std::bernoulli_distribution trunc_dist(0.1);

  std::map<std::pair<std::vector<std::pair<uint32_t, int32_t>>, bool>, Times> reference;
  StackTable table;
  Times grand;
  for (int i = 0; i < 20000; ++i) {
    Frames frames(static_cast<size_t>(depth_dist(rng)));
    std::vector<std::pair<uint32_t, int32_t>> ref_key;
    for (FrameKey& f : frames) {
      f.code_id = code_dist(rng);
      f.line = line_dist(rng);
      ref_key.emplace_back(f.code_id, f.line);
    }
    const bool truncated = trunc_dist(rng);
    const Times t = make_times(ns_dist(rng), ns_dist(rng), ns_dist(rng), ns_dist(rng), 1);
    add(table, frames, truncated, t);
    reference[{ref_key, truncated}] += t;
    grand += t;
  }
  ASSERT_EQ(table.size(), reference.size());
  for (const StackEntry& e : table.entries()) {
    std::vector<std::pair<uint32_t, int32_t>> ref_key;
    for (const FrameKey& f : e.frames) ref_key.emplace_back(f.code_id, f.line);
    const auto it = reference.find({ref_key, e.truncated});
    ASSERT_NE(it, reference.end());
    expect_times_eq(e.times, it->second);
  }
  expect_times_eq(sum_all(table), grand);
}

// ---------------------------------------------------------------- the distinct-stack cap

class StackTableCapTest : public ::testing::Test {
 protected:
  static constexpr size_t kCap = StackTable::kMaxDistinctStacks;
  static constexpr size_t kKeep = StackTable::kDepthWhenFull;

  // Fills the table to exactly the cap with distinct 12-deep stacks; returns their total.
  Times fill_to_cap() {
    Times total;
    Frames frames(12);
    for (size_t i = 0; i < kCap; ++i) {
      for (size_t d = 0; d < frames.size(); ++d) {
        frames[d] = {static_cast<uint32_t>(d), static_cast<int32_t>(d == 11 ? i : d)};
      }
      const Times t = make_times(i % 97, 1, 0, i % 5, 1);
      add(table_, frames, false, t);
      total += t;
    }
    return total;
  }

  // A stack of `depth` frames whose innermost kKeep frames are shape `shape` and whose
  // outer frames are unique to `serial`.
  static Frames deep_stack(uint32_t shape, uint32_t serial, size_t depth) {
    Frames frames(depth);
    for (size_t d = 0; d < depth; ++d) {
      if (d < kKeep) {
        frames[d] = {1000 + shape, static_cast<int32_t>(d)};
      } else {
        frames[d] = {2000 + static_cast<uint32_t>(d), static_cast<int32_t>(serial)};
      }
    }
    return frames;
  }

  StackTable table_;
};

TEST_F(StackTableCapTest, DistinctDeepStacksPastTheCapCollapseToTheirInnermostFrames) {
  Times total = fill_to_cap();
  ASSERT_EQ(table_.size(), kCap);

  constexpr uint32_t kShapes = 7;
  constexpr uint32_t kExtra = 30000;
  for (uint32_t serial = 0; serial < kExtra; ++serial) {
    const Frames frames = deep_stack(serial % kShapes, serial, 20 + serial % 3);
    const Times t = make_times(3, 5, 7, 11, 1);
    add(table_, frames, false, t);
    total += t;
  }

  // Bounded: only one new entry per distinct innermost shape.
  EXPECT_LE(table_.size(), kCap + kShapes);
  EXPECT_EQ(table_.size(), kCap + kShapes);
  // Nothing lost: every nanosecond and sample is still accounted for.
  expect_times_eq(sum_all(table_), total);

  size_t frames_past_cap = 0;
  for (size_t i = kCap; i < table_.size(); ++i) {
    const StackEntry& e = table_.entries()[i];
    frames_past_cap += e.frames.size();
    EXPECT_TRUE(e.truncated) << "entry " << i;
    ASSERT_EQ(e.frames.size(), kKeep) << "entry " << i;
    const uint32_t shape = e.frames[0].code_id - 1000;
    EXPECT_EQ(e.frames, deep_stack(shape, 0, kKeep)) << "innermost frames not kept";
    const uint64_t per_shape = kExtra / kShapes + (shape < kExtra % kShapes ? 1 : 0);
    expect_times_eq(e.times, make_times(3 * per_shape, 5 * per_shape, 7 * per_shape, 11 * per_shape,
                                        per_shape));
  }
  EXPECT_LE(frames_past_cap, kShapes * kKeep);
}

TEST_F(StackTableCapTest, KnownStacksStillAggregateInFullPastTheCap) {
  const Times total = fill_to_cap();
  Frames known(12);
  for (size_t d = 0; d < known.size(); ++d) {
    known[d] = {static_cast<uint32_t>(d), static_cast<int32_t>(d == 11 ? 42 : d)};
  }
  const StackEntry* before = find(table_, known, false);
  ASSERT_NE(before, nullptr);
  const Times before_times = before->times;

  add(table_, known, false, make_times(1000, 0, 0, 0, 1));
  EXPECT_EQ(table_.size(), kCap);
  const StackEntry* after = find(table_, known, false);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->frames.size(), 12u);
  EXPECT_EQ(after->times.python_ns, before_times.python_ns + 1000);
  EXPECT_EQ(after->times.samples, before_times.samples + 1);
  EXPECT_EQ(sum_all(table_).python_ns, total.python_ns + 1000);
}

TEST_F(StackTableCapTest, TruncatedAndUntruncatedDeepStacksShareTheCollapsedEntry) {
  fill_to_cap();
  add(table_, deep_stack(3, 1, 30), false, make_times(1, 0, 0, 0, 1));
  add(table_, deep_stack(3, 2, 40), true, make_times(2, 0, 0, 0, 1));
  // An 8-deep stack already marked truncated by the sampler is the same shape.
  add(table_, deep_stack(3, 0, kKeep), true, make_times(4, 0, 0, 0, 1));
  ASSERT_EQ(table_.size(), kCap + 1);
  const StackEntry& e = table_.entries().back();
  EXPECT_TRUE(e.truncated);
  EXPECT_EQ(e.frames, deep_stack(3, 0, kKeep));
  EXPECT_EQ(e.times.python_ns, 7u);
  EXPECT_EQ(e.times.samples, 3u);
}

TEST_F(StackTableCapTest, ShallowNewStacksPastTheCapAreKeptAsTheyAre) {
  fill_to_cap();
  const Frames shallow = deep_stack(5, 0, kKeep);  // already within the depth bound
  add(table_, shallow, false, make_times(9, 0, 0, 0, 1));
  ASSERT_EQ(table_.size(), kCap + 1);
  const StackEntry* e = find(table_, shallow, false);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->times.python_ns, 9u);
}

}  // namespace
}  // namespace spyglass
