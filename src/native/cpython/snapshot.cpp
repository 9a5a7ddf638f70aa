// A child process's profile written while it runs. A child can be killed with no chance
// to write anything (SIGKILL, a crash, a pool terminating its workers); the root then
// merges the last snapshot instead of losing the child. Runs on the control thread with
// the sampler's lock held, without the GIL: code objects in the registry are alive (their
// deaths wait for the same lock), and only their immutable fields are read.
#define Py_BUILD_CORE 1
#include <unistd.h>
#include <cstdio>
#include <string>

#include "../core/profile_model.hpp"
#include "../platform/clock.hpp"
#include "cpu_sampler.hpp"

namespace spyglass::cpython {

namespace {

bool write_file_atomically(const std::string& path, const std::string& text) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp = dir + "/." + base + ".snapshot.tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !written || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

void CpuSampler::write_snapshot_locked() {
  const shim::PauseThisThread paused;
  codes_.resolve_all();
  MemoryStats memory;
  if (options_.memory) {
    memory = memory_;
    memory.finish();  // executions still open count, as they will at stop
  }
  const ProfileModel model =
      ProfileModel::build(stacks_, codes_.infos(), FileFilter(options_.scope), threads({}),
                          options_.memory ? &memory : nullptr);
  RunInfo run;
  run.elapsed_s = static_cast<double>(platform::monotonic_ns() - start_ns_) / 1e9;
  run.interval_s = static_cast<double>(options_.interval_ns) / 1e9;
  run.dropped_samples = dropped_;
  run.memory.profiled = options_.memory;
  run.memory.window_mb = bytes_to_mb(static_cast<double>(options_.memory_options.window_bytes));
  run.memory.copy_window_mb =
      bytes_to_mb(static_cast<double>(options_.memory_options.copy_window_bytes));
  run.memory.dropped_samples = shim::records().dropped() - memory_dropped_base_;
  // The launcher knew everything about the run but when it started.
  std::string meta = options_.snapshot_meta;
  const size_t open = meta.find('{');
  if (open == std::string::npos) return;
  char started[64];
  std::snprintf(started, sizeof started, "\"started_at\": %.6f", started_at_);
  const bool empty = meta.find_first_not_of(" \t\r\n", open + 1) == meta.find('}', open);
  meta.insert(open + 1, std::string(started) + (empty ? "" : ", "));
  write_file_atomically(options_.snapshot_path,
                        model.to_json(meta, run, {}, stacks_, codes_.infos()));
}

}  // namespace spyglass::cpython
