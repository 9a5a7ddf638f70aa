#include "timeline.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

namespace spyglass {

namespace {

// The point of (first, last) farthest from the chord between them.
struct Split {
  size_t first;
  size_t last;
  size_t at;
  double distance;
  bool operator<(const Split& o) const { return distance < o.distance; }
};

Split farthest(const std::vector<TimePoint>& p, size_t first, size_t last) {
  Split best{first, last, first, -1};
  const double dt = p[last].t - p[first].t;
  const double dv = p[last].value - p[first].value;
  if (!(dt > 0)) {  // no time between the ends: the chord is their mean
    const double mid = p[first].value + 0.5 * dv;
    for (size_t i = first + 1; i < last; ++i) {
      const double d = std::fabs(p[i].value - mid);
      if (d > best.distance) {
        best.at = i;
        best.distance = d;
      }
    }
    return best;
  }
  // The distance to the chord times dt, compared without a division per point: the
  // reductions run as the samples come, on every line's series.
  double most = -1;
  for (size_t i = first + 1; i < last; ++i) {
    const double d = std::fabs((p[i].value - p[first].value) * dt - (p[i].t - p[first].t) * dv);
    if (d > most) {
      best.at = i;
      most = d;
    }
  }
  if (most >= 0) best.distance = most / dt;
  return best;
}

}  // namespace

std::vector<TimePoint> reduce_timeline(const std::vector<TimePoint>& points, size_t max_points) {
  if (points.size() <= max_points || points.size() <= 2) return points;
  if (max_points < 2) max_points = 2;
  std::vector<bool> keep(points.size(), false);
  keep.front() = keep.back() = true;
  size_t kept = 2;
  std::priority_queue<Split> splits;
  splits.push(farthest(points, 0, points.size() - 1));
  while (kept < max_points && !splits.empty()) {
    const Split s = splits.top();
    splits.pop();
    if (s.distance < 0) continue;  // nothing between its ends
    keep[s.at] = true;
    ++kept;
    if (s.at - s.first > 1) splits.push(farthest(points, s.first, s.at));
    if (s.last - s.at > 1) splits.push(farthest(points, s.at, s.last));
  }
  std::vector<TimePoint> out;
  out.reserve(kept);
  for (size_t i = 0; i < points.size(); ++i) {
    if (keep[i]) out.push_back(points[i]);
  }
  return out;
}

void BoundedTimeline::add(double t, double value) {
  points_.push_back({t, value});
  if (points_.size() >= 2 * keep_) points_ = reduce_timeline(points_, keep_);
}

}  // namespace spyglass
