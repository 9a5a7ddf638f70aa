#include "file_filter.hpp"

namespace spyglass {

namespace {

bool contains_any(std::string_view s, const std::vector<std::string>& needles) {
  for (const auto& n : needles) {
    if (!n.empty() && s.find(n) != std::string_view::npos) return true;
  }
  return false;
}

// Length of the longest directory prefix of `file` in `dirs`, 0 when none matches.
size_t longest_dir_prefix(std::string_view file, const std::vector<std::string>& dirs) {
  size_t best = 0;
  for (const auto& d : dirs) {
    if (d.empty() || file.size() < d.size() || file.compare(0, d.size(), d) != 0) continue;
    const bool at_boundary = file.size() == d.size() || d.back() == '/' || file[d.size()] == '/';
    if (at_boundary && d.size() > best) best = d.size();
  }
  return best;
}

}  // namespace

bool FileFilter::is_internal(std::string_view file) const {
  return longest_dir_prefix(file, config_.internal_prefixes) > 0;
}

bool FileFilter::is_profiled(std::string_view file, int first_lineno) const {
  if (is_internal(file)) return false;
  if (contains_any(file, config_.exclude)) return false;  // "never report" means never
  if (!config_.functions.empty()) {
    for (const auto& [f, line] : config_.functions) {
      if (line == first_lineno && f == file) return true;
    }
    return false;
  }
  return is_profiled_file(file);
}

bool FileFilter::is_profiled_file(std::string_view file) const {
  if (file.empty() || longest_dir_prefix(file, config_.internal_prefixes) > 0) return false;
  if (contains_any(file, config_.exclude)) return false;
  if (!config_.only.empty()) return contains_any(file, config_.only);
  for (const auto& p : config_.pseudo_files) {
    // "<ipython-input-*": every cell has a name of its own, made as it runs.
    const bool prefix = !p.empty() && p.back() == '*';
    if (prefix ? file.substr(0, p.size() - 1) == std::string_view(p).substr(0, p.size() - 1)
               : file == p)
      return true;
  }
  if (config_.profile_all) return true;
  if (file.front() == '<') return false;  // frozen modules and generated code
  // A program directory inside site-packages (say) still counts: the more specific wins.
  return longest_dir_prefix(file, config_.program_paths) >
         longest_dir_prefix(file, config_.library_prefixes);
}

}  // namespace spyglass
