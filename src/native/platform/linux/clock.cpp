#include "../clock.hpp"

#include <fcntl.h>
#include <sys/resource.h>

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
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
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[96];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // "<on-CPU ns> <run delay ns> <timeslices>"
  unsigned long long on_cpu = 0;
  unsigned long long delay = 0;
  if (std::sscanf(buf, "%llu %llu", &on_cpu, &delay) != 2) return false;
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
