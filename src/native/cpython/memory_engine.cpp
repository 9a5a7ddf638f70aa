#define Py_BUILD_CORE 1
#include "memory_engine.hpp"

#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "../platform/clock.hpp"
#include "../platform/resident.hpp"
#include "../shim/reserved_maps.hpp"
#include "collection.hpp"
#include "copy_engine.hpp"
#include "memory_glue.hpp"

namespace spyglass::cpython {

void MemoryEngine::start(uint64_t start_ns) {
  stats_.reset(start_ns);
  reserved_.clear();
  reserved_at_ns_ = 0;
  held_.clear();
  last_alloc_ns_.clear();
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

void MemoryEngine::thread_ended(const ProfiledThread& thread, const ThreadEnd&) {
  ctx().collection.line_visits().forget(thread.tid);
  last_alloc_ns_.erase(thread.tid);
}

void MemoryEngine::drain(Drain why) {
  // Held records keep their codes' ids, resolved as they were drained: a code that dies
  // meanwhile is named (CodeRegistry::retire) before it goes, and the pointers they also
  // keep are then only looked up by id, not read.
  drain_records(why == Drain::kCodeDeath, why == Drain::kFinal);
  if (why != Drain::kTick && why != Drain::kFinal) return;
  const uint64_t now = platform::monotonic_ns();
  if (why == Drain::kFinal || now - reserved_at_ns_ >= kReservedEveryNs) {
    reserved_at_ns_ = now;
    measure_reserved();
  }
}

void MemoryEngine::measure_reserved() {
  const shim::PauseThisThread paused;
  shim::ReservedMap maps[shim::kReservedSlots];
  const size_t n = shim::reserved_maps(maps, shim::kReservedSlots);
  std::vector<uint32_t> listed;
  changes_.clear();
  for (size_t i = 0; i < n; ++i) {
    uint64_t resident = 0;
    if (!platform::resident_bytes(maps[i].start, maps[i].length, &pages_, &resident)) {
      if (!shim::still_listed(maps[i])) {
        listed.push_back(maps[i].id);  // changed as it was measured: measured next time
        continue;
      }
      // Part of it was unmapped unseen: no longer measurable, and its pieces are freed.
      shim::drop_reserved(maps[i]);
      continue;
    }
    listed.push_back(maps[i].id);
    // Changed while measured: the range may have been some other mapping's by then.
    if (!shim::still_listed(maps[i])) continue;
    reserved_.measured(maps[i].id, resident, shim::take_sample_id, &changes_);
  }
  reserved_.keep_only(listed, &changes_);
  JournalWriter& journal = ctx().collection.journal();
  for (const ReservedMemory::Change& c : changes_) {
    const uint64_t now = platform::monotonic_ns();
    const int64_t footprint = shim::add_to_footprint(c.bytes);
    if (c.bytes < 0) {
      stats_.sampled_free(c.id, now, footprint);
      if (journal.is_open()) journal.sampled_free(c.id, now, footprint);
      continue;
    }
    const ReservedMemory::Owner& o = c.owner;
    Times t;
    t.mem_samples = c.first ? 1 : 0;
    t.alloc_bytes = static_cast<uint64_t>(c.bytes);
    ctx().collection.add_to_stack(o.stack, o.tid, t);
    // Under a thread of its own: the mapping thread runs other lines by now, and pieces
    // charged to it would cut its executions there (memory_stats.hpp).
    stats_.add_alloc(o.stack, o.line, o.python_thread, kPiecesTid, now, c.bytes, footprint,
                     /*tracked=*/true, c.id, /*after_wait=*/false, o.importing);
    if (journal.is_open()) {
      journal.memory_alloc(o.stack, o.line, o.python_thread, kPiecesTid, now, c.bytes, footprint,
                           /*tracked=*/true, c.id, /*after_wait=*/false, o.importing);
    }
  }
}

void MemoryEngine::finish() {
  drain_records(/*wait_for_claimed=*/true, /*release_all=*/true);
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

void MemoryEngine::drain_records(bool wait_for_claimed, bool release_all) {
  const shim::PauseThisThread paused;  // the drain's own allocations are not the program's
  Collection& collection = ctx().collection;
  MpscRing<MemoryRecord>& ring = shim::records();
  FrameKey keys[kMaxStackDepth];
  const uint64_t target = wait_for_claimed ? ring.claimed() : 0;
  const uint64_t now = platform::monotonic_ns();
  main_tid_ = getpid();  // this process's, after a fork too
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
    if (rec->event == MemoryEvent::kSampledFree) {
      if (held_.holds_alloc(rec->sample_id)) {
        stats_.free_footprint(rec->t_ns, rec->footprint_bytes);
        held_.freed(rec->sample_id, rec->t_ns, rec->footprint_bytes);
      } else {
        take(*rec, keys, now, /*may_hold=*/false, MemoryStats::kNotHeld);
      }
      ring.pop();
      continue;
    }
    collection.resolve_frames(rec->frames, rec->depth, keys);
    // A thread's allocations stay in its order; its copies have no order to keep.
    const bool behind = rec->event == MemoryEvent::kAlloc && held_.holds_thread(rec->tid);
    if (behind || !take(*rec, keys, now, /*may_hold=*/true, MemoryStats::kNotHeld)) {
      hold(*rec, keys, now);
    }
    ring.pop();
  }
  release_held(now, release_all, /*oldest=*/false);
  take_outer_sightings();
}

void MemoryEngine::hold(const MemoryRecord& rec, const FrameKey* keys, uint64_t now) {
  if (held_.full()) release_held(now, /*all=*/false, /*oldest=*/true);
  // A reservation adds nothing yet: its bytes come as they become resident.
  const uint32_t epoch =
      rec.reserved ? MemoryStats::kNotHeld : stats_.held_footprint(rec.t_ns, rec.footprint_bytes);
  held_.push(rec, keys, epoch);
}

void MemoryEngine::release_held(uint64_t now, bool all, bool oldest) {
  if (held_.empty()) return;
  JournalWriter& journal = ctx().collection.journal();
  FrameKey keys[kMaxStackDepth];
  MemoryRecord& rec = scratch_;
  held_.release(
      [&](const HeldRecords::Entry& e, bool force) {
        e.restore(&rec);
        std::copy(e.keys.begin(), e.keys.end(), keys);
        if (!take(rec, keys, now, /*may_hold=*/!force, e.epoch)) return false;
        if (e.freed) {  // its footprint was counted as it came
          stats_.free_block(e.sample_id, e.freed_ns);
          if (journal.is_open()) journal.sampled_free(e.sample_id, e.freed_ns, e.freed_footprint);
        }
        return true;
      },
      all, oldest);
}

void MemoryEngine::take_outer_sightings() {
  JournalWriter& journal = ctx().collection.journal();
  for (const auto& [code, t_ns] : ctx().collection.take_outer_sightings()) {
    stats_.saw_outer(code, t_ns);
    if (journal.is_open()) journal.outer_seen(code, t_ns);
  }
}

bool MemoryEngine::take(const MemoryRecord& rec, FrameKey* keys, uint64_t now, bool may_hold,
                        uint32_t held_epoch) {
  Collection& collection = ctx().collection;
  JournalWriter& journal = collection.journal();
  if (rec.event == MemoryEvent::kSampledFree) {  // no stack: MemoryStats knows its line
    stats_.sampled_free(rec.sample_id, rec.t_ns, rec.footprint_bytes);
    if (journal.is_open()) journal.sampled_free(rec.sample_id, rec.t_ns, rec.footprint_bytes);
    return true;
  }
  // Made by spyglass's own code (a thread registering itself, the API): not the
  // program's memory. Its free, if sampled, then finds no line to take it from.
  if (rec.depth > 0 && collection.is_internal_code(
                           keys[0].code_id, reinterpret_cast<PyCodeObject*>(rec.frames[0].code))) {
    return true;
  }
  if (rec.event == MemoryEvent::kCopy) {
    copies_.add(rec, keys);
    return true;
  }
  uint64_t line = kNoLineKey;
  bool importing = false;  // under the import system, below the line: an import's
  for (uint16_t i = 0; i < rec.depth; ++i) {
    auto* code = reinterpret_cast<PyCodeObject*>(rec.frames[i].code);
    if (collection.is_profiled_code(keys[i].code_id, code)) {
      line = line_key(keys[i].code_id, keys[i].line);
      break;
    }
    importing = importing || collection.is_import_code(keys[i].code_id, code);
  }
  // A library's own thread allocating for a call that waits on it: the call's line's.
  uint16_t depth = rec.depth;
  bool truncated = rec.truncated;
  int32_t caller = 0;  // lent: the thread whose call this is
  if (line == kNoLineKey) {
    depth = collection.lend_to_waiting_caller(rec.frames, keys, depth, rec.tid, rec.t_ns, &line,
                                              &truncated, &caller);
    // Not yet: the wait engine notes a caller blocked on the library's threads only at its
    // next look, and a pool's first chunks are allocated as the call hands them out (pandas'
    // read_csv: a 320 MB buffer went to no line in 6 of 9 runs).
    if (line == kNoLineKey && may_hold &&
        now < rec.t_ns + 2 * collection.library_waits().window() &&
        collection.lendable(rec.frames, keys, rec.depth, rec.tid)) {
      return false;
    }
  }
  // A walk abandoned half-way (truncated, no frames) still had a Python thread.
  const bool python_thread = rec.depth > 0 || rec.truncated;
  // A reservation: its stack now, its bytes as they become resident.
  if (rec.reserved) {
    const size_t at = collection.add_stack(keys, depth, truncated, rec.tid, Times{});
    reserved_.noted(rec.sample_id,
                    ReservedMemory::Owner{at, line, python_thread, rec.tid, importing});
    return true;
  }
  Times t;
  t.mem_samples = 1;
  t.alloc_bytes = static_cast<uint64_t>(std::max<int64_t>(rec.net_bytes, 0));
  t.alloc_python_bytes = rec.python_bytes;
  const size_t stack = collection.add_stack(keys, depth, truncated, rec.tid, t);
  // On the main thread only: there a framework calls the program's functions one after
  // another (pytest its tests) and goes on. A pool's task, whose thread waits for the next
  // one or ends, ran out of work, not into other work: sixteen tasks each making a buffer
  // the program kept grew up to their last, as a leak would, and were no leak.
  const uint32_t outer = rec.tid == main_tid_ && caller == 0
                             ? collection.outer_program_code(stack, rec.frames, keys, rec.depth)
                             : kNoCode;
  // The thread also left the line between its samples if a CPU sample found it on
  // another: a loop's other lines, which allocate too little to be sampled. (Asked after
  // a wait too: the visits before it are used up here, not by the allocation after.)
  // A library thread's allocation lent to a waiting call is of that call's execution.
  const int32_t executes = caller != 0 ? caller : rec.tid;
  const uint64_t open_line = stats_.open_line(executes);
  const bool left = caller == 0 && collection.line_visits().left(rec.tid, rec.t_ns, open_line);
  // Off the CPU since, but inside a library's call on the same line, waiting for the
  // library's own threads: still the one call (pandas's read_csv, one call, was 31
  // executions, its peak less than half of what it held).
  uint64_t& last = last_alloc_ns_[rec.tid];
  const bool in_call =
      caller != 0 || (rec.after_wait && !left && line == open_line && line != kNoLineKey &&
                      collection.library_waits().waited_on(rec.tid, line, last, rec.t_ns));
  last = rec.t_ns;
  const bool apart = (rec.after_wait && !in_call) || left;
  stats_.add_alloc(stack, line, python_thread, executes, rec.t_ns, rec.net_bytes,
                   rec.footprint_bytes, rec.tracked, rec.sample_id, apart, importing, outer,
                   held_epoch);
  if (journal.is_open()) {
    journal.memory_alloc(stack, line, python_thread, executes, rec.t_ns, rec.net_bytes,
                         rec.footprint_bytes, rec.tracked, rec.sample_id, apart, importing, outer);
  }
  return true;
}

}  // namespace spyglass::cpython
