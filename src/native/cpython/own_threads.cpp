// The collector's own threads (its control thread, its upkeep thread and the engines'
// workers) and os.fork().
// Since 3.12, os.fork() warns that a multi-threaded process may deadlock in the child,
// counting the process's threads as the kernel lists them: our threads would make every
// forking program warn under spyglass alone. So they stop before os.fork() and start again
// after it, in the parent. (Forks made below Python, by subprocess or C code, do not warn;
// for those the collector's pthread_atfork handlers keep its state consistent.)
#define Py_BUILD_CORE 1
#include <Python.h>

#include "../platform/signals.hpp"
#include "collector.hpp"
#include "compat/interpreter.hpp"
#include "python_errors.hpp"

namespace spyglass::cpython {

namespace {

int resume_pending(void*) {
  if (Collector* c = Collector::active()) c->resume_threads();
  return 0;
}

PyObject* before_fork(PyObject*, PyObject*) {
  if (Collector* c = Collector::active()) c->pause_threads();
  Py_RETURN_NONE;
}

PyObject* after_fork_in_parent(PyObject*, PyObject*) {
  if (Collector::active() != nullptr) {
    if (compat::kForkWarnsAfterHooks) {
      // The warning counts threads after this hook: start them at the next chance the
      // main thread gets, right after os.fork() returns.
      if (Py_AddPendingCall(resume_pending, nullptr) != 0) resume_pending(nullptr);
    } else {
      resume_pending(nullptr);
    }
  }
  Py_RETURN_NONE;
}

PyMethodDef g_before = {"_spyglass_before_fork", before_fork, METH_NOARGS, nullptr};
PyMethodDef g_after = {"_spyglass_after_fork_in_parent", after_fork_in_parent, METH_NOARGS,
                       nullptr};

}  // namespace

void Collector::start_threads() {
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    threads_paused_ = false;
    work_wanted_ = 0;
  }
  {
    const platform::AllSignalsBlocked blocked;  // inherited by our threads
    control_ = std::thread([this] { control_loop(); });
    workers_.emplace_back([this] { upkeep_loop(1); });
    size_t index = 2;
    for (auto& engine : engines_) {
      if (!engine->has_worker()) continue;
      Engine& e = *engine;
      workers_.emplace_back([this, &e, index] { worker_loop(e, index); });
      ++index;
    }
  }
  // Our own threads must never be sampled: wait until each has told us its id.
  for (size_t i = 0; i < own_count_; ++i) {
    while (own_tids_[i].load() == 0) std::this_thread::yield();
  }
}

void Collector::join_threads() {
  // A worker may be queued for the GIL: let go of it while joining.
  Py_BEGIN_ALLOW_THREADS
    if (control_.joinable()) control_.join();
    for (std::thread& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
  Py_END_ALLOW_THREADS
  workers_.clear();
  for (auto& tid : own_tids_) tid.store(0);
}

void Collector::pause_threads() {
  if (!running_.load() || threads_paused_) return;
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    threads_paused_ = true;
  }
  wake_.notify_all();
  upkeep_wake_.notify_all();
  work_wake_.notify_all();
  join_threads();
}

void Collector::resume_threads() {
  if (!running_.load() || !threads_paused_) return;
  start_threads();
}

void watch_python_forks() {
  static bool registered = false;
  if (registered) return;
  PyObject* os = PyImport_ImportModule("os");
  if (os == nullptr) {
    clear_error_keeping_interrupt();
    return;
  }
  PyObject* register_at_fork = PyObject_GetAttrString(os, "register_at_fork");
  PyObject* before = PyCFunction_New(&g_before, nullptr);
  PyObject* after = PyCFunction_New(&g_after, nullptr);
  PyObject* args = PyTuple_New(0);
  PyObject* kwargs = Py_BuildValue("{sOsO}", "before", before, "after_in_parent", after);
  PyObject* result = nullptr;
  if (register_at_fork != nullptr && before != nullptr && after != nullptr && args != nullptr &&
      kwargs != nullptr) {
    result = PyObject_Call(register_at_fork, args, kwargs);
  }
  registered = result != nullptr;
  if (result == nullptr) clear_error_keeping_interrupt();
  Py_XDECREF(result);
  Py_XDECREF(kwargs);
  Py_XDECREF(args);
  Py_XDECREF(after);
  Py_XDECREF(before);
  Py_XDECREF(register_at_fork);
  Py_DECREF(os);
}

}  // namespace spyglass::cpython
