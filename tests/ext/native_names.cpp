/*
 * native_names: native functions with known names and known CPU time, for the tests of
 * spyglass's native-function breakdown (tests/integration/test_native_functions.py).
 *
 *   burn_c(seconds)            CPU in the C function plain_c_burn (exported)
 *   burn_cpp(seconds)          CPU in the C++ function native_names_test::Burner::burn(double)
 *   burn_hidden(seconds)       CPU in hidden_burn: not exported, so a stripped copy of the
 *                              module cannot name it
 *   call_back(fn, n, seconds)  n times: CPU in between_callbacks, then fn()
 *
 * Each returns the thread CPU seconds its named function burned (measured here, on
 * CLOCK_THREAD_CPUTIME_ID), which is the truth the tests compare the profile with. The burn
 * loops read the clock every 65536 rounds: reading it is a system call, and their time has
 * to be user time.
 *
 * Built by the test with the interpreter's headers:
 *   c++ -O2 -fno-inline -shared -fPIC -I<include> native_names.cpp -o native_names<EXT_SUFFIX>
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

#include <cstdint>

namespace {

double thread_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The busy loop every named function runs; inlined into each, so that the interrupted
// instruction is inside the named function itself.
inline __attribute__((always_inline)) double spin(double seconds, uint64_t* sink) {
  const double start = thread_cpu();
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  double now = start;
  do {
    for (int i = 0; i < 65536; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      *sink += x * static_cast<uint64_t>(i | 1);
    }
    now = thread_cpu();
  } while (now - start < seconds);
  return now - start;
}

volatile uint64_t g_sink = 0;

}  // namespace

extern "C" __attribute__((noinline, visibility("default"))) double plain_c_burn(double seconds) {
  uint64_t sink = 0;
  const double spent = spin(seconds, &sink);
  g_sink = g_sink + sink;
  return spent;
}

extern "C" __attribute__((noinline, visibility("hidden"))) double hidden_burn(double seconds) {
  uint64_t sink = 1;
  const double spent = spin(seconds, &sink);
  g_sink = g_sink + sink;
  return spent;
}

namespace native_names_test {

struct Burner {
  static double burn(double seconds);
};

__attribute__((noinline, visibility("default"))) double Burner::burn(double seconds) {
  uint64_t sink = 2;
  const double spent = spin(seconds, &sink);
  g_sink = g_sink + sink;
  return spent;
}

}  // namespace native_names_test

extern "C" __attribute__((noinline, visibility("default"))) double between_callbacks(
    double seconds) {
  uint64_t sink = 3;
  const double spent = spin(seconds, &sink);
  g_sink = g_sink + sink;
  return spent;
}

// A caller chain inside the extension: chain_outer calls chain_inner, which burns.
extern "C" __attribute__((noinline, visibility("default"))) double chain_inner(double seconds) {
  uint64_t sink = 4;
  const double spent = spin(seconds, &sink);
  g_sink = g_sink + sink;
  return spent;
}

extern "C" __attribute__((noinline, visibility("default"))) double chain_outer(double seconds) {
  const double spent = chain_inner(seconds);
  g_sink = g_sink + 1;  // work after the call: not a tail call
  return spent;
}

namespace {

bool read_seconds(PyObject* arg, double* seconds) {
  *seconds = PyFloat_AsDouble(arg);
  if (*seconds == -1.0 && PyErr_Occurred()) return false;
  if (!(*seconds >= 0.0 && *seconds <= 60.0)) {
    PyErr_SetString(PyExc_ValueError, "seconds must be between 0 and 60");
    return false;
  }
  return true;
}

PyObject* burn_c(PyObject*, PyObject* arg) {
  double seconds = 0;
  if (!read_seconds(arg, &seconds)) return nullptr;
  return PyFloat_FromDouble(plain_c_burn(seconds));
}

PyObject* burn_cpp(PyObject*, PyObject* arg) {
  double seconds = 0;
  if (!read_seconds(arg, &seconds)) return nullptr;
  return PyFloat_FromDouble(native_names_test::Burner::burn(seconds));
}

PyObject* burn_hidden(PyObject*, PyObject* arg) {
  double seconds = 0;
  if (!read_seconds(arg, &seconds)) return nullptr;
  return PyFloat_FromDouble(hidden_burn(seconds));
}

PyObject* burn_chain(PyObject*, PyObject* arg) {
  double seconds = 0;
  if (!read_seconds(arg, &seconds)) return nullptr;
  return PyFloat_FromDouble(chain_outer(seconds));
}

PyObject* call_back(PyObject*, PyObject* args) {
  PyObject* fn = nullptr;
  int n = 0;
  double seconds = 0;
  if (!PyArg_ParseTuple(args, "Oid", &fn, &n, &seconds)) return nullptr;
  double spent = 0;
  for (int i = 0; i < n; ++i) {
    spent += between_callbacks(seconds);
    PyObject* result = PyObject_CallNoArgs(fn);
    if (result == nullptr) return nullptr;
    Py_DECREF(result);
  }
  return PyFloat_FromDouble(spent);
}

PyMethodDef methods[] = {
    {"burn_c", burn_c, METH_O, "CPU in plain_c_burn; returns its thread CPU seconds."},
    {"burn_cpp", burn_cpp, METH_O, "CPU in native_names_test::Burner::burn."},
    {"burn_hidden", burn_hidden, METH_O, "CPU in the unexported hidden_burn."},
    {"burn_chain", burn_chain, METH_O, "CPU in chain_inner, called by chain_outer."},
    {"call_back", call_back, METH_VARARGS, "(fn, n, seconds): n rounds of CPU, then fn()."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "native_names", nullptr, -1, methods,
                      nullptr,               nullptr,        nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_native_names(void) { return PyModule_Create(&module); }
