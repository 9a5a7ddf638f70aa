#include "memory_hooks.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "../platform/clock.hpp"
#include "../platform/got_patcher.hpp"
#include "block_set.hpp"
#include "byte_sampling.hpp"
#include "cuda_copy_hooks.hpp"

namespace spyglass::shim {

thread_local bool t_walking_stack __attribute__((tls_model("initial-exec"))) = false;

namespace {

constexpr size_t kRecordCapacity = 2048;

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
std::atomic<int64_t> g_footprint{0};  // estimated: the weights of the sampled live blocks
std::atomic<int64_t> g_peak{0};
std::atomic<uint32_t> g_next_sample{1};
// The sum of every sample's weight: an unbiased running estimate of the bytes allocated,
// from which the rate grows (see draw_countdown).
std::atomic<uint64_t> g_estimated_bytes{0};
BlockSet g_blocks;                       // large blocks, for the exact counters
SampledSet g_sampled;                    // sampled blocks, until freed
std::atomic<bool> g_tables_used{false};  // whether a start() has used the two sets
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
  int64_t countdown;  // bytes until the next sample
  uint64_t rate;      // the mean the countdown was drawn with: its samples' weights use it
  uint64_t rng;       // xorshift64 state
  uint64_t copied;
  uint64_t cuda_copied[3];  // small CUDA copies gathered, by direction (CopyKind - 1)
};
// Initial-exec: every allocation of the process reads it, and the general-dynamic model a
// shared object gets by default costs a call to __tls_get_addr each time. The hundred or so
// bytes fit in the static TLS space glibc keeps for objects loaded later.
thread_local ThreadState t_state __attribute__((tls_model("initial-exec")));

// An exponential draw with mean R: memoryless, so the bytes already counted towards the
// next sample never change an allocation's chance of being the one. R is the configured
// rate until the run has allocated kTargetSamples of it, then grows with the run so that
// the samples grow only with the logarithm of its volume: a line's relative error then
// depends on its share of the bytes, not on how much the program allocates in all. A
// thread's rate changes only at a draw, and each sample is weighted by the rate it was
// drawn with, so the estimates stay unbiased.
int64_t draw_countdown(ThreadState& t) {
  const uint64_t grown = g_estimated_bytes.load(std::memory_order_relaxed) / kTargetSamples;
  t.rate = std::max(g_options.window_bytes, grown);
  return exponential_countdown(t.rng, t.rate);
}

void bump(std::atomic<uint64_t>& counter, uint64_t n, bool shared) {
  if (shared) {
    counter.fetch_add(n, std::memory_order_relaxed);
  } else {  // one writer: no read-modify-write instruction needed
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
}

// The calling thread's state, current for this start(); nullptr when not counting.
inline ThreadState* counting_thread() {
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
    // Seeded per thread and per start, never zero (xorshift's fixed point).
    t.rng = (static_cast<uint64_t>(t.tid) * 0x9E3779B97F4A7C15ull) ^ platform::monotonic_ns() ^
            (reinterpret_cast<uintptr_t>(&t) << 7) ^ epoch;
    if (t.rng == 0) t.rng = 0x2545F4914F6CDD1Dull;
    t.countdown = draw_countdown(t);
    t.copied = 0;
    for (uint64_t& c : t.cuda_copied) c = 0;
  }
  return &t;
}

// Marks the walk so that the CPU sampler's handler does not nest inside it (see
// walking_stack() in the header).
struct WalkingStack {
  WalkingStack() {
    t_walking_stack = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  ~WalkingStack() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_walking_stack = false;
  }
};

void fill_stack(ThreadState& t, MemoryRecord* r) {
  const WalkingStack walking;
  r->depth =
      g_callbacks.capture != nullptr
          ? g_callbacks.capture(t.slot != 0 ? t.slot : static_cast<uint32_t>(t.tid) % kCounterSlots,
                                t.tid, r->frames, &r->truncated)
          : 0;
}

bool raise_peak(int64_t footprint) {
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (footprint > peak) {
    if (g_peak.compare_exchange_weak(peak, footprint, std::memory_order_acq_rel)) return true;
  }
  return false;
}

// The slow path of a sampled allocation: remembered until freed, and recorded with its
// stack.
void emit_sample(ThreadState& t, uintptr_t block, size_t size, bool python) {
  ++t.guard;
  const double w = sample_weight(size, t.rate);
  const auto weight = static_cast<int64_t>(w + 0.5);
  g_estimated_bytes.fetch_add(static_cast<uint64_t>(weight), std::memory_order_relaxed);
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    const uint32_t id = g_next_sample.fetch_add(1, std::memory_order_relaxed);
    // Remembered before the record is queued: its free cannot come before malloc returns,
    // and its record is then ahead of the free's in the ring.
    const bool tracked = g_sampled.insert(block, {static_cast<uint64_t>(weight), id});
    const int64_t footprint =
        tracked ? g_footprint.fetch_add(weight, std::memory_order_acq_rel) + weight
                : g_footprint.load(std::memory_order_relaxed);
    r->epoch = t.epoch;
    r->event = MemoryEvent::kAlloc;
    r->new_peak = tracked && raise_peak(footprint);
    r->tracked = tracked;
    r->sample_id = id;
    r->tid = t.tid;
    r->t_ns = platform::monotonic_ns();
    r->net_bytes = weight;
    r->python_bytes = python ? static_cast<uint64_t>(weight) : 0;
    r->copy_bytes = 0;
    r->footprint_bytes = footprint;
    r->truncated = false;
    fill_stack(t, r);
    g_records->publish(ticket);
  }
  --t.guard;
}

// Every allocation of any kind: a countdown step, and rarely a sample.
inline void sample_alloc(ThreadState& t, uintptr_t block, size_t size, bool python) {
  t.countdown -= static_cast<int64_t>(size);
  if (t.countdown > 0) return;
  emit_sample(t, block, size, python);  // weighted with the rate this countdown was drawn at
  t.countdown = draw_countdown(t);
}

// Every free of any kind: only a sampled block's is news. True when it was one.
bool sample_free(ThreadState& t, uintptr_t block) {
  if (!g_sampled.maybe_contains(block)) return false;
  SampledSet::Entry e{};
  if (!g_sampled.erase(block, &e)) return false;
  ++t.guard;
  const auto weight = static_cast<int64_t>(e.weight);
  const int64_t footprint = g_footprint.fetch_sub(weight, std::memory_order_acq_rel) - weight;
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    r->epoch = t.epoch;
    r->event = MemoryEvent::kSampledFree;
    r->new_peak = false;
    r->tracked = true;
    r->sample_id = e.id;
    r->tid = t.tid;
    r->t_ns = platform::monotonic_ns();
    r->net_bytes = -weight;
    r->python_bytes = 0;
    r->copy_bytes = 0;
    r->footprint_bytes = footprint;
    r->truncated = false;
    r->depth = 0;
    g_records->publish(ticket);
  }
  --t.guard;
  return true;
}

void emit_copy(ThreadState& t, uint64_t bytes, CopyKind kind) {
  ++t.guard;
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    r->epoch = t.epoch;
    r->event = MemoryEvent::kCopy;
    r->new_peak = false;
    r->tracked = false;
    r->sample_id = 0;
    r->tid = t.tid;
    r->t_ns = platform::monotonic_ns();
    r->net_bytes = 0;
    r->python_bytes = 0;
    r->copy_bytes = bytes;
    r->copy_kind = kind;
    r->footprint_bytes = g_footprint.load(std::memory_order_relaxed);
    r->truncated = false;
    fill_stack(t, r);
    g_records->publish(ticket);
  }
  --t.guard;
}

void on_malloc(void* p, size_t requested, uintptr_t caller) {
  if (p == nullptr) return;
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  const size_t usable = malloc_usable_size(p);
  const auto block = reinterpret_cast<uintptr_t>(p);
  // The exact counters (usable sizes, every call); a large block they cannot remember is
  // left out of them, so that its free is not subtracted either.
  if (usable < kTrackedBlockBytes || g_blocks.insert(block)) {
    Counters& c = g_counters[t->slot];
    bump(c.alloc_bytes, usable, t->slot == 0);
    bump(c.alloc_count, 1, t->slot == 0);
  }
  const bool python =
      g_callbacks.is_interpreter_caller != nullptr && g_callbacks.is_interpreter_caller(caller);
  // Sampled by the size asked for, as memray and tracemalloc count.
  sample_alloc(*t, block, requested, python);
}

// A large block the hooks never saw allocated (made before start) is not ours to count.
void on_free(void* p) {
  if (p == nullptr) return;
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  const auto block = reinterpret_cast<uintptr_t>(p);
  const size_t size = malloc_usable_size(p);
  if (size < kTrackedBlockBytes || g_blocks.erase(block)) {
    Counters& c = g_counters[t->slot];
    bump(c.free_bytes, size, t->slot == 0);
    bump(c.free_count, 1, t->slot == 0);
  }
  sample_free(*t, block);
}

#define SPYGLASS_CALLER reinterpret_cast<uintptr_t>(__builtin_return_address(0))

// The replacements. Each calls the real function through this object's own (unpatched)
// table, so an allocator preloaded by the program is still the one that serves it.
void* hook_malloc(size_t n) {
  void* p = malloc(n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_calloc(size_t n, size_t m) {
  void* p = calloc(n, m);
  on_malloc(p, n * m, SPYGLASS_CALLER);
  return p;
}
void hook_free(void* p) {
  on_free(p);
  free(p);
}
void* hook_realloc(void* p, size_t n) {
  // The old block is accounted as freed before the call: once realloc returns, another
  // thread may already have been given its address.
  const size_t old = p != nullptr ? malloc_usable_size(p) : 0;
  on_free(p);
  void* q = realloc(p, n);
  if (q != nullptr) {
    on_malloc(q, n, SPYGLASS_CALLER);
  } else if (p != nullptr && n != 0) {
    on_malloc(p, old, SPYGLASS_CALLER);  // failed: the old block is still there
  }
  return q;
}
int hook_posix_memalign(void** out, size_t alignment, size_t n) {
  const int rc = posix_memalign(out, alignment, n);
  if (rc == 0) on_malloc(*out, n, SPYGLASS_CALLER);
  return rc;
}
void* hook_aligned_alloc(size_t alignment, size_t n) {
  void* p = aligned_alloc(alignment, n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_memalign(size_t alignment, size_t n) {
  void* p = memalign(alignment, n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_valloc(size_t n) {
  void* p = valloc(n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_pvalloc(size_t n) {
  void* p = pvalloc(n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}

// Anonymous mappings are allocations (native); file mappings are not. Only calls through
// an object's offset table arrive here: the C allocator's own mmaps for large blocks are
// calls inside the C library, which never go through a table, so nothing is counted twice.
void on_map(void* p, size_t length, int flags) {
  if (p == MAP_FAILED || (flags & MAP_ANONYMOUS) == 0) return;
  if (ThreadState* t = counting_thread()) {
    sample_alloc(*t, reinterpret_cast<uintptr_t>(p), length, /*python=*/false);
  }
}
void on_unmap(void* p) {
  if (p == nullptr || p == MAP_FAILED) return;
  if (ThreadState* t = counting_thread()) sample_free(*t, reinterpret_cast<uintptr_t>(p));
}
void* hook_mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  void* p = mmap(addr, length, prot, flags, fd, offset);
  on_map(p, length, flags);
  return p;
}
int hook_munmap(void* addr, size_t length) {
  // A partial unmap of a sampled mapping ends all of it: mappings are seldom trimmed.
  on_unmap(addr);
  return munmap(addr, length);
}
void* hook_mremap(void* old, size_t old_length, size_t length, int flags, ...) {
  void* wanted = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list args;
    va_start(args, flags);
    wanted = va_arg(args, void*);
    va_end(args);
  }
  // As realloc: the old mapping is freed, the new one allocated. Only a mapping the hooks
  // sampled is known to be anonymous; another one's new size is left out.
  bool sampled = false;
  if (ThreadState* t = counting_thread())
    sampled = sample_free(*t, reinterpret_cast<uintptr_t>(old));
  void* p = mremap(old, old_length, length, flags, wanted);
  if (p != MAP_FAILED && sampled) on_map(p, length, MAP_ANONYMOUS);
  return p;
}

// Objects loaded while the hooks run are patched before dlopen returns, so their first
// allocation after it is seen.
void after_dlopen() {
  if (!g_enabled.load(std::memory_order_acquire) || g_patcher == nullptr) return;
  ++t_state.guard;
  g_patcher->patch_new_objects();
  if (g_options.cuda_copies) cuda::refresh();
  --t_state.guard;
}
void* hook_dlopen(const char* file, int mode) {
  void* handle = platform::dlopen_for(SPYGLASS_CALLER, file, mode);
  if (handle != nullptr) after_dlopen();
  return handle;
}
void* hook_dlmopen(Lmid_t namespace_id, const char* file, int mode) {
  void* handle = dlmopen(namespace_id, file, mode);
  if (handle != nullptr) after_dlopen();
  return handle;
}

void on_copy(size_t n) {
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  bump(g_counters[t->slot].copy_bytes, n, t->slot == 0);
  t->copied += n;
  if (t->copied >= g_options.copy_window_bytes) {
    emit_copy(*t, t->copied, CopyKind::kHost);
    t->copied = 0;
  }
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
          {"mmap", reinterpret_cast<void*>(&hook_mmap), reinterpret_cast<void*>(&::mmap)},
          {"mmap64", reinterpret_cast<void*>(&hook_mmap), reinterpret_cast<void*>(&::mmap64)},
          {"munmap", reinterpret_cast<void*>(&hook_munmap), reinterpret_cast<void*>(&::munmap)},
          {"mremap", reinterpret_cast<void*>(&hook_mremap), reinterpret_cast<void*>(&::mremap)},
          {"dlopen", reinterpret_cast<void*>(&hook_dlopen), reinterpret_cast<void*>(&::dlopen)},
          {"dlmopen", reinterpret_cast<void*>(&hook_dlmopen), reinterpret_cast<void*>(&::dlmopen)},
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
  if (g_options.copy_window_bytes == 0) g_options.copy_window_bytes = kDefaultCopyWindowBytes;
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
  // A process's first start finds the tables as the loader zeroed them: clearing them
  // would touch 6.5 MiB of pages, a millisecond of every profiled process's start-up. A
  // later start, or one in a forked child (which inherits the tables' contents), clears.
  if (g_tables_used.exchange(true)) {
    g_blocks.clear();
    g_sampled.clear();
  }
  g_footprint.store(0);
  g_peak.store(0);
  g_next_sample.store(1);
  g_estimated_bytes.store(0);
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
  g_enabled.store(true, std::memory_order_release);
  patcher().set_active(true);
  patcher().patch_new_objects();
  if (g_options.cuda_copies) cuda::refresh();
  --t_state.guard;
  return true;
}

void stop() {
  if (!g_enabled.exchange(false)) return;
  ++t_state.guard;
  patcher().restore();
  cuda::restore();
  --t_state.guard;
}

bool active() { return g_enabled.load(std::memory_order_relaxed); }

void patch_new_objects() {
  if (!g_enabled.load() || !patcher().objects_changed()) return;
  patcher().patch_new_objects();
  if (g_options.cuda_copies) cuda::refresh();
}

// Copies of a window or more are charged whole to the line making them; smaller ones are
// gathered per thread and direction, as the memcpy family's are.
void record_cuda_copy(uint64_t bytes, CopyKind kind) {
  ThreadState* t = counting_thread();
  if (t == nullptr || kind == CopyKind::kHost) return;
  if (bytes >= g_options.copy_window_bytes) {
    emit_copy(*t, bytes, kind);
    return;
  }
  uint64_t& gathered = t->cuda_copied[static_cast<int>(kind) - 1];
  gathered += bytes;
  if (gathered >= g_options.copy_window_bytes) {
    emit_copy(*t, gathered, kind);
    gathered = 0;
  }
}

// Python's allocator, wrapped: `ctx` is the domain's original allocator. It runs with the
// hooks paused, so the mallocs and arena mmaps pymalloc makes are not counted again; the
// block it returns is counted once, here, as Python's. Every object allocation of the
// program passes here, so it is one function with one thread-local access.
void* python_malloc(void* ctx, size_t n) {
  const auto* orig = static_cast<const ForeignAllocator*>(ctx);
  ThreadState& t = t_state;
  ++t.guard;
  void* p = orig->malloc(orig->ctx, n);
  --t.guard;
  if (p != nullptr) {
    if (ThreadState* c = counting_thread())
      sample_alloc(*c, reinterpret_cast<uintptr_t>(p), n, true);
  }
  return p;
}

void* python_calloc(void* ctx, size_t count, size_t size) {
  const auto* orig = static_cast<const ForeignAllocator*>(ctx);
  ThreadState& t = t_state;
  ++t.guard;
  void* p = orig->calloc(orig->ctx, count, size);
  --t.guard;
  if (p != nullptr) {
    if (ThreadState* c = counting_thread()) {
      sample_alloc(*c, reinterpret_cast<uintptr_t>(p), count * size, true);
    }
  }
  return p;
}

void* python_realloc(void* ctx, void* old, size_t n) {
  const auto* orig = static_cast<const ForeignAllocator*>(ctx);
  ThreadState* c = counting_thread();
  // Before the call: once freed, its address may be another thread's.
  if (c != nullptr && old != nullptr) sample_free(*c, reinterpret_cast<uintptr_t>(old));
  ThreadState& t = t_state;
  ++t.guard;
  void* p = orig->realloc(orig->ctx, old, n);
  --t.guard;
  // A failed realloc keeps the old block, now unsampled: its free is then no news.
  if (p != nullptr && c != nullptr) sample_alloc(*c, reinterpret_cast<uintptr_t>(p), n, true);
  return p;
}

void python_free(void* ctx, void* p) {
  const auto* orig = static_cast<const ForeignAllocator*>(ctx);
  // Most frees are of blocks never sampled: the filter says so without the thread state.
  if (g_sampled.maybe_contains(reinterpret_cast<uintptr_t>(p))) {
    if (ThreadState* c = counting_thread()) sample_free(*c, reinterpret_cast<uintptr_t>(p));
  }
  ThreadState& t = t_state;
  ++t.guard;
  orig->free(orig->ctx, p);
  --t.guard;
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

void before_fork() {
  patcher().lock_for_fork();
  cuda::before_fork();
}
void after_fork_parent() {
  cuda::after_fork_parent();
  patcher().unlock_after_fork();
}

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
  cuda::after_fork_child();
  --t_state.guard;
}

}  // namespace spyglass::shim
