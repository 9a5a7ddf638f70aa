#define Py_BUILD_CORE 1
#include "kept_thread_state.hpp"

#include <Python.h>

#include "compat/interpreter.hpp"

namespace spyglass::cpython {

std::atomic<uint64_t> KeptThreadState::made_{0};

bool KeptThreadState::acquire() {
  if (compat::is_finalizing()) return false;
  if (state_ == nullptr) {
    // Made on this thread, so that it is this thread's in PyGILState's eyes too (a
    // PyGILState_Ensure here finds it rather than making another).
    state_ = PyThreadState_New(PyInterpreterState_Main());  // made in the list
    if (state_ == nullptr) return false;
    made_.fetch_add(1);
  } else {
    compat::link_thread_state(state_, true);
  }
  PyEval_RestoreThread(state_);
  return true;
}

void KeptThreadState::release() {
  (void)PyEval_SaveThread();
  compat::link_thread_state(state_, false);
}

void KeptThreadState::discard() {
  // Finalizing: the state is out of the list, where finalizing does not find it to free
  // it; it is left there, as the process is ending anyway.
  if (state_ == nullptr || compat::is_finalizing()) return;
  // Taken and freed out of the list: it has been out of it since its last use, so no
  // lock-free walker can be standing on it as it goes.
  PyEval_RestoreThread(state_);
  PyThreadState_Clear(state_);
  compat::ready_unlisted_for_delete(state_);
  PyThreadState_DeleteCurrent();
  state_ = nullptr;
}

}  // namespace spyglass::cpython
