// Memory records the memory engine holds back until they can be given a line: allocations
// of a library's own thread made before the wait engine's next look could find a caller
// waiting on the library (library_waits.hpp), so that no wait lends them yet. Each thread's
// allocations keep their order (its executions are in it), and the free of a held one waits
// with it; every other record goes on at once. What they add to the footprint was counted as
// they came (MemoryStats::held_footprint, free_footprint), in the order the hooks counted it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "../core/memory_record.hpp"
#include "../core/memory_stats.hpp"
#include "../core/stack_table.hpp"

namespace spyglass::cpython {

class HeldRecords {
 public:
  // Held at once at most: a library thread allocating as fast as CPython can (every int
  // of a loop's sum a new object) makes ~10,000 records a second, held up to twice the lend
  // window. Entries keep only the frames used (~0.5 KB for 20; a record is 2 KB): past
  // kMax, the oldest allocation goes as it is.
  static constexpr size_t kMax = 4096;

  // An allocation's record as the hooks wrote it, but for the frames it did not use.
  class Entry {
   public:
    Entry(const MemoryRecord& rec, const FrameKey* resolved, uint32_t held_epoch)
        : sample_id(rec.sample_id),
          t_ns(rec.t_ns),
          frames(rec.frames, rec.frames + rec.depth),
          keys(resolved, resolved + rec.depth),
          epoch(held_epoch) {
      std::memcpy(head_, static_cast<const void*>(&rec), kHead);
    }
    // The record again, into `out` (its frames' keys are `keys`).
    void restore(MemoryRecord* out) const {
      std::memcpy(static_cast<void*>(out), head_, kHead);  // plain fields only
      std::copy(frames.begin(), frames.end(), out->frames);
    }

    uint32_t sample_id;
    uint64_t t_ns;
    std::vector<RawFrame> frames;
    std::vector<FrameKey> keys;  // its frames', resolved as it was drained
    uint32_t epoch;              // MemoryStats::held_footprint's answer, or kNotHeld
    bool freed = false;          // its block's free came meanwhile: when, and the footprint
    uint64_t freed_ns = 0;       // after it
    int64_t freed_footprint = 0;

   private:
    static constexpr size_t kHead = offsetof(MemoryRecord, frames);
    alignas(MemoryRecord) unsigned char head_[kHead];
  };

  bool empty() const { return count_ == 0; }
  bool full() const { return count_ >= kMax; }
  // Whether an allocation of thread `tid` must wait behind one of its thread's held.
  bool holds_thread(int32_t tid) const { return by_thread_.count(tid) != 0; }
  // Whether the allocation sampled as `sample_id` is held (its free then waits with it).
  bool holds_alloc(uint32_t sample_id) const { return by_id_.count(sample_id) != 0; }

  void push(const MemoryRecord& rec, const FrameKey* keys, uint32_t epoch) {
    std::deque<Entry>& queue = by_thread_[rec.tid];
    queue.emplace_back(rec, keys, epoch);
    by_id_[rec.sample_id] = &queue.back();  // a deque's elements stay put as it grows
    ++count_;
  }
  // The held allocation `sample_id`'s block was freed at `t_ns`, leaving `footprint`.
  void freed(uint32_t sample_id, uint64_t t_ns, int64_t footprint) {
    auto it = by_id_.find(sample_id);
    if (it == by_id_.end()) return;
    it->second->freed = true;
    it->second->freed_ns = t_ns;
    it->second->freed_footprint = footprint;
  }

  // Offers each thread's held allocations, oldest first, to `take(entry, force)`, which
  // returns whether it took it; one it did not take keeps its thread's later ones back.
  // `force`: take it, whatever it would say (`all`; or `oldest`, for the oldest one held,
  // to make room).
  template <typename Take>
  void release(Take&& take, bool all, bool oldest) {
    int32_t forced_tid = 0;
    if (oldest && !all) {
      uint64_t first = UINT64_MAX;
      for (const auto& [tid, queue] : by_thread_) {
        if (queue.front().t_ns < first) {
          first = queue.front().t_ns;
          forced_tid = tid;
        }
      }
    }
    for (auto it = by_thread_.begin(); it != by_thread_.end();) {
      std::deque<Entry>& queue = it->second;
      bool force = all || it->first == forced_tid;
      while (!queue.empty() && take(static_cast<const Entry&>(queue.front()), all || force)) {
        by_id_.erase(queue.front().sample_id);
        queue.pop_front();
        --count_;
        force = all;
      }
      it = queue.empty() ? by_thread_.erase(it) : std::next(it);
    }
  }

  void clear() {
    by_thread_.clear();
    by_id_.clear();
    count_ = 0;
  }

 private:
  std::unordered_map<int32_t, std::deque<Entry>> by_thread_;
  std::unordered_map<uint32_t, Entry*> by_id_;  // held allocations by sample id
  size_t count_ = 0;
};

}  // namespace spyglass::cpython
