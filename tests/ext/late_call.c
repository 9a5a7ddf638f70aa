/*
 * late_call: an extension module that calls into another object of its package (spin_ext's
 * pool, given as the capsule spin_ext._pool), as pyarrow's csv module calls into libarrow,
 * whose threads do the work while the caller waits. Imported later than that object, it
 * stands for a module a library imports as it is called (pandas imports pyarrow.csv as it
 * reads a CSV with the pyarrow engine).
 *
 *   spin_pool(pool, count, seconds)  with the GIL released, the pool's `count` threads one
 *                                    after the other, each spinning `seconds` of its own
 *                                    CPU; returns the CPU seconds they measured
 *
 * Built by tests/helpers.py (build_ext) with the running interpreter's headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef double (*PoolSpin)(int, double);

static PyObject* spin_pool(PyObject* self, PyObject* args) {
  (void)self;
  PyObject* capsule;
  int count;
  double seconds;
  if (!PyArg_ParseTuple(args, "Oid", &capsule, &count, &seconds)) {
    return NULL;
  }
  PoolSpin pool = (PoolSpin)PyCapsule_GetPointer(capsule, "spin_ext._pool");
  if (pool == NULL) {
    return NULL;
  }
  if (count < 0 || count > 1000 || !(seconds >= 0.0 && seconds <= 10.0)) {
    PyErr_SetString(PyExc_ValueError, "count must be 0..1000 and seconds 0..10");
    return NULL;
  }
  double total;
  Py_BEGIN_ALLOW_THREADS
    total = pool(count, seconds);
  Py_END_ALLOW_THREADS
  if (total < 0.0) {
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyFloat_FromDouble(total);
}

static PyMethodDef late_call_methods[] = {
    {"spin_pool", spin_pool, METH_VARARGS,
     "spin_pool(pool, count, seconds) -> float\n\n"
     "With the GIL released, run spin_ext's pool: `count` threads one after the other, each "
     "busy-looping `seconds` of its own CPU time; returns the CPU seconds they measured."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef late_call_module = {
    PyModuleDef_HEAD_INIT,
    "late_call",
    "Calls into another object's pool.",
    -1,
    late_call_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit_late_call(void) { return PyModule_Create(&late_call_module); }
