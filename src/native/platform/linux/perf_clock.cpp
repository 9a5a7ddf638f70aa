// Per-thread CPU-time sampling through a perf software event (task-clock): see perf_clock.hpp.
#include "../perf_clock.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "../high_fd.hpp"

namespace spyglass::platform {

namespace {

// Per descriptor, read by the signal handler: the cookie its signals carry (0: never one of
// ours; kClosed: ours once, closed since), the thread it signals, the event's kernel id,
// and the period to go back to after a first, shorter one (0: none pending).
constexpr uint32_t kClosed = ~uint32_t{0};
std::atomic<uint32_t> g_cookie[kMaxPerfClockFd];
std::atomic<pid_t> g_owner[kMaxPerfClockFd];
std::atomic<uint64_t> g_id[kMaxPerfClockFd];
std::atomic<uint64_t> g_next_period[kMaxPerfClockFd];
std::atomic<int> g_open{0};
std::atomic<bool> g_refused{false};  // the kernel said no once: not asked again

bool open_now(int fd) {
  if (fd < 0 || fd >= kMaxPerfClockFd) return false;
  const uint32_t cookie = g_cookie[fd].load(std::memory_order_acquire);
  return cookie != 0 && cookie != kClosed;
}

// The event's kernel id: tells our descriptor from one the program opened under the same
// number after closing ours (a daemon closing every descriptor).
uint64_t event_id(int fd) {
  uint64_t id = 0;
  return ::ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 ? id : 0;
}

// Whether the user's queue of pending signals has room to spare. A perf clock's signal is
// queued as the program's own would be, against RLIMIT_SIGPENDING (per user, all its
// processes): on a full queue the kernel sends SIGIO instead, which ends a process that
// does not handle it. (A POSIX timer's signal is never refused so.) Each clock has at most
// one signal pending; the clocks are taken only while the queue is under half full.
bool signal_queue_has_room() {
  FILE* status = std::fopen("/proc/self/status", "re");
  if (status == nullptr) return false;
  char line[256];
  bool room = false;
  while (std::fgets(line, sizeof line, status) != nullptr) {
    unsigned long used = 0;
    unsigned long limit = 0;
    if (std::sscanf(line, "SigQ: %lu/%lu", &used, &limit) == 2) {
      room = limit > 0 && used < limit / 2;
      break;
    }
  }
  std::fclose(status);
  return room;
}

long open_task_clock(pid_t tid, uint64_t period, bool exclude_kernel) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.sample_period = period;
  attr.disabled = 1;
  attr.exclude_kernel = exclude_kernel ? 1 : 0;
  attr.exclude_hv = 1;
  return ::syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

}  // namespace

bool arm_perf_clock(pid_t tid, int signo, uint32_t cookie, uint64_t period_ns, PerfClock* out) {
  if (g_refused.load(std::memory_order_relaxed) || cookie == 0 || cookie == kClosed) return false;
  if (g_open.load(std::memory_order_relaxed) >= kMaxPerfClocks) return false;
  // A thread of this process only (root may open one on any task).
  if (::syscall(SYS_tgkill, ::getpid(), tid, 0) != 0) return false;
  if (!signal_queue_has_room()) return false;
  // Kernel time is the thread's CPU too, as on its CPU clock: a period that ends in a
  // system call samples the line that made it. Where only user time may be watched
  // (perf_event_paranoid 2, the kernel's default, for a user without CAP_PERFMON), a
  // period ending in the kernel is skipped, its CPU charged to the next sample's line.
  long raw = open_task_clock(tid, period_ns, /*exclude_kernel=*/false);
  if (raw < 0 && (errno == EACCES || errno == EPERM)) {
    raw = open_task_clock(tid, period_ns, /*exclude_kernel=*/true);
  }
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
  g_next_period[fd].store(0, std::memory_order_relaxed);
  g_owner[fd].store(tid, std::memory_order_relaxed);
  g_id[fd].store(id, std::memory_order_relaxed);
  g_cookie[fd].store(cookie, std::memory_order_release);
  // One signal per refresh (the handler asks for the next): a thread that blocks the
  // signal a long while has one pending, not one queued per period.
  if (::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    g_cookie[fd].store(kClosed, std::memory_order_release);
    ::close(fd);
    return false;
  }
  g_open.fetch_add(1, std::memory_order_relaxed);
  out->fd = fd;
  out->id = id;
  return true;
}

bool rearm_perf_clock(const PerfClock& clock, uint64_t first_ns, uint64_t period_ns) {
  if (!open_now(clock.fd)) return false;
  uint64_t first = first_ns != 0 && first_ns < period_ns ? first_ns : period_ns;
  if (::ioctl(clock.fd, PERF_EVENT_IOC_PERIOD, &first) != 0) return false;
  // After the new period is set: a sample that ends the old one meanwhile finds nothing
  // pending, and the next, after `first`, puts the whole period back. (The other way
  // round, it could take the pending period back before the short one was set, which
  // would then stay.)
  g_next_period[clock.fd].store(first != period_ns ? period_ns : 0, std::memory_order_release);
  return true;
}

void close_perf_clock(PerfClock* clock) {
  if (clock->fd < 0) return;
  const int fd = clock->fd;
  clock->fd = -1;
  if (!open_now(fd)) return;
  // Marked closed, not forgotten: a signal still pending for it (its thread blocking the
  // signal) is dropped when it comes, not taken for the program's own.
  g_cookie[fd].store(kClosed, std::memory_order_release);
  g_open.fetch_sub(1, std::memory_order_relaxed);
  if (event_id(fd) == clock->id) ::close(fd);  // else the program closed it, and reused it
}

uint32_t perf_clock_cookie(const siginfo_t* info) {
  if (info->si_code != POLL_IN && info->si_code != POLL_HUP) return 0;
  const int fd = info->si_fd;
  if (fd < 0 || fd >= kMaxPerfClockFd) return 0;
  const uint32_t cookie = g_cookie[fd].load(std::memory_order_acquire);
  if (cookie == 0 || cookie == kClosed) return cookie;
  // Sent to this thread by this descriptor's clock: a late signal of a clock closed since,
  // whose number another thread's clock has now, is not that thread's sample.
  const auto self = static_cast<pid_t>(::syscall(SYS_gettid));
  return g_owner[fd].load(std::memory_order_relaxed) == self ? cookie : kClosed;
}

bool is_stale_timer_cookie(uint32_t cookie) { return cookie == kClosed; }

void perf_clock_sampled(const siginfo_t* info) {
  const int fd = info->si_fd;
  if (!open_now(fd)) return;
  const int saved = errno;
  uint64_t next = g_next_period[fd].exchange(0, std::memory_order_acq_rel);
  if (next != 0) (void)::ioctl(fd, PERF_EVENT_IOC_PERIOD, &next);
  (void)::ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
  errno = saved;
}

bool perf_clocks_allowed() {
  PerfClock probe;
  const auto tid = static_cast<pid_t>(::syscall(SYS_gettid));
  // Its signal is never sent: the first period is a whole second of this thread's CPU.
  if (!arm_perf_clock(tid, SIGRTMAX, kClosed - 1, 1'000'000'000, &probe)) return false;
  close_perf_clock(&probe);
  return true;
}

void forget_perf_clocks_after_fork() {
  // The parent's events, on the parent's threads: the child's copies of their descriptors
  // are closed, and not left to the program; a number the program reused is left alone.
  for (int fd = 0; fd < kMaxPerfClockFd; ++fd) {
    if (!open_now(fd)) continue;
    g_cookie[fd].store(kClosed, std::memory_order_relaxed);
    if (event_id(fd) == g_id[fd].load(std::memory_order_relaxed)) ::close(fd);
  }
  g_open.store(0, std::memory_order_relaxed);
}

}  // namespace spyglass::platform
