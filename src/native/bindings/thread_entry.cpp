// Threads that _thread.start_new_thread starts directly, not through threading.Thread: a
// thread pool of a library, a server's thread per request. threading's threads say when
// they start and end (runtime/stdlib_patches.py); these were found only by the control
// thread's scan, an interval late, and one shorter than an interval not at all. The
// replacement for start_new_thread is native, as is the entry it gives the new thread,
// so that neither adds a frame to a traceback of the program's.
#include "thread_entry.hpp"

#include <Python.h>

#include <utility>

#include "../cpython/collector.hpp"
#include "../cpython/python_errors.hpp"

namespace py = pybind11;

namespace spyglass {
namespace {

// The entry a directly started thread runs: it registers, runs `function`, and says it
// ends however the function leaves (the error, if any, goes on to _thread as it was).
py::object run_thread(py::object function, py::args args, py::kwargs kwargs) {
  if (auto* c = cpython::Collector::active()) {
    py::object code = py::getattr(function, "__code__", py::none());
    c->thread_started(PyCode_Check(code.ptr()) ? reinterpret_cast<PyCodeObject*>(code.ptr())
                                               : nullptr);
  }
  struct Ending {
    Ending() = default;
    Ending(const Ending&) = delete;
    Ending& operator=(const Ending&) = delete;
    ~Ending() {
      if (auto* c = cpython::Collector::active()) c->thread_exiting();
    }
  } ending;
  return function(*args, **kwargs);
}

// threading.Thread.start() through this replacement (a threading imported after it binds
// it): the thread's _bootstrap says when it starts and ends itself.
bool is_threading_bootstrap(PyObject* function) {
  if (!PyMethod_Check(function)) return false;
  PyObject* threading = PyDict_GetItemString(PySys_GetObject("modules"), "threading");
  if (threading == nullptr) return false;
  PyObject* thread_type = PyObject_GetAttrString(threading, "Thread");
  if (thread_type == nullptr) {
    cpython::clear_error_keeping_interrupt();
    return false;
  }
  const int is = PyObject_IsInstance(PyMethod_GET_SELF(function), thread_type);
  Py_DECREF(thread_type);
  if (is < 0) cpython::clear_error_keeping_interrupt();
  return is > 0;
}

// _thread's own start_new_thread, once replaced: never released (threads may start while
// the interpreter shuts down).
PyObject* g_real_start = nullptr;

// What the new thread is given to run: shown as the function itself where _thread names it
// (an exception that ends the thread is "ignored in thread started by" the function).
struct ThreadEntry {
  py::object function;
};

py::object start_new_thread(py::object function, py::object args, py::object kwargs) {
  py::object real = py::reinterpret_borrow<py::object>(g_real_start);
  // Arguments _thread would refuse go to it as they are, for its own error.
  py::object entry = function;
  if (PyCallable_Check(function.ptr()) != 0 && PyTuple_Check(args.ptr()) &&
      !is_threading_bootstrap(function.ptr())) {
    entry = py::cast(ThreadEntry{function});
  }
  return kwargs.is_none() ? real(entry, args) : real(entry, args, kwargs);
}

// threading.Thread._bootstrap_inner, wrapped: says the thread starts (`started(thread)`,
// whose errors may not fail the thread), runs the original, and says it ends however the
// original leaves. Native, so that no frame of spyglass's sits under the thread's run():
// a wrapper in Python showed in traceback.print_stack(), inspect.stack(), faulthandler's
// dumps and debuggers, in every thread of the program.
struct BootstrapEntry {
  py::object started;
  py::object ending;
  py::object bootstrap;
};

py::object run_bootstrap(const BootstrapEntry& b, const py::object& thread) {
  try {
    b.started(thread);
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_Exception)) throw;
  }
  struct Ending {
    const py::object& ending;
    explicit Ending(const py::object& e) : ending(e) {}
    Ending(const Ending&) = delete;
    Ending& operator=(const Ending&) = delete;
    ~Ending() {
      try {
        ending();
      } catch (py::error_already_set&) {
        // Saying the thread ends may not fail it either.
      }
    }
  } end(b.ending);
  return b.bootstrap(thread);
}

}  // namespace

void add_thread_entry(py::module_& m) {
  py::class_<BootstrapEntry>(m, "BootstrapEntry",
                             "threading.Thread._bootstrap_inner, telling the profiler when "
                             "the thread starts and ends.")
      .def("__call__", &run_bootstrap)
      // Bound to a thread as the function it replaces is, also when read off the class and
      // set back or kept to call later (libraries that wrap _bootstrap_inner do).
      .def(
          "__get__",
          [](py::object self, py::object obj, const py::object& /*type*/) -> py::object {
            if (obj.is_none()) return self;
            return py::reinterpret_steal<py::object>(PyMethod_New(self.ptr(), obj.ptr()));
          },
          py::arg("obj"), py::arg("type") = py::none())
      .def_property_readonly("__wrapped__", [](const BootstrapEntry& b) { return b.bootstrap; })
      .def("__repr__", [](const BootstrapEntry& b) { return py::repr(b.bootstrap); });
  m.def(
      "wrap_thread_bootstrap",
      [](py::object started, py::object ending, py::object bootstrap) {
        return py::cast(
            BootstrapEntry{std::move(started), std::move(ending), std::move(bootstrap)});
      },
      py::arg("started"), py::arg("ending"), py::arg("bootstrap"),
      "A replacement for threading.Thread._bootstrap_inner (`bootstrap`) that calls "
      "started(thread) before it and ending() after it, without a frame of its own.");
  py::class_<ThreadEntry>(m, "ThreadEntry",
                          "What a thread started by start_new_thread runs: it registers the "
                          "thread with the profiler, runs the function and unregisters it.")
      .def("__call__",
           [](const ThreadEntry& e, py::args args, py::kwargs kwargs) {
             return run_thread(e.function, std::move(args), std::move(kwargs));
           })
      .def("__repr__", [](const ThreadEntry& e) { return py::repr(e.function); });
  m.def("start_new_thread", &start_new_thread, py::arg("function"), py::arg("args"),
        py::arg("kwargs") = py::none(),
        "_thread.start_new_thread(function, args[, kwargs]), the new thread registered with "
        "the profiler as it starts and as it ends.");
  m.def(
      "watch_direct_threads",
      [m] {
        if (g_real_start != nullptr) return;
        py::module_ thread = py::module_::import("_thread");
        py::object real = thread.attr("start_new_thread");
        g_real_start = real.release().ptr();
        py::object replacement = m.attr("start_new_thread");
        thread.attr("start_new_thread") = replacement;
        if (py::hasattr(thread, "start_new")) thread.attr("start_new") = replacement;
      },
      "Replaces _thread.start_new_thread (and its old name start_new) for good, so that "
      "threads started through it register themselves (once per process).");
}

}  // namespace spyglass
