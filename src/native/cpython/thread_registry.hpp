// The threads the collector follows, each holding a slot of the table the signal path
// reads (core/thread_slots.hpp). Guarded by the collector's lock.
#pragma once

#include <sys/types.h>

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine.hpp"

namespace spyglass::cpython {

class ThreadRegistry {
 public:
  using Map = std::unordered_map<pid_t, ProfiledThread>;

  ProfiledThread* find(pid_t tid);
  const ProfiledThread* find(pid_t tid) const;
  // Claims a free slot for `tid` (a new generation of it, so stale signals are told
  // apart). Null when every slot is taken: the thread then goes unprofiled.
  ProfiledThread* add(pid_t tid);
  // Gives the thread's slot back.
  void remove(pid_t tid);
  void clear();
  const Map& all() const { return threads_; }
  // The registered threads the kernel no longer lists (`alive`: the ones it does).
  std::vector<pid_t> gone(const std::unordered_set<pid_t>& alive) const;

  // A thread that said it was ending is still listed by the kernel a moment longer: the
  // scan must not take it back.
  void mark_ended(pid_t tid) { ended_.insert(tid); }
  bool has_ended(pid_t tid) const { return ended_.count(tid) != 0; }
  void forget_ended_except(const std::unordered_set<pid_t>& alive);

 private:
  Map threads_;
  std::unordered_set<pid_t> ended_;
};

}  // namespace spyglass::cpython
