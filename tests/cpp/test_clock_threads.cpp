// Tests of the Linux platform layer: clocks, per-thread CPU timers and signals (thread
// listing: test_thread_listing.cpp).
#include "platform/code_ranges.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "platform/clock.hpp"
#include "platform/signals.hpp"
#include "platform/threads.hpp"

namespace spyglass::platform {
namespace {

// A function of the test executable itself, used as the interpreter anchor.
__attribute__((noinline)) int anchor_function(int x) {
  static volatile int sink = 0;
  sink = sink + x;
  return sink;
}

// ---------------------------------------------------------------- clocks

uint64_t libc_thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Burns CPU on the calling thread until `ns` more of it have been used (per the kernel).
void burn_cpu_ns(uint64_t ns) {
  const uint64_t start = libc_thread_cpu_ns();
  volatile uint64_t x = 0;
  while (libc_thread_cpu_ns() - start < ns) {
    for (int i = 0; i < 10000; ++i) x = x + static_cast<uint64_t>(i);
  }
}

TEST(ClockTest, MonotonicAndWallClocks) {
  const uint64_t a = monotonic_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const uint64_t b = monotonic_ns();
  EXPECT_GE(b - a, 5000000u);
  EXPECT_LT(b - a, 5000000000u);
  const double now = unix_time_s();
  EXPECT_NEAR(now, static_cast<double>(::time(nullptr)), 2.0);
}

TEST(ClockTest, ThisThreadCpuGrowsAfterABusyLoop) {
  const CpuSplit before = this_thread_cpu();
  const uint64_t libc_before = libc_thread_cpu_ns();
  burn_cpu_ns(100000000);  // 100 ms
  const uint64_t libc_after = libc_thread_cpu_ns();
  const CpuSplit after = this_thread_cpu();
  ASSERT_GE(after.user_ns, before.user_ns);
  ASSERT_GE(after.system_ns, before.system_ns);
  const uint64_t grown = (after.user_ns - before.user_ns) + (after.system_ns - before.system_ns);
  EXPECT_GE(grown, 50000000u) << "a 100 ms busy loop barely registered";
  // Not more than what the kernel's own thread clock saw (plus rusage's microsecond steps).
  EXPECT_LE(grown, (libc_after - libc_before) + 20000000u);
  EXPECT_GT(after.user_ns - before.user_ns, 0u);
}

TEST(ClockTest, ThisThreadCpuIgnoresOtherThreads) {
  std::atomic<bool> stop{false};
  std::atomic<bool> started{false};
  CpuSplit busy_own{};
  std::thread busy([&] {
    started.store(true);
    burn_cpu_ns(100000000);
    busy_own = this_thread_cpu();  // measured on the busy thread itself
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (!started.load()) std::this_thread::yield();
  const CpuSplit before = this_thread_cpu();
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // while the other burns
  const CpuSplit after = this_thread_cpu();
  stop.store(true);
  busy.join();
  const uint64_t mine = (after.user_ns - before.user_ns) + (after.system_ns - before.system_ns);
  EXPECT_LT(mine, 30000000u) << "another thread's CPU time was counted as ours";
  EXPECT_GE(busy_own.user_ns + busy_own.system_ns, 50000000u);
}

// Spins `n` rounds of arithmetic: CPU work that makes no system call.
__attribute__((noinline)) uint64_t spin(uint64_t n) {
  volatile uint64_t x = 0;
  for (uint64_t i = 0; i < n; ++i) x = x + i;
  return x;
}

// The await scan times its own short work (0.2 to 0.4 ms a scan, making no system call)
// with this clock, and rests in proportion. getrusage's per-thread times, which it used,
// read most such scans as free here (87 scans of a run added up to 0.7 ms, where the
// scheduler's clock gives some 250 us each), so the scans never rested.
TEST(ClockTest, ThisThreadCpuNsSeesShortWorkThatMakesNoSystemCall) {
  // Rounds that take about 0.3 ms of CPU, by the kernel's thread clock.
  uint64_t rounds = 1000;
  for (;;) {
    const uint64_t before = libc_thread_cpu_ns();
    spin(rounds);
    if (libc_thread_cpu_ns() - before >= 300000) break;
    rounds *= 2;
  }
  int seen = 0;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // off the CPU between, as scans are
    const uint64_t before = this_thread_cpu_ns();
    spin(rounds);
    const uint64_t spent = this_thread_cpu_ns() - before;
    if (spent >= 100000) ++seen;  // a third of the work, at least
  }
  EXPECT_GE(seen, 18) << "short pieces of CPU work read as (nearly) free";
}

TEST(ClockTest, ThreadCpuOfTheCurrentThreadMatchesTheKernelClock) {
  burn_cpu_ns(2000000);
  uint64_t ours = 0;
  const uint64_t lo = libc_thread_cpu_ns();
  ASSERT_TRUE(thread_cpu_ns(current_tid(), &ours));
  const uint64_t hi = libc_thread_cpu_ns();
  EXPECT_LE(lo, ours);
  EXPECT_LE(ours, hi);
  EXPECT_GT(ours, 0u);
}

TEST(ClockTest, ThreadCpuOfAnotherThread) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    tid.store(current_tid());
    volatile uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  while (tid.load() == 0) std::this_thread::yield();
  clockid_t their_clock{};
  ASSERT_EQ(pthread_getcpuclockid(busy.native_handle(), &their_clock), 0);

  uint64_t first = 0;
  ASSERT_TRUE(thread_cpu_ns(tid.load(), &first));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  timespec ts{};
  ASSERT_EQ(clock_gettime(their_clock, &ts), 0);
  const uint64_t lo =
      static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  uint64_t second = 0;
  ASSERT_TRUE(thread_cpu_ns(tid.load(), &second));
  stop.store(true);
  busy.join();
  EXPECT_GT(second, first) << "the busy thread's CPU time did not grow";
  EXPECT_GE(second, lo) << "disagrees with pthread_getcpuclockid's clock";
}

// The largest pid the kernel hands out, exclusive.
pid_t pid_max() {
  std::ifstream in("/proc/sys/kernel/pid_max");
  long v = 0;
  in >> v;
  return v > 0 ? static_cast<pid_t>(v) : 4194304;
}

TEST(ClockTest, ThreadCpuFailsForThreadsThatAreNotOurs) {
  uint64_t out = 12345;
  EXPECT_FALSE(thread_cpu_ns(pid_max(), &out)) << "no task can have tid pid_max";
  EXPECT_EQ(out, 12345u) << "output written on failure";
  // The parent process exists, but its tid is not a thread of this process.
  EXPECT_FALSE(thread_cpu_ns(getppid(), &out));
  EXPECT_EQ(out, 12345u);
}

TEST(ClockTest, ThreadCpuFailsOnceTheThreadHasExited) {
  std::atomic<pid_t> tid{0};
  std::thread t([&] { tid.store(current_tid()); });
  t.join();
  ASSERT_NE(tid.load(), 0);
  ASSERT_NE(tid.load(), current_tid());
  // The kernel may take a moment after join() to reap the task.
  uint64_t out = 0;
  bool still_there = true;
  for (int i = 0; i < 2000 && still_there; ++i) {
    still_there = thread_cpu_ns(tid.load(), &out);
    if (still_there) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_FALSE(still_there) << "thread_cpu_ns still succeeds for an exited thread";
}

TEST(ClockTest, CurrentTid) {
  EXPECT_EQ(current_tid(), static_cast<pid_t>(syscall(SYS_gettid)));
  pid_t other = 0;
  std::thread t([&] { other = current_tid(); });
  t.join();
  EXPECT_NE(other, 0);
  EXPECT_NE(other, current_tid());
  EXPECT_NE(other, getpid());
}

// ---------------------------------------------------------------- CPU timers

// State shared with the signal handler: lock-free atomics only.
std::atomic<int> g_expected_cookie{0};
std::atomic<pid_t> g_target_tid{0};
std::atomic<int> g_good{0};     // a timer's, right cookie, on the right thread
std::atomic<int> g_bad{0};      // anything else
std::atomic<int> g_in_test{0};  // interrupted pc inside the test executable's code
const CodeRanges* g_ranges = nullptr;

void timer_handler(int, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  // A POSIX timer's (SI_TIMER) or a perf clock's (the descriptor's cookie).
  const bool ok = timer_signal_cookie(info) == static_cast<uint32_t>(g_expected_cookie.load()) &&
                  static_cast<pid_t>(syscall(SYS_gettid)) == g_target_tid.load();
  (ok ? g_good : g_bad).fetch_add(1);
  if (ok && g_ranges != nullptr &&
      g_ranges->classify(interrupted_pc(ucontext)) == CodeRegion::kInterpreter) {
    g_in_test.fetch_add(1);
  }
  timer_signal_handled(info);
  errno = saved_errno;
}

// Installs `timer_handler` on SIGRTMIN+10 for the test's lifetime.
class CpuTimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signo_ = SIGRTMIN + 10;
    struct sigaction sa {};
    sa.sa_sigaction = timer_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(signo_, &sa, &old_), 0);
    g_good = 0;
    g_bad = 0;
    g_in_test = 0;
    ranges_.rebuild(reinterpret_cast<const void*>(&anchor_function));
    g_ranges = &ranges_;
  }
  void TearDown() override {
    g_ranges = nullptr;
    sigaction(signo_, &old_, nullptr);
  }

  int signo_ = 0;
  struct sigaction old_ {};
  CodeRanges ranges_;
};

// Spins until told to stop, recording its tid first.
struct BusyThread {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread thread;

  void start() {
    thread = std::thread([this] {
      tid.store(current_tid());
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 1000; ++i) x = x + static_cast<uint64_t>(i);
      }
    });
    while (tid.load() == 0) std::this_thread::yield();
  }
  void finish() {
    stop.store(true);
    if (thread.joinable()) thread.join();
  }
  ~BusyThread() { finish(); }

  // Waits until the thread has used `ns` more CPU time, or 20 s of wall time pass.
  bool wait_cpu(uint64_t ns) const {
    uint64_t start = 0;
    if (!thread_cpu_ns(tid.load(), &start)) return false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      uint64_t now = 0;
      if (!thread_cpu_ns(tid.load(), &now)) return false;
      if (now - start >= ns) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return false;
  }
};

// A timer (upgraded to a perf clock when `upgrade`) on a busy thread for ~200 ms of its
// CPU at a 10 ms period, then disarmed: its signals come to that thread with the cookie,
// from the busy loop's code, and stop. False when the upgrade is not to be had here.
bool busy_thread_signals_until_disarmed(int signo, bool upgrade) {
  BusyThread busy;
  busy.start();
  constexpr int kCookie = (3 << 12) | 17;
  g_expected_cookie = kCookie;
  g_target_tid = busy.tid.load();

  ThreadTimer timer;
  EXPECT_TRUE(arm_thread_cpu_timer(busy.tid.load(), signo, kCookie, 10000000, &timer));
  EXPECT_TRUE(timer.armed);
  if (upgrade && !upgrade_thread_cpu_timer(busy.tid.load(), signo, kCookie, 10000000, &timer)) {
    disarm_thread_cpu_timer(&timer);
    return false;
  }
  EXPECT_EQ(timer.perf.fd >= 0, upgrade);
  EXPECT_TRUE(busy.wait_cpu(200000000));

  disarm_thread_cpu_timer(&timer);
  EXPECT_FALSE(timer.armed);
  // Let a signal that was already queued at disarm time land.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const int at_disarm = g_good.load();
  EXPECT_GE(at_disarm, 5) << "too few timer signals for 200 ms of CPU";
  EXPECT_LE(at_disarm, 40) << "far more signals than 200 ms / 10 ms";
  EXPECT_EQ(g_bad.load(), 0) << "signal with a wrong code, cookie or thread";
  // The busy loop is code of this executable: most samples must be classified there.
  EXPECT_GE(g_in_test.load() * 2, at_disarm) << "interrupted_pc outside the busy loop";

  EXPECT_TRUE(busy.wait_cpu(100000000));  // another 100 ms, now unarmed
  busy.finish();
  EXPECT_LE(g_good.load() - at_disarm, 1) << "signals keep coming after disarm";
  EXPECT_EQ(g_bad.load(), 0);
  return true;
}

TEST_F(CpuTimerTest, DeliversSignalsToTheBusyThreadAndDisarmStopsThem) {
  EXPECT_TRUE(busy_thread_signals_until_disarmed(signo_, /*upgrade=*/false));
}

TEST_F(CpuTimerTest, AnUpgradedTimerKeepsItsCookieAndThreadAndDisarmStopsIt) {
  if (!busy_thread_signals_until_disarmed(signo_, /*upgrade=*/true)) {
    GTEST_SKIP() << "perf task-clock events are not allowed here";
  }
}

TEST_F(CpuTimerTest, IdleThreadGetsNoSignals) {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread idle([&] {
    tid.store(current_tid());
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  while (tid.load() == 0) std::this_thread::yield();
  g_expected_cookie = 5;
  g_target_tid = tid.load();
  ThreadTimer timer;
  ASSERT_TRUE(arm_thread_cpu_timer(tid.load(), signo_, 5, 10000000, &timer));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // wall time, not CPU time
  disarm_thread_cpu_timer(&timer);
  stop.store(true);
  idle.join();
  EXPECT_LE(g_good.load(), 1) << "a CPU-time timer fired for a sleeping thread";
  EXPECT_EQ(g_bad.load(), 0);
}

TEST_F(CpuTimerTest, SignalsGoOnlyToTheTargetThread) {
  // The target blocks the signal: a thread-directed timer signal then stays pending on it,
  // whereas a process-directed one would be handed to another thread (this one).
  std::atomic<pid_t> tid{0};
  std::atomic<bool> stop{false};
  const int signo = signo_;
  std::thread blocked([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    tid.store(current_tid());
    volatile uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  while (tid.load() == 0) std::this_thread::yield();
  g_expected_cookie = 9;
  g_target_tid = tid.load();
  ThreadTimer timer;
  ASSERT_TRUE(arm_thread_cpu_timer(tid.load(), signo_, 9, 10000000, &timer));
  uint64_t start = 0;
  uint64_t now = 0;
  ASSERT_TRUE(thread_cpu_ns(tid.load(), &start));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(thread_cpu_ns(tid.load(), &now));
  } while (now - start < 100000000 && std::chrono::steady_clock::now() < deadline);
  disarm_thread_cpu_timer(&timer);
  stop.store(true);
  blocked.join();  // its pending signal is discarded with it
  EXPECT_EQ(g_good.load(), 0);
  EXPECT_EQ(g_bad.load(), 0) << "the timer signal was delivered to another thread";
}

TEST(CpuTimerArmTest, ArmingFailsForAThreadThatIsNotOurs) {
  ThreadTimer timer;
  EXPECT_FALSE(arm_thread_cpu_timer(pid_max(), SIGRTMIN + 10, 1, 10000000, &timer));
  EXPECT_FALSE(timer.armed);
  EXPECT_FALSE(arm_thread_cpu_timer(getppid(), SIGRTMIN + 10, 1, 10000000, &timer));
  EXPECT_FALSE(timer.armed);
}

TEST(CpuTimerArmTest, DisarmIsIdempotent) {
  ThreadTimer never_armed;
  disarm_thread_cpu_timer(&never_armed);  // must not touch a timer that was never created
  EXPECT_FALSE(never_armed.armed);

  // Armed on this thread with a period long enough never to fire during the test.
  ThreadTimer timer;
  ASSERT_TRUE(arm_thread_cpu_timer(current_tid(), SIGRTMIN + 10, 1, 3600000000000ull, &timer));
  disarm_thread_cpu_timer(&timer);
  EXPECT_FALSE(timer.armed);
  disarm_thread_cpu_timer(&timer);
  EXPECT_FALSE(timer.armed);
}

// ---------------------------------------------------------------- signals

std::atomic<uintptr_t> g_raised_pc{0};
void record_pc_handler(int, siginfo_t*, void* ucontext) {
  g_raised_pc.store(interrupted_pc(ucontext));
}

TEST(SignalsTest, InstallsOnFreeRealtimeSignals) {
  const int first = install_sample_handler(record_pc_handler);
  ASSERT_NE(first, -1);
  EXPECT_GE(first, SIGRTMIN);
  EXPECT_LE(first, SIGRTMAX);
  struct sigaction now {};
  ASSERT_EQ(sigaction(first, nullptr, &now), 0);
  EXPECT_TRUE(now.sa_flags & SA_SIGINFO);
  EXPECT_TRUE(now.sa_flags & SA_RESTART);
  EXPECT_EQ(now.sa_sigaction, &record_pc_handler);

  // The slot is taken now: a second install picks another signal.
  const int second = install_sample_handler(record_pc_handler);
  EXPECT_NE(second, first);

  // interrupted_pc: a signal raised by this thread interrupts it inside libc's kill path.
  g_raised_pc = 0;
  ASSERT_EQ(raise(first), 0);
  EXPECT_NE(g_raised_pc.load(), 0u);
  CodeRanges ranges;
  ranges.rebuild(reinterpret_cast<const void*>(&anchor_function));
  EXPECT_EQ(ranges.classify(g_raised_pc.load()), CodeRegion::kSystem)
      << "interrupted pc is not in libc's raise()";

  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(first, &dfl, nullptr);
  if (second != -1) sigaction(second, &dfl, nullptr);
}

}  // namespace
}  // namespace spyglass::platform
