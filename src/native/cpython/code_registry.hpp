// Maps the code objects seen in samples to stable ids and resolves their names. A code
// object can be freed while the profile runs; its entry is resolved just before it dies,
// so a later object at the same address gets a new id instead of inheriting its samples.
#pragma once

#include <Python.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "../core/profile_model.hpp"

namespace spyglass::cpython {

class CodeRegistry {
 public:
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
  std::unordered_map<PyCodeObject*, uint32_t> live_;
  std::vector<CodeInfo> infos_;
  std::vector<bool> resolved_;
  std::unordered_map<uint64_t, int32_t> lines_;  // (id << 32 | offset) -> line
};

}  // namespace spyglass::cpython
