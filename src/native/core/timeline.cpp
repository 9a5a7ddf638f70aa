#include "timeline.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
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
  for (size_t i = first + 1; i < last; ++i) {
    const double frac = dt > 0 ? (p[i].t - p[first].t) / dt : 0.5;
    const double chord = p[first].value + frac * (p[last].value - p[first].value);
    const double d = std::fabs(p[i].value - chord);
    if (d > best.distance) {
      best.at = i;
      best.distance = d;
    }
  }
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

std::vector<TimePoint> thin_timeline(const std::vector<TimePoint>& points, size_t max_points) {
  if (points.size() <= max_points || points.size() <= 2) return points;
  if (max_points < 4) return reduce_timeline(points, max_points);  // not one whole stretch
  const size_t buckets = (max_points - 1) / 3;
  std::vector<TimePoint> out;
  out.reserve(1 + 3 * buckets);
  out.push_back(points.front());
  const double t0 = points.front().t;
  const double span = points.back().t - t0;
  size_t i = 1;
  for (size_t b = 0; b < buckets && i < points.size(); ++b) {
    const bool final_bucket = b + 1 == buckets;
    const double end_t = t0 + span * static_cast<double>(b + 1) / static_cast<double>(buckets);
    size_t low = i;
    size_t high = i;
    size_t j = i;
    for (; j < points.size() && (final_bucket || points[j].t <= end_t); ++j) {
      if (points[j].value < points[low].value) low = j;
      if (points[j].value > points[high].value) high = j;
    }
    if (j == i) continue;  // an empty bucket
    size_t kept[3] = {low, high, j - 1};
    std::sort(std::begin(kept), std::end(kept));
    for (size_t k = 0; k < 3; ++k) {
      if (k == 0 || kept[k] != kept[k - 1]) out.push_back(points[kept[k]]);
    }
    i = j;
  }
  return out;
}

void BoundedTimeline::add(double t, double value) {
  points_.push_back({t, value});
  if (points_.size() >= 2 * keep_) points_ = thin_timeline(points_, keep_);
}

}  // namespace spyglass
