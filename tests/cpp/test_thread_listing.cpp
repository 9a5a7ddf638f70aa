// Tests of listing and naming this process's threads (platform/threads.hpp): the listing
// every tick of the collector's control thread, and the one it makes only when the
// threads may have changed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "platform/clock.hpp"
#include "platform/threads.hpp"

namespace spyglass::platform {
namespace {

bool contains(const std::vector<pid_t>& v, pid_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(ThreadsTest, ListsTheCurrentThreadAndTheProcess) {
  const std::vector<pid_t> tids = list_threads();
  EXPECT_TRUE(contains(tids, current_tid()));
  EXPECT_TRUE(contains(tids, getpid()));  // the main thread
  std::vector<pid_t> sorted = tids;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicates";
  for (pid_t t : tids) EXPECT_GT(t, 0);
}

TEST(ThreadsTest, SeesANewThreadAndForgetsItAfterExit) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> release{false};
  std::thread t([&] {
    tid.store(current_tid());
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (tid.load() == 0) std::this_thread::yield();
  const std::vector<pid_t> during = list_threads();
  EXPECT_TRUE(contains(during, tid.load()));
  EXPECT_TRUE(contains(during, current_tid()));
  release.store(true);
  t.join();
  bool gone = false;
  for (int i = 0; i < 2000 && !gone; ++i) {
    gone = !contains(list_threads(), tid.load());
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(gone);
}

TEST(ThreadsTest, ListFromAnotherThreadSeesTheMainThread) {
  std::vector<pid_t> seen;
  pid_t self = 0;
  std::thread t([&] {
    self = current_tid();
    seen = list_threads();
  });
  t.join();
  EXPECT_TRUE(contains(seen, getpid()));
  EXPECT_TRUE(contains(seen, self));
}

// Lists until a listing is made (a first call may be answered "unchanged" when the kept
// state is from an earlier test), kRelistEvery calls at most.
std::vector<pid_t> listing_when_changed() {
  std::vector<pid_t> tids;
  for (int i = 0; i <= kRelistEvery && !list_threads_if_changed(&tids); ++i) {
  }
  return tids;
}

TEST(ThreadsTest, AListingWhenChangedListsNothingWhileTheThreadsStayTheSame) {
  ASSERT_TRUE(contains(listing_when_changed(), current_tid()));
  if (access("/proc/sys/kernel/ns_last_pid", R_OK) != 0) {
    GTEST_SKIP() << "no ns_last_pid here: every listing is made";
  }
  // Nothing starts or ends here; a process started elsewhere on the machine (tests run in
  // parallel) asks for a listing, and so does every kRelistEvery-th call: most calls, not
  // all, list nothing, and leave the vector alone.
  int unchanged = 0;
  for (int i = 0; i < 64; ++i) {
    std::vector<pid_t> tids;
    if (list_threads_if_changed(&tids)) {
      EXPECT_TRUE(contains(tids, current_tid()));
    } else {
      EXPECT_TRUE(tids.empty()) << "an unchanged listing leaves the vector alone";
      ++unchanged;
    }
  }
  EXPECT_GE(unchanged, 8);
}

TEST(ThreadsTest, AListingWhenChangedSeesAThreadEndingWhileAnotherStarts) {
  std::atomic<pid_t> first{0};
  std::atomic<bool> release{false};
  std::thread a([&] {
    first.store(current_tid());
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (first.load() == 0) std::this_thread::yield();
  ASSERT_TRUE(contains(listing_when_changed(), first.load()));
  // The same number of threads, but not the same threads.
  release.store(true);
  a.join();
  const std::string first_entry = "/proc/self/task/" + std::to_string(first.load());
  for (int i = 0; i < 2000 && access(first_entry.c_str(), F_OK) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::atomic<pid_t> second{0};
  std::atomic<bool> release_b{false};
  std::thread b([&] {
    second.store(current_tid());
    while (!release_b.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (second.load() == 0) std::this_thread::yield();
  std::vector<pid_t> tids;
  EXPECT_TRUE(list_threads_if_changed(&tids));
  EXPECT_TRUE(contains(tids, second.load()));
  EXPECT_FALSE(contains(tids, first.load()));
  release_b.store(true);
  b.join();
  // One fewer thread, and none started: listed again, at once.
  const std::string entry = "/proc/self/task/" + std::to_string(second.load());
  for (int i = 0; i < 2000 && access(entry.c_str(), F_OK) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  tids.clear();
  EXPECT_TRUE(list_threads_if_changed(&tids));
  EXPECT_FALSE(contains(tids, second.load()));
  EXPECT_TRUE(contains(tids, current_tid()));
}

TEST(ThreadsTest, AListingWhenChangedIsMadeAnywayEveryFewCalls) {
  listing_when_changed();
  std::vector<pid_t> tids;
  int made = 0;
  for (int i = 0; i < 2 * kRelistEvery; ++i) made += list_threads_if_changed(&tids) ? 1 : 0;
  EXPECT_GE(made, 2);
  EXPECT_TRUE(contains(tids, current_tid()));
}

// The descriptors of this process open on its task directory (list_threads keeps one).
std::vector<int> task_dir_fds() {
  std::vector<int> out;
  const std::string want = "/proc/" + std::to_string(getpid()) + "/task";
  for (int fd = 0; fd < 1024; ++fd) {
    char link[256];
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    if (want == link) out.push_back(fd);
  }
  return out;
}

TEST(ThreadsTest, NamesTheCallingThreadKeepingFifteenCharacters) {
  std::string seen;
  std::thread t([&] {
    name_this_thread("spyglass-a-long-thread-name");
    std::ifstream comm("/proc/self/task/" + std::to_string(current_tid()) + "/comm");
    std::getline(comm, seen);
  });
  t.join();
  EXPECT_EQ(seen, "spyglass-a-long");
}

TEST(ThreadsTest, AProgramThatTakesOverTheKeptDescriptorKeepsItsOwnFile) {
  ASSERT_TRUE(contains(list_threads(), current_tid()));
  const std::vector<int> kept = task_dir_fds();
  ASSERT_EQ(kept.size(), 1u) << "the listing keeps its directory open";
  // The program closes every descriptor and opens a pipe of its own on the same number.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  ASSERT_EQ(write(p[1], "mine", 4), 4);
  ASSERT_EQ(dup2(p[0], kept[0]), kept[0]);
  close(p[0]);
  const std::vector<pid_t> tids = list_threads();
  EXPECT_TRUE(contains(tids, current_tid()));
  EXPECT_TRUE(contains(tids, getpid()));
  // Its pipe was neither read nor closed.
  char got[8] = {};
  EXPECT_EQ(read(kept[0], got, sizeof got), 4);
  EXPECT_EQ(std::string(got, 4), "mine");
  close(kept[0]);
  close(p[1]);
  close_thread_listing();
  EXPECT_TRUE(task_dir_fds().empty());
}

TEST(ThreadsTest, AForkedChildListsItsOwnThreadsNotItsParents) {
  std::atomic<bool> release{false};
  std::thread other([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_GE(list_threads().size(), 2u);  // kept open, on the parent's directory
  const pid_t child = fork();
  if (child == 0) {
    // Only the forking thread lives on in the child: it alone is listed.
    const std::vector<pid_t> tids = list_threads();
    const bool own = tids.size() == 1 && tids[0] == getpid();
    close_thread_listing();
    _exit(own && task_dir_fds().empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  release.store(true);
  other.join();
  close_thread_listing();
}

}  // namespace
}  // namespace spyglass::platform
