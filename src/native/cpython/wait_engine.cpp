#define Py_BUILD_CORE 1
#include "wait_engine.hpp"

#include <Python.h>
#include <unistd.h>

#include <algorithm>
#include <csetjmp>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../core/limits.hpp"
#include "../core/memory_stats.hpp"
#include "../platform/clock.hpp"
#include "../platform/fault_guard.hpp"
#include "../shim/memory_hooks.hpp"
#include "call_sites.hpp"
#include "collection.hpp"
#include "compat/interpreter.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

void WaitEngine::start(uint64_t /*start_ns*/) {
  ctx().collection.set_lend_window(kLendIntervals * interval_ns_);
}

void WaitEngine::finish() {
  // The tasks the last scan found waited on after it, until they ended or until now.
  charge_tails(awaits_.tails_at(platform::monotonic_ns()));
  awaits_.release();  // stop() holds the GIL, and the worker has been joined
  // Waits of kinds none of whose threads was ever found blocked go to their threads'
  // function: where in it they waited was never seen.
  for (const KindWaits::Held& held : kind_waits_.settle()) {
    for (const KindWaits::Share& share : held.shares) {
      Times t;
      t.wait_ns = share.wait_ns;
      ctx().collection.add_to_stack(share.stack, held.tid, t);
    }
    if (!held.shares.empty()) continue;
    if (auto target = kind_targets_.find(held.kind); target != kind_targets_.end()) {
      Times t;
      t.wait_ns = held.wait_ns;
      ctx().collection.add_stack(&target->second, 1, false, held.tid, t);
    }
  }
  threads_.clear();
}

bool WaitEngine::thread_started(const ProfiledThread& thread, const ThreadStart& how) {
  WaitThread& w = threads_[thread.tid];
  w = WaitThread{};
  w.started_ns = how.wall_ns;
  w.last_wall_ns = how.wall_ns;
  w.last_cpu_ns = how.cpu_ns;
  // Its time queued for a CPU before now is not to be taken off its waits from now on.
  // Read for a thread registering itself too: on a loaded machine a new thread queues for
  // milliseconds before it runs its first line, and taken off its first waits that left a
  // short thread's 4 ms of waits 10-15 % short.
  (void)platform::thread_run_delay_ns(thread.tid, &w.run_delay_ns);
  // A thread registering itself is running here, its thread state current.
  if (how.by_itself) {
    w.tstate = PyGILState_GetThisThreadState();
    w.python = w.tstate != nullptr ? 1 : 0;
  }
  return true;
}

void WaitEngine::thread_claimed(const ProfiledThread& thread) {
  auto it = threads_.find(thread.tid);
  if (it == threads_.end()) return;
  if (thread.has_kind) {
    it->second.has_kind = true;
    it->second.kind = thread.target.code_id;
    kind_targets_.emplace(thread.target.code_id, thread.target);
  }
  // A scan that found the thread first could not know its state: without it the thread's
  // waits would need the GIL every interval.
  it->second.tstate = PyGILState_GetThisThreadState();
  if (it->second.tstate != nullptr) it->second.python = 1;
}

// Taking the GIL to read a blocked thread's stack has two costs: the running program hands
// the GIL over every interval, and the thread state this thread takes it with shows in
// whatever lists the interpreter's threads meanwhile (a faulthandler dump lists a "<no
// Python frame>" thread that is not the program's). A thread that is
// blocked cannot change its own stack, and nothing else changes it, so it can be read
// without the GIL, on two conditions checked here:
// - its thread state outlives the walk: the main thread's lives until finalisation, and a
//   thread that registered itself tells the collector it ends (under the lock held here)
//   before its state is freed; other threads (found by the scan, or made by C code with
//   PyGILState_Ensure, whose state can come and go) keep the GIL path;
// - it did not run during the walk: its CPU clock reads the same after the walk as before
//   the wait was measured. A walk that met memory being changed is then thrown away, and
//   one that faulted is caught by the fault guard.
// A thread that fails the second condition is tried again next interval, not with the GIL:
// it is running, or about to, and will block again or show its queued time meanwhile. One
// that fails it kMaxLater intervals running (it is seldom caught still) is read with the
// GIL, as is one whose walk faulted (its thread state is then looked up again).
SampleRecord& WaitEngine::wait_record(pid_t tid, uint64_t wait_ns) {
  SampleRecord& rec = scratch_;
  rec.kind = SampleKind::kWait;
  rec.tid = tid;
  rec.user_ns = rec.system_ns = 0;
  rec.wait_ns = wait_ns;
  rec.t_ns = platform::monotonic_ns();
  return rec;
}

WaitEngine::Charged WaitEngine::read_blocked(pid_t tid, WaitThread& w, uint64_t cpu_ns) {
  if (w.tstate == nullptr || w.python != 1) return Charged::kNeedsGil;
  if (tid != getpid()) {
    const ProfiledThread* thread = ctx().threads.find(tid);
    if (thread == nullptr || !thread->self_registered) return Charged::kNeedsGil;
  }
  if (compat::is_finalizing()) return Charged::kLater;
  if (held_for_queueing(tid, w)) return Charged::kLater;
  if (w.pending_wait_ns > 0 && blocked_lately(w)) return Charged::kWhereBlocked;
  // The guard catches a fault only while its handler is first in line: after another
  // (faulthandler's, which pytest enables), a fault in the walk would end the program.
  if (!platform::fault_handler_first()) return Charged::kNeedsGil;
  SampleRecord& rec = wait_record(tid, w.pending_wait_ns);
  Leaf leaf;
  PyCodeObject* no_table = nullptr;
  blocked_package_ = 0;
  package_unsettled_ = true;  // unless library_package reads to its end
  platform::FaultGuard& guard = platform::fault_guard(kWaitGuard);
  platform::enter_guard(guard, platform::current_tid());
  volatile bool read = false;  // set after sigsetjmp, read after a possible jump back
  if (sigsetjmp(guard.env, 0) == 0) {
    rec.depth = walk_stack(w.tstate, rec.frames, &rec.truncated, &leaf);
    blocked_package_ = library_package(leaf, &no_table);
    read_in_call_ = at_call(sampling_state(), leaf);
    read = true;
  }
  platform::leave_guard(guard);
  uint64_t cpu_after = 0;
  if (!read) return Charged::kNeedsGil;
  if (!platform::thread_cpu_ns(tid, &cpu_after) || cpu_after != cpu_ns) {
    return ++w.later < kMaxLater ? Charged::kLater : Charged::kNeedsGil;
  }
  // Only a read the thread did not run through names a live code.
  if (no_table != nullptr) ctx().collection.want_call_site_copy(no_table);
  return Charged::kYes;
}

WaitEngine::Charged WaitEngine::charge_blocked(pid_t tid, WaitThread& w, uint64_t cpu_ns) {
  const Charged read = read_blocked(tid, w, cpu_ns);
  if (read == Charged::kWhereBlocked) {
    charge_where_it_blocked(tid, w);
    return Charged::kYes;
  }
  if (read != Charged::kYes) return read;
  const SampleRecord& rec = scratch_;
  charged_stack_ = rec.depth > 0 ? ctx().collection.add_sample(rec) : Collection::kNotAdded;
  found_blocked_at(w, charged_stack_, read_in_call_, package_unsettled_ ? 0 : cpu_ns);
  note_library_wait(tid, charged_stack_, cpu_ns, w.pending_wait_ns);
  charged(w);
  return Charged::kYes;
}

void WaitEngine::settle_loop_wait(pid_t tid, WaitThread& w, const SampleRecord& rec) {
  switch (awaits_.classify(rec.frames, rec.depth, rec.truncated)) {
    case AwaitScanner::LoopWait::kIdle:
      w.loop_idle_ns += w.pending_wait_ns;
      break;
    case AwaitScanner::LoopWait::kNoLoop:
      awaits_.blocked_outside_loop(tid, w.pending_wait_ns);
      [[fallthrough]];
    case AwaitScanner::LoopWait::kInLoop:
      if (rec.depth > 0) (void)ctx().collection.add_sample(rec);
      break;
  }
  charged(w);
}

void WaitEngine::note_young(pid_t tid, WaitThread& w) {
  if (!platform::thread_is_blocked(tid)) return;
  // A note is an instant of the thread's life, taken whatever it waited since the last
  // tick. Taken only of threads with wait not yet charged, it skipped a thread's first
  // tick (its queued time just taken off) far more often in its first wait than in its
  // later ones: a third of the blocked threads in a 3 ms wait went unnoted, a twentieth of
  // those in the 1 ms wait after it. Its clock is read here, not at the tick's start, so
  // that the read below is thrown away only when the thread ran during it, not during the
  // tick's other system calls, which a short wait outlasts less often than a long one.
  uint64_t cpu_ns = 0;
  if (!platform::thread_cpu_ns(tid, &cpu_ns)) return;
  // Its stack is read as a charge's would be, with nothing charged: what it waited so far
  // may have been spent on other lines, and goes where its kind's notes say.
  const uint64_t pending = w.pending_wait_ns;
  w.pending_wait_ns = 0;
  charged_stack_ = Collection::kNotAdded;
  const Charged read = charge_blocked(tid, w, cpu_ns);
  w.pending_wait_ns = pending;
  if (read == Charged::kYes && charged_stack_ != Collection::kNotAdded) {
    kind_waits_.note(w.kind, charged_stack_);
  }
}

void WaitEngine::charge_by_kind(pid_t tid, const WaitThread& w, uint64_t wait_ns) {
  if (wait_ns == 0) return;
  const std::vector<KindWaits::Share> shares = kind_waits_.split(w.kind, wait_ns);
  if (shares.empty()) kind_waits_.hold(w.kind, tid, wait_ns);
  for (const KindWaits::Share& share : shares) {
    Times t;
    t.wait_ns = share.wait_ns;
    ctx().collection.add_to_stack(share.stack, tid, t);
  }
}

void WaitEngine::thread_ended(const ProfiledThread& thread, const ThreadEnd& how) {
  auto it = threads_.find(thread.tid);
  if (it == threads_.end()) return;
  WaitThread& w = it->second;
  if (how.by_itself && w.has_kind && ctx().running.load()) {
    // Its wait since it was last charged (it is running now: none of it is being spent).
    const uint64_t now = platform::monotonic_ns();
    const uint64_t cpu = how.cpu.user_ns + how.cpu.system_ns;
    const uint64_t wall = now > w.last_wall_ns ? now - w.last_wall_ns : 0;
    accrue(thread.tid, w, wall, cpu > w.last_cpu_ns ? cpu - w.last_cpu_ns : 0);
    settle_queued(thread.tid, w);
    charge_by_kind(thread.tid, w, w.pending_wait_ns);
  }
  ctx().collection.library_waits().forget(thread.tid, platform::monotonic_ns());
  threads_.erase(it);
}

void WaitEngine::after_fork_child() {
  threads_.clear();
  ctx().collection.library_waits().clear();
  kind_waits_.clear();
  awaits_.reset();
  await_places_.clear();
  gil_state_.forget();
}

void WaitEngine::accrue(pid_t tid, WaitThread& w, uint64_t wall_ns, uint64_t used_ns) {
  w.pending_wait_ns += wall_ns > used_ns ? wall_ns - used_ns : 0;
  if (used_ns > 0) w.ran_unread = true;
  // Settled only when there is enough to charge: a thread on the CPU gathers a few
  // microseconds a tick (its clock and ours are read at different instants), and reading
  // the kernel's file for them every tick was most of this thread's own CPU time.
  if (w.pending_wait_ns >= interval_ns_ / 2) settle_queued(tid, w);
}

void WaitEngine::settle_queued(pid_t tid, WaitThread& w) {
  // Time off the CPU may have been spent queued for one (a loaded machine) rather than
  // waiting for anything of the thread's own: that is not the program's wait. The kernel
  // adds a stretch spent queued to its count only when the thread gets a CPU, and its
  // count and ours are read at slightly different instants, so queued time is kept until
  // there is wait not yet charged to take it off: dropping it would leave every such
  // stretch counted as wait. Read only if the thread ran since the last read (a queued
  // thread's time is not in the count until it runs), and before any wait is charged.
  uint64_t delay = 0;
  if (!w.ran_unread || w.pending_wait_ns == 0) return;
  if (!platform::thread_run_delay_ns(tid, &delay)) return;
  w.ran_unread = false;
  w.queued_ns += delay > w.run_delay_ns ? delay - w.run_delay_ns : 0;
  w.run_delay_ns = delay;
  const uint64_t queued = std::min(w.pending_wait_ns, w.queued_ns);
  w.pending_wait_ns -= queued;
  w.queued_ns -= queued;
}

bool WaitEngine::held_for_queueing(pid_t tid, WaitThread& w) {
  // A thread queued for a CPU is not waiting for anything of its own, and the time it has
  // queued so far is not yet in the kernel's count: it gets one interval for that to show,
  // whichever way its stack is read this interval, and then is charged as it is. A
  // deferral older than that (its wait was taken off as queued time since) is spent.
  if (w.deferred_at == ticks_) return true;
  const bool blocked = platform::thread_is_blocked(tid);
  if (!blocked) w.running_tick = ticks_;
  if (w.deferred_at == ticks_ - 1 || blocked) return false;
  w.deferred_at = ticks_;
  return true;
}

bool WaitEngine::blocked_lately(const WaitThread& w) const {
  // Running now (or queued for a CPU), its wait since it was last charged was waited
  // before: where it was last found blocked in a call, if that was lately. Charged where
  // it runs, the end of every block went to the line after it: a loop blocking 20 ms on
  // recv() and then computing 20 ms had 20-30 % of its recv() wait on the computing line.
  return w.running_tick == ticks_ && w.blocked_stack != Collection::kNotAdded &&
         ticks_ - w.blocked_tick <= kBlockedLately;
}

void WaitEngine::charge_where_it_blocked(pid_t tid, WaitThread& w) {
  Times t;
  t.wait_ns = w.pending_wait_ns;
  if (t.wait_ns > 0) ctx().collection.add_to_stack(w.blocked_stack, tid, t);
  charged_stack_ = w.blocked_stack;
  charged(w);
}

void WaitEngine::found_blocked_at(WaitThread& w, size_t stack, bool in_a_call,
                                  uint64_t cpu_ns) const {
  if (!in_a_call || w.running_tick == ticks_) return;  // not where it blocks
  w.blocked_stack = stack;
  w.blocked_tick = ticks_;
  w.blocked_cpu_ns = cpu_ns;
}

// A thread blocked in a call cannot return from it, nor change its stack, without running:
// one whose CPU clock has not moved since a look found it blocked there is there still.
// Its state and stack are not read again: for a pool's idle threads, reading each one's
// /proc files and stack every interval cost 18 µs a thread a tick (20 idle threads: 3.7 %
// of a CPU). One woken since and queued for a CPU, not yet run, is charged its queued time
// here too; the kernel counts that time once it runs, and it comes off the thread's next
// wait (settle_queued).
bool WaitEngine::charge_if_still_blocked(pid_t tid, WaitThread& w, uint64_t cpu_ns,
                                         uint64_t now_ns) {
  if (w.blocked_stack == Collection::kNotAdded || w.blocked_cpu_ns == 0 ||
      w.blocked_cpu_ns != cpu_ns) {
    return false;
  }
  w.blocked_tick = ticks_;
  ctx().collection.library_waits().still_there(tid, now_ns, cpu_ns);
  charge_where_it_blocked(tid, w);
  return true;
}

void WaitEngine::charged(WaitThread& w) {
  w.pending_wait_ns = 0;
  w.deferred_at = kNotDeferred;
  w.later = 0;
}

void WaitEngine::charge_awaits() {
  const shim::PauseThisThread paused;  // the scan's objects are not the program's
  std::vector<AwaitScanner::Suspended> found;
  std::vector<PyObject*> keep;
  awaits_.scan(&found, &keep);
  const std::unordered_map<pid_t, uint64_t> tails = awaits_.take_tails();
  if (!tails.empty() && ctx().running.load()) {
    std::lock_guard<std::mutex> lock(ctx().lock);
    charge_tails(tails);
  }
  if (ctx().running.load()) {
    // A loop thread no longer waiting for tasks, whose wait set aside for them found no
    // place of theirs: its own again, charged where it is next found blocked.
    std::lock_guard<std::mutex> lock(ctx().lock);
    for (auto& [tid, w] : threads_) {
      if (w.loop_idle_ns != 0 && !awaits_.holds(tid)) {
        w.pending_wait_ns += std::exchange(w.loop_idle_ns, 0);
      }
    }
  }
  if (!found.empty() && ctx().running.load()) {
    std::lock_guard<std::mutex> lock(ctx().lock);
    charge_earlier_places(&found);
    await_places_.clear();
    std::unordered_map<pid_t, uint64_t> tasks_on;  // suspended tasks per loop thread
    for (const auto& task : found) ++tasks_on[task.tid];
    // The loop thread's wait meanwhile, shared equally among its suspended tasks (what
    // is left of the division goes to the first).
    std::unordered_map<pid_t, std::pair<uint64_t, uint64_t>> shares;  // tid: share, rest
    for (const auto& [tid, n] : tasks_on) {
      auto it = threads_.find(tid);
      if (it == threads_.end()) continue;
      settle_queued(tid, it->second);
      const uint64_t wait = std::exchange(it->second.loop_idle_ns, 0) + it->second.pending_wait_ns;
      if (wait == 0) continue;
      charged(it->second);
      shares[tid] = {wait / n, wait % n};
    }
    // Tasks suspended at the same place add one sample: a program with thousands of tasks
    // at one await would otherwise add, and journal, thousands of samples every scan.
    std::vector<size_t> order(found.size());
    std::iota(order.begin(), order.end(), size_t{0});
    const auto before = [&found](size_t a, size_t b) {
      const AwaitScanner::Suspended& x = found[a];
      const AwaitScanner::Suspended& y = found[b];
      if (x.tid != y.tid) return x.tid < y.tid;
      return std::lexicographical_compare(
          x.frames.begin(), x.frames.end(), y.frames.begin(), y.frames.end(),
          [](const RawFrame& f, const RawFrame& g) {
            return f.code != g.code ? f.code < g.code : f.instr_offset < g.instr_offset;
          });
    };
    std::sort(order.begin(), order.end(), before);
    for (size_t first = 0; first < order.size();) {
      size_t end = first + 1;
      while (end < order.size() && !before(order[first], order[end])) ++end;
      const AwaitScanner::Suspended& place = found[order[first]];
      uint64_t await_ns = 0;
      for (size_t k = first; k < end; ++k) await_ns += found[order[k]].charge;
      SampleRecord& rec = wait_record(place.tid, await_ns);
      rec.kind = SampleKind::kAwait;
      rec.depth = static_cast<uint16_t>(place.frames.size());
      rec.truncated = false;
      std::reverse_copy(place.frames.begin(), place.frames.end(), rec.frames);  // innermost first
      const size_t stack = ctx().collection.add_sample(rec);
      const bool added = stack != Collection::kNotAdded;
      if (added) {
        AwaitPlace kept{place.tid, stack, {}, place.stands_for};
        for (size_t k = first; k < end; ++k) {
          const AwaitScanner::Suspended& task = found[order[k]];
          ctx().collection.add_task_await(task.name, task.coroutine, task.charge);
          kept.tasks.emplace_back(task.name, task.coroutine);
        }
        await_places_.push_back(std::move(kept));
        auto share = shares.find(place.tid);
        if (share != shares.end()) {
          rec.kind = SampleKind::kWait;
          rec.wait_ns =
              share->second.first * (end - first) + std::exchange(share->second.second, 0);
          if (rec.wait_ns > 0) (void)ctx().collection.add_sample(rec);
        }
      }
      first = end;
    }
  }
  // Outside the lock: letting a code object go may destroy it, and its death takes the lock.
  for (PyObject* code : keep) Py_DECREF(code);
}

void WaitEngine::charge_earlier_places(std::vector<AwaitScanner::Suspended>* found) {
  using Who = std::tuple<pid_t, std::string, std::string>;
  std::map<Who, size_t> last_seen;  // task: the stack where the last scan found it
  for (AwaitScanner::Suspended& task : *found) {
    if (task.earlier == 0) continue;
    if (last_seen.empty()) {  // made once, and only for a scan that needs it
      for (const AwaitPlace& place : await_places_) {
        for (const auto& [name, coroutine] : place.tasks) {
          last_seen.emplace(Who{place.tid, name, coroutine}, place.stack);
        }
      }
    }
    const auto at = last_seen.find(Who{task.tid, task.name, task.coroutine});
    if (at == last_seen.end()) continue;  // not found there: all of it stays here
    Times t;
    t.await_ns = task.earlier;
    ctx().collection.add_to_stack(at->second, task.tid, t);
    ctx().collection.add_task_await(task.name, task.coroutine, task.earlier);
    task.charge -= task.earlier;
  }
}

void WaitEngine::charge_tails(const std::unordered_map<pid_t, uint64_t>& tails) {
  for (const AwaitPlace& place : await_places_) {
    auto tail = tails.find(place.tid);
    if (tail == tails.end() || tail->second == 0) continue;
    const double each = static_cast<double>(tail->second) * place.stands_for;
    Times t;
    t.await_ns = static_cast<uint64_t>(each * static_cast<double>(place.tasks.size()) + 0.5);
    ctx().collection.add_to_stack(place.stack, place.tid, t);
    for (const auto& [name, coroutine] : place.tasks) {
      ctx().collection.add_task_await(name, coroutine, static_cast<uint64_t>(each + 0.5));
    }
  }
  // The loop's wait in its loop since that scan, set aside for the tasks, is theirs too:
  // shared among their places by the tasks at each, as a scan shares it.
  std::unordered_map<pid_t, size_t> tasks_on;
  for (const AwaitPlace& place : await_places_) tasks_on[place.tid] += place.tasks.size();
  for (const auto& [tid, n] : tasks_on) {
    auto it = threads_.find(tid);
    if (n == 0 || it == threads_.end() || tails.count(tid) == 0) continue;
    const uint64_t idle = std::exchange(it->second.loop_idle_ns, 0);
    for (const AwaitPlace& place : await_places_) {
      if (place.tid != tid || idle == 0) continue;
      Times t;
      t.wait_ns = idle / n * place.tasks.size();
      ctx().collection.add_to_stack(place.stack, tid, t);
    }
  }
  await_places_.clear();
}

bool WaitEngine::tick() {
  if (ctx().collection.event_loop_seen()) return true;  // look() on the wait thread
  return look();
}

bool WaitEngine::look() {
  if (++ticks_ % 100 == 0) {  // threads can gain a Python thread state later
    for (auto& [tid, w] : threads_) {
      if (w.python == 0) w.python = kRecheck;
    }
  }
  bool need_gil = false;
  const uint64_t now = platform::monotonic_ns();
  for (auto& [tid, w] : threads_) {
    uint64_t cpu = 0;
    if (!platform::thread_cpu_ns(tid, &cpu)) continue;
    const uint64_t wall = now - w.last_wall_ns;
    const uint64_t used = cpu > w.last_cpu_ns ? cpu - w.last_cpu_ns : 0;
    w.last_wall_ns = now;
    w.last_cpu_ns = cpu;
    // Native threads idle by design: not the user's wait. One due for a look at whether
    // it gained a Python thread state is looked at when the GIL is next taken for another
    // reason, never on its own account: taking the GIL every second for it would show a
    // thread state of ours in a faulthandler dump taken meanwhile (a C library's thread,
    // faulthandler's own watchdog, are such threads).
    if (w.python == 0 || w.python == kRecheck) continue;
    accrue(tid, w, wall, used);
    ctx().collection.library_waits().ran(tid, used, now);
    // An event loop's thread waiting in its loop while its tasks are suspended waits for
    // them: the scan shares that wait among them (charge_awaits). Blocked anywhere else
    // (a coroutine's time.sleep), it waits where it blocks.
    if (awaits_.holds(tid)) {
      // Never the GIL for it alone: a stack that needs it is read when a scan takes it.
      if (w.pending_wait_ns >= interval_ns_ / 2 && read_blocked(tid, w, cpu) == Charged::kYes) {
        settle_loop_wait(tid, w, scratch_);
      }
      continue;
    }
    if (w.has_kind && !w.grown) {
      if (now - w.started_ns < kYoungIntervals * interval_ns_) {
        note_young(tid, w);
        continue;
      }
      w.grown = true;  // from now on its waits are charged where it waits
      settle_queued(tid, w);
      charge_by_kind(tid, w, std::exchange(w.pending_wait_ns, 0));
    }
    if (w.pending_wait_ns >= interval_ns_ / 2 && !charge_if_still_blocked(tid, w, cpu, now) &&
        charge_blocked(tid, w, cpu) == Charged::kNeedsGil) {
      need_gil = true;
    }
  }
  if (ctx().collection.wants_call_sites()) need_gil = true;
  if (awaits_.due(ctx().collection, ticks_)) scan_awaits_ = need_gil = true;
  return need_gil;
}

void WaitEngine::work() {
  {
    std::lock_guard<std::mutex> lock(ctx().lock);
    if (ctx().collection.event_loop_seen() && !look()) return;
  }
  if (!ctx().running.load() || compat::is_finalizing()) return;
  // Holding the GIL freezes every other thread's frame stack (frames are pushed and popped
  // only under the GIL), so the blocked threads' stacks can be read safely from here.
  if (!gil_state_.acquire()) return;
  bool scan_awaits = false;
  if (ctx().running.load()) {
    std::lock_guard<std::mutex> lock(ctx().lock);
    scan_awaits = std::exchange(scan_awaits_, false);
    ctx().collection.build_wanted_call_sites(bytecode_);
    std::unordered_set<pid_t> python_tids;
    for (PyThreadState* ts = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
         ts != nullptr; ts = PyThreadState_Next(ts)) {
      const pid_t tid = compat::native_tid(ts);
      auto it = threads_.find(tid);
      if (it == threads_.end()) continue;
      python_tids.insert(tid);
      WaitThread& w = it->second;
      w.python = 1;
      w.tstate = ts;
      if (w.pending_wait_ns == 0) continue;
      if (awaits_.holds(tid)) {
        if (w.pending_wait_ns < interval_ns_ / 2 || held_for_queueing(tid, w)) continue;
        SampleRecord& rec = wait_record(tid, w.pending_wait_ns);
        Leaf leaf;
        rec.depth = walk_stack(ts, rec.frames, &rec.truncated, &leaf);
        settle_loop_wait(tid, w, rec);
        continue;
      }
      if (w.has_kind && !w.grown) continue;  // a young thread's wait goes by its kind's notes
      if (held_for_queueing(tid, w)) continue;
      settle_queued(tid, w);  // about to be charged: its queued time comes off first
      if (w.pending_wait_ns == 0) continue;
      if (blocked_lately(w)) {
        charge_where_it_blocked(tid, w);
        continue;
      }
      SampleRecord& rec = wait_record(tid, w.pending_wait_ns);
      Leaf leaf;
      rec.depth = walk_stack(ts, rec.frames, &rec.truncated, &leaf);
      PyCodeObject* no_table = nullptr;
      blocked_package_ = guarded_library_package(leaf, &no_table);
      if (no_table != nullptr) ctx().collection.want_call_site_copy(no_table);
      const size_t stack = rec.depth > 0 ? ctx().collection.add_sample(rec) : Collection::kNotAdded;
      // Read under the GIL, which keeps its frames as read: if it runs since, it moved.
      uint64_t cpu_ns = 0;
      (void)platform::thread_cpu_ns(tid, &cpu_ns);  // 0 when unread: the note then ages out
      found_blocked_at(w, stack, at_call(sampling_state(), leaf), package_unsettled_ ? 0 : cpu_ns);
      note_library_wait(tid, stack, cpu_ns, w.pending_wait_ns);
      charged(w);
    }
    for (auto& [tid, w] : threads_) {
      if (python_tids.count(tid) == 0) {
        w.python = 0;
        w.tstate = nullptr;
        w.pending_wait_ns = 0;
      }
    }
  }
  if (scan_awaits && ctx().running.load()) charge_awaits();
  gil_state_.release();
}

}  // namespace spyglass::cpython
