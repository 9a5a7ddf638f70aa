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

// A daemon thread still running when the interpreter exits is ended inside the interpreter
// by pthread_exit, whose unwinding runs the cleanups of every frame on its way out, without
// the GIL or a thread state. Saying the thread ends from a destructor there called Python,
// which ended the thread again inside the unwinding, and the process aborted (exit status
// 134 where plain python exits 0). So both entries below call the thread's code through the
// C API and say the thread ends after it returns. The entry of a directly started thread
// is a type of the C API's own rather than a pybind11 class: pybind11's dispatcher makes a
// new tuple and dict for a call's *args and **kwargs, which that unwinding would free
// without a thread state (a crash from Python 3.12 on, where the thread state is the
// thread's own).

// The entry a directly started thread runs: it registers, runs `function`, and says it
// ends however the function returns (the error, if any, goes on to _thread as it was).
// Shown as the function itself where _thread names it (an exception that ends the thread
// is "ignored in thread started by" the function).
struct ThreadEntryObject {
  PyObject_HEAD PyObject* function;
};

PyTypeObject* g_thread_entry_type = nullptr;  // made once, kept for the process

void note_thread_start(PyObject* function) {
  cpython::Collector* c = cpython::Collector::active();
  if (c == nullptr) return;
  PyObject* code = PyObject_GetAttrString(function, "__code__");
  if (code == nullptr) cpython::clear_error_keeping_interrupt();
  try {
    c->thread_started(code != nullptr && PyCode_Check(code) ? reinterpret_cast<PyCodeObject*>(code)
                                                            : nullptr);
  } catch (...) {
    // Registering may not fail the thread: it then goes unprofiled.
  }
  Py_XDECREF(code);
}

PyObject* thread_entry_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* function = reinterpret_cast<ThreadEntryObject*>(self)->function;
  note_thread_start(function);
  PyObject* result = PyObject_Call(function, args, kwargs);
  if (cpython::Collector* c = cpython::Collector::active()) {
    try {
      c->thread_exiting();
    } catch (...) {
      // Nor may saying it ends.
    }
  }
  return result;
}

PyObject* thread_entry_repr(PyObject* self) {
  return PyObject_Repr(reinterpret_cast<ThreadEntryObject*>(self)->function);
}

void thread_entry_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(reinterpret_cast<ThreadEntryObject*>(self)->function);
  type->tp_free(self);
  Py_DECREF(type);
}

PyTypeObject* make_thread_entry_type() {
  static PyType_Slot slots[] = {
      {Py_tp_call, reinterpret_cast<void*>(&thread_entry_call)},
      {Py_tp_repr, reinterpret_cast<void*>(&thread_entry_repr)},
      {Py_tp_dealloc, reinterpret_cast<void*>(&thread_entry_dealloc)},
      {Py_tp_doc, const_cast<char*>("What a thread started by start_new_thread runs: it "
                                    "registers the thread with the profiler, runs the "
                                    "function and unregisters it.")},
      {0, nullptr},
  };
  static PyType_Spec spec = {"spyglass._native.ThreadEntry", sizeof(ThreadEntryObject), 0,
                             Py_TPFLAGS_DEFAULT, slots};
  return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
}

// A new entry running `function`, or null with an error set.
PyObject* new_thread_entry(PyObject* function) {
  PyObject* entry = PyType_GenericAlloc(g_thread_entry_type, 0);
  if (entry == nullptr) return nullptr;
  Py_INCREF(function);
  reinterpret_cast<ThreadEntryObject*>(entry)->function = function;
  return entry;
}

// Tells the profiler the thread ends; an error in that may not fail the thread.
void say_ending(const py::object& ending) {
  PyObject* result = PyObject_CallNoArgs(ending.ptr());
  if (result == nullptr) {
    cpython::clear_error_keeping_interrupt();
  } else {
    Py_DECREF(result);
  }
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

py::object start_new_thread(py::object function, py::object args, py::object kwargs) {
  py::object real = py::reinterpret_borrow<py::object>(g_real_start);
  // Arguments _thread would refuse go to it as they are, for its own error.
  py::object entry = function;
  if (PyCallable_Check(function.ptr()) != 0 && PyTuple_Check(args.ptr()) &&
      !is_threading_bootstrap(function.ptr()) && g_thread_entry_type != nullptr) {
    entry = py::reinterpret_steal<py::object>(new_thread_entry(function.ptr()));
    if (!entry) throw py::error_already_set();
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
  PyObject* result = PyObject_CallOneArg(b.bootstrap.ptr(), thread.ptr());
  if (result == nullptr) {
    py::error_already_set failed;  // taken, so that the ending runs with no error set
    say_ending(b.ending);
    throw failed;
  }
  say_ending(b.ending);
  return py::reinterpret_steal<py::object>(result);
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
  g_thread_entry_type = make_thread_entry_type();
  if (g_thread_entry_type == nullptr) throw py::error_already_set();
  Py_INCREF(g_thread_entry_type);  // the module's reference; ours is kept for good
  m.add_object("ThreadEntry", reinterpret_cast<PyObject*>(g_thread_entry_type));
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
