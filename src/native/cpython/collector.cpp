#define Py_BUILD_CORE 1
#include "collector.hpp"

#include <pthread.h>

#include <algorithm>
#include <new>
#include <stdexcept>

#include "../core/profile_memory.hpp"
#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "../platform/fault_guard.hpp"
#include "../platform/signals.hpp"
#include "../platform/termination.hpp"
#include "../platform/threads.hpp"
#include "call_sites.hpp"
#include "compat/interpreter.hpp"
#include "copy_engine.hpp"
#include "cpu_engine.hpp"
#include "gpu_engine.hpp"
#include "memory_engine.hpp"
#include "sampling_state.hpp"
#include "wait_engine.hpp"

namespace spyglass::cpython {

namespace {

std::atomic<Collector*> g_active{nullptr};

void code_dying(PyCodeObject* code) {
  if (Collector* c = g_active.load(std::memory_order_acquire)) c->on_code_death(code);
}

// The shim's handlers run whether or not a collector is active: a forked child inherits
// running allocator hooks before it has a collector of its own.
void before_fork() {
  if (Collector* c = g_active.load()) c->lock_for_fork();
  shim::before_fork();
}
void after_fork_parent() {
  shim::after_fork_parent();
  if (Collector* c = g_active.load()) c->unlock_after_fork();
}
void after_fork_child() {
  shim::after_fork_child();
  if (Collector* c = g_active.exchange(nullptr)) c->abandon_after_fork();
}

}  // namespace

Collector::~Collector() {
  if (running_.load()) {
    PyGILState_STATE g = PyGILState_Ensure();
    stop();
    PyGILState_Release(g);
  }
}

Collector* Collector::active() { return g_active.load(std::memory_order_acquire); }

void Collector::make_engines() {
  memory_ = nullptr;
  engines_.clear();
  // The CPU engine comes first: it is the one that may refuse a thread (no timer).
  engines_.push_back(
      std::make_unique<CpuEngine>(context_, options_.interval_ns, options_.call_opcodes));
  engines_.push_back(std::make_unique<WaitEngine>(context_, tick_ns(), options_.bytecode));
  // The memory engine's executions read where the samples found each thread.
  collection_.keep_line_visits(options_.memory);
  if (options_.memory) {
    auto copies = std::make_unique<CopyEngine>(context_);
    auto memory = std::make_unique<MemoryEngine>(context_, options_.memory_options, *copies);
    memory_ = memory.get();
    engines_.push_back(std::move(memory));
    engines_.push_back(std::move(copies));
  }
  gpu_ = nullptr;
  if (options_.gpu) {
    std::string why;  // no NVML, no driver or no device: no GPU figures, nothing said
    if (auto gpu = GpuEngine::open(context_, options_.interval_ns, &why)) {
      gpu_ = gpu.get();
      engines_.push_back(std::move(gpu));
    }
  }
  own_count_ =
      2 + static_cast<size_t>(std::count_if(engines_.begin(), engines_.end(),
                                            [](const auto& e) { return e->has_worker(); }));
}

void Collector::start(const CollectorOptions& options) {
  if (running_.load()) throw std::runtime_error("the profiler is already running");
  Collector* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, this)) {
    throw std::runtime_error("another spyglass profiler is already running in this process");
  }
  static const bool atfork_installed =
      pthread_atfork(before_fork, after_fork_parent, after_fork_child) == 0;
  (void)atfork_installed;

  options_ = options;
  options_.interval_ns = std::max(options_.interval_ns, kMinIntervalNs);
  // --no-gpu leaves CUDA libraries alone too.
  options_.memory_options.cuda_copies = options_.gpu;
  make_engines();
  // The signal handler reads callees off the stack only once their tables can be built.
  sampling_state().callee_tables = !options_.bytecode.flags.empty() && init_call_sites();
  start_ns_ = platform::monotonic_ns();
  try {
    for (auto& engine : engines_) engine->start(start_ns_);
  } catch (...) {
    g_active.store(nullptr);
    throw;
  }
  compat::watch_code_deaths(code_dying);

  collection_.reset(options_.scope);
  collection_.track_call_sites(sampling_state().callee_tables);
  started_at_ = platform::unix_time_s();
  JournalHeader header;
  header.start_ns = start_ns_;
  header.started_at = started_at_;
  header.interval_ns = options_.interval_ns;
  header.memory = options_.memory;
  header.window_bytes = options_.memory_options.window_bytes;
  header.copy_window_bytes = options_.memory_options.copy_window_bytes;
  header.scope = options_.scope;
  header.meta = options_.journal_meta;
  collection_.open_journal(options_.journal_path, header);
  running_.store(true);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    listed_tids_.clear();
    listed_once_ = false;  // the threads this scan lists were there before the run
    register_thread_locked(platform::current_tid(), /*by_itself=*/true);
    scan_threads_locked();
  }
  start_threads();
  watch_python_forks();
  try {
    for (auto& engine : engines_) engine->begin();
  } catch (...) {
    stop();
    throw;
  }
  // The calling thread's first sample must not carry the CPU that starting took (patching
  // hundreds of objects in a big process is milliseconds of system time): its CPU clock
  // is read again, with the sampling signal held off.
  std::lock_guard<std::mutex> lock(mutex_);
  if (const ProfiledThread* t = threads_.find(platform::current_tid())) {
    const platform::AllSignalsBlocked blocked;
    ThreadSlot& slot = thread_slot_table()[t->slot];
    const platform::CpuSplit now = platform::this_thread_cpu();
    slot.last_user_ns = now.user_ns;
    slot.last_system_ns = now.system_ns;
    slot.primed = true;
  }
}

void Collector::stop() {
  if (!running_.exchange(false)) return;
  for (auto& engine : engines_) engine->stop();
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);  // no lost wake-up between check and wait
  }
  wake_.notify_all();
  upkeep_wake_.notify_all();
  work_wake_.notify_all();
  join_threads();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The last samples held for call-site tables (held_calls.hpp) get them here, with the
    // GIL, as they would at the wait engine's next look.
    drain_locked(Drain::kFinal);
    if (sampling_state().callee_tables && !compat::is_finalizing()) {
      // This thread is still sampled: its handler must not read a code's extra slot while
      // it is being grown here.
      const platform::AllSignalsBlocked blocked;
      collection_.build_wanted_call_sites(options_.bytecode);
    }
    for (auto& engine : engines_) engine->finish();
    threads_.clear();
    collection_.codes().resolve_all();
    // Until the process writes its profile, the journal stands for it: complete it (not
    // compact it: the profile written next makes the rewrite moot).
    journal_tick_locked(/*last=*/true);
    collection_.close_journal();
  }
  platform::close_thread_listing();  // the program keeps no descriptor of ours
  elapsed_s_ = static_cast<double>(platform::monotonic_ns() - start_ns_) / 1e9;
  g_active.store(nullptr, std::memory_order_release);
}

const MemoryStats* Collector::memory() const {
  return memory_ != nullptr ? &memory_->stats() : nullptr;
}

bool Collector::leaks_suspected() {
  if (memory_ == nullptr || !running_.load()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  memory_->drain(Drain::kRecords);
  return any_leak(memory_->stats());
}

const GpuStats* Collector::gpu() const { return gpu_ != nullptr ? &gpu_->stats() : nullptr; }

RunInfo Collector::describe() const {
  RunInfo run;
  run.elapsed_s = elapsed_s_;
  run.interval_s = static_cast<double>(options_.interval_ns) / 1e9;
  for (const auto& engine : engines_) engine->describe(run);
  return run;
}

bool Collector::sleep_unless_stopped(std::chrono::nanoseconds period) {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  wake_.wait_for(lock, period, [this] { return !running_.load() || threads_paused_; });
  return running_.load() && !threads_paused_;
}

Collector::Wake Collector::sleep_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  wake_.wait_until(lock, deadline, [this] {
    return !running_.load() || threads_paused_ || records_wanted_.load(std::memory_order_acquire);
  });
  if (!running_.load() || threads_paused_) return Wake::kStop;
  if (records_wanted_.exchange(false, std::memory_order_acq_rel)) return Wake::kRecords;
  return Wake::kTick;
}

void Collector::wake_for_records() {
  // Asked once until the control thread has seen it: a full ring asks on every record.
  if (records_wanted_.exchange(true, std::memory_order_acq_rel)) return;
  wake_.notify_all();
}

void Collector::control_loop() {
  shim::ignore_this_thread();
  platform::name_this_thread("spyglass-ctl");
  // The engines' ticks read blocked threads' frames inside a fault guard (wait_engine.cpp):
  // the thread inherited every signal blocked, and a blocked fault kills the process.
  platform::unblock_fault_signals();
  own_tids_[0].store(platform::current_tid());
  // Scanning before the other threads of ours have published their ids would register
  // them for sampling.
  for (size_t i = 1; i < own_count_; ++i) {
    while (own_tids_[i].load() == 0 && running_.load()) std::this_thread::yield();
  }
  const auto period = std::chrono::nanoseconds(tick_ns());
  auto tick = std::chrono::steady_clock::now() + period;
  for (Wake wake; (wake = sleep_until(tick)) != Wake::kStop;) {
    if (wake == Wake::kRecords) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!running_.load()) break;
        if (memory_ != nullptr) memory_->drain(Drain::kRecords);
      }
      // The tick is still due when it was; a burst that asks again and again must not
      // put it off (CPU samples, new threads and the journal wait for it).
      if (std::chrono::steady_clock::now() < tick) continue;
    }
    tick = std::chrono::steady_clock::now() + period;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!running_.load()) break;
      scan_threads_locked();
      drain_locked(Drain::kTick);
      journal_tick_locked();
      tick_engines_locked();
      request_upkeep_locked();
    }
    platform::kick_lost_termination(platform::monotonic_ns());
  }
}

void Collector::upkeep_loop(size_t index) {
  shim::ignore_this_thread();
  platform::name_this_thread("spyglass-upkeep");
  own_tids_[index].store(platform::current_tid());
  const auto period = std::chrono::nanoseconds(tick_ns());
  // The first after one tick, as before any other: the objects loaded by then are
  // listed for a process that is killed soon after.
  for (auto wait = period; sleep_until_upkeep(wait); wait = period * kUpkeepEvery) {
    for (auto& engine : engines_) engine->upkeep();
  }
}

bool Collector::sleep_until_upkeep(std::chrono::nanoseconds longest) {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  upkeep_wake_.wait_for(lock, longest,
                        [this] { return !running_.load() || threads_paused_ || upkeep_wanted_; });
  upkeep_wanted_ = false;
  return running_.load() && !threads_paused_;
}

void Collector::request_upkeep_locked() {
  bool due = false;
  for (const auto& engine : engines_) due = due || engine->upkeep_due();
  if (!due) return;
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    if (upkeep_wanted_) return;  // asked already, not yet woken
    upkeep_wanted_ = true;
  }
  upkeep_wake_.notify_one();
}

void Collector::tick_engines_locked() {
  uint32_t wanted = 0;
  size_t index = 2;  // as start_threads() numbers the workers
  for (auto& engine : engines_) {
    if (!engine->has_worker()) continue;
    if (engine->worker_on_call() && engine->tick()) wanted |= 1u << index;
    ++index;
  }
  if (wanted == 0) return;
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    work_wanted_ |= wanted;
  }
  work_wake_.notify_all();
}

bool Collector::sleep_until_called(size_t index) {
  const uint32_t bit = 1u << index;
  std::unique_lock<std::mutex> lock(wake_mutex_);
  work_wake_.wait(lock,
                  [&] { return !running_.load() || threads_paused_ || (work_wanted_ & bit) != 0; });
  work_wanted_ &= ~bit;
  return running_.load() && !threads_paused_;
}

void Collector::worker_loop(Engine& engine, size_t index) {
  shim::ignore_this_thread();
  platform::name_this_thread(engine.worker_name());
  // An engine's work may read the program's memory under a fault guard (the wait engine
  // walks blocked threads' frames): the thread inherited every signal blocked.
  platform::unblock_fault_signals();
  own_tids_[index].store(platform::current_tid());
  if (engine.worker_on_call()) {
    // Asked again while it worked, by ticks its work has covered or the next one repeats:
    // taken as done, so that the GIL is not taken back to back while others hold it long.
    while (sleep_until_called(index)) {
      engine.work();
      std::lock_guard<std::mutex> lock(wake_mutex_);
      work_wanted_ &= ~(1u << index);
    }
  } else {
    // As the control thread: every interval, but no more often than a tick (kMinTickNs).
    const auto period = std::chrono::nanoseconds(tick_ns());
    while (sleep_unless_stopped(period)) engine.work();
  }
  engine.worker_stopping();
}

void Collector::drain_locked(Drain why) {
  for (auto& engine : engines_) engine->drain(why);
}

void Collector::journal_tick_locked(bool last) {
  if (!collection_.journaling()) return;
  const RunInfo run = describe();
  JournalTick tick;
  tick.now_ns = platform::monotonic_ns();
  tick.dropped_samples = run.dropped_samples;
  tick.dropped_memory_samples = run.memory.dropped_samples;
  collection_.journal_tick(tick, memory(), last);
}

void Collector::on_code_death(PyCodeObject* code) {
  const shim::PauseThisThread paused;
  std::lock_guard<std::mutex> lock(mutex_);
  // Samples naming this code may still wait in an engine: resolve them while it is intact.
  drain_locked(Drain::kCodeDeath);
  for (auto& engine : engines_) engine->code_dying(code);
  collection_.codes().retire(code);
  collection_.forget_call_sites(code);
}

void Collector::lock_for_fork() {
  mutex_.lock();
  for (auto& engine : engines_) engine->before_fork();
}

void Collector::unlock_after_fork() {
  for (auto it = engines_.rbegin(); it != engines_.rend(); ++it) (*it)->after_fork_parent();
  mutex_.unlock();
}

void Collector::abandon_after_fork() {
  // Only the forking thread exists in the child. Locks and condition variables may record
  // owners or waiters that are gone (destroying such a condition variable blocks forever),
  // so they are made anew in place, without running their destructors.
  new (&mutex_) std::mutex();
  new (&wake_mutex_) std::mutex();
  new (&wake_) std::condition_variable();
  new (&upkeep_wake_) std::condition_variable();
  new (&work_wake_) std::condition_variable();
  upkeep_wanted_ = false;
  work_wanted_ = 0;
  running_.store(false);
  // The std::thread objects name threads that are gone, and destroying a joinable
  // std::thread aborts, so leak them.
  new std::thread(std::move(control_));
  for (std::thread& worker : workers_) new std::thread(std::move(worker));
  workers_.clear();
  // The parent's samples stay the parent's.
  for (auto& engine : engines_) engine->after_fork_child();
  threads_.clear();
  collection_.close_journal();       // the parent's, with its records not yet written
  platform::close_thread_listing();  // a listing of the parent's threads
  abandoned_ = true;
}

}  // namespace spyglass::cpython
