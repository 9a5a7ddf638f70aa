// Samples aggregated by their resolved Python stack: the bounded raw material from which
// lines, functions and flame graphs are all derived.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "times.hpp"

namespace spyglass {

// A frame after resolution: which code object (an index into the code table) and line.
struct FrameKey {
  uint32_t code_id = 0;
  int32_t line = 0;
  bool operator==(const FrameKey& o) const { return code_id == o.code_id && line == o.line; }
};

struct StackEntry {
  std::vector<FrameKey> frames;  // innermost first; empty for a thread with no Python frame
  bool truncated = false;
  Times times;
};

class StackTable {
 public:
  // Distinct stacks kept in full; past this, new stacks keep only their innermost frames so
  // that memory stays bounded for programs that generate endless distinct stacks.
  static constexpr size_t kMaxDistinctStacks = 100000;
  static constexpr size_t kDepthWhenFull = 8;

  // Returns the entry's index, stable for the table's life.
  size_t add(const FrameKey* innermost_first, size_t depth, bool truncated, const Times& t);
  // Adds to an entry already in the table (a run journal replaying its records).
  void add_to(size_t index, const Times& t) { entries_.at(index).times += t; }
  const std::vector<StackEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  void clear();

 private:
  struct Hash {
    size_t operator()(const std::vector<FrameKey>& v) const;
  };
  struct Key {
    std::vector<FrameKey> frames;
    bool truncated;
    bool operator==(const Key& o) const { return truncated == o.truncated && frames == o.frames; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return Hash{}(k.frames) ^ (k.truncated ? 0x9e37 : 0); }
  };
  std::unordered_map<Key, size_t, KeyHash> index_;
  Key lookup_{{}, false};  // add()'s key, its capacity kept between calls
  std::vector<StackEntry> entries_;
};

}  // namespace spyglass
