#include "thread_kinds.hpp"

namespace spyglass {

void ThreadKinds::observe(uint32_t kind, size_t stack, uint64_t cpu_ns) {
  if (cpu_ns == 0) return;
  Kind& k = kinds_[kind];
  auto [it, inserted] = k.index.emplace(stack, k.stacks.size());
  if (inserted) k.stacks.emplace_back(stack, 0);
  k.stacks[it->second].second += cpu_ns;
  k.total_ns += cpu_ns;
}

bool ThreadKinds::choose(uint32_t kind, std::mt19937_64& rng, size_t* stack) const {
  auto it = kinds_.find(kind);
  if (it == kinds_.end() || it->second.total_ns == 0) return false;
  const Kind& k = it->second;
  uint64_t point = std::uniform_int_distribution<uint64_t>(0, k.total_ns - 1)(rng);
  for (const auto& [candidate, ns] : k.stacks) {
    if (point < ns) {
      *stack = candidate;
      return true;
    }
    point -= ns;
  }
  *stack = k.stacks.back().first;
  return true;
}

void ThreadKinds::hold(uint32_t kind, int32_t tid, const Times& t) {
  kinds_[kind].held.emplace_back(tid, t);
}

namespace {

uint64_t part(uint64_t whole, uint64_t num, uint64_t den) {
  return static_cast<uint64_t>(static_cast<double>(whole) * static_cast<double>(num) /
                               static_cast<double>(den));
}

}  // namespace

std::vector<ThreadKinds::Share> ThreadKinds::settle() {
  std::vector<Share> out;
  for (auto& [id, k] : kinds_) {
    for (const auto& [tid, t] : k.held) {
      if (k.total_ns == 0) {
        out.push_back(Share{id, tid, false, 0, t});
        continue;
      }
      for (const auto& [stack, ns] : k.stacks) {
        Share s{id, tid, true, stack, {}};
        s.times.python_ns = part(t.python_ns, ns, k.total_ns);
        s.times.native_ns = part(t.native_ns, ns, k.total_ns);
        s.times.system_ns = part(t.system_ns, ns, k.total_ns);
        out.push_back(s);
      }
    }
    k.held.clear();
  }
  return out;
}

}  // namespace spyglass
