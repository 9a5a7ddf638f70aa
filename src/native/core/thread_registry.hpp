// The threads the collector follows, each holding a slot of the table the signal path
// reads (thread_slots.hpp). Guarded by the collector's lock.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "stack_table.hpp"

namespace spyglass {

// A thread the collector follows.
struct ProfiledThread {
  pid_t tid = 0;
  uint32_t slot = 0;  // its entry in thread_slot_table(), which the signal path reads
  // Registered by the thread itself (thread_started()): only such a thread may end itself.
  // (Under gevent a "thread" is a greenlet on an OS thread that lives on.)
  bool self_registered = false;
  bool has_kind = false;
  FrameKey target;  // its target's first line; target.code_id is its kind (thread_kinds.hpp)
};

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

}  // namespace spyglass
