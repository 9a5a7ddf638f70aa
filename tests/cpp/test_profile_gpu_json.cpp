// The GPU part of the JSON document: GPU readings charged to stacks, folded by the model
// into lines and functions, and written out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/file_filter.hpp"
#include "core/gpu_stats.hpp"
#include "core/profile_model.hpp"
#include "core/stack_table.hpp"
#include "json_test_util.hpp"

namespace spyglass {
namespace {

using spyglass_test::JsonParser;
using spyglass_test::JsonValue;

constexpr double kMiB = 1 << 20;
constexpr double kSecond = 1e9;

const JsonValue& member(const JsonValue& obj, const std::string& key) {
  static const JsonValue kMissing;
  const JsonValue* v = obj.find(key);
  EXPECT_NE(v, nullptr) << "missing member " << key;
  return v != nullptr ? *v : kMissing;
}

const JsonValue& entry(const JsonValue& doc, const char* list, const char* key, int value) {
  static const JsonValue kMissing;
  for (const JsonValue& x : member(member(member(doc, "files"), "/proj/app.py"), list).array) {
    if (member(x, key).number == value) return x;
  }
  ADD_FAILURE() << "no entry " << key << "=" << value << " in " << list;
  return kMissing;
}

class GpuJsonTest : public ::testing::Test {
 protected:
  GpuJsonTest() {
    codes_ = {{"/proj/app.py", "main", 1}, {"/usr/lib/python3/lib.py", "helper", 50}};
    config_.program_paths = {"/proj"};
    config_.library_prefixes = {"/usr/lib/python3"};
  }

  size_t stack(std::vector<FrameKey> frames) {
    Times t;
    t.samples = 1;
    t.python_ns = 10'000'000;
    return stacks_.add(frames.data(), frames.size(), false, t);
  }

  JsonValue build_json(const GpuStats* gpu) {
    const ProfileModel m =
        ProfileModel::build(stacks_, codes_, FileFilter(config_), {}, nullptr, gpu);
    RunInfo run;
    run.elapsed_s = 2;
    const std::string text = m.to_json({}, run, {}, stacks_, codes_);
    std::string error;
    auto doc = JsonParser::parse(text, &error);
    EXPECT_TRUE(doc.has_value()) << error << "\n" << text;
    return doc.value_or(JsonValue{});
  }

  std::vector<CodeInfo> codes_;
  FilterConfig config_;
  StackTable stacks_;
};

TEST_F(GpuJsonTest, NoGpuStatsWriteNoGpuKeys) {
  stack({{0, 3}});
  const JsonValue doc = build_json(nullptr);
  EXPECT_EQ(doc.find("gpu_profiled"), nullptr);
  EXPECT_EQ(entry(doc, "lines", "lineno", 3).find("gpu_util_pct"), nullptr);
}

TEST_F(GpuJsonTest, ReadingsFoldIntoLinesFunctionsAndDevices) {
  // Line 3 ran through a library: attributed to line 3 like its own stack.
  const size_t busy = stack({{0, 3}});
  const size_t busy_via_lib = stack({{1, 60}, {0, 3}});
  const size_t idle = stack({{0, 5}});
  GpuStats gpu;
  gpu.set_devices({GpuDeviceInfo{"A", 16e9, true, true}, GpuDeviceInfo{"B", 16e9, true, false}});
  // Slot 0 is both devices: utilisation averaged, memory summed.
  const std::vector<double> hot_util = {50, 100, 0};
  const std::vector<double> hot_bytes = {1000 * kMiB, 1000 * kMiB, 0};
  gpu.charge(busy, 0.5 * kSecond, hot_util, hot_bytes);
  gpu.charge(busy_via_lib, 0.5 * kSecond, hot_util, {500 * kMiB, 500 * kMiB, 0});
  gpu.charge(idle, 1 * kSecond, {0, 0, 0}, {100 * kMiB, 100 * kMiB, 0});
  gpu.charge(GpuStats::kNoStack, 0.5 * kSecond, {10, 20, 0}, {0, 0, 0});  // all, A, B
  gpu.add_memory_point(0.5, 1000 * kMiB);
  gpu.set_note("NVML stopped answering");
  const JsonValue doc = build_json(&gpu);

  EXPECT_TRUE(member(doc, "gpu_profiled").boolean);
  EXPECT_FALSE(member(doc, "gpu_per_process").boolean);  // device B's memory is device-wide
  EXPECT_EQ(member(doc, "gpu_note").string, "NVML stopped answering");
  // Busy seconds over both devices: 1 s at 100% on A, and the unattributed 0.5 s at 20% on A.
  EXPECT_NEAR(member(doc, "gpu_busy_s").number, 1.0 + 0.1, 1e-9);
  EXPECT_NEAR(member(doc, "gpu_unattributed_busy_s").number, 0.1, 1e-9);
  EXPECT_DOUBLE_EQ(member(doc, "gpu_peak_mem_mb").number, 1000);
  ASSERT_EQ(member(doc, "gpu_devices").array.size(), 2u);
  EXPECT_EQ(member(member(doc, "gpu_devices").array[1], "name").string, "B");
  EXPECT_FALSE(member(member(doc, "gpu_devices").array[1], "memory_per_process").boolean);

  const JsonValue& hot = entry(doc, "lines", "lineno", 3);
  EXPECT_DOUBLE_EQ(member(hot, "gpu_util_pct").number, 50);
  EXPECT_DOUBLE_EQ(member(hot, "gpu_observed_s").number, 1);
  EXPECT_DOUBLE_EQ(member(hot, "gpu_busy_s").number, 1);
  EXPECT_DOUBLE_EQ(member(hot, "gpu_mem_mb").number, 750);
  EXPECT_DOUBLE_EQ(member(hot, "gpu_peak_mem_mb").number, 1000);
  EXPECT_NEAR(member(hot, "gpu_share").number, 1.0 / 1.1, 1e-9);
  const auto& devices = member(hot, "gpu_devices").array;
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_DOUBLE_EQ(member(devices[0], "util_pct").number, 100);
  EXPECT_DOUBLE_EQ(member(devices[1], "util_pct").number, 0);

  const JsonValue& cold = entry(doc, "lines", "lineno", 5);
  EXPECT_DOUBLE_EQ(member(cold, "gpu_util_pct").number, 0);
  EXPECT_DOUBLE_EQ(member(cold, "gpu_mem_mb").number, 100);
  EXPECT_DOUBLE_EQ(member(cold, "gpu_share").number, 0);

  const JsonValue& fn = entry(doc, "functions", "first_lineno", 1);
  EXPECT_DOUBLE_EQ(member(fn, "gpu_observed_s").number, 2);
  EXPECT_DOUBLE_EQ(member(fn, "gpu_util_pct").number, 25);
  EXPECT_DOUBLE_EQ(member(fn, "gpu_peak_mem_mb").number, 1000);
}

}  // namespace
}  // namespace spyglass
