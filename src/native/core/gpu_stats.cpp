#include "gpu_stats.hpp"

#include <algorithm>

namespace spyglass {

void GpuFigures::charge(double ns, double util_pct, double bytes) {
  observed_ns += ns;
  busy_ns += ns * util_pct / 100.0;
  mem_byte_ns += ns * bytes;
  if (ns > 0) peak_bytes = std::max(peak_bytes, bytes);
}

GpuFigures& GpuFigures::operator+=(const GpuFigures& o) {
  observed_ns += o.observed_ns;
  busy_ns += o.busy_ns;
  mem_byte_ns += o.mem_byte_ns;
  peak_bytes = std::max(peak_bytes, o.peak_bytes);
  return *this;
}

void GpuStats::set_devices(std::vector<GpuDeviceInfo> devices) {
  devices_ = std::move(devices);
  stacks_.clear();
  run_.assign(slots(), GpuFigures{});
  unattributed_.assign(slots(), GpuFigures{});
}

void GpuStats::charge(size_t stack, double ns, const std::vector<double>& util_pct,
                      const std::vector<double>& bytes) {
  const size_t n = std::min({slots(), util_pct.size(), bytes.size()});
  std::vector<GpuFigures>* into = &unattributed_;
  if (stack != kNoStack) {
    if (stack >= stacks_.size()) stacks_.resize(stack + 1);
    if (stacks_[stack].empty()) stacks_[stack].assign(slots(), GpuFigures{});
    into = &stacks_[stack];
  }
  for (size_t s = 0; s < n; ++s) {
    (*into)[s].charge(ns, util_pct[s], bytes[s]);
    run_[s].charge(ns, util_pct[s], bytes[s]);
  }
}

const GpuFigures* GpuStats::stack(size_t index) const {
  if (index >= stacks_.size() || stacks_[index].empty()) return nullptr;
  return stacks_[index].data();
}

}  // namespace spyglass
