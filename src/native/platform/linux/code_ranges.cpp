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

// CPython installs the extension modules of its standard library in one directory of their
// own (sysconfig's DESTSHARED), named so by every build and distribution.
bool is_stdlib_extension(std::string_view path) {
  return path.find("/lib-dynload/") != std::string_view::npos;
}

uint64_t hash_of(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (const char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h != 0 ? h : 1;
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
  const bool stdlib = region == CodeRegion::kNative && is_stdlib_extension(name);
  const uint64_t package = hash_of(package_key(name));
  for (CodeRange& r : segments) {
    r.region = region;
    r.stdlib = stdlib;
    r.package = package;
    scan->ranges->push_back(r);
  }
  return 0;
}

}  // namespace

std::string_view package_key(std::string_view path) {
  for (std::string_view dir : {"/site-packages/", "/dist-packages/"}) {
    const size_t at = path.rfind(dir);
    if (at == std::string_view::npos) continue;
    std::string_view rest = path.substr(at + dir.size());
    rest = rest.substr(0, rest.find('/'));
    constexpr std::string_view kVendored = ".libs";
    if (rest.size() > kVendored.size() &&
        rest.substr(rest.size() - kVendored.size()) == kVendored) {
      rest.remove_suffix(kVendored.size());
    }
    return rest;
  }
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(0, slash);
}

uint64_t installed_package(std::string_view path) {
  const bool installed = path.find("/site-packages/") != std::string_view::npos ||
                         path.find("/dist-packages/") != std::string_view::npos;
  return installed ? hash_of(package_key(path)) : 0;
}

void CodeRanges::rebuild(const void* interpreter_anchor) {
  std::vector<CodeRange> ranges;
  Scan scan{interpreter_anchor, &ranges};
  dl_iterate_phdr(on_object, &scan);
  std::sort(ranges.begin(), ranges.end(),
            [](const CodeRange& a, const CodeRange& b) { return a.begin < b.begin; });
  ranges_ = std::move(ranges);
}

const CodeRange* CodeRanges::find(uintptr_t pc) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), pc,
                             [](uintptr_t v, const CodeRange& r) { return v < r.begin; });
  if (it == ranges_.begin()) return nullptr;
  --it;
  return pc < it->end ? &*it : nullptr;
}

CodeRegion CodeRanges::classify(uintptr_t pc) const {
  const CodeRange* r = find(pc);
  return r != nullptr ? r->region : CodeRegion::kUnknown;
}

uint64_t CodeRanges::package_of(uintptr_t pc) const {
  const CodeRange* r = find(pc);
  return r != nullptr ? r->package : 0;
}

uint64_t CodeRanges::library_package(uintptr_t pc) const {
  const CodeRange* r = find(pc);
  return r != nullptr && r->region == CodeRegion::kNative && !r->stdlib ? r->package : 0;
}

}  // namespace spyglass::platform
