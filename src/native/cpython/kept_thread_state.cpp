#define Py_BUILD_CORE 1
#include "kept_thread_state.hpp"

#include <Python.h>

#include "../platform/clock.hpp"
#include "../shim/memory_hooks.hpp"
#include "compat/interpreter.hpp"

namespace spyglass::cpython {

std::atomic<uint64_t> KeptThreadState::made_{0};

namespace {
constexpr uint64_t kForcedTakeNs = 1'000'000;
}  // namespace

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
  // A free GIL is taken at once; a held one only after the switch interval (5 ms), when
  // its holder has been asked to let it go. 1 ms tells the two apart, and the thread made
  // to wait is noted for the memory hooks: only its samples may discount the wait.
  PyThreadState* holder = compat::gil_holder();
  const uint64_t before = platform::monotonic_ns();
  PyEval_RestoreThread(state_);
  if (holder != nullptr && holder != state_ && platform::monotonic_ns() - before >= kForcedTakeNs) {
    // Still listed, with the GIL now ours: its state is intact to read (a thread that
    // ended meanwhile took its state out of the list first).
    for (PyThreadState* ts = PyInterpreterState_ThreadHead(PyInterpreterState_Main());
         ts != nullptr; ts = PyThreadState_Next(ts)) {
      if (ts == holder) {
        shim::note_forced_wait(compat::native_tid(ts));
        break;
      }
    }
  }
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
