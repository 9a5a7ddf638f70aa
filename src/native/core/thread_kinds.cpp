#include "thread_kinds.hpp"

#include <algorithm>

namespace spyglass {

void ThreadKinds::configure(uint64_t young_ns) {
  span_ns_ = std::max<uint64_t>(kSpanNs, (young_ns + kMaxSpans - 1) / kMaxSpans);
  spans_ = std::max<size_t>(1, static_cast<size_t>((young_ns + span_ns_ - 1) / span_ns_));
  kinds_.clear();
}

size_t ThreadKinds::span_of(uint64_t position_ns) const {
  return std::min<size_t>(static_cast<size_t>(position_ns / span_ns_), spans_ - 1);
}

void ThreadKinds::observe(uint32_t kind, uint64_t position_ns, size_t stack, CpuClass cls,
                          bool in_gc, const std::vector<uintptr_t>& chain, uint64_t at_ns) {
  Kind& k = kinds_[kind];
  if (k.spans.empty()) k.spans.resize(spans_);
  Span& span = k.spans[span_of(position_ns)];
  auto it = std::find_if(span.entries.begin(), span.entries.end(), [&](const Entry& e) {
    return e.stack == stack && e.cls == cls && e.in_gc == in_gc;
  });
  if (it == span.entries.end())
    it = span.entries.insert(span.entries.end(), Entry{stack, cls, in_gc, {}});
  // The latest chain seen there: over the run, a random one of that stack's.
  if (cls == CpuClass::kNative && !chain.empty()) it->chain = chain;
  span.points.push_back(Point{at_ns, static_cast<uint32_t>(it - span.entries.begin())});
  // Points old enough that no held CPU can draw from them go, the latest kKept kept; a
  // span seen very often keeps a bounded number.
  while (span.points.size() > kMaxKept ||
         (span.points.size() > kKept && span.points.front().at_ns + 3 * kDelayNs < at_ns)) {
    span.points.pop_front();
  }
  ++k.points;
}

const ThreadKinds::Span& ThreadKinds::nearest(const Kind& k, size_t index) const {
  for (size_t d = 0; d < k.spans.size(); ++d) {
    if (index >= d && !k.spans[index - d].points.empty()) return k.spans[index - d];
    if (index + d < k.spans.size() && !k.spans[index + d].points.empty()) {
      return k.spans[index + d];
    }
  }
  return k.spans[index];  // not reached: the kind has points
}

std::pair<size_t, size_t> ThreadKinds::within(const Span& span, uint64_t at_ns) {
  const std::deque<Point>& points = span.points;
  const uint64_t from = at_ns > kWindowNs ? at_ns - kWindowNs : 0;
  const uint64_t to = at_ns + kWindowNs;  // at_ns is a clock's reading: no overflow
  const auto first = std::lower_bound(points.begin(), points.end(), from,
                                      [](const Point& p, uint64_t t) { return p.at_ns < t; });
  const auto last = std::upper_bound(first, points.end(), to,
                                     [](uint64_t t, const Point& p) { return t < p.at_ns; });
  return {static_cast<size_t>(first - points.begin()), static_cast<size_t>(last - points.begin())};
}

const ThreadKinds::Entry& ThreadKinds::draw(const Kind& k, size_t index, uint64_t at_ns,
                                            std::mt19937_64& rng) const {
  if (at_ns == kAnyTime) return draw_among(nearest(k, index), 0, ~size_t{0}, at_ns, rng);
  // The span nearest `index` seen within kWindowNs of `at_ns`. A span seen seldom (the
  // last steps of short threads, which few samples reach) drew from long before, from
  // what the kind did then: 300 threads of a second job were charged 15-40 % to the first
  // job's function on a loaded machine, where its last span had 5 points in 2.5 s.
  for (size_t d = 0; d < k.spans.size(); ++d) {
    for (const size_t i : {index - d, index + d}) {
      if (i >= k.spans.size()) continue;  // index - d wrapped
      const auto [first, last] = within(k.spans[i], at_ns);
      if (first != last) return draw_among(k.spans[i], first, last, at_ns, rng);
      if (d == 0) break;  // index - 0 and index + 0: one span
    }
  }
  // No span seen in that window: the nearest seen at all, its points nearest `at_ns`.
  return draw_among(nearest(k, index), 0, ~size_t{0}, at_ns, rng);
}

const ThreadKinds::Entry& ThreadKinds::draw_among(const Span& span, size_t lo, size_t hi,
                                                  uint64_t at_ns, std::mt19937_64& rng) {
  const std::deque<Point>& points = span.points;
  hi = std::min(hi, points.size());
  size_t first = lo;
  size_t last = hi;  // the points drawn from: [first, last)
  if (at_ns != kAnyTime && hi - lo > kNearest) {
    // The kNearest nearest `at_ns`, grown from where it would fall among them.
    const auto at = std::lower_bound(points.begin() + static_cast<std::ptrdiff_t>(lo),
                                     points.begin() + static_cast<std::ptrdiff_t>(hi), at_ns,
                                     [](const Point& p, uint64_t t) { return p.at_ns < t; });
    first = last = static_cast<size_t>(at - points.begin());
    while (last - first < kNearest) {
      const bool take_before = last == hi || (first > lo && at_ns - points[first - 1].at_ns <=
                                                                points[last].at_ns - at_ns);
      if (take_before) {
        --first;
      } else {
        ++last;
      }
    }
  }
  const size_t i = std::uniform_int_distribution<size_t>(first, last - 1)(rng);
  return span.entries[points[i].entry];
}

namespace {

uint64_t part(uint64_t whole, uint64_t num, uint64_t den) {
  return static_cast<uint64_t>(static_cast<double>(whole) * static_cast<double>(num) /
                               static_cast<double>(den));
}

}  // namespace

std::vector<ThreadKinds::Pick> ThreadKinds::share(uint32_t kind, uint64_t from_ns, uint64_t to_ns,
                                                  const Times& t, std::mt19937_64& rng,
                                                  uint64_t at_ns) const {
  std::vector<Pick> out;
  auto it = kinds_.find(kind);
  if (it == kinds_.end() || it->second.points == 0) return out;
  const Kind& k = it->second;
  if (to_ns <= from_ns) to_ns = from_ns + 1;  // CPU the clocks put at one position
  const uint64_t length = to_ns - from_ns;
  const uint64_t user = t.python_ns + t.native_ns;
  uint64_t user_left = user;
  uint64_t system_left = t.system_ns;
  const size_t first = span_of(from_ns);
  const size_t last = span_of(to_ns - 1);
  for (size_t i = first; i <= last; ++i) {
    // This span's part of [from, to); the last span also holds every later position.
    const uint64_t begin = i == first ? from_ns : i * span_ns_;
    const uint64_t end = i == last ? to_ns : (i + 1) * span_ns_;
    const uint64_t overlap = end - begin;
    const uint64_t u = i == last ? user_left : std::min(user_left, part(user, overlap, length));
    const uint64_t s =
        i == last ? system_left : std::min(system_left, part(t.system_ns, overlap, length));
    user_left -= u;
    system_left -= s;
    if (u + s == 0) continue;
    const Entry* chosen = &draw(k, i, at_ns, rng);
    // Consecutive spans drawing the same are one charge.
    if (out.empty() || out.back().stack != chosen->stack || out.back().cls != chosen->cls) {
      out.push_back(Pick{chosen->stack, chosen->cls, &chosen->chain, {}});
    }
    Pick& pick = out.back();
    if (chosen->cls == CpuClass::kPython) {
      pick.times.python_ns += u;
      if (chosen->in_gc) pick.times.gc_ns += u;
    } else {
      pick.times.native_ns += u;
    }
    pick.times.system_ns += s;
  }
  return out;
}

void ThreadKinds::hold(uint32_t kind, int32_t tid, uint64_t from_ns, uint64_t to_ns, const Times& t,
                       uint64_t at_ns) {
  Kind& k = kinds_[kind];
  if (k.spans.empty()) k.spans.resize(spans_);
  k.held.push_back(Piece{tid, from_ns, to_ns, at_ns, t});
}

std::vector<ThreadKinds::Held> ThreadKinds::settle_due(uint64_t now_ns, std::mt19937_64& rng) {
  std::vector<Held> out;
  const bool all = now_ns == kAnyTime;
  for (auto& [id, k] : kinds_) {
    if (k.points == 0 && !all) continue;  // held until a thread of the kind is seen
    while (!k.held.empty() && (all || k.held.front().at_ns + kDelayNs <= now_ns)) {
      const Piece& p = k.held.front();
      Held h{id, p.tid, k.points > 0, p.times, {}};
      if (h.seen) h.picks = share(id, p.from_ns, p.to_ns, p.times, rng, p.at_ns);
      out.push_back(std::move(h));
      k.held.pop_front();
    }
  }
  return out;
}

}  // namespace spyglass
