// The process's loaded objects as the loader lists them, and the cache from instruction
// addresses to named symbols (native_symbols.hpp).
#include <link.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdio>
#include <limits>

#include "../native_symbols.hpp"

namespace spyglass::platform {

struct NativeSymbolizer::Object {
  uintptr_t base = 0;   // what the object's addresses are relative to
  uintptr_t begin = 0;  // its executable segments span [begin, end)
  uintptr_t end = 0;
  std::string path;
  std::string library;
  bool loaded = false;  // symbols read (or found unreadable)
  std::vector<ElfSymbol> symbols;
  std::vector<uint64_t> function_starts;  // read when a symbol is missing
  bool starts_loaded = false;
};

namespace {

// Past this many cached addresses the cache starts over: a program with endless generated
// code must not grow it without end.
constexpr size_t kMaxCachedAddresses = 1 << 20;

std::string executable_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// spyglass's own extension (spyglass/_native.<tag>.so, of any interpreter's build): the
// only code of ours a program's thread runs is its hooks (allocator, copy, CUDA copies, the
// memory sample's stack walk), so time found there is the profiler's cost, named as such
// rather than as an offset in a library the user never heard of.
bool is_own_extension(const std::string& path) {
  const std::string name = base_name(path);
  const std::string dir =
      path.size() > name.size() ? path.substr(0, path.size() - name.size()) : "";
  return name.rfind("_native.", 0) == 0 && dir.size() >= 10 &&
         dir.compare(dir.size() - 10, 10, "/spyglass/") == 0;
}

int on_object(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::vector<NativeSymbolizer::Object*>*>(data);
  uintptr_t begin = std::numeric_limits<uintptr_t>::max();
  uintptr_t end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    begin = std::min<uintptr_t>(begin, info->dlpi_addr + ph.p_vaddr);
    end = std::max<uintptr_t>(end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (begin >= end) return 0;
  auto* object = new NativeSymbolizer::Object();
  object->base = info->dlpi_addr;
  object->begin = begin;
  object->end = end;
  const char* name = info->dlpi_name;
  // The loader names the executable "" (it was not loaded by name).
  object->path = name != nullptr && name[0] != '\0' ? name : executable_path();
  object->library = base_name(object->path);
  out->push_back(object);
  return 0;
}

// How many objects the loader has loaded and unloaded so far: a cheap look at whether the
// list changed.
int on_first_object(dl_phdr_info* info, size_t size, void* data) {
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    *static_cast<unsigned long long*>(data) = info->dlpi_adds + info->dlpi_subs;
  }
  return 1;
}

}  // namespace

std::vector<LoadedObject> loaded_objects() {
  std::vector<NativeSymbolizer::Object*> raw;
  dl_iterate_phdr(on_object, &raw);
  std::vector<LoadedObject> out;
  for (NativeSymbolizer::Object* o : raw) {
    out.push_back(LoadedObject{o->base, o->begin, o->end, o->path});
    delete o;
  }
  return out;
}

bool is_vdso(uintptr_t begin, uintptr_t end) {
  const auto vdso = static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR));
  return vdso != 0 && vdso >= begin && vdso < end;
}

unsigned long long loader_generation() {
  unsigned long long generation = 0;
  dl_iterate_phdr(on_first_object, &generation);
  return generation;
}

void NativeSymbolizer::use_objects(const std::vector<LoadedObject>& objects) {
  clear();
  fixed_objects_ = true;
  for (const LoadedObject& o : objects) {
    auto object = std::make_unique<Object>();
    object->base = o.base;
    object->begin = o.begin;
    object->end = o.end;
    object->path = o.path;
    object->library = base_name(o.path);
    objects_.push_back(std::move(object));
  }
  std::sort(objects_.begin(), objects_.end(),
            [](const auto& a, const auto& b) { return a->begin < b->begin; });
}

NativeSymbolizer::NativeSymbolizer() = default;
NativeSymbolizer::~NativeSymbolizer() = default;

void NativeSymbolizer::clear() {
  objects_.clear();
  by_pc_.clear();
  by_name_.clear();
  symbols_.clear();
  loader_generation_ = ~0ULL;
  fixed_objects_ = false;
}

void NativeSymbolizer::reload_objects() {
  unsigned long long generation = 0;
  dl_iterate_phdr(on_first_object, &generation);
  if (generation == loader_generation_ && generation != 0) return;  // nothing new to find
  loader_generation_ = generation;
  std::vector<Object*> raw;
  dl_iterate_phdr(on_object, &raw);
  std::vector<std::unique_ptr<Object>> fresh;
  for (Object* o : raw) fresh.emplace_back(o);
  // Symbols already read stay: an object still loaded at the same place has not changed.
  for (auto& o : fresh) {
    for (auto& old : objects_) {
      if (old && old->loaded && old->base == o->base && old->path == o->path) {
        o->loaded = true;
        o->symbols = std::move(old->symbols);
        o->starts_loaded = old->starts_loaded;
        o->function_starts = std::move(old->function_starts);
        break;
      }
    }
  }
  std::sort(fresh.begin(), fresh.end(),
            [](const auto& a, const auto& b) { return a->begin < b->begin; });
  objects_ = std::move(fresh);
}

NativeSymbolizer::Object* NativeSymbolizer::find_object(uintptr_t pc) {
  auto it = std::upper_bound(objects_.begin(), objects_.end(), pc,
                             [](uintptr_t v, const auto& o) { return v < o->begin; });
  if (it == objects_.begin()) return nullptr;
  --it;
  return pc < (*it)->end ? it->get() : nullptr;
}

uint32_t NativeSymbolizer::intern(const std::string& name, const std::string& library) {
  std::string key = name;
  key.push_back('\0');
  key += library;
  auto [it, inserted] = by_name_.emplace(std::move(key), static_cast<uint32_t>(symbols_.size()));
  if (inserted) symbols_.push_back(NativeSymbol{name, library});
  return it->second;
}

uint32_t NativeSymbolizer::resolve(uintptr_t pc) {
  if (auto hit = by_pc_.find(pc); hit != by_pc_.end()) return hit->second;
  Object* object = find_object(pc);
  if (object == nullptr && !fixed_objects_) {
    reload_objects();  // loaded since we last looked (dlopen, ctypes.CDLL)
    object = find_object(pc);
  }
  uint32_t id = 0;
  if (object == nullptr) {
    id = intern(kAnonymous, "");
  } else if (is_own_extension(object->path)) {
    id = intern(kOwnHooks, "spyglass");
  } else {
    if (!object->loaded) {
      // Another process's vDSO is not ours to read; ours is the same code, but need not
      // be mapped at the same place.
      const bool vdso = !fixed_objects_ && is_vdso(object->begin, object->end);
      object->symbols = vdso ? read_vdso_functions() : read_elf_functions(object->path);
      object->loaded = true;
    }
    const uint64_t relative = pc - object->base;
    if (const ElfSymbol* s = nearest_symbol(object->symbols, relative)) {
      id = intern(s->name, object->library);
    } else {
      // Nothing names it (stripped, or between symbols): where its function starts if the
      // unwind index says, else the address itself; either is what addr2line takes.
      if (!object->starts_loaded) {
        object->function_starts = read_function_starts(object->path);
        object->starts_loaded = true;
      }
      const auto& starts = object->function_starts;
      auto it = std::upper_bound(starts.begin(), starts.end(), relative);
      const uint64_t where_at = it != starts.begin() ? *(it - 1) : relative;
      char where[64];
      std::snprintf(where, sizeof(where), "+0x%" PRIx64, where_at);
      id = intern(object->library + where, object->library);
    }
  }
  if (by_pc_.size() >= kMaxCachedAddresses) by_pc_.clear();
  by_pc_.emplace(pc, id);
  return id;
}

}  // namespace spyglass::platform
