#include "../clock.hpp"

#include <fcntl.h>
#include <sys/resource.h>

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace spyglass::platform {

namespace {
uint64_t to_ns(const timespec& ts) {
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t to_ns(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(tv.tv_usec) * 1000ull;
}
// The kernel's encoding of "the CPU clock of thread tid" (what pthread_getcpuclockid
// returns), usable for any thread of this process without a pthread_t.
clockid_t thread_clock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
}
}  // namespace

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return to_ns(ts);
}

double unix_time_s() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

CpuSplit this_thread_cpu() {
  rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return {};
  return {to_ns(ru.ru_utime), to_ns(ru.ru_stime)};
}

uint64_t this_thread_cpu_ns() {
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return to_ns(ts);
}

bool thread_cpu_ns(pid_t tid, uint64_t* out) {
  timespec ts;
  if (clock_gettime(thread_clock(tid), &ts) != 0) return false;
  *out = to_ns(ts);
  return true;
}

pid_t current_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

bool thread_run_delay_ns(pid_t tid, uint64_t* out) {
  // Called inside allocation hooks too: the system calls are made raw, which are no
  // cancellation points (open, read and close are; malloc is not, and a thread cancelled
  // in the middle of a hook would leave its record claimed), and errno is left as found.
  const int saved = errno;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", static_cast<int>(tid));
  const auto fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) {
    errno = saved;
    return false;
  }
  char buf[96];
  const auto n = static_cast<ssize_t>(syscall(SYS_read, fd, buf, sizeof buf - 1));
  syscall(SYS_close, fd);
  errno = saved;
  if (n <= 0) return false;
  buf[n] = '\0';
  // "<on-CPU ns> <run delay ns> <timeslices>": the second number.
  const char* p = buf;
  while (*p >= '0' && *p <= '9') ++p;
  if (*p != ' ') return false;
  ++p;
  if (*p < '0' || *p > '9') return false;
  uint64_t delay = 0;
  for (; *p >= '0' && *p <= '9'; ++p) delay = delay * 10 + static_cast<uint64_t>(*p - '0');
  *out = delay;
  return true;
}

bool thread_is_blocked(pid_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "<tid> (<name>) <state> ...": the name may hold spaces and parentheses, so the state
  // follows the last ')'.
  const char* close_paren = std::strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] != ' ') return false;
  const char state = close_paren[2];
  return state == 'S' || state == 'D';
}

}  // namespace spyglass::platform
