#include "../code_ranges.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace spyglass::platform {

namespace {

struct Scan {
  const void* anchor;
  std::vector<CodeRange>* ranges;
};

bool is_system_object(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (std::string_view lib : {"libc.so", "libc-", "libm.so", "libpthread", "ld-linux", "ld-",
                               "linux-vdso", "libdl", "librt", "libgcc_s", "libstdc++"}) {
    if (base.substr(0, lib.size()) == lib) return true;
  }
  return false;
}

int on_object(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<Scan*>(data);
  const std::string_view name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  std::vector<CodeRange> segments;
  bool holds_anchor = false;
  const auto anchor = reinterpret_cast<uintptr_t>(scan->anchor);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    const uintptr_t end = begin + ph.p_memsz;
    if (anchor >= begin && anchor < end) holds_anchor = true;
    segments.push_back({begin, end, CodeRegion::kNative});
  }
  // spyglass's own object serves both sides like libc: its allocator hooks run inside every
  // Python object allocation (the PyMem wrappers) as well as inside extensions' mallocs.
  const auto self = reinterpret_cast<uintptr_t>(&on_object);
  bool holds_self = false;
  for (const CodeRange& r : segments) holds_self = holds_self || (self >= r.begin && self < r.end);
  CodeRegion region = CodeRegion::kNative;
  if (holds_anchor || name.empty()) {  // libpython, or the executable (static builds)
    region = CodeRegion::kInterpreter;
  } else if (holds_self || is_system_object(name)) {
    region = CodeRegion::kSystem;
  }
  for (CodeRange& r : segments) {
    r.region = region;
    scan->ranges->push_back(r);
  }
  return 0;
}

}  // namespace

void CodeRanges::rebuild(const void* interpreter_anchor) {
  std::vector<CodeRange> ranges;
  Scan scan{interpreter_anchor, &ranges};
  dl_iterate_phdr(on_object, &scan);
  std::sort(ranges.begin(), ranges.end(),
            [](const CodeRange& a, const CodeRange& b) { return a.begin < b.begin; });
  ranges_ = std::move(ranges);
}

CodeRegion CodeRanges::classify(uintptr_t pc) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), pc,
                             [](uintptr_t v, const CodeRange& r) { return v < r.begin; });
  if (it == ranges_.begin()) return CodeRegion::kUnknown;
  --it;
  return pc < it->end ? it->region : CodeRegion::kUnknown;
}

}  // namespace spyglass::platform
