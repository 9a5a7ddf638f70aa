// Decides which code counts as the user's: the frames samples are attributed to.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spyglass {

struct FilterConfig {
  std::vector<std::string> program_paths;      // directories holding the user's code
  std::vector<std::string> library_prefixes;   // stdlib, site-packages: not the user's code
  std::vector<std::string> internal_prefixes;  // spyglass itself: never reported
  std::vector<std::string> only;               // --profile-only substrings
  std::vector<std::string> exclude;            // --profile-exclude substrings
  std::vector<std::string> pseudo_files;       // "<string>" for `run -c`; "<x*": a prefix
  bool profile_all = false;
  // @profile narrows the report to these functions: (file, first line).
  std::vector<std::pair<std::string, int>> functions;
};

class FileFilter {
 public:
  explicit FileFilter(FilterConfig config) : config_(std::move(config)) {}

  bool is_profiled(std::string_view file, int first_lineno) const;
  bool is_profiled_file(std::string_view file) const;
  // The profiler's own code (and the runpy frames it runs the program through).
  bool is_internal(std::string_view file) const;
  const FilterConfig& config() const { return config_; }

 private:
  FilterConfig config_;
};

}  // namespace spyglass
