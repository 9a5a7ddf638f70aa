// The memory half of the sampler's drain: records from the allocator hooks are resolved
// to stacks like CPU samples, so lines, functions, threads and flame graphs all carry
// their bytes, and the non-additive parts (footprints, live bytes, leaks) go to
// MemoryStats. A sampled free has no stack: MemoryStats knows its allocation's line.
#define Py_BUILD_CORE 1
#include "cpu_sampler.hpp"

#include <algorithm>
#include <thread>

namespace spyglass::cpython {

bool CpuSampler::is_profiled_code(uint32_t id, PyCodeObject* code) {
  if (id >= profiled_code_.size()) profiled_code_.resize(id + 1, -1);
  if (profiled_code_[id] < 0) {
    const CodeInfo& info = codes_.info(id, code);
    profiled_code_[id] = scope_ && scope_->is_profiled(info.file, info.first_lineno);
  }
  return profiled_code_[id] == 1;
}

void CpuSampler::drain_memory_locked(bool wait_for_claimed) {
  const shim::PauseThisThread paused;  // the drain's own allocations are not the program's
  MpscRing<MemoryRecord>& ring = shim::records();
  FrameKey keys[kMaxStackDepth];
  const uint64_t target = wait_for_claimed ? ring.claimed() : 0;
  for (;;) {
    const MemoryRecord* rec = ring.front();
    if (rec == nullptr) {
      // A claimed record is being written by a thread inside an allocation hook, which
      // never blocks: it will be readable in a moment.
      if (ring.consumed() >= target) break;
      std::this_thread::yield();
      continue;
    }
    if (rec->epoch != memory_epoch_) {  // from a previous run, or from before a fork
      ring.pop();
      continue;
    }
    if (rec->event == MemoryEvent::kSampledFree) {
      memory_.sampled_free(rec->sample_id, rec->t_ns, rec->footprint_bytes);
      if (journal_.is_open()) {
        journal_.sampled_free(rec->sample_id, rec->t_ns, rec->footprint_bytes);
      }
      ring.pop();
      continue;
    }
    resolve_frames_locked(rec->frames, rec->depth, keys);
    // Made by spyglass's own code (a thread registering itself, the API): not the
    // program's memory. Its free, if sampled, then finds no line to take it from.
    if (rec->depth > 0 &&
        is_internal_code(keys[0].code_id, reinterpret_cast<PyCodeObject*>(rec->frames[0].code))) {
      ring.pop();
      continue;
    }
    Times t;
    t.mem_samples = 1;
    if (rec->event == MemoryEvent::kCopy) {
      t.copy_bytes = rec->copy_bytes;
    } else {
      t.alloc_bytes = static_cast<uint64_t>(std::max<int64_t>(rec->net_bytes, 0));
      t.alloc_python_bytes = rec->python_bytes;
    }
    const size_t stack = add_stack_locked(keys, rec->depth, rec->truncated, rec->tid, t);
    if (rec->event == MemoryEvent::kAlloc) {
      uint64_t line = kNoLineKey;
      for (uint16_t i = 0; i < rec->depth; ++i) {
        if (is_profiled_code(keys[i].code_id,
                             reinterpret_cast<PyCodeObject*>(rec->frames[i].code))) {
          line = line_key(keys[i].code_id, keys[i].line);
          break;
        }
      }
      // A walk abandoned half-way (truncated, no frames) still had a Python thread.
      const bool python_thread = rec->depth > 0 || rec->truncated;
      memory_.add_alloc(stack, line, python_thread, rec->tid, rec->t_ns, rec->net_bytes,
                        rec->footprint_bytes, rec->tracked, rec->sample_id);
      if (journal_.is_open()) {
        journal_.memory_alloc(stack, line, python_thread, rec->tid, rec->t_ns, rec->net_bytes,
                              rec->footprint_bytes, rec->tracked, rec->sample_id);
      }
    }
    ring.pop();
  }
}

}  // namespace spyglass::cpython
