// The copy engine: memcpy-family volume, attributed to the copying line. The allocator shim
// samples copies with allocations (a per-thread byte threshold, the copy window) and both
// arrive on one ring, which the memory engine drains: it hands copies over here.
#pragma once

#include "../core/memory_record.hpp"
#include "../core/stack_table.hpp"
#include "engine.hpp"

namespace spyglass::cpython {

class CopyEngine final : public Engine {
 public:
  using Engine::Engine;

  const char* name() const override { return "copy"; }
  void describe(RunInfo& run) const override;

  // A sampled copy whose frames are resolved to `keys` (lock held): its bytes go to its
  // stack and its thread.
  void add(const MemoryRecord& rec, const FrameKey* keys);
};

}  // namespace spyglass::cpython
