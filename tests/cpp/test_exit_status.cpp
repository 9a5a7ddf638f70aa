// The status a process passes to exit() is written where it was asked to be, after
// everything else, by that process only (not by a forked child that did not ask).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "platform/exit_status.hpp"

namespace {

std::string temp_path(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/spyglass-exit-" + std::to_string(getpid()) +
         "-" + name;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(ExitStatus, WrittenByExitInTheProcessThatAsked) {
  const std::string mine = temp_path("mine");
  const std::string forked = temp_path("forked");
  std::fflush(nullptr);  // the children's exit() flushes what they inherited, else twice
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!spyglass::platform::note_exit_status(mine)) _exit(99);
    // A child of this process inherits the hook but not the request: it writes nothing.
    const pid_t grandchild = fork();
    if (grandchild == 0) std::exit(5);
    if (wait_for(grandchild) != 5) _exit(98);
    std::exit(42);
  }
  EXPECT_EQ(wait_for(pid), 42);
  EXPECT_EQ(read_all(mine), "42");
  unlink(mine.c_str());

  // Asked again in a forked child (as a profiled process's fork does): its own path.
  const pid_t again = fork();
  ASSERT_GE(again, 0);
  if (again == 0) {
    if (!spyglass::platform::note_exit_status(mine)) _exit(99);
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      spyglass::platform::note_exit_status(forked);
      std::exit(7);
    }
    std::exit(wait_for(grandchild) == 7 ? 3 : 98);
  }
  EXPECT_EQ(wait_for(again), 3);
  EXPECT_EQ(read_all(mine), "3");
  EXPECT_EQ(read_all(forked), "7");
  unlink(mine.c_str());
  unlink(forked.c_str());
}

TEST(ExitStatus, ANameTooLongIsRefused) {
  EXPECT_FALSE(spyglass::platform::note_exit_status(std::string(5000, 'x')));
}
