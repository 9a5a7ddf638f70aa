// The hooks' state and sampling, and their start, stop and fork handling; the replaced C
// library functions are in libc_hooks.cpp, the shared fast paths in hook_state.hpp.
#include "memory_hooks.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "cuda_copy_hooks.hpp"
#include "hook_state.hpp"

namespace spyglass::shim {

constinit thread_local bool t_walking_stack __attribute__((tls_model("initial-exec"))) = false;

namespace hooks {

// Everything the hooks touch is constant-initialised and never destroyed: allocations
// still arrive while the process runs its exit handlers and static destructors.
//
// Every hooked call of every thread reads g_gate; each sample writes the four after it.
// Each of those starts a cache line of its own, so that no sample on one core takes the
// gate's line away from the others (g_next_sample had shared it).
Counters g_counters[kCounterSlots];
alignas(64) std::atomic<uint32_t> g_next_slot{1};
std::atomic<bool> g_enabled{false};
std::atomic<pid_t> g_owner{0};  // the process that started the hooks
std::atomic<uint32_t> g_epoch{0};
alignas(64) std::atomic<uint64_t> g_gate{kGateClosed};
alignas(64) std::atomic<int64_t> g_footprint{0};  // estimated: the sampled live blocks' weights
alignas(64) std::atomic<int64_t> g_peak{0};
alignas(64) std::atomic<uint32_t> g_next_sample{1};
// The sum of every sample's weight: an unbiased running estimate of the bytes allocated,
// from which the rate grows (see draw_countdown).
alignas(64) std::atomic<uint64_t> g_estimated_bytes{0};
BlockSet g_blocks;                       // large blocks, for the exact counters
SampledSet g_sampled;                    // sampled blocks, until freed
std::atomic<bool> g_tables_used{false};  // whether a start() has used the two sets
HookOptions g_options;
HookCallbacks g_callbacks{};
MpscRing<MemoryRecord>* g_records = nullptr;
platform::GotPatcher* g_patcher = nullptr;

constinit thread_local ThreadState t_state __attribute__((tls_model("initial-exec"))){};

}  // namespace hooks

using namespace hooks;  // NOLINT(google-build-using-namespace): this file's own state

namespace {

constexpr size_t kRecordCapacity = 2048;
static_assert(kRecordCapacity >= 8, "backlog_factor (hook_state.hpp) reads the ring by eighths");

void records_filling() {
  if (g_callbacks.records_filling != nullptr) g_callbacks.records_filling();
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

// Publishes a record; the collector is asked to drain early each time another quarter of
// the ring has been claimed: a tick every interval cannot keep up with a burst, and a full
// ring drops what comes next (20 arrays of 8 MB made right after a burst of string
// concatenation were missing from the profile).
void publish(uint64_t ticket) {
  g_records->publish(ticket);
  if ((ticket & (g_records->capacity() / 4 - 1)) == 0) records_filling();
}

// Whether the thread waited since its last allocation sample: blocked of its own accord
// (asleep, on I/O, on a lock) at least once, and off its CPU for kOffCpuBetweenExecutionsNs
// or more in all. That is what separates two executions of a loop's only allocating line
// (memory_stats.hpp). Time off the CPU alone is not: on a loaded machine a thread building
// one structure is preempted, and its one execution was cut into many. Off the CPU that
// long needs that much wall time since the last sample: samples closer together (a busy
// loop's, thousands a second) read no clock; the others read the thread's CPU clock, its
// count of blocks and its time queued for a CPU (five system calls, at most a thousand
// times a second a thread; read at every sample, the first two put 10 % system time
// on a pool worker's allocating line).
constexpr uint64_t kOffCpuBetweenExecutionsNs = 1'000'000;
bool waited_since_last_sample(ThreadState& t, uint64_t now_ns) {
  const bool first = t.sample_wall_ns == 0;
  const uint64_t gap = now_ns - t.sample_wall_ns;
  t.sample_wall_ns = now_ns;
  if (!first && gap < kOffCpuBetweenExecutionsNs) return false;
  // The CPU clock, not getrusage's times: those lag by up to a scheduler tick (1-4 ms),
  // more than the threshold.
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return false;
  const uint64_t cpu = platform::this_thread_cpu_ns();
  const auto blocked = static_cast<uint64_t>(usage.ru_nvcsw);
  const uint64_t forced = g_counters[t.slot].forced_waits.load(std::memory_order_relaxed);
  // Since the clocks were last read: the samples between were all close together. Each
  // time our collector took the GIL from this thread meanwhile, it had to let it go and
  // wait for it back (up to two voluntary switches): not the program's blocking. On a busy
  // CPU the new code's first run, whose call sites the collector works out under the GIL,
  // was split so into executions, and a list built in one go was called a leak.
  // Nor is time off the CPU that was no wait of its own: waiting for the GIL while the
  // program's other threads ran, or queued for a CPU (a list built once in a thread beside
  // another busy one was split into executions at each turn of the GIL, and called a leak
  // in 4 of 7 runs).
  // (A thread queued as a GIL wait ends is counted in both: a wait of its own shorter than
  // that can go unseen on a busy CPU, where a thread's turns for the GIL were splits.)
  uint64_t queued = t.read_delay_ns;
  platform::thread_run_delay_ns(t.tid, &queued);
  const uint64_t wall = now_ns - t.read_wall_ns;
  const uint64_t not_waiting =
      (cpu - t.read_cpu_ns) + (t.gil_wait_ns - t.read_gil_wait_ns) + (queued - t.read_delay_ns);
  const bool blocked_since = blocked - t.read_blocked > 2 * (forced - t.read_forced);
  t.read_wall_ns = now_ns;
  t.read_cpu_ns = cpu;
  t.read_blocked = blocked;
  t.read_forced = forced;
  t.read_gil_wait_ns = t.gil_wait_ns;
  t.read_delay_ns = queued;
  return !first && blocked_since && wall > not_waiting &&
         wall - not_waiting >= kOffCpuBetweenExecutionsNs;
}

// Every field of a record, for `event` (the rest is each kind's own): records are reused,
// and a field a kind leaves alone would carry an earlier record's value.
void begin_record(MemoryRecord* r, const ThreadState& t, MemoryEvent event, uint32_t id) {
  r->epoch = gate_epoch(t);
  r->event = event;
  r->new_peak = false;
  r->tracked = false;
  r->after_wait = false;
  r->reserved = false;
  r->sample_id = id;
  r->depth = 0;
  r->copy_kind = CopyKind::kHost;
  r->tid = t.tid;
  r->t_ns = platform::monotonic_ns();
  r->net_bytes = 0;
  r->python_bytes = 0;
  r->copy_bytes = 0;
  r->footprint_bytes = g_footprint.load(std::memory_order_relaxed);
  r->truncated = false;
}

bool raise_peak(int64_t footprint) {
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (footprint > peak) {
    if (g_peak.compare_exchange_weak(peak, footprint, std::memory_order_acq_rel)) return true;
  }
  return false;
}

}  // namespace

namespace hooks {

// The slow path of a sampled allocation: remembered until freed, and recorded with its
// stack.
void emit_sample(ThreadState& t, uintptr_t block, size_t size, bool python) {
  enter_own_work(t);
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
    begin_record(r, t, MemoryEvent::kAlloc, id);
    r->new_peak = tracked && raise_peak(footprint);
    r->tracked = tracked;
    r->after_wait = waited_since_last_sample(t, r->t_ns);
    r->net_bytes = weight;
    r->python_bytes = python ? static_cast<uint64_t>(weight) : 0;
    r->footprint_bytes = footprint;
    fill_stack(t, r);
    publish(ticket);
  } else {
    // No room for its record: its line will not have it, but the footprint does, and
    // its free is reported (a record of a sample no line holds is passed over).
    const uint32_t id = g_next_sample.fetch_add(1, std::memory_order_relaxed);
    if (g_sampled.insert(block, {static_cast<uint64_t>(weight), id})) {
      raise_peak(g_footprint.fetch_add(weight, std::memory_order_acq_rel) + weight);
    }
    records_filling();
  }
  leave_own_work(t);
}

// A reservation's record: the stack that mapped it, and no bytes (reserved_maps.hpp).
void emit_reservation(ThreadState& t, uint32_t id) {
  enter_own_work(t);
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    begin_record(r, t, MemoryEvent::kAlloc, id);
    r->reserved = true;
    fill_stack(t, r);
    publish(ticket);
  } else {
    records_filling();
  }
  leave_own_work(t);
}

ThreadState* start_counting(ThreadState& t, uint64_t gate) {
  if (gate == kGateClosed || (t.gate & kGateLowHalf) != 0) return nullptr;
  t.gate = gate;  // the epoch was stale, nothing else
  const uint32_t epoch = gate_epoch(t);
  t.tid = static_cast<pid_t>(syscall(SYS_gettid));
  const uint32_t slot = g_next_slot.fetch_add(1, std::memory_order_relaxed);
  t.slot = slot < kCounterSlots ? slot : 0;
  if (t.slot != 0) g_counters[t.slot].tid.store(t.tid, std::memory_order_relaxed);
  // Seeded per thread and per start, never zero (xorshift's fixed point).
  t.rng = (static_cast<uint64_t>(t.tid) * 0x9E3779B97F4A7C15ull) ^ platform::monotonic_ns() ^
          (reinterpret_cast<uintptr_t>(&t) << 7) ^ epoch;
  if (t.rng == 0) t.rng = 0x2545F4914F6CDD1Dull;
  t.countdown = draw_countdown(t);
  start_copy_window(t);
  t.sample_wall_ns = 0;
  t.read_wall_ns = 0;
  t.read_cpu_ns = 0;
  t.read_blocked = 0;
  t.read_forced = g_counters[t.slot].forced_waits.load(std::memory_order_relaxed);
  for (uint64_t& c : t.cuda_copied) c = 0;
  return &t;
}

bool forget_sample(ThreadState& t, uintptr_t block) {
  SampledSet::Entry e{};
  if (!g_sampled.erase(block, &e)) return false;
  enter_own_work(t);
  const auto weight = static_cast<int64_t>(e.weight);
  const int64_t footprint = g_footprint.fetch_sub(weight, std::memory_order_acq_rel) - weight;
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    begin_record(r, t, MemoryEvent::kSampledFree, e.id);
    r->tracked = true;
    r->net_bytes = -weight;
    r->footprint_bytes = footprint;
    publish(ticket);
  } else {
    records_filling();
  }
  leave_own_work(t);
  return true;
}

void emit_copy(ThreadState& t, uint64_t bytes, CopyKind kind) {
  enter_own_work(t);
  uint64_t ticket = 0;
  if (MemoryRecord* r = g_records->claim(&ticket)) {
    begin_record(r, t, MemoryEvent::kCopy, 0);
    r->copy_bytes = bytes;
    r->copy_kind = kind;
    fill_stack(t, r);
    publish(ticket);
  } else {
    records_filling();
  }
  leave_own_work(t);
}

}  // namespace hooks

bool start(const HookOptions& options, const HookCallbacks& callbacks) {
  // A forked child inherits running hooks; its own profile may start them again.
  if (g_enabled.load() && g_owner.load() == getpid()) return false;
  g_gate.store(kGateClosed, std::memory_order_release);
  g_enabled.store(false);
  g_owner.store(getpid());
  enter_own_work(t_state);
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
    c.copy_left.store(0);
    c.copy_window.store(0);
    c.forced_waits.store(0);
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
  clear_reserved();
  g_estimated_bytes.store(0);
  uint32_t epoch = g_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  // Epoch 0 would open the gate of every thread that has never counted (their gate is 0).
  if (epoch == 0) epoch = g_epoch.fetch_add(1, std::memory_order_acq_rel) + 1;
  g_enabled.store(true, std::memory_order_release);
  g_gate.store(open_gate(epoch), std::memory_order_release);
  patcher().set_active(true);
  patcher().patch_new_objects();
  if (g_options.cuda_copies) cuda::refresh();
  leave_own_work(t_state);
  return true;
}

void stop() {
  if (!g_enabled.exchange(false)) return;
  g_gate.store(kGateClosed, std::memory_order_release);
  enter_own_work(t_state);
  patcher().restore();
  cuda::restore();
  leave_own_work(t_state);
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
  enter_own_work(t);
  void* p = orig->malloc(orig->ctx, n);
  leave_own_work(t);
  if (p != nullptr) {
    if (ThreadState* c = counting_thread())
      sample_alloc(*c, reinterpret_cast<uintptr_t>(p), n, true);
  }
  return p;
}

void* python_calloc(void* ctx, size_t count, size_t size) {
  const auto* orig = static_cast<const ForeignAllocator*>(ctx);
  ThreadState& t = t_state;
  enter_own_work(t);
  void* p = orig->calloc(orig->ctx, count, size);
  leave_own_work(t);
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
  enter_own_work(t);
  void* p = orig->realloc(orig->ctx, old, n);
  leave_own_work(t);
  // A failed realloc keeps the old block, now unsampled: its free is then no news.
  if (p != nullptr && c != nullptr) sample_alloc(*c, reinterpret_cast<uintptr_t>(p), n, true);
  return p;
}

void python_free(void* ctx, void* p) {
  const auto* orig = static_cast<const ForeignAllocator*>(ctx);
  // Most frees are of blocks never sampled: the filter says so without the thread state.
  if (g_sampled.maybe_contains(reinterpret_cast<uintptr_t>(p))) {
    if (ThreadState* c = counting_thread()) forget_sample(*c, reinterpret_cast<uintptr_t>(p));
  }
  ThreadState& t = t_state;
  enter_own_work(t);
  orig->free(orig->ctx, p);
  leave_own_work(t);
}

void note_forced_wait(pid_t tid) {
  // The slot of a thread that has counted since start(); one past them shares slot 0.
  const uint32_t used = std::min(g_next_slot.load(std::memory_order_relaxed), kCounterSlots);
  uint32_t slot = 0;
  for (uint32_t i = 1; i < used; ++i) {
    if (g_counters[i].tid.load(std::memory_order_relaxed) == tid) {
      slot = i;
      break;
    }
  }
  g_counters[slot].forced_waits.fetch_add(1, std::memory_order_relaxed);
}

void ignore_this_thread() { t_state.gate |= kGateIgnore; }

PauseThisThread::PauseThisThread() { enter_own_work(t_state); }
PauseThisThread::~PauseThisThread() { leave_own_work(t_state); }

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
    // Exact once the thread has stopped copying; while it copies, the three are read at
    // slightly different moments.
    const int64_t in_window =
        static_cast<int64_t>(c.copy_window.load()) - c.copy_left.load(std::memory_order_relaxed);
    t.copy_bytes = c.copy_bytes.load() + static_cast<uint64_t>(std::max<int64_t>(in_window, 0));
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
  enter_own_work(t_state);
  g_sampled.after_fork_child();
  if (g_records != nullptr) g_records->reset(kRecordCapacity);
  reserved_after_fork_child();
  if (g_patcher != nullptr) g_patcher->unlock_after_fork_child();
  cuda::after_fork_child();
  leave_own_work(t_state);
}

}  // namespace spyglass::shim
