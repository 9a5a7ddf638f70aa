// Footprint-over-time series kept bounded: a profile's size must grow with the number of
// lines, never with run time, so series are reduced as they grow and again when written.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace spyglass {

struct TimePoint {
  double t = 0;      // seconds
  double value = 0;  // bytes
};

// Keeps at most `max_points` of `points` (sorted by t): the two ends, then, as in
// Ramer-Douglas-Peucker, repeatedly the point farthest (vertically) from the polyline kept
// so far. Peaks and troughs therefore survive before the flat stretches do.
std::vector<TimePoint> reduce_timeline(const std::vector<TimePoint>& points, size_t max_points);

// A series that reduces itself to `keep` points whenever it reaches twice that.
class BoundedTimeline {
 public:
  explicit BoundedTimeline(size_t keep = 256) : keep_(keep) {}
  void add(double t, double value);
  const std::vector<TimePoint>& points() const { return points_; }
  // Puts back points saved from another series with the same `keep` (a run journal).
  void restore(std::vector<TimePoint> points) { points_ = std::move(points); }

 private:
  size_t keep_;
  std::vector<TimePoint> points_;
};

}  // namespace spyglass
