// The sampler's side of a child process's run journal (core/journal.hpp): every code
// object, stack and memory event the drain aggregates is also recorded, and each control
// tick appends what the interval added. Everything here runs with the sampler's lock held;
// the control thread does not hold the GIL, so code objects are only read for immutable
// fields while alive (their deaths wait for the same lock).
#define Py_BUILD_CORE 1
#include "../platform/clock.hpp"
#include "cpu_sampler.hpp"

namespace spyglass::cpython {

void CpuSampler::open_journal() {
  if (options_.journal_path.empty()) return;
  JournalHeader header;
  header.start_ns = start_ns_;
  header.started_at = started_at_;
  header.interval_ns = options_.interval_ns;
  header.memory = options_.memory;
  header.window_bytes = options_.memory_options.window_bytes;
  header.copy_window_bytes = options_.memory_options.copy_window_bytes;
  header.scope = options_.scope;
  header.meta = options_.journal_meta;
  // A journal that cannot be written costs only the protection it gives: the process
  // still writes its profile when it ends.
  (void)journal_.open(options_.journal_path, header);
}

void CpuSampler::resolve_frames_locked(const RawFrame* frames, uint16_t depth, FrameKey* keys) {
  for (uint16_t i = 0; i < depth; ++i) {
    auto* code = reinterpret_cast<PyCodeObject*>(frames[i].code);
    const size_t known = codes_.infos().size();
    const uint32_t id = codes_.id_for(code);
    // A code object may be gone by the time the journal is read: name it on first sight.
    if (id >= known && journal_.is_open()) journal_.code(id, codes_.info(id, code));
    keys[i] = FrameKey{id, codes_.line_for(id, code, frames[i].instr_offset)};
  }
}

size_t CpuSampler::add_stack_locked(const FrameKey* keys, uint16_t depth, bool truncated,
                                    int32_t tid, const Times& t) {
  const size_t known = stacks_.size();
  const size_t index = stacks_.add(keys, depth, truncated, t);
  thread_times_[tid] += t;
  if (journal_.is_open()) {
    if (index >= known) journal_.stack(index, stacks_.entries()[index]);
    journal_.times(index, tid, t);
  }
  return index;
}

void CpuSampler::journal_tick_locked() {
  if (!journal_.is_open()) return;
  const shim::PauseThisThread paused;  // the journal's buffers are not the program's
  JournalTick tick;
  tick.now_ns = platform::monotonic_ns();
  tick.dropped_samples = dropped_;
  tick.dropped_memory_samples =
      options_.memory ? shim::records().dropped() - memory_dropped_base_ : 0;
  journal_.tick(tick);
  if (journal_.wants_compaction()) {
    journal_.compact(JournalView{stacks_, codes_.infos(), thread_times_,
                                 options_.memory ? &memory_ : nullptr, tick});
  }
}

}  // namespace spyglass::cpython
