#include "stack_depths.hpp"

#include <utility>

namespace spyglass {

std::vector<Instruction> decode_bytecode(const uint8_t* code, size_t bytes,
                                         const BytecodeFormat& format) {
  std::vector<Instruction> out;
  const size_t units = bytes / 2;
  int extended = 0;
  size_t u = 0;
  while (u < units) {
    Instruction ins;
    ins.unit = static_cast<uint32_t>(u);
    ins.opcode = code[2 * u];
    const uint32_t flags = format.of(ins.opcode);
    // An EXTENDED_ARG is an instruction of its own (a jump may land on it), which passes
    // its argument on to the next one.
    ins.oparg = (extended << 8) | code[2 * u + 1];
    extended = (flags & kExtendedArg) != 0 ? ins.oparg : 0;
    const uint32_t caches = (flags >> kCacheShift) & 0xFF;
    ins.next = static_cast<uint32_t>(u + 1 + caches);
    if ((flags & (kJumpRelative | kJumpAbsolute)) != 0) {
      const int64_t sign = (flags & kJumpBackward) != 0 ? -1 : 1;
      const int64_t base = (flags & kJumpRelative) != 0 ? int64_t{2} * ins.next : 0;
      const int64_t target_bytes = base + sign * ins.oparg * format.jump_unit_bytes;
      if (target_bytes >= 0 && target_bytes / 2 < static_cast<int64_t>(units)) {
        ins.target = target_bytes / 2;
      }
    }
    ins.falls_through = (flags & kNoFallthrough) == 0;
    out.push_back(ins);
    u = ins.next;
  }
  return out;
}

std::vector<int32_t> stack_depths(const std::vector<Instruction>& instructions, size_t units,
                                  const std::vector<FlowEntry>& handlers,
                                  const StackEffect& effect) {
  std::vector<int32_t> depth(units, -1);
  std::vector<int32_t> index_of(units, -1);
  for (size_t i = 0; i < instructions.size(); ++i) {
    if (instructions[i].unit < units) index_of[instructions[i].unit] = static_cast<int32_t>(i);
  }
  std::vector<std::pair<uint32_t, int>> work;
  auto reach = [&](int64_t unit, int d) {
    if (unit < 0 || unit >= static_cast<int64_t>(units)) return;
    // The stack never goes below empty. Only the prologue of 3.11 and 3.12 generators
    // tries to: its first instruction's effect is counted as none, though it leaves the
    // value sent in on resumption for the next one to pop.
    if (d < 0) d = 0;
    const auto u = static_cast<size_t>(unit);
    if (index_of[u] < 0 || depth[u] >= 0) return;  // mid-instruction, or already known
    depth[u] = d;
    work.emplace_back(static_cast<uint32_t>(u), d);
  };
  if (units > 0) reach(0, 0);
  for (const FlowEntry& h : handlers) reach(h.unit, h.depth);
  while (!work.empty()) {
    const auto [unit, d] = work.back();
    work.pop_back();
    const Instruction& ins = instructions[static_cast<size_t>(index_of[unit])];
    if (ins.target >= 0) {
      const int e = effect(ins.opcode, ins.oparg, true);
      if (e > -1000 && e < 1000) reach(ins.target, d + e);
    }
    if (ins.falls_through) {
      const int e = effect(ins.opcode, ins.oparg, false);
      if (e > -1000 && e < 1000) reach(ins.next, d + e);
    }
  }
  return depth;
}

}  // namespace spyglass
