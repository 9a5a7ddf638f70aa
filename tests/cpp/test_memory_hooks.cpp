// The hooks in a process without Python. The allocations under test are made by a small
// shared library (alloc_helper.c) through its own offset table, as an extension module's
// are; this executable holds the hooks and is never patched itself. Runs under valgrind in
// CI too (its malloc replacement sits below the hooks like any other allocator).
#include "shim/memory_hooks.hpp"

#include <gtest/gtest.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

extern "C" {
void* helper_malloc(size_t n);
void* helper_calloc(size_t n, size_t m);
void* helper_realloc(void* p, size_t n);
void helper_free(void* p);
void* helper_posix_memalign(size_t alignment, size_t n);
void* helper_aligned_alloc(size_t alignment, size_t n);
void* helper_memalign(size_t alignment, size_t n);
void* helper_valloc(size_t n);
void* helper_memcpy(void* dst, const void* src, size_t n);
void* helper_memmove(void* dst, const void* src, size_t n);
}

namespace spyglass::shim {
namespace {

std::atomic<int> g_captures{0};

uint16_t capture(uint32_t, pid_t, RawFrame* out, bool* truncated) {
  g_captures.fetch_add(1);
  out[0].code = 0x1000;
  out[0].instr_offset = 2;
  *truncated = false;
  return 1;
}
bool never_interpreter(uintptr_t) { return false; }

struct Truth {
  pid_t tid = 0;
  uint64_t alloc_bytes = 0, alloc_count = 0, free_bytes = 0, free_count = 0;
  uint64_t requested = 0;  // the sizes asked for: what the samples estimate
  void allocated(void* p) {
    alloc_bytes += malloc_usable_size(p);
    alloc_count += 1;
  }
  void freeing(void* p) {
    free_bytes += malloc_usable_size(p);
    free_count += 1;
  }
};

// Sizes from one byte to past glibc's mmap threshold, in an order that mixes them.
size_t size_for(uint64_t i) {
  static const size_t sizes[] = {1, 24, 100, 512, 4000, 70000, 300000, 2 << 20, 33, 65536};
  return sizes[(i * 7) % (sizeof(sizes) / sizeof(sizes[0]))];
}

void* allocate(uint64_t i, Truth* truth) {
  const size_t n = size_for(i);
  truth->requested += (i % 7) == 3 ? (n + 255) / 256 * 256 : n;
  void* p = nullptr;
  switch (i % 7) {
    case 0:
      p = helper_malloc(n);
      break;
    case 1:
      p = helper_calloc(1, n);
      break;
    case 2:
      p = helper_posix_memalign(64, n);
      break;
    case 3:
      p = helper_aligned_alloc(256, (n + 255) / 256 * 256);
      break;
    case 4:
      p = helper_memalign(128, n);
      break;
    case 5:
      p = helper_valloc(n);
      break;
    default: {  // grow then shrink
      p = helper_malloc(n);
      truth->allocated(p);
      truth->freeing(p);
      p = helper_realloc(p, 2 * n + 1000);
      truth->allocated(p);
      truth->freeing(p);
      p = helper_realloc(p, n / 2 + 1);
      truth->requested += 2 * n + 1000 + n / 2 + 1;
    }
  }
  truth->allocated(p);
  return p;
}

void* storm(void* arg) {
  auto* truth = static_cast<Truth*>(arg);
  truth->tid = static_cast<pid_t>(syscall(SYS_gettid));
  void* live[64];
  size_t count = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    live[count++] = allocate(i, truth);
    if (count == 64) {
      for (size_t k = 0; k < count; ++k) {
        truth->freeing(live[k]);
        helper_free(live[k]);
      }
      count = 0;
    }
  }
  for (size_t k = 0; k < count; ++k) {
    truth->freeing(live[k]);
    helper_free(live[k]);
  }
  return nullptr;
}

std::map<pid_t, ThreadTotals> totals_by_tid() {
  std::map<pid_t, ThreadTotals> by_tid;
  for (const ThreadTotals& t : totals()) by_tid[t.tid] = t;
  return by_tid;
}

TEST(MemoryHooks, ExactPerThreadTotalsAndPoissonSamples) {
  HookOptions options;
  options.window_bytes = 4 << 20;  // few enough samples for the ring, undrained here
  ASSERT_TRUE(start(options, HookCallbacks{&capture, &never_interpreter, nullptr}));
  EXPECT_FALSE(start(options, HookCallbacks{&capture, &never_interpreter, nullptr}));  // in use
  const uint64_t dropped_before = records().dropped();  // a count over the process's life
  Truth truth[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; ++i) ASSERT_EQ(pthread_create(&threads[i], nullptr, storm, &truth[i]), 0);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  stop();
  std::map<pid_t, ThreadTotals> by_tid = totals_by_tid();
  uint64_t requested = 0;
  for (const Truth& t : truth) {
    ASSERT_EQ(by_tid.count(t.tid), 1u) << "thread " << t.tid;
    const ThreadTotals& got = by_tid[t.tid];
    EXPECT_GT(t.alloc_count, 2000u);
    EXPECT_EQ(got.alloc_bytes, t.alloc_bytes);
    EXPECT_EQ(got.alloc_count, t.alloc_count);
    EXPECT_EQ(got.free_bytes, t.free_bytes);
    EXPECT_EQ(got.free_count, t.free_count);
    requested += t.requested;
  }
  // The weights of the samples estimate the bytes asked for; every sampled block was freed,
  // and each free names its allocation and takes off exactly its weight.
  MpscRing<MemoryRecord>& ring = records();
  EXPECT_EQ(ring.dropped(), dropped_before);
  std::map<uint32_t, int64_t> live;
  double estimate = 0;
  int samples = 0;
  while (const MemoryRecord* r = ring.front()) {
    if (r->event == MemoryEvent::kAlloc) {
      EXPECT_TRUE(r->tracked);
      EXPECT_EQ(r->depth, 1);
      EXPECT_GT(r->net_bytes, 0);
      live[r->sample_id] = r->net_bytes;
      estimate += static_cast<double>(r->net_bytes);
      ++samples;
    } else if (r->event == MemoryEvent::kSampledFree) {
      ASSERT_EQ(live.count(r->sample_id), 1u) << r->sample_id;
      EXPECT_EQ(-r->net_bytes, live[r->sample_id]);
      live.erase(r->sample_id);
    }
    ring.pop();
  }
  EXPECT_TRUE(live.empty());
  EXPECT_GT(samples, 100);
  EXPECT_GE(g_captures.load(), samples);
  // ~1 GiB in ~200 samples of 4 MiB mean: a relative standard error of about 4%.
  EXPECT_NEAR(estimate / static_cast<double>(requested), 1.0, 0.15)
      << estimate << " estimated, " << requested << " requested";
}

std::atomic<int> g_filling{0};
void count_filling() { g_filling.fetch_add(1); }

// A burst of large allocations fills the ring faster than a tick would drain it: the
// collector is asked to drain early, and what is dropped meanwhile still counts in the
// footprint (and is freed from it), though no line has it.
TEST(MemoryHooks, AFillingRingAsksForADrainAndTheFootprintKeepsWhatItDropped) {
  HookOptions options;
  options.window_bytes = 4096;
  ASSERT_TRUE(start(options, HookCallbacks{&capture, &never_interpreter, &count_filling}));
  MpscRing<MemoryRecord>& ring = records();
  while (ring.front() != nullptr) ring.pop();
  const uint64_t dropped_before = ring.dropped();  // a count over the process's life
  const int filling_before = g_filling.load();
  // 512 MB in blocks of 16 windows: more samples than the ring holds even as a backed-up
  // ring draws them sparser (TheBacklogThinsSamplesInsteadOfDroppingThem).
  const size_t n = 4 * ring.capacity();
  constexpr size_t kSize = 64 << 10;
  std::vector<void*> blocks;
  blocks.reserve(n + 1);
  for (size_t i = 0; i < n; ++i) blocks.push_back(helper_malloc(kSize));
  const uint64_t dropped = ring.dropped() - dropped_before;
  EXPECT_GE(dropped, 100u);
  // Each quarter of the ring claimed, then each drop.
  EXPECT_GE(static_cast<uint64_t>(g_filling.load() - filling_before), 4 + dropped);
  while (ring.front() != nullptr) ring.pop();  // the drain
  // The next sample's record says the footprint. The countdown running was drawn while
  // the ring was backed up, at a sparse rate: a few blocks may pass before it.
  const MemoryRecord* r = nullptr;
  for (int i = 0; i < 1000 && r == nullptr; ++i) {
    blocks.push_back(helper_malloc(kSize));
    r = ring.front();
  }
  ASSERT_NE(r, nullptr);
  // The dropped samples are about half the bytes: a footprint without them is far off.
  const double truth = static_cast<double>(blocks.size() * kSize);
  EXPECT_NEAR(static_cast<double>(r->footprint_bytes) / truth, 1.0, 0.15) << dropped;
  ring.pop();
  int64_t footprint = -1;
  for (void* b : blocks) {
    helper_free(b);
    while (const MemoryRecord* f = ring.front()) {  // drained as they come
      footprint = f->footprint_bytes;
      ring.pop();
    }
  }
  stop();
  // Every block, recorded or not, is off the footprint again (what is left is a sample or
  // two of the test's own, each weighing up to the sparsest rate).
  EXPECT_GE(footprint, 0);
  EXPECT_LT(static_cast<double>(footprint), 0.01 * truth);
}

// Drains the ring: the bytes the `event` records stand for (an allocation's weight, a
// copy's bytes), summed, and in `samples` how many there were.
double drain_estimate(MemoryEvent event, uint64_t* samples) {
  double estimate = 0;
  while (const MemoryRecord* r = records().front()) {
    if (r->event == event) {
      estimate += static_cast<double>(event == MemoryEvent::kCopy ? r->copy_bytes : r->net_bytes);
      ++*samples;
    }
    records().pop();
  }
  return estimate;
}

// A ring that nobody drains (the collector's thread off the CPU during a burst): samples
// are drawn sparser as it backs up, so that 30 MB of small blocks, 7,300 samples at the
// configured rate where the ring holds 2,048, lose none, and the estimate stays unbiased.
TEST(MemoryHooks, TheBacklogThinsSamplesInsteadOfDroppingThem) {
  HookOptions options;
  options.window_bytes = 4096;
  ASSERT_TRUE(start(options, HookCallbacks{&capture, &never_interpreter, nullptr}));
  MpscRing<MemoryRecord>& ring = records();
  while (ring.front() != nullptr) ring.pop();
  const uint64_t dropped_before = ring.dropped();  // a count over the process's life
  constexpr size_t kBlocks = 30000;
  constexpr size_t kSize = 1000;
  std::vector<void*> blocks;
  blocks.reserve(kBlocks);
  for (size_t i = 0; i < kBlocks; ++i) blocks.push_back(helper_malloc(kSize));
  EXPECT_EQ(ring.dropped(), dropped_before);
  uint64_t samples = 0;
  const double estimate = drain_estimate(MemoryEvent::kAlloc, &samples);
  EXPECT_LT(samples, ring.capacity());
  EXPECT_GT(samples, ring.capacity() / 2);  // thinned only once it backed up
  // About 1,700 samples at rates from 4 to 64 KiB: a relative standard error near 4 %.
  const auto truth = static_cast<double>(kBlocks * kSize);
  EXPECT_NEAR(estimate / truth, 1.0, 0.15) << samples << " samples";
  stop();
  for (void* b : blocks) helper_free(b);
  while (ring.front() != nullptr) ring.pop();
}

// Copies are thinned the same way: 30 MB copied 100 bytes at a time with nobody draining,
// 7,300 copy samples at a 4 KiB window where the ring holds 2,048, lose none.
TEST(MemoryHooks, TheBacklogThinsCopySamplesToo) {
  std::vector<char> a(256, 'y');
  std::vector<char> b(256);
  HookOptions options;
  options.copy_window_bytes = 4096;
  ASSERT_TRUE(start(options, HookCallbacks{&capture, &never_interpreter, nullptr}));
  MpscRing<MemoryRecord>& ring = records();
  while (ring.front() != nullptr) ring.pop();
  const uint64_t dropped_before = ring.dropped();
  constexpr int kCopies = 300000;
  for (int i = 0; i < kCopies; ++i) helper_memcpy(b.data(), a.data(), 100);
  stop();
  EXPECT_EQ(ring.dropped(), dropped_before);
  uint64_t samples = 0;
  const double estimate = drain_estimate(MemoryEvent::kCopy, &samples);
  EXPECT_LT(samples, ring.capacity());
  EXPECT_GT(samples, ring.capacity() / 2);
  const double truth = 100.0 * kCopies;
  EXPECT_NEAR(estimate / truth, 1.0, 0.15) << samples << " samples";
  EXPECT_EQ(b[0], 'y');
}

TEST(MemoryHooks, SampleWeightsAreSizeOverTheChanceOfASample) {
  const uint64_t rate = 256 << 10;
  EXPECT_NEAR(sample_weight(100, rate), static_cast<double>(rate), 100.0);         // ~R for small
  EXPECT_NEAR(sample_weight(64 << 20, rate), static_cast<double>(64 << 20), 1.0);  // ~size
  const double s = 300 << 10;
  EXPECT_DOUBLE_EQ(sample_weight(300 << 10, rate), s / (1 - std::exp(-s / rate)));
}

// Past kTargetSamples the rate grows with the run's volume; each sample keeps the weight
// of the rate it was drawn at, so the estimate stays unbiased while the samples thin out.
TEST(MemoryHooks, TheRateGrowsWithTheRunAndTheEstimateStaysUnbiased) {
  HookOptions options;
  options.window_bytes = 4096;
  ASSERT_TRUE(start(options, HookCallbacks{&capture, &never_interpreter, nullptr}));
  const uint64_t dropped_before = records().dropped();  // a count over the process's life
  constexpr uint64_t kBlocks = 400000;
  constexpr uint64_t kSize = 1000;
  double estimate = 0;
  uint64_t samples = 0;
  auto drain = [&] {
    while (const MemoryRecord* r = records().front()) {
      if (r->event == MemoryEvent::kAlloc) {
        estimate += static_cast<double>(r->net_bytes);
        ++samples;
      }
      records().pop();
    }
  };
  for (uint64_t i = 0; i < kBlocks; ++i) {
    helper_free(helper_malloc(kSize));
    if (i % 256 == 0) drain();  // the test's own allocations are not hooked
  }
  stop();
  drain();
  EXPECT_EQ(records().dropped(), dropped_before);
  const double truth = static_cast<double>(kBlocks * kSize);  // 400 MB
  // At a fixed 4 KiB rate: ~98,000 samples. Grown: kTargetSamples (1 + ln(volume / the
  // volume where it starts growing)), about 16384 * (1 + ln 6) = 46,000.
  EXPECT_LT(samples, 60000u);
  EXPECT_GT(samples, kTargetSamples);
  // Once the rate grows with the volume v, R(v) = v / kTargetSamples, the estimate's
  // variance is the integral of R(v) dv, about V^2 / (2 kTargetSamples): a relative
  // standard error of 1 / sqrt(2 * 16384) = 0.55% (0.54-0.60% over 450 repeats, plain and
  // under TSan, which also showed no bias). 3% is more than five of them.
  EXPECT_NEAR(estimate / truth, 1.0, 0.03) << samples << " samples";
}

TEST(MemoryHooks, CopiesAreCountedAndNothingAfterStop) {
  std::vector<char> a(3 << 20, 'x');  // before start: allocated through libstdc++
  std::vector<char> b(3 << 20);
  HookOptions options;
  options.copy_window_bytes = 4096;  // a copy of 256 windows or more: sampled, at its size
  ASSERT_TRUE(start(options, HookCallbacks{&capture, &never_interpreter, nullptr}));
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  helper_memcpy(b.data(), a.data(), a.size());
  helper_memmove(b.data() + 1, b.data(), 1 << 20);
  void* block = helper_malloc(1000);
  stop();
  std::map<pid_t, ThreadTotals> by_tid = totals_by_tid();
  ASSERT_EQ(by_tid.count(tid), 1u);
  EXPECT_EQ(by_tid[tid].copy_bytes, static_cast<uint64_t>((3 << 20) + (1 << 20)));
  EXPECT_EQ(by_tid[tid].alloc_count, 1u);
  int copy_samples = 0;
  while (const MemoryRecord* r = records().front()) {
    if (r->event == MemoryEvent::kCopy) {
      ++copy_samples;
      EXPECT_EQ(r->copy_bytes, copy_samples == 1 ? 3u << 20 : 1u << 20);
    }
    records().pop();
  }
  EXPECT_EQ(copy_samples, 2);
  helper_free(block);  // after stop: the hooks are gone
  void* later = helper_malloc(1 << 20);
  helper_free(later);
  by_tid = totals_by_tid();
  EXPECT_EQ(by_tid[tid].alloc_count, 1u);
  EXPECT_EQ(by_tid[tid].free_count, 0u);
  EXPECT_EQ(b[1], 'x');
}

TEST(MemoryHooks, LargeBlocksFromBeforeStartAreNotSubtracted) {
  void* before = helper_malloc(1 << 20);
  void* small_before = helper_malloc(100);
  ASSERT_TRUE(start(HookOptions{}, HookCallbacks{&capture, &never_interpreter, nullptr}));
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  helper_free(before);        // large, unknown: left out
  helper_free(small_before);  // small: counted (see block_set.hpp)
  void* during = helper_malloc(1 << 20);
  helper_free(during);
  stop();
  std::map<pid_t, ThreadTotals> by_tid = totals_by_tid();
  EXPECT_EQ(by_tid[tid].alloc_count, 1u);
  EXPECT_EQ(by_tid[tid].free_count, 2u);
  while (records().front() != nullptr) records().pop();
}

// Copies smaller than the window take the hooks' quick path: still counted to the byte,
// and sampled as allocations are, each sample weighing its size over its chance.
TEST(MemoryHooks, SmallCopiesAreCountedExactlyAndRecordedAtRandomPoints) {
  std::vector<char> a(256, 'y');
  std::vector<char> b(256);
  HookOptions options;
  options.copy_window_bytes = 64 << 10;
  ASSERT_TRUE(start(options, HookCallbacks{&capture, &never_interpreter, nullptr}));
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  for (int i = 0; i < 10000; ++i) {
    if (i % 2 == 0) {
      helper_memcpy(b.data(), a.data(), 100);
    } else {
      helper_memmove(b.data() + 1, b.data(), 100);
    }
  }
  stop();
  std::map<pid_t, ThreadTotals> by_tid = totals_by_tid();
  ASSERT_EQ(by_tid.count(tid), 1u);
  EXPECT_EQ(by_tid[tid].copy_bytes, 1000000u);
  int copy_records = 0;
  while (const MemoryRecord* r = records().front()) {
    if (r->event == MemoryEvent::kCopy) {
      ++copy_records;
      // 100 bytes over their chance of a sample, 1 - e^(-100/65536).
      EXPECT_NEAR(static_cast<double>(r->copy_bytes), 65586.0, 1.0);
      EXPECT_EQ(r->epoch, epoch());
    }
    records().pop();
  }
  // About 15 records (1,000,000 bytes at a mean of 65,536 between them).
  EXPECT_GE(copy_records, 4);
  EXPECT_LE(copy_records, 40);
  EXPECT_EQ(b[0], 'y');
}

// Which "line" is copying, as the capture callback reports it.
std::atomic<uintptr_t> g_line{0};
uint16_t capture_line(uint32_t, pid_t, RawFrame* out, bool* truncated) {
  out[0].code = g_line.load();
  out[0].instr_offset = 0;
  *truncated = false;
  return 1;
}

// Two lines taking turns to copy 600 and 1,500 bytes, with a mean of 2,100 between
// samples: a fixed threshold put every sample, and all 2,100 bytes, on the second line.
TEST(MemoryHooks, CopySamplesDoNotAliasWithTheProgramsRhythm) {
  std::vector<char> a(1500, 'y');
  std::vector<char> b(1500);
  HookOptions options;
  options.copy_window_bytes = 2100;
  ASSERT_TRUE(start(options, HookCallbacks{&capture_line, &never_interpreter, nullptr}));
  std::map<uintptr_t, uint64_t> by_line;
  for (int i = 0; i < 20000; ++i) {
    g_line.store(0x1000);
    helper_memcpy(b.data(), a.data(), 600);
    g_line.store(0x2000);
    helper_memcpy(b.data(), a.data(), 1500);
    while (const MemoryRecord* r = records().front()) {  // drained as they come
      if (r->event == MemoryEvent::kCopy) by_line[r->frames[0].code] += r->copy_bytes;
      records().pop();
    }
  }
  stop();
  const double total = static_cast<double>(by_line[0x1000] + by_line[0x2000]);
  ASSERT_GT(total, 0);
  EXPECT_NEAR(static_cast<double>(by_line[0x1000]) / total, 600.0 / 2100.0, 0.03);
}

// spyglass's own work (paused) is never counted; the program's calls after a pause are.
TEST(MemoryHooks, OwnWorkIsNotCounted) {
  std::vector<char> a(100, 'x');
  std::vector<char> b(100);
  ASSERT_TRUE(start(HookOptions{}, HookCallbacks{&capture, &never_interpreter, nullptr}));
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  void* counted = helper_malloc(1000);  // first: the pauses below find it counting
  {
    PauseThisThread outer;
    PauseThisThread inner;  // pauses nest
    helper_free(helper_malloc(1000));
  }
  {
    PauseThisThread paused;
    helper_memcpy(b.data(), a.data(), a.size());
  }
  stop();
  helper_free(counted);
  std::map<pid_t, ThreadTotals> by_tid = totals_by_tid();
  ASSERT_EQ(by_tid.count(tid), 1u);
  EXPECT_EQ(by_tid[tid].alloc_count, 1u);
  EXPECT_EQ(by_tid[tid].free_count, 0u);
  EXPECT_EQ(by_tid[tid].copy_bytes, 0u);
  while (records().front() != nullptr) records().pop();
}

}  // namespace
}  // namespace spyglass::shim
