#define Py_BUILD_CORE 1
#include "await_scan.hpp"

#include <Python.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "../platform/clock.hpp"
#include "collection.hpp"
#include "compat/asyncio.hpp"

namespace spyglass::cpython {

namespace {

// The attribute and method names a scan looks up, made once: looking a name up by its C
// string would decode and hash it again for every task of every scan (the bulk of a
// scan's cost when a program has thousands of tasks).
struct Names {
  PyObject* done;
  PyObject* get_loop;
  PyObject* is_running;
  PyObject* thread_id;
  PyObject* get_coro;
  PyObject* get_name;
  PyObject* qualname;
  PyObject* data;
  PyObject* scheduled_tasks;
  PyObject* asyncio_tasks;
  PyObject* fut_waiter;
};

// GIL held: makes each name still missing; false (no error set) when one cannot be made
// yet, to be tried again at the next call. Made names are kept for the life of the process.
bool intern_each(PyObject** const* slots, const char* const* texts, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (*slots[i] == nullptr) *slots[i] = PyUnicode_InternFromString(texts[i]);
    if (*slots[i] == nullptr) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

// GIL held: the names, or null when one could not be made (the scan then reads nothing).
const Names* names() {
  static Names made{};
  static bool ready = false;
  if (ready) return &made;
  PyObject** const slots[] = {&made.done,          &made.get_loop,  &made.is_running,
                              &made.thread_id,     &made.get_coro,  &made.get_name,
                              &made.qualname,      &made.data,      &made.scheduled_tasks,
                              &made.asyncio_tasks, &made.fut_waiter};
  const char* const texts[] = {"done",          "get_loop",   "is_running",
                               "_thread_id",    "get_coro",   "get_name",
                               "__qualname__",  "data",       compat::kScheduledTasksName,
                               "asyncio.tasks", "_fut_waiter"};
  static_assert(std::size(slots) == std::size(texts));
  ready = intern_each(slots, texts, std::size(slots));
  return ready ? &made : nullptr;
}

// A new reference to `obj.name`, or null (the error cleared).
PyObject* attr(PyObject* obj, PyObject* name) {
  PyObject* value = name != nullptr ? PyObject_GetAttr(obj, name) : nullptr;
  if (value == nullptr) PyErr_Clear();
  return value;
}

// A new reference to what `obj.name()` returns, or null (the error cleared).
PyObject* call(PyObject* obj, PyObject* name) {
  PyObject* value = PyObject_CallMethodNoArgs(obj, name);
  if (value == nullptr) PyErr_Clear();
  return value;
}

// The result of `obj.name()` as a truth value; `fallback` when the call fails.
bool call_bool(PyObject* obj, PyObject* name, bool fallback) {
  PyObject* value = call(obj, name);
  if (value == nullptr) return fallback;
  const int truth = PyObject_IsTrue(value);
  Py_DECREF(value);
  if (truth < 0) PyErr_Clear();
  return truth < 0 ? fallback : truth == 1;
}

std::string text_of(PyObject* obj) {
  if (obj == nullptr || !PyUnicode_Check(obj)) return {};
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(obj, &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    return {};
  }
  return std::string(utf8, static_cast<size_t>(size));
}

// The attribute names of each kind of awaitable that has a frame: coroutines, generators
// (types.coroutine and `yield from` chains) and async generators.
struct ChainNames {
  PyObject* awaiting;
  PyObject* running;
};

// GIL held: the names of `obj`'s kind, or null (not an awaitable with a frame, or the
// names could not be made: the next call tries again).
const ChainNames* chain_names(PyObject* obj) {
  static ChainNames kinds[3]{};
  static const char* const texts[3][2] = {
      {"cr_await", "cr_running"}, {"gi_yieldfrom", "gi_running"}, {"ag_await", "ag_running"}};
  const int kind = PyCoro_CheckExact(obj)       ? 0
                   : PyGen_Check(obj)           ? 1
                   : PyAsyncGen_CheckExact(obj) ? 2
                                                : -1;
  if (kind < 0) return nullptr;
  ChainNames& names = kinds[kind];
  PyObject** const slots[2] = {&names.awaiting, &names.running};
  return intern_each(slots, texts[kind], 2) ? &names : nullptr;
}

// GIL held: new references to at most `most` of the entries of `set`, picked uniformly at
// random when it holds more (reservoir sampling); its size in `all`. The set's table is
// read in place, as nothing runs meanwhile: copying a set of thousands of tasks' weak
// references to a list, every scan, to read 256 of them was most of a scan's cost.
void pick_entries(PyObject* set, size_t most, std::minstd_rand& rng, std::vector<PyObject*>* out,
                  size_t* all) {
  const auto* s = reinterpret_cast<const PySetObject*>(set);
  size_t seen = 0;
  out->reserve(most);
  for (Py_ssize_t i = 0; i <= s->mask; ++i) {
    const setentry& e = s->table[i];
    // Unused slots have no key; a removed entry's key is a placeholder with hash -1, a
    // hash no object has.
    if (e.key == nullptr || e.hash == -1) continue;
    if (out->size() < most) {
      out->push_back(e.key);
    } else if (const size_t j = static_cast<size_t>(rng()) % (seen + 1); j < most) {
      (*out)[j] = e.key;
    }
    ++seen;
  }
  for (PyObject* key : *out) Py_INCREF(key);
  *all = seen;
}

// A loop thread's busy clock: its CPU time and its time queued for a CPU (on a loaded
// machine a task's work takes that much longer than its CPU). False once it is gone.
bool busy_clock(pid_t tid, uint64_t* ns) {
  uint64_t queued = 0;
  if (!platform::thread_cpu_ns(tid, ns)) return false;
  if (platform::thread_run_delay_ns(tid, &queued)) *ns += queued;
  return true;
}

// The kernel id of the thread whose Python thread state has `ident` (threading.get_ident()
// of the loop's thread), or 0.
pid_t tid_of_ident(unsigned long ident) {
  for (PyThreadState* ts = PyInterpreterState_ThreadHead(PyInterpreterState_Main()); ts != nullptr;
       ts = PyThreadState_Next(ts)) {
    if (ts->thread_id == ident) return compat::native_tid(ts);
  }
  return 0;
}

}  // namespace

bool AwaitScanner::due(const Collection& collection, int tick) const {
  if (!collection.event_loop_seen()) return false;
  if (next_scan_ns_ != 0 && platform::monotonic_ns() < next_scan_ns_) return false;
  return empty_scans_ < kEagerScans || tick % kIdleTicks == 0;
}

bool AwaitScanner::holds(pid_t tid) const {
  return std::find(loop_tids_.begin(), loop_tids_.end(), tid) != loop_tids_.end();
}

bool AwaitScanner::read_task(PyObject* task, Suspended* out, std::vector<PyObject*>* keep,
                             LoopSeen* loop_seen) {
  const Names* n = names();
  if (n == nullptr || call_bool(task, n->done, true)) return false;
  PyObject* loop = call(task, n->get_loop);
  if (loop == nullptr) return false;
  // Most programs run one loop: what it is doing is read once per scan, not per task.
  if (loop != loop_seen->loop) {
    Py_INCREF(loop);
    Py_XSETREF(loop_seen->loop, loop);
    // A task of a loop that is not running waits for nothing in the meantime.
    loop_seen->running = call_bool(loop, n->is_running, false);
    loop_seen->tid = 0;
    if (loop_seen->running) {
      // asyncio's loops keep their thread's ident; a loop that does not (uvloop) is taken
      // to run on the main thread.
      PyObject* ident = attr(loop, n->thread_id);
      if (ident != nullptr && PyLong_Check(ident)) {
        const unsigned long value = PyLong_AsUnsignedLong(ident);
        if (PyErr_Occurred() != nullptr) PyErr_Clear();
        loop_seen->tid = tid_of_ident(value);
      }
      Py_XDECREF(ident);
      if (loop_seen->tid == 0) loop_seen->tid = getpid();
    }
  }
  Py_DECREF(loop);
  if (!loop_seen->running) return false;
  out->tid = loop_seen->tid;

  PyObject* obj = call(task, n->get_coro);
  if (obj == nullptr) return false;
  // A task whose coroutine is running is the one on its thread's stack: its time is the
  // thread's own CPU and wait, sampled there.
  const ChainNames* chain = chain_names(obj);
  if (chain == nullptr) {
    Py_DECREF(obj);
    return false;
  }
  PyObject* running_now = attr(obj, chain->running);
  const bool is_running = running_now != nullptr && PyObject_IsTrue(running_now) == 1;
  Py_XDECREF(running_now);
  if (is_running) {
    Py_DECREF(obj);
    return false;
  }
  PyObject* qualname = attr(obj, n->qualname);
  out->coroutine = text_of(qualname);
  Py_XDECREF(qualname);
  out->frames.clear();
  while (obj != nullptr && chain != nullptr &&
         out->frames.size() < static_cast<size_t>(kMaxStackDepth)) {
    compat::Frame* f = compat::generator_frame(obj);
    PyCodeObject* code = f != nullptr ? compat::code_of(f) : nullptr;
    if (code != nullptr) {
      // The code must outlive the samples made of it: it is let go once they are added.
      Py_INCREF(code);
      keep->push_back(reinterpret_cast<PyObject*>(code));
      out->frames.push_back(
          RawFrame{reinterpret_cast<uintptr_t>(code), compat::instr_offset(f, code), 0});
    }
    PyObject* next = attr(obj, chain->awaiting);
    Py_DECREF(obj);
    obj = next != Py_None ? next : nullptr;
    if (next == Py_None) Py_DECREF(next);
    chain = obj != nullptr ? chain_names(obj) : nullptr;
  }
  Py_XDECREF(obj);
  PyObject* name = call(task, n->get_name);
  out->name = text_of(name);
  Py_XDECREF(name);
  return !out->frames.empty();
}

bool AwaitScanner::waits_as_before(PyObject* task,
                                   std::unordered_map<uintptr_t, PyObject*>* waiting) {
  PyObject* future = attr(task, names()->fut_waiter);
  bool same = false;
  if (future != nullptr && future != Py_None) {
    const auto key = reinterpret_cast<uintptr_t>(task);
    // A weak reference: the future is the same one only while it lives (a new one may
    // take a freed one's address), and the scan must not keep it alive.
    auto before = waiting_.find(key);
    same = before != waiting_.end() && compat::weakly_refers_to(before->second, future);
    PyObject* ref = PyWeakref_NewRef(future, nullptr);
    if (ref == nullptr) {
      PyErr_Clear();
    } else if (!waiting->emplace(key, ref).second) {
      Py_DECREF(ref);
    }
  }
  Py_XDECREF(future);
  return same;
}

void AwaitScanner::charge(std::vector<Suspended>* found, uint64_t now, uint64_t elapsed,
                          bool followed, size_t read, size_t all) {
  // Per loop thread: the time since the last scan that found tasks suspended on it, its
  // busy time since (on a CPU, or queued for one: on a loaded machine a task's work takes
  // longer than its CPU time), and the tasks on it that suspended anew. A scan that comes
  // while the loop's one task runs finds none: the loop's idle time before it is then
  // charged at the next scan that finds the task (charged from the scan before, it was
  // lost; charged whole, the task's work was await).
  struct Loop {
    uint64_t since = 0;
    uint64_t busy = 0;
    uint64_t anew = 0;
  };
  std::unordered_map<pid_t, Loop> loops;
  for (const Suspended& s : *found) loops[s.tid].anew += s.anew ? 1 : 0;
  for (auto& [tid, loop] : loops) {
    loop.since = elapsed;
    uint64_t cpu = 0;
    if (!busy_clock(tid, &cpu)) continue;
    auto before = loop_cpu_.find(tid);
    if (followed && before != loop_cpu_.end() && cpu >= before->second.busy_ns) {
      loop.since = now - before->second.at_ns;
      loop.busy = cpu - before->second.busy_ns;
    }
    loop_cpu_[tid] = LoopClock{cpu, now};
  }
  for (Suspended& s : *found) {
    const Loop& loop = loops[s.tid];
    uint64_t c = loop.since;
    if (s.anew) {
      // Its share of the loop's busy time: the tasks read stand for all of them.
      const auto own =
          static_cast<uint64_t>(static_cast<double>(loop.busy) * static_cast<double>(read) /
                                (static_cast<double>(loop.anew) * static_cast<double>(all)));
      c = c > own ? c - own : 0;
    }
    s.charge = read < all ? c / read * all + c % read * all / read : c;
    s.stands_for = static_cast<double>(all) / static_cast<double>(read);
    // A task that moved to another await across a long gap (scans resting, or this thread
    // kept off a CPU) left the first at a moment no scan saw: half of the gap goes where
    // the last scan found it. All of it went to the second: a 0.1 s stall of the scans as
    // a 0.4 s await ended put 0.1 s on the three 0.1 s awaits after it.
    if (s.anew && loop.since > kLongGapIntervals * interval_ns_) s.earlier = s.charge / 2;
  }
}

void AwaitScanner::scan(std::vector<Suspended>* found, std::vector<PyObject*>* keep) {
  const uint64_t now = platform::monotonic_ns();
  // The time since the previous scan when that one came within a few intervals of its
  // due time (tasks were followed all along), else one interval.
  const bool followed = last_scan_ns_ != 0 && now <= next_scan_ns_ + 4 * interval_ns_;
  const uint64_t elapsed =
      followed || (empty_scans_ == 0 && last_scan_ns_ != 0) ? now - last_scan_ns_ : interval_ns_;
  // Worked out before this scan forgets the last: used if it finds no task.
  const bool had_tasks = empty_scans_ == 0 && last_scan_ns_ != 0;
  const uint64_t last_scan = last_scan_ns_;
  const std::vector<pid_t> last_loops = std::exchange(loop_tids_, {});
  tails_.clear();
  last_scan_ns_ = now;
  const uint64_t cpu_before = platform::this_thread_cpu_ns();
  ++empty_scans_;
  if (idle_codes_.empty()) find_loop_codes();
  const Names* n = names();
  // Only a program that imported asyncio has tasks; the scan imports nothing.
  PyObject* module = n != nullptr ? PyImport_GetModule(n->asyncio_tasks) : nullptr;
  PyObject* task_set = module != nullptr ? attr(module, n->scheduled_tasks) : nullptr;
  Py_XDECREF(module);
  // A WeakSet: its `data` is a set of weak references, those read taken out of it before
  // reading any task (reading one may run code that changes the set).
  PyObject* refs = task_set != nullptr ? attr(task_set, n->data) : nullptr;
  Py_XDECREF(task_set);
  // A program with many tasks has a sample of them read, each standing for n / read of
  // the tasks (their charge scaled so): a scan's cost stays bounded, the sums unbiased.
  size_t all = 0;
  std::vector<PyObject*> refs_read;
  if (refs != nullptr && PyAnySet_Check(refs))
    pick_entries(refs, kMaxTasksPerScan, rng_, &refs_read, &all);
  Py_XDECREF(refs);
  if (refs_read.empty()) {
    PyErr_Clear();
    if (had_tasks) tails_ = tails_since(last_scan, last_loops, now);
    outside_ns_.clear();
    rest_after(cpu_before);
    return;
  }
  const size_t read = refs_read.size();
  Suspended one;
  LoopSeen loop_seen;
  std::unordered_map<uintptr_t, PyObject*> waiting;
  for (size_t i = 0; i < read; ++i) {
    PyObject* task = PyObject_CallNoArgs(refs_read[i]);
    if (task == nullptr) {
      PyErr_Clear();
      continue;
    }
    if (task != Py_None && read_task(task, &one, keep, &loop_seen)) {
      one.anew = !waits_as_before(task, &waiting);
      if (!holds(one.tid)) loop_tids_.push_back(one.tid);
      found->push_back(std::move(one));
    }
    Py_DECREF(task);
  }
  Py_XDECREF(loop_seen.loop);
  for (PyObject* ref : refs_read) Py_DECREF(ref);
  release();  // the weak references of the scan before
  waiting_.swap(waiting);
  charge(found, now, elapsed, followed, read, all);
  if (!found->empty()) {
    empty_scans_ = 0;
  } else if (had_tasks) {
    tails_ = tails_since(last_scan, last_loops, now);
  }
  outside_ns_.clear();
  rest_after(cpu_before);
}

std::unordered_map<pid_t, uint64_t> AwaitScanner::tails_since(uint64_t from,
                                                              const std::vector<pid_t>& loops,
                                                              uint64_t now) {
  std::unordered_map<pid_t, uint64_t> out;
  const uint64_t since = now > from ? now - from : 0;
  for (pid_t tid : loops) {
    uint64_t cpu = 0;
    auto before = loop_cpu_.find(tid);
    if (before == loop_cpu_.end() || !busy_clock(tid, &cpu)) {
      out[tid] = 0;  // the loop's thread is gone: its busy time is not known
      continue;
    }
    const uint64_t busy = cpu > before->second.busy_ns ? cpu - before->second.busy_ns : 0;
    uint64_t tail = since > busy ? since - busy : 0;
    auto outside = outside_ns_.find(tid);  // charged where the thread blocked, loop ended
    if (outside != outside_ns_.end()) tail = tail > outside->second ? tail - outside->second : 0;
    out[tid] = tail;
    // Charged up to now: a task found later on this loop is charged from here on.
    before->second = LoopClock{cpu, now};
  }
  return out;
}

std::unordered_map<pid_t, uint64_t> AwaitScanner::tails_at(uint64_t now) {
  if (empty_scans_ != 0 || last_scan_ns_ == 0) return {};
  return tails_since(last_scan_ns_, loop_tids_, now);
}

void AwaitScanner::release() {
  for (const auto& [task, ref] : waiting_) Py_DECREF(ref);
  waiting_.clear();
}

namespace {

// GIL held: the code object of `module.owner.function` (no owner: a module-level function),
// or 0. Looked up in modules already imported, never importing one.
uintptr_t function_code(const char* module, const char* owner, const char* function) {
  PyObject* name = PyUnicode_FromString(module);
  PyObject* mod = name != nullptr ? PyImport_GetModule(name) : nullptr;
  Py_XDECREF(name);
  PyObject* holder = mod;
  if (mod != nullptr && owner != nullptr) {
    holder = PyObject_GetAttrString(mod, owner);
    Py_DECREF(mod);
  }
  PyObject* fn = holder != nullptr ? PyObject_GetAttrString(holder, function) : nullptr;
  Py_XDECREF(holder);
  uintptr_t code = 0;
  if (fn != nullptr && PyFunction_Check(fn)) {
    PyObject* c = PyFunction_GetCode(fn);  // borrowed
    Py_INCREF(c);                          // kept for the life of the process
    code = reinterpret_cast<uintptr_t>(c);
  }
  Py_XDECREF(fn);
  if (PyErr_Occurred() != nullptr) PyErr_Clear();
  return code;
}

bool has(const std::vector<uintptr_t>& codes, uintptr_t code) {
  return std::find(codes.begin(), codes.end(), code) != codes.end();
}

}  // namespace

void AwaitScanner::find_loop_codes() {
  const uintptr_t run_once = function_code("asyncio.base_events", "BaseEventLoop", "_run_once");
  if (run_once == 0) return;        // asyncio not imported yet: the next scan looks again
  idle_codes_.push_back(run_once);  // first: none until then
  static constexpr const char* kSelectors[] = {
      "_PollLikeSelector", "SelectSelector", "EpollSelector", "DevpollSelector", "KqueueSelector"};
  for (const char* selector : kSelectors) {
    if (uintptr_t c = function_code("selectors", selector, "select")) idle_codes_.push_back(c);
  }
  if (uintptr_t c = function_code("asyncio.runners", nullptr, "run")) idle_codes_.push_back(c);
  if (uintptr_t c = function_code("asyncio.runners", "Runner", "run")) idle_codes_.push_back(c);
  for (const char* f : {"run_forever", "run_until_complete"}) {
    if (uintptr_t c = function_code("asyncio.base_events", "BaseEventLoop", f)) {
      loop_codes_.push_back(c);
    }
  }
}

AwaitScanner::LoopWait AwaitScanner::classify(const RawFrame* frames, size_t depth,
                                              bool truncated) const {
  if (idle_codes_.empty() || depth == 0 || has(idle_codes_, frames[0].code)) {
    return LoopWait::kIdle;
  }
  for (size_t i = 1; i < depth; ++i) {
    if (has(idle_codes_, frames[i].code) || has(loop_codes_, frames[i].code)) {
      return LoopWait::kInLoop;
    }
  }
  // A loop's frames may lie beyond a stack cut short.
  return truncated ? LoopWait::kInLoop : LoopWait::kNoLoop;
}

void AwaitScanner::rest_after(uint64_t cpu_before_ns) {
  // The scan holds the GIL, so the program stands still meanwhile: the next one waits
  // until the scans' share of the time is back to 1 / kTimePerScanTime at most. A program
  // with thousands of tasks is then scanned less often than every interval, each scan
  // charging the longer time since the last. The scan's cost is this thread's CPU time
  // (a preemption or a pause of the GIL's is not its cost); the rest is capped, as the
  // time after the last scan of a run goes uncharged.
  const uint64_t spent = platform::this_thread_cpu_ns() - cpu_before_ns;
  const uint64_t rest = std::min(spent * (kTimePerScanTime - 1), kMaxRestIntervals * interval_ns_);
  next_scan_ns_ = platform::monotonic_ns() + rest;
}

}  // namespace spyglass::cpython
