// What of an allocator's reservations is resident, as allocations of their stacks
// (shim/reserved_maps.hpp). A reservation counts for nothing when mapped; each time the
// collector finds more of it resident, the growth is a piece allocated at the stack that
// mapped it, and when less, the latest pieces are freed down to what is resident. Live bytes,
// footprint, timeline and leaks then follow the reservation's resident size, as they follow a
// malloc'd block's life.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace spyglass {

class ReservedMemory {
 public:
  // Changes smaller than this are left for a later measurement: a page here and there
  // would make a piece at each one.
  static constexpr uint64_t kStepBytes = uint64_t{64} << 10;
  // A growth is cut into this many pieces (of kStepBytes at least), so that pages given
  // back later free whole pieces down to within one of what is resident: a piece is never
  // freed and made again smaller, which would count its bytes as allocated twice.
  static constexpr uint64_t kPieces = 16;

  // Where a reservation was mapped, as its record was resolved.
  struct Owner {
    size_t stack = 0;
    uint64_t line = 0;  // a line key (memory_stats.hpp)
    bool python_thread = false;
    int32_t tid = 0;
    bool importing = false;
  };
  // A piece allocated (bytes > 0, with a new sample id) or freed (bytes < 0, its id).
  struct Change {
    uint32_t id = 0;
    int64_t bytes = 0;
    Owner owner;
    bool first = false;  // the first piece of a growth: one memory sample for all of them
  };

  // The record of reservation `id` was resolved.
  void noted(uint32_t id, const Owner& owner) { by_id_[id] = Held{owner, 0, {}}; }
  // Reservation `id` has `resident` bytes now. Nothing when its record is not resolved yet.
  template <typename NextId>
  void measured(uint32_t id, uint64_t resident, NextId&& next_id, std::vector<Change>* out) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    Held& held = it->second;
    if (held.total > resident + kStepBytes) {
      while (!held.pieces.empty() && held.total - held.pieces.back().second >= resident) {
        const auto [piece, bytes] = held.pieces.back();
        held.pieces.pop_back();
        held.total -= bytes;
        out->push_back(Change{piece, -static_cast<int64_t>(bytes), held.owner, false});
      }
    }
    if (resident >= held.total + kStepBytes) {
      uint64_t growth = resident - held.total;
      const uint64_t chunk = std::max(kStepBytes, (growth + kPieces - 1) / kPieces);
      for (bool first = true; growth > 0; first = false) {
        const uint64_t bytes = std::min(chunk, growth);
        const uint32_t piece = next_id();
        held.pieces.emplace_back(piece, bytes);
        held.total += bytes;
        growth -= bytes;
        out->push_back(Change{piece, static_cast<int64_t>(bytes), held.owner, first});
      }
    }
  }
  // The reservations listed now are `listed`: every other one has been unmapped, and its
  // pieces are freed.
  void keep_only(const std::vector<uint32_t>& listed, std::vector<Change>* out);
  uint64_t resident(uint32_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? 0 : it->second.total;
  }
  void clear() { by_id_.clear(); }

 private:
  struct Held {
    Owner owner;
    uint64_t total = 0;                                 // the pieces' bytes
    std::vector<std::pair<uint32_t, uint64_t>> pieces;  // (sample id, bytes), oldest first
  };
  std::unordered_map<uint32_t, Held> by_id_;
};

}  // namespace spyglass
