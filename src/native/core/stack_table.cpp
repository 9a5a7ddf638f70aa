#include "stack_table.hpp"

#include <algorithm>

namespace spyglass {

size_t StackTable::Hash::operator()(const std::vector<FrameKey>& v) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the frame words
  for (const FrameKey& f : v) {
    h = (h ^ f.code_id) * 1099511628211ull;
    h = (h ^ static_cast<uint32_t>(f.line)) * 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

size_t StackTable::add(const FrameKey* innermost_first, size_t depth, bool truncated,
                       const Times& t) {
  // Looked up through a key kept between calls: most stacks are in the table already, and
  // a vector made for each lookup cost an allocation and a free per sample.
  Key& key = lookup_;
  key.frames.assign(innermost_first, innermost_first + depth);
  key.truncated = truncated;
  auto it = index_.find(key);
  if (it == index_.end() && entries_.size() >= kMaxDistinctStacks && depth > kDepthWhenFull) {
    key.frames.resize(kDepthWhenFull);
    key.truncated = true;
    it = index_.find(key);
  }
  if (it != index_.end()) {
    entries_[it->second].times += t;
    return it->second;
  }
  entries_.push_back(StackEntry{key.frames, key.truncated, t});
  index_.emplace(key, entries_.size() - 1);
  return entries_.size() - 1;
}

void StackTable::clear() {
  index_.clear();
  entries_.clear();
}

}  // namespace spyglass
