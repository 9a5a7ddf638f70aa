#include "kind_waits.hpp"

#include <algorithm>
#include <utility>

namespace spyglass {

void KindWaits::note(uint32_t kind, size_t stack) {
  Kind& k = kinds_[kind];
  if (k.notes.size() < kNotes) {
    k.notes.push_back(stack);
    return;
  }
  k.notes[k.next] = stack;
  k.next = (k.next + 1) % kNotes;
}

std::vector<KindWaits::Share> KindWaits::split(uint32_t kind, uint64_t wait_ns) const {
  std::vector<Share> shares;
  auto it = kinds_.find(kind);
  if (it == kinds_.end() || it->second.notes.empty()) return shares;
  const std::vector<size_t>& notes = it->second.notes;
  std::vector<std::pair<size_t, uint64_t>> counts;  // a few stacks: a scan beats a map
  for (size_t stack : notes) {
    auto found = std::find_if(counts.begin(), counts.end(),
                              [stack](const auto& c) { return c.first == stack; });
    if (found == counts.end()) {
      counts.emplace_back(stack, 1);
    } else {
      ++found->second;
    }
  }
  uint64_t given = 0;
  for (const auto& [stack, count] : counts) {
    // 128-bit product: a wait of hours times 64 notes overflows 64 bits.
    const auto part =
        static_cast<uint64_t>(static_cast<unsigned __int128>(wait_ns) * count / notes.size());
    shares.push_back(Share{stack, part});
    given += part;
  }
  shares.front().wait_ns += wait_ns - given;  // what rounding down left
  return shares;
}

void KindWaits::hold(uint32_t kind, pid_t tid, uint64_t wait_ns) {
  Kind& k = kinds_[kind];
  if (k.held.size() < kMaxHeld) {
    k.held.push_back(Held{kind, tid, wait_ns, {}});
  } else {
    k.held.back().wait_ns += wait_ns;  // a kind never seen blocked: its sum is what counts
  }
}

std::vector<KindWaits::Held> KindWaits::settle() {
  std::vector<Held> out;
  for (auto& [id, k] : kinds_) {
    for (Held h : k.held) {
      h.shares = split(id, h.wait_ns);
      out.push_back(std::move(h));
    }
    k.held.clear();
  }
  return out;
}

}  // namespace spyglass
