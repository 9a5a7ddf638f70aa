// Errors left by Python code the profiler runs, or calls into Python, on the program's
// main thread. A Ctrl-C that comes meanwhile is raised there as a KeyboardInterrupt of
// ours: clearing it as our own failure would lose the user's Ctrl-C (a run started under
// spyglass then ran to its end).
#pragma once

#include <Python.h>

namespace spyglass::cpython {

// Takes the error off if it is a KeyboardInterrupt; true if it was.
inline bool take_interrupt() {
  if (PyErr_Occurred() == nullptr || PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) == 0) {
    return false;
  }
  PyErr_Clear();
  return true;
}

// Clears the error, except that a KeyboardInterrupt is tripped again, as if the Ctrl-C came
// now: the program gets it at its next chance.
inline void clear_error_keeping_interrupt() {
  if (take_interrupt()) {
    PyErr_SetInterrupt();
  } else {
    PyErr_Clear();
  }
}

}  // namespace spyglass::cpython
