#include "core/memory_stats.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "core/profile_memory.hpp"

namespace spyglass {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr uint64_t kSecond = 1000000000;

// The hooks' side, replayed: sampled allocations with ids, their frees, the footprint.
struct Replay {
  MemoryStats stats;
  int64_t footprint = 0;
  uint32_t next_id = 1;
  uint64_t now = 0;
  std::map<uint32_t, int64_t> live;
  Replay() { stats.reset(0); }
  uint32_t alloc(size_t stack, int64_t bytes, int32_t tid = 7) {
    now += kSecond / 100;
    footprint += bytes;
    const uint32_t id = next_id++;
    live[id] = bytes;
    stats.add_alloc(stack, stack, true, tid, now, bytes, footprint, true, id);
    return id;
  }
  void free_now(uint32_t id) {
    now += kSecond / 100;
    footprint -= live.at(id);
    live.erase(id);
    stats.sampled_free(id, now, footprint);
  }
  MemoryExtras line(uint64_t key) {
    stats.finish();
    return summarize_memory({static_cast<size_t>(key)}, {key}, stats);
  }
};

TEST(MemoryStats, FreesComeOffTheLineThatAllocated) {
  Replay r;
  const uint32_t a = r.alloc(1, 3 * kMiB);
  r.alloc(2, kMiB);
  r.free_now(a);  // freed "on" any line: the allocation's line takes it
  const MemoryExtras one = r.line(1);
  EXPECT_DOUBLE_EQ(one.freed_bytes, 3.0 * kMiB);
  EXPECT_DOUBLE_EQ(one.live_end_bytes, 0.0);
  EXPECT_DOUBLE_EQ(one.live_at_peak_bytes, 3.0 * kMiB);  // the peak was 4 MiB, with it
  const MemoryExtras two = r.line(2);
  EXPECT_DOUBLE_EQ(two.live_end_bytes, 1.0 * kMiB);
  EXPECT_EQ(r.stats.max_footprint_bytes(), 4 * kMiB);
  EXPECT_EQ(r.stats.final_footprint_bytes(), kMiB);
  EXPECT_EQ(r.stats.freed_bytes(), static_cast<uint64_t>(3 * kMiB));
}

TEST(MemoryStats, LiveAtThePeakIsWhatEachLineHeldThen) {
  Replay r;
  // Line 1 builds 10 MiB and drops it; line 2 later keeps 6 MiB: the peak is line 1's.
  uint32_t ids[10];
  for (uint32_t& id : ids) id = r.alloc(1, kMiB);
  r.alloc(2, kMiB);
  for (uint32_t id : ids) r.free_now(id);
  for (int i = 0; i < 5; ++i) r.alloc(2, kMiB);
  EXPECT_EQ(r.stats.max_footprint_bytes(), 11 * kMiB);
  EXPECT_DOUBLE_EQ(r.line(1).live_at_peak_bytes, 10.0 * kMiB);
  EXPECT_DOUBLE_EQ(r.line(2).live_at_peak_bytes, 1.0 * kMiB);
  EXPECT_DOUBLE_EQ(r.line(2).live_end_bytes, 6.0 * kMiB);
}

// The shapes of the leak suite, in miniature: only steady growth kept to the end is a leak.
TEST(MemoryStats, ThePeakIsWhereTheFootprintClearlyRose) {
  Replay r;
  r.alloc(1, 100 * kMiB);
  r.alloc(2, 300 * kMiB);  // the peak
  r.alloc(3, 64 * 1024);   // a small allocation sampled just after: a new maximum by 64 KiB
  EXPECT_EQ(r.stats.max_footprint_bytes(), 400 * kMiB + 64 * 1024);
  EXPECT_EQ(r.stats.max_footprint_stack(), 2u);
  r.alloc(4, 40 * kMiB);  // a clear rise moves the place
  EXPECT_EQ(r.stats.max_footprint_stack(), 4u);
  // A climb in small steps still moves it, every 1 % of the footprint.
  Replay climb;
  for (size_t step = 0; step < 200; ++step) climb.alloc(10 + step, kMiB);
  EXPECT_GE(climb.stats.max_footprint_stack(), 10u + 197u);
}

TEST(MemoryStats, LeakVerdicts) {
  Replay r;
  // Line 1: an "import" at the start, kept. Line 2: a cache filled in the first half.
  for (int i = 0; i < 50; ++i) r.alloc(1, kMiB);
  for (int i = 0; i < 400; ++i) {
    if (i < 150 && i % 3 == 0) r.alloc(2, kMiB / 2);
    r.alloc(3, kMiB / 4);                    // line 3: a leak, 1/4 MiB a pass
    r.free_now(r.alloc(4, 6 * kMiB));        // line 4: a 6 MiB temporary a pass
    if (i % 40 == 0) r.alloc(5, 16 * kMiB);  // line 5: big, kept, all along
  }
  uint32_t built[30];
  for (uint32_t& id : built) id = r.alloc(6, kMiB);  // line 6: built then dropped
  for (uint32_t id : built) r.free_now(id);
  for (int i = 0; i < 50; ++i) r.free_now(r.alloc(4, 6 * kMiB));
  // Line 7: a structure built in one execution just before the end, and kept: it rises
  // from its first sample to the end as a leak would, but nothing repeats.
  for (int i = 0; i < 40; ++i) r.alloc(7, kMiB);
  EXPECT_FALSE(r.line(1).leak.leak) << r.line(1).leak.confidence;
  EXPECT_FALSE(r.line(2).leak.leak) << r.line(2).leak.confidence;
  EXPECT_TRUE(r.line(3).leak.leak) << r.line(3).leak.confidence;
  EXPECT_FALSE(r.line(4).leak.leak);
  EXPECT_TRUE(r.line(5).leak.leak) << r.line(5).leak.confidence;
  EXPECT_FALSE(r.line(6).leak.leak);
  EXPECT_FALSE(r.line(7).leak.leak);
  EXPECT_GE(r.line(3).leak.confidence, 0.99);
  // 100 MiB over the span from its first sample to the end.
  const double span = r.stats.end_seconds() - r.stats.lines().at(3).first_t;
  EXPECT_NEAR(r.line(3).leak.rate_bytes_s / kMiB, 100.0 / span, 0.1 * 100.0 / span);
}

TEST(MemoryStats, ALeakIsJudgedOverTheProgramsAllocationsNotItsIdleSeconds) {
  // A request handler keeps 100 KiB a request for 2 s; the server then idles 5 s and
  // allocates once more as it shuts down. In seconds the line is flat for 5/7 of its span;
  // in the program's allocations it grew to the end.
  Replay r;
  for (int i = 0; i < 100; ++i) {
    r.alloc(1, 100 << 10);              // line 1: the leak
    r.free_now(r.alloc(2, 300 << 10));  // line 2: the request's temporaries
  }
  r.now += 5 * kSecond;
  r.free_now(r.alloc(3, 64 << 10));  // line 3: the shutdown's
  const MemoryExtras leak = r.line(1);
  EXPECT_TRUE(leak.leak.leak) << leak.leak.confidence;
  // The rate is still over seconds: 10,000 KiB over its span of 7 s.
  const double span = r.stats.end_seconds() - r.stats.lines().at(1).first_t;
  EXPECT_NEAR(leak.leak.rate_bytes_s, 100.0 * (100 << 10) / span, 0.1 * 100.0 * (100 << 10) / span);
}

TEST(MemoryStats, ACacheFilledThenLeftAloneIsNoLeakHoweverLongItTook) {
  // Filled over 20 requests in 6 s (each waiting on I/O), then read while the program
  // goes on allocating elsewhere for 2 s: most of the program's allocations find it full.
  Replay r;
  for (int i = 0; i < 20; ++i) {
    r.alloc(1, 200 << 10);
    r.free_now(r.alloc(2, 64 << 10));
    r.now += 300 * kSecond / 1000;
  }
  for (int i = 0; i < 100; ++i) r.free_now(r.alloc(2, 300 << 10));
  EXPECT_FALSE(r.line(1).leak.leak) << r.line(1).leak.confidence;
}

TEST(MemoryStats, AFreeOfAnUnknownSampleMovesOnlyTheFootprint) {
  Replay r;
  r.alloc(1, kMiB);
  r.stats.sampled_free(999, kSecond, 0);
  EXPECT_DOUBLE_EQ(r.line(1).live_end_bytes, 1.0 * kMiB);
  EXPECT_EQ(r.stats.final_footprint_bytes(), 0);
}

TEST(MemoryStats, ExecutionsAndTheirPeaks) {
  MemoryStats s;
  s.reset(0);
  // Thread 1: two samples on stack 5 (one execution adding 3 MiB), then stack 6, then 5.
  s.add_alloc(5, 5, true, 1, 1, 2 * kMiB, 2 * kMiB, true, 1);
  s.add_alloc(5, 5, true, 1, 2, kMiB, 3 * kMiB, true, 2);
  s.add_alloc(6, 6, true, 1, 3, kMiB, 4 * kMiB, true, 3);
  s.add_alloc(5, 5, true, 1, 4, kMiB, 5 * kMiB, true, 4);
  // Another thread's sample on stack 5 does not end thread 1's execution.
  s.add_alloc(5, 5, false, 2, 5, kMiB, 6 * kMiB, true, 5);
  s.finish();
  const ExecutionStats& five = s.executions().at(5);
  EXPECT_EQ(five.count, 3u);
  EXPECT_EQ(five.max_peak, 3 * kMiB);
  EXPECT_EQ(s.native_thread_alloc_bytes(), static_cast<uint64_t>(kMiB));
  const MemoryExtras m = summarize_memory({5, 6}, {5, 6}, s);
  EXPECT_EQ(m.executions, 4u);
  EXPECT_DOUBLE_EQ(m.peak_bytes, 3.0 * kMiB);
  EXPECT_EQ(m.timeline.size(), 5u);  // the footprint at each of their samples
  EXPECT_DOUBLE_EQ(m.timeline.back().value, 6.0 * kMiB);
}

// A loop whose only allocating line is followed by a sleep (or a request's wait): its
// samples at that line after the thread was off its CPU are executions of their own, not
// one of the whole run; a line building on the CPU, samples far apart or not, is one.
TEST(MemoryStats, SamplesAfterAWaitAreExecutionsOfTheirOwn) {
  MemoryStats s;
  s.reset(0);
  constexpr uint64_t kMs = 1'000'000;
  uint32_t id = 0;
  for (uint64_t iteration = 0; iteration < 6; ++iteration) {
    for (uint64_t k = 0; k < 3; ++k) {  // three samples, the first after the sleep
      ++id;
      s.add_alloc(5, 5, true, 1, iteration * 100 * kMs + k * kMs, kMiB,
                  static_cast<int64_t>(id) * kMiB, true, id, /*after_wait=*/k == 0);
    }
  }
  for (uint64_t k = 0; k < 6; ++k) {  // 100 ms apart, on the CPU all along
    ++id;
    s.add_alloc(6, 6, true, 2, k * 100 * kMs, kMiB, static_cast<int64_t>(id) * kMiB, true, id);
  }
  s.finish();
  EXPECT_EQ(s.executions().at(5).count, 6u);
  EXPECT_EQ(s.executions().at(5).max_peak, 3 * kMiB);
  EXPECT_EQ(s.executions().at(6).count, 1u);
}

TEST(MemoryStats, SaveAndLoadKeepTheLiveBlocks) {
  Replay r;
  const uint32_t a = r.alloc(1, kMiB);
  std::string bytes;
  ByteWriter out(&bytes);
  r.stats.save(out);
  MemoryStats copy;
  ByteReader in(bytes);
  ASSERT_TRUE(copy.load(in));
  copy.sampled_free(a, 2 * kSecond, 0);
  copy.finish();
  const MemoryExtras m = summarize_memory({1}, {1}, copy);
  EXPECT_DOUBLE_EQ(m.freed_bytes, 1.0 * kMiB);
  EXPECT_DOUBLE_EQ(m.live_end_bytes, 0.0);
}

}  // namespace
}  // namespace spyglass
