#include "../threads.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "../high_fd.hpp"

namespace spyglass::platform {

namespace {

clockid_t thread_clock(pid_t tid) {
  return static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
}

// Our descriptor of /proc/self/task, as fstat saw it when opened.
struct TaskDir {
  int fd = -1;
  struct stat opened {};
  // Whether `fd` still refers to the directory opened: a thread of the program may close
  // every descriptor meanwhile (closerange) and open a file or directory of its own on
  // the same number, which is then neither read (moving its offset) nor closed.
  bool still_ours(nlink_t* links = nullptr) const {
    struct stat now {};
    if (::fstat(fd, &now) != 0 || now.st_dev != opened.st_dev || now.st_ino != opened.st_ino) {
      return false;
    }
    if (links != nullptr) *links = now.st_nlink;
    return true;
  }
  bool open() {
    fd = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && ::fstat(fd, &opened) == 0) return true;
    if (fd >= 0) ::close(fd);
    fd = -1;
    return false;
  }
  void close() {
    if (fd >= 0 && still_ours()) ::close(fd);
    fd = -1;
  }
  // Appends the thread ids from the directory's current offset on.
  void read_into(std::vector<pid_t>* tids) const {
    alignas(8) char buf[4096];
    for (bool first = true; first || still_ours(); first = false) {
      const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        // struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), d_name.
        unsigned short reclen = 0;
        std::memcpy(&reclen, buf + off + 16, sizeof reclen);
        const char* name = buf + off + 19;
        if (name[0] >= '0' && name[0] <= '9') {
          tids->push_back(static_cast<pid_t>(std::strtol(name, nullptr, 10)));
        }
        if (reclen == 0) break;
        off += reclen;
      }
    }
  }
};

// The pid namespace's last id handed out, read from a descriptor kept open like the task
// directory. pread moves no offset: should the program have put a file of its own on the
// number, it is read but not disturbed, and the next listing, which checks, reopens ours.
struct LastPid {
  int fd = -1;
  struct stat opened {};
  bool open() {
    fd = ::open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && ::fstat(fd, &opened) == 0) {
      fd = move_fd_high(fd);
      return true;
    }
    if (fd >= 0) ::close(fd);
    fd = -1;
    return false;
  }
  bool still_ours() const {
    struct stat now {};
    return ::fstat(fd, &now) == 0 && now.st_dev == opened.st_dev && now.st_ino == opened.st_ino;
  }
  void close() {
    if (fd >= 0 && still_ours()) ::close(fd);
    fd = -1;
  }
  // -1 when unreadable (no such file in this kernel): every listing is then made.
  long read() const {
    if (fd < 0) return -1;
    char text[24];
    const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return -1;
    text[n] = '\0';
    return std::strtol(text, nullptr, 10);
  }
};

// The directory kept open between listings (see list_threads), and the process that
// opened it: a forked child's copy would list its parent's threads.
TaskDir g_kept;
pid_t g_kept_by = 0;
std::atomic<bool> g_kept_busy{false};
// What the last complete listing saw (see list_threads_if_changed).
LastPid g_last_pid;
nlink_t g_listed_links = 0;
long g_listed_last_pid = -1;
int g_unlisted = 0;  // calls since, that listed nothing

// Lists into `tids` through the kept directory, `g_kept_busy` held; false when the
// threads cannot have changed since the last listing (`when_changed`).
bool list_kept(std::vector<pid_t>* tids, bool when_changed) {
  const pid_t pid = getpid();
  nlink_t links = 0;
  if (g_kept.fd >= 0 && (g_kept_by != pid || !g_kept.still_ours(&links))) {
    g_kept.close();
    g_last_pid.close();
    g_listed_last_pid = -1;
  }
  if (g_kept.fd < 0 && g_kept.open()) {
    // Kept for the run: out of the numbers a program reuses first, where the program's own
    // open of this same directory (psutil lists threads so) could take it for ours.
    g_kept.fd = move_fd_high(g_kept.fd);
    links = g_kept.opened.st_nlink;
  }
  if (g_kept.fd < 0) return !when_changed;  // none: the caller's last listing stands
  g_kept_by = pid;
  // Its number may be the program's by now (a device whose read blocks, say): checked.
  if (g_last_pid.fd >= 0 && !g_last_pid.still_ours()) g_last_pid.fd = -1;
  // Read before the listing, so that a thread starting while it is read moves it past
  // what is kept and is listed next time.
  const long last_pid = g_last_pid.read();
  if (when_changed && last_pid >= 0 && last_pid == g_listed_last_pid && links == g_listed_links &&
      ++g_unlisted < kRelistEvery) {
    return false;
  }
  g_unlisted = 0;
  if (::lseek(g_kept.fd, 0, SEEK_SET) != 0) {
    g_kept.close();
    return !when_changed;  // nothing listed: the caller's last listing stands
  }
  if (g_last_pid.fd < 0) g_last_pid.open();
  g_listed_links = links;
  g_listed_last_pid = last_pid;
  g_kept.read_into(tids);
  return true;
}

bool list_threads_into(std::vector<pid_t>* tids, bool when_changed) {
  // The directory stays open from one listing to the next, read again from its start:
  // opening it (a walk through /proc/self, a new file) was a third of the control thread's
  // CPU, which lists the threads every interval. A listing that finds it in use (by
  // another thread, or by one that was listing when the process forked) opens its own.
  if (g_kept_busy.exchange(true, std::memory_order_acquire)) {
    TaskDir own;
    if (own.open()) {
      own.read_into(tids);
      own.close();
    }
    return true;
  }
  const bool listed = list_kept(tids, when_changed);
  g_kept_busy.store(false, std::memory_order_release);
  return listed;
}

}  // namespace

void name_this_thread(const char* name) {
  char kept[16] = {};
  std::strncpy(kept, name, sizeof kept - 1);
  pthread_setname_np(pthread_self(), kept);
}

std::vector<pid_t> list_threads() {
  std::vector<pid_t> tids;
  list_threads_into(&tids, /*when_changed=*/false);
  return tids;
}

bool list_threads_if_changed(std::vector<pid_t>* tids) {
  return list_threads_into(tids, /*when_changed=*/true);
}

void close_thread_listing() {
  if (g_kept_busy.exchange(true, std::memory_order_acquire)) return;  // in use: kept
  g_kept.close();  // a forked child's copy included
  g_last_pid.close();
  g_listed_last_pid = -1;
  g_kept_busy.store(false, std::memory_order_release);
}

namespace {

timespec timespec_of(uint64_t ns) {
  timespec t{};
  t.tv_sec = static_cast<time_t>(ns / 1000000000ull);
  t.tv_nsec = static_cast<long>(ns % 1000000000ull);
  return t;
}

// A timer on `tid`'s CPU clock, signalling that thread: first after `first_ns`, then every
// `period_ns` (0: once).
bool arm_timer(pid_t tid, int signo, int cookie, uint64_t first_ns, uint64_t period_ns,
               ThreadTimer* out) {
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signo;
  sev.sigev_value.sival_int = cookie;
  sev._sigev_un._tid = tid;  // glibc spells sigev_notify_thread_id this way before 2.35
  timer_t id;
  if (timer_create(thread_clock(tid), &sev, &id) != 0) return false;
  itimerspec spec{};
  spec.it_interval = timespec_of(period_ns);
  spec.it_value = timespec_of(first_ns);
  if (timer_settime(id, 0, &spec, nullptr) != 0) {
    timer_delete(id);
    return false;
  }
  out->id = id;
  out->armed = true;
  return true;
}

}  // namespace

static bool perf_clocks_wanted() {
  static const bool wanted = [] {
    const char* choice = std::getenv("SPYGLASS_CPU_CLOCK");
    return choice == nullptr || std::strcmp(choice, "posix") != 0;
  }();
  return wanted;
}

bool arm_thread_cpu_timer(pid_t tid, int signo, int cookie, uint64_t period_ns, ThreadTimer* out,
                          uint64_t first_ns) {
  const uint64_t first = first_ns != 0 && first_ns < period_ns ? first_ns : period_ns;
  return arm_timer(tid, signo, cookie, first, period_ns, out);
}

bool rearm_thread_cpu_timer(ThreadTimer* timer, uint64_t first_ns, uint64_t period_ns) {
  if (!timer->armed) return false;
  if (timer->perf.fd >= 0) return rearm_perf_clock(timer->perf, first_ns, period_ns);
  itimerspec spec{};
  spec.it_interval = timespec_of(period_ns);
  spec.it_value = timespec_of(first_ns != 0 ? first_ns : 1);
  return timer_settime(timer->id, 0, &spec, nullptr) == 0;
}

bool arm_thread_cpu_timer_once(pid_t tid, int signo, int cookie, uint64_t after_ns,
                               ThreadTimer* out) {
  return arm_timer(tid, signo, cookie, after_ns != 0 ? after_ns : 1, 0, out);
}

bool upgrade_thread_cpu_timer(pid_t tid, int signo, int cookie, uint64_t period_ns,
                              ThreadTimer* timer) {
  if (!timer->armed || timer->perf.fd >= 0 || !perf_clocks_wanted()) return false;
  if (!arm_perf_clock(tid, signo, static_cast<uint32_t>(cookie), period_ns, &timer->perf)) {
    return false;
  }
  timer_delete(timer->id);
  return true;
}

uint32_t timer_signal_cookie(const siginfo_t* info) {
  if (info->si_code == SI_TIMER) return static_cast<uint32_t>(info->si_value.sival_int);
  return perf_clock_cookie(info);
}

void timer_signal_handled(const siginfo_t* info) {
  if (info->si_code != SI_TIMER) perf_clock_sampled(info);
}

void disarm_thread_cpu_timer(ThreadTimer* timer) {
  if (!timer->armed) return;
  if (timer->perf.fd >= 0) {
    close_perf_clock(&timer->perf);
  } else {
    timer_delete(timer->id);
  }
  timer->armed = false;
}

}  // namespace spyglass::platform
