#include "memory_hooks.hpp"

#include <malloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "../platform/clock.hpp"
#include "../platform/got_patcher.hpp"
#include "block_set.hpp"

namespace spyglass::shim {

namespace {

constexpr uint32_t kCounterSlots = 4096;  // slot 0 is shared by threads past the rest
constexpr size_t kRecordCapacity = 1024;

struct alignas(64) Counters {
  std::atomic<pid_t> tid{0};
  std::atomic<uint64_t> alloc_bytes{0};
  std::atomic<uint64_t> alloc_count{0};
  std::atomic<uint64_t> free_bytes{0};
  std::atomic<uint64_t> free_count{0};
  std::atomic<uint64_t> copy_bytes{0};
};

// Everything the hooks touch is constant-initialised and never destroyed: allocations
// still arrive while the process runs its exit handlers and static destructors.
Counters g_counters[kCounterSlots];
std::atomic<uint32_t> g_next_slot{1};
std::atomic<bool> g_enabled{false};
std::atomic<pid_t> g_owner{0};  // the process that started the hooks
std::atomic<uint32_t> g_epoch{0};
std::atomic<int64_t> g_footprint{0};
std::atomic<int64_t> g_peak{0};
// Leak watch (see core/memory_stats.hpp): the allocations of the latest samples, until
// the next footprint peak.
std::atomic<uintptr_t> g_watched[kWatchSlots]{};
std::atomic<uint32_t> g_watched_generation[kWatchSlots]{};
std::atomic<uint32_t> g_watch_next{0};
BlockSet g_blocks;
HookOptions g_options;
HookCallbacks g_callbacks{};
MpscRing<MemoryRecord>* g_records = nullptr;
platform::GotPatcher* g_patcher = nullptr;

// Per-thread state: plain data, so the first touch on a thread needs no constructor, and
// a thread that allocates during its own teardown still finds valid memory.
struct ThreadState {
  uint32_t epoch;
  uint32_t guard;  // > 0 inside our own work: calls then pass straight through
  bool ignore;
  pid_t tid;
  uint32_t slot;
  int64_t net;  // since the last sample
  uint64_t grown;
  uint64_t grown_python;
  uint64_t copied;
};
thread_local ThreadState t_state;

void bump(std::atomic<uint64_t>& counter, uint64_t n, bool shared) {
  if (shared) {
    counter.fetch_add(n, std::memory_order_relaxed);
  } else {  // one writer: no read-modify-write instruction needed
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
}

// The calling thread's state, current for this start(); nullptr when not counting.
ThreadState* counting_thread() {
  if (!g_enabled.load(std::memory_order_relaxed)) return nullptr;
  ThreadState& t = t_state;
  if (t.guard != 0 || t.ignore) return nullptr;
  const uint32_t epoch = g_epoch.load(std::memory_order_acquire);
  if (t.epoch != epoch) {
    t.epoch = epoch;
    t.tid = static_cast<pid_t>(syscall(SYS_gettid));
    const uint32_t slot = g_next_slot.fetch_add(1, std::memory_order_relaxed);
    t.slot = slot < kCounterSlots ? slot : 0;
    if (t.slot != 0) g_counters[t.slot].tid.store(t.tid, std::memory_order_relaxed);
    t.net = 0;
    t.grown = t.grown_python = t.copied = 0;
  }
  return &t;
}

// Blocks asynchronous signals while a sample is taken: the CPU sampler's handler walks
// stacks under the same fault guard scheme and must not nest inside this walk. Faults stay
// deliverable: a blocked SIGSEGV would kill the process instead of reaching the guard.
struct SignalsBlocked {
  sigset_t old;
  SignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    for (int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP}) sigdelset(&all, fault);
    pthread_sigmask(SIG_BLOCK, &all, &old);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
};

void fill_stack(ThreadState& t, MemoryRecord* r) {
  const SignalsBlocked blocked;
  r->depth =
      g_callbacks.capture != nullptr
          ? g_callbacks.capture(t.slot != 0 ? t.slot : static_cast<uint32_t>(t.tid) % kCounterSlots,
                                t.tid, r->frames, &r->truncated)
          : 0;
}

void emit_net(ThreadState& t, uintptr_t block) {
  ++t.guard;
  const int64_t net = t.net;
  uint64_t python = 0;
  if (net > 0 && t.grown > 0) {
    python = static_cast<uint64_t>(static_cast<double>(net) * static_cast<double>(t.grown_python) /
                                   static_cast<double>(t.grown));
  }
  t.net = 0;
  t.grown = t.grown_python = 0;
  const int64_t footprint = g_footprint.fetch_add(net, std::memory_order_acq_rel) + net;
  bool new_peak = false;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (net > 0 && footprint > peak) {
    if (g_peak.compare_exchange_weak(peak, footprint, std::memory_order_acq_rel)) {
      new_peak = true;
      break;
    }
  }
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    r->epoch = t.epoch;
    r->event = MemoryEvent::kNet;
    r->new_peak = new_peak;
    r->watch_slot = -1;
    r->watch_generation = 0;
    uint32_t generation = 0;
    if (block != 0 && net > 0) {
      generation = g_watch_next.fetch_add(1, std::memory_order_relaxed) + 1;
      r->watch_slot = static_cast<int8_t>(generation % kWatchSlots);
      r->watch_generation = generation;
    }
    r->tid = t.tid;
    r->t_ns = platform::monotonic_ns();
    r->net_bytes = net;
    r->python_bytes = python;
    r->copy_bytes = 0;
    r->footprint_bytes = footprint;
    r->truncated = false;
    fill_stack(t, r);
    // A new peak settles the watch: what is still watched survived it (the aggregator
    // scores that at this record), so its later frees are no news.
    if (new_peak) {
      // Only the watches this record's peak settles: one set meanwhile by a later sample
      // on another thread is still waiting for its own next peak.
      for (int s = 0; s < kWatchSlots; ++s) {
        if (g_watched_generation[s].load(std::memory_order_relaxed) < generation) {
          g_watched[s].store(0, std::memory_order_relaxed);
        }
      }
    }
    const int slot = r->watch_slot;
    g_records->publish(ticket);
    // Watched only once its record is queued, so a free of it is reported after it.
    if (slot >= 0) {
      g_watched_generation[slot].store(generation, std::memory_order_relaxed);
      g_watched[slot].store(block, std::memory_order_release);
    }
  }
  --t.guard;
}

void emit_copy(ThreadState& t) {
  ++t.guard;
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    r->epoch = t.epoch;
    r->event = MemoryEvent::kCopy;
    r->new_peak = false;
    r->watch_slot = -1;
    r->tid = t.tid;
    r->t_ns = platform::monotonic_ns();
    r->net_bytes = 0;
    r->python_bytes = 0;
    r->copy_bytes = t.copied;
    r->footprint_bytes = g_footprint.load(std::memory_order_relaxed);
    r->truncated = false;
    fill_stack(t, r);
    g_records->publish(ticket);
  }
  t.copied = 0;
  --t.guard;
}

void account_alloc(ThreadState& t, uintptr_t block, size_t size, bool python, bool track) {
  if (track && !g_blocks.insert(block)) return;  // could not remember it: leave it out
  Counters& c = g_counters[t.slot];
  bump(c.alloc_bytes, size, t.slot == 0);
  bump(c.alloc_count, 1, t.slot == 0);
  t.net += static_cast<int64_t>(size);
  t.grown += size;
  if (python) t.grown_python += size;
  if (t.net >= static_cast<int64_t>(g_options.window_bytes)) emit_net(t, block);
}

// A large block the hooks never saw allocated (made before start) is not ours to count.
void account_free(ThreadState& t, uintptr_t block, size_t size, bool tracked_kind) {
  if (tracked_kind && !g_blocks.erase(block)) return;
  Counters& c = g_counters[t.slot];
  bump(c.free_bytes, size, t.slot == 0);
  bump(c.free_count, 1, t.slot == 0);
  t.net -= static_cast<int64_t>(size);
  for (int slot = 0; slot < kWatchSlots; ++slot) {
    uintptr_t watched = block;
    if (g_watched[slot].load(std::memory_order_relaxed) != block ||
        !g_watched[slot].compare_exchange_strong(watched, 0, std::memory_order_acq_rel)) {
      continue;
    }
    ++t.guard;
    uint64_t ticket = 0;
    if (MemoryRecord* r = g_records->claim(&ticket)) {
      r->epoch = t.epoch;
      r->event = MemoryEvent::kWatchedFree;
      r->watch_slot = static_cast<int8_t>(slot);
      r->watch_generation = g_watched_generation[slot].load(std::memory_order_relaxed);
      r->tid = t.tid;
      r->t_ns = platform::monotonic_ns();
      r->depth = 0;
      g_records->publish(ticket);
    }
    --t.guard;
    break;
  }
  if (t.net <= -static_cast<int64_t>(g_options.window_bytes)) emit_net(t, 0);
}

void on_malloc(void* p, uintptr_t caller) {
  if (p == nullptr) return;
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  const size_t size = malloc_usable_size(p);
  const bool python =
      g_callbacks.is_interpreter_caller != nullptr && g_callbacks.is_interpreter_caller(caller);
  account_alloc(*t, reinterpret_cast<uintptr_t>(p), size, python, size >= kTrackedBlockBytes);
}

void on_free(void* p) {
  if (p == nullptr) return;
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  const size_t size = malloc_usable_size(p);
  account_free(*t, reinterpret_cast<uintptr_t>(p), size, size >= kTrackedBlockBytes);
}

#define SPYGLASS_CALLER reinterpret_cast<uintptr_t>(__builtin_return_address(0))

// The replacements. Each calls the real function through this object's own (unpatched)
// table, so an allocator preloaded by the program is still the one that serves it.
void* hook_malloc(size_t n) {
  void* p = malloc(n);
  on_malloc(p, SPYGLASS_CALLER);
  return p;
}
void* hook_calloc(size_t n, size_t m) {
  void* p = calloc(n, m);
  on_malloc(p, SPYGLASS_CALLER);
  return p;
}
void hook_free(void* p) {
  on_free(p);
  free(p);
}
void* hook_realloc(void* p, size_t n) {
  // The old block is accounted as freed before the call: once realloc returns, another
  // thread may already have been given its address.
  on_free(p);
  void* q = realloc(p, n);
  if (q != nullptr) {
    on_malloc(q, SPYGLASS_CALLER);
  } else if (p != nullptr && n != 0) {
    on_malloc(p, SPYGLASS_CALLER);  // failed: the old block is still there
  }
  return q;
}
int hook_posix_memalign(void** out, size_t alignment, size_t n) {
  const int rc = posix_memalign(out, alignment, n);
  if (rc == 0) on_malloc(*out, SPYGLASS_CALLER);
  return rc;
}
void* hook_aligned_alloc(size_t alignment, size_t n) {
  void* p = aligned_alloc(alignment, n);
  on_malloc(p, SPYGLASS_CALLER);
  return p;
}
void* hook_memalign(size_t alignment, size_t n) {
  void* p = memalign(alignment, n);
  on_malloc(p, SPYGLASS_CALLER);
  return p;
}
void* hook_valloc(size_t n) {
  void* p = valloc(n);
  on_malloc(p, SPYGLASS_CALLER);
  return p;
}
void* hook_pvalloc(size_t n) {
  void* p = pvalloc(n);
  on_malloc(p, SPYGLASS_CALLER);
  return p;
}

void on_copy(size_t n) {
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  bump(g_counters[t->slot].copy_bytes, n, t->slot == 0);
  t->copied += n;
  if (t->copied >= g_options.copy_window_bytes) emit_copy(*t);
}
void* hook_memcpy(void* dst, const void* src, size_t n) {
  on_copy(n);
  return memcpy(dst, src, n);
}
void* hook_memmove(void* dst, const void* src, size_t n) {
  on_copy(n);
  return memmove(dst, src, n);
}

platform::GotPatcher& patcher() {
  static platform::GotPatcher* const made = g_patcher = new platform::GotPatcher(
      {
          {"malloc", reinterpret_cast<void*>(&hook_malloc), reinterpret_cast<void*>(&::malloc)},
          {"calloc", reinterpret_cast<void*>(&hook_calloc), reinterpret_cast<void*>(&::calloc)},
          {"realloc", reinterpret_cast<void*>(&hook_realloc), reinterpret_cast<void*>(&::realloc)},
          {"free", reinterpret_cast<void*>(&hook_free), reinterpret_cast<void*>(&::free)},
          {"posix_memalign", reinterpret_cast<void*>(&hook_posix_memalign),
           reinterpret_cast<void*>(&::posix_memalign)},
          {"aligned_alloc", reinterpret_cast<void*>(&hook_aligned_alloc),
           reinterpret_cast<void*>(&::aligned_alloc)},
          {"memalign", reinterpret_cast<void*>(&hook_memalign),
           reinterpret_cast<void*>(&::memalign)},
          {"valloc", reinterpret_cast<void*>(&hook_valloc), reinterpret_cast<void*>(&::valloc)},
          {"pvalloc", reinterpret_cast<void*>(&hook_pvalloc), reinterpret_cast<void*>(&::pvalloc)},
          {"memcpy", reinterpret_cast<void*>(&hook_memcpy), reinterpret_cast<void*>(&::memcpy)},
          {"memmove", reinterpret_cast<void*>(&hook_memmove), reinterpret_cast<void*>(&::memmove)},
      },
      reinterpret_cast<const void*>(&hook_malloc));
  return *made;
}

}  // namespace

bool start(const HookOptions& options, const HookCallbacks& callbacks) {
  // A forked child inherits running hooks; its own profile may start them again.
  if (g_enabled.load() && g_owner.load() == getpid()) return false;
  g_enabled.store(false);
  g_owner.store(getpid());
  ++t_state.guard;
  records();  // both made before anything can use them, never while hooks run
  patcher();
  g_options = options;
  if (g_options.window_bytes == 0) g_options.window_bytes = kDefaultWindowBytes;
  if (g_options.copy_window_bytes == 0) g_options.copy_window_bytes = 2 * g_options.window_bytes;
  g_callbacks = callbacks;
  const uint32_t used = std::min(g_next_slot.load(), kCounterSlots);
  for (uint32_t i = 0; i < used; ++i) {
    Counters& c = g_counters[i];
    c.tid.store(0);
    c.alloc_bytes.store(0);
    c.alloc_count.store(0);
    c.free_bytes.store(0);
    c.free_count.store(0);
    c.copy_bytes.store(0);
  }
  g_next_slot.store(1);
  g_blocks.clear();
  g_footprint.store(0);
  g_peak.store(0);
  for (auto& w : g_watched) w.store(0);
  g_watch_next.store(0);
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
  g_enabled.store(true, std::memory_order_release);
  patcher().set_active(true);
  patcher().patch_new_objects();
  --t_state.guard;
  return true;
}

void stop() {
  if (!g_enabled.exchange(false)) return;
  ++t_state.guard;
  patcher().restore();
  --t_state.guard;
}

bool active() { return g_enabled.load(std::memory_order_relaxed); }

void patch_new_objects() {
  if (!g_enabled.load() || !patcher().objects_changed()) return;
  patcher().patch_new_objects();
}

void note_arena_alloc(void* p, size_t size) {
  if (p == nullptr) return;
  if (ThreadState* t = counting_thread()) {
    account_alloc(*t, reinterpret_cast<uintptr_t>(p), size, /*python=*/true, /*track=*/true);
  }
}

void note_arena_free(void* p, size_t size) {
  if (p == nullptr) return;
  if (ThreadState* t = counting_thread()) {
    account_free(*t, reinterpret_cast<uintptr_t>(p), size, /*tracked_kind=*/true);
  }
}

void ignore_this_thread() { t_state.ignore = true; }

PauseThisThread::PauseThisThread() { ++t_state.guard; }
PauseThisThread::~PauseThisThread() { --t_state.guard; }

MpscRing<MemoryRecord>& records() {
  static MpscRing<MemoryRecord>* const ring = g_records =
      new MpscRing<MemoryRecord>(kRecordCapacity);
  return *ring;
}

uint32_t epoch() { return g_epoch.load(std::memory_order_acquire); }

void before_fork() { patcher().lock_for_fork(); }
void after_fork_parent() { patcher().unlock_after_fork(); }

std::vector<ThreadTotals> totals() {
  std::vector<ThreadTotals> out;
  const uint32_t used = std::min(g_next_slot.load(), kCounterSlots);
  for (uint32_t i = 0; i < used; ++i) {
    const Counters& c = g_counters[i];
    ThreadTotals t;
    t.tid = c.tid.load();
    t.alloc_bytes = c.alloc_bytes.load();
    t.alloc_count = c.alloc_count.load();
    t.free_bytes = c.free_bytes.load();
    t.free_count = c.free_count.load();
    t.copy_bytes = c.copy_bytes.load();
    if (i == 0 && t.alloc_count == 0 && t.free_count == 0 && t.copy_bytes == 0) continue;
    out.push_back(t);
  }
  return out;
}

const HookOptions& options() { return g_options; }

void after_fork_child() {
  // The hooks keep counting in the child (its totals are its own from here: the forking
  // thread's slot carries on, other threads did not survive); a new start() for the
  // child's own profile restarts them. Nothing drains the records until then.
  ++t_state.guard;
  if (g_records != nullptr) g_records->reset(kRecordCapacity);
  if (g_patcher != nullptr) g_patcher->unlock_after_fork_child();
  --t_state.guard;
}

}  // namespace spyglass::shim
