#define Py_BUILD_CORE 1
#include "cpu_engine.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <thread>

#include "../core/thread_registry.hpp"
#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "../platform/fault_guard.hpp"
#include "../platform/signals.hpp"
#include "collection.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

namespace {

int g_signo = -1;  // the handler stays installed for the life of the process: a queued
                   // signal arriving after stop must not hit the default (fatal) action

// Every unwind table published, kept for the life of the process (a handler may be reading
// any of them) and reused by later runs: compiled objects are shared from the latest.
std::vector<std::unique_ptr<platform::UnwindTables>>& unwind_tables() {
  static auto* all = new std::vector<std::unique_ptr<platform::UnwindTables>>();
  return *all;
}

// The interpreter's eval loop, where a native chain meets the Python frames: found by its
// symbol (exported by every CPython the project supports), with its size.
void eval_loop_range(uintptr_t* begin, uintptr_t* end) {
  *begin = 0;
  *end = 0;
  void* address = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  Dl_info info;
  void* entry = nullptr;
  if (address == nullptr || dladdr1(address, &info, &entry, RTLD_DL_SYMENT) == 0) return;
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  if (sym == nullptr || sym->st_size == 0) return;
  *begin = reinterpret_cast<uintptr_t>(address);
  *end = *begin + sym->st_size;
}

}  // namespace

int sample_signal() { return g_signo; }

CpuEngine::CpuEngine(const EngineContext& context, uint64_t interval_ns,
                     std::vector<int> call_opcodes)
    : Engine(context), interval_ns_(interval_ns), call_opcodes_(std::move(call_opcodes)) {}

CpuEngine::~CpuEngine() {
  // Address ranges stay readable for good: a signal handler, or an allocation hook in a
  // forked child that never stopped them, may still be reading the latest.
  for (auto& r : ranges_) (void)r.release();
}

void CpuEngine::start(uint64_t) {
  if (g_signo < 0) g_signo = platform::install_sample_handler(on_sample_signal);
  if (g_signo < 0) throw std::runtime_error("no free real-time signal to sample with");
  platform::install_fault_handler();
  SamplingState& state = sampling_state();
  state.self.store(getpid(), std::memory_order_relaxed);
  state.guard_first.store(platform::fault_handler_first(), std::memory_order_relaxed);
  const int probe = 1;
  int read = 0;
  state.checked_reads.store(platform::read_own_memory(getpid(), &probe, &read, sizeof(read)),
                            std::memory_order_relaxed);
  state.call_opcode.fill(false);
  for (int op : call_opcodes_) {
    if (op >= 0 && op < 256) state.call_opcode[static_cast<size_t>(op)] = true;
  }
  kinds_.configure(young_ns());
  kind_targets_.clear();
  rng_.seed(std::random_device{}());
  dropped_ = 0;
  seen_loader_generation_ = 0;
  seen_ranges_generation_ = platform::loader_generation();
  rebuild_ranges();
  libc_table_wanted_ = false;
}

void CpuEngine::rebuild_ranges() {
  auto ranges = std::make_unique<platform::CodeRanges>();
  ranges->rebuild(reinterpret_cast<const void*>(&PyEval_SaveThread));
  std::lock_guard<std::mutex> lock(ranges_mutex_);
  sampling_state().ranges.store(ranges.get(), std::memory_order_release);
  ranges_.push_back(std::move(ranges));
  // Objects are compiled only once samples are found in them (see upkeep): here the tables
  // keep those compiled before that are still loaded.
  const std::vector<uintptr_t> none;
  publish_unwind_tables(none);
}

bool CpuEngine::publish_unwind_tables(const std::vector<uintptr_t>& wanted, bool every) {
  uintptr_t stop_begin = 0;
  uintptr_t stop_end = 0;
  eval_loop_range(&stop_begin, &stop_end);
  auto& all = unwind_tables();
  size_t compiled = 0;
  const platform::UnwindTables* previous = all.empty() ? nullptr : all.back().get();
  auto tables = platform::UnwindTables::build(previous, stop_begin, stop_end,
                                              every ? nullptr : &wanted, &compiled, &stopping_);
  if (tables == nullptr) return false;  // the run is ending
  // Nothing new: the tables in use serve, unless they are now known to be complete (which
  // ends the leaf scans' requests for every object).
  const bool newly_complete = tables->complete() && (previous == nullptr || !previous->complete());
  if (compiled == 0 && (every || !wanted.empty()) && !newly_complete) return false;
  sampling_state().unwind.store(tables.get(), std::memory_order_release);
  all.push_back(std::move(tables));
  return true;
}

bool CpuEngine::thread_started(const ProfiledThread& thread, const ThreadStart& how) {
  ThreadSlot& slot = thread_slot_table()[thread.slot];
  if (!slot.ring) slot.ring = std::make_unique<SpscRing<SampleRecord>>(kRingCapacity);
  if (how.by_itself) {
    slot.last_user_ns = how.cpu.user_ns;
    slot.last_system_ns = how.cpu.system_ns;
    slot.primed = true;
  } else {
    // A thread found after it started counts from its start when that was in the run: a
    // C library's thread that lived 50 ms of CPU lost the 5-10 ms before a scan found it.
    slot.baseline_cpu_ns = how.born_while_profiled ? 0 : how.cpu_ns;
    slot.primed = false;
  }
  const uint32_t cookie = make_cookie(slot.generation, thread.slot);
  slot.cookie.store(cookie, std::memory_order_release);
  CpuThread cpu;
  cpu.slot = thread.slot;
  cpu.dropped_base = slot.ring->dropped();
  // A thread a scan found after it started in the run (a C library's) also has its first
  // sample soon, carrying its CPU since it started: one found with less than an interval
  // of its work left had none, and all it had done was lost (24 threads of 50 ms each,
  // started one after another, with two other programs computing: a third of their CPU).
  const bool soon = how.by_itself || how.born_while_profiled;
  if (!platform::arm_thread_cpu_timer(thread.tid, g_signo, static_cast<int>(cookie), interval_ns_,
                                      &cpu.timer, soon ? kFirstSampleNs : 0)) {
    slot.cookie.store(0);
    return false;
  }
  if (how.by_itself && how.has_target) make_young(thread.tid, cookie, cpu);
  if (!how.by_itself && how.born_while_profiled) {
    cpu.watch_until_ns = how.wall_ns + kWatchNs;
    cpu.watched_cpu_ns = how.cpu_ns;
  }
  threads_.emplace(thread.tid, cpu);
  if (threads_.size() > 1 && !libc_table_wanted_) {
    // With a second thread, the GIL changes hands: a thread handing it over or asking for
    // it back is in pthread's code, called by the interpreter, and is told from a library
    // at work there only by unwinding (signal_handler.cpp). libc's table is built now, by
    // the collector thread, rather than after the first such sample was taken for native
    // (about 10 ms of the collector's CPU, which one thread alone does not pay).
    libc_table_wanted_ = true;
    std::lock_guard<std::mutex> lock(unwind_mutex_);
    unwind_wanted_.push_back(reinterpret_cast<uintptr_t>(&pthread_cond_signal));
  }
  return true;
}

bool CpuEngine::make_young(pid_t tid, uint32_t cookie, CpuThread& cpu) {
  // The periodic timer is armed first: when timers run short, a thread keeps that one.
  if (!platform::arm_thread_cpu_timer_once(tid, g_signo, static_cast<int>(cookie | kFirstTickFlag),
                                           kFirstSampleNs, &cpu.first_tick)) {
    return false;
  }
  const uint64_t first =
      std::uniform_int_distribution<uint64_t>(kFirstSampleNs, interval_ns_ - 1)(rng_);
  if (!platform::rearm_thread_cpu_timer(&cpu.timer, first, interval_ns_)) {
    platform::disarm_thread_cpu_timer(&cpu.first_tick);
    return false;
  }
  cpu.young = true;
  cpu.position_ns = 0;
  return true;
}

void CpuEngine::thread_claimed(const ProfiledThread& thread) {
  // A scan found the thread before it registered itself: its timer ran from then, with no
  // first-tick one. Its CPU counts from here (the collector resets its clocks), as a thread
  // that registered first does.
  auto it = threads_.find(thread.tid);
  if (it == threads_.end() || !thread.has_kind || it->second.young) return;
  CpuThread& cpu = it->second;
  ThreadSlot& slot = thread_slot_table()[cpu.slot];
  const uint32_t cookie = slot.cookie.load(std::memory_order_acquire);
  if (cookie == 0) return;
  drain_slot(cpu.slot);  // samples from before stay where they were taken
  if (make_young(thread.tid, cookie, cpu)) slot.primed = true;
}

void CpuEngine::program_starting(const ProfiledThread& thread) {
  // Started in spyglass's own bootstrap, the thread's first sample fell there, and was
  // dropped as spyglass's: the next came an interval later, and a program shorter than
  // that had none in its code (its CPU went where the process ended). Its first sample is
  // now due at once, as a new thread's, carrying only the program's CPU; the start-up's
  // since the last sample is not the program's, as start() leaves out its own.
  auto it = threads_.find(thread.tid);
  if (it == threads_.end() || it->second.young) return;
  CpuThread& cpu = it->second;
  drain_slot(cpu.slot);  // samples so far stay where they were taken
  const platform::CpuSplit now = platform::this_thread_cpu();
  uint64_t start_up_user = 0;
  uint64_t start_up_system = 0;
  take_cpu_since_last_sample(thread_slot_table()[cpu.slot], now.user_ns, now.system_ns,
                             &start_up_user, &start_up_system);
  cpu.first_seen = false;  // what it found before was the start-up
  cpu.began_outside = false;
  cpu.last_stack = SIZE_MAX;  // a program with no sample of its own: where it ends
  (void)platform::rearm_thread_cpu_timer(&cpu.timer, kProgramFirstSampleNs, interval_ns_);
}

void CpuEngine::thread_ended(const ProfiledThread& thread, const ThreadEnd& how) {
  auto it = threads_.find(thread.tid);
  if (it == threads_.end()) return;
  if (how.by_itself) {
    disarm(it->second);
    drain_slot(it->second.slot);  // its samples so far, and with them its latest stack
    const pid_t tid = thread.tid;
    release_held([tid](const HeldCalls::Held& h) { return h.rec->tid == tid; });
    charge_remainder(thread, it->second, how.cpu);
  } else if (it->second.watch_until_ns != 0) {
    drain_slot(it->second.slot);  // its samples so far, and with them where they went
    charge_watched(thread.tid, it->second);
  }
  release(it->second);
  threads_.erase(it);
}

void CpuEngine::disarm(CpuThread& cpu) {
  platform::disarm_thread_cpu_timer(&cpu.timer);
  platform::disarm_thread_cpu_timer(&cpu.first_tick);
}

void CpuEngine::release(CpuThread& cpu) {
  disarm(cpu);
  ThreadSlot& slot = thread_slot_table()[cpu.slot];
  slot.cookie.store(0, std::memory_order_release);
  while (slot.busy.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  drain_slot(cpu.slot);
  dropped_ += slot.ring->dropped() - cpu.dropped_base;
}

void CpuEngine::drain_slot(uint32_t index) {
  SpscRing<SampleRecord>& ring = *thread_slot_table()[index].ring;
  while (const SampleRecord* rec = ring.front()) {
    aggregate(*rec);
    ring.pop();
    sampling_state().pending_records.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void CpuEngine::drain(Drain why) {
  if (why == Drain::kCodeDeath &&
      sampling_state().pending_records.load(std::memory_order_acquire) == 0) {
    return;
  }
  if (why == Drain::kTick) {
    // faulthandler may be enabled at any time (see top_frame_checked): looked at every
    // interval, here rather than in upkeep, which runs only when it has work.
    sampling_state().guard_first.store(platform::fault_handler_first(), std::memory_order_relaxed);
  }
  for (const auto& [tid, cpu] : threads_) drain_slot(cpu.slot);
  if (why == Drain::kTick) read_watched_clocks(platform::monotonic_ns());
  if (why == Drain::kTick) held_.tick();
  release_held(HeldCalls::expired);
  if (why == Drain::kTick) settle_thread_kinds(/*all=*/false);
}

bool CpuEngine::upkeep_due() const {
  {
    std::lock_guard<std::mutex> lock(unwind_mutex_);
    if (!unwind_wanted_.empty()) return true;
  }
  // Samples in code no range covers (an object loaded since, by a dlopen not hooked): until
  // the ranges are rebuilt they count as the interpreter's own time.
  if (sampling_state().unknown_pc_hits.load(std::memory_order_relaxed) !=
      seen_unknown_hits_.load(std::memory_order_relaxed)) {
    return true;
  }
  const platform::UnwindTables* current = sampling_state().unwind.load(std::memory_order_acquire);
  return current != nullptr && current->wants_every_object() && !current->complete();
}

void CpuEngine::aggregate(const SampleRecord& rec) {
  if (rec.native_stop != 0) {
    std::lock_guard<std::mutex> lock(unwind_mutex_);
    if (unwind_wanted_.size() < 64) unwind_wanted_.push_back(rec.native_stop);
  }
  auto it = threads_.find(rec.tid);
  const ProfiledThread* thread = it == threads_.end() ? nullptr : ctx().threads.find(rec.tid);
  if (thread != nullptr && thread->has_kind && it->second.young && rec.kind == SampleKind::kCpu) {
    aggregate_young(rec, *thread, it->second);
    return;
  }
  // A walk that faulted also has no frames, but it is of a Python thread (truncated).
  size_t lent_to = Collection::kNotAdded;
  if (rec.kind == SampleKind::kCpu && rec.depth == 0 && !rec.truncated &&
      lend_to_caller(rec, platform::monotonic_ns(), &lent_to)) {
    if (it != threads_.end()) {
      it->second.last_stack = lent_to;  // where the rest of its CPU goes (charge_watched)
      it->second.last_class = CpuClass::kNative;
    }
    return;
  }
  const uint64_t seq = it != threads_.end() ? ++it->second.seen : 0;
  if (seq >= kUpgradeAfterSamples && !it->second.upgrade_tried) {
    CpuThread& cpu = it->second;
    cpu.upgrade_tried = true;
    const uint32_t cookie = thread_slot_table()[cpu.slot].cookie.load(std::memory_order_acquire);
    if (cookie != 0) {
      (void)platform::upgrade_thread_cpu_timer(rec.tid, g_signo, static_cast<int>(cookie),
                                               interval_ns_, &cpu.timer);
    }
  }
  if (held_.wants(rec)) {
    const size_t stack = ctx().collection.name_sample(rec);
    if (stack == Collection::kNotAdded) return;
    held_.hold(rec, stack, seq, ctx().collection);
    if (it != threads_.end()) note_first(it->second, rec);
    return;
  }
  const size_t index = ctx().collection.add_sample(rec);
  if (index == Collection::kNotAdded || it == threads_.end()) return;
  note_first(it->second, rec);
  it->second.last_stack = index;
  it->second.last_class = rec.cpu_class;
  note_native(it->second, rec, index);
}

void CpuEngine::add_held(const HeldCalls::Held& held) {
  const SampleRecord& rec = *held.rec;
  ctx().collection.add_named(held.stack, rec);
  auto it = threads_.find(rec.tid);
  if (it == threads_.end() || it->second.seen != held.seq) return;
  it->second.last_stack = held.stack;
  it->second.last_class = rec.cpu_class;
  note_native(it->second, rec, held.stack);
}

void CpuEngine::code_dying(const void* code) {
  release_held([code](const HeldCalls::Held& h) { return HeldCalls::code_of(*h.rec) == code; });
}

void CpuEngine::note_first(CpuThread& cpu, const SampleRecord& rec) const {
  if (cpu.first_seen || rec.kind != SampleKind::kCpu) return;
  cpu.first_seen = true;
  cpu.began_outside = !ctx().collection.has_program_frame(rec);
}

void CpuEngine::note_native(CpuThread& cpu, const SampleRecord& rec, size_t index) {
  if (rec.kind != SampleKind::kCpu || rec.cpu_class != CpuClass::kNative || rec.depth == 0) return;
  cpu.native_at_ns = rec.t_ns != 0 ? rec.t_ns : platform::monotonic_ns();
  cpu.native_stack = index;
  cpu.native_packages.fill(0);
  const platform::CodeRanges* ranges = sampling_state().ranges.load(std::memory_order_acquire);
  if (ranges == nullptr) return;
  size_t n = 0;
  for (uintptr_t pc : native_chain(rec)) {
    const uint64_t package = ranges->library_package(pc);
    if (package == 0 || std::find(cpu.native_packages.begin(), cpu.native_packages.end(),
                                  package) != cpu.native_packages.end()) {
      continue;
    }
    cpu.native_packages[n++] = package;
    if (n == cpu.native_packages.size()) break;
  }
}

std::vector<uint64_t> CpuEngine::chain_packages(const std::vector<uintptr_t>& chain) {
  std::vector<uint64_t> packages;
  const platform::CodeRanges* ranges = sampling_state().ranges.load(std::memory_order_acquire);
  if (ranges == nullptr) return packages;
  for (uintptr_t pc : chain) {
    const uint64_t package = ranges->package_of(pc);
    if (package != 0) packages.push_back(package);
  }
  return packages;
}

bool CpuEngine::lend_to_caller(const SampleRecord& rec, uint64_t now_ns, size_t* lent_to) {
  // A thread of a C library's pool works for the Python line that called into the
  // library: NumPy's matrix product ran half its CPU in OpenBLAS's threads, which was
  // left on no line. The caller is still in native code, and was on its CPU lately (a
  // thread back in Python, or blocked in a wait of its own, called nothing that runs now);
  // its thread row keeps its own figures, the pool thread's stay the pool thread's.
  // Matched by when the samples were taken, not drained (library_waits.hpp).
  const uint64_t t_ns = rec.t_ns != 0 ? rec.t_ns : now_ns;
  // Its stack's packages, looked up only when some thread may take the sample: most
  // samples of a library's threads come while no thread is in a call into it.
  std::vector<uintptr_t> chain;
  std::vector<uint64_t> packages;
  bool looked_up = false;
  auto own_packages = [&]() -> const std::vector<uint64_t>& {
    if (!looked_up) {
      chain = native_chain(rec);
      packages = chain_packages(chain);
      looked_up = true;
    }
    return packages;
  };
  auto shares_library = [&own_packages](const CpuThread& cpu) {
    const std::vector<uint64_t>& own = own_packages();
    return std::any_of(cpu.native_packages.begin(), cpu.native_packages.end(), [&](uint64_t p) {
      return p != 0 && std::find(own.begin(), own.end(), p) != own.end();
    });
  };
  const CpuThread* caller = nullptr;
  for (const auto& [tid, cpu] : threads_) {
    // Still in native code: its latest sample is the one that found it there.
    const uint64_t apart =
        t_ns > cpu.native_at_ns ? t_ns - cpu.native_at_ns : cpu.native_at_ns - t_ns;
    if (tid == rec.tid || cpu.native_stack == SIZE_MAX || cpu.last_stack != cpu.native_stack ||
        cpu.last_class != CpuClass::kNative || apart > kLendIntervals * interval_ns_ ||
        !shares_library(cpu)) {
      continue;
    }
    if (caller == nullptr || cpu.native_at_ns > caller->native_at_ns) caller = &cpu;
  }
  if (caller == nullptr && ctx().collection.library_waits().empty()) return false;
  size_t stack = Collection::kNotAdded;
  if (caller != nullptr) {
    stack = caller->native_stack;
  } else if (!blocked_caller(own_packages(), rec, now_ns, &stack)) {
    return false;
  }
  Times t;
  t.samples = 1;
  t.native_ns = rec.user_ns;
  t.system_ns = rec.system_ns;
  ctx().collection.add_to_stack(stack, rec.tid, t);
  ctx().collection.add_native_cost(stack, chain, rec.user_ns);
  *lent_to = stack;
  return true;
}

bool CpuEngine::blocked_caller(const std::vector<uint64_t>& packages, const SampleRecord& rec,
                               uint64_t now_ns, size_t* stack) const {
  // A thread blocked in a library's call may be waiting for this one to do its work
  // (polars: the caller sleeps on a latch while rayon's threads run the query); this one
  // is the library's if its code, or a caller's, is in the same package.
  LibraryWaits& waits = ctx().collection.library_waits();
  if (waits.empty() || packages.empty()) return false;
  auto of_package = [&packages](uint64_t package) {
    return std::find(packages.begin(), packages.end(), package) != packages.end();
  };
  const uint64_t t_ns = rec.t_ns != 0 ? rec.t_ns : now_ns;
  const LibraryWaits::Noted* noted = waits.during(t_ns, now_ns, of_package, rec.tid, ThreadProbe{});
  if (noted == nullptr) return false;
  *stack = noted->stack;
  return true;
}

void CpuEngine::upkeep() {
  std::vector<uintptr_t> wanted;
  {
    std::lock_guard<std::mutex> lock(unwind_mutex_);
    wanted.swap(unwind_wanted_);
  }
  const platform::UnwindTables* current = sampling_state().unwind.load(std::memory_order_acquire);
  const bool every = current != nullptr && current->wants_every_object() && !current->complete();
  if (!wanted.empty() || every) {
    std::lock_guard<std::mutex> lock(ranges_mutex_);
    publish_unwind_tables(wanted, every);
  }
  // Outside the collector's lock: listing the loaded objects takes the loader's.
  const unsigned long long generation = platform::loader_generation();
  if (generation != seen_loader_generation_) {
    seen_loader_generation_ = generation;
    std::vector<NativeObject> objects;
    for (platform::LoadedObject& o : platform::loaded_objects()) {
      objects.push_back(NativeObject{o.base, o.begin, o.end, std::move(o.path)});
    }
    ctx().collection.offer_native_objects(std::move(objects));
  }
  // A new dlopen: the ranges are rebuilt whether or not a sample has met its code yet. A
  // thread blocked in a call into an extension module imported just before (pandas
  // imports pyarrow.csv as it reads) is not sampled there, and its library's threads
  // (libarrow's, loaded earlier) were lent to no one: read_csv's line had 0.13 of its
  // 0.63 s of CPU.
  const uint64_t unknown = sampling_state().unknown_pc_hits.load(std::memory_order_relaxed);
  const bool new_code = unknown != seen_unknown_hits_.load(std::memory_order_relaxed);
  if (new_code || generation != seen_ranges_generation_) {
    seen_unknown_hits_.store(unknown, std::memory_order_relaxed);
    seen_ranges_generation_ = generation;
    rebuild_ranges();
  }
}

void CpuEngine::stop() { stopping_.store(true, std::memory_order_relaxed); }

void CpuEngine::finish() {
  for (auto& [tid, cpu] : threads_) {
    disarm(cpu);
    thread_slot_table()[cpu.slot].cookie.store(0, std::memory_order_release);
  }
  // CPU the stopping thread used since its last sample would otherwise be lost. It goes
  // where that sample found the thread: here, it is inside the profiler's own stop().
  const pid_t self = platform::current_tid();
  auto it = threads_.find(self);
  const ProfiledThread* thread = ctx().threads.find(self);
  if (it != threads_.end() && thread != nullptr && thread_slot_table()[it->second.slot].primed) {
    drain_slot(it->second.slot);  // its samples so far, and with them its latest stack
    charge_remainder(*thread, it->second, platform::this_thread_cpu());
  }
  for (auto& [tid, cpu] : threads_) release(cpu);
  read_watched_clocks(platform::monotonic_ns());
  for (auto& [tid, cpu] : threads_) charge_watched(tid, cpu);
  release_held([](const HeldCalls::Held&) { return true; });
  threads_.clear();
  settle_thread_kinds(/*all=*/true);
}

void CpuEngine::after_fork_child() {
  new (&ranges_mutex_) std::mutex();
  new (&unwind_mutex_) std::mutex();
  unwind_wanted_.clear();
  // The parent's samples stay the parent's: drop the records not yet drained.
  for (auto& [tid, cpu] : threads_) {
    ThreadSlot& slot = thread_slot_table()[cpu.slot];
    slot.cookie.store(0);
    while (slot.ring->front() != nullptr) slot.ring->pop();
  }
  sampling_state().pending_records.store(0);
  sampling_state().self.store(getpid(), std::memory_order_relaxed);
  platform::forget_perf_clocks_after_fork();
  threads_.clear();
  held_.clear();
}

void CpuEngine::describe(RunInfo& run) const { run.dropped_samples = dropped_; }

}  // namespace spyglass::cpython
