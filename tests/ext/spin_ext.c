/*
 * spin_ext: ground truth for native time in the integration tests.
 *
 *   spin_with_gil(seconds, cpu=False)     busy-loop in C for `seconds`, holding the GIL
 *   spin_without_gil(seconds, cpu=False)  the same with the GIL released
 *   signal_then_wait(signo, spin=0.0)     raise `signo` in C, then wait on a semaphore no one
 *                                         posts (or, with spin, busy-loop holding the GIL)
 *   spin_in_threads(count, seconds)       with the GIL released, start `count` threads of its
 *                                         own one after the other, each running no Python and
 *                                         busy-looping `seconds` of its own CPU time; returns
 *                                         the CPU seconds the threads measured of themselves
 *   _pool                                 a capsule ("spin_ext._pool") of the C function
 *                                         behind spin_in_threads, double (*)(int, double),
 *                                         for another object to call without the GIL
 *                                         (late_call.c): a package's library that a newer
 *                                         extension module of the package calls into
 *
 * The loop checks CLOCK_MONOTONIC (wall time), or with cpu=True the calling thread's CPU
 * clock (CLOCK_THREAD_CPUTIME_ID), which makes the amount of native CPU time exact even on a
 * loaded machine. Both return the loop's accumulator as an int, so the work has a visible
 * result and the compiler cannot drop it. The clock is read once every 65536 rounds of
 * xorshift (about 0.1 ms): reading a thread's CPU clock is a system call, and the loop's time
 * has to be native time, not system time.
 *
 * Built by tests/conftest.py (fixture `spin_ext_dir`) with the running interpreter's headers:
 *   cc -O2 -shared -fPIC -I<sysconfig include> spin_ext.c -o spin_ext<EXT_SUFFIX>
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

static double clock_now(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64 rounds until `seconds` have passed on `clock`; returns the mixed state. */
static uint64_t spin(double seconds, clockid_t clock) {
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  uint64_t acc = 0;
  const double deadline = clock_now(clock) + seconds;
  do {
    for (int i = 0; i < 65536; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      acc += x * (uint64_t)(i | 1);
    }
  } while (clock_now(clock) < deadline);
  return acc ^ x;
}

/* Parses (seconds, cpu=False); returns 0, or -1 with an exception set. */
static int parse_args(PyObject* args, PyObject* kwargs, double* seconds, clockid_t* clock) {
  static char* keywords[] = {"seconds", "cpu", NULL};
  int cpu = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "d|p", keywords, seconds, &cpu)) {
    return -1;
  }
  if (!(*seconds >= 0.0 && *seconds <= 60.0)) {
    PyErr_SetString(PyExc_ValueError, "seconds must be between 0 and 60");
    return -1;
  }
  *clock = cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
  return 0;
}

static PyObject* spin_with_gil(PyObject* self, PyObject* args, PyObject* kwargs) {
  (void)self;
  double seconds;
  clockid_t clock;
  if (parse_args(args, kwargs, &seconds, &clock) < 0) {
    return NULL;
  }
  const uint64_t result = spin(seconds, clock);
  return PyLong_FromUnsignedLongLong((unsigned long long)result);
}

static PyObject* spin_without_gil(PyObject* self, PyObject* args, PyObject* kwargs) {
  (void)self;
  double seconds;
  clockid_t clock;
  if (parse_args(args, kwargs, &seconds, &clock) < 0) {
    return NULL;
  }
  PyThreadState* saved = PyEval_SaveThread(); /* Py_BEGIN_ALLOW_THREADS */
  const uint64_t result = spin(seconds, clock);
  PyEval_RestoreThread(saved); /* Py_END_ALLOW_THREADS */
  return PyLong_FromUnsignedLongLong((unsigned long long)result);
}

/* One of spin_in_threads' threads: spins its CPU seconds, then reads its whole CPU time. */
typedef struct {
  double seconds;
  double cpu;
  uint64_t result;
} ThreadSpin;

static void* thread_spin(void* arg) {
  ThreadSpin* job = (ThreadSpin*)arg;
  job->result = spin(job->seconds, CLOCK_THREAD_CPUTIME_ID);
  job->cpu = clock_now(CLOCK_THREAD_CPUTIME_ID);
  return NULL;
}

/* `count` threads one after the other, each spinning `seconds` of its own CPU; the CPU
 * seconds they measured, or -1 with errno set. Called without the GIL. */
static double pool_spin(int count, double seconds) {
  double total = 0.0;
  for (int i = 0; i < count; i++) {
    ThreadSpin job = {seconds, 0.0, 0};
    pthread_t thread;
    int err = pthread_create(&thread, NULL, thread_spin, &job);
    if (err != 0) {
      errno = err;
      return -1.0;
    }
    pthread_join(thread, NULL);
    total += job.cpu;
  }
  return total;
}

static PyObject* spin_in_threads(PyObject* self, PyObject* args) {
  (void)self;
  int count;
  double seconds;
  if (!PyArg_ParseTuple(args, "id", &count, &seconds)) {
    return NULL;
  }
  if (count < 0 || count > 1000 || !(seconds >= 0.0 && seconds <= 10.0)) {
    PyErr_SetString(PyExc_ValueError, "count must be 0..1000 and seconds 0..10");
    return NULL;
  }
  double total;
  Py_BEGIN_ALLOW_THREADS
    total = pool_spin(count, seconds);
  Py_END_ALLOW_THREADS
  if (total < 0.0) {
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  return PyFloat_FromDouble(total);
}

/* A signal whose Python handler has not run yet when the main thread blocks: the C
 * handler runs at raise(), before the wait, as it does for a signal that comes just before
 * a blocking call. The wait is a multiprocessing lock's: sem_wait with the GIL released,
 * running Python's handlers when it is interrupted. */
static PyObject* signal_then_wait(PyObject* self, PyObject* args) {
  (void)self;
  int signo;
  double spin_seconds = 0.0;
  if (!PyArg_ParseTuple(args, "i|d", &signo, &spin_seconds)) {
    return NULL;
  }
  raise(signo);
  if (spin_seconds > 0.0) {
    const uint64_t result = spin(spin_seconds, CLOCK_MONOTONIC);
    return PyLong_FromUnsignedLongLong((unsigned long long)result);
  }
  sem_t never;
  if (sem_init(&never, 0, 0) != 0) {
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  for (;;) {
    int res;
    int err;
    Py_BEGIN_ALLOW_THREADS
      res = sem_wait(&never);
      err = errno;
    Py_END_ALLOW_THREADS
    if (res == 0) {
      break;
    }
    if (err != EINTR) {
      errno = err;
      return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (PyErr_CheckSignals() < 0) {
      return NULL;
    }
  }
  Py_RETURN_NONE;
}

static PyMethodDef spin_methods[] = {
    {"signal_then_wait", (PyCFunction)signal_then_wait, METH_VARARGS,
     "signal_then_wait(signo, spin=0.0)\n\n"
     "Raise `signo` in C, then block in sem_wait (GIL released, Python's handlers run when it "
     "is interrupted), or busy-loop `spin` seconds holding the GIL."},
    {"spin_with_gil", (PyCFunction)(void (*)(void))spin_with_gil, METH_VARARGS | METH_KEYWORDS,
     "spin_with_gil(seconds, cpu=False) -> int\n\n"
     "Busy-loop in C for `seconds` (wall time, or thread CPU time with cpu=True), holding "
     "the GIL."},
    {"spin_without_gil", (PyCFunction)(void (*)(void))spin_without_gil,
     METH_VARARGS | METH_KEYWORDS,
     "spin_without_gil(seconds, cpu=False) -> int\n\n"
     "Busy-loop in C for `seconds` (wall time, or thread CPU time with cpu=True), with the "
     "GIL released."},
    {"spin_in_threads", (PyCFunction)spin_in_threads, METH_VARARGS,
     "spin_in_threads(count, seconds) -> float\n\n"
     "With the GIL released, run `count` threads of its own one after the other, each "
     "busy-looping `seconds` of its own CPU time and running no Python; returns the CPU "
     "seconds they measured of themselves."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef spin_module = {
    PyModuleDef_HEAD_INIT,
    "spin_ext",
    "Busy loops in C: ground truth for native time.",
    -1,
    spin_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit_spin_ext(void) {
  PyObject* module = PyModule_Create(&spin_module);
  if (module == NULL) {
    return NULL;
  }
  PyObject* pool = PyCapsule_New((void*)pool_spin, "spin_ext._pool", NULL);
  if (pool == NULL || PyModule_AddObject(module, "_pool", pool) != 0) {
    Py_XDECREF(pool);
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
