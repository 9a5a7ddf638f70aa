// When the program allocated, as a clock for the leak test. A line's live bytes are judged
// against the program's allocation rather than against wall time: a leaking request handler
// whose server then idled (or whose process was held off the CPU) before one last
// allocation at exit had half its span flat in seconds, and was no leak; counted in the
// program's allocations, it grew until the program stopped allocating. A cache filled once
// still stops growing while the rest of the program goes on allocating.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
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
  // The same over the allocations of the rest of the program: `own(t)` counts the sampled
  // allocations of the line judged up to t. A line that makes most of the program's
  // allocations while it grows (a cache's misses) otherwise stretches its own growth over
  // the clock: filled by the first 30 % of a server's requests, it was still growing at
  // 64 % of the program's allocations, and was called a leak. The rest of the program's
  // pace is the work's. split() itself where they are fewer than `min_ticks`.
  template <typename Own>
  std::vector<double> split_others(double from_t, double to_t, size_t n, size_t min_ticks,
                                   const Own& own) const;

  void save(ByteWriter& out) const;
  bool load(ByteReader& in);

 private:
  std::vector<double> times_;  // every stride_-th allocation's time
  uint64_t stride_ = 1;
  uint64_t count_ = 0;
};

template <typename Own>
std::vector<double> AllocationClock::split_others(double from_t, double to_t, size_t n,
                                                  size_t min_ticks, const Own& own) const {
  // The others' count at each kept tick: the ticks so far, less the line's own (never
  // falling, though both are thinned).
  std::vector<std::pair<double, double>> others;
  const double base = own(from_t);
  double most = 0;
  for (size_t i = 0; i < times_.size(); ++i) {
    const double t = times_[i];
    if (t < from_t) continue;
    if (t > to_t) break;
    most = std::max(most, static_cast<double>((others.size() + 1) * stride_) - (own(t) - base));
    others.emplace_back(t, most);
  }
  const double total = others.empty() ? 0 : others.back().second;
  // min_ticks counts kept ticks, as split() reads it; `total` counts allocations.
  if (total < static_cast<double>(min_ticks * stride_)) return split(from_t, to_t, n, min_ticks);
  std::vector<double> at(n);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const double share = total * static_cast<double>(i + 1) / static_cast<double>(n);
    while (k + 1 < others.size() && others[k].second < share) ++k;
    at[i] = others[k].first;
  }
  if (n > 0) at[n - 1] = to_t;
  return at;
}

}  // namespace spyglass
