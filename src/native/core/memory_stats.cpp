#include "memory_stats.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace spyglass {

void MemoryStats::reset(uint64_t start_ns) {
  *this = MemoryStats();
  start_ns_ = start_ns;
}

double MemoryStats::seconds_since_start(uint64_t t_ns) const {
  return t_ns > start_ns_ ? static_cast<double>(t_ns - start_ns_) / 1e9 : 0.0;
}

void MemoryStats::settle(LineMemory& line) {
  if (line.peak_epoch != peak_epoch_) {
    line.live_at_peak = line.live_bytes;
    line.peak_epoch = peak_epoch_;
  }
}

void MemoryStats::note_footprint(double t, int64_t footprint_after, size_t stack) {
  // The hooks computed the footprint in allocation order; records may drain out of it.
  footprint_now_ = footprint_after;
  last_t_ = std::max(t, last_t_);
  footprint_.add(last_t_, static_cast<double>(footprint_after));
  if (footprint_after > max_footprint_) {
    max_footprint_ = footprint_after;
    ++peak_epoch_;
    if (stack != SIZE_MAX) place_peak(stack, footprint_after);
  }
}

void MemoryStats::place_peak(size_t stack, int64_t footprint_after) {
  // The peak's place moves only when the footprint rises clearly (1 %) above where it
  // stood at the place found so far. A sampled small allocation counts a whole sampling
  // window: sampled just after the allocation that made the peak, it would otherwise take
  // the peak's place for a rise within the estimate's own grain.
  if (max_stack_ == SIZE_MAX || footprint_after > located_footprint_ + located_footprint_ / 100) {
    max_stack_ = stack;
    located_footprint_ = footprint_after;
  }
}

void MemoryStats::add_alloc(size_t stack, uint64_t key, bool has_python_frame, int32_t tid,
                            uint64_t t_ns, int64_t bytes, int64_t footprint_after, bool tracked,
                            uint32_t sample_id, bool after_wait, bool importing,
                            uint32_t outer_code, uint32_t held_epoch) {
  const double t = seconds_since_start(t_ns);
  StackMemory& s = stacks_[stack];
  s.timeline.add(t, static_cast<double>(std::max<int64_t>(footprint_after, 0)));
  if (!has_python_frame && bytes > 0) native_thread_alloc_ += static_cast<uint64_t>(bytes);

  LineMemory& line = lines_[key];
  settle(line);
  line.alloc_bytes += static_cast<uint64_t>(std::max<int64_t>(bytes, 0));
  if (importing) line.import_bytes += static_cast<uint64_t>(std::max<int64_t>(bytes, 0));
  if (line.first_t < 0) line.first_t = t;
  if (outer_code != kNoCode) {
    line.outer_code = outer_code;
    saw_outer(outer_code, t_ns);
  }
  allocations_.tick(std::max(t, last_t_));
  const auto& counted = line.sample_series.points();
  line.sample_series.add(std::max(t, last_t_), (counted.empty() ? 0 : counted.back().value) + 1);
  if (tracked) {
    s.live_bytes += bytes;
    line.live_bytes += bytes;
    ++line.live_blocks;
    line.max_live_bytes = std::max(line.max_live_bytes, line.live_bytes);
    line.live_series.add(std::max(t, last_t_), static_cast<double>(line.live_bytes));
    live_[sample_id] = Live{stack, key, bytes};
  }
  // An execution ends when the thread's next sample is on another line, or comes after
  // the thread was off its CPU a while (a sleep, a request's wait). Its peak is the most
  // the line's live bytes rose above where the execution found them: frees of its blocks,
  // wherever they happen, come off. (A loop whose one allocating line leaked 200 KB an
  // iteration, between sleeps, was one execution: too few for a leak, and a peak of the
  // whole run. A loop building a structure on the CPU, however slowly, is still one.)
  const int64_t before = line.live_bytes - (tracked ? bytes : 0);
  auto [it, first] = open_execution_.emplace(tid, Execution{key, before, 0});
  if (!first && (it->second.key != key || after_wait)) {
    close(it->second);
    it->second = Execution{key, before, 0};
  }
  it->second.peak = std::max(it->second.peak, line.live_bytes - it->second.net);
  if (held_epoch == kNotHeld) {
    note_footprint(t, footprint_after, stack);
  } else if (held_epoch == 0 || held_epoch != peak_epoch_) {
    return;  // it made no maximum, or one passed since
  } else {
    place_peak(stack, footprint_after);  // as note_footprint would have, knowing the stack
    line.peak_epoch = 0;  // settled before its block came: it held the block at the peak
  }
  // A line whose allocation made the new maximum holds it at the peak.
  if (line.peak_epoch != peak_epoch_) {
    line.live_at_peak = line.live_bytes;
    line.peak_epoch = peak_epoch_;
  }
}

uint32_t MemoryStats::held_footprint(uint64_t t_ns, int64_t footprint_after) {
  const uint32_t before = peak_epoch_;
  note_footprint(seconds_since_start(t_ns), footprint_after, SIZE_MAX);
  return peak_epoch_ != before ? peak_epoch_ : 0;
}

void MemoryStats::free_footprint(uint64_t t_ns, int64_t footprint_after) {
  note_footprint(seconds_since_start(t_ns), footprint_after, SIZE_MAX);
}

void MemoryStats::sampled_free(uint32_t sample_id, uint64_t t_ns, int64_t footprint_after) {
  free_block(sample_id, t_ns);
  free_footprint(t_ns, footprint_after);
}

void MemoryStats::free_block(uint32_t sample_id, uint64_t t_ns) {
  const double t = seconds_since_start(t_ns);
  // Whatever the line, the footprint drops; a block from before a journal's restore, or
  // whose allocation record was dropped, has no line to take it from.
  auto it = live_.find(sample_id);
  if (it != live_.end()) {
    const Live b = it->second;
    live_.erase(it);
    stacks_[b.stack].live_bytes -= b.bytes;
    LineMemory& line = lines_[b.key];
    settle(line);
    line.live_bytes -= b.bytes;
    --line.live_blocks;
    line.freed_bytes += static_cast<uint64_t>(b.bytes);
    line.live_series.add(std::max(t, last_t_), static_cast<double>(line.live_bytes));
    freed_ += static_cast<uint64_t>(b.bytes);
  }
}

void MemoryStats::saw_outer(uint32_t code, uint64_t t_ns) {
  double& seen = outer_seen_[code];
  seen = std::max(seen, seconds_since_start(t_ns));
}

double MemoryStats::work_end_seconds(const LineMemory& line) const {
  const double end = end_seconds();
  if (line.outer_code == kNoCode) return end;
  auto it = outer_seen_.find(line.outer_code);
  return it == outer_seen_.end() ? end : std::min(end, it->second);
}

void MemoryStats::close(const Execution& e) {
  ExecutionStats& s = executions_[e.key];
  ++s.count;
  s.max_peak = std::max(s.max_peak, e.peak);
}

void MemoryStats::finish() {
  for (const auto& [tid, e] : open_execution_) close(e);
  open_execution_.clear();
}

double value_at(const std::vector<TimePoint>& points, double t) {
  auto it = std::upper_bound(points.begin(), points.end(), t,
                             [](double x, const TimePoint& p) { return x < p.t; });
  return it == points.begin() ? 0.0 : std::prev(it)->value;
}

double interpolated_at(const std::vector<TimePoint>& points, double t) {
  auto it = std::upper_bound(points.begin(), points.end(), t,
                             [](double x, const TimePoint& p) { return x < p.t; });
  if (it == points.begin()) return 0.0;
  const TimePoint& before = *std::prev(it);
  if (it == points.end() || !(it->t > before.t)) return before.value;
  return before.value + (it->value - before.value) * (t - before.t) / (it->t - before.t);
}

LeakVerdict leak_verdict(const double (&bins)[kLeakBins], double span_s, int64_t live_end,
                         int64_t max_live, int64_t live_blocks, uint64_t executions) {
  LeakVerdict v;
  if (span_s <= 0 || live_end <= 0 || live_blocks < kLeakMinBlocks) return v;
  if (executions < kLeakMinExecutions) return v;
  // Mann-Kendall: how many later points are above earlier ones, against chance. A line
  // that rose once (an import, a cache filled once) and then held still scores ties after
  // its rise; one that rises all along scores ups everywhere.
  double s = 0;
  for (int i = 0; i < kLeakBins; ++i) {
    for (int j = i + 1; j < kLeakBins; ++j) s += (bins[j] > bins[i]) - (bins[j] < bins[i]);
  }
  const double n = kLeakBins;
  const double sd = std::sqrt(n * (n - 1) * (2 * n + 5) / 18);
  const double z = s > 0 ? (s - 1) / sd : 0.0;
  v.confidence = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double half = bins[kLeakBins / 2 - 1];
  const double end = bins[kLeakBins - 1];
  v.rate_bytes_s = std::max(0.0, (end - bins[0]) / (span_s * (kLeakBins - 1) / kLeakBins));
  // Not freed by the end, and still growing in the second half of its span: a cache filled
  // once, however late, has stopped growing by then.
  const bool kept = live_end * 2 >= max_live;
  const bool still_growing = end - half >= 0.25 * end;
  v.leak = kept && still_growing && v.confidence >= kLeakConfidence;
  return v;
}

namespace {

void save_points(ByteWriter& out, const BoundedTimeline& series) {
  out.u32(static_cast<uint32_t>(series.points().size()));
  for (const TimePoint& p : series.points()) {
    out.f64(p.t);
    out.f64(p.value);
  }
}

bool load_points(ByteReader& in, BoundedTimeline* series) {
  const uint32_t n = in.u32();
  if (!in.ok() || n > in.remaining() / 16) return false;
  std::vector<TimePoint> points(n);
  for (TimePoint& p : points) {
    p.t = in.f64();
    p.value = in.f64();
  }
  series->restore(std::move(points));
  return in.ok();
}

}  // namespace

void MemoryStats::save(ByteWriter& out) const {
  out.u64(start_ns_);
  out.u32(static_cast<uint32_t>(stacks_.size()));
  for (const auto& [stack, s] : stacks_) {
    out.u64(stack);
    out.i64(s.live_bytes);
    save_points(out, s.timeline);
  }
  out.u32(static_cast<uint32_t>(lines_.size()));
  for (const auto& [key, l] : lines_) {
    out.u64(key);
    out.u64(l.alloc_bytes);
    out.u64(l.freed_bytes);
    out.i64(l.live_bytes);
    out.i64(l.live_blocks);
    out.i64(l.max_live_bytes);
    out.u64(l.import_bytes);
    out.i64(l.live_at_peak);
    out.u32(l.peak_epoch);
    out.f64(l.first_t);
    out.u32(l.outer_code);
    save_points(out, l.live_series);
    save_points(out, l.sample_series);
  }
  out.u32(static_cast<uint32_t>(live_.size()));
  for (const auto& [id, b] : live_) {
    out.u32(id);
    out.u64(b.stack);
    out.u64(b.key);
    out.i64(b.bytes);
  }
  out.u32(static_cast<uint32_t>(executions_.size()));
  for (const auto& [key, e] : executions_) {
    out.u64(key);
    out.u64(e.count);
    out.i64(e.max_peak);
  }
  out.u32(static_cast<uint32_t>(open_execution_.size()));
  for (const auto& [tid, e] : open_execution_) {
    out.u32(static_cast<uint32_t>(tid));
    out.u64(e.key);
    out.i64(e.net);
    out.i64(e.peak);
  }
  save_points(out, footprint_);
  out.i64(footprint_now_);
  out.f64(last_t_);
  out.i64(max_footprint_);
  out.u32(peak_epoch_);
  out.u64(max_stack_);
  out.i64(located_footprint_);
  out.u64(freed_);
  out.u64(native_thread_alloc_);
  out.u32(static_cast<uint32_t>(outer_seen_.size()));
  for (const auto& [code, t] : outer_seen_) {
    out.u32(code);
    out.f64(t);
  }
  allocations_.save(out);
}

bool MemoryStats::load(ByteReader& in) {
  *this = MemoryStats();
  start_ns_ = in.u64();
  for (uint32_t n = in.u32(); in.ok() && n > 0; --n) {
    StackMemory& s = stacks_[in.u64()];
    s.live_bytes = in.i64();
    if (!load_points(in, &s.timeline)) return false;
  }
  for (uint32_t n = in.u32(); in.ok() && n > 0; --n) {
    LineMemory& l = lines_[in.u64()];
    l.alloc_bytes = in.u64();
    l.freed_bytes = in.u64();
    l.live_bytes = in.i64();
    l.live_blocks = in.i64();
    l.max_live_bytes = in.i64();
    l.import_bytes = in.u64();
    l.live_at_peak = in.i64();
    l.peak_epoch = in.u32();
    l.first_t = in.f64();
    l.outer_code = in.u32();
    if (!load_points(in, &l.live_series)) return false;
    if (!load_points(in, &l.sample_series)) return false;
  }
  for (uint32_t n = in.u32(); in.ok() && n > 0; --n) {
    const uint32_t id = in.u32();
    Live b{};
    b.stack = static_cast<size_t>(in.u64());
    b.key = in.u64();
    b.bytes = in.i64();
    live_[id] = b;
  }
  for (uint32_t n = in.u32(); in.ok() && n > 0; --n) {
    ExecutionStats& e = executions_[in.u64()];
    e.count = in.u64();
    e.max_peak = in.i64();
  }
  for (uint32_t n = in.u32(); in.ok() && n > 0; --n) {
    const auto tid = static_cast<int32_t>(in.u32());
    Execution e{};
    e.key = in.u64();
    e.net = in.i64();
    e.peak = in.i64();
    open_execution_[tid] = e;
  }
  if (!load_points(in, &footprint_)) return false;
  footprint_now_ = in.i64();
  last_t_ = in.f64();
  max_footprint_ = in.i64();
  peak_epoch_ = in.u32();
  max_stack_ = static_cast<size_t>(in.u64());
  located_footprint_ = in.i64();
  freed_ = in.u64();
  native_thread_alloc_ = in.u64();
  for (uint32_t n = in.u32(); in.ok() && n > 0; --n) {
    const uint32_t code = in.u32();
    outer_seen_[code] = in.f64();
  }
  return in.ok() && allocations_.load(in);
}

}  // namespace spyglass
