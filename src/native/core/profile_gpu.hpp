// The GPU part of the profile: the GPU engine's per-stack figures folded into the lines and
// functions the stacks are attributed to, and written out (docs/gpu.md says what each
// key means). Present only when the GPU was profiled.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu_stats.hpp"
#include "json_writer.hpp"

namespace spyglass {

class GpuModel {
 public:
  using FunctionKey = std::pair<int, std::string>;

  // Copies what the document needs of `stats`.
  void begin(const GpuStats& stats);
  bool on() const { return on_; }
  // The stack at `index` is attributed to this line of this function.
  void add(const GpuStats& stats, size_t index, const std::string& file, int line,
           const FunctionKey& function);

  void write_run(JsonWriter& w) const;
  void write_line(JsonWriter& w, const std::string& file, int line) const;
  void write_function(JsonWriter& w, const std::string& file, const FunctionKey& key) const;

 private:
  using Slots = std::vector<GpuFigures>;
  void write_figures(JsonWriter& w, const Slots* slots) const;

  bool on_ = false;
  std::vector<GpuDeviceInfo> devices_;
  Slots run_;
  Slots unattributed_;
  std::vector<TimePoint> timeline_;
  std::string note_;
  std::map<std::string, std::map<int, Slots>> lines_;
  std::map<std::string, std::map<FunctionKey, Slots>> functions_;
};

}  // namespace spyglass
