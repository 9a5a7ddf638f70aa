// A bounded multi-producer single-consumer queue of fixed-size records, for producers that
// run inside the allocator (any thread, any time): claiming a cell is one compare-and-swap,
// nothing allocates or blocks, and a full queue drops the record and counts it.
// The cell protocol is Dmitry Vyukov's bounded queue: each cell carries a sequence number
// that says whose turn it is, so a producer that stalls between claim and publish only
// delays the consumer at that cell.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

namespace spyglass {

template <typename T>
class MpscRing {
  // Cells are handed out as raw storage that producers fill in full (see values_).
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  explicit MpscRing(size_t capacity) { reset(capacity); }

  // Not thread-safe: for set-up, and for a forked child whose producers may have died
  // between claim and publish.
  void reset(size_t capacity) {
    size_t n = 2;
    while (n < capacity) n <<= 1;
    // In place when the size stays: a forked child resets it, and should not pay for a
    // new buffer (megabytes of fresh pages) on its way to its first line.
    if (!sequences_ || mask_ != n - 1) {
      sequences_ = std::make_unique<std::atomic<uint64_t>[]>(n);
      values_.reset(static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)})));
    }
    mask_ = n - 1;
    for (size_t i = 0; i < n; ++i) sequences_[i].store(i, std::memory_order_relaxed);
    enqueue_.store(0, std::memory_order_relaxed);
    dequeue_.store(0, std::memory_order_relaxed);
  }

  // Producer: a cell to fill, or nullptr when the queue is full; publish() it afterwards.
  T* claim(uint64_t* ticket) {
    uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      const uint64_t seq = sequences_[pos & mask_].load(std::memory_order_acquire);
      const auto diff = static_cast<int64_t>(seq) - static_cast<int64_t>(pos);
      if (diff == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *ticket = pos;
          return &values_.get()[pos & mask_];
        }
      } else if (diff < 0) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
  }
  void publish(uint64_t ticket) {
    sequences_[ticket & mask_].store(ticket + 1, std::memory_order_release);
  }

  // Consumer (one thread at a time).
  const T* front() const {
    const uint64_t at = dequeue_.load(std::memory_order_relaxed);
    const size_t i = at & mask_;
    if (sequences_[i].load(std::memory_order_acquire) != at + 1) return nullptr;
    return &values_.get()[i];
  }
  void pop() {
    const uint64_t at = dequeue_.load(std::memory_order_relaxed);
    sequences_[at & mask_].store(at + mask_ + 1, std::memory_order_release);
    dequeue_.store(at + 1, std::memory_order_relaxed);
  }

  // Records claimed so far, and consumed so far: a consumer that must see everything
  // claimed up to now waits until the second reaches the first.
  uint64_t claimed() const { return enqueue_.load(std::memory_order_acquire); }
  uint64_t consumed() const { return dequeue_.load(std::memory_order_relaxed); }
  // Records claimed and not yet consumed, as any thread may see it: approximate while
  // producers and the consumer run.
  uint64_t backlog() const {
    const uint64_t out = dequeue_.load(std::memory_order_relaxed);
    const uint64_t in = enqueue_.load(std::memory_order_relaxed);
    return in > out ? in - out : 0;
  }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t capacity() const { return mask_ + 1; }

 private:
  struct Release {
    void operator()(T* p) const { ::operator delete (p, std::align_val_t{alignof(T)}); }
  };
  size_t mask_ = 0;
  // Each cell's turn (see the protocol above).
  std::unique_ptr<std::atomic<uint64_t>[]> sequences_;
  // The cells' values, apart from their sequence numbers and never initialised here: a
  // ring of records with stacks is megabytes, whose pages the kernel then maps only as
  // producers first reach them, where zeroing them all made every profiled process fault
  // them in at start (milliseconds). Producers write every field they publish; a value
  // read before its first write is never published.
  std::unique_ptr<T, Release> values_;
  alignas(64) std::atomic<uint64_t> enqueue_{0};
  // Written by the consumer alone; atomic so that producers may read the backlog.
  alignas(64) std::atomic<uint64_t> dequeue_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace spyglass
