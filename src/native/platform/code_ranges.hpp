// Which loaded object an instruction address belongs to, classified for the Python/native
// split. Built outside the signal handler (it walks the loader's list); lookups are
// lock-free reads of an immutable sorted table.
#pragma once

#include <cstddef>
#include <cstdint>
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
};

class CodeRanges {
 public:
  // `interpreter_anchor` is the address of a function inside the interpreter, which
  // identifies the object holding it (libpython when shared, else the executable).
  void rebuild(const void* interpreter_anchor);
  CodeRegion classify(uintptr_t pc) const;
  size_t size() const { return ranges_.size(); }

 private:
  std::vector<CodeRange> ranges_;
};

}  // namespace spyglass::platform
