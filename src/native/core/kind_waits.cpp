#include "kind_waits.hpp"

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

bool KindWaits::draw(uint32_t kind, std::mt19937_64& rng, size_t* stack) const {
  auto it = kinds_.find(kind);
  if (it == kinds_.end() || it->second.notes.empty()) return false;
  const std::vector<size_t>& notes = it->second.notes;
  *stack = notes[std::uniform_int_distribution<size_t>(0, notes.size() - 1)(rng)];
  return true;
}

void KindWaits::hold(uint32_t kind, pid_t tid, uint64_t wait_ns) {
  Kind& k = kinds_[kind];
  if (k.held.size() < kMaxHeld) {
    k.held.push_back(Held{kind, tid, wait_ns, false, 0});
  } else {
    k.held.back().wait_ns += wait_ns;  // a kind never seen blocked: its sum is what counts
  }
}

std::vector<KindWaits::Held> KindWaits::settle(std::mt19937_64& rng) {
  std::vector<Held> out;
  for (auto& [id, k] : kinds_) {
    for (Held h : k.held) {
      h.drawn = draw(id, rng, &h.stack);
      out.push_back(h);
    }
    k.held.clear();
  }
  return out;
}

}  // namespace spyglass
