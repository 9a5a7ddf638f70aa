/*
 * unusual_block: a C library call that blocks and does NOT retry on EINTR, for the
 * integration tests of programs doing unusual things (tests/integration/test_unusual_programs.py).
 *
 *   poll_idle_pipe(timeout_ms) -> (result, errno, elapsed_ms)
 *
 * Makes a pipe nobody writes to and poll()s its read end for `timeout_ms` with the GIL
 * released, once: no retry when a signal interrupts it. `result` is poll's own return value
 * (0: the timeout expired, as it must; -1: interrupted or failed, `errno` says why),
 * `elapsed_ms` the CLOCK_MONOTONIC time the call took.
 *
 * Built by the test module with the running interpreter's headers, as tests/conftest.py
 * builds spin_ext:
 *   cc -O2 -shared -fPIC -I<sysconfig include> unusual_block.c -o unusual_block<EXT_SUFFIX>
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

static double monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static PyObject* poll_idle_pipe(PyObject* self, PyObject* args) {
  (void)self;
  int timeout_ms;
  if (!PyArg_ParseTuple(args, "i", &timeout_ms)) {
    return NULL;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  struct pollfd waiting = {.fd = fds[0], .events = POLLIN, .revents = 0};
  int result;
  int error = 0;
  double started;
  double elapsed;
  Py_BEGIN_ALLOW_THREADS;
  started = monotonic_ms();
  result = poll(&waiting, 1, timeout_ms);
  if (result < 0) {
    error = errno;
  }
  elapsed = monotonic_ms() - started;
  Py_END_ALLOW_THREADS;
  close(fds[0]);
  close(fds[1]);
  return Py_BuildValue("(iid)", result, error, elapsed);
}

static PyMethodDef methods[] = {
    {"poll_idle_pipe", poll_idle_pipe, METH_VARARGS,
     "poll_idle_pipe(timeout_ms) -> (result, errno, elapsed_ms): one poll() on an idle pipe, "
     "GIL released, no retry on EINTR."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "unusual_block",
    "A blocking C call that does not retry on EINTR.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit_unusual_block(void) { return PyModule_Create(&module); }
