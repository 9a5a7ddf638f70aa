// The entry point `spyglass attach` calls inside a running Python process that was started
// without spyglass (src/spyglass/runtime/attach_target.py says how it gets there).
//
// The debugger stops the process where a thread holds the GIL and is between two calls into
// the interpreter's API (the entry of an allocator or of PyEval_SaveThread), loads this
// extension there and calls spyglass_attach_call(). Running Python code right there would
// interrupt whatever C code made that call, so this only queues a pending call: the
// interpreter's main thread runs it at the next point where it checks for signals and
// pending calls, a point where any Python code may run. The call reads and runs the
// bootstrap the attaching command left in its control directory; it never raises into the
// program (its errors go to that directory) and never writes to the program's stdout.
#include <Python.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "python_errors.hpp"

namespace {

int run_bootstrap(void* arg) {
  char* dir = static_cast<char*>(arg);
  std::string path(dir);
  std::free(dir);
  // The directory is the attaching command's (a temporary directory of its own): its name
  // goes into the code as a Python string through repr() of a str, never pasted raw.
  PyObject* name = PyUnicode_DecodeFSDefault(path.c_str());
  PyObject* quoted = name != nullptr ? PyObject_Repr(name) : nullptr;
  Py_XDECREF(name);
  const char* quoted_text = quoted != nullptr ? PyUnicode_AsUTF8(quoted) : nullptr;
  if (quoted_text == nullptr) {
    Py_XDECREF(quoted);
    spyglass::cpython::clear_error_keeping_interrupt();
    return 0;
  }
  std::string code = "control_dir = " + std::string(quoted_text) +
                     "\n"
                     "with open(control_dir + '/bootstrap.py', 'rb') as f:\n"
                     "    source = f.read()\n"
                     "exec(compile(source, control_dir + '/bootstrap.py', 'exec'), "
                     "{'__name__': '__spyglass_attach__', 'control_dir': control_dir})\n";
  Py_DECREF(quoted);
  PyObject* globals = PyDict_New();
  if (globals != nullptr &&
      PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0) {
    // A name of its own: "<string>" would pass for the program's `python -c` code.
    PyObject* compiled = Py_CompileString(code.c_str(), "<spyglass attach>", Py_file_input);
    PyObject* result = compiled != nullptr ? PyEval_EvalCode(compiled, globals, globals) : nullptr;
    Py_XDECREF(result);
    Py_XDECREF(compiled);
  }
  Py_XDECREF(globals);
  // Returning -1 would raise in whatever the program runs next: the bootstrap reports its
  // own failures in the control directory instead.
  spyglass::cpython::clear_error_keeping_interrupt();
  return 0;
}

}  // namespace

// Called by the debugger, on a thread that holds the GIL. 0 when the call was queued.
extern "C" __attribute__((visibility("default"), used)) int spyglass_attach_call(
    const char* control_dir) {
  if (control_dir == nullptr) return -1;
  char* copy = strdup(control_dir);
  if (copy == nullptr) return -1;
  if (Py_AddPendingCall(run_bootstrap, copy) != 0) {
    std::free(copy);
    return -1;
  }
  return 0;
}
