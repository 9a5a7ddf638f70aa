// The value-stack depth before each instruction of a code object, found by the same flow
// walk the compiler does to size a frame's stack. The interpreter keeps the stack pointer
// in a C local while it runs, so a sampler that wants to read the stack of a running
// frame needs the depth worked out ahead, once per code object. No Python here: the
// bytecode format is described by per-opcode flags and the stack effect is a callback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace spyglass {

// What an opcode does to control flow, one word per opcode value.
enum BytecodeFlag : uint32_t {
  kJumpRelative = 1u << 0,   // may jump; the target counts from the next instruction
  kJumpAbsolute = 1u << 1,   // may jump; the target counts from the start of the code
  kJumpBackward = 1u << 2,   // a relative jump whose argument counts backwards
  kNoFallthrough = 1u << 3,  // never goes on to the next instruction
  kExtendedArg = 1u << 4,    // prefixes the next instruction's argument
  kCacheShift = 8,           // bits 8-15: inline cache units that follow the instruction
};

struct BytecodeFormat {
  std::vector<uint32_t> flags;  // indexed by opcode; missing opcodes have no flags
  int jump_unit_bytes = 2;      // what one unit of a jump argument is worth, in bytes

  uint32_t of(int opcode) const {
    return static_cast<size_t>(opcode) < flags.size() ? flags[static_cast<size_t>(opcode)] : 0;
  }
};

// One instruction, in 2-byte code units.
struct Instruction {
  uint32_t unit = 0;  // where it starts
  uint32_t next = 0;  // where the next one starts, past its inline caches
  int opcode = 0;
  int oparg = 0;        // with any EXTENDED_ARG prefixes folded in
  int64_t target = -1;  // the unit it may jump to, or -1
  bool falls_through = true;
};

// Decodes wordcode (opcode byte, argument byte) into instructions.
std::vector<Instruction> decode_bytecode(const uint8_t* code, size_t bytes,
                                         const BytecodeFormat& format);

// A place control reaches other than by flow: an exception handler and its stack depth.
struct FlowEntry {
  uint32_t unit = 0;
  int depth = 0;
};

// The stack effect of an instruction when it jumps (`jump`) or goes on; a value outside
// -1000..1000 means "unknown", which stops the walk there.
using StackEffect = std::function<int(int opcode, int oparg, bool jump)>;

// Depth before each code unit's instruction: -1 where the walk did not reach (dead code,
// cache units, or past an unknown effect). Control enters at unit 0 with an empty stack,
// and no depth goes below empty.
std::vector<int32_t> stack_depths(const std::vector<Instruction>& instructions, size_t units,
                                  const std::vector<FlowEntry>& handlers,
                                  const StackEffect& effect);

}  // namespace spyglass
