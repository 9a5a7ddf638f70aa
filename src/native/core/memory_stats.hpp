// The memory side of a run that does not simply add up: each stack's live footprint over
// time, its executions, and its leak scores. Additive figures (bytes allocated, freed,
// copied) live in the stack table's Times.
//
// Leaks follow the Scalene paper (OSDI'23, section 3.3): an allocation that is still alive
// when the footprint reaches its next peak scores one "survived" for its line, one freed
// before scores a free, and the likelihood of a leak is Laplace's rule of succession. The
// paper watches only the allocation that set the latest peak; we watch the allocations of
// the last few samples before each peak (kWatchSlots), because a line that leaks steadily
// while another line makes bigger short-lived blocks never sets a peak itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "byte_io.hpp"
#include "memory_record.hpp"
#include "timeline.hpp"

namespace spyglass {

struct StackMemory {
  int64_t live_bytes = 0;  // net of every sample taken on this stack
  // Leak scores: allocations of this stack scored (at the next peak or when freed before
  // it), and of those, the ones freed first.
  uint64_t watched = 0;
  uint64_t watched_freed = 0;
  BoundedTimeline timeline{64};  // the process's footprint at each of its samples
};

// An execution of a line is a run of a thread's consecutive samples attributed to it; its
// peak is the highest its running net reached.
struct ExecutionStats {
  uint64_t count = 0;
  int64_t max_peak = 0;
};

// Identifies the line a sample is attributed to: (code id << 32) | line.
inline uint64_t line_key(uint32_t code_id, int32_t line) {
  return (static_cast<uint64_t>(code_id) << 32) | static_cast<uint32_t>(line);
}
inline constexpr uint64_t kNoLineKey = ~uint64_t{0};  // no profiled frame

class MemoryStats {
 public:
  void reset(uint64_t start_ns);

  // A net sample drained from the hooks, on a stack of the stack table, attributed to the
  // line `key` (see line_key()).
  // `watch_slot` (-1 for none) and `watch_generation` say where the hooks watch the
  // sample's allocation.
  void add_net(size_t stack, uint64_t key, bool has_python_frame, int32_t tid, uint64_t t_ns,
               int64_t net, int64_t footprint_after, bool new_peak, int watch_slot = -1,
               uint32_t watch_generation = 0);
  // A watched allocation was freed before the next peak.
  void watched_freed(int watch_slot, uint32_t watch_generation);
  // Ends the executions still open (at stop).
  void finish();

  const std::unordered_map<size_t, StackMemory>& stacks() const { return stacks_; }
  const std::unordered_map<uint64_t, ExecutionStats>& executions() const { return executions_; }
  const BoundedTimeline& footprint() const { return footprint_; }
  int64_t max_footprint_bytes() const { return max_footprint_; }
  int64_t final_footprint_bytes() const { return footprint_now_; }
  // The stack whose sample set the maximum footprint; SIZE_MAX when none did.
  size_t max_footprint_stack() const { return max_stack_; }
  uint64_t native_thread_alloc_bytes() const { return native_thread_alloc_; }

  double seconds_since_start(uint64_t t_ns) const;

  // The whole state, for a run journal that must rebuild it in another process. load()
  // returns false on a short or malformed input.
  void save(ByteWriter& out) const;
  bool load(ByteReader& in);

  // Laplace's rule of succession over the watched/freed scores, in [0, 1].
  static double leak_likelihood(uint64_t watched, uint64_t freed);

 private:
  uint64_t start_ns_ = 0;
  std::unordered_map<size_t, StackMemory> stacks_;
  struct Execution {
    uint64_t key;
    int64_t net;
    int64_t peak;
  };
  std::unordered_map<uint64_t, ExecutionStats> executions_;
  void close(const Execution& e);
  std::unordered_map<int32_t, Execution> open_execution_;  // by thread
  BoundedTimeline footprint_{512};
  int64_t footprint_now_ = 0;
  double last_footprint_t_ = -1;
  int64_t max_footprint_ = 0;
  size_t max_stack_ = SIZE_MAX;
  struct Watch {
    bool active = false;
    uint32_t generation = 0;
    size_t stack = 0;
  };
  Watch watches_[kWatchSlots];
  uint64_t native_thread_alloc_ = 0;
};

}  // namespace spyglass
