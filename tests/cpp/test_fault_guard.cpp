// The fault guard turns a read of unmapped memory inside a guarded region into a jump back
// out, and leaves faults outside any guarded region to the previous handler.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <thread>

#include "platform/clock.hpp"
#include "platform/fault_guard.hpp"

namespace spyglass::platform {
namespace {

// The address goes through a volatile so that the compiler cannot see it is bogus.
int read_at(uintptr_t address) {
  volatile uintptr_t a = address;
  return *reinterpret_cast<volatile const int*>(a);
}

TEST(FaultGuardTest, OwnMemoryIsReadWhereMappedAndRefusedWhereNot) {
  const uint64_t value = 0x1122334455667788ull;
  uint64_t out = 0;
  ASSERT_TRUE(read_own_memory(getpid(), &value, &out, sizeof(out)));
  EXPECT_EQ(out, value);
  // A page that is mapped but not readable, and one that is not mapped at all.
  const long page = sysconf(_SC_PAGESIZE);
  void* locked =
      mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(locked, MAP_FAILED);
  out = 7;
  EXPECT_FALSE(read_own_memory(getpid(), locked, &out, sizeof(out)));
  ASSERT_EQ(munmap(locked, static_cast<size_t>(page)), 0);
  EXPECT_FALSE(read_own_memory(getpid(), locked, &out, sizeof(out)));
  EXPECT_FALSE(read_own_memory(getpid(), reinterpret_cast<const void*>(8), &out, sizeof(out)));
  EXPECT_EQ(out, 7u);  // untouched by the refused reads
}

void other_handler(int) {}

TEST(FaultGuardTest, KnowsWhetherItsHandlerIsStillFirstInLine) {
  ASSERT_TRUE(install_fault_handler());
  EXPECT_TRUE(fault_handler_first());
  // Another handler installed after ours, as faulthandler.enable() does.
  struct sigaction other {};
  struct sigaction ours {};
  other.sa_handler = other_handler;
  sigemptyset(&other.sa_mask);
  ASSERT_EQ(sigaction(SIGBUS, &other, &ours), 0);
  EXPECT_FALSE(fault_handler_first());
  ASSERT_EQ(sigaction(SIGBUS, &ours, nullptr), 0);
  EXPECT_TRUE(fault_handler_first());
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

// What the profiler's own threads do: start with every signal blocked, then read the
// program's memory under a guard. `unblock`: whether the thread lets faults through first.
// Runs in a child process, as a fault with SIGSEGV blocked kills it whatever the handler;
// returns the child's wait status.
int guarded_fault_on_a_thread_born_blocked(bool unblock) {
  const pid_t child = fork();
  if (child == 0) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, nullptr);
    volatile int outcome = 0;
    std::thread([&] {
      if (unblock) unblock_fault_signals();
      FaultGuard& g = fault_guard(11);
      enter_guard(g, current_tid());
      if (sigsetjmp(g.env, 0) == 0) {
        outcome = read_at(8);
      } else {
        outcome = 1;
      }
      leave_guard(g);
    }).join();
    _exit(outcome == 1 ? 0 : 3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

TEST(FaultGuardTest, AThreadBornWithSignalsBlockedCatchesItsFaultOnceItUnblocksThem) {
  ASSERT_TRUE(install_fault_handler());
  const int status = guarded_fault_on_a_thread_born_blocked(/*unblock=*/true);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // Without it, the kernel kills the process at the fault: the guard cannot help.
  const int killed = guarded_fault_on_a_thread_born_blocked(/*unblock=*/false);
  ASSERT_TRUE(WIFSIGNALED(killed)) << killed;
  EXPECT_EQ(WTERMSIG(killed), SIGSEGV);
}

}  // namespace
}  // namespace spyglass::platform
