// Every difference between CPython 3.9 and 3.13 that spyglass depends on lives in this
// header, so supporting a new minor version is a change here and nowhere else.
//
// It reads interpreter internals (frame layouts change every minor version), so it is
// included only by translation units that define Py_BUILD_CORE before <Python.h>.
#pragma once

#ifndef Py_BUILD_CORE
#error "compat/interpreter.hpp needs Py_BUILD_CORE defined before Python.h"
#endif

#include <Python.h>
#include <pthread.h>
#include <sys/types.h>

#if PY_VERSION_HEX < 0x03090000 || PY_VERSION_HEX >= 0x030E0000
#error "spyglass supports CPython 3.9 through 3.13"
#endif
#ifdef Py_GIL_DISABLED
#error "free-threaded CPython builds are not supported yet"
#endif

#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif

extern "C" int spyglass_gc_collecting(PyThreadState* ts);               // gc_state.c
extern "C" void spyglass_link_thread_state(PyThreadState* ts, int in);  // thread_list.c
extern "C" void spyglass_ready_unlisted_for_delete(PyThreadState* ts);  // thread_list.c
extern "C" PyThreadState* spyglass_gil_holder(void);                    // gil_state.c

namespace spyglass::compat {

// os.fork() warns when the process has other threads; 3.13 counts them after running the
// after_in_parent hooks, 3.12 before.
inline constexpr bool kForkWarnsAfterHooks = PY_VERSION_HEX >= 0x030D0000;

// True while the garbage collector runs in `ts`'s interpreter. Collections run on the
// thread that triggered them, holding the GIL.
inline bool gc_collecting(PyThreadState* ts) { return spyglass_gc_collecting(ts) != 0; }

#if PY_VERSION_HEX >= 0x030B0000
using Frame = _PyInterpreterFrame;
#else
using Frame = PyFrameObject;
#endif

// The innermost frame of a thread. Safe to read from the thread itself (in a signal
// handler) or from any thread holding the GIL.
inline Frame* top_frame(PyThreadState* ts) {
#if PY_VERSION_HEX >= 0x030D0000
  return ts->current_frame;
#elif PY_VERSION_HEX >= 0x030B0000
  return ts->cframe != nullptr ? ts->cframe->current_frame : nullptr;
#else
  return ts->frame;
#endif
}

// An address inside the C frame of the thread's innermost running eval loop (a local of
// _PyEval_EvalFrameDefault: the entry frame on 3.12+, the C frame record on 3.10 and 3.11),
// or 0 where the version keeps none on the C stack (3.9) or no eval loop runs. A native
// sample's chain of callers ends at that eval loop, not at an outer one.
inline uintptr_t innermost_eval_local(PyThreadState* ts) {
#if PY_VERSION_HEX >= 0x030C0000
  Frame* f = top_frame(ts);
  for (int i = 0; f != nullptr && i < 100000; ++i, f = f->previous) {
    if (f->owner == FRAME_OWNED_BY_CSTACK) return reinterpret_cast<uintptr_t>(f);
  }
  return 0;
#elif PY_VERSION_HEX >= 0x030A0000
  if (ts == nullptr || ts->cframe == nullptr || ts->cframe == &ts->root_cframe) return 0;
  return reinterpret_cast<uintptr_t>(ts->cframe);
#else
  (void)ts;
  return 0;
#endif
}

inline Frame* previous(Frame* f) {
#if PY_VERSION_HEX >= 0x030B0000
  return f->previous;
#else
  return f->f_back;
#endif
}

// Where a frame keeps its code object (3.13: its executable), for a checked read of what
// may not be a frame at all. 3.11+ publish an eval loop's C frame before writing its
// current frame, so the innermost frame pointer may be wild for a few instructions.
inline constexpr bool kTopFrameMayBeWild = PY_VERSION_HEX >= 0x030B0000;
inline const void* code_slot(Frame* f) {
#if PY_VERSION_HEX >= 0x030D0000
  return &f->f_executable;
#else
  return &f->f_code;
#endif
}

// The frame's code object, or null for frames that hold none: 3.12+ C-stack shim frames,
// 3.13 frames whose executable is not code, and frames still being set up. The type check
// also turns away a frame read through a stale pointer (see platform/fault_guard.hpp).
inline PyCodeObject* code_of(Frame* f) {
#if PY_VERSION_HEX >= 0x030D0000
  if (_PyFrame_IsIncomplete(f)) return nullptr;
  PyObject* exe = f->f_executable;
  if (exe == nullptr || Py_TYPE(exe) != &PyCode_Type) return nullptr;
  return reinterpret_cast<PyCodeObject*>(exe);
#elif PY_VERSION_HEX >= 0x030C0000
  if (f->owner == FRAME_OWNED_BY_CSTACK) return nullptr;
  PyCodeObject* co = f->f_code;
  if (co == nullptr || Py_TYPE(co) != &PyCode_Type || _PyFrame_IsIncomplete(f)) return nullptr;
  return co;
#elif PY_VERSION_HEX >= 0x030B0000
  PyCodeObject* co = f->f_code;
  if (co == nullptr || Py_TYPE(co) != &PyCode_Type || _PyFrame_IsIncomplete(f)) return nullptr;
  return co;
#else
  PyCodeObject* co = f->f_code;
  return co != nullptr && Py_TYPE(co) == &PyCode_Type ? co : nullptr;
#endif
}

// Byte offset of the instruction the frame is executing, or -1 before its first one.
inline int instr_offset(Frame* f, PyCodeObject* co) {
#if PY_VERSION_HEX >= 0x030D0000
  return static_cast<int>(f->instr_ptr - _PyCode_CODE(co)) * static_cast<int>(sizeof(_Py_CODEUNIT));
#elif PY_VERSION_HEX >= 0x030B0000
  return static_cast<int>(f->prev_instr - _PyCode_CODE(co)) *
         static_cast<int>(sizeof(_Py_CODEUNIT));
#elif PY_VERSION_HEX >= 0x030A0000
  (void)co;
  return f->f_lasti < 0 ? -1 : f->f_lasti * 2;
#else
  (void)co;
  return f->f_lasti;
#endif
}

// The opcode at the frame's current instruction as stored (possibly specialised), or -1.
inline int opcode_at(Frame* f, PyCodeObject* co, int offset) {
  if (offset < 0) return -1;
#if PY_VERSION_HEX >= 0x030D0000
  (void)co;
  return f->instr_ptr->op.code;
#elif PY_VERSION_HEX >= 0x030C0000
  (void)co;
  return f->prev_instr->op.code;
#elif PY_VERSION_HEX >= 0x030B0000
  (void)co;
  return _Py_OPCODE(*f->prev_instr);
#else
  (void)f;
  if (offset >= PyBytes_GET_SIZE(co->co_code)) return -1;
  return static_cast<unsigned char>(PyBytes_AS_STRING(co->co_code)[offset]);
#endif
}

// The thread state holding the GIL now, or nullptr when it is free; without the GIL, so
// possibly stale, and not to be read through before the GIL is taken and the state is
// found still listed.
inline PyThreadState* gil_holder() { return spyglass_gil_holder(); }

// The kernel thread id of the thread a thread state belongs to.
inline pid_t native_tid(PyThreadState* ts) {
#if PY_VERSION_HEX >= 0x030B0000
  return static_cast<pid_t>(ts->native_thread_id);
#else
  // 3.9/3.10 keep only the pthread_t; its CPU clock id encodes the kernel tid.
  clockid_t clock;
  if (pthread_getcpuclockid(static_cast<pthread_t>(ts->thread_id), &clock) != 0) return 0;
  return static_cast<pid_t>(~(clock >> 3));  // arithmetic shift undoes the encoding
#endif
}

inline PyObject* qualified_name(PyCodeObject* co) {
#if PY_VERSION_HEX >= 0x030B0000
  return co->co_qualname;
#else
  return co->co_name;
#endif
}

inline bool is_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

// Whether a str's canonical representation exists (legacy strings before 3.12 may lack it).
inline bool unicode_is_ready(PyObject* s) {
#if PY_VERSION_HEX >= 0x030C0000
  (void)s;
  return true;
#else
  return PyUnicode_IS_READY(s) != 0;
#endif
}

// Takes `ts` (attached to no thread) out of its interpreter's list of thread states, or
// puts it back at the head, without freeing or making anything (thread_list.c).
inline void link_thread_state(PyThreadState* ts, bool in) {
  spyglass_link_thread_state(ts, in ? 1 : 0);
}
// Readies `ts`, out of the list, to be deleted without being put back in it first.
inline void ready_unlisted_for_delete(PyThreadState* ts) { spyglass_ready_unlisted_for_delete(ts); }

using CodeDeathCallback = void (*)(PyCodeObject*);

// Calls `cb` (with the GIL held) just before any code object is destroyed, so that
// samples naming it can be resolved while it is still intact. Must be called with the GIL.
bool watch_code_deaths(CodeDeathCallback cb);

}  // namespace spyglass::compat
