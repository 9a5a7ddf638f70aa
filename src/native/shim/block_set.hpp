// Lock-free, fixed-size address sets, usable inside malloc.
//
// BlockSet: the large blocks allocated while the hooks were on, so that the exact per-thread
// counters do not subtract freeing one allocated before (or by an allocator the hooks never
// saw). Only blocks of at least kTrackedBlockBytes are kept: they are few.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spyglass::shim {

inline constexpr size_t kTrackedBlockBytes = 64 * 1024;

class BlockSet {
 public:
  static constexpr size_t kSlots = size_t{1} << 16;
  static constexpr size_t kProbe = 64;  // bounded, so churn cannot make lookups slow

  // False when no slot was free nearby: the block then goes untracked.
  bool insert(uintptr_t p) {
    for (size_t i = 0, h = hash(p); i < kProbe; ++i, h = (h + 1) & (kSlots - 1)) {
      uintptr_t seen = slots_[h].load(std::memory_order_relaxed);
      if ((seen == kEmpty || seen == kErased) &&
          slots_[h].compare_exchange_strong(seen, p, std::memory_order_acq_rel)) {
        return true;
      }
    }
    return false;
  }
  bool erase(uintptr_t p) {
    for (size_t i = 0, h = hash(p); i < kProbe; ++i, h = (h + 1) & (kSlots - 1)) {
      uintptr_t seen = slots_[h].load(std::memory_order_acquire);
      if (seen == kEmpty) return false;
      if (seen == p &&
          slots_[h].compare_exchange_strong(seen, kErased, std::memory_order_acq_rel)) {
        return true;
      }
    }
    return false;
  }
  void clear() {
    for (auto& s : slots_) s.store(kEmpty, std::memory_order_relaxed);
  }

 private:
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kErased = 1;
  static size_t hash(uintptr_t p) {
    return static_cast<size_t>(((p >> 4) * 0x9E3779B97F4A7C15ull) >> 48) & (kSlots - 1);
  }
  std::atomic<uintptr_t> slots_[kSlots]{};
};

}  // namespace spyglass::shim

namespace spyglass::shim {

// Whether a block may be among those sampled: the question every free asks first. A block
// counts at two of 16,384 places, both in one 64-bit word, and a block never sampled
// passes only if both are taken: with a thousand samples alive, 1.7 % of such blocks pass
// instead of 5.9 % with one place (at 8,000 alive, where both pass about 38 %, one place
// would start to do better); in async_tree under full profiling, 82 % of the frees that
// passed one place were of blocks never sampled, each then a cache miss in the table.
//
// The question reads one bit per place, 2 KiB in all, so that it stays in the first-level
// cache between frees. With a counter per place read instead (16 KiB), that load was
// 38 % of the Python free hook's own time in pprint under full profiling. The counters
// behind the bits are touched only when a block is added or taken off (a sample or its
// free: thousands a second, not millions), under a lock per word: otherwise taking one
// block off could clear a place's bit just after another block's addition had set it, and
// that block's free would then go unseen. The lock names its holder: a signal handler
// that allocates, run on the thread holding it, fails to take it (the block goes untracked,
// or its places stay counted) instead of waiting for itself for ever. In a forked child,
// whose other threads are gone, after_fork_child() frees what they held.
class PlaceFilter {
 public:
  static constexpr size_t kWords = 256;
  static constexpr size_t kPlaces = kWords * 64;

  struct Places {
    size_t word;
    uint64_t mask;  // the two places' bits (one bit when both are the same place)
    uint8_t first;  // their positions in the word
    uint8_t second;
  };
  static Places places(uintptr_t p) {
    const uint64_t h = (p >> 4) * 0xC2B2AE3D27D4EB4Full;
    const auto first = static_cast<uint8_t>((h >> 44) & 63);
    const auto second = static_cast<uint8_t>((h >> 38) & 63);
    return {static_cast<size_t>(h >> 56) & (kWords - 1),
            (uint64_t{1} << first) | (uint64_t{1} << second), first, second};
  }

  bool maybe(const Places& f) const {
    return (bits_[f.word].load(std::memory_order_relaxed) & f.mask) == f.mask;
  }
  // Before the block can be found: a free racing its insert on another thread (of a block
  // just handed out) then never misses it. False when this thread holds the word already.
  bool add(const Places& f) {
    if (!lock(f.word)) return false;
    count(f.word, f.first, +1);
    count(f.word, f.second, +1);
    unlock(f.word);
    return true;
  }
  // Failing the lock, the places stay counted: a "maybe" too many, never a block missed.
  void remove(const Places& f) {
    if (!lock(f.word)) return;
    count(f.word, f.first, -1);
    count(f.word, f.second, -1);
    unlock(f.word);
  }
  // Word by word under its lock, so that an add still under way (a sample taken as the
  // hooks were closed) leaves its count and its bit agreeing.
  void clear() {
    for (size_t word = 0; word < kWords; ++word) {
      const bool held = lock(word);
      for (size_t at = 0; at < 64; ++at) {
        counts_[word * 64 + at].store(0, std::memory_order_relaxed);
      }
      bits_[word].store(0, std::memory_order_relaxed);
      if (held) unlock(word);
    }
  }
  void after_fork_child() {
    for (auto& holder : holders_) holder.store(0, std::memory_order_relaxed);
  }

 private:
  static uintptr_t me() { return static_cast<uintptr_t>(pthread_self()); }
  // Held for a few instructions, by a thread that makes no call meanwhile: waiting for it
  // ends soon, unless the holder is this very thread.
  bool lock(size_t word) {
    const uintptr_t self = me();
    for (int spins = 0;;) {
      uintptr_t holder = holders_[word].load(std::memory_order_relaxed);
      if (holder == 0 &&
          holders_[word].compare_exchange_weak(holder, self, std::memory_order_acquire)) {
        return true;
      }
      if (holder == self) return false;
      if (spins < 64) {
        ++spins;
      } else {
        sched_yield();
      }
    }
  }
  void unlock(size_t word) { holders_[word].store(0, std::memory_order_release); }
  // With the word's lock held. A saturated counter stays: its bit then stays set.
  void count(size_t word, uint8_t at, int by) {
    std::atomic<uint8_t>& c = counts_[word * 64 + at];
    const uint8_t was = c.load(std::memory_order_relaxed);
    if (was == 255 || (by < 0 && was == 0)) return;
    const auto now = static_cast<uint8_t>(was + by);
    c.store(now, std::memory_order_relaxed);
    const uint64_t bit = uint64_t{1} << at;
    if (now != 0) {
      bits_[word].fetch_or(bit, std::memory_order_release);
    } else {
      bits_[word].fetch_and(~bit, std::memory_order_release);
    }
  }

  alignas(64) std::atomic<uint64_t> bits_[kWords]{};
  std::atomic<uintptr_t> holders_[kWords]{};  // pthread_self() of the lock's holder, or 0
  std::atomic<uint8_t> counts_[kPlaces]{};
};

// The blocks the hooks sampled, until they are freed: each keeps the weight it was counted
// with and its sample's id, so that its free takes exactly that weight off the footprint and
// off the line that allocated it. Every free asks whether its block is here, and a small
// filter (PlaceFilter) answers "no" for most without touching the tables.
//
// Two tables: a small one (384 KiB) holds what a typical run keeps alive at once (about a
// sample per window of footprint: 1,500 for 100 MB at the default window), and a large one
// (6 MiB) takes what does not fit there. Each sample lands at a random slot, so with one
// table of 6 MiB each of a run's first thousands of samples touched a page of its own (a
// page fault to read the zero page, another to copy it), the table grew towards 6 MiB of
// the process's memory, and the filter's false positives probed it out of cache. The
// large table is touched only by a run that needs it.
class SampledSet {
 public:
  static constexpr size_t kSmallSlots = size_t{1} << 14;
  static constexpr size_t kLargeSlots = size_t{1} << 18;
  static constexpr size_t kProbe = 64;

  struct Entry {
    uint64_t weight;
    uint32_t id;
  };

  // False when no slot was free nearby in either table: the block's free will then go
  // unseen. The filter counts the block before it can be found, so that a free racing the
  // insert on another thread (of a block just handed out) never misses it.
  bool insert(uintptr_t p, Entry e) {
    const PlaceFilter::Places f = PlaceFilter::places(p);
    if (!filter_.add(f)) return false;
    if (small_.insert(p, e)) return true;
    // Before the block can be there: its free reads the flag after missing it in the small.
    large_used_.store(true, std::memory_order_release);
    if (large_.insert(p, e)) return true;
    filter_.remove(f);
    return false;
  }
  bool maybe_contains(uintptr_t p) const { return filter_.maybe(PlaceFilter::places(p)); }
  bool erase(uintptr_t p, Entry* out) {
    const PlaceFilter::Places f = PlaceFilter::places(p);
    if (!filter_.maybe(f)) return false;
    if (!small_.erase(p, out) &&
        !(large_used_.load(std::memory_order_acquire) && large_.erase(p, out))) {
      return false;
    }
    filter_.remove(f);
    return true;
  }
  void clear() {
    small_.clear();
    if (large_used_.exchange(false)) large_.clear();
    filter_.clear();
  }
  // In a forked child: the filter's locks the parent's other threads held are free.
  void after_fork_child() { filter_.after_fork_child(); }
  // Whether a block went to the large table since the last clear (for tests).
  bool large_used() const { return large_used_.load(std::memory_order_relaxed); }

 private:
  // Open addressing with linear probes of at most kProbe slots. An erased slot becomes a
  // tombstone, not empty: an insert racing with the erase may have probed past it. Inserts
  // reuse tombstones, and the filter keeps most lookups off the table.
  template <size_t kSlots, int kShift>
  class Table {
   public:
    bool insert(uintptr_t p, Entry e) {
      for (size_t i = 0, h = hash(p); i < kProbe; ++i, h = (h + 1) & (kSlots - 1)) {
        uintptr_t seen = slots_[h].key.load(std::memory_order_relaxed);
        if ((seen == kEmpty || seen == kErased) &&
            slots_[h].key.compare_exchange_strong(seen, kBusy, std::memory_order_acq_rel)) {
          slots_[h].weight.store(e.weight, std::memory_order_relaxed);
          slots_[h].id.store(e.id, std::memory_order_relaxed);
          slots_[h].key.store(p, std::memory_order_release);
          return true;
        }
      }
      return false;
    }
    bool erase(uintptr_t p, Entry* out) {
      for (size_t i = 0, h = hash(p); i < kProbe; ++i, h = (h + 1) & (kSlots - 1)) {
        uintptr_t seen = slots_[h].key.load(std::memory_order_acquire);
        if (seen == kEmpty) return false;
        if (seen != p) continue;
        const Entry e{slots_[h].weight.load(std::memory_order_relaxed),
                      slots_[h].id.load(std::memory_order_relaxed)};
        if (slots_[h].key.compare_exchange_strong(seen, kErased, std::memory_order_acq_rel)) {
          *out = e;
          return true;
        }
      }
      return false;
    }
    void clear() {
      // Read first: the table is zero pages until a run uses it, and reading them does not
      // make them the process's memory.
      for (auto& s : slots_) {
        if (s.key.load(std::memory_order_relaxed) != kEmpty) {
          s.key.store(kEmpty, std::memory_order_relaxed);
        }
      }
    }

   private:
    struct Slot {
      std::atomic<uintptr_t> key{0};
      std::atomic<uint64_t> weight{0};
      std::atomic<uint32_t> id{0};
    };
    static size_t hash(uintptr_t p) {
      return static_cast<size_t>(((p >> 4) * 0x9E3779B97F4A7C15ull) >> kShift) & (kSlots - 1);
    }
    Slot slots_[kSlots];
  };

  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kErased = 1;
  static constexpr uintptr_t kBusy = 2;  // being filled in: no block has this address
  Table<kSmallSlots, 50> small_;
  Table<kLargeSlots, 20> large_;  // other bits of the product than the small table's
  std::atomic<bool> large_used_{false};
  PlaceFilter filter_;
};

}  // namespace spyglass::shim
