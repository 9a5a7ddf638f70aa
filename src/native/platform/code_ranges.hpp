// Which loaded object an instruction address belongs to, classified for the Python/native
// split. Built outside the signal handler (it walks the loader's list); lookups are
// lock-free reads of an immutable sorted table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace spyglass::platform {

enum class CodeRegion : uint8_t {
  kUnknown = 0,
  kInterpreter,  // libpython or the python executable itself
  kSystem,       // libc, libm, the loader, the vDSO: called by interpreter and extensions alike
  kNative,       // any other object: extension modules, their libraries
};

struct CodeRange {
  uintptr_t begin;
  uintptr_t end;
  CodeRegion region;
  bool stdlib = false;   // kNative: an extension module of Python's own standard library
  uint64_t package = 0;  // which installed package the object belongs to (package_key)
};

// What an object shares with the other objects of the same installed package, to tell
// whether two pieces of native code are one library's: under site-packages (or
// dist-packages) the first directory, auditwheel's "<name>.libs" counting as its package's;
// elsewhere the object's own directory.
std::string_view package_key(std::string_view path);
// The package hash (as CodeRanges::package_of gives it) of a Python source file of an
// installed package, under site-packages or dist-packages; 0 for any other file (the
// program's own, the standard library's).
uint64_t installed_package(std::string_view path);

class CodeRanges {
 public:
  // `interpreter_anchor` is the address of a function inside the interpreter, which
  // identifies the object holding it (libpython when shared, else the executable).
  void rebuild(const void* interpreter_anchor);
  CodeRegion classify(uintptr_t pc) const;
  // Whether `pc` is in a library's code: kNative, but not the standard library's own
  // extension modules (its lib-dynload directory), whose calls that block are the program's
  // waits (select, sockets, locks) rather than calls a library's own threads work for.
  bool is_library(uintptr_t pc) const { return library_package(pc) != 0; }
  // The package_of `pc` when it is a library's code (is_library), else 0.
  uint64_t library_package(uintptr_t pc) const;
  // A hash of the package_key of the object holding `pc` (0: in no object): the same
  // from one rebuild to the next.
  uint64_t package_of(uintptr_t pc) const;
  size_t size() const { return ranges_.size(); }

 private:
  const CodeRange* find(uintptr_t pc) const;
  std::vector<CodeRange> ranges_;
};

}  // namespace spyglass::platform
