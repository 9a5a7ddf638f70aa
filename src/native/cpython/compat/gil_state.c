/* The GIL's own state, read from C: the interpreter's internal headers that declare it do
 * not compile as C++ before 3.13. Part of compat/: every CPython version difference lives
 * here. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_interp.h>
#if PY_VERSION_HEX < 0x030C0000
#include <internal/pycore_runtime.h>
#endif

/* The thread state holding the main interpreter's GIL now, or NULL when it is free. A
 * plain read of two fields the GIL's holder writes: it may be stale by the time it is
 * used, which only makes a wait be noted against the wrong thread. */
PyThreadState* spyglass_gil_holder(void) {
#if PY_VERSION_HEX >= 0x030D0000
  struct _gil_runtime_state* gil = PyInterpreterState_Main()->ceval.gil;
  if (gil == NULL || !__atomic_load_n(&gil->locked, __ATOMIC_RELAXED)) return NULL;
  return __atomic_load_n(&gil->last_holder, __ATOMIC_RELAXED);
#elif PY_VERSION_HEX >= 0x030C0000
  struct _gil_runtime_state* gil = PyInterpreterState_Main()->ceval.gil;
  if (gil == NULL || !_Py_atomic_load_relaxed(&gil->locked)) return NULL;
  return (PyThreadState*)_Py_atomic_load_relaxed(&gil->last_holder);
#else
  struct _gil_runtime_state* gil = &_PyRuntime.ceval.gil;
  if (!_Py_atomic_load_relaxed(&gil->locked)) return NULL;
  return (PyThreadState*)_Py_atomic_load_relaxed(&gil->last_holder);
#endif
}
