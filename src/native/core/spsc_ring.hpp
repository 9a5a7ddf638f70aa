// A single-producer single-consumer ring. The producer is a signal handler on the sampled
// thread, so push() is wait-free and never allocates; a full ring drops the record and
// counts it rather than blocking the interrupted program.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace spyglass {

template <typename T>
class SpscRing {
 public:
  // The capacity is rounded up to a power of two so that indices can be masked.
  explicit SpscRing(size_t capacity)
      : mask_(round_up_pow2(capacity) - 1), slots_(std::make_unique<T[]>(mask_ + 1)) {}

  // Producer side. Returns a slot to fill, or nullptr when full; commit() publishes it.
  T* reserve() {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) > mask_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    return &slots_[head & mask_];
  }
  void commit() {
    head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Consumer side.
  const T* front() const {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail == head_.load(std::memory_order_acquire)) return nullptr;
    return &slots_[tail & mask_];
  }
  void pop() { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  bool empty() const {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire);
  }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t capacity() const { return mask_ + 1; }

 private:
  static uint64_t round_up_pow2(size_t n) {
    uint64_t p = 1;
    while (p < n) p <<= 1;
    return p;
  }
  const uint64_t mask_;
  std::unique_ptr<T[]> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace spyglass
