// Where a short thread's last waits go. The wait engine charges each thread's time off the
// CPU every interval, to the line the thread is blocked on then; a thread that ends
// between two charges takes its wait since the last one with it. For threads that live an
// interval or less (a thread-per-request server's handlers waiting on a database, short
// tasks each in a thread of their own) that was nearly all of their wait: 3 ms sleeps in
// 600 short threads showed as 2% of their time.
//
// Threads that ran the same function are one kind (thread_kinds.hpp). Each time a young
// thread of a kind is found blocked at a tick, the stack it is blocked on is noted for its
// kind: a tick falls at a random moment of a thread's life, so a kind's notes are spread
// over its stacks as its threads' blocked time is. What a thread of the kind waited since
// its last charge, when it ends, is split over the stacks of its kind's latest notes, each
// its share of them (a server's traffic changes over a run: the latest are what its
// threads do now). Split, not drawn whole from one note: a draw per thread added its own
// noise to the notes', a tenth of a 1 ms wait's line in 1,200 threads. What a kind waited
// before any of its threads was noted is held until the end.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace spyglass {

class KindWaits {
 public:
  static constexpr size_t kNotes = 64;      // the latest notes a kind's draws come from
  static constexpr size_t kMaxHeld = 4096;  // held waits kept apart per kind, then summed

  // A young thread of `kind` was found blocked on the stack at `stack`.
  void note(uint32_t kind, size_t stack);

  struct Share {
    size_t stack = 0;
    uint64_t wait_ns = 0;
  };
  // `wait_ns` of `kind` split over the stacks of its latest notes, each in proportion to
  // its notes (the parts sum to `wait_ns`); empty when the kind has none yet (hold() the
  // wait then).
  std::vector<Share> split(uint32_t kind, uint64_t wait_ns) const;
  void hold(uint32_t kind, pid_t tid, uint64_t wait_ns);

  struct Held {
    uint32_t kind = 0;
    pid_t tid = 0;
    uint64_t wait_ns = 0;
    std::vector<Share> shares;  // empty: no thread of the kind was ever noted blocked
  };
  // What was held, each split as split() does, at the end.
  std::vector<Held> settle();
  void clear() { kinds_.clear(); }

 private:
  struct Kind {
    std::vector<size_t> notes;  // a ring of the latest kNotes
    size_t next = 0;
    std::vector<Held> held;
  };
  std::unordered_map<uint32_t, Kind> kinds_;
};

}  // namespace spyglass
