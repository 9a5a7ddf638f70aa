#include "../threads.hpp"

#include <dirent.h>
#include <signal.h>
#include <time.h>
#include <cstdlib>
#include <cstring>

namespace spyglass::platform {

namespace {
clockid_t thread_clock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
}
}  // namespace

std::vector<pid_t> list_threads() {
  std::vector<pid_t> tids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return tids;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    tids.push_back(static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10)));
  }
  closedir(dir);
  return tids;
}

bool arm_thread_cpu_timer(pid_t tid, int signo, int cookie, uint64_t period_ns, ThreadTimer* out,
                          uint64_t first_ns) {
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signo;
  sev.sigev_value.sival_int = cookie;
  sev._sigev_un._tid = tid;  // glibc spells sigev_notify_thread_id this way before 2.35
  timer_t id;
  if (timer_create(thread_clock(tid), &sev, &id) != 0) return false;
  itimerspec spec{};
  spec.it_interval.tv_sec = static_cast<time_t>(period_ns / 1000000000ull);
  spec.it_interval.tv_nsec = static_cast<long>(period_ns % 1000000000ull);
  const uint64_t first = first_ns != 0 && first_ns < period_ns ? first_ns : period_ns;
  spec.it_value.tv_sec = static_cast<time_t>(first / 1000000000ull);
  spec.it_value.tv_nsec = static_cast<long>(first % 1000000000ull);
  if (timer_settime(id, 0, &spec, nullptr) != 0) {
    timer_delete(id);
    return false;
  }
  out->id = id;
  out->armed = true;
  return true;
}

void disarm_thread_cpu_timer(ThreadTimer* timer) {
  if (!timer->armed) return;
  timer_delete(timer->id);
  timer->armed = false;
}

}  // namespace spyglass::platform
