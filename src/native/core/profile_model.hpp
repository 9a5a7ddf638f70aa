// The profile as readers see it: samples attributed to the user's lines and functions,
// built from the stack table once the run is over, and serialised as the versioned JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "file_filter.hpp"
#include "gpu_stats.hpp"
#include "memory_stats.hpp"
#include "native_model.hpp"
#include "profile_gpu.hpp"
#include "profile_memory.hpp"
#include "stack_table.hpp"
#include "times.hpp"

namespace spyglass {

inline constexpr int kSchemaVersion = 3;
inline constexpr const char* kFormatMagic = "spyglass-profile";

// What the code table knows about one code object once it has been resolved.
struct CodeInfo {
  std::string file;
  std::string name;  // qualified name where the interpreter has one
  int first_lineno = 0;
};

// An asyncio task's time suspended at awaits, by the task's name and its coroutine.
struct TaskAwait {
  std::string name;
  std::string coroutine;  // qualified name of the task's outermost coroutine
  uint64_t await_ns = 0;
};

struct ThreadInfo {
  int32_t tid = 0;
  std::string name;  // empty when unknown
  Times times;
};

struct FileStats {
  Times times;
  std::map<int, Times> lines;
  // Keyed by (first line, name): two functions may share a name but not a first line.
  std::map<std::pair<int, std::string>, Times> functions;
  // When memory was profiled.
  std::map<int, MemoryExtras> line_memory;
  std::map<std::pair<int, std::string>, MemoryExtras> function_memory;
};

// Members the Python layer adds to the top level (program, argv, exit status, options, ...):
// each a key and its value as JSON text, which Python's own encoder made.
using MetaMembers = std::vector<std::pair<std::string, std::string>>;

struct RunInfo {
  double elapsed_s = 0;
  double interval_s = 0;
  uint64_t dropped_samples = 0;
  RunMemory memory;
};

class ProfileModel {
 public:
  // Attributes every stack to its innermost profiled frame. `memory` is null when memory
  // was not profiled; `gpu` null when the GPU was not.
  static ProfileModel build(const StackTable& stacks, const std::vector<CodeInfo>& codes,
                            const FileFilter& filter, std::vector<ThreadInfo> threads,
                            const MemoryStats* memory = nullptr, const GpuStats* gpu = nullptr);

  // Adds the native breakdowns (native_model.hpp) from the run's native costs; `functions`
  // names the costs' symbol ids.
  void attach_native(const NativeCosts& costs, std::vector<NativeFunction> functions,
                     const std::vector<CodeInfo>& codes);
  const NativeBreakdown& native() const { return native_; }
  // The run's asyncio tasks (written as `tasks` when there are any), longest await first.
  void attach_tasks(std::vector<TaskAwait> tasks);

  const Times& total() const { return total_; }
  const Times& unattributed() const { return unattributed_; }
  const std::map<std::string, FileStats>& files() const { return files_; }
  const std::vector<ThreadInfo>& threads() const { return threads_; }

  // Serialises the document, with `meta` among the top-level members. `sources` gives the
  // text of each profiled file, line 1 first.
  std::string to_json(const MetaMembers& meta, const RunInfo& run,
                      const std::unordered_map<std::string, std::vector<std::string>>& sources,
                      const StackTable& stacks, const std::vector<CodeInfo>& codes) const;

 private:
  Times total_;
  Times unattributed_;
  std::map<std::string, FileStats> files_;
  std::vector<ThreadInfo> threads_;
  std::vector<uint16_t> visible_depth_;  // per stack entry, see build()
  std::vector<FrameKey> stack_hits_;     // per stack entry: its line; code_id kNoHit if none
  static constexpr uint32_t kNoHit = UINT32_MAX;
  NativeBreakdown native_;
  std::vector<TaskAwait> tasks_;

  // Run-wide memory figures (when memory was profiled).
  void write_run_memory(JsonWriter& w, const RunInfo& run) const;
  void write_leaks(JsonWriter& w, const FileStats& file, double elapsed_s) const;
  bool memory_ = false;
  double max_footprint_bytes_ = 0;
  double final_footprint_bytes_ = 0;
  double native_thread_alloc_bytes_ = 0;
  double freed_bytes_ = 0;          // sampled blocks freed (estimated)
  std::string max_footprint_file_;  // empty when the peak had no profiled frame
  int max_footprint_line_ = 0;
  std::vector<TimePoint> footprint_timeline_;
  GpuModel gpu_;
};

double ns_to_s(uint64_t ns);

}  // namespace spyglass
