#include "../got_patcher.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace spyglass::platform {

namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "GOT patching is implemented for x86-64 and AArch64"
#endif

// The loader and the vDSO must keep calling the real functions: the loader runs before
// and under everything. They are known by their load addresses, not by name.
bool is_loader_or_vdso(const dl_phdr_info* info) {
  const auto base = static_cast<uintptr_t>(getauxval(AT_BASE));
  const auto vdso = static_cast<uintptr_t>(getauxval(AT_SYSINFO_EHDR));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    const uintptr_t end = begin + info->dlpi_phdr[i].p_memsz;
    if ((base != 0 && base >= begin && base < end) || (vdso != 0 && vdso >= begin && vdso < end)) {
      return true;
    }
  }
  return false;
}

// Whether the object's loaded segments hold `address`.
bool contains(const dl_phdr_info* info, uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
    const uintptr_t begin = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    if (address >= begin && address < begin + info->dlpi_phdr[i].p_memsz) return true;
  }
  return false;
}

struct Tables {
  const ElfW(Sym) * symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela) * jmprel = nullptr;
  size_t jmprel_size = 0;
  const ElfW(Rela) * rela = nullptr;
  size_t rela_size = 0;
};

// The loader rewrites most dynamic-section pointers to absolute addresses; some objects
// (the vDSO, read-only dynamic sections) keep them relative to the load base.
uintptr_t absolute(uintptr_t base, ElfW(Addr) value) { return value < base ? base + value : value; }

bool read_tables(const dl_phdr_info* info, Tables* t) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  if (dyn == nullptr) return false;
  const uintptr_t base = info->dlpi_addr;
  bool rela_plt = true;
  for (; dyn->d_tag != DT_NULL; ++dyn) {
    switch (dyn->d_tag) {
      case DT_SYMTAB:
        t->symtab = reinterpret_cast<const ElfW(Sym)*>(absolute(base, dyn->d_un.d_ptr));
        break;
      case DT_STRTAB:
        t->strtab = reinterpret_cast<const char*>(absolute(base, dyn->d_un.d_ptr));
        break;
      case DT_JMPREL:
        t->jmprel = reinterpret_cast<const ElfW(Rela)*>(absolute(base, dyn->d_un.d_ptr));
        break;
      case DT_PLTRELSZ:
        t->jmprel_size = dyn->d_un.d_val;
        break;
      case DT_PLTREL:
        rela_plt = dyn->d_un.d_val == DT_RELA;
        break;
      case DT_RELA:
        t->rela = reinterpret_cast<const ElfW(Rela)*>(absolute(base, dyn->d_un.d_ptr));
        break;
      case DT_RELASZ:
        t->rela_size = dyn->d_un.d_val;
        break;
      default:
        break;
    }
  }
  if (!rela_plt) t->jmprel = nullptr;  // x86-64 and AArch64 use RELA only
  return t->symtab != nullptr && t->strtab != nullptr;
}

// Page range made read-only after relocation (RELRO); writes there need an mprotect.
struct Relro {
  uintptr_t begin = 0;
  uintptr_t end = 0;
};

// As the loader protects it: from the page holding its start to the last page it fills
// entirely (a partly filled last page stays writable, and may hold .data).
Relro relro_of(const dl_phdr_info* info) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_GNU_RELRO) {
      const uintptr_t begin = (info->dlpi_addr + ph.p_vaddr) & ~(page - 1);
      const uintptr_t end = (info->dlpi_addr + ph.p_vaddr + ph.p_memsz) & ~(page - 1);
      return {begin, end > begin ? end : begin};
    }
  }
  return {};
}

// Writes every (slot, value) of one object, opening its RELRO pages for writing once
// rather than once a slot. Returns false, writing nothing, when they cannot be opened.
bool write_slots(const std::vector<std::pair<void**, void*>>& writes, const Relro& relro) {
  bool in_relro = false;
  for (const auto& [slot, value] : writes) {
    const auto address = reinterpret_cast<uintptr_t>(slot);
    in_relro = in_relro || (address >= relro.begin && address < relro.end);
  }
  void* start = reinterpret_cast<void*>(relro.begin);
  const size_t length = relro.end - relro.begin;
  if (in_relro && mprotect(start, length, PROT_READ | PROT_WRITE) != 0) return false;
  for (const auto& [slot, value] : writes) __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  if (in_relro) mprotect(start, length, PROT_READ);
  return true;
}

}  // namespace

void* dlopen_for(uintptr_t caller, const char* file, int mode) {
  void* handle = dlopen(file, mode);
  if (handle != nullptr || file == nullptr || std::strchr(file, '/') != nullptr) return handle;
  Dl_info info;
  link_map* caller_map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(caller), &info, reinterpret_cast<void**>(&caller_map),
              RTLD_DL_LINKMAP) == 0 ||
      caller_map == nullptr) {
    return nullptr;
  }
  // glibc's handles are link maps: the loader's own list of the caller's search path, with
  // $ORIGIN expanded.
  Dl_serinfo size{};
  if (dlinfo(caller_map, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof(Dl_serinfo)) {
    return nullptr;
  }
  std::vector<uint64_t> storage((size.dls_size + sizeof(uint64_t) - 1) / sizeof(uint64_t));
  auto* paths = reinterpret_cast<Dl_serinfo*>(storage.data());
  paths->dls_size = size.dls_size;
  paths->dls_cnt = size.dls_cnt;
  if (dlinfo(caller_map, RTLD_DI_SERINFO, paths) != 0) return nullptr;
  for (unsigned i = 0; i < paths->dls_cnt; ++i) {
    const std::string path = std::string(paths->dls_serpath[i].dls_name) + "/" + file;
    handle = dlopen(path.c_str(), mode);
    if (handle != nullptr) return handle;
  }
  dlopen(file, mode);  // leaves the loader's own message for dlerror()
  return nullptr;
}

GotPatcher::GotPatcher(std::vector<Redirect> redirects, const void* self, const void* target)
    : redirects_(std::move(redirects)), self_(self), target_(target) {}

bool GotPatcher::left_alone(const dl_phdr_info* info) const {
  return contains(info, reinterpret_cast<uintptr_t>(self_)) ||
         (target_ != nullptr && contains(info, reinterpret_cast<uintptr_t>(target_))) ||
         is_loader_or_vdso(info);
}

void GotPatcher::set_active(bool active) {
  std::lock_guard<std::mutex> lock(mutex_);
  active_ = active;
}

void GotPatcher::lock_for_fork() { mutex_.lock(); }
void GotPatcher::unlock_after_fork() { mutex_.unlock(); }
void GotPatcher::unlock_after_fork_child() {
  // Held by this thread since before the fork, so the child's copy is whole; a fresh
  // mutex rather than an unlock, in case the implementation recorded the owner.
  new (&mutex_) std::mutex();
}

bool GotPatcher::objects_changed() const {
  struct Counts {
    unsigned long long adds = 0;
    unsigned long long subs = 0;
  } counts;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) {
        auto* c = static_cast<Counts*>(data);
        if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
          c->adds = info->dlpi_adds;
          c->subs = info->dlpi_subs;
        }
        return 1;  // the counters are the same in every entry: the first is enough
      },
      &counts);
  return counts.adds != adds_seen_ || counts.subs != subs_seen_;
}

bool GotPatcher::is_patched(uintptr_t base, const char* name) const {
  for (const Object& o : patched_) {
    if (o.base == base && o.name == name) return true;
  }
  return false;
}

size_t GotPatcher::patch_new_objects() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active_) return 0;  // stopped: a late call from the sampler must not patch again
  // The loader lists an object before it has finished relocating it (dl_iterate_phdr and
  // dlopen take different locks); writing to it then, or write-protecting its RELRO pages
  // under the loader's feet, crashes the process. dlopen(RTLD_NOLOAD) waits for any load in
  // progress and succeeds only for objects fully loaded: only those are patched.
  struct Candidates {
    GotPatcher* self;
    std::vector<std::string> names;
    std::vector<std::pair<uintptr_t, std::string>> present;
    unsigned long long adds = 0;
    unsigned long long subs = 0;
  } found{this, {}, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Candidates*>(data);
        f->adds = info->dlpi_adds;
        f->subs = info->dlpi_subs;
        const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (f->self->left_alone(info)) return 0;
        f->present.emplace_back(info->dlpi_addr, name);
        if (!f->self->is_patched(info->dlpi_addr, name)) f->names.emplace_back(name);
        return 0;
      },
      &found);
  // Objects unloaded since: a library loaded again later, perhaps at the same address,
  // must be patched anew.
  std::erase_if(patched_, [&](const Object& o) {
    for (const auto& [base, name] : found.present) {
      if (base == o.base && name == o.name) return false;
    }
    return true;
  });
  struct Ctx {
    GotPatcher* self;
    std::vector<std::string> ready;
    size_t rewritten = 0;
  } ctx{this, {}};
  std::vector<void*> handles;
  bool all_ready = true;
  for (const std::string& name : found.names) {
    if (name.empty()) {  // the program itself: loaded before anything ran
      ctx.ready.push_back(name);
      continue;
    }
    void* handle = dlopen(name.c_str(), RTLD_NOLOAD | RTLD_LAZY);
    if (handle == nullptr) {
      all_ready = false;  // being loaded or unloaded: next time
      continue;
    }
    handles.push_back(handle);
    ctx.ready.push_back(name);
  }
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* c = static_cast<Ctx*>(data);
        GotPatcher& p = *c->self;
        const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (p.left_alone(info)) return 0;
        if (p.is_patched(info->dlpi_addr, name)) return 0;
        bool ready = false;
        for (const std::string& r : c->ready) ready = ready || r == name;
        if (!ready) return 0;
        Tables t;
        if (!read_tables(info, &t)) return 0;
        const Relro relro = relro_of(info);
        Object object{info->dlpi_addr, name, {}};
        auto scan = [&](const ElfW(Rela) * rel, size_t bytes) {
          if (rel == nullptr) return;
          for (size_t i = 0; i < bytes / sizeof(ElfW(Rela)); ++i) {
            const auto type = static_cast<uint32_t>(ELF64_R_TYPE(rel[i].r_info));
            if (type != kJumpSlot && type != kGlobDat) continue;
            const ElfW(Sym)& sym = t.symtab[ELF64_R_SYM(rel[i].r_info)];
            if (sym.st_name == 0) continue;
            const char* symbol = t.strtab + sym.st_name;
            for (const Redirect& r : p.redirects_) {
              // The first byte turns away nearly every pair (libpython alone has some 1,500
              // relocations, and there are twenty redirects) before strcmp is asked.
              if (symbol[0] != r.symbol[0] || std::strcmp(symbol, r.symbol) != 0) continue;
              auto** slot = reinterpret_cast<void**>(info->dlpi_addr + rel[i].r_offset);
              void* original = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
              if (original == r.replacement) break;
              // Bound elsewhere than the replacement's own target, and not a lazy entry
              // still pointing into this object's PLT: another definition; leave it.
              if (r.expected != nullptr && original != r.expected &&
                  !contains(info, reinterpret_cast<uintptr_t>(original))) {
                break;
              }
              object.slots.push_back({slot, original, r.replacement});
              break;
            }
          }
        };
        scan(t.jmprel, t.jmprel_size);
        scan(t.rela, t.rela_size);
        std::vector<std::pair<void**, void*>> writes;
        for (const Slot& s : object.slots) writes.emplace_back(s.address, s.replacement);
        if (!write_slots(writes, relro)) object.slots.clear();
        c->rewritten += object.slots.size();
        p.patched_.push_back(std::move(object));
        return 0;
      },
      &ctx);
  for (void* handle : handles) dlclose(handle);
  if (all_ready) {  // otherwise objects_changed() stays true, and we come back
    adds_seen_ = found.adds;
    subs_seen_ = found.subs;
  }
  return ctx.rewritten;
}

void GotPatcher::restore() {
  std::lock_guard<std::mutex> lock(mutex_);
  // Only objects still mapped: one unloaded since would fault on the write.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* p = static_cast<GotPatcher*>(data);
        const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        for (Object& o : p->patched_) {
          if (o.base != info->dlpi_addr || o.name != name) continue;
          const Relro relro = relro_of(info);
          std::vector<std::pair<void**, void*>> writes;
          for (const Slot& s : o.slots) {
            // A slot someone else rewrote since is theirs now.
            if (__atomic_load_n(s.address, __ATOMIC_ACQUIRE) == s.replacement) {
              writes.emplace_back(s.address, s.original);
            }
          }
          write_slots(writes, relro);
          o.slots.clear();
        }
        return 0;
      },
      this);
  patched_.clear();
  adds_seen_ = subs_seen_ = 0;
  active_ = false;
}

}  // namespace spyglass::platform
