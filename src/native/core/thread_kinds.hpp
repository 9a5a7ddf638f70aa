// Where the CPU of a thread's first intervals goes. A thread-per-request server, or short
// tasks each in a thread of their own, does most of its work in threads that live a few
// sampling intervals or less, each doing the same steps in the same order. Charging each
// sample the CPU used since the one before, as a long thread's samples are, is then
// biased: the CPU from a thread's start to its first sample goes to that sample's stack,
// later in the thread, and the CPU after its last sample to that one's, earlier. Threads of
// 8 ms spending 2 ms in a first step and 2 ms in a last one showed them as 47% and 1%.
//
// Threads that ran the same function (their target) are one kind, and their first
// intervals of CPU are cut into short spans of position (CPU used since the thread
// started). Each sample of a young thread is a point at which a thread of the kind was
// seen at that position, and the CPU its threads used in a span is charged to what they
// were seen doing in that span: drawn from the span's points (or the nearest span's, while
// it has none). Samples fall at a random phase from a thread's start (its periodic timer
// starts at a random point of its first interval, a one-shot timer adds one on the first
// tick: cpu_engine.hpp), so a span's points are a fair picture of its threads, whatever
// their number there; how often the timers fire at a position does not matter, since the
// CPU of each span is known exactly. What a kind uses before any of its threads was seen
// is held until the end. The price: a young thread's own figures are its kind's average
// (the first part of each of a pool's long-lived workers, which share a target, is charged
// as all of theirs were), which is right for the kind, not for each thread.
//
// What a kind's threads do changes over a run (a server's traffic moves from one endpoint
// to another): the CPU used at a moment is charged from the points seen nearest that
// moment, kNearest of each span, before and after it, and of the span nearest in position
// seen within kWindowNs of it when its own span was not. So it is held kDelayNs before it
// is shared out (settle_due()). Drawn from every point of the run, a second phase of 300
// threads was charged 68 % to the first phase's function.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sample.hpp"
#include "times.hpp"

namespace spyglass {

class ThreadKinds {
 public:
  static constexpr uint64_t kSpanNs = 500'000;        // at least; wider when young_ns needs more
  static constexpr size_t kMaxSpans = 256;            // than this many
  static constexpr size_t kNearest = 8;               // the points a span's share is drawn from
  static constexpr size_t kKept = 64;                 // a span keeps at least its latest kKept
  static constexpr size_t kMaxKept = 1024;            // and at most this many
  static constexpr uint64_t kDelayNs = 500'000'000;   // CPU waits this long to be shared out
  static constexpr uint64_t kWindowNs = kDelayNs;     // and draws from points this near it
  static constexpr uint64_t kAnyTime = ~uint64_t{0};  // draw from every point kept

  // Spans up to `young_ns` of a thread's CPU; later positions count as the last span.
  void configure(uint64_t young_ns);

  // A young thread of `kind` was seen on `stack` after `position_ns` of its CPU, its user
  // time being of class `cls` (in the garbage collector: `in_gc`); `chain` is the native
  // call chain seen (native class only), kept as that stack's example for the native
  // breakdown.
  // `at_ns`: when (monotonic clock).
  void observe(uint32_t kind, uint64_t position_ns, size_t stack, CpuClass cls, bool in_gc,
               const std::vector<uintptr_t>& chain = {}, uint64_t at_ns = 0);

  struct Pick {
    size_t stack = 0;
    CpuClass cls = CpuClass::kPython;
    const std::vector<uintptr_t>* chain = nullptr;  // empty unless native
    Times times;
  };
  // The CPU `t` (user time in python_ns) that a thread of `kind` used between positions
  // `from_ns` and `to_ns` at `at_ns`, each span's share charged to a stack drawn from the
  // kNearest of its points seen nearest `at_ns` (kAnyTime: from all it keeps). Empty when
  // no thread of the kind has been seen yet.
  std::vector<Pick> share(uint32_t kind, uint64_t from_ns, uint64_t to_ns, const Times& t,
                          std::mt19937_64& rng, uint64_t at_ns = kAnyTime) const;
  // Holds that CPU until settle_due() or settle() shares it out.
  void hold(uint32_t kind, int32_t tid, uint64_t from_ns, uint64_t to_ns, const Times& t,
            uint64_t at_ns = 0);

  // What was held, shared out as share() does: what was held kDelayNs or more before
  // `now_ns`, of kinds seen; or, at the end (settle()), all of it.
  struct Held {
    uint32_t kind = 0;
    int32_t tid = 0;
    bool seen = false;  // false: no thread of the kind was ever seen (`picks` is empty)
    Times times;        // as held
    std::vector<Pick> picks;
  };
  std::vector<Held> settle_due(uint64_t now_ns, std::mt19937_64& rng);
  std::vector<Held> settle(std::mt19937_64& rng) { return settle_due(kAnyTime, rng); }

 private:
  struct Entry {
    size_t stack = 0;
    CpuClass cls = CpuClass::kPython;
    bool in_gc = false;
    std::vector<uintptr_t> chain;
  };
  struct Point {
    uint64_t at_ns = 0;
    uint32_t entry = 0;
  };
  struct Span {
    std::vector<Entry> entries;  // few: what one step of one function's work does
    std::deque<Point> points;    // in time order
  };
  struct Piece {
    int32_t tid = 0;
    uint64_t from_ns = 0;
    uint64_t to_ns = 0;
    uint64_t at_ns = 0;
    Times times;
  };
  struct Kind {
    std::vector<Span> spans;
    uint64_t points = 0;     // ever seen
    std::deque<Piece> held;  // in time order
  };
  size_t span_of(uint64_t position_ns) const;
  // The span nearest `index` that has points (the kind has some).
  const Span& nearest(const Kind& k, size_t index) const;
  // The entry of a point drawn for position span `index` at `at_ns` (see the definition).
  const Entry& draw(const Kind& k, size_t index, uint64_t at_ns, std::mt19937_64& rng) const;
  // The points of `span` within kWindowNs of `at_ns`: [first, last).
  static std::pair<size_t, size_t> within(const Span& span, uint64_t at_ns);
  // The entry of a point drawn from the kNearest of `span`'s points [lo, hi) nearest
  // `at_ns` (kAnyTime: from all of them).
  static const Entry& draw_among(const Span& span, size_t lo, size_t hi, uint64_t at_ns,
                                 std::mt19937_64& rng);

  size_t spans_ = 1;
  uint64_t span_ns_ = kSpanNs;
  std::unordered_map<uint32_t, Kind> kinds_;
};

}  // namespace spyglass
