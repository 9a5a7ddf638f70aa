// Version differences in what asyncio keeps of its tasks and in how a suspended
// coroutine's frame is reached. Included, like interpreter.hpp, only by translation units
// that define Py_BUILD_CORE.
#pragma once

#include "interpreter.hpp"

namespace spyglass::compat {

// The weak set of asyncio.tasks that holds every scheduled task: 3.12 split eager tasks
// (which run at once, on the creating task's stack) into a set of their own.
inline constexpr const char* kScheduledTasksName =
    PY_VERSION_HEX >= 0x030C0000 ? "_scheduled_tasks" : "_all_tasks";

// The frame of a generator, a coroutine or an async generator (one layout for the three),
// read in place; null once it has finished. Reading `cr_frame` instead makes a frame
// object for it on 3.11+ (kept until the coroutine ends): a scan of thousands of tasks,
// several frames deep, made thousands each time, and garbage collections with them.
inline Frame* generator_frame(PyObject* gen) {
  auto* g = reinterpret_cast<PyGenObject*>(gen);
#if PY_VERSION_HEX >= 0x030B0000
  if (g->gi_frame_state >= FRAME_COMPLETED) return nullptr;
  return reinterpret_cast<Frame*>(g->gi_iframe);
#else
  return g->gi_frame;  // null once finished
#endif
}

// Whether the weak reference `ref` still refers to `obj` (3.13 deprecated
// PyWeakref_GetObject, which returns a borrowed reference, for PyWeakref_GetRef).
inline bool weakly_refers_to(PyObject* ref, PyObject* obj) {
#if PY_VERSION_HEX >= 0x030D0000
  PyObject* target = nullptr;
  if (PyWeakref_GetRef(ref, &target) < 0) {
    PyErr_Clear();
    return false;
  }
  const bool same = target == obj;
  Py_XDECREF(target);
  return same;
#else
  return PyWeakref_GetObject(ref) == obj;
#endif
}

// Whether code is a coroutine's, an async generator's or a types.coroutine generator's:
// a sample inside one means an event loop is running.
inline bool is_async_code(PyCodeObject* co) {
  return (co->co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE | CO_ASYNC_GENERATOR)) != 0;
}

}  // namespace spyglass::compat
