// Maps the code objects seen in samples to stable ids and resolves their names. A code
// object can be freed while the profile runs; its entry is resolved just before it dies,
// so a later object at the same address gets a new id instead of inheriting its samples.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "../core/profile_model.hpp"
#include "../core/stack_table.hpp"

namespace spyglass::cpython {

class CodeRegistry {
 public:
  // The id and line of a frame that id_for() and line_for() resolved lately, if it is in
  // the cache of recent frames: no new code object, nothing to name.
  bool cached_frame(const PyCodeObject* code, int32_t instr_offset, FrameKey* key) const {
    const FrameSlot& slot = frames_[frame_slot(code, instr_offset)];
    if (slot.code != code || slot.offset != instr_offset || retired_[slot.id] != 0) return false;
    *key = FrameKey{slot.id, slot.line};
    return true;
  }
  // Keeps a frame resolved by id_for() and line_for() in the cache.
  void cache_frame(const PyCodeObject* code, int32_t instr_offset, FrameKey key) {
    frames_[frame_slot(code, instr_offset)] = FrameSlot{code, instr_offset, key.code_id, key.line};
  }
  // Id for a live code object seen in a sample (no GIL needed: only its address is read).
  uint32_t id_for(PyCodeObject* code);
  // Line of a byte offset in a live code object, memoised.
  int32_t line_for(uint32_t id, PyCodeObject* code, int32_t instr_offset);

  // Name and file of a live code object, resolved now if need be. Reads only immutable
  // fields, so it is safe without the GIL while the object is alive.
  const CodeInfo& info(uint32_t id, PyCodeObject* code) {
    resolve(id, code);
    return infos_[id];
  }

  // With the GIL: resolve and forget a code object about to be destroyed.
  void retire(PyCodeObject* code);
  // With the GIL: resolve every code object still alive.
  void resolve_all();

  const std::vector<CodeInfo>& infos() const { return infos_; }
  void clear();

 private:
  void resolve(uint32_t id, PyCodeObject* code);
  // Every sample's every frame is resolved: through the two hash maps below, a memory
  // sample's 40 frames cost the control thread more than anything else it did under
  // memory profiling (each lookup a 64-bit division and a node in another cache line).
  // Most frames are the ones the samples before them had, so a direct-mapped cache of
  // recent (code, offset) pairs answers them first. An id retired since is a miss: another
  // code object may live at that address now.
  struct FrameSlot {
    const PyCodeObject* code = nullptr;
    int32_t offset = 0;
    uint32_t id = 0;
    int32_t line = 0;
  };
  static constexpr int kFrameSlotBits = 12;
  static size_t frame_slot(const PyCodeObject* code, int32_t instr_offset) {
    const uint64_t k = reinterpret_cast<uintptr_t>(code) ^
                       (static_cast<uint64_t>(static_cast<uint32_t>(instr_offset)) << 40);
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ULL) >> (64 - kFrameSlotBits));
  }
  std::vector<FrameSlot> frames_ = std::vector<FrameSlot>(size_t{1} << kFrameSlotBits);
  std::unordered_map<PyCodeObject*, uint32_t> live_;
  std::vector<CodeInfo> infos_;
  std::vector<bool> resolved_;
  std::vector<uint8_t> retired_;  // by id: its code object died (a slot naming it is stale)
  std::unordered_map<uint64_t, int32_t> lines_;  // (id << 32 | offset) -> line
};

}  // namespace spyglass::cpython
