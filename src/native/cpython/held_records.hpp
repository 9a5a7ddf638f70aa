// Memory records the memory engine holds back until they can be given a line: those of a
// library's own thread made before the wait engine's next look could find a caller waiting
// on the library (library_waits.hpp), so that no wait lends them yet. Each thread's records
// keep their order (its executions are in it), and the free of a held allocation waits for
// it; every other record goes on at once. What they add to the footprint was counted as they
// came (MemoryStats::held_footprint, free_footprint), in the order the hooks counted it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../core/memory_record.hpp"
#include "../core/memory_stats.hpp"
#include "../core/stack_table.hpp"

namespace spyglass::cpython {

class HeldRecords {
 public:
  // Held at once at most: a library thread allocating as fast as CPython can (every int
  // of a loop's sum a new object) makes ~10,000 records a second, its held allocations'
  // frees as many, and they wait up to twice the lend window. Entries keep only their
  // frames (~0.6 KB for 20; a record is 2 KB): past kMax, the oldest allocation goes as it is.
  static constexpr size_t kMax = 4096;

  // A record as the hooks wrote it, but for the frames it did not use.
  class Entry {
   public:
    Entry(const MemoryRecord& rec, const FrameKey* resolved, uint32_t held_epoch)
        : event(rec.event),
          sample_id(rec.sample_id),
          tid(rec.tid),
          frames(rec.frames, rec.frames + depth_of(rec)),
          keys(resolved, resolved + depth_of(rec)),
          epoch(held_epoch) {
      std::memcpy(head_, static_cast<const void*>(&rec), kHead);
    }
    // The record again, into `out` (its frames and their keys are the members below).
    void restore(MemoryRecord* out) const {
      std::memcpy(static_cast<void*>(out), head_,
                  kHead);  // plain fields: default initialisers only
      std::copy(frames.begin(), frames.end(), out->frames);
    }

    MemoryEvent event;
    uint32_t sample_id;
    int32_t tid;
    std::vector<RawFrame> frames;
    std::vector<FrameKey> keys;  // its frames', resolved as it was drained
    uint32_t epoch;              // an allocation's MemoryStats::held_footprint, or kNotHeld

   private:
    static uint16_t depth_of(const MemoryRecord& rec) {
      return rec.event == MemoryEvent::kSampledFree ? 0 : rec.depth;
    }
    static constexpr size_t kHead = offsetof(MemoryRecord, frames);
    alignas(MemoryRecord) unsigned char head_[kHead];
  };

  bool empty() const { return entries_.empty(); }
  bool full() const { return entries_.size() >= kMax; }
  // Whether a record of thread `tid` must wait behind one of its thread's held.
  bool holds_thread(int32_t tid) const { return by_thread_.count(tid) != 0; }
  // Whether the allocation sampled as `sample_id` is held (its free then waits for it).
  bool holds_alloc(uint32_t sample_id) const { return allocs_.count(sample_id) != 0; }

  void push(const MemoryRecord& rec, const FrameKey* keys, uint32_t epoch) {
    entries_.emplace_back(rec, keys, epoch);
    if (rec.event == MemoryEvent::kSampledFree) return;
    ++by_thread_[rec.tid];
    allocs_.insert(rec.sample_id);
  }

  // Offers the entries, oldest first, to `take(entry, force)`, which returns whether it
  // took it; one it did not take keeps its thread's later ones back, and a free waits for
  // its allocation. `force`: take it, whatever it would say (`all`; or `oldest`, for the
  // oldest allocation, to make room).
  template <typename Take>
  void release(Take&& take, bool all, bool oldest) {
    std::deque<Entry> kept;
    std::unordered_set<int32_t> waiting;
    bool forced = !oldest;
    for (Entry& e : entries_) {
      bool went = false;
      if (e.event == MemoryEvent::kSampledFree) {
        went = !holds_alloc(e.sample_id) && take(e, true);
      } else if (waiting.count(e.tid) == 0) {
        went = take(e, all || !forced);
        forced = true;
      }
      if (!went) {
        if (e.event != MemoryEvent::kSampledFree) waiting.insert(e.tid);
        kept.push_back(std::move(e));
        continue;
      }
      if (e.event == MemoryEvent::kSampledFree) continue;
      allocs_.erase(e.sample_id);
      auto it = by_thread_.find(e.tid);
      if (it != by_thread_.end() && --it->second == 0) by_thread_.erase(it);
    }
    entries_ = std::move(kept);
  }

  void clear() {
    entries_.clear();
    by_thread_.clear();
    allocs_.clear();
  }

 private:
  std::deque<Entry> entries_;
  std::unordered_map<int32_t, size_t> by_thread_;  // held allocations by thread
  std::unordered_set<uint32_t> allocs_;            // held allocations' sample ids
};

}  // namespace spyglass::cpython
