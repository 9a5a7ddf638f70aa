#include "core/journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "json_test_util.hpp"

namespace spyglass {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A process's state and the journal that follows it, written the way the sampler does.
struct Recorder {
  JournalState state;  // what the sampler holds, named as the sampler names it
  JournalHeader& header = state.header;
  StackTable& stacks = state.stacks;
  std::vector<CodeInfo>& codes = state.codes;
  std::map<int32_t, Times>& threads = state.threads;
  MemoryStats& memory = state.memory;
  JournalWriter writer;
  std::string path;
  uint64_t now = 1'000;

  explicit Recorder(const char* name, bool with_memory = true) {
    path = ::testing::TempDir() + name + std::to_string(getpid());
    header.start_ns = 1'000;
    header.started_at = 1700000000.5;
    header.interval_ns = 10'000'000;
    header.memory = with_memory;
    header.window_bytes = 1 << 20;
    header.copy_window_bytes = 2 << 20;
    header.scope.profile_all = true;
    header.meta = {{"pid", "42"}, {"program", "\"kid.py\""}};
    memory.reset(header.start_ns);
    EXPECT_TRUE(writer.open(path, header));
  }
  ~Recorder() { std::remove(path.c_str()); }

  uint32_t code(const std::string& file, const std::string& name, int line) {
    codes.push_back(CodeInfo{file, name, line});
    writer.code(static_cast<uint32_t>(codes.size() - 1), codes.back());
    return static_cast<uint32_t>(codes.size() - 1);
  }
  size_t sample(std::vector<FrameKey> frames, int32_t tid, const Times& t) {
    const size_t before = stacks.size();
    const size_t index = stacks.add(frames.data(), frames.size(), false, t);
    if (stacks.size() != before) writer.stack(index, stacks.entries()[index]);
    writer.times(index, tid, t);
    threads[tid] += t;
    return index;
  }
  void alloc_sample(size_t stack, int64_t bytes, int64_t footprint, uint32_t id) {
    now += 1'000'000;
    memory.add_alloc(stack, stack, true, 7, now, bytes, footprint, true, id);
    writer.memory_alloc(stack, stack, true, 7, now, bytes, footprint, true, id);
  }
  void free_sample(uint32_t id, int64_t footprint) {
    now += 1'000'000;
    memory.sampled_free(id, now, footprint);
    writer.sampled_free(id, now, footprint);
  }
  JournalView view() {
    state.last_tick = tick();
    return state.view();
  }
  JournalTick tick() { return JournalTick{now, 3, 4}; }
  std::string expected_json() { return journal_profile_json(header, view()); }
};

Times cpu(uint64_t python_ns) {
  Times t;
  t.python_ns = python_ns;
  t.samples = 1;
  return t;
}

Times alloc(uint64_t bytes) {
  Times t;
  t.alloc_bytes = bytes;
  t.mem_samples = 1;
  return t;
}

JournalState replay(const std::string& bytes) {
  JournalState state;
  std::string error;
  EXPECT_TRUE(read_journal(bytes, &state, &error)) << error;
  return state;
}

TEST(Journal, ReplayRebuildsTheProfileOfTheLastTick) {
  Recorder rec("journal-replay");
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  const uint32_t work = rec.code("/app/kid.py", "work", 10);
  rec.sample({{work, 12}, {main, 3}}, 101, cpu(5'000'000));
  const size_t s = rec.sample({{work, 14}, {main, 3}}, 102, alloc(1 << 20));
  rec.alloc_sample(s, 1 << 19, 1 << 19, 1);
  rec.alloc_sample(s, 1 << 19, 1 << 20, 2);
  rec.writer.tick(rec.tick());
  rec.sample({{work, 12}, {main, 3}}, 101, cpu(7'000'000));
  rec.free_sample(1, 1 << 19);
  rec.writer.tick(rec.tick());

  const JournalState state = replay(read_file(rec.path));
  EXPECT_EQ(state.header.meta, rec.header.meta);
  EXPECT_TRUE(state.header.scope.profile_all);
  ASSERT_EQ(state.stacks.size(), 2u);
  EXPECT_EQ(state.stacks.entries()[0].times.python_ns, 12'000'000u);
  EXPECT_EQ(state.threads.at(101).samples, 2u);
  EXPECT_EQ(state.memory.final_footprint_bytes(), 1 << 19);
  EXPECT_EQ(state.memory.stacks().at(s).live_bytes, 1 << 19);
  EXPECT_EQ(state.memory.freed_bytes(), 1u << 19);
  // Replayed through the same code, the profile is the one the process would have written.
  EXPECT_EQ(journal_profile_json(state.header, state.view()), rec.expected_json());
  const auto doc = spyglass_test::JsonParser::parse(rec.expected_json());
  ASSERT_TRUE(doc.has_value());
  EXPECT_EQ(doc->find("pid")->number, 42);
  EXPECT_NEAR(doc->find("started_at")->number, 1700000000.5, 1e-6);
}

TEST(Journal, AwaitTimeIsJournalledWithTheOtherTimes) {
  Recorder rec("journal-await");
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  Times awaited;
  awaited.await_ns = 600'000'000;
  awaited.wait_ns = 200'000'000;
  rec.sample({{main, 4}}, 101, awaited);
  rec.writer.tick(rec.tick());

  const JournalState state = replay(read_file(rec.path));
  ASSERT_EQ(state.stacks.size(), 1u);
  EXPECT_EQ(state.stacks.entries()[0].times.await_ns, 600'000'000u);
  EXPECT_EQ(state.stacks.entries()[0].times.wait_ns, 200'000'000u);
  EXPECT_EQ(state.threads.at(101).await_ns, 600'000'000u);
}

TEST(Journal, AnIntervalCutShortByTheKillIsDropped) {
  Recorder rec("journal-cut");
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  rec.sample({{main, 2}}, 1, cpu(1'000'000));
  rec.writer.tick(rec.tick());
  const std::string whole = read_file(rec.path);
  const std::string expected = rec.expected_json();
  rec.sample({{main, 5}}, 1, cpu(9'000'000));
  rec.writer.tick(rec.tick());
  const std::string longer = read_file(rec.path);
  // Every prefix of the second interval replays to the first one's profile.
  for (size_t cut = whole.size(); cut < longer.size(); cut += 3) {
    const JournalState state = replay(longer.substr(0, cut));
    EXPECT_EQ(journal_profile_json(state.header, state.view()), expected) << cut;
  }
  EXPECT_EQ(replay(longer).stacks.size(), 2u);
}

TEST(Journal, CompactionKeepsTheStateAndShrinksTheFile) {
  Recorder rec("journal-compact");
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  size_t stack = 0;
  for (int i = 0; i < 20'000; ++i) {
    stack = rec.sample({{main, 2 + i % 5}}, 1, alloc(4096));
    // Every tenth block kept: the state holds live blocks, not every sample.
    const auto id = static_cast<uint32_t>(i + 1);
    rec.alloc_sample(stack, 4096, 4096 * (i / 10 + 1), id);
    if (i % 10 != 0) rec.free_sample(id, 4096 * (i / 10 + 1) - 4096);
    rec.writer.tick(rec.tick());
    if (rec.writer.wants_compaction()) rec.writer.compact(rec.view());
  }
  const std::string bytes = read_file(rec.path);
  EXPECT_LT(bytes.size(), 1'000'000u);  // 20,000 intervals of records would be ~2 MB
  const JournalState state = replay(bytes);
  EXPECT_EQ(journal_profile_json(state.header, state.view()), rec.expected_json());
  EXPECT_EQ(state.memory.max_footprint_bytes(), 4096 * 2'000);
  EXPECT_EQ(state.memory.final_footprint_bytes(), 4096 * 1'999);
}

TEST(Journal, NativeChainsAndObjectsSurviveReplayAndCompaction) {
  Recorder rec("journal-native", /*with_memory=*/false);
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  const size_t stack = rec.sample({{main, 2}}, 1, cpu(1'000'000));
  const std::vector<NativeObject> objects = {{0x1000, 0x2000, 0x9000, "/lib/libx.so"}};
  rec.state.objects = objects;
  rec.writer.native_objects(objects);
  const std::vector<uintptr_t> chain = {0x2010, 0x3020, 0x4030};
  for (int i = 0; i < 3; ++i) {
    rec.state.native[stack][chain] += NativeCost{1000, 1};
    rec.writer.native(stack, chain, NativeCost{1000, 1});
  }
  rec.writer.tick(rec.tick());
  JournalState state = replay(read_file(rec.path));
  ASSERT_EQ(state.objects.size(), 1u);
  EXPECT_EQ(state.objects[0].path, "/lib/libx.so");
  EXPECT_EQ(state.objects[0].begin, 0x2000u);
  EXPECT_EQ(state.native.at(stack).at(chain).ns, 3000u);
  EXPECT_EQ(state.native.at(stack).at(chain).samples, 3u);
  // A dump carries them too.
  rec.writer.compact(rec.view());
  state = replay(read_file(rec.path));
  EXPECT_EQ(state.objects.size(), 1u);
  EXPECT_EQ(state.native.at(stack).at(chain).ns, 3000u);
}

TEST(Journal, CpuOnlyRunsHaveNoMemoryState) {
  Recorder rec("journal-cpu", /*with_memory=*/false);
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  rec.sample({{main, 2}}, 1, cpu(1'000'000));
  rec.writer.tick(rec.tick());
  const JournalState state = replay(read_file(rec.path));
  EXPECT_EQ(state.view().memory, nullptr);
  EXPECT_EQ(rec.view().memory, nullptr);
  EXPECT_EQ(journal_profile_json(state.header, state.view()), rec.expected_json());
}

TEST(Journal, RejectsWhatIsNotAJournal) {
  JournalState state;
  std::string error;
  EXPECT_FALSE(read_journal("", &state, &error));
  EXPECT_FALSE(read_journal(std::string("{\"not\": \"a journal\"}"), &state, &error));
  // A complete interval behind a header that is not ours, or not this version's.
  auto journal_with = [](const std::string& magic, uint32_t version) {
    std::string payload;
    ByteWriter w(&payload);
    w.str(magic);
    w.u32(version);
    std::string bytes(1, '\x01');
    ByteWriter(&bytes).u32(static_cast<uint32_t>(payload.size()));
    bytes += payload;
    bytes += std::string(1, '\x0a') + std::string("\x18\0\0\0", 4) + std::string(24, '\0');
    return bytes;
  };
  EXPECT_FALSE(read_journal(journal_with("another-format", 1), &state, &error));
  EXPECT_EQ(error, "not a spyglass run journal");
  EXPECT_FALSE(read_journal(journal_with("spyglass-journal", 99), &state, &error));
  EXPECT_EQ(error, "a run journal of another spyglass version");
}

TEST(Journal, AJournalThatCannotBeRewrittenIsGivenUp) {
  Recorder rec("journal-gone");
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  ASSERT_EQ(std::remove(rec.path.c_str()), 0);
  const std::string dir = rec.path;  // a directory where the dump's temporary file must go
  for (int i = 0; i < 20'000 && rec.writer.is_open(); ++i) {
    rec.sample({{main, 2 + i % 5}}, 1, alloc(4096));
    rec.writer.tick(rec.tick());
    if (rec.writer.wants_compaction()) {
      ASSERT_EQ(mkdir((dir + ".tmp").c_str(), 0700), 0);  // the rewrite's file can't be made
      rec.writer.compact(rec.view());
      rmdir((dir + ".tmp").c_str());
    }
  }
  EXPECT_FALSE(rec.writer.is_open());  // not retried every interval, not grown forever
}

TEST(Journal, AnIdleIntervalWritesNothingButTheTimeOnceASecond) {
  Recorder rec("journal-idle");
  const size_t size = read_file(rec.path).size();
  rec.writer.tick(rec.tick());
  EXPECT_EQ(read_file(rec.path).size(), size);
  rec.now += 2'500'000'000;  // idle for 2.5 s: a recovered profile must not end earlier
  rec.writer.tick(rec.tick());
  const JournalState state = replay(read_file(rec.path));
  EXPECT_EQ(state.last_tick.now_ns, rec.now);
}

// The descriptor the writer holds on `path`, found as a program would find it.
int descriptor_of(const std::string& path) {
  DIR* dir = opendir("/proc/self/fd");
  int found = -1;
  char target[4096];
  while (dirent* e = dir != nullptr ? readdir(dir) : nullptr) {
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0 && std::string(target, static_cast<size_t>(n)) == path) found = atoi(e->d_name);
  }
  if (dir != nullptr) closedir(dir);
  return found;
}

TEST(Journal, ADescriptorTheProgramTookOverIsNeverWritten) {
  Recorder rec("journal-taken");
  const uint32_t main = rec.code("/app/kid.py", "main", 1);
  const int fd = descriptor_of(rec.path);
  ASSERT_GE(fd, 0);
  // The program closes everything and its own file lands on the journal's number.
  const std::string theirs = rec.path + ".program";
  const int own = ::open(theirs.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(own, 0);
  ASSERT_EQ(dup2(own, fd), fd);
  ::close(own);
  rec.sample({{main, 2}}, 1, cpu(1000));
  rec.writer.tick(rec.tick());
  EXPECT_FALSE(rec.writer.is_open());
  rec.writer.close();  // neither written nor closed: the number is the program's
  EXPECT_EQ(read_file(theirs), "");
  EXPECT_EQ(write(fd, "x", 1), 1);
  ::close(fd);
  EXPECT_EQ(read_file(theirs), "x");
  std::remove(theirs.c_str());
}

}  // namespace
}  // namespace spyglass
