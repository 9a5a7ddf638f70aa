#include "core/profile_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/file_filter.hpp"
#include "core/stack_table.hpp"
#include "core/times.hpp"
#include "json_test_util.hpp"

namespace spyglass {
namespace {

using spyglass_test::JsonParser;
using spyglass_test::JsonValue;
using Frames = std::vector<FrameKey>;

Times make_times(uint64_t python_ns, uint64_t native_ns, uint64_t system_ns, uint64_t wait_ns,
                 uint64_t samples) {
  Times t;
  t.python_ns = python_ns;
  t.native_ns = native_ns;
  t.system_ns = system_ns;
  t.wait_ns = wait_ns;
  t.samples = samples;
  return t;
}

Times sum(std::initializer_list<Times> parts) {
  Times t;
  for (const Times& p : parts) t += p;
  return t;
}

void expect_times_eq(const Times& actual, const Times& expected, const std::string& what) {
  EXPECT_EQ(actual.python_ns, expected.python_ns) << what;
  EXPECT_EQ(actual.native_ns, expected.native_ns) << what;
  EXPECT_EQ(actual.system_ns, expected.system_ns) << what;
  EXPECT_EQ(actual.wait_ns, expected.wait_ns) << what;
  EXPECT_EQ(actual.samples, expected.samples) << what;
}

// Code ids of the fixture.
enum : uint32_t {
  kMain = 0,     // /proj/app.py main, first line 1
  kWork = 1,     // /proj/app.py work, first line 10
  kDumps = 2,    // stdlib json.dumps: a library
  kHelper = 3,   // /proj/util.py helper, first line 5
  kWork2 = 4,    // /proj/app.py work again (redefined), first line 30
  kFrozen = 5,   // <frozen importlib._bootstrap>
  kMissing = 99  // an id the code table does not know
};

class ProfileModelTest : public ::testing::Test {
 protected:
  ProfileModelTest() {
    codes_ = {
        {"/proj/app.py", "main", 1},
        {"/proj/app.py", "work", 10},
        {"/usr/lib/python3.12/json/__init__.py", "dumps", 200},
        {"/proj/util.py", "helper", 5},
        {"/proj/app.py", "work", 30},
        {"<frozen importlib._bootstrap>", "_call_with_frames_removed", 1},
    };
    config_.program_paths = {"/proj"};
    config_.library_prefixes = {"/usr/lib/python3.12"};

    // Innermost first, as the sampler resolves them.
    add("A", {{kDumps, 210}, {kWork, 12}, {kMain, 3}}, false, make_times(1000, 500, 20, 0, 3));
    add("B", {{kWork, 12}, {kMain, 3}}, false, make_times(2000, 0, 0, 0, 2));
    add("C", {{kHelper, 6}, {kWork, 13}, {kMain, 3}}, false, make_times(300, 30, 3, 0, 1));
    add("D", {{kDumps, 205}}, false, make_times(0, 7000, 0, 0, 4));
    add("E", {}, false, make_times(0, 9000, 100, 0, 5));
    add("F", {{kWork2, 31}, {kMain, 4}}, false, make_times(0, 0, 0, 4000000, 0));
    add("G", {{kFrozen, 1}, {kMain, 5}}, true, make_times(50, 0, 0, 0, 1));
    add("H", {{kMissing, 7}, {kMain, 6}}, false, make_times(60, 0, 0, 0, 1));
    threads_ = {{30, "worker", make_times(10, 0, 0, 0, 1)},
                {7, "", make_times(20, 0, 0, 0, 2)},
                {12, "MainThread", make_times(30, 0, 0, 0, 3)}};
  }

  void add(const std::string& name, const Frames& frames, bool truncated, const Times& t) {
    stacks_.add(frames.data(), frames.size(), truncated, t);
    times_[name] = t;
    frames_[name] = frames;
    truncated_[name] = truncated;
  }

  ProfileModel build() const {
    return ProfileModel::build(stacks_, codes_, FileFilter(config_), threads_);
  }

  const Times& t(const std::string& name) { return times_.at(name); }

  std::vector<CodeInfo> codes_;
  FilterConfig config_;
  StackTable stacks_;
  std::vector<ThreadInfo> threads_;
  std::map<std::string, Times> times_;
  std::map<std::string, Frames> frames_;
  std::map<std::string, bool> truncated_;
};

TEST_F(ProfileModelTest, AttributesEachStackToItsInnermostProfiledFrame) {
  const ProfileModel m = build();
  ASSERT_EQ(m.files().size(), 2u);
  ASSERT_EQ(m.files().count("/proj/app.py"), 1u);
  ASSERT_EQ(m.files().count("/proj/util.py"), 1u);
  EXPECT_EQ(m.files().count("/usr/lib/python3.12/json/__init__.py"), 0u);

  const FileStats& app = m.files().at("/proj/app.py");
  // A passes over the library frame to work:12; B is work:12 directly; C goes to util.py.
  // F is in the second `work`; G skips the (unprofiled) frozen frame; H the unknown code.
  std::map<int, Times> expected_lines = {
      {12, sum({t("A"), t("B")})}, {31, t("F")}, {5, t("G")}, {6, t("H")}};
  ASSERT_EQ(app.lines.size(), expected_lines.size());
  for (const auto& [line, times] : expected_lines) {
    ASSERT_EQ(app.lines.count(line), 1u) << "line " << line;
    expect_times_eq(app.lines.at(line), times, "app.py line " + std::to_string(line));
  }
  EXPECT_EQ(app.lines.count(3), 0u) << "an outer frame got the time of an inner one";
  EXPECT_EQ(app.lines.count(13), 0u) << "work:13 is not innermost in C";

  const FileStats& util = m.files().at("/proj/util.py");
  ASSERT_EQ(util.lines.size(), 1u);
  expect_times_eq(util.lines.at(6), t("C"), "util.py line 6");
}

TEST_F(ProfileModelTest, UnattributedWhenNoFrameIsProfiled) {
  const ProfileModel m = build();
  // D has only a library frame, E no Python frame at all.
  expect_times_eq(m.unattributed(), sum({t("D"), t("E")}), "unattributed");
}

TEST_F(ProfileModelTest, TotalsAddUp) {
  const ProfileModel m = build();
  Times all;
  for (const auto& [name, times] : times_) all += times;
  expect_times_eq(m.total(), all, "total");

  Times attributed = m.unattributed();
  for (const auto& [path, file] : m.files()) {
    Times lines;
    for (const auto& [line, times] : file.lines) lines += times;
    expect_times_eq(file.times, lines, path + ": file = sum of lines");
    Times functions;
    for (const auto& [key, times] : file.functions) functions += times;
    expect_times_eq(file.times, functions, path + ": file = sum of functions");
    attributed += file.times;
  }
  expect_times_eq(attributed, all, "files + unattributed = total");
}

TEST_F(ProfileModelTest, FunctionsAreKeyedByFirstLineAndName) {
  const ProfileModel m = build();
  const FileStats& app = m.files().at("/proj/app.py");
  ASSERT_EQ(app.functions.size(), 3u);
  using Key = std::pair<int, std::string>;
  expect_times_eq(app.functions.at(Key{10, "work"}), sum({t("A"), t("B")}), "work@10");
  expect_times_eq(app.functions.at(Key{30, "work"}), t("F"), "work@30");
  expect_times_eq(app.functions.at(Key{1, "main"}), sum({t("G"), t("H")}), "main@1");
  const FileStats& util = m.files().at("/proj/util.py");
  ASSERT_EQ(util.functions.size(), 1u);
  expect_times_eq(util.functions.at(Key{5, "helper"}), t("C"), "helper@5");
}

TEST_F(ProfileModelTest, ThreadsAreSortedByTid) {
  const ProfileModel m = build();
  ASSERT_EQ(m.threads().size(), 3u);
  EXPECT_EQ(m.threads()[0].tid, 7);
  EXPECT_EQ(m.threads()[1].tid, 12);
  EXPECT_EQ(m.threads()[2].tid, 30);
  EXPECT_EQ(m.threads()[1].name, "MainThread");
  EXPECT_EQ(m.threads()[2].times.python_ns, 10u);
}

TEST_F(ProfileModelTest, ProfiledFunctionsMoveAttributionOutward) {
  // Narrowed to main() only: every stack through main lands on main's own line.
  config_.functions = {{"/proj/app.py", 1}};
  const ProfileModel m = build();
  ASSERT_EQ(m.files().size(), 1u);
  const FileStats& app = m.files().at("/proj/app.py");
  expect_times_eq(app.lines.at(3), sum({t("A"), t("B"), t("C")}), "main:3");
  expect_times_eq(app.lines.at(4), t("F"), "main:4");
  expect_times_eq(app.lines.at(5), t("G"), "main:5");
  expect_times_eq(app.lines.at(6), t("H"), "main:6");
  ASSERT_EQ(app.functions.size(), 1u);
  expect_times_eq(m.unattributed(), sum({t("D"), t("E")}), "unattributed");
}

TEST_F(ProfileModelTest, NothingProfiledMeansEverythingUnattributed) {
  config_.program_paths = {"/elsewhere"};
  const ProfileModel m = build();
  EXPECT_TRUE(m.files().empty());
  expect_times_eq(m.unattributed(), m.total(), "unattributed");
}

TEST(ProfileModelEmptyTest, EmptyTableGivesAnEmptyModel) {
  const StackTable stacks;
  const std::vector<CodeInfo> codes;
  const ProfileModel m = ProfileModel::build(stacks, codes, FileFilter(FilterConfig{}), {});
  EXPECT_TRUE(m.total().empty());
  EXPECT_TRUE(m.unattributed().empty());
  EXPECT_TRUE(m.files().empty());
  EXPECT_TRUE(m.threads().empty());
  const auto doc = JsonParser::parse(m.to_json({}, RunInfo{}, {}, stacks, codes));
  ASSERT_TRUE(doc.has_value());
  const JsonValue* frames = doc->find("frames");
  ASSERT_NE(frames, nullptr);
  ASSERT_EQ(frames->array.size(), 1u);  // only the truncation marker
  ASSERT_NE(doc->find("frame_files"), nullptr);
  ASSERT_EQ(doc->find("frame_files")->array.size(), 1u);
  EXPECT_EQ(doc->find("frame_files")->array[0].string, "<truncated>");
  EXPECT_EQ(frames->array[0].find("file")->number_text, "0");
  ASSERT_NE(doc->find("stacks"), nullptr);
  EXPECT_TRUE(doc->find("stacks")->array.empty());
}

TEST(ProfileModelTest2, NsToSeconds) {
  EXPECT_DOUBLE_EQ(ns_to_s(0), 0.0);
  EXPECT_DOUBLE_EQ(ns_to_s(1500000000), 1.5);
  EXPECT_DOUBLE_EQ(ns_to_s(1), 1e-9);
}

// ---------------------------------------------------------------- to_json

class ProfileJsonTest : public ProfileModelTest {
 protected:
  JsonValue document(const MetaMembers& meta) {
    const ProfileModel m = build();
    RunInfo run;
    run.elapsed_s = 2.5;
    run.interval_s = 0.01;
    run.dropped_samples = 17;
    const std::string text = m.to_json(meta, run, sources_, stacks_, codes_);
    std::string error;
    auto doc = JsonParser::parse(text, &error);
    if (!doc.has_value()) {
      ADD_FAILURE() << "to_json output does not parse: " << error << "\n" << text;
      return {};
    }
    return *doc;
  }

  static const JsonValue& member(const JsonValue& obj, const std::string& key) {
    static const JsonValue kMissingValue;
    const JsonValue* v = obj.find(key);
    EXPECT_NE(v, nullptr) << "missing member " << key;
    return v != nullptr ? *v : kMissingValue;
  }

  static void expect_seconds(const JsonValue& obj, const Times& t, const std::string& what) {
    const std::pair<const char*, uint64_t> fields[] = {{"cpu_python_s", t.python_ns},
                                                       {"cpu_native_s", t.native_ns},
                                                       {"cpu_system_s", t.system_ns},
                                                       {"wait_s", t.wait_ns},
                                                       {"await_s", t.await_ns}};
    for (const auto& [key, ns] : fields) {
      const JsonValue& v = member(obj, key);
      ASSERT_TRUE(v.is_number()) << what << "." << key;
      EXPECT_NEAR(v.number, static_cast<double>(ns) / 1e9, 1e-15 + static_cast<double>(ns) * 1e-17)
          << what << "." << key;
    }
    const JsonValue& samples = member(obj, "samples");
    ASSERT_TRUE(samples.is_number()) << what;
    EXPECT_EQ(samples.number_text, std::to_string(t.samples)) << what;
  }

  // A thread's or a stack's row: its figures that are 0 are left out, the others written.
  static void expect_row_figures(const JsonValue& row, const Times& t, const std::string& what) {
    const std::pair<const char*, uint64_t> fields[] = {
        {"cpu_python_s", t.python_ns}, {"cpu_native_s", t.native_ns}, {"cpu_system_s", t.system_ns},
        {"wait_s", t.wait_ns},         {"await_s", t.await_ns},       {"cpu_gc_s", t.gc_ns}};
    for (const auto& [key, ns] : fields) {
      const JsonValue* v = row.find(key);
      if (ns == 0) {
        EXPECT_EQ(v, nullptr) << what << "." << key << " is 0 and still written";
        continue;
      }
      ASSERT_NE(v, nullptr) << what << "." << key;
      ASSERT_TRUE(v->is_number()) << what << "." << key;
      EXPECT_NEAR(v->number, static_cast<double>(ns) / 1e9, static_cast<double>(ns) * 1e-17)
          << what << "." << key;
    }
    const JsonValue* samples = row.find("samples");
    if (t.samples == 0) {
      EXPECT_EQ(samples, nullptr) << what;
    } else {
      ASSERT_NE(samples, nullptr) << what;
      EXPECT_EQ(samples->number_text, std::to_string(t.samples)) << what;
    }
  }

  // The file a frame of the frame table names, by its index in frame_files.
  static std::string frame_file(const JsonValue& doc, const JsonValue& frame) {
    const JsonValue& files = member(doc, "frame_files");
    const JsonValue& index = member(frame, "file");
    EXPECT_TRUE(index.is_number());
    const auto i = static_cast<size_t>(index.number);
    EXPECT_LT(i, files.array.size());
    return i < files.array.size() ? files.array[i].string : std::string();
  }

  std::unordered_map<std::string, std::vector<std::string>> sources_ = {
      {"/proj/app.py",
       {"def main():", "    work()", "    work()", "    again()", "    x", "    y", "", "", "",
        "def work():", "    pass", "    s = \"quoted\\path\" \xE9"}},
  };
};

TEST_F(ProfileJsonTest, HeaderAndMetaMembers) {
  const JsonValue doc = document({{"program", R"("/proj/app.py")"},
                                  {"argv", R"(["app.py", "--n", "3"])"},
                                  {"exit_status", "0"},
                                  {"options", R"({"profile_all": false, "functions": []})"}});
  ASSERT_TRUE(doc.is_object());
  EXPECT_FALSE(doc.duplicate_keys);
  ASSERT_GE(doc.object.size(), 2u);
  EXPECT_EQ(doc.object[0].first, "format");
  EXPECT_EQ(doc.object[0].second.string, "spyglass-profile");
  EXPECT_EQ(doc.object[1].first, "schema_version");
  EXPECT_EQ(doc.object[1].second.number_text, std::to_string(spyglass::kSchemaVersion));
  EXPECT_FALSE(member(doc, "memory_profiled").boolean);

  EXPECT_EQ(member(doc, "program").string, "/proj/app.py");
  const JsonValue& argv = member(doc, "argv");
  ASSERT_TRUE(argv.is_array());
  ASSERT_EQ(argv.array.size(), 3u);
  EXPECT_EQ(argv.array[2].string, "3");
  EXPECT_EQ(member(doc, "exit_status").number_text, "0");
  EXPECT_TRUE(member(doc, "options").is_object());
  EXPECT_TRUE(member(member(doc, "options"), "functions").is_array());

  EXPECT_DOUBLE_EQ(member(doc, "elapsed_s").number, 2.5);
  EXPECT_DOUBLE_EQ(member(doc, "interval_s").number, 0.01);
  EXPECT_EQ(member(doc, "dropped_samples").number_text, "17");
}

TEST_F(ProfileJsonTest, MetaMembersOfEveryKindGoInAsGiven) {
  const MetaMembers none;
  const MetaMembers every = {{"only", "true"},      {"nothing", "null"},    {"n", "-1.5e3"},
                             {"text", R"("a\"b")"}, {"list", R"([1, {}])"}, {"obj", "{}"}};
  for (const MetaMembers* meta : {&none, &every}) {
    const JsonValue doc = document(*meta);
    ASSERT_TRUE(doc.is_object());
    EXPECT_FALSE(doc.duplicate_keys);
    EXPECT_EQ(member(doc, "format").string, "spyglass-profile");
    EXPECT_NE(doc.find("files"), nullptr);
  }
  const JsonValue doc = document(every);
  EXPECT_TRUE(member(doc, "only").boolean);
  EXPECT_EQ(member(doc, "text").string, "a\"b");
  EXPECT_EQ(member(doc, "n").number_text, "-1.5e3");
  EXPECT_EQ(member(doc, "list").array.size(), 2u);
  EXPECT_TRUE(member(doc, "obj").is_object());
}

TEST_F(ProfileJsonTest, TotalsUnattributedAndThreads) {
  const JsonValue doc = document({});
  const ProfileModel m = build();
  expect_seconds(doc, m.total(), "top level");
  expect_seconds(member(doc, "unattributed"), sum({t("D"), t("E")}), "unattributed");

  const JsonValue& threads = member(doc, "threads");
  ASSERT_TRUE(threads.is_array());
  ASSERT_EQ(threads.array.size(), 3u);
  EXPECT_EQ(member(threads.array[0], "tid").number_text, "7");
  EXPECT_TRUE(member(threads.array[0], "name").is_null());  // empty name is written as null
  EXPECT_EQ(member(threads.array[1], "tid").number_text, "12");
  EXPECT_EQ(member(threads.array[1], "name").string, "MainThread");
  EXPECT_EQ(member(threads.array[2], "tid").number_text, "30");
  expect_row_figures(threads.array[2], make_times(10, 0, 0, 0, 1), "thread 30");
}

TEST_F(ProfileJsonTest, TasksAreWrittenLongestAwaitFirstAndOnlyWhenThereAreAny) {
  ProfileModel m = build();
  const auto without = JsonParser::parse(m.to_json({}, RunInfo{}, sources_, stacks_, codes_));
  ASSERT_TRUE(without.has_value());
  EXPECT_EQ(without->find("tasks"), nullptr);
  m.attach_tasks({{"Task-3", "short_wait", 300'000'000}, {"Task-2", "long_wait", 600'000'000}});
  const auto doc = JsonParser::parse(m.to_json({}, RunInfo{}, sources_, stacks_, codes_));
  ASSERT_TRUE(doc.has_value());
  const JsonValue& tasks = member(*doc, "tasks");
  ASSERT_EQ(tasks.array.size(), 2u);
  EXPECT_EQ(member(tasks.array[0], "name").string, "Task-2");
  EXPECT_EQ(member(tasks.array[0], "coroutine").string, "long_wait");
  EXPECT_DOUBLE_EQ(member(tasks.array[0], "await_s").number, 0.6);
  EXPECT_EQ(member(tasks.array[1], "name").string, "Task-3");
}

TEST_F(ProfileJsonTest, FilesLinesAndFunctions) {
  const JsonValue doc = document({});
  const JsonValue& files = member(doc, "files");
  ASSERT_TRUE(files.is_object());
  ASSERT_EQ(files.object.size(), 2u);
  EXPECT_FALSE(files.duplicate_keys);

  const JsonValue& app = member(files, "/proj/app.py");
  expect_seconds(app, sum({t("A"), t("B"), t("F"), t("G"), t("H")}), "app.py");
  const JsonValue& lines = member(app, "lines");
  ASSERT_TRUE(lines.is_array());
  ASSERT_EQ(lines.array.size(), 4u);
  // In line order, each with its source text.
  const std::pair<int, std::string> expected[] = {
      {5, "    x"}, {6, "    y"}, {12, "    s = \"quoted\\path\" \xEF\xBF\xBD"}, {31, ""}};
  for (size_t i = 0; i < lines.array.size(); ++i) {
    const JsonValue& line = lines.array[i];
    EXPECT_EQ(member(line, "lineno").number_text, std::to_string(expected[i].first));
    EXPECT_EQ(member(line, "source").string, expected[i].second) << "line " << expected[i].first;
  }
  expect_seconds(lines.array[2], sum({t("A"), t("B")}), "app.py:12");
  expect_seconds(lines.array[3], t("F"), "app.py:31");

  const JsonValue& functions = member(app, "functions");
  ASSERT_TRUE(functions.is_array());
  ASSERT_EQ(functions.array.size(), 3u);
  std::map<std::pair<std::string, std::string>, const JsonValue*> by_key;
  for (const JsonValue& f : functions.array) {
    by_key[{member(f, "name").string, member(f, "first_lineno").number_text}] = &f;
  }
  ASSERT_EQ(by_key.size(), 3u);
  ASSERT_EQ(by_key.count({"work", "10"}), 1u);
  ASSERT_EQ(by_key.count({"work", "30"}), 1u);
  ASSERT_EQ(by_key.count({"main", "1"}), 1u);
  expect_seconds(*by_key.at({"work", "10"}), sum({t("A"), t("B")}), "work@10");
  expect_seconds(*by_key.at({"work", "30"}), t("F"), "work@30");

  // No source text given for util.py: its lines have an empty source.
  const JsonValue& util_lines = member(member(files, "/proj/util.py"), "lines");
  ASSERT_EQ(util_lines.array.size(), 1u);
  EXPECT_EQ(member(util_lines.array[0], "source").string, "");
}

TEST_F(ProfileJsonTest, StacksAreOutermostFirstWithTheTruncationMarker) {
  const JsonValue doc = document({});
  const JsonValue& frames = member(doc, "frames");
  ASSERT_TRUE(frames.is_array());
  ASSERT_FALSE(frames.array.empty());

  // The last frame-table entry is the truncation marker.
  const JsonValue& marker = frames.array.back();
  EXPECT_EQ(frame_file(doc, marker), "<truncated>");
  EXPECT_EQ(member(marker, "function").string, "<truncated>");
  // Each file is named once.
  std::map<std::string, int> named;
  for (const JsonValue& file : member(doc, "frame_files").array) {
    EXPECT_EQ(++named[file.string], 1) << "file named twice: " << file.string;
  }
  EXPECT_EQ(member(marker, "lineno").number_text, "0");
  const size_t marker_index = frames.array.size() - 1;

  // Each distinct (code, line) appears once.
  std::map<std::string, int> seen;
  for (size_t i = 0; i < marker_index; ++i) {
    const JsonValue& f = frames.array[i];
    const std::string id = frame_file(doc, f) + "|" + member(f, "function").string + "|" +
                           member(f, "lineno").number_text;
    EXPECT_EQ(++seen[id], 1) << "duplicate frame " << id;
  }

  auto describe = [&](const FrameKey& f) {
    const bool known = f.code_id < codes_.size();
    return (known ? codes_[f.code_id].file : std::string("<unknown>")) + "|" +
           (known ? codes_[f.code_id].name : std::string("<unknown>")) + "|" +
           std::to_string(f.line);
  };

  // Expected stacks, outermost first, by the name of the fixture stack.
  std::map<std::vector<std::string>, std::string> expected;
  for (const auto& [name, frames_inner_first] : frames_) {
    if (frames_inner_first.empty()) continue;  // E: no Python frame, not in "stacks"
    std::vector<std::string> outer_first;
    if (truncated_[name]) outer_first.push_back("<truncated>|<truncated>|0");
    for (auto it = frames_inner_first.rbegin(); it != frames_inner_first.rend(); ++it) {
      outer_first.push_back(describe(*it));
    }
    expected[outer_first] = name;
  }

  const JsonValue& stacks = member(doc, "stacks");
  ASSERT_TRUE(stacks.is_array());
  ASSERT_EQ(stacks.array.size(), expected.size());
  double previous_weight = HUGE_VAL;
  std::map<std::string, int> matched;
  for (const JsonValue& s : stacks.array) {
    const JsonValue& indices = member(s, "frames");
    ASSERT_TRUE(indices.is_array());
    std::vector<std::string> resolved;
    for (const JsonValue& idx : indices.array) {
      ASSERT_TRUE(idx.is_number());
      const auto i = static_cast<size_t>(std::stoul(idx.number_text));
      ASSERT_LT(i, frames.array.size());
      const JsonValue& f = frames.array[i];
      resolved.push_back(frame_file(doc, f) + "|" + member(f, "function").string + "|" +
                         member(f, "lineno").number_text);
    }
    const auto it = expected.find(resolved);
    ASSERT_NE(it, expected.end()) << "unexpected stack starting with "
                                  << (resolved.empty() ? "" : resolved[0]);
    ++matched[it->second];
    expect_row_figures(s, t(it->second), "stack " + it->second);

    // Heaviest first.
    const Times& w = t(it->second);
    const double weight = static_cast<double>(w.cpu_ns() + w.wait_ns);
    EXPECT_LE(weight, previous_weight) << "stacks not sorted by weight at " << it->second;
    previous_weight = weight;
  }
  EXPECT_EQ(matched.size(), expected.size());
  EXPECT_EQ(matched.at("G"), 1);
  // The truncated stack starts with the marker.
  for (const JsonValue& s : stacks.array) {
    const JsonValue& indices = member(s, "frames");
    for (size_t k = 1; k < indices.array.size(); ++k) {
      EXPECT_NE(indices.array[k].number_text, std::to_string(marker_index))
          << "the marker may only be the outermost entry";
    }
  }
}

TEST_F(ProfileJsonTest, ArbitraryBytesInNamesStillParse) {
  codes_[kHelper].file = "/proj/\xFF\xFEutil\".py";
  codes_[kHelper].name = "helper\n\x01\xC0\xAF";
  config_.program_paths = {"/proj"};
  const JsonValue doc = document({});
  const JsonValue& files = member(doc, "files");
  EXPECT_NE(files.find("/proj/\xEF\xBF\xBD\xEF\xBF\xBDutil\".py"), nullptr);
}

}  // namespace
}  // namespace spyglass
