// Code-object death notification: a watcher on 3.12+, a tp_dealloc wrapper before.
#define Py_BUILD_CORE 1
#include "../python_errors.hpp"
#include "interpreter.hpp"

namespace spyglass::compat {

namespace {
CodeDeathCallback g_callback = nullptr;

#if PY_VERSION_HEX >= 0x030C0000
int on_code_event(PyCodeEvent event, PyCodeObject* co) {
  if (event == PY_CODE_EVENT_DESTROY && g_callback != nullptr) g_callback(co);
  return 0;
}
#else
destructor g_original_dealloc = nullptr;
void dealloc_wrapper(PyObject* obj) {
  if (g_callback != nullptr) g_callback(reinterpret_cast<PyCodeObject*>(obj));
  g_original_dealloc(obj);
}
#endif
}  // namespace

bool watch_code_deaths(CodeDeathCallback cb) {
  if (g_callback != nullptr) {
    g_callback = cb;
    return true;
  }
  g_callback = cb;
#if PY_VERSION_HEX >= 0x030C0000
  if (PyCode_AddWatcher(on_code_event) < 0) {
    cpython::clear_error_keeping_interrupt();
    g_callback = nullptr;
    return false;
  }
#else
  // Installed once for the life of the process: another extension may have wrapped the
  // slot after us, so unwrapping later could cut it out.
  g_original_dealloc = PyCode_Type.tp_dealloc;
  PyCode_Type.tp_dealloc = dealloc_wrapper;
#endif
  return true;
}

}  // namespace spyglass::compat
