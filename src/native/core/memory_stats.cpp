#include "memory_stats.hpp"

#include <algorithm>
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

void MemoryStats::add_net(size_t stack, uint64_t key, bool has_python_frame, int32_t tid,
                          uint64_t t_ns, int64_t net, int64_t footprint_after, bool new_peak,
                          int watch_slot, uint32_t watch_generation) {
  const double t = seconds_since_start(t_ns);
  StackMemory& s = stacks_[stack];
  s.live_bytes += net;
  s.timeline.add(t, static_cast<double>(std::max<int64_t>(footprint_after, 0)));
  // An execution ends when the thread's next sample is on another line. Frees are
  // charged where they happen, so what one execution adds is the fairest per-line peak.
  auto [it, first] = open_execution_.emplace(tid, Execution{key, 0, 0});
  if (!first && it->second.key != key) {
    close(it->second);
    it->second = Execution{key, 0, 0};
  }
  it->second.net += net;
  it->second.peak = std::max(it->second.peak, it->second.net);
  if (!has_python_frame && net > 0) native_thread_alloc_ += static_cast<uint64_t>(net);

  // The hooks computed the footprint in allocation order; records may drain out of it.
  footprint_now_ = footprint_after;
  footprint_.add(std::max(t, last_footprint_t_), static_cast<double>(footprint_after));
  last_footprint_t_ = std::max(t, last_footprint_t_);
  if (footprint_after > max_footprint_) {
    max_footprint_ = footprint_after;
    max_stack_ = stack;
  }
  if (new_peak) {
    for (Watch& w : watches_) {
      if (!w.active) continue;
      ++stacks_[w.stack].watched;  // survived to this peak
      w.active = false;
    }
  }
  if (watch_slot >= 0 && watch_slot < kWatchSlots) {
    watches_[watch_slot] = Watch{true, watch_generation, stack};
  }
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

void MemoryStats::watched_freed(int watch_slot, uint32_t watch_generation) {
  if (watch_slot < 0 || watch_slot >= kWatchSlots) return;
  Watch& w = watches_[watch_slot];
  if (!w.active || w.generation != watch_generation) return;
  StackMemory& s = stacks_[w.stack];
  ++s.watched;
  ++s.watched_freed;
  w.active = false;
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
    out.u64(s.watched);
    out.u64(s.watched_freed);
    save_points(out, s.timeline);
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
  out.f64(last_footprint_t_);
  out.i64(max_footprint_);
  out.u64(max_stack_);
  for (const Watch& w : watches_) {
    out.u8(w.active ? 1 : 0);
    out.u32(w.generation);
    out.u64(w.stack);
  }
  out.u64(native_thread_alloc_);
}

bool MemoryStats::load(ByteReader& in) {
  *this = MemoryStats();
  start_ns_ = in.u64();
  for (uint32_t n = in.u32(); in.ok() && n > 0; --n) {
    StackMemory& s = stacks_[in.u64()];
    s.live_bytes = in.i64();
    s.watched = in.u64();
    s.watched_freed = in.u64();
    if (!load_points(in, &s.timeline)) return false;
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
  last_footprint_t_ = in.f64();
  max_footprint_ = in.i64();
  max_stack_ = static_cast<size_t>(in.u64());
  for (Watch& w : watches_) {
    w.active = in.u8() != 0;
    w.generation = in.u32();
    w.stack = static_cast<size_t>(in.u64());
  }
  native_thread_alloc_ = in.u64();
  return in.ok();
}

double MemoryStats::leak_likelihood(uint64_t watched, uint64_t freed) {
  const double p = 1.0 - (static_cast<double>(freed) + 1.0) / (static_cast<double>(watched) + 2.0);
  return std::clamp(p, 0.0, 1.0);
}

}  // namespace spyglass
