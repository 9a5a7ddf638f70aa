// The memory half of the JSON document: what a model built with memory statistics writes.
#include <gtest/gtest.h>

#include <map>

#include <string>
#include <unordered_map>
#include <vector>

#include "core/file_filter.hpp"
#include "core/memory_stats.hpp"
#include "core/profile_memory.hpp"
#include "core/profile_model.hpp"
#include "core/stack_table.hpp"
#include "json_test_util.hpp"

namespace spyglass {
namespace {

using spyglass_test::JsonParser;
using spyglass_test::JsonValue;

constexpr int64_t kMiB = 1 << 20;
constexpr uint64_t kSecond = 1'000'000'000;

const JsonValue& member(const JsonValue& obj, const std::string& key) {
  static const JsonValue kMissing;
  const JsonValue* v = obj.find(key);
  EXPECT_NE(v, nullptr) << "missing member " << key;
  return v != nullptr ? *v : kMissing;
}

const JsonValue* line(const JsonValue& file, int lineno) {
  for (const JsonValue& l : member(file, "lines").array) {
    if (member(l, "lineno").number == lineno) return &l;
  }
  return nullptr;
}

class MemoryJsonTest : public ::testing::Test {
 protected:
  MemoryJsonTest() {
    codes_ = {{"/proj/app.py", "main", 1}, {"/usr/lib/python3/lib.py", "helper", 50}};
    config_.program_paths = {"/proj"};
    config_.library_prefixes = {"/usr/lib/python3"};
    stats_.reset(0);
  }

  // A sampled allocation on `frames` (innermost first) at second `t`, by thread `tid`;
  // returns its id.
  uint32_t alloc(std::vector<FrameKey> frames, uint64_t t, int64_t bytes, uint64_t python_bytes,
                 int32_t tid = 1) {
    Times times;
    times.mem_samples = 1;
    times.alloc_bytes = static_cast<uint64_t>(bytes);
    times.alloc_python_bytes = python_bytes;
    const size_t stack = stacks_.add(frames.data(), frames.size(), false, times);
    footprint_ += bytes;
    // The line the model will attribute it to: the first frame in /proj.
    uint64_t key = kNoLineKey;
    for (const FrameKey& f : frames) {
      if (f.code_id == 0) {
        key = line_key(f.code_id, f.line);
        break;
      }
    }
    const uint32_t id = ++next_id_;
    sizes_[id] = bytes;
    stats_.add_alloc(stack, key, !frames.empty(), tid, t * kSecond, bytes, footprint_, true, id);
    return id;
  }
  void free_sample(uint32_t id, uint64_t t) {
    footprint_ -= sizes_.at(id);
    stats_.sampled_free(id, t * kSecond, footprint_);
  }

  JsonValue build_json(double elapsed_s) {
    stats_.finish();
    const ProfileModel m = ProfileModel::build(stacks_, codes_, FileFilter(config_), {}, &stats_);
    RunInfo run;
    run.elapsed_s = elapsed_s;
    run.memory.profiled = true;
    run.memory.window_mb = 1;
    run.memory.copy_window_mb = 2;
    const std::string text = m.to_json({}, run, {}, stacks_, codes_);
    std::string error;
    auto doc = JsonParser::parse(text, &error);
    EXPECT_TRUE(doc.has_value()) << error << "\n" << text;
    return doc.value_or(JsonValue{});
  }

  std::vector<CodeInfo> codes_;
  FilterConfig config_;
  StackTable stacks_;
  MemoryStats stats_;
  int64_t footprint_ = 0;
  uint32_t next_id_ = 0;
  std::map<uint32_t, int64_t> sizes_;
};

TEST_F(MemoryJsonTest, LinesCarryAllocationSplitShareAndLeaks) {
  // Line 3 keeps 1 MiB per sample (Python), 30 times, run by 5 threads in turn (5
  // executions: a leak is what repeated executions leave behind); line 4 allocates 10 MiB
  // natively inside a library helper and frees it at once, 5 times.
  for (uint64_t i = 0; i < 30; ++i) alloc({{0, 3}}, i, kMiB, kMiB, static_cast<int32_t>(i % 5) + 1);
  for (uint64_t i = 0; i < 5; ++i)
    free_sample(alloc({{1, 60}, {0, 4}}, 30 + i, 10 * kMiB, 0), 30 + i);
  EXPECT_TRUE(any_leak(stats_));  // asked before the collector's last pass at the end
  const JsonValue doc = build_json(40.0);
  EXPECT_TRUE(member(doc, "memory_profiled").boolean);
  EXPECT_DOUBLE_EQ(member(doc, "mem_alloc_mb").number, 80.0);
  EXPECT_DOUBLE_EQ(member(doc, "mem_free_mb").number, 50.0);
  EXPECT_DOUBLE_EQ(member(doc, "mem_python_fraction").number, 30.0 / 80.0);
  EXPECT_DOUBLE_EQ(member(doc, "max_footprint_mb").number, 40.0);
  EXPECT_EQ(member(doc, "max_footprint_file").string, "/proj/app.py");
  EXPECT_EQ(member(doc, "max_footprint_lineno").number, 4);
  EXPECT_LE(member(doc, "footprint_timeline").array.size(), 200u);

  const JsonValue& file = member(member(doc, "files"), "/proj/app.py");
  const JsonValue* three = line(file, 3);
  const JsonValue* four = line(file, 4);
  ASSERT_NE(three, nullptr);
  ASSERT_NE(four, nullptr);
  EXPECT_DOUBLE_EQ(member(*three, "mem_alloc_mb").number, 30.0);
  EXPECT_DOUBLE_EQ(member(*three, "mem_python_fraction").number, 1.0);
  EXPECT_DOUBLE_EQ(member(*three, "mem_share").number, 30.0 / 80.0);
  // The first thread's execution spans them all: at its last sample (the 26th) the line's
  // live bytes had risen by 26 MiB.
  EXPECT_DOUBLE_EQ(member(*three, "mem_peak_mb").number, 26.0);
  EXPECT_DOUBLE_EQ(member(*four, "mem_python_fraction").number, 0.0);
  EXPECT_DOUBLE_EQ(member(*four, "mem_peak_mb").number, 10.0);
  // Its samples follow each other with no other line between: one execution of 50 MiB.
  EXPECT_DOUBLE_EQ(member(*four, "mem_avg_mb").number, 50.0);
  EXPECT_LE(member(*three, "mem_timeline").array.size(), 100u);
  EXPECT_EQ(member(*four, "mem_samples").number, 5);  // frees have no stack of their own
  EXPECT_DOUBLE_EQ(member(*four, "mem_freed_mb").number, 50.0);
  EXPECT_DOUBLE_EQ(member(*four, "mem_live_end_mb").number, 0.0);
  EXPECT_DOUBLE_EQ(member(*four, "mem_live_at_peak_mb").number, 10.0);
  EXPECT_DOUBLE_EQ(member(*three, "mem_live_at_peak_mb").number, 30.0);
  EXPECT_DOUBLE_EQ(member(*three, "mem_live_end_mb").number, 30.0);

  const JsonValue& leaks = member(file, "leaks");
  ASSERT_EQ(leaks.array.size(), 1u);
  EXPECT_EQ(member(leaks.array[0], "lineno").number, 3);
  EXPECT_GE(member(leaks.array[0], "likelihood").number, 0.95);
  // 27 MiB from the first of 16 points (2.1 s in) to the end (34 s), over 15/16 of the span.
  EXPECT_NEAR(member(leaks.array[0], "rate_mb_s").number, 27.0 / (34.0 * 15 / 16), 1e-9);
}

TEST_F(MemoryJsonTest, NoLeakWhenTheLineFreedItsBlocks) {
  std::vector<uint32_t> ids;
  // Five threads in turn, as in the test above: a leak until its blocks are freed.
  for (uint64_t i = 0; i < 30; ++i) {
    ids.push_back(alloc({{0, 3}}, i, kMiB, kMiB, static_cast<int32_t>(i % 5) + 1));
  }
  EXPECT_TRUE(any_leak(stats_));
  for (uint32_t id : ids) free_sample(id, 31);  // everything freed before the end
  EXPECT_FALSE(any_leak(stats_));
  const JsonValue doc = build_json(32.0);
  const JsonValue& file = member(member(doc, "files"), "/proj/app.py");
  EXPECT_TRUE(member(file, "leaks").array.empty());
}

TEST_F(MemoryJsonTest, ThreadsWithoutPythonFramesAreCountedApart) {
  alloc({}, 1, 5 * kMiB, 0);
  alloc({{0, 3}}, 2, kMiB, 0);
  const JsonValue doc = build_json(3.0);
  EXPECT_DOUBLE_EQ(member(doc, "native_thread_alloc_mb").number, 5.0);
  EXPECT_DOUBLE_EQ(member(member(doc, "unattributed"), "samples").number, 0.0);
}

TEST(MemoryJsonTimeline, RoundedToWhatAChartShowsAndStillIncreasing) {
  // The span is 2 s: times to 1/10,000 s; footprints to four significant digits. The
  // second and third points round to one time: the later one's footprint stands.
  const std::vector<TimePoint> points = {{0.00012345678, 0.3870754 * kMiB},
                                         {1.00001, 2.0 * kMiB},
                                         {1.000012, 3.0 * kMiB},
                                         {2.0, 5.5 * kMiB}};
  JsonWriter w;
  write_timeline(w, points);
  EXPECT_EQ(w.str(), "[[0.0001,0.3871],[1,3],[2,5.5]]");
}

TEST(MemoryJsonTimeline, AnHourLongRunKeepsTenthsOfASecond) {
  const std::vector<TimePoint> points = {{0.123, 1000.4 * kMiB}, {3600.04, 12345.6 * kMiB}};
  JsonWriter w;
  write_timeline(w, points);
  EXPECT_EQ(w.str(), "[[0.1,1000],[3600,12346]]");
}

}  // namespace
}  // namespace spyglass
