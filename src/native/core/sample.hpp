// The fixed-size record a signal handler writes: no pointers to heap memory the handler
// would have to allocate, so it can be filled in async-signal context.
#pragma once

#include <cstdint>
#include <vector>

namespace spyglass {

inline constexpr int kMaxStackDepth = 128;
// Of a deeper stack, its kMaxStackDepth - kOuterFrames innermost frames and its kOuterFrames
// outermost ones are kept: a library recursing deeper than the whole depth (deepcopy of a
// deep tree) left none of the program's frames, and its time on no line of the program.
inline constexpr int kOuterFrames = 32;
// Frames a walk visits at most, looking for the outermost.
inline constexpr int kMaxFramesWalked = 16384;
// Native return addresses kept per sample, between the interrupted one and the interpreter.
inline constexpr int kMaxNativeCallers = 24;

// Where the interrupted thread's user-mode CPU went.
enum class CpuClass : uint8_t {
  kPython = 0,  // interpreter executing bytecode
  kNative = 1,  // C/C++ code called from a Python line, or a thread with no Python frame
};

// What each value-stack slot of the innermost frame held, 2 bits per slot (slot i at bits
// 2(i % 32) of word i / 32), read by the handler where the code's call-site table was not
// built yet: the table, built later, names the slot that holds the callee
// (cpython/held_calls.hpp).
inline constexpr int kSlotCallees = 64;
enum SlotCallee : uint64_t {
  kSlotUnread = 0,  // past the frame's stack, or a read that faulted
  kSlotPython = 1,  // a Python function, method, class or callable instance
  kSlotNative = 2,  // anything else
  kSlotNull = 3,
};

// kAwait: an asyncio task suspended at an await, its time in wait_ns.
enum class SampleKind : uint8_t { kCpu = 0, kWait = 1, kAwait = 2 };

// One raw Python frame: an opaque code identity plus the byte offset of the instruction
// being executed. Line numbers are resolved later, off the signal path.
struct RawFrame {
  uintptr_t code = 0;
  int32_t instr_offset = -1;  // bytes into the code; -1 when unknown
  int32_t reserved = 0;
};

struct SampleRecord {
  SampleKind kind = SampleKind::kCpu;
  CpuClass cpu_class = CpuClass::kPython;
  bool truncated = false;         // the stack was deeper than kMaxStackDepth
  bool in_gc = false;             // the garbage collector was running on the thread
  bool first_tick = false;        // taken by the thread's first-tick timer (cpu_engine.hpp)
  bool wants_call_sites = false;  // the innermost code's call sites are not worked out yet
  uint8_t native_depth = 0;       // native_callers used, innermost first
  uint16_t depth = 0;             // frames used, innermost first
  int32_t tid = 0;
  uintptr_t pc = 0;  // the interrupted instruction (CPU samples), named off the signal path
  // Where unwinding found no table, if it stopped short of the interpreter: the control
  // thread compiles that object's table for the samples to come.
  uintptr_t native_stop = 0;
  uint64_t user_ns = 0;
  uint64_t system_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t t_ns = 0;  // when taken (platform::monotonic_ns); 0: not known
  uint64_t slot_callees[kSlotCallees / 32] = {};  // with wants_call_sites: see kSlotCallees
  // The return addresses of the native functions that called the one at `pc`, up to the
  // interpreter's eval loop (native samples only; see platform/unwind_tables.hpp).
  uintptr_t native_callers[kMaxNativeCallers];
  RawFrame frames[kMaxStackDepth];
};

// A native CPU sample's call chain, the interrupted instruction first (empty for any
// other sample). Not for the signal path: it allocates.
inline std::vector<uintptr_t> native_chain(const SampleRecord& rec) {
  if (rec.kind != SampleKind::kCpu || rec.cpu_class != CpuClass::kNative || rec.pc == 0) return {};
  std::vector<uintptr_t> chain(1 + rec.native_depth);
  chain[0] = rec.pc;
  for (uint8_t i = 0; i < rec.native_depth; ++i) chain[1 + i] = rec.native_callers[i];
  return chain;
}

}  // namespace spyglass
