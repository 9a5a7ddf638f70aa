/* The garbage collector's state, read from C: the interpreter's internal headers that
 * declare it do not compile as C++ before 3.13. Part of compat/: every CPython version
 * difference lives here. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_interp.h>

/* Non-zero while a collection runs in the thread's interpreter. Async-signal-safe: a plain
 * read of interpreter state. */
int spyglass_gc_collecting(PyThreadState* ts) {
  return ts != NULL && ts->interp != NULL && ts->interp->gc.collecting != 0;
}
