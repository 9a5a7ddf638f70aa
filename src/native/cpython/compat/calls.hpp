// Version differences in how a call instruction lays out its value stack, where a frame's
// value stack starts, and how a code object names its exception handlers. Included, like
// interpreter.hpp, only by translation units that define Py_BUILD_CORE.
#pragma once

#include <opcode.h>

#include <cstdint>
#include <vector>

#include "../../core/stack_depths.hpp"
#include "interpreter.hpp"

namespace spyglass::compat {

// 3.9 counts jump arguments in bytes, 3.10 onwards in 2-byte code units.
inline constexpr int kJumpUnitBytes = PY_VERSION_HEX >= 0x030A0000 ? 2 : 1;

// Where a call instruction's callee sits, as a value-stack index counted from the bottom.
// With `null_or_method`, the slot holds either an unbound method (called with the self
// above it) or NULL, and then the callee is the slot above.
struct CallSlot {
  int index = -1;
  bool null_or_method = false;
};

// For a base (unspecialised) opcode with its argument and the flow depth before it: the
// callee's slot, or false if the opcode is not a call whose callee is on the stack.
inline bool call_slot(int opcode, int oparg, int depth, CallSlot* out) {
  const int kwargs = oparg & 1;  // CALL_FUNCTION_EX: a mapping of keyword arguments on top
  switch (opcode) {
#if PY_VERSION_HEX >= 0x030D0000
    case CALL:  // [callable, self_or_null, args...]
      *out = {depth - oparg - 2, false};
      return true;
    case CALL_KW:  // [callable, self_or_null, args..., kwnames]
      *out = {depth - oparg - 3, false};
      return true;
    case CALL_FUNCTION_EX:  // [callable, null, args tuple, kwargs?]
      *out = {depth - 3 - kwargs, false};
      return true;
#elif PY_VERSION_HEX >= 0x030B0000
#if PY_VERSION_HEX < 0x030C0000
    case PRECALL:  // [null_or_method, callable_or_self, args...]
      *out = {depth - oparg - 2, true};
      return true;
    case CALL:  // the compiler's PRECALL effect already took the arguments off
      *out = {depth - 2, true};
      return true;
#else
    case CALL:  // [null_or_method, callable_or_self, args...]
      *out = {depth - oparg - 2, true};
      return true;
#endif
    case CALL_FUNCTION_EX:  // [null, callable, args tuple, kwargs?]
      *out = {depth - 2 - kwargs, false};
      return true;
#else
    case CALL_FUNCTION:  // [callable, args...]
      *out = {depth - oparg - 1, false};
      return true;
    case CALL_FUNCTION_KW:  // [callable, args..., kwnames]
      *out = {depth - oparg - 2, false};
      return true;
    case CALL_FUNCTION_EX:  // [callable, args tuple, kwargs?]
      *out = {depth - 2 - kwargs, false};
      return true;
    case CALL_METHOD:  // [method_or_null, self_or_callable, args...]
      *out = {depth - oparg - 2, true};
      return true;
#endif
    default:
      return false;
  }
}

// The bottom of a frame's value stack. Plain reads.
inline PyObject** value_stack(Frame* f, PyCodeObject* co) {
#if PY_VERSION_HEX >= 0x030B0000
  return f->localsplus + co->co_nlocalsplus;
#else
  (void)co;
  return f->f_valuestack;
#endif
}

// The interpreter frame behind a frame object (the same object before 3.11).
inline Frame* frame_of(PyFrameObject* frame) {
#if PY_VERSION_HEX >= 0x030B0000
  return frame->f_frame;
#else
  return frame;
#endif
}

// Exception handlers and the stack depth at each, in code units. Before 3.11 the
// handlers are jump targets of SETUP_* instructions, found by the flow walk itself.
inline std::vector<FlowEntry> exception_handlers(PyCodeObject* co) {
  std::vector<FlowEntry> out;
#if PY_VERSION_HEX >= 0x030B0000
  PyObject* table = co->co_exceptiontable;
  if (table == nullptr || !PyBytes_Check(table)) return out;
  const auto* p = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(table));
  const uint8_t* end = p + PyBytes_GET_SIZE(table);
  // Entries of four variable-length numbers (start, length, target, depth << 1 | lasti),
  // six bits a byte, bit 6 set on every byte but a number's last.
  auto number = [&](uint32_t* value) {
    uint32_t v = 0;
    for (;;) {
      if (p == end) return false;
      const uint8_t b = *p++;
      v = (v << 6) | (b & 63u);
      if ((b & 64u) == 0) break;
    }
    *value = v;
    return true;
  };
  uint32_t start, length, target, depth_lasti;
  while (number(&start) && number(&length) && number(&target) && number(&depth_lasti)) {
    // The handler starts with the entry's depth, the offset of the raising instruction if
    // `lasti`, and the exception.
    out.push_back({target, static_cast<int>((depth_lasti >> 1) + (depth_lasti & 1) + 1)});
  }
#else
  (void)co;
#endif
  return out;
}

// Per-code storage that a signal handler can read without a lookup.
inline Py_ssize_t request_code_extra_index(freefunc free_extra) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Eval_RequestCodeExtraIndex(free_extra);
#else
  return _PyEval_RequestCodeExtraIndex(free_extra);
#endif
}

// Plain reads of the code's extra slots: safe in a signal handler on a thread holding
// the GIL (only a GIL holder changes them).
inline void* code_extra(PyCodeObject* co, Py_ssize_t index) {
  void* extra = nullptr;
#if PY_VERSION_HEX >= 0x030C0000
  if (PyUnstable_Code_GetExtra(reinterpret_cast<PyObject*>(co), index, &extra) != 0) return nullptr;
#else
  if (_PyCode_GetExtra(reinterpret_cast<PyObject*>(co), index, &extra) != 0) return nullptr;
#endif
  return extra;
}

// With the GIL.
inline bool set_code_extra(PyCodeObject* co, Py_ssize_t index, void* extra) {
#if PY_VERSION_HEX >= 0x030C0000
  return PyUnstable_Code_SetExtra(reinterpret_cast<PyObject*>(co), index, extra) == 0;
#else
  return _PyCode_SetExtra(reinterpret_cast<PyObject*>(co), index, extra) == 0;
#endif
}

}  // namespace spyglass::compat
