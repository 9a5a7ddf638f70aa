#define Py_BUILD_CORE 1
#include "await_scan.hpp"

#include <Python.h>
#include <unistd.h>

#include <algorithm>

#include "../platform/clock.hpp"
#include "collection.hpp"
#include "compat/asyncio.hpp"

namespace spyglass::cpython {

namespace {

// A new reference to `obj.name`, or null (the error cleared).
PyObject* attr(PyObject* obj, const char* name) {
  PyObject* value = PyObject_GetAttrString(obj, name);
  if (value == nullptr) PyErr_Clear();
  return value;
}

// The result of `obj.name()` as a truth value; `fallback` when the call fails.
bool call_bool(PyObject* obj, const char* name, bool fallback) {
  PyObject* value = PyObject_CallMethod(obj, name, nullptr);
  if (value == nullptr) {
    PyErr_Clear();
    return fallback;
  }
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
  const char* frame;
  const char* awaiting;
  const char* running;
};

const ChainNames* chain_names(PyObject* obj) {
  static const ChainNames kCoro{"cr_frame", "cr_await", "cr_running"};
  static const ChainNames kGen{"gi_frame", "gi_yieldfrom", "gi_running"};
  static const ChainNames kAsyncGen{"ag_frame", "ag_await", "ag_running"};
  if (PyCoro_CheckExact(obj)) return &kCoro;
  if (PyGen_Check(obj)) return &kGen;
  if (PyAsyncGen_CheckExact(obj)) return &kAsyncGen;
  return nullptr;
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
  return empty_scans_ < kEagerScans || tick % kIdleTicks == 0;
}

bool AwaitScanner::holds(pid_t tid) const {
  return std::find(loop_tids_.begin(), loop_tids_.end(), tid) != loop_tids_.end();
}

bool AwaitScanner::read_task(PyObject* task, Suspended* out, std::vector<PyObject*>* keep) {
  if (call_bool(task, "done", true)) return false;
  PyObject* loop = PyObject_CallMethod(task, "get_loop", nullptr);
  if (loop == nullptr) {
    PyErr_Clear();
    return false;
  }
  // A task of a loop that is not running waits for nothing in the meantime.
  bool running = call_bool(loop, "is_running", false);
  out->tid = 0;
  if (running) {
    // asyncio's loops keep their thread's ident; a loop that does not (uvloop) is taken to
    // run on the main thread.
    PyObject* ident = attr(loop, "_thread_id");
    if (ident != nullptr && PyLong_Check(ident)) {
      const unsigned long value = PyLong_AsUnsignedLong(ident);
      if (PyErr_Occurred() != nullptr) PyErr_Clear();
      out->tid = tid_of_ident(value);
    }
    Py_XDECREF(ident);
    if (out->tid == 0) out->tid = getpid();
  }
  Py_DECREF(loop);
  if (!running) return false;

  PyObject* obj = PyObject_CallMethod(task, "get_coro", nullptr);
  if (obj == nullptr) {
    PyErr_Clear();
    return false;
  }
  // A task whose coroutine is running is the one on its thread's stack: its time is the
  // thread's own CPU and wait, sampled there.
  const ChainNames* names = chain_names(obj);
  if (names == nullptr) {
    Py_DECREF(obj);
    return false;
  }
  PyObject* qualname = attr(obj, "__qualname__");
  out->coroutine = text_of(qualname);
  Py_XDECREF(qualname);
  PyObject* running_now = attr(obj, names->running);
  const bool is_running = running_now != nullptr && PyObject_IsTrue(running_now) == 1;
  Py_XDECREF(running_now);
  if (is_running) {
    Py_DECREF(obj);
    return false;
  }
  out->frames.clear();
  while (obj != nullptr && names != nullptr &&
         out->frames.size() < static_cast<size_t>(kMaxStackDepth)) {
    PyObject* frame = attr(obj, names->frame);
    if (frame != nullptr && PyFrame_Check(frame)) {
      compat::Frame* f = compat::frame_of(reinterpret_cast<PyFrameObject*>(frame));
      PyCodeObject* code = compat::code_of(f);
      if (code != nullptr) {
        // The code must outlive the samples made of it: it is let go once they are added.
        Py_INCREF(code);
        keep->push_back(reinterpret_cast<PyObject*>(code));
        out->frames.push_back(
            RawFrame{reinterpret_cast<uintptr_t>(code), compat::instr_offset(f, code), 0});
      }
    }
    Py_XDECREF(frame);
    PyObject* next = attr(obj, names->awaiting);
    Py_DECREF(obj);
    obj = next != Py_None ? next : nullptr;
    if (next == Py_None) Py_DECREF(next);
    names = obj != nullptr ? chain_names(obj) : nullptr;
  }
  Py_XDECREF(obj);
  PyObject* name = PyObject_CallMethod(task, "get_name", nullptr);
  if (name == nullptr) PyErr_Clear();
  out->name = text_of(name);
  Py_XDECREF(name);
  return !out->frames.empty();
}

uint64_t AwaitScanner::scan(std::vector<Suspended>* found, std::vector<PyObject*>* keep) {
  const uint64_t now = platform::monotonic_ns();
  // Each suspended task is charged the time since the previous scan when that one came
  // within a few intervals (tasks were followed all along), else one interval.
  const bool followed = last_scan_ns_ != 0 && now - last_scan_ns_ <= 4 * interval_ns_ + 1;
  const uint64_t charge =
      followed || (empty_scans_ == 0 && last_scan_ns_ != 0) ? now - last_scan_ns_ : interval_ns_;
  last_scan_ns_ = now;
  loop_tids_.clear();
  ++empty_scans_;
  // Only a program that imported asyncio has tasks; the scan imports nothing.
  PyObject* module_name = PyUnicode_FromString("asyncio.tasks");
  PyObject* module = module_name != nullptr ? PyImport_GetModule(module_name) : nullptr;
  Py_XDECREF(module_name);
  PyObject* task_set = module != nullptr ? attr(module, compat::kScheduledTasksName) : nullptr;
  Py_XDECREF(module);
  // A WeakSet: its `data` is a set of weak references, copied to a list before reading any
  // task (reading one may run code that changes the set).
  PyObject* refs = task_set != nullptr ? attr(task_set, "data") : nullptr;
  Py_XDECREF(task_set);
  PyObject* list = refs != nullptr ? PySequence_List(refs) : nullptr;
  Py_XDECREF(refs);
  if (list == nullptr) {
    PyErr_Clear();
    return charge;
  }
  // A program with many tasks has a sample of them read, each standing for n / read of
  // the tasks (their charge scaled so): a scan's cost stays bounded, the sums unbiased.
  const auto n = static_cast<size_t>(PyList_GET_SIZE(list));
  const size_t read = std::min(n, kMaxTasksPerScan);
  if (read < n) {
    for (size_t i = 0; i < read; ++i) {  // the first `read` of a random permutation
      const size_t j = i + static_cast<size_t>(rng_()) % (n - i);
      PyObject* a = PyList_GET_ITEM(list, i);
      PyList_SET_ITEM(list, i, PyList_GET_ITEM(list, j));
      PyList_SET_ITEM(list, j, a);
    }
  }
  const uint64_t scaled = read < n ? charge / read * n + charge % read * n / read : charge;
  Suspended one;
  for (size_t i = 0; i < read; ++i) {
    PyObject* task = PyObject_CallNoArgs(PyList_GET_ITEM(list, static_cast<Py_ssize_t>(i)));
    if (task == nullptr) {
      PyErr_Clear();
      continue;
    }
    if (task != Py_None && read_task(task, &one, keep)) {
      if (!holds(one.tid)) loop_tids_.push_back(one.tid);
      found->push_back(std::move(one));
    }
    Py_DECREF(task);
  }
  Py_DECREF(list);
  if (!found->empty()) empty_scans_ = 0;
  return scaled;
}

}  // namespace spyglass::cpython
