#include "profile_gpu.hpp"

#include <algorithm>

#include "limits.hpp"
#include "profile_memory.hpp"

namespace spyglass {

namespace {

void add_into(std::vector<GpuFigures>& into, const GpuFigures* from, size_t n) {
  if (into.empty()) into.assign(n, GpuFigures{});
  for (size_t s = 0; s < n; ++s) into[s] += from[s];
}

// Clamped: sums of rounded products may pass 100% by a hair.
double pct(const GpuFigures& f) {
  return f.observed_ns > 0 ? std::min(100.0, 100.0 * f.busy_ns / f.observed_ns) : 0;
}
double mean_mb(const GpuFigures& f) {
  return f.observed_ns > 0 ? bytes_to_mb(f.mem_byte_ns / f.observed_ns) : 0;
}

}  // namespace

void GpuModel::begin(const GpuStats& stats) {
  on_ = true;
  devices_ = stats.devices();
  run_ = stats.run();
  unattributed_ = stats.unattributed();
  timeline_ = reduce_timeline(stats.timeline(), kRunTimelinePoints);
  note_ = stats.note();
}

void GpuModel::add(const GpuStats& stats, size_t index, const std::string& file, int line,
                   const FunctionKey& function) {
  const GpuFigures* figures = stats.stack(index);
  if (figures == nullptr) return;
  add_into(lines_[file][line], figures, stats.slots());
  add_into(functions_[file][function], figures, stats.slots());
}

void GpuModel::write_run(JsonWriter& w) const {
  if (!on_) return;
  w.key("gpu_profiled");
  w.value(true);
  bool per_process = true;
  for (const GpuDeviceInfo& d : devices_) per_process = per_process && d.util_own && d.memory_own;
  w.key("gpu_per_process");
  w.value(per_process);
  const GpuFigures all = run_.empty() ? GpuFigures{} : run_[0];
  w.key("gpu_util_pct");
  w.value(pct(all));
  w.key("gpu_mem_mb");
  w.value(mean_mb(all));
  w.key("gpu_peak_mem_mb");
  write_mb(w, all.peak_bytes);
  w.key("gpu_busy_s");
  w.value(all.busy_ns / 1e9 * static_cast<double>(devices_.size()));
  w.key("gpu_observed_s");
  w.value(all.observed_ns / 1e9);
  w.key("gpu_unattributed_busy_s");
  w.value(unattributed_.empty()
              ? 0.0
              : unattributed_[0].busy_ns / 1e9 * static_cast<double>(devices_.size()));
  w.key("gpu_devices");
  w.begin_array();
  for (size_t i = 0; i < devices_.size(); ++i) {
    const GpuDeviceInfo& d = devices_[i];
    const GpuFigures f = i + 1 < run_.size() ? run_[i + 1] : GpuFigures{};
    w.begin_object();
    w.key("index");
    w.value(static_cast<int64_t>(i));
    w.key("name");
    w.value(d.name);
    w.key("total_mem_mb");
    write_mb(w, d.total_bytes);
    w.key("util_per_process");
    w.value(d.util_own);
    w.key("memory_per_process");
    w.value(d.memory_own);
    w.key("util_pct");
    w.value(pct(f));
    w.key("mem_mb");
    w.value(mean_mb(f));
    w.key("peak_mem_mb");
    write_mb(w, f.peak_bytes);
    w.key("busy_s");
    w.value(f.busy_ns / 1e9);
    w.end_object();
  }
  w.end_array();
  w.key("gpu_timeline");
  write_timeline(w, timeline_);
  w.key("gpu_note");
  if (note_.empty()) {
    w.null();
  } else {
    w.value(note_);
  }
}

void GpuModel::write_figures(JsonWriter& w, const Slots* slots) const {
  if (!on_) return;
  const size_t n = devices_.size();
  const GpuFigures all = slots != nullptr && !slots->empty() ? (*slots)[0] : GpuFigures{};
  const double run_busy = run_.empty() ? 0.0 : run_[0].busy_ns;
  // Slot 0 averages utilisation over the devices: its busy time is per device.
  w.key("gpu_util_pct");
  w.value(pct(all));
  w.key("gpu_mem_mb");
  w.value(mean_mb(all));
  w.key("gpu_peak_mem_mb");
  write_mb(w, all.peak_bytes);
  w.key("gpu_busy_s");
  w.value(all.busy_ns / 1e9 * static_cast<double>(n));
  w.key("gpu_observed_s");
  w.value(all.observed_ns / 1e9);
  w.key("gpu_share");
  w.value(run_busy > 0 ? std::min(1.0, all.busy_ns / run_busy) : 0.0);
  if (n < 2) return;
  w.key("gpu_devices");
  w.begin_array();
  for (size_t i = 0; i < n; ++i) {
    const GpuFigures f = slots != nullptr && i + 1 < slots->size() ? (*slots)[i + 1] : GpuFigures{};
    w.begin_object();
    w.key("util_pct");
    w.value(pct(f));
    w.key("mem_mb");
    w.value(mean_mb(f));
    w.key("peak_mem_mb");
    write_mb(w, f.peak_bytes);
    w.key("busy_s");
    w.value(f.busy_ns / 1e9);
    w.end_object();
  }
  w.end_array();
}

void GpuModel::write_line(JsonWriter& w, const std::string& file, int line) const {
  const auto f = lines_.find(file);
  const Slots* slots = nullptr;
  if (f != lines_.end()) {
    const auto l = f->second.find(line);
    if (l != f->second.end()) slots = &l->second;
  }
  write_figures(w, slots);
}

void GpuModel::write_function(JsonWriter& w, const std::string& file,
                              const FunctionKey& key) const {
  const auto f = functions_.find(file);
  const Slots* slots = nullptr;
  if (f != functions_.end()) {
    const auto k = f->second.find(key);
    if (k != f->second.end()) slots = &k->second;
  }
  write_figures(w, slots);
}

}  // namespace spyglass
