// Enumerating this process's threads and arming per-thread CPU-time timers.
#pragma once

#include <sys/types.h>
#include <cstdint>
#include <ctime>
#include <vector>

namespace spyglass::platform {

// Names the calling thread (at most 15 characters are kept): spyglass's own threads are
// told apart from the program's in `top -H`, gdb, py-spy and /proc/PID/task/TID/comm.
void name_this_thread(const char* name);

// Thread ids of this process, in no particular order. The directory listed stays open for
// the next listing until close_thread_listing().
std::vector<pid_t> list_threads();
// The same, but only when the threads may differ from those the last listing found (or
// that listing is kRelistEvery calls old): false, `tids` untouched, when they cannot. Two
// numbers the kernel keeps tell: the task directory's link count (the threads' number) and
// the pid namespace's last id handed out (a new thread, or any new process, moves it). A
// thread ending shows in the first; one ending while another starts, in the second.
bool list_threads_if_changed(std::vector<pid_t>* tids);
inline constexpr int kRelistEvery = 16;
void close_thread_listing();

// A timer that sends `signo` to thread `tid` each time the thread has consumed
// `period_ns` of CPU time, with `cookie` delivered in si_value.
struct ThreadTimer {
  timer_t id{};
  bool armed = false;
};
// Fires every `period_ns` of the thread's CPU time; the first time after `first_ns` of it
// (0: after a whole period).
bool arm_thread_cpu_timer(pid_t tid, int signo, int cookie, uint64_t period_ns, ThreadTimer* out,
                          uint64_t first_ns = 0);
// An armed timer's next expiry after `first_ns` of the thread's CPU time, then every
// `period_ns`.
bool rearm_thread_cpu_timer(ThreadTimer* timer, uint64_t first_ns, uint64_t period_ns);
// Fires once, after `after_ns` of the thread's CPU time.
bool arm_thread_cpu_timer_once(pid_t tid, int signo, int cookie, uint64_t after_ns,
                               ThreadTimer* out);
void disarm_thread_cpu_timer(ThreadTimer* timer);

}  // namespace spyglass::platform
