// Where the CPU of threads that were never sampled went. A CPU-time timer is only checked
// on the kernel's scheduler tick (4 ms at HZ=250), so a thread that runs for less than a
// tick is sampled only if a tick happens to find it running. A thread-per-request server
// or a pool of short tasks does most of its work in such threads. Charging an unsampled
// thread's CPU to the first line of its function parks it on a `def` line; dropping it
// loses most of the program.
//
// Threads that ran the same function (their target) are one kind, and a kind's sampled
// threads show where its CPU goes: an unsampled thread's CPU is charged to a stack drawn
// from its kind's sampled CPU, with probability proportional to that CPU. Which threads
// of a kind a tick finds does not depend on what they do, so the sampled ones are a fair
// picture of the rest. CPU of a kind none of whose threads was ever sampled waits until
// the end, and is then charged to the kind's sampled stacks if some turned up meanwhile,
// or else to the target's first line (a kind that small is a few ticks of CPU at most).
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "times.hpp"

namespace spyglass {

class ThreadKinds {
 public:
  // A CPU sample of a thread of kind `kind` (its target's code id) on stack `stack`.
  void observe(uint32_t kind, size_t stack, uint64_t cpu_ns);
  // The stack to charge an unsampled thread of `kind` to, or false when none of the kind
  // has been sampled yet (the CPU is then held: see hold()).
  bool choose(uint32_t kind, std::mt19937_64& rng, size_t* stack) const;
  // CPU of an unsampled thread that could not be charged yet, and the thread it was.
  void hold(uint32_t kind, int32_t tid, const Times& t);

  // What was held, shared out in proportion to the kind's sampled stacks, at the end.
  struct Share {
    uint32_t kind = 0;
    int32_t tid = 0;
    bool has_stack = false;  // false: no thread of the kind was ever sampled
    size_t stack = 0;
    Times times;
  };
  std::vector<Share> settle();
  void clear() { kinds_.clear(); }

 private:
  struct Kind {
    std::vector<std::pair<size_t, uint64_t>> stacks;  // sampled CPU by stack, few entries
    std::unordered_map<size_t, size_t> index;         // stack → position in `stacks`
    uint64_t total_ns = 0;
    std::vector<std::pair<int32_t, Times>> held;
  };
  std::unordered_map<uint32_t, Kind> kinds_;
};

}  // namespace spyglass
