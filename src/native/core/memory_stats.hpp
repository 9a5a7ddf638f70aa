// The memory side of a run that does not simply add up: the estimated footprint over time,
// each line's live bytes (its sampled blocks not freed yet) over time, what it held at the
// footprint's peak, its executions, and the verdict on leaks. Additive figures (bytes
// allocated, copied) live in the stack table's Times.
//
// Every figure comes from the hooks' byte-level samples (shim/memory_hooks.hpp): each
// sampled block carries a weight and an id, and its free (when the hooks see it) carries
// the same id, so the free comes off the line that allocated the block, wherever it is
// freed. A leak is a line whose live bytes keep growing over the run and are not freed by
// its end (leak_verdict(); docs/memory-profiling.md explains the figures).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "allocation_clock.hpp"
#include "byte_io.hpp"
#include "memory_record.hpp"
#include "timeline.hpp"

namespace spyglass {

struct StackMemory {
  int64_t live_bytes = 0;        // sampled blocks allocated on this stack, not freed yet
  BoundedTimeline timeline{64};  // the process's footprint at each of its samples
};

// One line's sampled blocks (its key: see line_key()).
inline constexpr uint32_t kNoCode = UINT32_MAX;

struct LineMemory {
  uint64_t alloc_bytes = 0;
  uint64_t freed_bytes = 0;  // of its own blocks, wherever they were freed
  int64_t live_bytes = 0;
  int64_t live_blocks = 0;  // sampled blocks behind live_bytes
  int64_t max_live_bytes = 0;
  uint64_t import_bytes = 0;  // of alloc_bytes, allocated importing a module
  int64_t live_at_peak = 0;   // as of peak_epoch (see MemoryStats::settle)
  uint32_t peak_epoch = 0;
  double first_t = -1;               // seconds: its first sample
  BoundedTimeline live_series{128};  // live_bytes after each change
  // Its count of sampled allocations after each (the last point, exact however thinned):
  // the leak test's second clock leaves them out.
  BoundedTimeline sample_series{64};
  // The function of the program's outermost under its latest sample (a test): kNoCode
  // when none was known, or that frame was a module's (a script's, a prompt's statement).
  uint32_t outer_code = kNoCode;
};

// An execution of a line is a run of a thread's consecutive samples attributed to it; its
// peak is the most the line's live bytes rose during it.
struct ExecutionStats {
  uint64_t count = 0;
  int64_t max_peak = 0;
};

// Identifies the line a sample is attributed to: (code id << 32) | line.
inline uint64_t line_key(uint32_t code_id, int32_t line) {
  return (static_cast<uint64_t>(code_id) << 32) | static_cast<uint32_t>(line);
}
inline constexpr uint64_t kNoLineKey = ~uint64_t{0};  // no profiled frame

// Whether a line's live bytes make a leak, and how sure and how fast.
struct LeakVerdict {
  bool leak = false;
  double confidence = 0;    // of a rising trend (Mann-Kendall), in [0, 1]
  double rate_bytes_s = 0;  // growth of its live bytes over its span
};

inline constexpr double kLeakConfidence = 0.95;
inline constexpr int kLeakBins = 16;          // points of the trend test
inline constexpr int64_t kLeakMinBlocks = 8;  // live samples at the end, for any verdict
// A leak is left behind by repeated executions of the line; one execution that builds a
// structure and keeps it (a comprehension just before the profile stops) is not one.
inline constexpr uint64_t kLeakMinExecutions = 4;

// `bins`: a line's live bytes at kLeakBins times from its first sample to the end of the
// run, the last at the end, that split the program's allocations in between evenly
// (AllocationClock); `span_s`: the seconds between; `executions`: how many executions of the
// line were sampled.
LeakVerdict leak_verdict(const double (&bins)[kLeakBins], double span_s, int64_t live_end,
                         int64_t max_live, int64_t live_blocks, uint64_t executions);
// The value of a step series (each point holds until the next) at t; 0 before it starts.
double value_at(const std::vector<TimePoint>& points, double t);
// The value at t of a series that moves evenly between its points (a count thinned);
// 0 before it starts, its last value after it ends.
double interpolated_at(const std::vector<TimePoint>& points, double t);

class MemoryStats {
 public:
  void reset(uint64_t start_ns);

  // A sampled allocation drained from the hooks, on a stack of the stack table, attributed
  // to the line `key`; `tracked`: its free will be reported under `sample_id`;
  // `after_wait`: its thread was off its CPU a while since its sample before.
  // `importing`: made under the import system (an import statement's).
  // `outer_code`: the code of the outermost frame of the program's on its stack.
  // `held_epoch`: an allocation whose line was known only later (its footprint noted by
  // held_footprint(), whose answer this is), else kNotHeld.
  void add_alloc(size_t stack, uint64_t key, bool has_python_frame, int32_t tid, uint64_t t_ns,
                 int64_t bytes, int64_t footprint_after, bool tracked, uint32_t sample_id,
                 bool after_wait = false, bool importing = false, uint32_t outer_code = kNoCode,
                 uint32_t held_epoch = kNotHeld);
  // The footprint after an allocation whose figures come later, in the order the hooks
  // counted it; what add_alloc is then told.
  static constexpr uint32_t kNotHeld = UINT32_MAX;
  uint32_t held_footprint(uint64_t t_ns, int64_t footprint_after);
  // A sampled free in two parts, for one whose allocation is held: the footprint after it
  // now, the block's figures once its allocation's are in.
  void free_footprint(uint64_t t_ns, int64_t footprint_after);
  void free_block(uint32_t sample_id, uint64_t t_ns);
  // A sample of any kind found code `code` the outermost frame of the program's at `t_ns`.
  void saw_outer(uint32_t code, uint64_t t_ns);
  // The free of a tracked sampled allocation.
  void sampled_free(uint32_t sample_id, uint64_t t_ns, int64_t footprint_after);
  // The line of thread `tid`'s open execution (kNoLineKey: none).
  uint64_t open_line(int32_t tid) const {
    auto it = open_execution_.find(tid);
    return it == open_execution_.end() ? kNoLineKey : it->second.key;
  }
  // How many of the executions still open are of line `key` (none after finish()).
  uint64_t open_executions(uint64_t key) const {
    uint64_t n = 0;
    for (const auto& [tid, e] : open_execution_) n += e.key == key ? 1 : 0;
    return n;
  }
  // Ends the executions still open (at stop).
  void finish();

  const std::unordered_map<size_t, StackMemory>& stacks() const { return stacks_; }
  const std::unordered_map<uint64_t, LineMemory>& lines() const { return lines_; }
  const std::unordered_map<uint64_t, ExecutionStats>& executions() const { return executions_; }
  const BoundedTimeline& footprint() const { return footprint_; }
  int64_t max_footprint_bytes() const { return max_footprint_; }
  int64_t final_footprint_bytes() const { return footprint_now_; }
  uint64_t freed_bytes() const { return freed_; }
  // The stack whose sample set the maximum footprint; SIZE_MAX when none did.
  size_t max_footprint_stack() const { return max_stack_; }
  uint64_t native_thread_alloc_bytes() const { return native_thread_alloc_; }
  // When the program's sampled allocations were made.
  const AllocationClock& allocations() const { return allocations_; }
  // Seconds from the start to the last event: the end of the run as the samples see it.
  double end_seconds() const { return last_t_ > 0 ? last_t_ : 0; }
  // The end of the work that made a line's allocations, for its leak test: when the code
  // it ran under (LineMemory::outer_code) was last seen running, if that was before the
  // end. A test function leaking a block a call, whose suite ran on to other tests and
  // pytest's summary, stopped growing when its calls did; a loop that fills a cache goes
  // on through its hits. (The engine gives outer codes for the main thread's allocations
  // only, and no module's code: docs/memory-profiling.md.)
  double work_end_seconds(const LineMemory& line) const;
  // A line's live bytes when the footprint was at its maximum.
  int64_t live_at_peak(const LineMemory& line) const {
    return line.peak_epoch == peak_epoch_ ? line.live_at_peak : line.live_bytes;
  }

  double seconds_since_start(uint64_t t_ns) const;

  // The whole state, for a run journal that must rebuild it in another process. load()
  // returns false on a short or malformed input.
  void save(ByteWriter& out) const;
  bool load(ByteReader& in);

 private:
  // Before a line's live bytes change: if the footprint reached a new maximum since the
  // line last changed, its value then is its live bytes now.
  void settle(LineMemory& line);
  void note_footprint(double t, int64_t footprint_after, size_t stack);
  // The allocation on `stack` that took the footprint to a new maximum: the peak's place?
  void place_peak(size_t stack, int64_t footprint_after);

  uint64_t start_ns_ = 0;
  std::unordered_map<size_t, StackMemory> stacks_;
  std::unordered_map<uint64_t, LineMemory> lines_;
  struct Live {
    size_t stack;
    uint64_t key;
    int64_t bytes;
  };
  std::unordered_map<uint32_t, Live> live_;  // tracked sampled blocks not freed yet
  struct Execution {
    uint64_t key;
    int64_t net;  // the line's live bytes when the execution began
    int64_t peak;
  };
  std::unordered_map<uint64_t, ExecutionStats> executions_;
  void close(const Execution& e);
  std::unordered_map<int32_t, Execution> open_execution_;  // by thread
  BoundedTimeline footprint_{512};
  int64_t footprint_now_ = 0;
  double last_t_ = -1;
  int64_t max_footprint_ = 0;
  uint32_t peak_epoch_ = 0;  // bumped by every new maximum of the footprint
  size_t max_stack_ = SIZE_MAX;
  int64_t located_footprint_ = 0;  // the footprint when max_stack_ was last set
  uint64_t freed_ = 0;
  uint64_t native_thread_alloc_ = 0;
  std::unordered_map<uint32_t, double> outer_seen_;  // code -> seconds it was last seen
  AllocationClock allocations_;
};

}  // namespace spyglass
