// What the allocator hooks hand to the aggregator: one threshold sample of a thread's net
// allocation, a copy-volume sample, or the news that an allocation watched for leaks was
// freed. Fixed-size, so it is written inside malloc without allocating.
#pragma once

#include <cstdint>

#include "sample.hpp"

namespace spyglass {

// Allocations watched for leaks at once: those of the latest samples before a new peak.
inline constexpr int kWatchSlots = 8;

enum class MemoryEvent : uint8_t {
  kNet = 0,         // |allocated - freed| on the thread reached the window
  kCopy = 1,        // copied bytes on the thread reached the copy window
  kWatchedFree = 2  // an allocation watched for leaks was freed before the next peak
};

struct MemoryRecord {
  MemoryEvent event = MemoryEvent::kNet;
  bool truncated = false;
  bool new_peak = false;          // this sample took the process's footprint to a new maximum
  int8_t watch_slot = -1;         // kNet: the watch slot its allocation went to (-1: none);
                                  // kWatchedFree: the slot whose allocation was freed
  uint32_t watch_generation = 0;  // tells a slot's successive occupants apart
  uint16_t depth = 0;             // Python frames, innermost first; 0 for a thread with none
  int32_t tid = 0;
  uint32_t epoch = 0;           // the hooks' start() it belongs to: older ones are dropped
  uint64_t t_ns = 0;            // monotonic clock
  int64_t net_bytes = 0;        // kNet: signed net change the sample carries
  uint64_t python_bytes = 0;    // kNet: the part of a growth made through Python's allocator
  uint64_t copy_bytes = 0;      // kCopy
  int64_t footprint_bytes = 0;  // process footprint (sum of net samples) after this one
  RawFrame frames[kMaxStackDepth];
};

}  // namespace spyglass
