// What the allocator hooks hand to the aggregator: one sampled allocation, the free of a
// sampled allocation, or a copy-volume sample. Fixed-size, so it is written inside malloc
// without allocating.
#pragma once

#include <cstdint>

#include "sample.hpp"

namespace spyglass {

enum class MemoryEvent : uint8_t {
  kAlloc = 0,       // an allocation the byte-level Poisson sampling picked
  kCopy = 1,        // copied bytes on the thread reached the copy window
  kSampledFree = 2  // a sampled allocation was freed (no stack: its line is its allocation's)
};

// What a kCopy record copied: host memory (the memcpy family) or, through a CUDA library's
// copy entry points, between the host and a GPU.
enum class CopyKind : uint8_t {
  kHost = 0,
  kHostToDevice = 1,
  kDeviceToHost = 2,
  kDeviceToDevice = 3
};

struct MemoryRecord {
  MemoryEvent event = MemoryEvent::kAlloc;
  bool truncated = false;
  bool new_peak = false;    // this event took the estimated footprint to a new maximum
  bool tracked = false;     // kAlloc: its free will be reported (the sampled set had room)
  bool after_wait = false;  // kAlloc: the thread was off its CPU a while since its last one
  bool reserved = false;    // kAlloc: address space reserved, counted as it becomes resident
                            // (shim/reserved_maps.hpp): its stack, with no bytes
  uint32_t sample_id = 0;   // kAlloc, kSampledFree: pairs a free with its allocation
  uint16_t depth = 0;       // Python frames, innermost first; 0 for a thread with none
  CopyKind copy_kind = CopyKind::kHost;  // kCopy
  int32_t tid = 0;
  uint32_t epoch = 0;           // the hooks' start() it belongs to: older ones are dropped
  uint64_t t_ns = 0;            // monotonic clock
  int64_t net_bytes = 0;        // kAlloc: the bytes the sample stands for (its weight);
                                // kSampledFree: minus that weight
  uint64_t python_bytes = 0;    // kAlloc: the weight, when made through Python's allocator
  uint64_t copy_bytes = 0;      // kCopy
  int64_t footprint_bytes = 0;  // estimated live bytes of the process after this event
  RawFrame frames[kMaxStackDepth];
};

}  // namespace spyglass
