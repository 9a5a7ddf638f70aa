#include "allocation_clock.hpp"

#include <algorithm>

namespace spyglass {

void AllocationClock::tick(double t) {
  if (count_++ % stride_ != 0) return;
  if (!times_.empty()) t = std::max(t, times_.back());
  times_.push_back(t);
  if (times_.size() < kKept) return;
  // Full: keep every other one, and from now on note every other allocation as many.
  size_t kept = 0;
  for (size_t i = 0; i < times_.size(); i += 2) times_[kept++] = times_[i];
  times_.resize(kept);
  stride_ *= 2;
}

std::vector<double> AllocationClock::split(double from_t, double to_t, size_t n,
                                           size_t min_ticks) const {
  std::vector<double> at(n);
  const auto first = std::lower_bound(times_.begin(), times_.end(), from_t);
  const auto last = std::upper_bound(first, times_.end(), to_t);
  const auto ticks = static_cast<size_t>(last - first);
  for (size_t i = 0; i < n; ++i) {
    if (ticks < min_ticks) {
      at[i] = from_t + (to_t - from_t) * static_cast<double>(i + 1) / static_cast<double>(n);
    } else {
      // The tick that completes the share: ceil((i + 1) * ticks / n) - 1.
      at[i] = first[static_cast<std::ptrdiff_t>(((i + 1) * ticks + n - 1) / n - 1)];
    }
  }
  if (n > 0) at[n - 1] = to_t;
  return at;
}

void AllocationClock::save(ByteWriter& out) const {
  out.u64(stride_);
  out.u64(count_);
  out.u32(static_cast<uint32_t>(times_.size()));
  for (double t : times_) out.f64(t);
}

bool AllocationClock::load(ByteReader& in) {
  stride_ = in.u64();
  count_ = in.u64();
  const uint32_t n = in.u32();
  if (!in.ok() || stride_ == 0 || n > kKept || n > in.remaining() / 8) return false;
  times_.resize(n);
  for (double& t : times_) t = in.f64();
  return in.ok();
}

}  // namespace spyglass
