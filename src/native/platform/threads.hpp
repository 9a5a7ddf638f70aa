// Enumerating this process's threads and arming per-thread CPU-time timers.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <cstdint>
#include <ctime>
#include <vector>

#include "perf_clock.hpp"

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
// `period_ns` of CPU time, with `cookie` delivered in si_value; or, once upgraded where the
// kernel allows it, a perf task-clock event doing the same (perf_clock.hpp says why: a POSIX
// timer fires only at a scheduler tick), its cookie found by the descriptor the signal
// names. The environment variable SPYGLASS_CPU_CLOCK=posix keeps to POSIX timers.
struct ThreadTimer {
  timer_t id{};
  bool armed = false;
  PerfClock perf;  // fd >= 0: this clock instead of the timer
};
// Fires every `period_ns` of the thread's CPU time; the first time after `first_ns` of it
// (0: after a whole period).
bool arm_thread_cpu_timer(pid_t tid, int signo, int cookie, uint64_t period_ns, ThreadTimer* out,
                          uint64_t first_ns = 0);
// An armed timer's next expiry after `first_ns` of the thread's CPU time, then every
// `period_ns`.
bool rearm_thread_cpu_timer(ThreadTimer* timer, uint64_t first_ns, uint64_t period_ns);
// An armed POSIX timer replaced by a perf clock with the same cookie and period, its first
// expiry a whole period on. False (the timer left as it was) where perf clocks are not to be
// had. Opening one costs tens of microseconds: spent only on threads that live a while.
bool upgrade_thread_cpu_timer(pid_t tid, int signo, int cookie, uint64_t period_ns,
                              ThreadTimer* timer);
// Fires once, after `after_ns` of the thread's CPU time.
bool arm_thread_cpu_timer_once(pid_t tid, int signo, int cookie, uint64_t after_ns,
                               ThreadTimer* out);
void disarm_thread_cpu_timer(ThreadTimer* timer);

// In the signal handler: the cookie of the thread timer whose signal `info` is (0: none of
// these timers'), and, once handled, that timer set going again (a perf clock sends one
// signal at a time).
uint32_t timer_signal_cookie(const siginfo_t* info);
void timer_signal_handled(const siginfo_t* info);

}  // namespace spyglass::platform
