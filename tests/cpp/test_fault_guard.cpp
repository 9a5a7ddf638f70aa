// The fault guard turns a read of unmapped memory inside a guarded region into a jump back
// out, and leaves faults outside any guarded region to the previous handler.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>

#include "platform/clock.hpp"
#include "platform/fault_guard.hpp"

namespace spyglass::platform {
namespace {

// The address goes through a volatile so that the compiler cannot see it is bogus.
int read_at(uintptr_t address) {
  volatile uintptr_t a = address;
  return *reinterpret_cast<volatile const int*>(a);
}

TEST(FaultGuardTest, AFaultInsideTheGuardJumpsBackOut) {
  ASSERT_TRUE(install_fault_handler());
  FaultGuard& g = fault_guard(7);
  volatile int outcome = 0;
  enter_guard(g, current_tid());
  if (sigsetjmp(g.env, 0) == 0) {
    outcome = read_at(8);
    outcome = 1;  // not reached
  } else {
    outcome = 2;
  }
  leave_guard(g);
  EXPECT_EQ(outcome, 2);
  // And again: the signal must not have stayed blocked after the first jump.
  enter_guard(g, current_tid());
  if (sigsetjmp(g.env, 0) == 0) {
    outcome = read_at(16);
  } else {
    outcome = 3;
  }
  leave_guard(g);
  EXPECT_EQ(outcome, 3);
}

TEST(FaultGuardTest, AFaultOutsideAnyGuardStillKillsTheProcess) {
  ASSERT_TRUE(install_fault_handler());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    read_at(8);
    _exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

TEST(FaultGuardTest, AnotherThreadsGuardDoesNotCatchOurFault) {
  ASSERT_TRUE(install_fault_handler());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    FaultGuard& g = fault_guard(9);
    enter_guard(g, current_tid() + 1);  // a guard that belongs to some other thread
    read_at(8);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

// kill(), raise() and pthread_kill() of SIGSEGV or SIGBUS re-run no instruction: the
// handler must deliver them again, even from inside a guard, or the program lives on.
TEST(FaultGuardTest, ASentSignalStillKillsTheProcess) {
  ASSERT_TRUE(install_fault_handler());
  for (int signo : {SIGSEGV, SIGBUS}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      FaultGuard& g = fault_guard(10);
      enter_guard(g, current_tid());
      kill(getpid(), signo);
      _exit(0);  // not reached
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << signo;
    EXPECT_EQ(WTERMSIG(status), signo);
  }
}

}  // namespace
}  // namespace spyglass::platform
