#include "profile_memory.hpp"

#include <algorithm>
#include <cmath>

namespace spyglass {

double bytes_to_mb(double bytes) { return bytes / (1024.0 * 1024.0); }

void write_mb(JsonWriter& w, double bytes) { w.value_fixed(bytes_to_mb(bytes), 6); }

MemoryExtras summarize_memory(const std::vector<size_t>& stacks,
                              const std::vector<uint64_t>& line_keys, const MemoryStats& stats) {
  MemoryExtras m;
  std::vector<const std::vector<TimePoint>*> series;
  for (size_t i : stacks) {
    auto it = stats.stacks().find(i);
    if (it == stats.stacks().end()) continue;
    if (!it->second.timeline.points().empty()) series.push_back(&it->second.timeline.points());
  }
  std::vector<uint64_t> keys = line_keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<const LineMemory*> lines;
  double first_t = -1;
  int64_t live_end = 0;
  int64_t max_live = 0;
  int64_t live_blocks = 0;
  uint64_t alloc_bytes = 0;
  uint64_t import_bytes = 0;
  for (uint64_t key : keys) {
    m.executions += stats.open_executions(key);  // a run not finished yet has some
    auto it = stats.executions().find(key);
    if (it != stats.executions().end()) {
      m.executions += it->second.count;
      m.peak_bytes = std::max(m.peak_bytes, static_cast<double>(it->second.max_peak));
    }
    auto l = stats.lines().find(key);
    if (l == stats.lines().end()) continue;
    const LineMemory& line = l->second;
    lines.push_back(&line);
    m.freed_bytes += static_cast<double>(line.freed_bytes);
    m.live_at_peak_bytes += static_cast<double>(stats.live_at_peak(line));
    live_end += line.live_bytes;
    max_live += line.max_live_bytes;  // an upper bound when several keys share the line
    live_blocks += line.live_blocks;
    alloc_bytes += line.alloc_bytes;
    import_bytes += line.import_bytes;
    if (line.first_t >= 0 && (first_t < 0 || line.first_t < first_t)) first_t = line.first_t;
  }
  m.live_end_bytes = static_cast<double>(live_end);
  double end_t = 0;
  for (const LineMemory* line : lines) end_t = std::max(end_t, stats.work_end_seconds(*line));
  // An import statement's line holds the module it made: what the module allocates as it
  // loads is no leak of the line's, whatever the import's pace (a short script after
  // `import pandas` had the import called a leak, its allocation split into executions).
  const bool mostly_importing = import_bytes * 2 >= alloc_bytes && import_bytes > 0;
  // (Those leak_verdict turns down whatever their trend are not timed.)
  const bool judged =
      live_end > 0 && live_blocks >= kLeakMinBlocks && m.executions >= kLeakMinExecutions;
  if (first_t >= 0 && end_t > first_t && !mostly_importing && judged) {
    // Over the program's allocations, not its seconds: time it spent idle, or held off the
    // CPU, before its last event does not make a line that grew until then look flat.
    // Judged twice: over all of them, and over the rest of the program's (without the
    // line's own), and a leak by both. The line's own stretch its growth over the first
    // clock (a cache whose misses made most allocations while it filled); and the second
    // clock can be mostly another line's (a request's temporaries, whose list objects the
    // cache's misses took from CPython's free lists and kept, timed by the cache's fill).
    // A line's count of samples is thinned like its other series: between the points kept
    // it grew evenly, near enough.
    const auto own = [&lines](double t) {
      double n = 0;
      for (const LineMemory* line : lines) n += interpolated_at(line->sample_series.points(), t);
      return n;
    };
    const auto verdict = [&](const std::vector<double>& at) {
      double bins[kLeakBins];
      for (int b = 0; b < kLeakBins; ++b) {
        bins[b] = 0;
        for (const LineMemory* line : lines) bins[b] += value_at(line->live_series.points(), at[b]);
      }
      return leak_verdict(bins, end_t - first_t, live_end, max_live, live_blocks, m.executions);
    };
    const AllocationClock& clock = stats.allocations();
    const LeakVerdict all = verdict(clock.split(first_t, end_t, kLeakBins, 2 * kLeakBins));
    const LeakVerdict others =
        verdict(clock.split_others(first_t, end_t, kLeakBins, 2 * kLeakBins, own));
    m.leak = all.confidence <= others.confidence ? all : others;
    m.leak.leak = all.leak && others.leak;
  }
  std::vector<TimePoint> merged;
  for (const auto* points : series) merged.insert(merged.end(), points->begin(), points->end());
  std::stable_sort(merged.begin(), merged.end(),
                   [](const TimePoint& a, const TimePoint& b) { return a.t < b.t; });
  m.timeline = reduce_timeline(merged, kLineTimelinePointsWritten);
  return m;
}

bool any_leak(const MemoryStats& stats) {
  for (const auto& [key, line] : stats.lines()) {
    if (line.live_bytes <= 0 || line.live_blocks < kLeakMinBlocks) continue;
    if (summarize_memory({}, {key}, stats).leak.leak) return true;
  }
  return false;
}

namespace {

// Places after the point that keep `digits` significant digits of `x`.
int places_for(double x, int digits) {
  if (!(std::fabs(x) > 0)) return 0;
  return std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
}

}  // namespace

void write_timeline(JsonWriter& w, const std::vector<TimePoint>& points) {
  // Times to a power of ten at most 1/10,000 of the timeline's span, footprints to four
  // significant digits: finer than any chart of them shows, at half the bytes of full
  // precision. Of points that round to one time, the last stands (the footprint from then
  // on), so times stay strictly increasing.
  const int t_places = points.empty() ? 0 : std::min(places_for(points.back().t, 5), 9);
  const double scale = std::pow(10.0, t_places);
  w.begin_array();
  for (size_t i = 0; i < points.size(); ++i) {
    if (i + 1 < points.size() &&
        std::llround(points[i + 1].t * scale) == std::llround(points[i].t * scale)) {
      continue;
    }
    const double mb = bytes_to_mb(points[i].value);
    w.begin_array();
    w.value_fixed(points[i].t, t_places);
    w.value_fixed(mb, places_for(mb, 4));
    w.end_array();
  }
  w.end_array();
}

void write_memory_sums(JsonWriter& w, const Times& t, Zeros zeros) {
  // A byte is 0.000001 MB: a figure left out is 0 written too.
  if (t.alloc_bytes != 0 || zeros == Zeros::kWritten) {
    w.key("mem_alloc_mb");
    write_mb(w, static_cast<double>(t.alloc_bytes));
  }
  if (t.copy_bytes != 0 || zeros == Zeros::kWritten) {
    w.key("copy_mb");
    write_mb(w, static_cast<double>(t.copy_bytes));
  }
}

void write_memory_members(JsonWriter& w, const Times& t, const MemoryExtras& m,
                          uint64_t run_alloc_bytes, double elapsed_s) {
  const auto alloc = static_cast<double>(t.alloc_bytes);
  w.key("mem_alloc_mb");
  write_mb(w, alloc);
  w.key("mem_python_fraction");
  w.value_fixed(alloc > 0 ? static_cast<double>(t.alloc_python_bytes) / alloc : 0.0, 6);
  w.key("mem_avg_mb");
  write_mb(w, m.executions > 0 ? alloc / static_cast<double>(m.executions) : alloc);
  w.key("mem_peak_mb");
  write_mb(w, m.peak_bytes);
  w.key("mem_share");
  w.value_fixed(run_alloc_bytes > 0 ? alloc / static_cast<double>(run_alloc_bytes) : 0.0, 6);
  w.key("mem_freed_mb");
  write_mb(w, m.freed_bytes);
  w.key("mem_live_end_mb");
  write_mb(w, std::max(m.live_end_bytes, 0.0));
  w.key("mem_live_at_peak_mb");
  write_mb(w, std::max(m.live_at_peak_bytes, 0.0));
  w.key("mem_timeline");
  write_timeline(w, m.timeline);
  w.key("mem_samples");
  w.value(t.mem_samples);
  const double copy_mb = bytes_to_mb(static_cast<double>(t.copy_bytes));
  w.key("copy_mb");
  write_mb(w, static_cast<double>(t.copy_bytes));
  w.key("copy_mb_s");
  w.value(elapsed_s > 0 ? copy_mb / elapsed_s : 0.0);
  write_cuda_copies(w, t);
}

void write_cuda_copies(JsonWriter& w, const Times& t) {
  if (t.cuda_bytes() == 0) return;  // most lines, and every run without a CUDA library
  w.key("cuda_htod_mb");
  write_mb(w, static_cast<double>(t.cuda_htod_bytes));
  w.key("cuda_dtoh_mb");
  write_mb(w, static_cast<double>(t.cuda_dtoh_bytes));
  w.key("cuda_dtod_mb");
  write_mb(w, static_cast<double>(t.cuda_dtod_bytes));
}

}  // namespace spyglass
