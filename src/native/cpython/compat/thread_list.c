/* The interpreter's list of thread states, changed from C: the internal headers that
 * declare it do not compile as C++ before 3.13. Part of compat/: every CPython version
 * difference lives here. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

/* Takes `ts` out of its interpreter's list (in == 0) or puts it back at the head, under the
 * runtime's head lock as CPython's own changes are. Nothing is freed or made: whatever
 * walks the list without that lock (faulthandler's dumps) may be standing on `ts`, and
 * goes on from its `next`, which is left as it was. */
void spyglass_link_thread_state(PyThreadState* ts, int in) {
  PyInterpreterState* interp = ts->interp;
#if PY_VERSION_HEX >= 0x030D0000
  PyMutex_Lock(&_PyRuntime.interpreters.mutex);
#else
  PyThread_acquire_lock(_PyRuntime.interpreters.mutex, WAIT_LOCK);
#endif
#if PY_VERSION_HEX >= 0x030B0000
  PyThreadState** head = &interp->threads.head;
#else
  PyThreadState** head = &interp->tstate_head;
#endif
  if (in) {
    ts->prev = NULL;
    ts->next = *head;
    if (*head != NULL) (*head)->prev = ts;
    *head = ts;
  } else {
    if (ts->prev != NULL) {
      ts->prev->next = ts->next;
    } else {
      *head = ts->next;
    }
    if (ts->next != NULL) ts->next->prev = ts->prev;
  }
#if PY_VERSION_HEX >= 0x030D0000
  PyMutex_Unlock(&_PyRuntime.interpreters.mutex);
#else
  PyThread_release_lock(_PyRuntime.interpreters.mutex);
#endif
}

/* Readies `ts`, out of its interpreter's list, for PyThreadState_Delete*: CPython unlinks a
 * state as it deletes it, writing to its neighbours (and to the list's head when it has no
 * previous one). Its own `prev` and no `next` make that unlinking write to `ts` alone, so
 * the state is freed without ever being put back where a lock-free walker could meet it. */
void spyglass_ready_unlisted_for_delete(PyThreadState* ts) {
  ts->prev = ts;
  ts->next = NULL;
}
