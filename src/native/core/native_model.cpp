#include "native_model.hpp"

#include <algorithm>

namespace spyglass {

namespace {

// The lines listed under one native function in the run's table: the heaviest ones.
constexpr size_t kMaxLinesPerFunction = 20;
// Functions listed per line or stack, and in the run's table; the rest are added up as one
// "[other]" entry, so the lists keep their sums and a long tail of functions hit once or
// twice does not grow the profile.
constexpr size_t kMaxPerList = 30;
constexpr size_t kMaxInRun = 100;
constexpr const char* kOther = "[other]";

double seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

template <typename Map>
std::vector<typename Map::const_iterator> heaviest_first(const Map& m) {
  std::vector<typename Map::const_iterator> order;
  for (auto it = m.begin(); it != m.end(); ++it) order.push_back(it);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a->second.ns > b->second.ns; });
  return order;
}

}  // namespace

void NativeBreakdown::add_stack(size_t stack, const ByChain& by_chain, const StackLine& where) {
  ByChain& mine = stacks_[stack];
  for (const auto& [chain, cost] : by_chain) {
    mine[chain] += cost;
    const uint32_t symbol = chain.front();  // lines and the run count self time
    RunEntry& entry = run_[symbol];
    entry.cost += cost;
    if (where.attributed) {
      lines_[{where.file, where.line}][symbol] += cost;
      entry.lines[{where.file, where.line}] += cost;
    }
  }
}

void NativeBreakdown::write_function(JsonWriter& w, uint32_t symbol, const NativeCost& cost) const {
  const bool known = symbol < functions_.size();
  w.key("name");
  w.value(known ? functions_[symbol].name : std::string(kOther));
  w.key("library");
  w.value(known ? functions_[symbol].library : std::string());
  w.key("cpu_s");
  w.value(seconds(cost.ns));
  w.key("samples");
  w.value(cost.samples);
}

void NativeBreakdown::write_list(JsonWriter& w, const BySymbol& by_symbol) const {
  w.begin_array();
  NativeCost rest;
  size_t written = 0;
  for (const auto& it : heaviest_first(by_symbol)) {
    if (written++ >= kMaxPerList) {
      rest += it->second;
      continue;
    }
    w.begin_object();
    write_function(w, it->first, it->second);
    w.end_object();
  }
  if (rest.samples > 0) {
    w.begin_object();
    write_function(w, kOtherSymbol, rest);
    w.end_object();
  }
  w.end_array();
}

void NativeBreakdown::write_chains(JsonWriter& w, const ByChain& by_chain) const {
  w.begin_array();
  NativeCost rest;
  size_t written = 0;
  for (const auto& it : heaviest_first(by_chain)) {
    if (written++ >= kMaxPerList) {
      rest += it->second;
      continue;
    }
    const NativeChain& chain = it->first;
    w.begin_object();
    write_function(w, chain.front(), it->second);
    if (chain.size() > 1) {
      w.key("callers");  // outermost first, as a stack reads from its root
      w.begin_array();
      for (size_t i = chain.size() - 1; i > 0; --i) {
        const bool known = chain[i] < functions_.size();
        w.begin_object();
        w.key("name");
        w.value(known ? functions_[chain[i]].name : std::string(kOther));
        w.key("library");
        w.value(known ? functions_[chain[i]].library : std::string());
        w.end_object();
      }
      w.end_array();
    }
    w.end_object();
  }
  if (rest.samples > 0) {
    w.begin_object();
    write_function(w, kOtherSymbol, rest);
    w.end_object();
  }
  w.end_array();
}

void NativeBreakdown::write_line(JsonWriter& w, const std::string& file, int line) const {
  const auto it = lines_.find({file, line});
  if (it == lines_.end()) return;
  w.key("native_functions");
  write_list(w, it->second);
}

void NativeBreakdown::write_stack(JsonWriter& w, size_t stack) const {
  const auto it = stacks_.find(stack);
  if (it == stacks_.end()) return;
  w.key("native");
  write_chains(w, it->second);
}

void NativeBreakdown::write_run(JsonWriter& w) const {
  w.key("native_functions");
  w.begin_array();
  std::vector<std::pair<uint32_t, const RunEntry*>> order;
  for (const auto& [symbol, entry] : run_) order.emplace_back(symbol, &entry);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->cost.ns > b.second->cost.ns;
  });
  NativeCost rest;
  size_t listed = 0;
  for (const auto& [symbol, entry] : order) {
    if (listed++ >= kMaxInRun) {
      rest += entry->cost;
      continue;
    }
    w.begin_object();
    write_function(w, symbol, entry->cost);
    w.key("lines");
    w.begin_array();
    size_t written = 0;
    for (const auto& it : heaviest_first(entry->lines)) {
      if (written++ == kMaxLinesPerFunction) break;
      w.begin_object();
      w.key("file");
      w.value(it->first.first);
      w.key("lineno");
      w.value(static_cast<int64_t>(it->first.second));
      w.key("cpu_s");
      w.value(seconds(it->second.ns));
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  if (rest.samples > 0) {
    w.begin_object();
    write_function(w, kOtherSymbol, rest);
    w.key("lines");
    w.begin_array();
    w.end_array();
    w.end_object();
  }
  w.end_array();
}

}  // namespace spyglass
