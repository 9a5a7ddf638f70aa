// Native time by the chain of native functions a sample interrupted (the function the
// program counter was in, then its native callers up to the interpreter), per stack: the
// raw material of the per-line and whole-run native breakdowns and of mixed stacks
// (native_model.hpp). Only native samples go in (time the interpreter spent executing
// bytecode is never broken down this way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace spyglass {

struct NativeCost {
  uint64_t ns = 0;
  uint64_t samples = 0;
  NativeCost& operator+=(const NativeCost& o) {
    ns += o.ns;
    samples += o.samples;
    return *this;
  }
};

// A native function as reports name it: demangled, with the object that holds it.
struct NativeFunction {
  std::string name;
  std::string library;  // file name of the shared object or executable; "" when none
};

// Per stack, native time by raw chain: the interrupted address, then the return addresses
// of its native callers. Named only when a profile is built (see cpython/collection.hpp).
using RawNativeChains = std::unordered_map<size_t, std::map<std::vector<uintptr_t>, NativeCost>>;

// A loaded object's executable span, as a journal keeps it to name raw chains in another
// process (the supervisor reading a killed child's journal).
struct NativeObject {
  uintptr_t base = 0;  // what its ELF addresses are relative to
  uintptr_t begin = 0;
  uintptr_t end = 0;
  std::string path;
};

// Symbol ids, the function a sample stopped in first, then its callers outwards.
using NativeChain = std::vector<uint32_t>;

class NativeCosts {
 public:
  // `symbol` is an id into the run's symbol list, given out by whoever names them.
  void add(size_t stack, uint32_t symbol, uint64_t ns) {
    by_stack_[stack][NativeChain{symbol}] += NativeCost{ns, 1};
  }
  void add(size_t stack, const NativeChain& chain, const NativeCost& cost) {
    if (!chain.empty()) by_stack_[stack][chain] += cost;
  }
  const std::unordered_map<size_t, std::map<NativeChain, NativeCost>>& by_stack() const {
    return by_stack_;
  }
  bool empty() const { return by_stack_.empty(); }
  void clear() { by_stack_.clear(); }

 private:
  std::unordered_map<size_t, std::map<NativeChain, NativeCost>> by_stack_;
};

}  // namespace spyglass
