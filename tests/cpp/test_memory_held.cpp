// Memory figures whose line comes late: allocations held back until a caller's wait lends
// them one (cpython/held_records.hpp, MemoryStats::held_footprint), and a leak judged to the
// end of the work that made it (MemoryStats::work_end_seconds).
#include <gtest/gtest.h>

#include <vector>

#include "core/memory_stats.hpp"
#include "core/profile_memory.hpp"
#include "cpython/held_records.hpp"

namespace spyglass {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr uint64_t kMs = 1000000;

TEST(HeldAllocations, CountInTheFootprintWhenTheyCameAndOnTheirLineWhenItIsKnown) {
  MemoryStats s;
  s.reset(0);
  s.add_alloc(1, 1, true, 7, 10 * kMs, kMiB, kMiB, true, 1);
  // A pool thread's 32 MiB, held: the footprint takes it at once, in the hooks' order.
  const uint32_t epoch = s.held_footprint(20 * kMs, 33 * kMiB);
  EXPECT_NE(epoch, 0u);
  s.add_alloc(1, 1, true, 7, 30 * kMs, kMiB, 34 * kMiB, true, 3);
  EXPECT_EQ(s.max_footprint_bytes(), 34 * kMiB);
  // Its line, known 60 ms later, gets its bytes; the footprint stays as the hooks said.
  s.add_alloc(2, 2, true, 8, 20 * kMs, 32 * kMiB, 33 * kMiB, true, 2, false, false, kNoCode, epoch);
  EXPECT_EQ(s.final_footprint_bytes(), 34 * kMiB);
  s.finish();
  EXPECT_DOUBLE_EQ(summarize_memory({2}, {2}, s).live_end_bytes, 32.0 * kMiB);
  // The maximum came after it (1 MiB more on line 1): its place is not the held one's.
  EXPECT_EQ(s.max_footprint_stack(), 1u);
}

TEST(HeldAllocations, OneThatMadeTheMaximumHoldsItsPlace) {
  MemoryStats s;
  s.reset(0);
  s.add_alloc(1, 1, true, 7, 10 * kMs, kMiB, kMiB, true, 1);
  const uint32_t epoch = s.held_footprint(20 * kMs, 321 * kMiB);
  EXPECT_EQ(s.max_footprint_stack(), 1u);  // not its place until its stack is known
  s.add_alloc(5, 5, true, 8, 20 * kMs, 320 * kMiB, 321 * kMiB, true, 2, false, false, kNoCode,
              epoch);
  EXPECT_EQ(s.max_footprint_stack(), 5u);
  s.finish();
  EXPECT_DOUBLE_EQ(summarize_memory({5}, {5}, s).live_at_peak_bytes, 320.0 * kMiB);
}

TEST(HeldAllocations, AFreeInTwoPartsIsOneFree) {
  MemoryStats s;
  s.reset(0);
  const uint32_t epoch = s.held_footprint(10 * kMs, 4 * kMiB);
  s.free_footprint(20 * kMs, 0);  // its free came before its line was known
  EXPECT_EQ(s.final_footprint_bytes(), 0);
  s.add_alloc(3, 3, true, 8, 10 * kMs, 4 * kMiB, 4 * kMiB, true, 9, false, false, kNoCode, epoch);
  s.free_block(9, 20 * kMs);
  s.finish();
  const MemoryExtras m = summarize_memory({3}, {3}, s);
  EXPECT_DOUBLE_EQ(m.live_end_bytes, 0.0);
  EXPECT_DOUBLE_EQ(m.freed_bytes, 4.0 * kMiB);
  EXPECT_EQ(s.max_footprint_bytes(), 4 * kMiB);
}

// A parametrized test keeping 1 MiB a call (line 1, under code 40), then other tests churning
// (line 2, under code 41) and pytest's summary: a leak, judged to where its test stopped.
// The same line under code that is seen to the end (a script's module, code 42) was filled
// once and left: no leak.
MemoryExtras kept_then_churn(uint32_t leak_outer, bool seen_to_the_end) {
  MemoryStats s;
  s.reset(0);
  uint64_t t = 0;
  uint32_t id = 1;
  int64_t footprint = 0;
  for (int i = 0; i < 40; ++i) {
    t += 5 * kMs;
    footprint += kMiB;
    s.add_alloc(1, 1, true, 7, t, kMiB, footprint, true, id++, false, false, leak_outer);
    t += kMs;
    s.add_alloc(9, 9, true, 7, t, 64 << 10, footprint, false, id++);  // pytest's own
  }
  for (int i = 0; i < 120; ++i) {
    t += 5 * kMs;
    s.add_alloc(2, 2, true, 7, t, 512 << 10, footprint, false, id++, false, false, 41);
    if (seen_to_the_end) s.saw_outer(leak_outer, t);
  }
  s.finish();
  return summarize_memory({1}, {1}, s);
}

TEST(LeakSpan, ALineIsJudgedToTheEndOfTheWorkThatMadeIt) {
  const MemoryExtras test = kept_then_churn(40, false);
  EXPECT_TRUE(test.leak.leak) << test.leak.confidence;
  const MemoryExtras script = kept_then_churn(42, true);
  EXPECT_FALSE(script.leak.leak) << script.leak.confidence;
  // Without an outer code (a journal's, a thread's other than the main one): to the end.
  const MemoryExtras unknown = kept_then_churn(kNoCode, false);
  EXPECT_FALSE(unknown.leak.leak) << unknown.leak.confidence;
}

MemoryRecord record(int32_t tid, uint32_t sample_id, uint16_t depth) {
  MemoryRecord rec;
  rec.tid = tid;
  rec.sample_id = sample_id;
  rec.depth = depth;
  for (uint16_t i = 0; i < depth; ++i) rec.frames[i].code = 0x1000 + i;
  rec.t_ns = sample_id * kMs;
  return rec;
}

TEST(HeldRecords, AThreadKeepsItsOrderAndAFreeWaitsWithItsAllocation) {
  cpython::HeldRecords held;
  FrameKey keys[3] = {{1, 10}, {2, 20}, {3, 30}};
  held.push(record(5, 1, 3), keys, 4);
  held.push(record(5, 2, 3), keys, MemoryStats::kNotHeld);
  held.push(record(8, 3, 2), keys, MemoryStats::kNotHeld);
  held.freed(1, 40 * kMs, 123);
  EXPECT_TRUE(held.holds_thread(5));
  EXPECT_TRUE(held.holds_alloc(1));
  EXPECT_FALSE(held.holds_thread(6));

  std::vector<uint32_t> taken;
  MemoryRecord out;
  auto take_all_but_first = [&](const cpython::HeldRecords::Entry& e, bool force) {
    if (e.sample_id == 1 && !force) return false;
    e.restore(&out);
    EXPECT_EQ(out.sample_id, e.sample_id);
    EXPECT_EQ(out.depth, e.frames.size());
    EXPECT_EQ(out.frames[out.depth - 1].code, 0x1000u + out.depth - 1);
    if (e.sample_id == 1) {
      EXPECT_TRUE(e.freed);
      EXPECT_EQ(e.freed_ns, 40 * kMs);
      EXPECT_EQ(e.freed_footprint, 123);
    }
    taken.push_back(e.sample_id);
    return true;
  };
  held.release(take_all_but_first, /*all=*/false, /*oldest=*/false);
  // Thread 5's second allocation waits behind its first; thread 8's goes.
  EXPECT_EQ(taken, std::vector<uint32_t>({3}));
  EXPECT_TRUE(held.holds_thread(5));
  EXPECT_FALSE(held.holds_thread(8));
  held.release(take_all_but_first, /*all=*/false, /*oldest=*/true);  // room: the oldest goes
  EXPECT_EQ(taken, std::vector<uint32_t>({3, 1, 2}));
  EXPECT_TRUE(held.empty());
  EXPECT_FALSE(held.holds_alloc(1));
}

}  // namespace
}  // namespace spyglass
