// When the program allocated, as a clock for the leak test. A line's live bytes are judged
// against the program's allocation rather than against wall time: a leaking request handler
// whose server then idled (or whose process was held off the CPU) before one last
// allocation at exit had half its span flat in seconds, and was no leak; counted in the
// program's allocations, it grew until the program stopped allocating. A cache filled once
// still stops growing while the rest of the program goes on allocating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "byte_io.hpp"

namespace spyglass {

class AllocationClock {
 public:
  // Enough that a quantile is within 1/2048 of the allocations; bounded however long the run.
  static constexpr size_t kKept = 4096;

  // A sampled allocation at t seconds (not before the one noted last).
  void tick(double t);
  // `n` times from `from_t` to `to_t` that split the allocations between them into `n` equal
  // shares: the i-th (from 0) is where (i + 1) / n of them are done, the last is `to_t`.
  // Evenly spaced times when there were fewer than `min_ticks` allocations between them.
  std::vector<double> split(double from_t, double to_t, size_t n, size_t min_ticks) const;

  void save(ByteWriter& out) const;
  bool load(ByteReader& in);

 private:
  std::vector<double> times_;  // every stride_-th allocation's time
  uint64_t stride_ = 1;
  uint64_t count_ = 0;
};

}  // namespace spyglass
