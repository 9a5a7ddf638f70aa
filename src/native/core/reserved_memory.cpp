#include "reserved_memory.hpp"

#include <algorithm>

namespace spyglass {

void ReservedMemory::keep_only(const std::vector<uint32_t>& listed, std::vector<Change>* out) {
  for (auto it = by_id_.begin(); it != by_id_.end();) {
    if (std::find(listed.begin(), listed.end(), it->first) != listed.end()) {
      ++it;
      continue;
    }
    for (const auto& [piece, bytes] : it->second.pieces) {
      out->push_back(Change{piece, -static_cast<int64_t>(bytes), it->second.owner, false});
    }
    it = by_id_.erase(it);
  }
}

}  // namespace spyglass
