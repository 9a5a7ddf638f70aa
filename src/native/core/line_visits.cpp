#include "line_visits.hpp"

#include <algorithm>

namespace spyglass {

void LineVisits::visited(int32_t tid, uint64_t t_ns, uint64_t line) {
  std::vector<Visit>& visits = pending_[tid];
  if (!visits.empty() && visits.back().line == line) return;  // the earlier one stands for it
  if (visits.size() >= kMaxPending) return;
  visits.push_back(Visit{t_ns, line});
}

bool LineVisits::left(int32_t tid, uint64_t t_ns, uint64_t line) {
  auto it = pending_.find(tid);
  if (it == pending_.end()) return false;
  std::vector<Visit>& visits = it->second;
  // Each source's in order, but a thread's CPU samples and the wait engine's looks at it
  // are drained apart: not sorted across the two.
  bool off = false;
  const auto kept = std::remove_if(visits.begin(), visits.end(), [&](const Visit& v) {
    if (v.t_ns >= t_ns) return false;
    off = off || v.line != line;
    return true;
  });
  visits.erase(kept, visits.end());
  return off;
}

}  // namespace spyglass
