// Naming the native code a sample interrupted: which loaded object an instruction address
// is in, and the function symbol nearest below it. Never used by a signal handler: it
// reads ELF files and allocates, so it runs on the control thread, cached per address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace spyglass::platform {

// A function symbol of one ELF object: its address relative to the object's load base.
struct ElfSymbol {
  uint64_t value = 0;
  uint64_t size = 0;
  std::string name;  // as in the file: C++ names still mangled
};

// The function symbols of the ELF file at `path`, sorted by value: the full `.symtab`
// when the file has one, else the exported `.dynsym`. Empty when the file cannot be read
// or is not a 64-bit ELF object of this machine's byte order.
std::vector<ElfSymbol> read_elf_functions(const std::string& path, bool* from_symtab = nullptr);

// The function symbols of the kernel's vDSO (clock_gettime and friends), read from its
// image in this process's memory (it has no file), sorted by value; empty without one.
std::vector<ElfSymbol> read_vdso_functions();
// Whether the loaded object whose executable span is [begin, end) is the vDSO.
bool is_vdso(uintptr_t begin, uintptr_t end);

// Where the functions of the ELF file at `path` begin (relative to its load base, sorted),
// from its unwind table index (.eh_frame_hdr), which stripping leaves in place: a stripped
// object's unnamed code is then named by the start of its function, one name per function
// rather than one per address. Empty when the file has no such index.
std::vector<uint64_t> read_function_starts(const std::string& path);

// The symbol holding `relative` (an address minus the object's load base), or null.
const ElfSymbol* nearest_symbol(const std::vector<ElfSymbol>& symbols, uint64_t relative);

// A C++ symbol demangled ("ns::f(int)"), anything else returned unchanged.
std::string demangle(const std::string& symbol);

// A loaded object's executable span and file.
struct LoadedObject {
  uintptr_t base = 0;
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::string path;
};

// The objects the loader lists now (takes the loader's lock: never call it holding a lock a
// thread inside dlopen may wait for).
std::vector<LoadedObject> loaded_objects();
// Loads plus unloads so far: changes whenever the list does. Takes the loader's lock.
unsigned long long loader_generation();

struct NativeSymbol {
  // mangled symbol, "library+0xoffset", "[anonymous]" or kOwnHooks
  std::string name;
  std::string library;  // the object's file name without its directory, "" when none
};

class NativeSymbolizer {
 public:
  static constexpr const char* kAnonymous = "[anonymous]";
  // Every address in spyglass's own extension: on a program's thread, only its hooks run.
  static constexpr const char* kOwnHooks = "[spyglass hooks: profiler overhead]";

  NativeSymbolizer();
  ~NativeSymbolizer();
  NativeSymbolizer(const NativeSymbolizer&) = delete;
  NativeSymbolizer& operator=(const NativeSymbolizer&) = delete;

  // The id of the symbol holding `pc`, stable for the symbolizer's life. An address in no
  // known object re-reads the loader's list once (a library loaded since), then is named
  // "[anonymous]" (JIT code, anonymous mappings).
  uint32_t resolve(uintptr_t pc);
  const NativeSymbol& symbol(uint32_t id) const { return symbols_.at(id); }
  size_t size() const { return symbols_.size(); }
  // Forgets everything (a new run, or a forked child whose objects may change).
  void clear();
  // Names addresses of another process: from these objects only, never the loader's list.
  void use_objects(const std::vector<LoadedObject>& objects);

  struct Object;  // one loaded object (native_symbols.cpp)

 private:
  Object* find_object(uintptr_t pc);
  void reload_objects();
  uint32_t intern(const std::string& name, const std::string& library);

  std::vector<std::unique_ptr<Object>> objects_;  // sorted by their first code address
  std::unordered_map<uintptr_t, uint32_t> by_pc_;
  std::unordered_map<std::string, uint32_t> by_name_;  // name + '\0' + library
  std::vector<NativeSymbol> symbols_;
  unsigned long long loader_generation_ = ~0ULL;  // loads + unloads when last read
  bool fixed_objects_ = false;                    // use_objects() was called
};

}  // namespace spyglass::platform
