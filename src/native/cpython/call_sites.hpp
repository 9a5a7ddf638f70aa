// What a call instruction is calling. A sample whose innermost frame sits on a call
// instruction is either inside a C function (a builtin, a C method, an extension) or in
// the interpreter's own machinery for calling Python code (binding arguments, making the
// frame, allocating an instance before its __init__ runs): Python time. The callee sits
// on the frame's value stack, at a depth fixed per instruction; the depths are worked out
// once per code object, with the GIL, and kept in the code's extra slot, where the signal
// handler reads them without a lock or a lookup.
#pragma once

#include <Python.h>

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "../core/stack_depths.hpp"

namespace spyglass::cpython {

enum class Callee : uint8_t {
  kNoTable,  // the code's call sites are not worked out yet
  kUnknown,  // no callee could be read (an instruction the walk did not reach)
  kPython,   // a Python function, bound method, class or callable instance
  kNative,   // anything else: builtins, C methods, extension functions and types
};

// With the GIL, once before any other call: reserves the code-extra slot and learns the
// type slots that mark classes written in Python. False if that failed.
bool init_call_sites();

// The bytecode format of the running interpreter, given each opcode's flags.
BytecodeFormat bytecode_format(std::vector<uint32_t> flags);

// With the GIL: works out and attaches the call-site table of `code`, unless it has one.
// A code whose bytecode cannot be walked gets an empty table, so it is not tried again.
void build_call_sites(PyCodeObject* code, const BytecodeFormat& format);

// Async-signal-safe, with the GIL held by the calling thread, inside a fault guard:
// `frame` (a compat::Frame) is executing the call instruction at byte `offset` of `code`.
// `callee`, if given, receives the callable read from the stack. The callable is read
// with checked reads (platform::read_own_memory) when `checked_by` is this process's pid,
// else plain: its slot is stale while the call frees it, the callable maybe gone with it,
// and a fault there must not reach another SIGSEGV handler first in line.
Callee callee_at(void* frame, PyCodeObject* code, int offset, pid_t checked_by,
                 PyObject** callee = nullptr);

// Async-signal-safe, with the GIL held by the calling thread, for a frame on a call in a
// code with no table yet: classes each of its value-stack slots into `out`
// (SampleRecord::slot_callees). Stale slots above the stack's top are classed too, through
// checked reads (their objects may be gone); the table tells later which slot was the
// callee.
void read_slot_callees(void* frame, PyCodeObject* code, uint64_t* out);

// What the callee was, from a copy of the code's table (call_site_table) and the slots
// read_slot_callees classed while the frame stood at byte `offset`.
Callee callee_in_slots(const std::vector<int>& table, int offset, const uint64_t* slot_callees);

// Inside a fault guard, without the GIL, for a frame whose thread is blocked in the call it
// stands on (its value stack then stays as it is): the callable, found with a copy of its
// code's table (call_site_table), or null.
PyObject* callable_in_table(void* frame, PyCodeObject* code, int offset,
                            const std::vector<int>& table);

// Inside a fault guard: the address of the C function a native callable runs (a
// builtin's, a method descriptor's, or else its type's tp_call), or 0 for a Python
// callable and for what cannot be told. With checked reads when `checked_by` is this
// process's pid (another SIGSEGV handler before the guard's), else plain ones.
uintptr_t native_entry(PyObject* callable, pid_t checked_by);

// With the GIL, for tests: what a frame object that is executing a call (a caller of the
// running code) is calling; builds its code's table first.
Callee callee_of_frame(PyFrameObject* frame, const BytecodeFormat& format, PyObject** callee);

// The call-site table of `code` as built: per code unit, the callee's stack slot times
// two plus one if the slot may hold NULL, or -1. Empty when there is none. For tests.
std::vector<int> call_site_table(PyCodeObject* code);

}  // namespace spyglass::cpython
