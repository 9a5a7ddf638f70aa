// Per-thread CPU-time sampling through a perf software event (task-clock): see threads.hpp.
#include "../perf_clock.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "../high_fd.hpp"

namespace spyglass::platform {

namespace {

// Per descriptor: the cookie its signals carry (0: not one of ours), and the period to go
// back to after a first, shorter one (0: none pending).
std::atomic<uint32_t> g_cookie[kMaxPerfClockFd];
std::atomic<uint64_t> g_next_period[kMaxPerfClockFd];
std::atomic<int> g_open{0};
std::atomic<bool> g_refused{false};  // the kernel said no once: not asked again

bool ours(int fd) {
  return fd >= 0 && fd < kMaxPerfClockFd && g_cookie[fd].load(std::memory_order_acquire) != 0;
}

// The event's kernel id: tells our descriptor from one the program opened under the same
// number after closing ours (a daemon closing every descriptor).
uint64_t event_id(int fd) {
  uint64_t id = 0;
  return ::ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 ? id : 0;
}

// A POSIX CPU-time timer due sooner than a tick fires at the thread's first tick: at a
// point of its first few milliseconds that no one chose. Callers ask for "soon" in that
// sense (a new thread's first sample, the program's first line, cpu_engine.cpp), and their
// estimates rest on it being nowhere in particular: a perf clock's exact 1 us put every
// new thread's first sample in its bootstrap (a request handler's share 5 points high, a
// light thread's 5 points low). So a first period that short (they ask for 1 us and
// 200 us) is drawn evenly between it and a tick (4 ms, the 250 Hz most kernels run at).
// A longer one was chosen as it is (a young thread's, drawn over a whole interval).
constexpr uint64_t kTickNs = 4'000'000;
constexpr uint64_t kSoonNs = 250'000;

uint64_t first_period(uint64_t first_ns, uint64_t period_ns) {
  if (first_ns == 0 || first_ns >= period_ns) return period_ns;
  const uint64_t end = period_ns < kTickNs ? period_ns : kTickNs;
  if (first_ns >= kSoonNs || first_ns >= end) return first_ns;
  static std::atomic<uint64_t> state{0x9E3779B97F4A7C15ull};
  uint64_t x = state.load(std::memory_order_relaxed);
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  state.store(x, std::memory_order_relaxed);
  return first_ns + x % (end - first_ns);
}

}  // namespace

bool arm_perf_clock(pid_t tid, int signo, uint32_t cookie, uint64_t period_ns, uint64_t first_ns,
                    PerfClock* out) {
  if (g_refused.load(std::memory_order_relaxed) || cookie == 0) return false;
  if (g_open.load(std::memory_order_relaxed) >= kMaxPerfClocks) return false;
  // A thread of this process only (root may open one on any task).
  if (::syscall(SYS_tgkill, ::getpid(), tid, 0) != 0) return false;
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = first_period(first_ns, period_ns);
  attr.disabled = 1;
  // Kernel time is the thread's CPU too, as on its CPU clock: a sample in a system call
  // stays on the line that made it. (Excluding it would be allowed more widely, but its
  // periods would be skipped and their CPU charged to the next line in user mode.)
  const long raw = ::syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (raw < 0) {
    // Not allowed here (perf_event_paranoid, a seccomp filter, no perf in this kernel): the
    // POSIX timers it is. Too many descriptors is no refusal of perf's.
    if (errno == EACCES || errno == EPERM || errno == ENOSYS || errno == ENOENT ||
        errno == EOPNOTSUPP || errno == EINVAL) {
      g_refused.store(true, std::memory_order_relaxed);
    }
    return false;
  }
  const int fd = move_fd_high(static_cast<int>(raw));
  f_owner_ex owner{F_OWNER_TID, tid};
  const uint64_t id = event_id(fd);
  if (fd >= kMaxPerfClockFd || id == 0 || ::fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
      ::fcntl(fd, F_SETSIG, signo) != 0 || ::fcntl(fd, F_SETFL, O_ASYNC) != 0) {
    ::close(fd);
    return false;
  }
  g_next_period[fd].store(attr.sample_period != period_ns ? period_ns : 0,
                          std::memory_order_relaxed);
  g_cookie[fd].store(cookie, std::memory_order_release);
  // One signal per refresh (the handler asks for the next): a thread that blocks the
  // signal a long while has one pending, not one queued per period until the queue
  // overflows into SIGIO, whose default action ends the process.
  if (::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    g_cookie[fd].store(0, std::memory_order_release);
    ::close(fd);
    return false;
  }
  g_open.fetch_add(1, std::memory_order_relaxed);
  out->fd = fd;
  out->id = id;
  return true;
}

bool rearm_perf_clock(const PerfClock& clock, uint64_t first_ns, uint64_t period_ns) {
  if (clock.fd < 0 || !ours(clock.fd)) return false;
  uint64_t first = first_period(first_ns, period_ns);
  g_next_period[clock.fd].store(first != period_ns ? period_ns : 0, std::memory_order_relaxed);
  return ::ioctl(clock.fd, PERF_EVENT_IOC_PERIOD, &first) == 0;
}

void close_perf_clock(PerfClock* clock) {
  if (clock->fd < 0) return;
  const int fd = clock->fd;
  clock->fd = -1;
  if (!ours(fd)) return;
  g_cookie[fd].store(0, std::memory_order_release);
  g_open.fetch_sub(1, std::memory_order_relaxed);
  if (event_id(fd) == clock->id) ::close(fd);  // else the program closed it, and reused it
}

uint32_t perf_clock_cookie(const siginfo_t* info) {
  if (info->si_code != POLL_IN && info->si_code != POLL_HUP) return 0;
  const int fd = info->si_fd;
  return fd >= 0 && fd < kMaxPerfClockFd ? g_cookie[fd].load(std::memory_order_acquire) : 0;
}

void perf_clock_sampled(const siginfo_t* info) {
  const int fd = info->si_fd;
  if (!ours(fd)) return;
  const int saved = errno;
  uint64_t next = g_next_period[fd].exchange(0, std::memory_order_relaxed);
  if (next != 0) (void)::ioctl(fd, PERF_EVENT_IOC_PERIOD, &next);
  (void)::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
  errno = saved;
}

bool perf_clocks_allowed() {
  PerfClock probe;
  const auto tid = static_cast<pid_t>(::syscall(SYS_gettid));
  // Its signal is never sent: the first period is a whole second of this thread's CPU.
  if (!arm_perf_clock(tid, SIGRTMAX, ~uint32_t{0}, 1'000'000'000, 0, &probe)) return false;
  close_perf_clock(&probe);
  return true;
}

void forget_perf_clocks_after_fork() {
  // The parent's events, on the parent's threads: the child's copies of their descriptors
  // are closed, and not left to the program.
  for (int fd = 0; fd < kMaxPerfClockFd; ++fd) {
    if (g_cookie[fd].exchange(0, std::memory_order_relaxed) != 0) ::close(fd);
  }
  g_open.store(0, std::memory_order_relaxed);
}

}  // namespace spyglass::platform
