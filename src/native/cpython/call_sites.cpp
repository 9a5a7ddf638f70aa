#define Py_BUILD_CORE 1
#include "call_sites.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "../core/sample.hpp"
#include "../platform/fault_guard.hpp"
#include "compat/calls.hpp"
#include "compat/interpreter.hpp"
#include "python_errors.hpp"

namespace spyglass::cpython {

namespace {

// One entry per code unit: slot << 1 | null_or_method, or -1 for "not a call site".
struct CallSiteTable {
  uint32_t units;
  int16_t entries[1];
};

Py_ssize_t g_extra_index = -1;

// The slot functions CPython gives classes written in Python. Compared by address: a type
// whose __init__, __new__ or __call__ is one of them runs Python code when called.
initproc g_python_init = nullptr;
newfunc g_python_new = nullptr;
ternaryfunc g_python_call = nullptr;
destructor g_python_dealloc = nullptr;

void free_table(void* table) { std::free(table); }

CallSiteTable* table_of(PyCodeObject* code) {
  if (g_extra_index < 0) return nullptr;
  return static_cast<CallSiteTable*>(compat::code_extra(code, g_extra_index));
}

// What a callable is, its fields read through `read(field, out)` (false: not readable):
// plain reads for the live callee, checked ones for the stale slots above a stack's top.
// A class statement's class: its instances are made by Python code (its __init__ or
// __new__) or, with neither defined anywhere in its bases, by the interpreter alone.
template <typename Read>
Callee classify_with(PyObject* callable, Read&& read) {
  PyTypeObject* type = nullptr;
  if (!read(&callable->ob_type, &type)) return Callee::kUnknown;
  if (type == &PyFunction_Type) return Callee::kPython;
  if (type == &PyMethod_Type) {
    PyObject* function = nullptr;
    PyTypeObject* function_type = nullptr;
    if (!read(&reinterpret_cast<PyMethodObject*>(callable)->im_func, &function)) {
      return Callee::kUnknown;
    }
    if (function == nullptr) return Callee::kNative;
    if (!read(&function->ob_type, &function_type)) return Callee::kUnknown;
    return function_type == &PyFunction_Type ? Callee::kPython : Callee::kNative;
  }
  // super() finds the calling frame's class and self: call machinery for the method the
  // line goes on to call.
  if (callable == reinterpret_cast<PyObject*>(&PySuper_Type)) return Callee::kPython;
  unsigned long flags = 0;
  ternaryfunc call = nullptr;  // the type's: a metaclass's __call__, an instance's
  if (!read(&type->tp_flags, &flags) || !read(&type->tp_call, &call)) return Callee::kUnknown;
  if ((flags & Py_TPFLAGS_TYPE_SUBCLASS) != 0) {
    auto* cls = reinterpret_cast<PyTypeObject*>(callable);
    initproc init = nullptr;
    newfunc make = nullptr;
    destructor dealloc = nullptr;
    if (!read(&cls->tp_init, &init) || !read(&cls->tp_new, &make) ||
        !read(&cls->tp_dealloc, &dealloc)) {
      return Callee::kUnknown;
    }
    const bool python = init == g_python_init || make == g_python_new || call == g_python_call ||
                        (dealloc == g_python_dealloc && init == PyBaseObject_Type.tp_init &&
                         make == PyBaseObject_Type.tp_new);
    return python ? Callee::kPython : Callee::kNative;
  }
  if (call == g_python_call) return Callee::kPython;  // an instance's __call__
  // Not callable at all: a bound method being called has put its self in its own place
  // on the stack for the time of the call (the vectorcall argument-offset convention).
  // Bound methods that are not of Python functions are rare.
  if (call == nullptr) return Callee::kPython;
  return Callee::kNative;
}

Callee classify(PyObject* callable) {
  return classify_with(callable, [](const auto* field, auto* out) {
    *out = *field;
    return true;
  });
}

// Reads through the kernel (platform::read_own_memory): memory that is gone makes a read
// fail rather than fault, which is safe without the fault guard, and with another SIGSEGV
// handler first in line, whose report of the fault ends the process before the guard can
// jump out (faulthandler's, which pytest enables).
struct CheckedRead {
  pid_t self;
  template <typename T>
  bool operator()(const T* field, T* out) const {
    return platform::read_own_memory(self, field, out, sizeof(T));
  }
  bool bytes(const void* from, void* to, size_t n) const {
    return platform::read_own_memory(self, from, to, n);
  }
};

// Plain reads, for inside a fault guard that is first in line.
struct PlainRead {
  template <typename T>
  bool operator()(const T* field, T* out) const {
    *out = *field;
    return true;
  }
  // Up to and with the first NUL: nothing past the end of the string is read.
  bool bytes(const void* from, void* to, size_t n) const {
    const auto* in = static_cast<const char*>(from);
    auto* out = static_cast<char*>(to);
    for (size_t i = 0; i < n && (i == 0 || in[i - 1] != '\0'); ++i) out[i] = in[i];
    return true;
  }
};

}  // namespace

BytecodeFormat bytecode_format(std::vector<uint32_t> flags) {
  BytecodeFormat format;
  format.flags = std::move(flags);
  format.jump_unit_bytes = compat::kJumpUnitBytes;
  return format;
}

bool init_call_sites() {
  if (g_extra_index >= 0) return true;
  PyObject* globals = PyDict_New();
  if (globals == nullptr) return false;
  PyObject* result = nullptr;
  bool interrupted = false;
  if (PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0) {
    // Twice at most: a Ctrl-C that came while the profiler started is raised in the first
    // line of Python run here; it is given back to the program below.
    for (int attempt = 0; attempt < 2 && result == nullptr; ++attempt) {
      result = PyRun_String(
          "class Probe:\n"
          "    def __new__(cls): return object.__new__(cls)\n"
          "    def __init__(self): pass\n"
          "    def __call__(self): pass\n",
          Py_file_input, globals, globals);
      if (result == nullptr && !take_interrupt()) break;
      if (result == nullptr) interrupted = true;
    }
  }
  PyObject* probe = result != nullptr ? PyDict_GetItemString(globals, "Probe") : nullptr;
  if (probe != nullptr && PyType_Check(probe)) {
    auto* cls = reinterpret_cast<PyTypeObject*>(probe);
    g_python_init = cls->tp_init;
    g_python_new = cls->tp_new;
    g_python_call = cls->tp_call;
    g_python_dealloc = cls->tp_dealloc;
    g_extra_index = compat::request_code_extra_index(free_table);
  }
  Py_XDECREF(result);
  Py_DECREF(globals);
  if (g_extra_index < 0) clear_error_keeping_interrupt();
  if (interrupted) PyErr_SetInterrupt();
  return g_extra_index >= 0;
}

void build_call_sites(PyCodeObject* code, const BytecodeFormat& format) {
  if (g_extra_index < 0 || table_of(code) != nullptr) return;
  // co_code is the code as compiled: without the specialised, instrumented or quickened
  // forms the running code may have taken by now (3.11+), which change no stack layout.
  PyObject* bytecode = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_code");
  std::vector<int32_t> depths;
  std::vector<Instruction> instructions;
  if (bytecode != nullptr && PyBytes_Check(bytecode)) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(bytecode));
    const auto size = static_cast<size_t>(PyBytes_GET_SIZE(bytecode));
    instructions = decode_bytecode(bytes, size, format);
    depths = stack_depths(instructions, size / 2, compat::exception_handlers(code),
                          [](int opcode, int oparg, bool jump) {
                            return PyCompile_OpcodeStackEffectWithJump(opcode, oparg, jump);
                          });
  }
  Py_XDECREF(bytecode);
  clear_error_keeping_interrupt();  // an opcode the compiler does not know may leave one

  const size_t units = depths.size();
  auto* table = static_cast<CallSiteTable*>(
      std::malloc(sizeof(CallSiteTable) + sizeof(int16_t) * (units > 0 ? units - 1 : 0)));
  if (table == nullptr) return;
  table->units = static_cast<uint32_t>(units);
  for (size_t u = 0; u < units; ++u) table->entries[u] = -1;
  for (const Instruction& ins : instructions) {
    compat::CallSlot slot;
    const int depth = depths[ins.unit];
    if (depth < 0 || !compat::call_slot(ins.opcode, ins.oparg, depth, &slot)) continue;
    // The slot (and the one above it) must lie inside the frame's stack.
    const int top = slot.index + (slot.null_or_method ? 1 : 0);
    if (slot.index < 0 || top >= code->co_stacksize || slot.index >= 16383) continue;
    // Its cache units too: a frame suspended in a call into Python code (3.11, 3.12) is
    // left pointing at the call's last cache unit.
    const auto entry = static_cast<int16_t>(slot.index * 2 + (slot.null_or_method ? 1 : 0));
    for (uint32_t u = ins.unit; u < ins.next && u < units; ++u) table->entries[u] = entry;
  }
  if (!compat::set_code_extra(code, g_extra_index, table)) {
    clear_error_keeping_interrupt();
    std::free(table);
  }
}

namespace {

// The callable on `frame`'s value stack at a call site's table entry (>= 0): its slot, or
// the next one when the entry says the slot may hold NULL.
inline PyObject* callable_at_entry(void* frame, PyCodeObject* code, int entry) {
  PyObject** stack = compat::value_stack(static_cast<compat::Frame*>(frame), code);
  PyObject* callable = stack[entry >> 1];
  if (callable == nullptr && (entry & 1) != 0) callable = stack[(entry >> 1) + 1];
  return callable;
}

}  // namespace

Callee callee_at(void* frame, PyCodeObject* code, int offset, pid_t checked_by, PyObject** callee) {
  const CallSiteTable* table = table_of(code);
  if (table == nullptr) return Callee::kNoTable;
  const int unit = offset / 2;
  if (offset < 0 || static_cast<uint32_t>(unit) >= table->units) return Callee::kUnknown;
  const int entry = table->entries[unit];
  if (entry < 0) return Callee::kUnknown;
  PyObject* callable = callable_at_entry(frame, code, entry);
  if (callee != nullptr) *callee = callable;
  if (callable == nullptr) return Callee::kUnknown;
  return checked_by != 0 ? classify_with(callable, CheckedRead{checked_by}) : classify(callable);
}

void read_slot_callees(void* frame, PyCodeObject* code, uint64_t* out) {
  for (int w = 0; w < kSlotCallees / 32; ++w) out[w] = 0;
  PyObject** stack = compat::value_stack(static_cast<compat::Frame*>(frame), code);
  const int slots = code->co_stacksize < kSlotCallees ? code->co_stacksize : kSlotCallees;
  if (slots <= 0) return;
  const pid_t self = getpid();
  // Checked reads: a stale slot's object is often gone, its memory unmapped.
  const CheckedRead read{self};
  // The slots above the live top were never written on some versions (3.9 leaves a new
  // frame's value stack as allocated): copied by one checked read, they are plain bytes
  // to test, not loads of memory no one initialised (which memcheck reports).
  PyObject* copied[kSlotCallees];
  if (!platform::read_own_memory(self, stack, copied, sizeof(PyObject*) * slots)) return;
  for (int i = 0; i < slots; ++i) {
    PyObject* object = copied[i];
    const auto address = reinterpret_cast<uintptr_t>(object);
    uint64_t callee = kSlotNull;
    if (object != nullptr) {
      if (address < 4096 || (address & (alignof(void*) - 1)) != 0) continue;
      switch (classify_with(object, read)) {
        case Callee::kPython:
          callee = kSlotPython;
          break;
        case Callee::kNative:
          callee = kSlotNative;
          break;
        default:
          continue;
      }
    }
    out[i / 32] |= callee << (2 * (i % 32));
  }
}

Callee callee_in_slots(const std::vector<int>& table, int offset, const uint64_t* slot_callees) {
  const int unit = offset / 2;
  if (offset < 0 || static_cast<size_t>(unit) >= table.size()) return Callee::kUnknown;
  const int entry = table[static_cast<size_t>(unit)];
  if (entry < 0) return Callee::kUnknown;
  auto at = [slot_callees](int slot) {
    return slot < kSlotCallees ? (slot_callees[slot / 32] >> (2 * (slot % 32))) & 3
                               : uint64_t{kSlotUnread};
  };
  uint64_t callee = at(entry >> 1);
  if (callee == kSlotNull && (entry & 1) != 0) callee = at((entry >> 1) + 1);
  switch (callee) {
    case kSlotPython:
      return Callee::kPython;
    case kSlotNative:
      return Callee::kNative;
    default:
      return Callee::kUnknown;
  }
}

PyObject* callable_in_table(void* frame, PyCodeObject* code, int offset,
                            const std::vector<int>& table) {
  const int unit = offset / 2;
  if (offset < 0 || static_cast<size_t>(unit) >= table.size()) return nullptr;
  const int entry = table[static_cast<size_t>(unit)];
  return entry >= 0 ? callable_at_entry(frame, code, entry) : nullptr;
}

namespace {

// The type's name, read up to its first kNameBytes bytes a page at a time (a name ends
// anywhere, maybe right before an unmapped page).
template <typename Read>
bool is_cython_function(const PyTypeObject* type, const Read& read) {
  constexpr size_t kNameBytes = 96;
  constexpr uintptr_t kPage = 4096;
  const char* name = nullptr;
  if (!read(&type->tp_name, &name) || name == nullptr) return false;
  char copy[kNameBytes + 1] = {};
  size_t have = 0;
  while (have < kNameBytes && std::memchr(copy, '\0', have) == nullptr) {
    const auto at = reinterpret_cast<uintptr_t>(name) + have;
    const size_t chunk = std::min<size_t>(kNameBytes - have, kPage - at % kPage);
    if (!read.bytes(name + have, copy + have, chunk)) break;
    have += chunk;
  }
  // "cython_function_or_method", "<module>.cython_function_or_method"
  return std::strstr(copy, "cython_function_or_method") != nullptr ||
         std::strstr(copy, "fused_cython_function") != nullptr;
}

// The function a PyMethodDef names, or 0.
template <typename Read>
uintptr_t method_function(const PyMethodDef* const* def_field, const Read& read) {
  const PyMethodDef* def = nullptr;
  PyCFunction function = nullptr;
  if (!read(def_field, &def) || def == nullptr || !read(&def->ml_meth, &function)) return 0;
  return reinterpret_cast<uintptr_t>(function);
}

template <typename Read>
uintptr_t native_entry_with(PyObject* callable, const Read& read) {
  if (callable == nullptr || classify_with(callable, read) != Callee::kNative) return 0;
  PyTypeObject* type = nullptr;
  ternaryfunc call = nullptr;
  unsigned long flags = 0;
  if (!read(&callable->ob_type, &type) || !read(&type->tp_call, &call) ||
      !read(&type->tp_flags, &flags)) {
    return 0;
  }
  // Builtins and C methods bound to their object run their PyMethodDef's function; their
  // type's tp_call is the interpreter's. Cython's functions keep that layout first, but
  // their type (and its tp_call) is shared by every module built with one Cython version,
  // living in whichever loaded first: only their PyMethodDef says which module is theirs.
  if (call == PyCFunction_Type.tp_call || is_cython_function(type, read)) {
    return method_function(&reinterpret_cast<PyCFunctionObject*>(callable)->m_ml, read);
  }
  if (type == &PyMethodDescr_Type || type == &PyClassMethodDescr_Type) {
    return method_function(&reinterpret_cast<PyMethodDescrObject*>(callable)->d_method, read);
  }
  if ((flags & Py_TPFLAGS_TYPE_SUBCLASS) != 0) return 0;  // a class being made
  return reinterpret_cast<uintptr_t>(call);
}

}  // namespace

uintptr_t native_entry(PyObject* callable, pid_t checked_by) {
  return checked_by != 0 ? native_entry_with(callable, CheckedRead{checked_by})
                         : native_entry_with(callable, PlainRead{});
}

Callee callee_of_frame(PyFrameObject* frame, const BytecodeFormat& format, PyObject** callee) {
  *callee = nullptr;
  compat::Frame* f = compat::frame_of(frame);
  PyCodeObject* code = f != nullptr ? compat::code_of(f) : nullptr;
  if (code == nullptr || !init_call_sites()) return Callee::kUnknown;
  build_call_sites(code, format);
  return callee_at(f, code, compat::instr_offset(f, code), 0, callee);
}

std::vector<int> call_site_table(PyCodeObject* code) {
  std::vector<int> out;
  if (const CallSiteTable* table = table_of(code)) {
    out.assign(table->entries, table->entries + table->units);
  }
  return out;
}

}  // namespace spyglass::cpython
