// The native breakdowns a profile carries: for every line, its native time by native
// function (self time: the function samples stopped in); for the whole run, each native
// function's self time and the lines that led there; for every stack, the chains of native
// functions below its innermost frame (mixed stacks), each with its native callers.
// Only functions that samples hit are named, so the profile never holds a symbol table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "json_writer.hpp"
#include "native_costs.hpp"

namespace spyglass {

class NativeBreakdown {
 public:
  // Where a stack's time went: the profiled line it was attributed to, if any.
  struct StackLine {
    bool attributed = false;
    std::string file;
    int line = 0;
  };

  // `line_of` gives the line of a stack index (called only for stacks with native costs).
  template <typename LineOf>
  static NativeBreakdown build(const NativeCosts& costs, std::vector<NativeFunction> functions,
                               LineOf line_of) {
    NativeBreakdown out;
    out.functions_ = std::move(functions);
    for (const auto& [stack, by_chain] : costs.by_stack()) {
      out.add_stack(stack, by_chain, line_of(stack));
    }
    return out;
  }

  bool empty() const { return run_.empty(); }
  // The members a line's object gets ("native_functions"), if it had native samples.
  void write_line(JsonWriter& w, const std::string& file, int line) const;
  // The run's "native_functions" table.
  void write_run(JsonWriter& w) const;
  // A stack's "native" member, if it had native samples.
  void write_stack(JsonWriter& w, size_t stack) const;

 private:
  using BySymbol = std::map<uint32_t, NativeCost>;
  using ByChain = std::map<NativeChain, NativeCost>;
  static constexpr uint32_t kOtherSymbol = UINT32_MAX;  // the tail of a long list
  struct RunEntry {
    NativeCost cost;
    std::map<std::pair<std::string, int>, NativeCost> lines;
  };
  void add_stack(size_t stack, const ByChain& by_chain, const StackLine& where);
  void write_list(JsonWriter& w, const BySymbol& by_symbol) const;
  void write_chains(JsonWriter& w, const ByChain& by_chain) const;
  void write_function(JsonWriter& w, uint32_t symbol, const NativeCost& cost) const;

  std::vector<NativeFunction> functions_;
  std::map<std::pair<std::string, int>, BySymbol> lines_;
  std::unordered_map<size_t, ByChain> stacks_;
  std::map<uint32_t, RunEntry> run_;
};

}  // namespace spyglass
