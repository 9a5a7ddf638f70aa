// The memory figures of a profile that are not sums: derived, per line and per function,
// from the stacks attributed to it, and written next to their times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "json_writer.hpp"
#include "limits.hpp"
#include "memory_stats.hpp"
#include "timeline.hpp"
#include "times.hpp"

namespace spyglass {

struct MemoryExtras {
  uint64_t executions = 0;
  double peak_bytes = 0;   // the most one execution added
  double freed_bytes = 0;  // of the line's own sampled blocks
  double live_end_bytes = 0;
  double live_at_peak_bytes = 0;  // held when the process's footprint was highest
  LeakVerdict leak;
  std::vector<TimePoint> timeline;  // reduced
};

// Folds the stacks attributed to one line (or function), and the executions of the lines
// (keys) it covers, together.
MemoryExtras summarize_memory(const std::vector<size_t>& stacks,
                              const std::vector<uint64_t>& line_keys, const MemoryStats& stats);
// Whether any line of `stats` would be called a leak now, each line by itself.
bool any_leak(const MemoryStats& stats);

struct RunMemory {
  bool profiled = false;
  double window_mb = 0;  // the sampling rate: mean MB between samples
  double copy_window_mb = 0;
  uint64_t dropped_samples = 0;
};

double bytes_to_mb(double bytes);
// A figure in bytes, written in MB to six places: to the byte, without the digits a
// division by 2^20 leaves beyond it.
void write_mb(JsonWriter& w, double bytes);

// The per-line/function members (after the times fields).
void write_memory_members(JsonWriter& w, const Times& t, const MemoryExtras& m,
                          uint64_t run_alloc_bytes, double elapsed_s);
// Whether a row's figures that are 0 are written (threads' and stacks' are not).
enum class Zeros { kWritten, kLeftOut };
// mem_alloc_mb and copy_mb: for threads, stacks and files.
void write_memory_sums(JsonWriter& w, const Times& t, Zeros zeros = Zeros::kWritten);
// The CUDA copy volume by direction, only where there is some (lines, functions, the run).
void write_cuda_copies(JsonWriter& w, const Times& t);
void write_timeline(JsonWriter& w, const std::vector<TimePoint>& points);

}  // namespace spyglass
