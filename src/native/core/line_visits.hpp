// Where the CPU samples of each thread found it in the program: the line of its innermost
// frame of the program's, and when. The memory side reads them to tell the executions of a
// line apart (memory_stats.hpp): a loop whose only sampled allocation is one line's, and
// whose other lines allocate too little to be sampled, otherwise looked like one long
// execution of that line, and a loop keeping 100 KB a pass was not called a leak.
//
// CPU samples and allocation records come through different rings and are drained at
// different moments, so a visit may be read after an allocation that came later: a visit
// waits until an allocation after it asks, and only one later than it consumes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace spyglass {

class LineVisits {
 public:
  // Visits kept per thread until an allocation consumes them: more come only from a thread
  // that runs long without a sampled allocation, and the oldest are the ones its next
  // allocation will read. A visit to the same line as the one before it is not kept.
  static constexpr size_t kMaxPending = 32;

  // A CPU sample found thread `tid` on `line` (line_key(); kNoLineKey: on no line of the
  // program's) at `t_ns`.
  void visited(int32_t tid, uint64_t t_ns, uint64_t line);
  // Whether a sample of thread `tid` before `t_ns` found it off `line`; forgets those
  // before `t_ns`.
  bool left(int32_t tid, uint64_t t_ns, uint64_t line);
  // A thread that ended: its tid may be reused.
  void forget(int32_t tid) { pending_.erase(tid); }
  void clear() { pending_.clear(); }
  size_t threads() const { return pending_.size(); }
  size_t pending(int32_t tid) const {
    auto it = pending_.find(tid);
    return it == pending_.end() ? 0 : it->second.size();
  }

 private:
  struct Visit {
    uint64_t t_ns;
    uint64_t line;
  };
  std::unordered_map<int32_t, std::vector<Visit>> pending_;
};

}  // namespace spyglass
