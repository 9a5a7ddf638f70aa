#define Py_BUILD_CORE 1
#include "memory_engine.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "collection.hpp"
#include "copy_engine.hpp"
#include "memory_glue.hpp"

namespace spyglass::cpython {

void MemoryEngine::start(uint64_t start_ns) {
  stats_.reset(start_ns);
  finished_ = false;
  dropped_ = 0;
  dropped_base_ = shim::records().dropped();
}

void MemoryEngine::begin() {
  dropped_base_ = shim::records().dropped();
  if (!start_memory_hooks(options_)) {
    throw std::runtime_error("memory profiling is already active in this process");
  }
  epoch_ = shim::epoch();
}

void MemoryEngine::stop() { stop_memory_hooks(); }

void MemoryEngine::upkeep() { shim::patch_new_objects(); }  // extension modules imported since

void MemoryEngine::finish() {
  drain_records(/*wait_for_claimed=*/true);
  stats_.finish();
  dropped_ = dropped();
  finished_ = true;
}

uint64_t MemoryEngine::dropped() const {
  return finished_ ? dropped_ : shim::records().dropped() - dropped_base_;
}

void MemoryEngine::describe(RunInfo& run) const {
  run.memory.profiled = true;
  run.memory.window_mb = bytes_to_mb(static_cast<double>(shim::options().window_bytes));
  run.memory.dropped_samples = dropped();
}

void MemoryEngine::drain_records(bool wait_for_claimed) {
  const shim::PauseThisThread paused;  // the drain's own allocations are not the program's
  Collection& collection = ctx().collection;
  JournalWriter& journal = collection.journal();
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
    if (rec->epoch != epoch_) {  // from a previous run, or from before a fork
      ring.pop();
      continue;
    }
    if (rec->event == MemoryEvent::kSampledFree) {  // no stack: MemoryStats knows its line
      stats_.sampled_free(rec->sample_id, rec->t_ns, rec->footprint_bytes);
      if (journal.is_open()) journal.sampled_free(rec->sample_id, rec->t_ns, rec->footprint_bytes);
      ring.pop();
      continue;
    }
    collection.resolve_frames(rec->frames, rec->depth, keys);
    // Made by spyglass's own code (a thread registering itself, the API): not the
    // program's memory. Its free, if sampled, then finds no line to take it from.
    if (rec->depth > 0 &&
        collection.is_internal_code(keys[0].code_id,
                                    reinterpret_cast<PyCodeObject*>(rec->frames[0].code))) {
      ring.pop();
      continue;
    }
    if (rec->event == MemoryEvent::kCopy) {
      copies_.add(*rec, keys);
      ring.pop();
      continue;
    }
    Times t;
    t.mem_samples = 1;
    t.alloc_bytes = static_cast<uint64_t>(std::max<int64_t>(rec->net_bytes, 0));
    t.alloc_python_bytes = rec->python_bytes;
    const size_t stack = collection.add_stack(keys, rec->depth, rec->truncated, rec->tid, t);
    uint64_t line = kNoLineKey;
    for (uint16_t i = 0; i < rec->depth; ++i) {
      if (collection.is_profiled_code(keys[i].code_id,
                                      reinterpret_cast<PyCodeObject*>(rec->frames[i].code))) {
        line = line_key(keys[i].code_id, keys[i].line);
        break;
      }
    }
    // A walk abandoned half-way (truncated, no frames) still had a Python thread.
    const bool python_thread = rec->depth > 0 || rec->truncated;
    stats_.add_alloc(stack, line, python_thread, rec->tid, rec->t_ns, rec->net_bytes,
                     rec->footprint_bytes, rec->tracked, rec->sample_id, rec->after_wait);
    if (journal.is_open()) {
      journal.memory_alloc(stack, line, python_thread, rec->tid, rec->t_ns, rec->net_bytes,
                           rec->footprint_bytes, rec->tracked, rec->sample_id, rec->after_wait);
    }
    ring.pop();
  }
}

}  // namespace spyglass::cpython
