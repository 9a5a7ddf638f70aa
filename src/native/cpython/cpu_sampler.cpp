#define Py_BUILD_CORE 1
#include "cpu_sampler.hpp"

#include <pthread.h>

#include <new>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <unordered_set>

#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "../platform/fault_guard.hpp"
#include "../platform/signals.hpp"
#include "call_sites.hpp"
#include "compat/interpreter.hpp"
#include "memory_glue.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

namespace {

std::atomic<CpuSampler*> g_active{nullptr};
int g_signo = -1;  // the handler stays installed for the life of the process: a queued
                   // signal arriving after stop must not hit the default (fatal) action

void on_code_death(PyCodeObject* code) {
  if (CpuSampler* s = g_active.load(std::memory_order_acquire)) s->on_code_death(code);
}

void before_fork() {
  if (CpuSampler* s = g_active.load()) s->lock_for_fork();
  shim::before_fork();
}
void after_fork_parent() {
  shim::after_fork_parent();
  if (CpuSampler* s = g_active.load()) s->unlock_after_fork();
}
void after_fork_child() {
  shim::after_fork_child();
  if (CpuSampler* s = g_active.exchange(nullptr)) s->abandon_after_fork();
}

uint32_t allocate_slot() {
  ThreadSlot* table = thread_slot_table();
  for (uint32_t i = 1; i < kMaxThreadSlots; ++i) {  // slot 0 unused: cookie 0 means "none"
    if (table[i].tid == 0) return i;
  }
  return 0;
}

}  // namespace

CpuSampler::~CpuSampler() {
  if (running_.load()) {
    PyGILState_STATE g = PyGILState_Ensure();
    stop();
    PyGILState_Release(g);
  }
  // Address ranges stay readable for good: a signal handler, or an allocation hook in a
  // forked child that never stopped them, may still be reading the latest.
  for (auto& r : ranges_) (void)r.release();
}

CpuSampler* CpuSampler::active() { return g_active.load(std::memory_order_acquire); }

void CpuSampler::start(const SamplerOptions& options) {
  if (running_.load()) throw std::runtime_error("the profiler is already running");
  CpuSampler* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this)) {
    throw std::runtime_error("another spyglass profiler is already running in this process");
  }
  if (g_signo < 0) {
    g_signo = platform::install_sample_handler(on_sample_signal);
    static bool atfork_installed = false;
    if (!atfork_installed) {
      pthread_atfork(before_fork, after_fork_parent, after_fork_child);
      atfork_installed = true;
    }
  }
  if (g_signo < 0) {
    g_active.store(nullptr);
    throw std::runtime_error("no free real-time signal to sample with");
  }
  compat::watch_code_deaths(cpython::on_code_death);
  platform::install_fault_handler();

  options_ = options;
  if (options_.interval_ns < 1'000'000) options_.interval_ns = 1'000'000;
  SamplingState& state = sampling_state();
  state.call_opcode.fill(false);
  for (int op : options_.call_opcodes) {
    if (op >= 0 && op < 256) state.call_opcode[static_cast<size_t>(op)] = true;
  }
  state.callee_tables = !options_.bytecode.flags.empty() && init_call_sites();
  wanted_call_sites_.clear();
  stacks_.clear();
  codes_.clear();
  thread_times_.clear();
  kinds_.clear();
  kind_targets_.clear();
  rng_.seed(std::random_device{}());
  dropped_ = 0;
  dropped_memory_ = 0;
  rebuild_ranges();

  start_ns_ = platform::monotonic_ns();
  memory_.reset(start_ns_);
  scope_ = std::make_unique<FileFilter>(options_.scope);
  profiled_code_.clear();
  internal_code_.clear();
  started_at_ = platform::unix_time_s();
  open_journal();
  running_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    register_thread_locked(platform::current_tid(), /*calling_thread=*/true, kFirstSampleNs);
    scan_threads_locked();
  }
  start_threads();
  watch_python_forks();
  if (options_.memory) {
    memory_dropped_base_ = shim::records().dropped();
    if (!start_memory_hooks(options_.memory_options)) {
      stop();
      throw std::runtime_error("memory profiling is already active in this process");
    }
  }
  if (options_.memory) memory_epoch_ = shim::epoch();
  // The calling thread's first sample must not carry the CPU that starting took (patching
  // hundreds of objects in a big process is milliseconds of system time): its CPU clock
  // is read again, with the sampling signal held off.
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = threads_.find(platform::current_tid());
  if (it != threads_.end()) {
    const platform::AllSignalsBlocked blocked;
    ThreadSlot& slot = thread_slot_table()[it->second.slot];
    const platform::CpuSplit now = platform::this_thread_cpu();
    slot.last_user_ns = now.user_ns;
    slot.last_system_ns = now.system_ns;
    slot.primed = true;
  }
}

void CpuSampler::rebuild_ranges() {
  auto ranges = std::make_unique<platform::CodeRanges>();
  ranges->rebuild(reinterpret_cast<const void*>(&PyEval_SaveThread));
  std::lock_guard<std::mutex> lock(ranges_mutex_);
  sampling_state().ranges.store(ranges.get(), std::memory_order_release);
  ranges_.push_back(std::move(ranges));
}

void CpuSampler::register_thread_locked(pid_t tid, bool calling_thread, uint64_t first_sample_ns) {
  if (threads_.count(tid) != 0 || tid == control_tid_.load() || tid == waiter_tid_.load()) return;
  if (ended_.count(tid) != 0) return;
  const uint32_t index = allocate_slot();
  if (index == 0) return;  // more live threads than slots: the rest go unsampled
  ThreadSlot& slot = thread_slot_table()[index];
  if (!slot.ring) slot.ring = std::make_unique<SpscRing<SampleRecord>>(kRingCapacity);
  slot.tid = tid;
  slot.generation = slot.generation % ((1u << (32 - kSlotIndexBits - 1)) - 1) + 1;
  uint64_t cpu = 0;
  if (calling_thread) {
    const platform::CpuSplit now = platform::this_thread_cpu();
    slot.last_user_ns = now.user_ns;
    slot.last_system_ns = now.system_ns;
    slot.primed = true;
    cpu = now.user_ns + now.system_ns;
  } else {
    if (!platform::thread_cpu_ns(tid, &cpu)) {  // exited meanwhile
      slot.tid = 0;
      return;
    }
    slot.baseline_cpu_ns = cpu;
    slot.primed = false;
  }
  const uint32_t cookie = make_cookie(slot.generation, index);
  slot.cookie.store(cookie, std::memory_order_release);
  Registered reg{index, {}, platform::monotonic_ns(), cpu, 0, -1, slot.ring->dropped()};
  if (!platform::arm_thread_cpu_timer(tid, g_signo, static_cast<int>(cookie), options_.interval_ns,
                                      &reg.timer, first_sample_ns)) {
    slot.cookie.store(0);
    slot.tid = 0;
    return;
  }
  threads_.emplace(tid, reg);
}

void CpuSampler::release_slot_locked(Registered& reg) {
  platform::disarm_thread_cpu_timer(&reg.timer);
  ThreadSlot& slot = thread_slot_table()[reg.slot];
  slot.cookie.store(0, std::memory_order_release);
  while (slot.busy.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  drain_slot_locked(reg.slot);
  dropped_ += slot.ring->dropped() - reg.dropped_base;
  slot.tid = 0;
}

void CpuSampler::scan_threads_locked() {
  const std::vector<pid_t> tids = platform::list_threads();
  const std::unordered_set<pid_t> alive(tids.begin(), tids.end());
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (alive.count(it->first) == 0) {
      release_slot_locked(it->second);
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = ended_.begin(); it != ended_.end();) {
    it = alive.count(*it) == 0 ? ended_.erase(it) : std::next(it);
  }
  for (pid_t tid : tids) register_thread_locked(tid, false);
}

void CpuSampler::drain_slot_locked(uint32_t index) {
  SpscRing<SampleRecord>& ring = *thread_slot_table()[index].ring;
  while (const SampleRecord* rec = ring.front()) {
    aggregate_locked(*rec);
    ring.pop();
    sampling_state().pending_records.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void CpuSampler::drain_locked() {
  for (const auto& [tid, reg] : threads_) drain_slot_locked(reg.slot);
  if (options_.memory) drain_memory_locked();
}

bool CpuSampler::is_internal_code(uint32_t id, PyCodeObject* code) {
  if (id >= internal_code_.size()) internal_code_.resize(id + 1, -1);
  if (internal_code_[id] < 0) {
    internal_code_[id] = scope_ && scope_->is_internal(codes_.info(id, code).file) ? 1 : 0;
  }
  return internal_code_[id] == 1;
}

void CpuSampler::aggregate_locked(const SampleRecord& rec) {
  FrameKey keys[kMaxStackDepth];
  resolve_frames_locked(rec.frames, rec.depth, keys);
  // A sample inside spyglass's own code (starting or stopping the profiler, a thread
  // registering itself) is the profiler's time, not the program's. Its frames around the
  // program's (a thread's bootstrap) are left to the model to hide.
  if (rec.depth > 0 &&
      is_internal_code(keys[0].code_id, reinterpret_cast<PyCodeObject*>(rec.frames[0].code))) {
    return;
  }
  if (rec.wants_call_sites && rec.depth > 0) {
    wanted_call_sites_.insert(reinterpret_cast<PyCodeObject*>(rec.frames[0].code));
  }
  Times t;
  if (rec.kind == SampleKind::kCpu) {
    t.samples = 1;
    t.system_ns = rec.system_ns;
    (rec.cpu_class == CpuClass::kPython ? t.python_ns : t.native_ns) = rec.user_ns;
    if (rec.in_gc) t.gc_ns = rec.user_ns;
  } else {
    t.wait_ns = rec.wait_ns;
  }
  const size_t index = add_stack_locked(keys, rec.depth, rec.truncated, rec.tid, t);
  if (rec.kind == SampleKind::kCpu) {
    auto it = threads_.find(rec.tid);
    if (it != threads_.end()) {
      it->second.last_stack = index;
      it->second.last_class = rec.cpu_class;
      if (it->second.has_kind) {
        kinds_.observe(it->second.target.code_id, index, rec.user_ns + rec.system_ns);
      }
    }
  }
}

bool CpuSampler::sleep_unless_stopped(std::chrono::nanoseconds period) {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  wake_.wait_for(lock, period, [this] { return !running_.load() || threads_paused_; });
  return running_.load() && !threads_paused_;
}

void CpuSampler::control_loop() {
  shim::ignore_this_thread();
  control_tid_.store(platform::current_tid());
  // Scanning before the wait thread has published its id would register it for sampling.
  while (waiter_tid_.load() == 0 && running_.load()) std::this_thread::yield();
  const auto period = std::chrono::nanoseconds(options_.interval_ns);
  while (sleep_unless_stopped(period)) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!running_.load()) break;
      scan_threads_locked();
      drain_locked();
      journal_tick_locked();
    }
    if (options_.memory) shim::patch_new_objects();  // extension modules imported since
    const uint64_t unknown = sampling_state().unknown_pc_hits.load(std::memory_order_relaxed);
    if (unknown != seen_unknown_hits_) {  // code we have no range for: a new dlopen
      seen_unknown_hits_ = unknown;
      rebuild_ranges();
    }
  }
}

void CpuSampler::wait_loop() {
  shim::ignore_this_thread();
  waiter_tid_.store(platform::current_tid());
  const auto period = std::chrono::nanoseconds(options_.interval_ns);
  int ticks = 0;
  while (sleep_unless_stopped(period)) {
    if (++ticks % 100 == 0) {  // threads can gain a Python thread state later
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [tid, reg] : threads_) {
        if (reg.python == 0) reg.python = -1;
      }
    }
    charge_waits();
  }
}

void CpuSampler::charge_waits() {
  bool need_gil = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t now = platform::monotonic_ns();
    for (auto& [tid, reg] : threads_) {
      uint64_t cpu = 0;
      if (!platform::thread_cpu_ns(tid, &cpu)) continue;
      const uint64_t wall = now - reg.last_wall_ns;
      const uint64_t used = cpu > reg.last_cpu_ns ? cpu - reg.last_cpu_ns : 0;
      reg.last_wall_ns = now;
      reg.last_cpu_ns = cpu;
      if (reg.python == 0) continue;  // native threads idle by design: not the user's wait
      uint64_t off_cpu = wall > used ? wall - used : 0;
      // A thread that ran but not all the time may have been waiting for a CPU rather
      // than for anything of its own (a loaded machine): that is not the program's wait.
      uint64_t delay = 0;
      if (used > 0 && off_cpu > 0 && platform::thread_run_delay_ns(tid, &delay)) {
        const uint64_t queued = delay > reg.run_delay_ns ? delay - reg.run_delay_ns : 0;
        reg.run_delay_ns = delay;
        off_cpu -= std::min(off_cpu, queued);
      }
      reg.pending_wait_ns += off_cpu;
      if (reg.pending_wait_ns >= options_.interval_ns / 2) need_gil = true;
    }
    if (!wanted_call_sites_.empty()) need_gil = true;
  }
  if (!need_gil || !running_.load() || compat::is_finalizing()) return;

  // Holding the GIL freezes every other thread's frame stack (frames are pushed and popped
  // only under the GIL), so the blocked threads' stacks can be read safely from here.
  PyGILState_STATE gil = PyGILState_Ensure();
  if (running_.load()) {
    std::lock_guard<std::mutex> lock(mutex_);
    build_wanted_call_sites_locked();
    std::unordered_set<pid_t> python_tids;
    for (PyThreadState* ts = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
         ts != nullptr; ts = PyThreadState_Next(ts)) {
      const pid_t tid = compat::native_tid(ts);
      auto it = threads_.find(tid);
      if (it == threads_.end()) continue;
      python_tids.insert(tid);
      Registered& reg = it->second;
      reg.python = 1;
      if (reg.pending_wait_ns == 0) continue;
      SampleRecord& rec = scratch_;
      Leaf leaf;
      rec.kind = SampleKind::kWait;
      rec.tid = tid;
      rec.user_ns = rec.system_ns = 0;
      rec.wait_ns = reg.pending_wait_ns;
      rec.depth = walk_stack(ts, rec.frames, &rec.truncated, &leaf);
      if (rec.depth > 0) aggregate_locked(rec);
      reg.pending_wait_ns = 0;
    }
    for (auto& [tid, reg] : threads_) {
      if (python_tids.count(tid) == 0) {
        reg.python = 0;
        reg.pending_wait_ns = 0;
      }
    }
  }
  PyGILState_Release(gil);
}

void CpuSampler::build_wanted_call_sites_locked() {
  // Every code in the set is alive: a dying one leaves it (on_code_death) under the GIL,
  // which this thread holds.
  for (PyCodeObject* code : wanted_call_sites_) build_call_sites(code, options_.bytecode);
  wanted_call_sites_.clear();
}

void CpuSampler::flush_calling_thread_locked() {
  // CPU the stopping thread used since its last sample would otherwise be lost. It goes
  // where that sample found the thread: here, it is inside the profiler's own stop().
  auto it = threads_.find(platform::current_tid());
  if (it == threads_.end() || !thread_slot_table()[it->second.slot].primed) return;
  charge_remainder_locked(it->first, it->second, platform::this_thread_cpu());
}

void CpuSampler::stop() {
  if (!running_.exchange(false)) return;
  if (options_.memory) stop_memory_hooks();
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);  // no lost wake-up between check and wait
  }
  wake_.notify_all();
  join_threads();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [tid, reg] : threads_) {
      platform::disarm_thread_cpu_timer(&reg.timer);
      thread_slot_table()[reg.slot].cookie.store(0, std::memory_order_release);
    }
    flush_calling_thread_locked();
    for (auto& [tid, reg] : threads_) release_slot_locked(reg);
    threads_.clear();
    settle_thread_kinds_locked();
    ended_.clear();
    if (options_.memory) {
      drain_memory_locked(/*wait_for_claimed=*/true);
      memory_.finish();
      dropped_memory_ = shim::records().dropped() - memory_dropped_base_;
    }
    codes_.resolve_all();
    // Until the process writes its profile, the journal stands for it: complete it.
    journal_tick_locked();
    journal_.close();
  }
  elapsed_s_ = static_cast<double>(platform::monotonic_ns() - start_ns_) / 1e9;
  g_active.store(nullptr, std::memory_order_release);
}

void CpuSampler::on_code_death(PyCodeObject* code) {
  const shim::PauseThisThread paused;
  std::lock_guard<std::mutex> lock(mutex_);
  // Samples naming this code may still sit in the rings: resolve them while it is intact.
  if (sampling_state().pending_records.load(std::memory_order_acquire) != 0) drain_locked();
  // Memory records may sit behind one still being written on another thread: wait for
  // every record claimed so far, not only the ones already readable.
  if (options_.memory) drain_memory_locked(/*wait_for_claimed=*/true);
  codes_.retire(code);
  wanted_call_sites_.erase(code);
}

void CpuSampler::lock_for_fork() { mutex_.lock(); }
void CpuSampler::unlock_after_fork() { mutex_.unlock(); }

void CpuSampler::abandon_after_fork() {
  // Only the forking thread exists in the child. Locks and condition variables may record
  // owners or waiters that are gone (destroying such a condition variable blocks forever),
  // so they are made anew in place, without running their destructors.
  new (&mutex_) std::mutex();
  new (&wake_mutex_) std::mutex();
  new (&ranges_mutex_) std::mutex();
  new (&wake_) std::condition_variable();
  running_.store(false);
  // The std::thread objects name threads that are gone, and destroying a joinable
  // std::thread aborts, so leak them.
  new std::thread(std::move(control_));
  new std::thread(std::move(waiter_));
  // The parent's samples stay the parent's: free the slots, dropping undrained records.
  for (auto& [tid, reg] : threads_) {
    ThreadSlot& slot = thread_slot_table()[reg.slot];
    slot.cookie.store(0);
    while (slot.ring->front() != nullptr) slot.ring->pop();
    slot.tid = 0;
  }
  sampling_state().pending_records.store(0);
  threads_.clear();
  wanted_call_sites_.clear();
  ended_.clear();
  journal_.close();  // the parent's, with its records not yet written
  abandoned_ = true;
}

std::vector<ThreadInfo> CpuSampler::threads(const std::map<int32_t, std::string>& names) const {
  std::vector<ThreadInfo> out;
  for (const auto& [tid, t] : thread_times_) {
    auto it = names.find(tid);
    out.push_back(ThreadInfo{tid, it != names.end() ? it->second : std::string(), t});
  }
  return out;
}

}  // namespace spyglass::cpython
