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
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sample.hpp"
#include "times.hpp"

namespace spyglass {

class ThreadKinds {
 public:
  static constexpr uint64_t kSpanNs = 500'000;  // at least; wider when young_ns needs more
  static constexpr size_t kMaxSpans = 256;      // than this many

  // Spans up to `young_ns` of a thread's CPU; later positions count as the last span.
  void configure(uint64_t young_ns);

  // A young thread of `kind` was seen on `stack` after `position_ns` of its CPU, its user
  // time being of class `cls` (in the garbage collector: `in_gc`); `chain` is the native
  // call chain seen (native class only), kept as that stack's example for the native
  // breakdown.
  void observe(uint32_t kind, uint64_t position_ns, size_t stack, CpuClass cls, bool in_gc,
               const std::vector<uintptr_t>& chain = {});

  struct Pick {
    size_t stack = 0;
    CpuClass cls = CpuClass::kPython;
    const std::vector<uintptr_t>* chain = nullptr;  // empty unless native
    Times times;
  };
  // The CPU `t` (user time in python_ns) that a thread of `kind` used between positions
  // `from_ns` and `to_ns`, each span's share charged to a stack drawn from its points.
  // Empty when no thread of the kind has been seen yet (hold() it then).
  std::vector<Pick> share(uint32_t kind, uint64_t from_ns, uint64_t to_ns, const Times& t,
                          std::mt19937_64& rng) const;
  void hold(uint32_t kind, int32_t tid, uint64_t from_ns, uint64_t to_ns, const Times& t);

  // What was held, shared out as share() does, at the end.
  struct Held {
    uint32_t kind = 0;
    int32_t tid = 0;
    bool seen = false;  // false: no thread of the kind was ever seen (`picks` is empty)
    Times times;        // as held
    std::vector<Pick> picks;
  };
  std::vector<Held> settle(std::mt19937_64& rng);

 private:
  struct Entry {
    size_t stack = 0;
    CpuClass cls = CpuClass::kPython;
    bool in_gc = false;
    uint32_t points = 0;
    std::vector<uintptr_t> chain;
  };
  struct Span {
    std::vector<Entry> entries;  // few: what one step of one function's work does
    uint32_t points = 0;
  };
  struct Piece {
    int32_t tid = 0;
    uint64_t from_ns = 0;
    uint64_t to_ns = 0;
    Times times;
  };
  struct Kind {
    std::vector<Span> spans;
    uint32_t points = 0;
    std::vector<Piece> held;
  };
  size_t span_of(uint64_t position_ns) const;
  // The span nearest `index` that has points (the kind has some).
  const Span& nearest(const Kind& k, size_t index) const;

  size_t spans_ = 1;
  uint64_t span_ns_ = kSpanNs;
  std::unordered_map<uint32_t, Kind> kinds_;
};

}  // namespace spyglass
