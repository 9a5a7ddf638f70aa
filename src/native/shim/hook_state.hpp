// Internal to shim/: the state the allocator and copy hooks share (memory_hooks.cpp
// keeps it and samples; libc_hooks.cpp replaces the C library's functions). The fast
// paths are inline here, so that every hook stays one function with one thread-local
// access; everything here is hidden, so that it is never reached through the
// extension's offset table.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdint>

#include "../core/memory_record.hpp"
#include "../core/mpsc_ring.hpp"
#include "../platform/clock.hpp"
#include "../platform/got_patcher.hpp"
#include "block_set.hpp"
#include "byte_sampling.hpp"
#include "memory_hooks.hpp"

#pragma GCC visibility push(hidden)
namespace spyglass::shim::hooks {

struct alignas(64) Counters {
  std::atomic<pid_t> tid{0};
  std::atomic<uint64_t> alloc_bytes{0};
  std::atomic<uint64_t> alloc_count{0};
  std::atomic<uint64_t> free_bytes{0};
  std::atomic<uint64_t> free_count{0};
  // A thread with a slot of its own counts its copies here rather than in its thread
  // state, so that its fast path (libc_hooks.cpp) adds nothing per call but the countdown:
  // bytes copied = copy_bytes (its finished windows) + copy_window - copy_left.
  std::atomic<uint64_t> copy_bytes{0};
  std::atomic<int64_t> copy_left{0};     // bytes until its next copy sample
  std::atomic<uint64_t> copy_window{0};  // what copy_left was drawn as
  // Waits the collector forced on this thread by taking the GIL from it (note_forced_wait).
  std::atomic<uint64_t> forced_waits{0};
};

// Everything the hooks touch is constant-initialised and never destroyed: allocations
// still arrive while the process runs its exit handlers and static destructors.
extern Counters g_counters[kCounterSlots];
extern std::atomic<uint32_t> g_next_slot;
extern std::atomic<bool> g_enabled;
extern std::atomic<pid_t> g_owner;  // the process that started the hooks
extern std::atomic<uint32_t> g_epoch;
// What a counting thread's gate reads (see ThreadState::gate): the running start()'s
// epoch in the high half, or kGateClosed while the hooks do not count.
extern std::atomic<uint64_t> g_gate;
extern std::atomic<int64_t> g_footprint;  // estimated: the weights of the sampled live blocks
extern std::atomic<int64_t> g_peak;
extern std::atomic<uint32_t> g_next_sample;
// The sum of every sample's weight: an unbiased running estimate of the bytes allocated,
// from which the rate grows (see draw_countdown).
extern std::atomic<uint64_t> g_estimated_bytes;
extern BlockSet g_blocks;                // large blocks, for the exact counters
extern SampledSet g_sampled;             // sampled blocks, until freed
extern std::atomic<bool> g_tables_used;  // whether a start() has used the two sets
extern HookOptions g_options;
extern HookCallbacks g_callbacks;
extern MpscRing<MemoryRecord>* g_records;
extern platform::GotPatcher* g_patcher;

inline constexpr uint64_t kGateClosed = ~uint64_t{0};
inline constexpr uint64_t kGateIgnore = uint64_t{1} << 31;
inline constexpr uint64_t kGateLowHalf = 0xFFFFFFFFull;
inline constexpr uint64_t open_gate(uint32_t epoch) { return uint64_t{epoch} << 32; }

// Per-thread state: plain data, so the first touch on a thread needs no constructor, and
// a thread that allocates during its own teardown still finds valid memory.
struct ThreadState {
  // Three things in one word, so that a hook's whole check is one comparison with g_gate:
  // the epoch of the start() this thread counts for (high half), whether it is one of
  // ours that never counts (kGateIgnore), and how deep it is in our own work (the low
  // bits; > 0: calls pass straight through). It equals g_gate only when the thread
  // should count now.
  uint64_t gate;
  pid_t tid;
  uint32_t slot;
  int64_t countdown;          // bytes until the next sample
  uint64_t rate;              // the mean the countdown was drawn with: its samples' weights use it
  uint64_t rng;               // xorshift64 state
  int64_t copy_countdown;     // slot 0's threads: bytes copied until the next copy sample
                              // (draw_copy_countdown); the others' is their Counters'
  uint64_t copy_rate;         // the mean that countdown was drawn with
  uint64_t sample_wall_ns;    // when it made its last allocation sample (0: none yet)
  uint64_t read_wall_ns;      // when a sample last read its clocks (waited_since_last_sample)
  uint64_t read_cpu_ns;       // its CPU time then
  uint64_t read_blocked;      // and how many times it had blocked by then
  uint64_t read_forced;       // and the waits the collector had forced on it by then
  uint64_t gil_wait_ns;       // in the interpreter's waits on a condition variable: the GIL
  uint64_t read_gil_wait_ns;  // and as much by then
  uint64_t read_delay_ns;     // and its time queued for a CPU by then (schedstat)
  uint64_t cuda_copied[3];    // small CUDA copies gathered, by direction (CopyKind - 1)
};
// Initial-exec: every allocation of the process reads it, and the general-dynamic model a
// shared object gets by default costs a call to __tls_get_addr each time. The hundred or so
// bytes fit in the static TLS space glibc keeps for objects loaded later. Constinit: a
// thread_local of another file is otherwise reached through a wrapper that checks for a
// dynamic initialiser, a load and a branch in every hook, and a call that makes each save
// registers.
extern constinit thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));

// While the ring of records backs up (the collector's thread off the CPU during a burst
// of allocations), samples are drawn sparser: 1x while it is under 3/8 full, then twice as
// sparse with each further eighth, up to 16x from 3/4 on. A burst then slows its own
// records instead of losing the next ones (20 arrays of 8 MB made right after a burst of
// string concatenation were missing on a loaded machine), and at 16x the default window
// still samples an 8 MB block with a weight within 0.1 % of its size.
inline uint64_t backlog_factor() {
  const MpscRing<MemoryRecord>* ring = g_records;
  if (ring == nullptr) return 1;  // kRecordCapacity >= 8 (memory_hooks.cpp)
  const uint64_t level = ring->backlog() / (ring->capacity() / 8);
  return level < 3 ? 1 : uint64_t{1} << std::min<uint64_t>(level - 2, 4);
}

// An exponential draw with mean R: memoryless, so the bytes already counted towards the
// next sample never change an allocation's chance of being the one. R is the configured
// rate until the run has allocated kTargetSamples of it, then grows with the run so that
// the samples grow only with the logarithm of its volume: a line's relative error then
// depends on its share of the bytes, not on how much the program allocates in all. It is
// also scaled by the ring's backlog (above). A thread's rate changes only at a draw, and
// each sample is weighted by the rate it was drawn with, so the estimates stay unbiased.
inline int64_t draw_countdown(ThreadState& t) {
  const uint64_t grown = g_estimated_bytes.load(std::memory_order_relaxed) / kTargetSamples;
  t.rate = std::max(g_options.window_bytes, grown) * backlog_factor();
  return exponential_countdown(t.rng, t.rate);
}

// Copies are sampled as allocations are: an exponential countdown over their bytes, and a
// sampled copy weighs its size over its chance of being sampled. Charging each sample the
// bytes copied since the one before, as a fixed threshold did, aliased with the program's
// own rhythm (two lines taking turns to copy 600 KB and 1.5 MB had every sample on the
// second), and stays biased with a random threshold: a line's charge then depends on the
// sizes of the copies before it (25 % for the first line instead of 29 %).
// A backed-up ring thins them as it does allocations (backlog_factor), each weighted by
// the rate its countdown was drawn with.
inline int64_t draw_copy_countdown(ThreadState& t) {
  t.copy_rate = g_options.copy_window_bytes * backlog_factor();
  return exponential_countdown(t.rng, t.copy_rate);
}
// A new copy window for `t`: in its thread state on slot 0, which threads share, else in
// its Counters, where totals() reads the part of it already copied.
inline void start_copy_window(ThreadState& t) {
  const int64_t window = draw_copy_countdown(t);
  if (t.slot == 0) {
    t.copy_countdown = window;
    return;
  }
  Counters& c = g_counters[t.slot];
  c.copy_window.store(static_cast<uint64_t>(window), std::memory_order_relaxed);
  c.copy_left.store(window, std::memory_order_relaxed);
}

inline void bump(std::atomic<uint64_t>& counter, uint64_t n, bool shared) {
  if (shared) {
    counter.fetch_add(n, std::memory_order_relaxed);
  } else {  // one writer: no read-modify-write instruction needed
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
}

inline uint32_t gate_epoch(const ThreadState& t) { return static_cast<uint32_t>(t.gate >> 32); }

// Our own work on this thread: every hooked call in it passes straight through.
inline void enter_own_work(ThreadState& t) { ++t.gate; }
inline void leave_own_work(ThreadState& t) {
  assert((t.gate & (kGateIgnore - 1)) != 0);  // one leave too many would open a closed gate
  --t.gate;
}

// The slow path of counting_thread(): nullptr if the hooks are closed, or the thread is
// ignored or in our own work; otherwise this is its first call since start().
ThreadState* start_counting(ThreadState& t, uint64_t gate);

// The calling thread's state, current for this start(); nullptr when not counting. Forced
// inline, as the hooks' other fast paths: every allocation of the process comes here.
[[gnu::always_inline]] inline ThreadState* counting_thread() {
  ThreadState& t = t_state;
  const uint64_t gate = g_gate.load(std::memory_order_acquire);
  if (__builtin_expect(t.gate == gate, 1)) return &t;
  return start_counting(t, gate);
}

// The slow path of a sampled allocation: remembered until freed, and recorded with its
// stack.
void emit_sample(ThreadState& t, uintptr_t block, size_t size, bool python);

// Every allocation of any kind: a countdown step, and rarely a sample.
[[gnu::always_inline]] inline void sample_alloc(ThreadState& t, uintptr_t block, size_t size,
                                                bool python) {
  t.countdown -= static_cast<int64_t>(size);
  if (t.countdown > 0) return;
  emit_sample(t, block, size, python);  // weighted with the rate this countdown was drawn at
  t.countdown = draw_countdown(t);
}

// The slow path of a free that may be of a sampled block: forgotten and recorded if it is.
bool forget_sample(ThreadState& t, uintptr_t block);

// Every free of any kind: only a sampled block's is news. True when it was one.
[[gnu::always_inline]] inline bool sample_free(ThreadState& t, uintptr_t block) {
  return g_sampled.maybe_contains(block) && forget_sample(t, block);
}

// A copy record of `bytes`, charged to the calling thread's line.
void emit_copy(ThreadState& t, uint64_t bytes, CopyKind kind);

// The record of a reservation (below), with sample id `id`.
void emit_reservation(ThreadState& t, uint32_t id);
// A reservation (reserved_maps.hpp) mapped at `block`: recorded with its stack and weight 0,
// and listed for the collector to measure.
void note_reserved(ThreadState& t, uintptr_t block, size_t length);
// The reservations [block, block + length) unmaps, in whole or in part: no longer listed,
// or listed as what is left of them at either end (a hole in one ends it).
void unmap_reserved(uintptr_t block, size_t length);
// Whether [block, block + length) lies in a listed reservation (a MAP_FIXED mapping over
// it: its pages are measured with the reservation's).
bool inside_reserved(uintptr_t block, size_t length);
// Lists no reservation (a new start()).
void clear_reserved();
// In a forked child: frees the slots a thread of the parent was changing as it forked.
void reserved_after_fork_child();

// The table of replaced functions (libc_hooks.cpp), made on first use.
platform::GotPatcher& patcher();

}  // namespace spyglass::shim::hooks
#pragma GCC visibility pop
