// The large blocks allocated while the hooks were on, so that freeing one allocated before
// (or by an allocator the hooks never saw) is not subtracted from the footprint. Only
// blocks of at least kTrackedBlockBytes are kept: they are few, and they are the ones that
// would distort the footprint. Lock-free, fixed-size, usable inside malloc.
#pragma once

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
