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

// Keeps at most `max_points` of `points` (sorted by t) in one pass: the first, then in each
// of (max_points - 1) / 3 equal stretches of time its lowest, highest and last points. The
// extremes survive, and the series' value at each stretch's end is exact; unlike
// reduce_timeline(), whose passes can cost a point's share of the series for every point
// kept (a series that goes up and down by the same step every other point), it costs one
// look at each point, so a series can thin itself as it grows.
std::vector<TimePoint> thin_timeline(const std::vector<TimePoint>& points, size_t max_points);

// A series that thins itself to `keep` points (thin_timeline) whenever it reaches twice
// that.
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
