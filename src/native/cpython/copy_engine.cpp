#define Py_BUILD_CORE 1
#include "copy_engine.hpp"

#include "../core/profile_memory.hpp"
#include "../shim/memory_hooks.hpp"
#include "collection.hpp"

namespace spyglass::cpython {

void CopyEngine::add(const MemoryRecord& rec, const FrameKey* keys) {
  Times t;
  t.mem_samples = 1;
  switch (rec.copy_kind) {
    case CopyKind::kHost:
      t.copy_bytes = rec.copy_bytes;
      break;
    case CopyKind::kHostToDevice:
      t.cuda_htod_bytes = rec.copy_bytes;
      break;
    case CopyKind::kDeviceToHost:
      t.cuda_dtoh_bytes = rec.copy_bytes;
      break;
    case CopyKind::kDeviceToDevice:
      t.cuda_dtod_bytes = rec.copy_bytes;
      break;
  }
  ctx().collection.add_stack(keys, rec.depth, rec.truncated, rec.tid, t);
}

void CopyEngine::describe(RunInfo& run) const {
  run.memory.copy_window_mb = bytes_to_mb(static_cast<double>(shim::options().copy_window_bytes));
}

}  // namespace spyglass::cpython
